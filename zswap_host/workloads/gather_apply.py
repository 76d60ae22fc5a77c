"""``GatherApply``: ``PagedEmbedding``'s training step over its page cache — a gather brings a
batch's rows in and pins their pages, the update that follows changes the rows (and their optimizer
state) in their frames and marks the pages dirty.

A batch whose pages do not fit the budget is gathered and updated in pieces that do
(:mod:`.paged_stream`; the same values). With packing (:mod:`.row_packing`) a step's rows are
handed out and their gradients taken in (table, row) order, as without it, and the first gather
of every ``pack.every`` steps repacks first.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from . import paged_stream
from .paged_stream import Pending


class GatherApply:
    """The step of ``emb`` (a ``PagedEmbedding``, read through its public attributes: ``layout``,
    ``cache``, ``optimizer``, ``steps``, ``lr``, ``eps``, ``repack``): each public method does what
    ``PagedEmbedding``'s method of the same name documents. It holds the step in flight — the rows
    of the last gather until they are updated — and an update whose write-back a device error
    interrupted (``settle``)."""

    def __init__(self, emb) -> None:
        self.emb = emb
        self.layout = emb.layout
        self.cache = emb.cache
        self.optimizer = emb.optimizer
        self.steps = emb.steps
        self._ctx: Pending | paged_stream.StreamedStep | None = None
        self._unsettled: paged_stream.StreamedStep | None = None    # an update not yet written back

    def end(self) -> None:
        """End the step in flight (its rows are no longer updated)."""
        self._ctx = None

    def drop(self) -> None:
        """Forget the step in flight and any update not yet written back."""
        self._ctx = None
        self._unsettled = None

    def gather(self, sparse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sp = np.asarray(sparse)
        T = len(self.layout.tables)
        if sp.shape[0] != T:
            raise ValueError(f"sparse must have {T} tables on axis 0, has shape {sp.shape}")
        if not self.layout.uniform:
            raise ValueError("gather() needs tables of one dim; use gather_tables()")
        idx = sp.reshape(T, -1).astype(np.int64, copy=False)
        R = self.layout.rows_per_page
        if idx.size:
            lo, hi = idx.min(axis=1), idx.max(axis=1)
            if (lo < 0).any() or (hi >= np.array(self.layout.tables)).any():
                t = int(np.flatnonzero((lo < 0) | (hi >= np.array(self.layout.tables)))[0])
                raise IndexError(f"table {t}: index out of range [0, {self.layout.tables[t]})")
        self._pack_tick()
        if self.layout.packer is not None:
            idx = self.layout.packer.slots(np.arange(T)[:, None], idx)
        key = (self.layout.page_base[:-1, None] * R + idx).reshape(-1)    # page * R + slot
        rows, inverse = self._gather_keys(key, count=True)
        self.cache.counters.lookups += int(idx.size)
        return rows, inverse

    def gather_tables(self, indices) -> list[tuple[np.ndarray, np.ndarray] | None]:
        T = len(self.layout.tables)
        present, lens, key = self.layout.lookup_keys(indices)
        if self._pack_tick():
            key = self.layout.lookup_keys(indices)[2]
        rows, inverse = self._gather_keys(key, count=True)
        p = self._ctx
        p.tables = present
        self.cache.counters.lookups += int(key.size)
        cut = np.searchsorted(p.table, np.arange(T + 1))
        koff = np.concatenate([[0], np.cumsum(lens)])
        out: list = [None] * T
        streamed = isinstance(p, paged_stream.StreamedStep)
        for j, t in enumerate(present.tolist()):          # per table, never per row
            lo, hi = int(cut[t]), int(cut[t + 1])
            r = rows[lo:hi] if rows is not None else \
                p.rows[t] if streamed else self.cache.view(t)[p.f[lo:hi], p.slot[lo:hi]]
            if rows is None and p.order is not None:
                r = r[p.order[lo:hi] - lo]
            out[t] = (r, inverse[koff[j]:koff[j + 1]] - lo)
        return out

    def _gather_keys(self, key: np.ndarray, count: bool = False) -> tuple[np.ndarray | None, np.ndarray]:
        """Bring in and pin the pages of lookup keys; the step's context in ``_ctx``. A step whose
        pages do not fit the budget is gathered in pieces (``paged_stream``). On an error nothing
        is pinned and no step is pending. ``count``: a step's lookups (counted for packing)."""
        self.settle()
        ukeys, inverse = np.unique(key, return_inverse=True)
        upage, uslot, t, spage, sslot, pages = self.layout.key_pages(ukeys)
        order = rank = None
        if count and self.layout.packer is not None:
            slots = (upage - self.layout.page_base[t]) * self.layout.rpp[t] + uslot
            self.layout.packer.count(t, slots)
            order, rank = self._ordered(t, slots)
        self._ctx = None
        self.cache.pin.fill(False)
        if pages.size > self.cache.nframes and self.cache.payload:
            self._ctx = step = paged_stream.gather(self.emb, self._stream_port(), upage, uslot, t, spage, sslot)
            self.cache.counters.unique_rows += int(ukeys.size)
            step.order, step.rank = order, rank
            return self._out(step.flat_rows(), inverse.reshape(-1), order, rank)
        if self.cache.ahead is not None and self.cache.ahead.size:   # keep what a prefetch queued, if both fit
            fa = self.cache.page_frame[self.cache.ahead]
            fa = fa[fa >= 0]
            if fa.size + pages.size <= self.cache.nframes:
                self.cache.pin[fa] = True
        try:
            self.cache.make_resident(pages)
        except BaseException:
            self.cache.pin.fill(False)
            raise
        f = self.cache.page_frame[upage].astype(np.int64)
        rows = self.cache.rows[f, uslot] if self.layout.uniform and self.cache.payload else None
        sf = self.cache.page_frame[spage].astype(np.int64) if spage is not None else None
        self._ctx = Pending(f, uslot, t, sf, sslot, rows, order=order, rank=rank)
        self.cache.counters.unique_rows += int(ukeys.size)
        return self._out(rows, inverse.reshape(-1), order, rank)

    def _ordered(self, t: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """With packing, a step's unique rows (sorted by page) put back in (table, row) order, as
        without it — so torch's pooling backward sums a row's duplicates in the same order, bit for
        bit: ``order`` (that order's entries, by page-sorted index) and ``rank`` (its inverse)."""
        rows = self.layout.packer.rows_of_slots(t, slots)
        order = np.lexsort((rows, t))
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        return order, rank

    @staticmethod
    def _out(rows, inverse, order, rank):
        if order is None:
            return rows, inverse
        return (rows[order] if rows is not None else None), rank[inverse]

    @staticmethod
    def _to_pages(p, grads: list, present) -> list:
        """Per-table gradients given in row order (``_ordered``) back in the step's page order."""
        if p.rank is None:
            return grads
        cut = np.searchsorted(p.table, np.arange(len(grads) + 1))
        out = list(grads)
        for t in present.tolist():
            lo, hi = int(cut[t]), int(cut[t + 1])
            if hi > lo:
                out[t] = np.asarray(grads[t])[p.rank[lo:hi] - lo]
        return out

    def apply(self, grad: np.ndarray) -> None:
        if self._ctx is None:
            raise RuntimeError("apply() without a gather()")
        p = self._ctx
        if self.optimizer == "adam":
            raise ValueError("optimizer 'adam' has no built-in update: use apply_tables() with a rule")
        if isinstance(p, paged_stream.StreamedStep):
            if not self.layout.uniform:
                raise ValueError("apply() needs tables of one dim; use apply_tables()")
            self._ctx = None
            g = np.asarray(grad, np.float32)
            if p.rank is not None:
                g = g[p.rank]
            T = len(self.layout.tables)
            self._unsettled = paged_stream.apply(self.emb, self._stream_port(), p, np.arange(T),
                                                 [g[p.tcut[t]:p.tcut[t + 1]] for t in range(T)], None)
            return
        self._ctx = None
        if p.rows is None:
            raise ValueError("apply() needs tables of one dim; use apply_tables()")
        g = np.asarray(grad, np.float32)
        if g.shape != p.rows.shape:
            raise ValueError(f"grad shape {g.shape} != rows shape {p.rows.shape}")
        if p.rank is not None:
            g = g[p.rank]
        stepped = np.arange(len(self.layout.tables)) if p.tables is None else p.tables
        self.steps[stepped] += 1
        sel = slice(None)
        rows, states = self._rule()(p.rows, g, self._states(p, sel, self.cache.rows))
        self._put(p, sel, self.cache.rows, rows, states)
        self.cache.dirtied(p.f, p.sf)
        self._unpin(p)

    def apply_tables(self, grads, rule=None) -> None:
        if self._ctx is None:
            raise RuntimeError("apply_tables() without a gather_tables()")
        p = self._ctx
        T = len(self.layout.tables)
        if len(grads) != T:
            raise ValueError(f"grads must have one entry per table ({T}), has {len(grads)}")
        if rule is None and self.optimizer == "adam":
            raise ValueError("optimizer 'adam' has no built-in update: pass a rule")
        self._ctx = None
        present = np.arange(T) if p.tables is None else p.tables
        grads = self._to_pages(p, grads, present)
        if isinstance(p, paged_stream.StreamedStep):
            self._unsettled = paged_stream.apply(self.emb, self._stream_port(), p, present, grads, rule)
            return
        self.steps[present] += 1
        builtin = self._rule() if rule is None else None
        cut = np.searchsorted(p.table, np.arange(T + 1))
        for t in present.tolist():                          # per table, never per row
            lo, hi = int(cut[t]), int(cut[t + 1])
            if hi == lo:
                continue
            sel = slice(lo, hi)
            view = self.cache.view(t)
            rows = p.rows[sel] if p.rows is not None else view[p.f[sel], p.slot[sel]]
            g = np.asarray(grads[t], np.float32)
            if g.shape != rows.shape:
                raise ValueError(f"table {t}: grad shape {g.shape} != rows shape {rows.shape}")
            states = self._states(p, sel, view)
            new_rows, states = builtin(rows, g, states) if rule is None else rule(t, rows, g, states)
            self._put(p, sel, view, new_rows, states)
        self.cache.dirtied(p.f, p.sf)
        self._unpin(p)

    def touch(self, indices, between: Callable[[], object] | None = None) -> None:
        if self.cache.payload:
            raise RuntimeError("touch() is the payload-free step; use gather_tables() and apply_tables()")
        present, _, key = self.layout.lookup_keys(indices)
        if self._pack_tick():
            key = self.layout.lookup_keys(indices)[2]
        self._gather_keys(key, count=True)
        p = self._ctx
        if between is not None:
            between()
        self._ctx = None
        self.cache.counters.lookups += int(key.size)
        self.steps[present] += 1
        self.cache.dirtied(p.f, p.sf)

    def read_rows(self, table: int, rows) -> np.ndarray:
        r = np.asarray(rows, np.int64).reshape(-1)
        if r.size and (r.min() < 0 or r.max() >= self.layout.tables[table]):
            raise IndexError(f"table {table}: index out of range [0, {self.layout.tables[table]})")
        R = self.layout.rpp[table]
        s = self.layout.slots_of(table, r)
        out, inv = self._gather_keys((self.layout.page_base[table] + s // R) * self.layout.key_rows + s % R)
        p = self._ctx
        self._ctx = None
        if out is None:
            out = p.rows[table] if isinstance(p, paged_stream.StreamedStep) else self.cache.view(table)[p.f, p.slot]
        self.cache.pin.fill(False)
        return out[inv]

    def settle(self) -> None:
        if self._unsettled is not None:
            paged_stream.write_back(self.emb, self._stream_port(), self._unsettled)
            self._unsettled = None

    @property
    def unsettled(self) -> bool:
        """Whether an applied update still waits to be written into the pages (``settle``)."""
        return self._unsettled is not None

    def _stream_port(self) -> paged_stream.CachePort:
        """The cache's steps for ``paged_stream`` (see there)."""
        return paged_stream.CachePort(self.cache.make_resident, self.cache.view, self._states, self._put,
                                      self.cache.dirtied, self._rule)

    def _pack_tick(self) -> bool:
        """At a step's start (its indices checked, its keys not yet used): repack when due. True if
        rows moved (the caller's keys are stale)."""
        if self.layout.packer is None or not self.layout.packer.due():
            return False
        return self.emb.repack() > 0

    def _rule(self):
        """The built-in update of ``optimizer`` (sgd, adagrad) as ``rule(rows, grad, states) ->
        (rows, states)``."""
        lr, eps = np.float32(self.emb.lr), np.float32(self.emb.eps)
        if self.optimizer == "sgd":
            return lambda rows, g, states: (rows - lr * g, ())

        def adagrad(rows, g, states):
            acc = states[0] + (g * g).mean(axis=1)
            step = (lr / (np.sqrt(acc) + eps)).astype(np.float32)
            return rows - step[:, None] * g, (acc,)
        return adagrad

    def _states(self, p: Pending, sel, view) -> tuple:
        if self.optimizer == "adagrad":
            return (self.cache.f32[p.sf[sel], p.sslot[sel]],)
        if self.optimizer == "adam":
            return (view[p.sf[0, sel], p.slot[sel]], view[p.sf[1, sel], p.slot[sel]])
        return ()

    def _put(self, p: Pending, sel, view, rows, states) -> None:
        if self.optimizer == "adagrad":
            self.cache.f32[p.sf[sel], p.sslot[sel]] = states[0]
        elif self.optimizer == "adam":
            view[p.sf[0, sel], p.slot[sel]] = states[0]
            view[p.sf[1, sel], p.slot[sel]] = states[1]
        view[p.f[sel], p.slot[sel]] = rows

    def _unpin(self, p: Pending) -> None:
        """The step is over: its frames are evictable again (queued prefetch pages are pinned anew at
        the next gather)."""
        self.cache.pin[p.f] = False
        if p.sf is not None:
            self.cache.pin[p.sf] = False
