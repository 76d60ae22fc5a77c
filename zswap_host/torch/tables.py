"""``SwappedTables``: the embedding tables of one module in a ``PagedEmbedding`` (one DRAM budget,
one backend, one stream per table) with its fused optimizer, the step protocol between a
forward (``gather``: the rows are brought in and pinned) and its backward (``update``), and the
lookahead: upcoming steps' pages faulted in between the two (``prefetch``)."""

from __future__ import annotations

import dataclasses
import time

from ..errors import ZswapError
from ..workloads.lookahead import Lookahead, Overlap
from ..workloads.paged_embedding import PagedEmbedding
from ..workloads.paged_stream import pages_per_row
from ..workloads.row_packing import packing
from . import clocks
from .inputs import EmbeddingIndexError
from .optim import FusedOptimizer
from .ranges import claim


class SwappedTables:
    """Tables of ``rows[t]`` rows of ``dims[t]`` floats. ``budget``, ``backend``, ``seed``,
    ``page_size``, ``clock``, ``discard_dirty``: as ``PagedEmbedding`` (the backend is shared, not
    owned: ``close`` leaves it open). Page ids and streams on the backend are claimed so that other
    modules on the same backend do not collide (``ranges.claim``)."""

    def __init__(self, rows, dims, *, backend, budget, optimizer: FusedOptimizer, seed: int,
                 page_size: int, clock="device", discard_dirty: bool = False, trace=None,
                 pack_hot_rows=False) -> None:
        self.optimizer = optimizer
        clock, self.clock_name = clocks.resolve(clock, backend)
        self.store = st = PagedEmbedding(rows, dims, backend=backend, budget=budget, page_size=page_size, seed=seed,
                                         optimizer=optimizer.name, lr=optimizer.lr, eps=optimizer.eps, clock=clock,
                                         discard_dirty=discard_dirty, trace=trace, pack=packing(pack_hot_rows))
        need = pages_per_row(st)
        if st.nframes < need:
            raise ValueError(f"a budget of {st.budget_bytes} bytes holds {st.nframes} page(s) of {st.page_size} "
                             f"bytes; one row with its {optimizer.name} state needs {need}: raise the budget")
        st.id_base, st.stream_base = claim(backend, st.total_pages, len(st.tables))   # before any I/O
        self._rule = optimizer.rule(self.store.steps)
        self._step = 0          # the last gather's number
        self._pending = None    # the step whose backward may still update the rows
        self._ahead = None      # a running prefetch (Lookahead)
        self._deferred = None   # upcoming steps announced before their forward: started after its gather
        self.last_prefetch: Overlap | None = None   # what the last finished prefetch cost
        self.last_prefetch_error: ZswapError | None = None   # the last prefetch's device error, if it failed
        self.prefetch_errors = 0         # prefetches a device error cut short (their pages come on demand)
        self.failed_steps = 0            # forwards a device error failed (each cost its step, nothing else)
        self._ended = None               # how the last step ended, for its late backward's error
        self.prefetch_stall_s = 0.0      # prefetch I/O no compute covered (see stats)
        self.prefetch_blocked_s = 0.0    # wall time the steps' thread spent running or awaiting prefetches
        self._ahead_t0 = 0.0
        self._t_first = None             # wall time of the first forward, and the io / bookkeeping then
        self._t_last = 0.0
        self.closed = False

    def gather(self, indices) -> tuple[int, list]:
        """Bring in and pin the rows of one step: ``indices[t]`` an int64 array, or None for a table not
        in the step. Returns (step number, ``PagedEmbedding.gather_tables``'s per-table result).
        ``EmbeddingIndexError`` for an index out of range (nothing changed)."""
        self.check_open()
        self.finish_prefetch()
        try:
            self.store.check_indices(indices)       # checked before the step below ends
        except IndexError as e:
            raise EmbeddingIndexError(str(e)) from None
        # a forward ends the pending step, whether or not it gets its rows: its pins are gone
        ended = self._pending is not None
        self.end_step("another forward ran")
        try:
            res = self.store.gather_tables(indices)
        except ZswapError as e:
            self.failed_steps += 1
            if ended:
                self._ended = f"a later forward failed with {type(e).__name__}: {e}; its update was not applied"
            raise
        self._step += 1
        self._pending = self._step
        self._ended = None
        if self._t_first is None:
            self._t_first = (time.perf_counter(), self.store.io_wall_s, self.store.bookkeeping_wall_s)
        if self._deferred is not None:
            upcoming, self._deferred = self._deferred, None
            self._start(upcoming)
        self._t_last = time.perf_counter()
        return self._step, res

    def prefetch(self, upcoming: list) -> None:
        """Fault in the pages of upcoming steps (each a list of per-table index arrays, None for a
        table not in it; nearest first) while the current step computes: at once when a forward's
        rows are pinned (called between forward and backward), else right after the next forward's
        gather. A worker thread does it (synchronously on a modeled clock, see
        ``workloads.lookahead``); the backward, the next forward, checkpoints and ``flush`` wait for
        it. Pages of the pinned step and of the upcoming ones are never evicted for one another;
        what does not fit the budget beside them is left out. Index errors surface here."""
        self.check_open()
        upcoming = [list(u) for u in upcoming]
        try:
            for u in upcoming:
                self.store.check_indices(u)      # check every index now, in the caller's thread
        except IndexError as e:
            raise EmbeddingIndexError(str(e)) from None
        if self._pending is not None:
            self.finish_prefetch()
            self._start(upcoming)
        else:
            self._deferred = upcoming

    def finish_prefetch(self) -> Overlap | None:
        """Wait for a running prefetch (its error is raised here); returns its cost, or None."""
        if self._ahead is None:
            return None
        la, self._ahead = self._ahead, None
        window = time.perf_counter() - self._ahead_t0       # the compute beside the prefetch
        try:
            ov = self.last_prefetch = la.wait()
        except ZswapError as e:
            self._prefetch_failed(e)
            return None
        self.prefetch_blocked_s += ov.blocked_s
        # modeled: the step costs max(compute, prefetch I/O); wall: what the step waited for the worker
        self.prefetch_stall_s += max(0.0, ov.io_s - window) if ov.io_s is not None else ov.blocked_s
        return ov

    def _start(self, upcoming: list) -> None:
        self._ahead = Lookahead(self.store, len(upcoming))     # none upcoming: an empty Overlap
        try:
            self._ahead.start(upcoming)                        # synchronous on a modeled clock
        except ZswapError as e:
            self._ahead = None
            self._prefetch_failed(e)
        self._ahead_t0 = time.perf_counter()

    def _prefetch_failed(self, e: ZswapError) -> None:
        """A prefetch is a hint: its device error costs the pages it did not bring in (they come
        in on demand at their forward), never the step beside it. Counted, kept, not raised."""
        self.prefetch_errors += 1
        self.last_prefetch_error = e
        self.last_prefetch = None

    def update(self, step: int, grads) -> None:
        """The backward of step ``step``: apply the fused optimizer to its rows (``grads[t]`` float32
        (U_t, dim_t)). ``RuntimeError`` if another step was gathered since (one forward per backward)
        or this one was already applied."""
        self.check_step(step)
        self.finish_prefetch()
        self._pending = None
        self._ended = "its backward ran already: the update was applied once"
        self.store.apply_tables(grads, rule=self._rule)
        self._t_last = time.perf_counter()

    def check_step(self, step: int) -> None:
        """``RuntimeError`` unless step ``step``'s rows are still pinned and not yet updated."""
        if self._pending != step:
            why = f" ({self._ended})" if self._ended and step == self._step else ""
            raise RuntimeError(
                "swapped embeddings: this backward belongs to a forward whose rows are no longer pinned "
                "(the module ran another forward, a checkpoint or close since, or backward ran twice)"
                f"{why}; call backward once after each forward")

    def end_step(self, why: str | None = None) -> None:
        """Forget the pending step (its backward will raise, saying ``why``)."""
        if self._pending is not None:
            self._ended = why
        self._pending = None

    @property
    def lr(self) -> float:
        return self.store.lr

    @lr.setter
    def lr(self, value: float) -> None:
        self.optimizer = dataclasses.replace(self.optimizer, lr=float(value))
        self.store.lr = float(value)
        self._rule = self.optimizer.rule(self.store.steps)

    def flush(self) -> None:
        """Every dirty page to the backend, and the backend's buffers to its device."""
        self.check_open()
        self.finish_prefetch()
        self.store.flush()
        if self.store.backend is not None:
            self.store.backend.flush()

    def close(self) -> None:
        """Discard the tables' pages from the backend and drop the DRAM cache (a second close does
        nothing; the backend stays open)."""
        if self.closed:
            return
        if self._ahead is not None:
            self._ahead.close()
            self._ahead = None
        self._deferred = None
        self.end_step("the module was closed; its update was not applied")
        self.store.release()
        self.closed = True

    def stats(self) -> dict:
        st = self.store
        d = st.stats()
        d.update(optimizer=self.optimizer.name, lr=st.lr, steps=st.steps.tolist(),
                 tables=len(st.tables), budget_bytes=st.nframes * st.page_size,
                 table_bytes=st.total_bytes)
        stall = st.io_stall_s + self.prefetch_stall_s
        compute = 0.0
        if self._t_first is not None:
            t0, io0, bk0 = self._t_first
            compute = max(0.0, (self._t_last - t0) - (st.io_wall_s - io0) - (st.bookkeeping_wall_s - bk0)
                          - self.prefetch_blocked_s)
        d.update(clock=self.clock_name, prefetch_stall_s=self.prefetch_stall_s, stall_s=stall,
                 device_busy_s=st.io_stall_s + st.io_overlap_s, compute_s=compute,
                 slowdown_vs_dram=(compute + stall) / compute if compute > 0 else None,
                 failed_steps=self.failed_steps, prefetch_errors=self.prefetch_errors,
                 last_prefetch_error=repr(self.last_prefetch_error) if self.last_prefetch_error else None,
                 last_repack_error=repr(st.last_repack_error) if st.last_repack_error else None,
                 unsettled=st.unsettled)
        return d

    def check_open(self) -> None:
        """``RuntimeError`` once the module is closed (every public call checks it first)."""
        if self.closed:
            raise RuntimeError("swapped embeddings: the module is closed")

