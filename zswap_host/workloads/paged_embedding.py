"""``PagedEmbedding``: DLRM embedding tables kept in 4 KiB pages, with a DRAM page cache of bounded
size in front of any ``SwapBackend``.

It composes one part per concern, each in its own file: where each row lives (``TableLayout``,
table_layout.py), the values a page starts with (``FirstTouch``, first_touch.py), the frames and
their CLOCK replacement (``PageCache``, page_cache.py; what it did: ``PagingCounters``,
paging_counters.py), the training step (``GatherApply``, gather_apply.py), rows read and written
around the cache (``TableArrays``, table_arrays.py) and hot rows packed together (``Repacker``,
repack.py).

Per batch (``gather``):
1. the unique rows of the batch, their pages (and state pages), all sorted;
2. pages already resident get their referenced bit set and are pinned for the batch;
3. room is made *before* anything is brought in — the cache never holds more than the budget: CLOCK
   picks victims among unpinned frames; dirty victims (and victims the backend holds no copy of) are
   written with ``backend.swap_out(ids, pages, stream=t)``, one call per table present among the
   victims, in CLOCK order within a table; clean victims whose copy the backend still holds are
   dropped without I/O;
4. pages evicted earlier are faulted in with ONE ``backend.swap_in(ids)`` call (ids sorted);
   pages never touched are created on first touch, deterministically from ``seed`` and the page id
   (DLRM's uniform(-1/sqrt(rows), 1/sqrt(rows)) init; Adagrad state starts at 0), so a table larger
   than memory needs no up-front initialisation;
5. the rows are gathered into a (unique rows, dim) float32 array.
A batch whose pages do not fit the budget is gathered and updated in pieces that do
(``paged_stream``; the same values). A backend error in a step leaves the cache consistent: no frame
taken by a failed fault, the pins as before (``PageCache.make_resident`` is atomic), written pages
marked call by call, and after a failed gather nothing pinned and no step pending.
``apply(grad)`` then updates those rows (sparse SGD or row-wise Adagrad) in the frames and marks
their pages dirty. ``gather_tables`` / ``apply_tables`` do the same for per-table index arrays of any
lengths (tables of different dims, or absent from a step), and take an update rule of the caller's
(``rule(t, rows, grad, states) -> (rows, states)``): Adam's arithmetic always comes from the caller
(``zswap_host.torch`` uses torch's own, so that it equals ``torch.optim.SparseAdam`` bit for bit;
numpy's sqrt rounds differently), the paging of its state is done here. ``read_array`` /
``write_array`` move rows of a table's weights or optimizer state between the store and the caller
page by page, without going through the cache (checkpoints).
"""

from __future__ import annotations

import functools
import time
from typing import Callable

import numpy as np

from ..errors import ZswapError
from .first_touch import FirstTouch
from .gather_apply import GatherApply
from .page_cache import UNTOUCHED, PageCache
from .repack import Repacker
from .row_packing import RowPacking
from .table_arrays import TableArrays
from .table_layout import OPTIMIZERS, TableLayout


def _bookkeeping(method):
    """Adds a gather's or an update's wall time, its demand backend calls excluded, to
    ``bookkeeping_wall_s``: the page cache's own cost inside a training step."""
    @functools.wraps(method)
    def timed(self, *args, **kw):
        w0, io0 = time.perf_counter(), self.io_wall_s
        try:
            return method(self, *args, **kw)
        finally:
            self.bookkeeping_wall_s += time.perf_counter() - w0 - (self.io_wall_s - io0)
    return timed


class PagedEmbedding:
    """Embedding tables of ``dim`` fp32 columns, ``tables[t]`` rows each, paged through ``backend``.

    ``dim``: one int, or one per table. ``budget``: DRAM page-cache size — bytes (int), a fraction of
    the paged bytes (float in (0, 1]), or a string (``"25%"``, ``"64MiB"``). ``backend=None`` or a
    budget covering every page = DRAM only (no eviction). ``optimizer``: ``"sgd"`` (row -= lr * grad),
    ``"adagrad"`` (row-wise: one accumulator per row, ``acc += mean(grad**2)``,
    ``row -= lr * grad / (sqrt(acc) + eps)``) or ``"adam"`` (state pages for ``exp_avg`` and
    ``exp_avg_sq``; the update rule is the caller's, see ``apply_tables``); ``steps[t]`` counts the
    updates table t took part in (Adam's bias correction). Optimizer state lives in pages that swap
    too. ``trace``: a ``TraceBuilder`` that records every swap_in / swap_out / discard.
    ``clock``: callable giving the device's (modeled) clock; the change of ``clock()`` across each
    backend call is added to ``io_stall_s`` (wall time inside the call if None). ``io_wall_s`` always
    accumulates the wall time spent inside backend calls, ``bookkeeping_wall_s`` the rest of the wall
    time of gathers and updates (the cache's own work). ``id_base`` / ``stream_base``: added to every
    page id / stream handed to the backend (0: the ids are the page ids).
    ``payload=False``: pages carry no values (no frames): the paging decisions only, driven by
    ``touch`` (trace generation, ``trace_gen.py``).
    ``pack``: a ``RowPacking`` — hot rows packed together (see ``repack``): rows move between slots
    by measured access frequency, every ``pack.every`` steps; no value ever changes. None: row r
    sits in slot r. Everything public takes rows; slots are internal, except ``read_slots`` /
    ``write_slots`` / ``slot_rows`` (streaming in page order).
    ``layout`` (``TableLayout``) and ``cache`` (``PageCache``): its parts, for what reads where the
    pages are and the frames' bits (``paged_stream``, tests).
    """

    def __init__(self, tables, dim, backend=None, budget=1.0, page_size: int = 4096, seed: int = 0,
                 optimizer: str = "sgd", lr: float = 0.1, trace=None, *, eps: float = 1e-8,
                 clock=None, discard_dirty: bool = False, id_base: int = 0, stream_base: int = 0,
                 payload: bool = True, pack: RowPacking | None = None) -> None:
        self.tables = tuple(int(n) for n in tables)
        if not self.tables or min(self.tables) < 1:
            raise ValueError("every table needs at least one row")
        if optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, not {optimizer!r}")
        T = len(self.tables)
        dims = np.broadcast_to(np.asarray(dim, np.int64), (T,)).copy() if np.ndim(dim) == 0 else \
            np.asarray([int(d) for d in dim], np.int64)
        if dims.shape != (T,) or dims.min() < 1:
            raise ValueError(f"dim must be a positive int or one per table ({T}), not {dim!r}")
        self.page_size = int(page_size)
        if backend is not None and backend.page_size != self.page_size:
            raise ValueError(f"backend page size {backend.page_size} != {self.page_size}")
        self.layout = L = TableLayout(self.tables, dims, self.page_size, optimizer, pack)
        self._first_touch = FirstTouch(L, seed)
        self.cache = C = PageCache(L, self._first_touch, backend, budget, trace, clock, discard_dirty, id_base,
                                   stream_base, payload)
        # the layout's and the cache's sizes under the names the bench and the torch modules read
        self.dims, self.rpp, self.uniform, self.dim = L.dims, L.rpp, L.uniform, L.dim
        self.rows_per_page, self.states_per_page = L.rows_per_page, L.states_per_page
        self.weight_pages, self.state_pages, self.page_base, self.state_base = \
            L.weight_pages, L.state_pages, L.page_base, L.state_base
        self.total_pages, self.total_bytes, self.packer = L.total_pages, L.total_bytes, L.packer
        self.backend, self.clock, self.discard_dirty, self.payload = backend, clock, C.discard_dirty, C.payload
        self.budget_bytes, self.nframes, self.dram_only = C.budget_bytes, C.nframes, C.dram_only
        self.counters = C.counters
        self.seed = int(seed)
        self.optimizer = optimizer
        self.lr = float(lr)
        self.eps = float(eps)
        self.steps = np.zeros(T, np.int64)                          # updates each table took part in
        self.bookkeeping_wall_s = 0.0             # gathers and updates, backend calls excluded (wall)
        self._step = GatherApply(self)
        self._arrays = TableArrays(L, C, self._step)
        self._repacker = Repacker(L, C, self._step)

    # -- public ------------------------------------------------------------------------------
    @property
    def resident_pages(self) -> int:
        return self.cache.resident_pages

    @property
    def budget_pages(self) -> int:
        return self.nframes

    def table_of_page(self, pages: np.ndarray) -> np.ndarray:
        return self.layout.table_of_page(pages)

    def page_of(self, table: int, rows: np.ndarray) -> np.ndarray:
        """Weight page ids of rows of one table."""
        return self.layout.page_of(table, rows)

    @_bookkeeping
    def gather(self, sparse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bring a batch's rows into DRAM. ``sparse``: int indices of shape (tables, ...) (table t's
        indices in ``sparse[t]``). Returns ``(rows, inverse)``: the unique rows, float32 (U, dim),
        and for every entry of ``sparse`` (flattened, C order) its row in ``rows``. The pages stay
        pinned until the next ``gather``; call ``apply(grad)`` to update these rows. Tables of one
        dim only (else ``gather_tables``)."""
        return self._step.gather(sparse)

    @_bookkeeping
    def gather_tables(self, indices) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """``gather`` for per-table index arrays: ``indices[t]`` holds table t's lookups (an int array
        of any shape and length, or None: table t is not in this step). Returns, per table, None or
        ``(rows, inverse)``: its unique rows, float32 (U_t, dims[t]) in row order, and for each of its
        lookups (flattened) the row in ``rows``. All the tables' pages are made resident and pinned
        together (one budget); ``IndexError`` for an index outside ``[0, tables[t])``, before any
        paging. Update with ``apply_tables``."""
        return self._step.gather_tables(indices)

    @_bookkeeping
    def apply(self, grad: np.ndarray) -> None:
        """Apply the gradient of the rows last returned by ``gather`` (float32 (U, dim)) and mark
        their pages dirty."""
        self._step.apply(grad)

    @_bookkeeping
    def apply_tables(self, grads, rule=None) -> None:
        """Apply per-table gradients of the rows last returned by ``gather_tables``: ``grads[t]``
        float32 (U_t, dims[t]) for every table in that step (None or anything for the others). Each
        table in the step counts one step (``steps[t]``, incremented before the update), rows or not.
        ``rule(t, rows, grad, states) -> (rows, states)``: the caller's update arithmetic over table
        t's rows (states: () for sgd, (acc,) for adagrad, (exp_avg, exp_avg_sq) for adam; float32
        arrays, returned updated); None = the built-in one (sgd, adagrad; adam has none)."""
        self._step.apply_tables(grads, rule)

    @_bookkeeping
    def touch(self, indices, between: Callable[[], object] | None = None) -> None:
        """A payload-free step (``payload=False``): make the pages of per-table index arrays (as
        ``gather_tables`` takes) resident and dirty them, exactly as ``gather_tables`` then
        ``apply_tables`` would — the same evictions, faults, discards and trace events — without
        any row values. ``between()``: run after the gather and before the update, as a training
        step runs its lookahead prefetch between forward and backward. ``RuntimeError`` on a cache
        with payload."""
        self._step.touch(indices, between)

    def read_rows(self, table: int, rows) -> np.ndarray:
        """Current values of some rows of one table, float32 (n, dims[table]), faulting their pages
        in as a batch would (for tests and inspection; does not count as lookups)."""
        return self._step.read_rows(table, rows)

    def peek_rows(self, table: int, rows) -> np.ndarray:
        """Current values of some rows of one table, float32 (n, dims[table]), read page by page
        without going through the cache (``read_array``'s way: nothing made resident or evicted, no
        budget limit; the current step stays)."""
        return self._arrays.peek_rows(table, rows)

    def array_shape(self, table: int, name: str) -> tuple[int, ...]:
        """Shape of one of table ``table``'s arrays (``TableLayout.array_shape``)."""
        return self.layout.array_shape(table, name)

    def array_layout(self, t: int, name: str) -> tuple[int, int, int, int]:
        """(first page, rows per page, floats per row, rows) of table t's array ``name``
        (``TableLayout.array_layout``)."""
        return self.layout.array_layout(t, name)

    def read_array(self, table: int, name: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Rows ``[lo, hi)`` of table ``table``'s array ``name`` (``"weight"`` or an optimizer state
        of ``ARRAYS[optimizer]``), float32, read page by page without going through the cache:
        resident pages from their frames, swapped-out pages with one ``swap_in``, pages never touched
        as first touch creates them. Nothing is made resident or evicted (the current step stays).
        With packing the rows may sit on up to ``hi - lo`` pages: ``read_slots`` streams in page order."""
        return self._arrays.read_array(table, name, lo, hi)

    def read_slots(self, table: int, name: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """``read_array`` of slots ``[lo, hi)`` (the rows ``slot_rows(table, lo, hi)``), in page order."""
        return self._arrays.read_slots(table, name, lo, hi)

    def slot_rows(self, table: int, lo: int, hi: int):
        """The rows held by slots ``[lo, hi)`` of a table (``TableLayout.slot_rows``)."""
        return self.layout.slot_rows(table, lo, hi)

    def write_array(self, table: int, name: str, lo: int, values) -> None:
        """Set rows ``[lo, lo + len(values))`` of table ``table``'s array ``name``, page by page,
        without evicting anything: a resident page is overwritten in its frame (and dirtied), the
        others go to free frames while there are any, then straight to the backend with one
        ``swap_out`` (``stream`` = the table). Pages only partly covered are read first. Ends the
        current step."""
        self._arrays.write_array(table, name, lo, values)

    def write_slots(self, table: int, name: str, lo: int, values) -> None:
        """``write_array`` of slots ``[lo, lo + len(values))`` (``slot_rows``), in page order."""
        self._arrays.write_slots(table, name, lo, values)

    def flush(self) -> None:
        """Write every dirty resident page to the backend (keeping it resident and now clean)."""
        if self.backend is None:
            return
        self.settle()
        self.cache.flush()

    def release(self) -> None:
        """Forget the tables: discard (one call) every page the backend holds for them and drop the
        DRAM cache. The object is unusable afterwards."""
        self._step.drop()
        self.cache.release()

    def settle(self) -> None:
        """Finish writing back the update of a step larger than the budget whose write-back a device
        error interrupted (``paged_stream``): every read of values calls it first, so the update is
        never lost; it raises the device's error again while the write-back cannot finish."""
        self._step.settle()

    def repack(self) -> int:
        """Pack hot rows together now (``pack``; also run by the first gather of every ``pack.every``
        steps): the rows ``RowPacker.plan`` picks (at most ``pack.max_rows``, and at most what the
        budget's unpinned frames hold with their pages) swap slots; their values and optimizer
        state move with them, within the pages those slots are on: the pages are made resident
        together (evicting as a gather does), the values moved in DRAM, the pages dirtied. No value
        changes. Ends the current step. Returns the rows moved.

        A device error (making the pages resident) is not raised: nothing has moved then (the
        mapping and every value as before; pages evicted on the way stay evicted, each consistent),
        it is counted (``repack_errors``, ``last_repack_error``) and the next step tries again."""
        return self._repacker.run()

    @property
    def unsettled(self) -> bool:
        """Whether an applied update still waits to be written into the pages (``settle``)."""
        return self._step.unsettled

    @property
    def last_repack_error(self) -> ZswapError | None:
        """The device error that cut the last failed repack short (``repack``)."""
        return self._repacker.last_error

    def stats(self) -> dict:
        d = self.counters.as_dict()
        d.update(total_pages=self.total_pages, budget_pages=self.nframes, resident_pages=self.resident_pages,
                 page_size=self.page_size, rows_per_page=self.rows_per_page, dram_only=self.dram_only,
                 io_wall_s=self.io_wall_s, io_stall_s=self.io_stall_s, io_overlap_s=self.io_overlap_s,
                 prefetch_wall_s=self.prefetch_wall_s, bookkeeping_wall_s=self.bookkeeping_wall_s,
                 pack_bytes=self.packer.nbytes if self.packer is not None else 0)
        return d

    def prefetch(self, batches) -> tuple[float, int]:
        """Fault in the pages of upcoming batches (each a ``sparse`` array as ``gather`` takes, or
        per-table index arrays as ``gather_tables`` takes; nearest first) and pin them, beside the pages of the batch last gathered, which stay pinned: eviction
        for them never takes a page of that batch or of an earlier-queued one. Batches whose pages
        would not fit the budget beside those are left out (from the first that does not fit on;
        counted in ``prefetch_cut``). The queued pages stay pinned through the next ``gather`` when
        that batch and they fit together. Returns the clock change across the prefetch's backend
        calls (wall time there without a clock: see :mod:`.lookahead`) and the pages brought in.
        Numerics are unaffected: pages come in, rows are read at ``gather``."""
        return self.cache.prefetch(batches)

    def check_indices(self, indices) -> None:
        """Check one step's per-table index arrays (None: table not in the step) as ``gather_tables``
        would, changing nothing: ``ValueError`` for the wrong number of tables, ``TypeError`` for
        non-integer indices, ``IndexError`` for one out of range."""
        self.layout.lookup_keys(indices)

    def init_as(self, first_pages, rows) -> None:
        """Make first touch create the values a shard would have in the whole tables: table t's weight
        page p gets those of page ``first_pages[t] + p`` (a page id of the whole tables' layout) of a
        table of ``rows[t]`` rows (DLRM's init bound is the whole table's). A sharded run then starts
        from the same tables as the unsharded one (``zswap_host.distributed``); a row shard must start
        on a page boundary. ``ValueError`` once any page was touched, or for arrays of the wrong length."""
        self._first_touch.init_as(first_pages, rows, bool((self.cache.page_state != UNTOUCHED).any()))

    # -- the cache's timers and the backend's view of the pages (``PageCache``) -----------------
    @property
    def io_wall_s(self) -> float:
        return self.cache.io_wall_s

    @property
    def io_stall_s(self) -> float:
        return self.cache.io_stall_s

    @property
    def io_overlap_s(self) -> float:
        return self.cache.io_overlap_s

    @property
    def prefetch_wall_s(self) -> float:
        return self.cache.prefetch_wall_s

    @property
    def trace(self):
        return self.cache.trace

    @trace.setter
    def trace(self, trace) -> None:
        self.cache.trace = trace

    @property
    def id_base(self) -> int:
        return self.cache.id_base

    @id_base.setter
    def id_base(self, base: int) -> None:
        self.cache.id_base = base

    @property
    def stream_base(self) -> int:
        return self.cache.stream_base

    @stream_base.setter
    def stream_base(self, base: int) -> None:
        self.cache.stream_base = base
