"""Swap traces: the sequence of page faults (swap_in), evictions (swap_out with a stream hint),
discards and idle windows a workload produced, in a compact numpy format, and their replay
through any ``SwapBackend`` in seconds, without the workload itself.

File format (``.npz``): ``ops`` uint8 (0 swap_in, 1 swap_out, 2 discard, 3 idle, 4 overlap), ``streams``
int32, ``idle_s`` float64 (the idle window of op 3, else 0), ``bounds`` int64 (event k's ids are
``ids[bounds[k]:bounds[k+1]]``), ``ids`` int64, and ``meta`` (a JSON string). ``load`` checks them
(``trace_check``: known op codes, bounds from 0 non-decreasing to the ids' count, idle windows
finite and >= 0, ids >= 0 and below the meta's page count where it has one).

An ``overlap`` marker (op 4, no ids) says that the events after it, up to the next idle window, ran
while the workload computed (a lookahead prefetch): on a device clock they overlap that window.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..backend import SwapBackend
from ..errors import PageCorruptError
from .page_words import PageImages, PageVersions, describe, first_words

SWAP_IN, SWAP_OUT, DISCARD, IDLE, OVERLAP = 0, 1, 2, 3, 4


@dataclass
class SwapTrace:
    ops: np.ndarray
    streams: np.ndarray
    idle_s: np.ndarray
    bounds: np.ndarray
    ids: np.ndarray
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.ops.size)

    def event_ids(self, k: int) -> np.ndarray:
        return self.ids[self.bounds[k]:self.bounds[k + 1]]

    @property
    def pages(self) -> int:
        """Distinct page ids the trace touches (ids are dense: max + 1)."""
        return int(self.ids.max()) + 1 if self.ids.size else 0

    def counts(self) -> dict:
        lens = np.diff(self.bounds)
        return {"events": len(self), "swap_in_pages": int(lens[self.ops == SWAP_IN].sum()),
                "swap_out_pages": int(lens[self.ops == SWAP_OUT].sum()),
                "idle_s": float(self.idle_s.sum())}

    def without(self, op: int) -> "SwapTrace":
        """The trace with every event of kind ``op`` left out (e.g. ``DISCARD``: a run recorded with
        ``discard_dirty`` replayed as a backend that keeps stale copies until they are overwritten,
        as Linux swap does, would see it)."""
        keep = self.ops != op
        lens = np.diff(self.bounds)
        mask = np.repeat(keep, lens)
        return SwapTrace(self.ops[keep], self.streams[keep], self.idle_s[keep],
                         np.concatenate([[0], np.cumsum(lens[keep])]), self.ids[mask],
                         {**self.meta, "without": [*self.meta.get("without", []), int(op)]})

    def with_idle_scaled(self, factor: float) -> "SwapTrace":
        """The trace with every idle (compute) window ``factor`` times as long: the same I/O under
        another compute per sample (which moves no page: the page cache sees batches, not time)."""
        if not factor >= 0:
            raise ValueError(f"idle scale must be >= 0, not {factor}")
        return SwapTrace(self.ops, self.streams, self.idle_s * float(factor), self.bounds, self.ids,
                         {**self.meta, "idle_scaled": float(factor)})

    def save(self, path: str, compress: bool = True) -> None:
        (np.savez_compressed if compress else np.savez)(path, ops=self.ops, streams=self.streams, idle_s=self.idle_s,
                            bounds=self.bounds, ids=self.ids, meta=np.array(json.dumps(self.meta)))

    @classmethod
    def load(cls, path: str, where: str | None = None, id_limit: int | None = None) -> "SwapTrace":
        """The trace in ``path``, checked (``trace_check``): ``TraceFileError`` (one line naming
        ``where``, default the path, and the first bad row) for a file that is not a whole, sound
        trace; ``FileNotFoundError`` for none. ``id_limit``: page ids must be below it."""
        from .trace_check import TraceFileError, checked_arrays

        where = where or path
        try:
            with np.load(path, allow_pickle=False) as f:
                a, meta = checked_arrays(f, where, id_limit)
        except (TraceFileError, FileNotFoundError):
            raise
        except Exception as e:  # noqa: BLE001 - truncated zip, bad header: whatever numpy or zipfile raised
            raise TraceFileError(f"{where}: cannot read it ({type(e).__name__}: {e})") from None
        return cls(a["ops"], a["streams"], a["idle_s"], a["bounds"], a["ids"], meta)


class TraceBuilder:
    """Collects events; ``build()`` packs them."""

    def __init__(self, meta: dict | None = None) -> None:
        self._ops: list[int] = []
        self._streams: list[int] = []
        self._idle: list[float] = []
        self._ids: list[np.ndarray] = []
        self.meta = meta or {}

    def add(self, op: int, ids=(), stream: int = 0, idle_s: float = 0.0) -> None:
        self._ops.append(op)
        self._streams.append(stream)
        self._idle.append(idle_s)
        self._ids.append(np.asarray(ids, np.int64).reshape(-1))

    def build(self) -> SwapTrace:
        lens = np.array([a.size for a in self._ids], np.int64)
        return SwapTrace(np.array(self._ops, np.uint8), np.array(self._streams, np.int32),
                         np.array(self._idle, np.float64), np.concatenate([[0], np.cumsum(lens)]),
                         np.concatenate(self._ids) if self._ids else np.zeros(0, np.int64), self.meta)


def synthetic_dlrm_trace(pages: int, dram_fraction: float = 0.1, batch_pages: int = 2048,
                         iterations: int = 1000, zipf_a: float = 1.05, tables: int = 26,
                         idle_s: float = 0.0, seed: int = 0, discard_faulted: bool = False) -> SwapTrace:
    """A DLRM-like page trace: every page starts swapped out; each iteration touches
    ``batch_pages`` distinct pages drawn by Zipf popularity (popularity scattered over the id space,
    as hashed embedding rows are), faults the missing ones in with one batched swap_in, and evicts
    the least recently used pages beyond the DRAM budget as dirty swap_outs, one call per table
    (stream hint = table, tables being equal id ranges). ``idle_s`` adds an idle window per iteration.
    ``discard_faulted``: each swap_in is followed by a discard of the same pages — the training
    updates every row it touches, so the backend's copy is stale (what the bench's store runs do,
    ``PagedEmbedding(discard_dirty=True)``); without it the backend keeps every page live."""
    rng = np.random.default_rng(seed)
    budget = max(batch_pages, int(dram_fraction * pages))
    rank_to_page = rng.permutation(pages)
    table_of = lambda ids: (ids * tables) // pages  # noqa: E731
    tb = TraceBuilder({"kind": "synthetic-dlrm", "pages": pages, "dram_fraction": dram_fraction,
                       "batch_pages": batch_pages, "iterations": iterations, "zipf_a": zipf_a,
                       "tables": tables, "idle_s": idle_s, "seed": seed, "discard_faulted": discard_faulted})
    for start in range(0, pages, 8192):           # the tables start out swapped out
        ids = np.arange(start, min(pages, start + 8192))
        for t in np.unique(table_of(ids)):
            tb.add(SWAP_OUT, ids[table_of(ids) == t], int(t))
    resident = np.zeros(pages, bool)
    last_use = np.full(pages, -1, np.int64)
    for it in range(iterations):
        ranks = rng.zipf(zipf_a, 3 * batch_pages) - 1
        ranks = ranks[ranks < pages]
        need = np.unique(rank_to_page[ranks])
        if need.size > batch_pages:
            need = rng.choice(need, batch_pages, replace=False)
        missing = need[~resident[need]]
        if missing.size:
            tb.add(SWAP_IN, np.sort(missing))
            if discard_faulted:
                tb.add(DISCARD, np.sort(missing))
            resident[missing] = True
        last_use[need] = it
        res = np.flatnonzero(resident)
        over = res.size - budget
        if over > 0:
            victims = res[np.argpartition(last_use[res], over - 1)[:over]]
            victims = victims[last_use[victims] < it]   # never evict what this batch uses
            resident[victims] = False
            tabs = table_of(victims)
            for t in np.unique(tabs):
                tb.add(SWAP_OUT, victims[tabs == t], int(t))
        if idle_s > 0:
            tb.add(IDLE, idle_s=idle_s)
    return tb.build()


def replay(backend: SwapBackend, trace: SwapTrace, verify: bool = False, progress=None, clock=None,
           versions: PageVersions | None = None, on_idle=None) -> None:
    """Run a trace through a backend. Idle windows go to ``backend.idle`` (the store's GC, then the
    device clock; Linux swap only lets the device clock pass), so every backend sees the same
    timeline. Each page swapped out carries its fingerprint word (``page_words``: id and version);
    ``verify`` checks the word of every page swapped in and raises ``PageCorruptError`` naming the
    first page that came back wrong (another page, or a stale version). Swap-ins go through the
    backend's ``swap_in_words`` where it has one (the same reads and time, no pages built).

    ``clock()``: the backend's device clock. With it, the I/O after an overlap marker is taken out of
    the next idle window (the device was busy for that part of it: ``idle(max(0, window - io))``), as
    the workload that recorded it overlapped them; without it, overlapped I/O runs before the whole
    window. ``versions``: the page versions so far, for a trace replayed in parts (chunks) through
    one backend; None: a fresh ``PageVersions``. Ids within one swap-out event are distinct.
    ``on_idle(seconds)``: what an idle window does instead of ``backend.idle`` (e.g. only let the
    device clock pass, so no GC gets the window)."""
    ps = backend.page_size
    vers = versions if versions is not None else PageVersions(trace.pages)
    images = PageImages(ps)
    # only the first word of a page is checked: a backend that can read just that does
    words_in = getattr(backend, "swap_in_words", None) or (lambda i: first_words(backend.swap_in(i)))
    idle = on_idle if on_idle is not None else backend.idle
    n = len(trace)
    since = None                                # the clock at the last overlap marker
    for k in range(n):
        op = int(trace.ops[k])
        ids = trace.event_ids(k)
        if op == SWAP_OUT:
            backend.swap_out(ids, images.of(vers.stamp(ids)), int(trace.streams[k]))
        elif op == SWAP_IN:
            got = words_in(ids)
            if verify:
                bad = vers.mismatches(ids, got)
                if bad.size:
                    i = int(bad[0])
                    raise PageCorruptError(
                        f"event {k}: swap_in of page {int(ids[i])} returned {describe(got[i])}, "
                        f"expected {describe(vers.words(ids[i:i + 1])[0])} ({bad.size} pages wrong)",
                        ids[bad].copy())
        elif op == DISCARD:
            backend.discard(ids)
        elif op == IDLE:
            window = float(trace.idle_s[k])
            if since is not None:
                window = max(0.0, window - (clock() - since))
                since = None
            idle(window)
        elif op == OVERLAP and clock is not None:
            since = clock()
        if progress is not None and (k % 256 == 0 or k == n - 1):
            progress(k + 1, n)
