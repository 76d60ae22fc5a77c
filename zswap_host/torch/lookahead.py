"""``prefetching``: a data-loader wrapper that announces the next batches to a swapped module, so
their pages come in while the current batch computes (``SwappedModule.prefetch``)."""

from __future__ import annotations

from collections import deque
from typing import Callable, Iterable, Iterator


def prefetching(batches: Iterable, module, depth: int = 1, lookups: Callable | None = None) -> Iterator:
    """Yield ``batches`` unchanged, each after announcing the next ``depth`` ones to ``module``: their
    pages are faulted in right after this batch's forward, beside its compute. ``lookups(batch)``:
    what ``module.prefetch`` takes for a batch (the module's forward lookups: an index tensor for a
    ``SwappedEmbeddingBag``, features for a collection); default: the batch itself. Reads ``depth``
    batches ahead of the consumer. ``ValueError`` for a negative depth."""
    if int(depth) < 0:
        raise ValueError(f"depth must be >= 0, not {depth}")
    depth = int(depth)
    pick = lookups or (lambda b: b)
    it = iter(batches)
    queue: deque = deque()
    while True:
        while len(queue) < depth + 1:               # this batch and the next `depth`
            try:
                queue.append(next(it))
            except StopIteration:
                break
        if not queue:
            return
        b = queue.popleft()
        if depth and queue:
            module.prefetch(*[pick(q) for q in queue])
        yield b
