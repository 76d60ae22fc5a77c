"""``Pager``: paged memory over a ``SwapBackend`` within a DRAM budget (the public API)."""

from __future__ import annotations

import os
import threading
import time

from typing import Any, Callable

import numpy as np

from ..backend import SwapBackend
from .abort import abort_seconds
from .core import LocalCore
from .native import check, pager_lib, ptr
from .process import STOP_TIMEOUT_S, BackendProcess
from .region import Region
from .shapes import MAX_PAGE_ID, as_shape, region_bytes
from .resolver import DISCARD_BATCH, Resolver
from .rows import row_layout, row_page_addrs
from .stats import PagerStats
from .tensors import move_into, tensor_over, torch_itemsize

MIN_BUDGET_PAGES = 16


class Pager:
    """Memory regions whose pages live in ``backend`` and at most ``budget`` bytes of DRAM.

    ``budget`` is in bytes (rounded down to whole pages; at least 16 pages): the pages mapped in
    all regions plus the pages being read never exceed it, so the regions' RSS stays within it.
    ``page_size`` must be the system page size and the backend's. Pages of this pager use the
    backend ids ``[id_base, id_base + pages allocated)`` (each region a range of its own, in
    allocation order); ``stream`` is the default placement hint for written pages.

    Untouched memory reads as zeros and costs nothing. A page never written is dropped on
    eviction without I/O; a clean page with a backend copy likewise; a dirty one is written with
    ``swap_out``. ``discard_on_write``: when a page read from the backend is first written, its
    backend copy is stale; with True the resolver ``discard``s it (batched, as soon as it wakes), so
    a backend with GC need not move it; with False (the default, as Linux's swap cache keeps the
    slot) it stays until the page is written out again, over it. A page whose backend read fails
    delivers SIGBUS to the threads that touched it (the process dies unless it handles SIGBUS;
    other pages are unaffected).

    ``fault_around`` (pages, default 0: off): each fetch batch also reads up to that many of the
    backend's ``neighbours`` of the faulted pages (the pages it says are likely needed with them:
    for ``SwapStore`` those written next to them) in the same ``swap_in``, if they are pages of this
    pager held only by the backend and there is room in the budget (the budget rule is unchanged;
    read-ahead never waits for or asks for an eviction). A backend without ``neighbours`` reads
    ahead nothing. ``stats()`` counts them (``spec_pages_in``) and how many were touched before
    eviction (``spec_hits``, ``readahead_hit_ratio``).

    ``rearm_wp`` (default True): eviction is CLOCK over the mapped pages; a fault marks a page
    referenced, and the hand, passing a referenced page, clears the mark. A write to a dirty page
    makes no fault, so without re-arming (False, the behaviour before) a dirty page in constant use
    looks untouched once the hand cleared its mark. With True, the hand write-protects such a dirty
    page again, so its next write is one write-protect fault that marks it referenced (no I/O, no
    discard; ``stats().rearms``, ``rearm_faults``). Reads still give no signal. On the transparent
    DLRM it cut pages read by 16% and the modeled stall by 15% (experiments/results/transparent_dlrm/).

    The GIL contract (this mode; ``Pager.process`` has none): a thread touching a page that is not
    resident waits for the resolver, a Python thread. If the toucher holds the GIL (``arr[i]``, a small slice, a numpy reduction that
    casts such as ``a.sum(dtype=np.float64)`` of an int64 array), the resolver can never run and the
    process hangs. Touch paged memory only from code that releases the GIL: torch operations,
    whole-array numpy calls that do not cast, ``ctypes.memmove``, ``Pager.copy``, or native code
    (docs/design.md, "Which calls are safe", lists the calls tested each way). Never touch it from the resolver (i.e. from a backend). Such a deadlock never
    ends, so the abort timer (``ZSWAP_PAGER_ABORT_S``, seconds, default 60, 0: off; ``abort_s``)
    aborts the process with a message saying so once faults have waited that long for a resolver
    that did not come. A backend that keeps failing the writes that would make room (full) makes the
    faults waiting for room SIGBUS with a message naming its error, as a failed read does.

    Errors: ``ValueError`` for a bad budget, page size, ``id_base``, ``ZSWAP_PAGER_ABORT_S`` or shape (a negative dimension,
    a size of 0 or beyond the address space, pages whose ids would pass ``2**63 - 1``: refused
    before anything is mapped or registered); ``OSError`` when userfaultfd is
    not available (ENOSYS, EPERM: not root and ``vm.unprivileged_userfaultfd`` = 0, EOPNOTSUPP:
    no write-protect support, Linux < 5.7); ``ImportError`` when the C core was not built.
    """

    def __init__(self, backend: SwapBackend, budget: int, page_size: int = 4096, stream: int = 0, *,
                 id_base: int = 0, fetch_batch: int = 256, evict_batch: int = 256,
                 discard_on_write: bool = False, fault_around: int = 0, rearm_wp: bool = True) -> None:
        if getattr(backend, "page_size", page_size) != page_size:
            raise ValueError(f"backend page_size {backend.page_size} != pager page_size {page_size}")
        self._open(budget, page_size, stream, id_base, fetch_batch, evict_batch, discard_on_write, fault_around,
                   rearm_wp)
        self.backend: SwapBackend | None = backend
        self._process: BackendProcess | None = None
        self._resolver = Resolver(LocalCore(self._ffi, self._lib, self._h, page_size), backend, id_base=self.id_base,
                                  page_size=page_size, fetch_batch=fetch_batch, evict_batch=self._evict_batch,
                                  fault_around=self.fault_around)
        self._resolver.start()

    @classmethod
    def process(cls, backend_factory: Callable[[], SwapBackend], budget: int, page_size: int = 4096,
                stream: int = 0, *, id_base: int = 0, fetch_batch: int = 256, evict_batch: int = 256,
                discard_on_write: bool = False, fault_around: int = 0, rearm_wp: bool = True,
                start_timeout: float = 300.0) -> "Pager":
        """A pager whose backend lives in a process of its own: no Python runs on this process's
        fault path, so any thread may touch paged memory, holding the GIL or not (``a[i]``,
        ``a.sum(dtype=...)``), without deadlock. The arguments are ``Pager``'s, except
        ``backend_factory``: a picklable callable without arguments (a module-level function, a
        ``functools.partial`` of one, a class) that the backend process calls to build the backend
        (e.g. ``functools.partial(make_store, "emu://...")``); it runs with this process's
        ``sys.path``. The backend process runs the same resolver as the thread mode over a channel
        (shared memory for page data and requests, eventfds for wake-ups) that a C thread of this
        process serves. ``backend`` is None here: reach the backend with ``backend_call``.

        If the backend process ends while the pager is open (killed, crashed), every fault waiting
        for it and every later fault that needs it (a page it holds, or room when the budget is full)
        gets SIGBUS with a line naming how it ended (``zswap pager: SIGBUS to thread T touching 0x…:
        the backend process (pid N) was killed by signal 9: …``); resident pages and pages never
        written still work; ``close()`` still works. ``close()`` stops it (its final ``discard`` of
        this pager's pages runs there).

        Errors: those of ``Pager()``; ``RuntimeError`` when the backend process cannot build the
        backend (the factory's exception, or a page size mismatch, is the cause) or ends before it is
        ready within ``start_timeout`` seconds; ``pickle.PicklingError``, ``TypeError`` or
        ``AttributeError`` when the factory cannot be pickled."""
        self = cls.__new__(cls)
        self._open(budget, page_size, stream, id_base, fetch_batch, evict_batch, discard_on_write, fault_around,
                   rearm_wp)
        self.backend = None
        self._resolver = None
        cap = max(fetch_batch + self.fault_around, self._evict_batch, min(DISCARD_BATCH, 1024))
        settings = {"page_size": page_size, "id_base": self.id_base, "fetch_batch": fetch_batch,
                    "evict_batch": self._evict_batch, "fault_around": self.fault_around}
        proc = None
        try:
            proc = BackendProcess(page_size=page_size, cap=cap,
                                  channel_bytes=self._lib.pg_channel_bytes(cap, page_size))
            proc.connect(self._lib, self._h, backend_factory, settings, start_timeout)
        except BaseException:
            self._lib.pg_stop(self._h)
            if proc is not None:
                proc.kill()
            self._lib.pg_close(self._h)
            if proc is not None:
                proc.close_fds()
            self._closed = True
            raise
        self._process = proc
        return self

    def _open(self, budget: int, page_size: int, stream: int, id_base: int, fetch_batch: int, evict_batch: int,
              discard_on_write: bool, fault_around: int, rearm_wp: bool) -> None:
        """Check the settings and open the C core (both modes)."""
        sys_ps = os.sysconf("SC_PAGE_SIZE")
        if page_size != sys_ps:
            raise ValueError(f"page_size {page_size}: the pager maps whole system pages ({sys_ps} bytes)")
        budget_pages = int(budget) // page_size
        if budget_pages < MIN_BUDGET_PAGES:
            raise ValueError(f"budget {budget} bytes is under {MIN_BUDGET_PAGES} pages of {page_size}")
        if id_base < 0 or fetch_batch < 1 or evict_batch < 1 or fault_around < 0:
            raise ValueError("id_base and fault_around must be >= 0, fetch_batch and evict_batch >= 1")
        if id_base > MAX_PAGE_ID:
            raise ValueError(f"id_base {id_base} is beyond the backend's page ids [0, 2**63 - 1]")
        self.page_size = page_size
        self.budget_pages = budget_pages
        self.stream = int(stream)
        self.id_base = int(id_base)
        self.discard_on_write = bool(discard_on_write)
        self.fault_around = int(fault_around)
        self.rearm_wp = bool(rearm_wp)
        # evict in batches of up to `headroom` pages, starting before the budget is full
        self.headroom_pages = max(1, min(evict_batch, budget_pages // 8))
        self._ffi, self._lib = ffi, lib = pager_lib()
        out = ffi.new("pg_pager **")
        self.abort_s = abort_seconds()
        check(lib.pg_open(budget_pages, self.headroom_pages, page_size, int(self.discard_on_write),
                          int(self.rearm_wp), self.abort_s, out),
              "userfaultfd pager")
        self._h = out[0]
        self._evict_batch = max(evict_batch, self.headroom_pages)
        self._regions: list[Region] = []
        self._lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------ allocation
    def _new_region(self, nbytes: int, stream: int | None) -> Region:
        if nbytes <= 0:
            raise ValueError("a paged region needs at least one byte")
        self._check_open()
        npages = -(-nbytes // self.page_size)
        ffi = self._ffi
        addr, first = ffi.new("uint64_t *"), ffi.new("uint64_t *")
        with self._lock:
            last_id = self.id_base + self._npages() + npages - 1
            if last_id > MAX_PAGE_ID:          # ids would wrap negative: every eviction would fail
                raise ValueError(f"{npages} more pages from id_base {self.id_base} pass the backend's page ids "
                                 f"[0, 2**63 - 1] (last id {last_id})")
            stream = self.stream if stream is None else int(stream)
            check(self._lib.pg_add_region(self._h, npages, stream, addr, first), "register paged region")
            r = Region(int(addr[0]), npages, int(first[0]), self.page_size, stream)
            self._regions.append(r)
        return r

    def alloc(self, shape: int | tuple[int, ...], dtype=np.float32, *, stream: int | None = None) -> np.ndarray:
        """A new zero-filled C-contiguous array in paged memory (a region of its own).
        ``stream``: the placement hint for its pages (default: the pager's)."""
        shape = as_shape(shape)
        dtype = np.dtype(dtype)
        if dtype.hasobject:
            raise ValueError("paged arrays cannot hold Python objects")
        r = self._new_region(region_bytes(shape, dtype.itemsize), stream)
        return r.array(self._ffi, shape, dtype)

    def tensor(self, shape: int | tuple[int, ...], dtype=None, *, stream: int | None = None):
        """A new zero-filled CPU ``torch.Tensor`` in paged memory (default dtype: torch's)."""
        import torch

        dtype = torch.get_default_dtype() if dtype is None else dtype
        shape = as_shape(shape)
        nbytes = region_bytes(shape, torch_itemsize(dtype))
        raw = self._new_region(nbytes, stream).array(self._ffi, (nbytes,), np.uint8)
        return tensor_over(raw, shape, dtype)

    def adopt(self, tensor, *, stream: int | None = None):
        """Move a CPU tensor's values into paged memory and make ``tensor`` itself use it
        (``Tensor.set_``: every reference to the tensor, e.g. a module's parameter, follows).
        The old storage is freed when nothing else refers to it; views taken before still see
        the old storage. The tensor becomes contiguous. Returns ``tensor``."""
        if tensor.device.type != "cpu":
            raise ValueError(f"adopt needs a CPU tensor, not {tensor.device}")
        paged = self.tensor(tuple(tensor.shape), tensor.dtype, stream=stream)
        move_into(tensor, paged)
        return tensor

    def copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        """``dst[...] = src`` for C-contiguous arrays of equal size in bytes, without the GIL
        (safe for paged memory from any Python thread)."""
        if dst.nbytes != src.nbytes or not (dst.flags.c_contiguous and src.flags.c_contiguous):
            raise ValueError("copy needs C-contiguous arrays of equal size in bytes")
        if not dst.flags.writeable:
            raise ValueError("copy destination is read-only")
        self._lib.pg_memcpy(dst.ctypes.data, src.ctypes.data, dst.nbytes)

    def prefetch(self, obj, rows=None, *, make_room: bool = False) -> int:
        """Announce that ``rows`` (indices along the first dimension; None: all) of ``obj``, a
        C-contiguous numpy array or torch tensor in one region of this pager (``alloc``, ``tensor``,
        ``adopt``), are needed soon, as ``madvise(MADV_WILLNEED)``: the pages holding them that only
        the backend holds are queued for reading now (batched with the faults), so a later touch finds
        them mapped. Never waits and never evicts for it: it queues at most the free room in the
        budget (about the eviction headroom once the budget is in use), in the order of the pages;
        pages mapped, never written or in flight are skipped. Counted as read-ahead
        (``stats().spec_pages_in``, ``spec_hits``). ``make_room=True`` (the batching path for one
        thread): the pages beyond the free room wait for room behind the faults instead (eviction is
        asked for them as for faults, up to half the budget pending; no thread waits), so a whole
        batch announced is read in ``swap_in`` calls of up to ``fetch_batch`` pages. Returns how many
        pages were queued (with ``make_room``: or left waiting for room). Safe from any
        thread, with or without the GIL (it touches no paged memory). ``ValueError`` for rows out of
        range or memory not in this pager."""
        self._check_open()
        addr, nrows, stride, row_bytes = row_layout(obj)
        rows = np.arange(nrows) if rows is None else np.asarray(rows, np.int64).reshape(-1)
        if rows.size and (rows.min() < 0 or rows.max() >= nrows):
            raise ValueError(f"prefetch: rows out of range [0, {nrows})")
        region = next((r for r in self._regions if r.contains(addr)), None)
        if region is None or addr + nrows * stride > region.addr + region.nbytes:
            raise ValueError("prefetch: the memory is not in a region of this pager")
        addrs = row_page_addrs(addr, stride, row_bytes, rows, self.page_size)
        pages = np.ascontiguousarray((addrs - region.addr) // self.page_size + region.first_page, np.uint64)
        if pages.size == 0:
            return 0
        return check(self._lib.pg_prefetch(self._h, ptr(self._ffi, pages, "uint64_t *"), len(pages),
                                             int(make_room)), "pg_prefetch")

    def quiesce(self, timeout: float | None = None) -> bool:
        """Wait until the resolver has nothing to do: no page queued or being read, no fault waiting
        for room, no eviction running or due, no discard queued or running. Returns True when quiet,
        False after ``timeout`` seconds (None: wait as long as it takes). Once no thread touches paged memory and this
        returned True, the pager makes no backend call until the next fault, so the caller may use
        the backend itself (``idle()``, reading its clock or stats) — the training loop of
        ``workloads.transparent`` does so between steps. Waits without the GIL."""
        self._check_open()
        end = None if timeout is None else time.monotonic() + float(timeout)
        while True:
            left = 0.1 if end is None else min(0.1, end - time.monotonic())
            if self._lib.pg_quiesce(self._h, max(0, int(left * 1000))):
                return True
            if end is not None and time.monotonic() >= end:
                return False

    # ------------------------------------------------------------ state
    @property
    def regions(self) -> tuple[Region, ...]:
        return tuple(self._regions)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def errors(self) -> tuple[BaseException, ...]:
        """The last backend exceptions the resolver met (at most 16; from a backend process:
        copies, or a ``RuntimeError`` naming one that cannot be pickled)."""
        return tuple(self._backend_errors()[1])

    def _backend_errors(self) -> tuple[int, list[BaseException]]:
        if self._process is not None:
            return self._process.errors()
        return self._resolver.nerrors, list(self._resolver.errors)

    @property
    def serve(self) -> str:
        """Where the backend is served: "thread" (``Pager(...)``) or "process" (``Pager.process``)."""
        return "thread" if self._process is None else "process"

    @property
    def backend_pid(self) -> int | None:
        """The backend process's pid (``Pager.process``), else None."""
        return None if self._process is None else self._process.pid

    @property
    def backend_gone(self) -> bool:
        """True once the backend process has ended while the pager was open (faults that need it
        fail with SIGBUS); always False in the thread mode."""
        return not self._closed and bool(self._lib.pg_backend_gone(self._h))

    def backend_call(self, fn: Callable[..., Any], *args) -> Any:
        """``fn(backend, *args)`` where the backend lives: here in the thread mode, in the backend
        process with ``Pager.process`` (``fn``, ``args`` and the result pickled: a module-level
        function or ``operator.methodcaller``; ``fn``'s exception is raised here;
        ``BackendGone`` when the process has ended). As with ``backend``, call it when the
        pager is quiet (``quiesce``) unless the backend is safe to use beside the resolver."""
        self._check_open()
        if self._process is None:
            return fn(self.backend, *args)
        return self._process.call(fn, *args)

    def _npages(self) -> int:
        r = self._regions
        return r[-1].first_page + r[-1].npages if r else 0

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("pager is closed")

    def stats(self) -> PagerStats:
        """What the pager did so far (after close: the final values)."""
        if self._closed:
            return self._final
        s = self._ffi.new("pg_stats *")
        self._lib.pg_get_stats(self._h, s)
        fields = {name: int(getattr(s, name)) for name, _ in self._ffi.typeof("pg_stats").fields}
        return PagerStats(page_size=self.page_size, budget_pages=self.budget_pages, regions=len(self._regions),
                          backend_errors=self._backend_errors()[0], **fields)

    # ------------------------------------------------------------ the end
    def close(self, timeout: float | None = None) -> None:
        """Serve the reads already queued, stop the threads, discard this pager's pages from the
        backend, unregister and unmap every region and close the userfaultfd. Every array and
        tensor the pager handed out is invalid afterwards (its memory is unmapped: touching it
        is a use after free; stale copies still queued for discard go with the rest). Threads must
        have stopped touching paged memory before. Does not close the backend. A second close is a
        no-op.

        ``timeout`` (``Pager.process`` only; default 300 s): how long close waits for the backend
        process's last batch, its final discard and its exit together. A backend call that does not
        return by then does not hang close: the process is killed, this pager's pages stay in the
        backend (not discarded) and a ``BackendGone`` saying so is counted in ``backend_errors``.
        ValueError, with nothing done, for a timeout that is not a number of seconds >= 0, or any
        timeout in the thread mode (a resolver thread stuck in a backend call cannot be stopped
        safely: close waits for it)."""
        if self._closed:
            return
        if timeout is not None:
            if self._process is None:
                raise ValueError("close(timeout=...) bounds Pager.process's backend process; a thread-mode "
                                 "pager waits for its resolver thread")
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
                raise ValueError(f"close timeout must be a number of seconds >= 0, not {timeout!r}")
        lib, ffi = self._lib, self._ffi
        lib.pg_stop(self._h)
        if self._process is not None:
            self._process.stop(STOP_TIMEOUT_S if timeout is None else float(timeout))
        else:
            self._resolver.join()
        n = lib.pg_stored_pages(self._h, ffi.NULL, 0)
        stored = np.empty(max(n, 1), np.uint64)
        n = lib.pg_stored_pages(self._h, ptr(ffi, stored, "uint64_t *"), len(stored))
        ids = stored[:n].astype(np.int64) + self.id_base
        try:
            if self._process is not None:
                self._process.discard_and_exit(ids)
            elif n:
                self.backend.discard(ids)
        except Exception as exc:  # noqa: BLE001 - the memory is released regardless
            self._resolver.note(exc)
        finally:
            self._final = self.stats()
            self._closed = True
            check(lib.pg_close(self._h), "close pager")
            self._h = ffi.NULL
            if self._process is not None:
                self._process.close_fds()

    def __enter__(self) -> "Pager":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
