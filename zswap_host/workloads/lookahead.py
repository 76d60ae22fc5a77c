"""Lookahead: fault in the next batches' pages while the current batch computes.

A training loop knows its next batches (the data loader holds them). After batch i's ``gather``,
:class:`Lookahead` hands the sparse indices of up to ``depth`` upcoming batches to
``PagedEmbedding.prefetch``, which swaps their missing pages in (evicting for them within the same
DRAM budget, never a page of batch i or of a queued batch) while batch i's forward and backward run;
``wait()`` before batch i's ``apply``. Numerics do not change: pages are brought in, never row
values copied, so batch i's update of a row that batch i+1 reads lands in the very frame batch i+1
will read (tests compare losses with and without lookahead).

Two clocks, two ways to run:

- **modeled** (the emulated devices' clock): the prefetch runs synchronously, so the run stays
  deterministic, and its device time ``d`` is reported as *overlapped*: the step costs
  ``max(compute, d)`` instead of ``compute + d`` — its stall is the I/O its compute did not cover
  (``max(0, d - compute)``), and the device's idle window shrinks to ``max(0, compute - d)``. One
  device queue: prefetch I/O, demand faults and GC share the device's clock.
- **wall** (real devices, or no clock): the prefetch runs on a worker thread; ``wait()`` measures how
  long the step blocked on it, which is stall.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass


@dataclass
class Overlap:
    """What one prefetch cost the step. ``io_s``: device time of the prefetch on a modeled clock
    (None on the wall clock: it ran beside compute on a thread). ``blocked_s``: wall time the step's
    thread spent on it (the synchronous run, or waiting for the worker)."""

    io_s: float | None
    blocked_s: float
    pages: int


class Lookahead:
    """Prefetch for ``depth`` upcoming batches of a ``PagedEmbedding``. ``start(upcoming)`` with the
    upcoming batches' ``sparse`` arrays (nearest first) right after the current batch's gather;
    ``wait()`` before its apply. ``threaded``: None = a worker thread exactly when the embedding has
    no modeled clock and a backend (real devices)."""

    def __init__(self, emb, depth: int, threaded: bool | None = None) -> None:
        if int(depth) < 0:
            raise ValueError(f"lookahead depth must be >= 0, not {depth}")
        self.emb = emb
        self.depth = int(depth)
        self.threaded = (emb.clock is None and emb.backend is not None) if threaded is None else bool(threaded)
        self._thread: threading.Thread | None = None
        self._result: tuple | None = None
        self._sync: Overlap | None = None

    def start(self, upcoming) -> None:
        """Begin faulting in the pages of ``upcoming[:depth]``."""
        if self._thread is not None or self._sync is not None:
            raise RuntimeError("Lookahead.start() twice without wait()")
        batches = list(upcoming)[:self.depth]
        if not batches:
            self._sync = Overlap(0.0 if not self.threaded else None, 0.0, 0)
            return
        if not self.threaded:
            w0 = time.perf_counter()
            io, pages = self.emb.prefetch(batches)
            self._sync = Overlap(io, time.perf_counter() - w0, pages)
            return

        def work() -> None:
            try:
                self._result = ("ok", self.emb.prefetch(batches))
            except BaseException as e:            # re-raised in the step's thread by wait()
                self._result = ("error", e)

        self._thread = threading.Thread(target=work, name="zswap-lookahead", daemon=True)
        self._thread.start()

    def wait(self) -> Overlap:
        """The prefetch's cost (after it finished). An error in the worker is raised here."""
        if self._sync is not None:
            out, self._sync = self._sync, None
            return out
        if self._thread is None:
            raise RuntimeError("Lookahead.wait() without start()")
        w0 = time.perf_counter()
        self._thread.join()
        blocked = time.perf_counter() - w0
        self._thread = None
        kind, value = self._result
        self._result = None
        if kind == "error":
            raise value
        return Overlap(None, blocked, int(value[1]))

    def close(self) -> None:
        """Finish a prefetch still running (its pages stay resident)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._sync = self._result = None
