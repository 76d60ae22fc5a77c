"""Read planning: turn the slots a swap-in or a GC step needs into device requests. The rule is
``native/read_plan.c`` (``rp_plan_reads``), its one implementation; tests/store/test_readpath.py
holds its per-slot Python twin."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._native import ffi, lib


@dataclass
class ReadPlan:
    starts: np.ndarray           # first slot of each request
    lengths: np.ndarray          # pages per request
    row_of_request: np.ndarray   # per input slot: its row in the concatenated read data
    request_of_slot: np.ndarray  # per input slot: the request that carries it
    extra_slots: np.ndarray      # slots read that nobody asked for (prefetch)
    extra_rows: np.ndarray       # ... and their rows


_NONE = np.zeros(0, np.int64)
_I64 = np.dtype(np.int64)


def plan_reads(slots: np.ndarray, slots_per_zone: int, written: np.ndarray, window: int,
               max_pages: int) -> ReadPlan:
    """Plan reads for distinct ``slots`` (slot = zone * ``slots_per_zone`` + page in the zone).
    Without a window, runs of adjacent slots in one zone become one request (split at
    ``max_pages``). With a window of W pages, each request is the W-aligned window (from the
    zone's start) holding requested slots, clipped at the zone's written end (``written``: data
    pages written per zone, int64, the allocator's cursors).

    Raises ``ValueError`` for a negative slot, ``slots_per_zone`` or ``max_pages`` below 1, and
    with a window for a slot at or past its zone's written end."""
    s = slots if slots.dtype == _I64 and slots.flags.c_contiguous else np.ascontiguousarray(slots, np.int64)
    n = s.size
    if n == 0:
        return ReadPlan(_NONE, _NONE, _NONE, _NONE, _NONE, _NONE)
    buf = np.empty(8 * n, np.int64)
    bp = ffi.from_buffer("int64_t[]", buf)
    if window > 0:
        w = written if written.dtype == _I64 and written.flags.c_contiguous else np.ascontiguousarray(written, np.int64)
        wp, nz = ffi.from_buffer("int64_t[]", w), w.size
    else:
        wp, nz = ffi.NULL, 0
    nreq = lib.rp_plan_reads(ffi.from_buffer("int64_t[]", s), n, slots_per_zone, wp, nz, window, max_pages, bp)
    if nreq < 0:
        raise ValueError(f"plan_reads: {'a slot outside the zones written' if nreq == -2 else 'bad arguments'} "
                         f"(slots_per_zone {slots_per_zone}, window {window}, max_pages {max_pages})")
    lengths = buf[n:n + nreq]
    extra_slots = extra_rows = _NONE
    if window > 0:
        k = int(lengths.sum()) - n
        if k:
            extra_slots, extra_rows = np.empty(k, np.int64), np.empty(k, np.int64)
            lib.rp_extras(n, bp, nreq, ffi.from_buffer("int64_t[]", extra_slots), ffi.from_buffer("int64_t[]", extra_rows))
    return ReadPlan(buf[:nreq], lengths, buf[2 * n:3 * n], buf[3 * n:4 * n], extra_slots, extra_rows)
