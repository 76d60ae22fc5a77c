"""``SwappedTables``: the embedding tables of one module in a ``PagedEmbedding`` (one DRAM budget,
one backend, one stream per table) with its fused optimizer, the step protocol between a
forward (``gather``: the rows are brought in and pinned) and its backward (``update``), and the
lookahead: upcoming steps' pages faulted in between the two (``prefetch``)."""

from __future__ import annotations

import dataclasses

from ..workloads.lookahead import Lookahead, Overlap
from ..workloads.paged_embedding import PagedEmbedding
from .inputs import EmbeddingIndexError
from .optim import FusedOptimizer
from .ranges import claim


class SwappedTables:
    """Tables of ``rows[t]`` rows of ``dims[t]`` floats. ``budget``, ``backend``, ``seed``,
    ``page_size``, ``clock``, ``discard_dirty``: as ``PagedEmbedding`` (the backend is shared, not
    owned: ``close`` leaves it open). Page ids and streams on the backend are claimed so that other
    modules on the same backend do not collide (``ranges.claim``)."""

    def __init__(self, rows, dims, *, backend, budget, optimizer: FusedOptimizer, seed: int,
                 page_size: int, clock=None, discard_dirty: bool = False, trace=None) -> None:
        self.optimizer = optimizer
        self.store = st = PagedEmbedding(rows, dims, backend=backend, budget=budget, page_size=page_size, seed=seed,
                                         optimizer=optimizer.name, lr=optimizer.lr, eps=optimizer.eps, clock=clock,
                                         discard_dirty=discard_dirty, trace=trace)
        st.id_base, st.stream_base = claim(backend, st.total_pages, len(st.tables))   # before any I/O
        self._rule = optimizer.rule(self.store.steps)
        self._step = 0          # the last gather's number
        self._pending = None    # the step whose backward may still update the rows
        self._ahead = None      # a running prefetch (Lookahead)
        self._deferred = None   # upcoming steps announced before their forward: started after its gather
        self.last_prefetch: Overlap | None = None   # what the last finished prefetch cost
        self.closed = False

    def gather(self, indices) -> tuple[int, list]:
        """Bring in and pin the rows of one step: ``indices[t]`` an int64 array, or None for a table not
        in the step. Returns (step number, ``PagedEmbedding.gather_tables``'s per-table result).
        ``EmbeddingIndexError`` for an index out of range (nothing changed)."""
        self._check_open()
        self.finish_prefetch()
        try:
            res = self.store.gather_tables(indices)
        except IndexError as e:
            raise EmbeddingIndexError(str(e)) from None
        self._step += 1
        self._pending = self._step
        if self._deferred is not None:
            upcoming, self._deferred = self._deferred, None
            self._start(upcoming)
        return self._step, res

    def prefetch(self, upcoming: list) -> None:
        """Fault in the pages of upcoming steps (each a list of per-table index arrays, None for a
        table not in it; nearest first) while the current step computes: at once when a forward's
        rows are pinned (called between forward and backward), else right after the next forward's
        gather. A worker thread does it (synchronously on a modeled clock, see
        ``workloads.lookahead``); the backward, the next forward, checkpoints and ``flush`` wait for
        it. Pages of the pinned step and of the upcoming ones are never evicted for one another;
        what does not fit the budget beside them is left out. Index errors surface here."""
        self._check_open()
        upcoming = [list(u) for u in upcoming]
        try:
            for u in upcoming:
                self.store._lookup_keys(u)      # check every index now, in the caller's thread
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
        self.last_prefetch = la.wait()
        return self.last_prefetch

    def _start(self, upcoming: list) -> None:
        self._ahead = Lookahead(self.store, len(upcoming))     # none upcoming: an empty Overlap
        self._ahead.start(upcoming)

    def update(self, step: int, grads) -> None:
        """The backward of step ``step``: apply the fused optimizer to its rows (``grads[t]`` float32
        (U_t, dim_t)). ``RuntimeError`` if another step was gathered since (one forward per backward)
        or this one was already applied."""
        self.check_step(step)
        self.finish_prefetch()
        self._pending = None
        self.store.apply_tables(grads, rule=self._rule)

    def check_step(self, step: int) -> None:
        """``RuntimeError`` unless step ``step``'s rows are still pinned and not yet updated."""
        if self._pending != step:
            raise RuntimeError(
                "swapped embeddings: this backward belongs to a forward whose rows are no longer pinned "
                "(the module ran another forward, a checkpoint or close since, or backward ran twice); "
                "call backward once after each forward")

    def end_step(self) -> None:
        """Forget the pending step (its backward will raise)."""
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
        self._check_open()
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
        self.end_step()
        self.store.release()
        self.closed = True

    def stats(self) -> dict:
        d = self.store.stats()
        d.update(optimizer=self.optimizer.name, lr=self.store.lr, steps=self.store.steps.tolist(),
                 tables=len(self.store.tables), budget_bytes=self.store.nframes * self.store.page_size,
                 table_bytes=self.store.total_bytes)
        return d

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("swapped embeddings: the module is closed")

