"""Read planning: turn the slots a swap-in needs into device requests (numpy, no per-page loop)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class ReadPlan:
    starts: np.ndarray           # first slot of each request
    lengths: np.ndarray          # pages per request
    row_of_request: np.ndarray   # per input slot: its row in the concatenated read data
    request_of_slot: np.ndarray  # per input slot: the request that carries it
    extra_slots: np.ndarray      # slots read that nobody asked for (prefetch)
    extra_rows: np.ndarray       # ... and their rows


_NONE = np.zeros(0, np.int64)


def plan_reads(slots: np.ndarray, slots_per_zone: int, written_at, window: int, max_pages: int) -> ReadPlan:
    """Plan reads for distinct ``slots`` (slot = zone * ``slots_per_zone`` + page in the zone).
    Without a window, runs of adjacent slots in one zone become one request (split at
    ``max_pages``). With a window of W pages, each request is the W-aligned window (from the
    zone's start) holding requested slots, clipped at the zone's written end (``written_at(zones)``:
    data pages written per zone)."""
    order = np.argsort(slots, kind="stable")
    s = slots[order]
    n = s.size
    if window <= 0:
        gaps = np.diff(s)
        if not (gaps == 1).any():                       # no two slots adjacent: a request each
            rank = np.empty(n, np.int64)
            rank[order] = np.arange(n)
            return ReadPlan(s, np.ones(n, np.int64), rank, rank, _NONE, _NONE)
    zf = s // slots_per_zone * slots_per_zone
    if window > 0:
        lim = zf + written_at(zf // slots_per_zone)
        lo = zf + (s - zf) // window * window
        starts, first = np.unique(lo, return_index=True)
        ends = np.minimum(starts + window, lim[first])
    else:
        brk = np.ones(n, bool)
        brk[1:] = (gaps != 1) | (zf[1:] != zf[:-1])
        run_first = np.flatnonzero(brk)
        pos_in_run = np.arange(n) - run_first[np.cumsum(brk) - 1]
        idx = np.flatnonzero(brk | (pos_in_run % max_pages == 0))
        starts = s[idx]
        ends = np.append(s[idx[1:] - 1], s[-1]) + 1
    lengths = ends - starts
    out_start = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    req = np.searchsorted(starts, s, side="right") - 1
    row_sorted = out_start[req] + (s - starts[req])
    row_of_request = np.empty(n, np.int64)
    row_of_request[order] = row_sorted
    request_of_slot = np.empty(n, np.int64)
    request_of_slot[order] = req
    if window > 0:
        total = int(lengths.sum())
        all_slots = np.repeat(starts, lengths) + (np.arange(total) - np.repeat(out_start, lengths))
        mask = np.ones(total, bool)
        mask[row_sorted] = False
        extra_rows = np.flatnonzero(mask)
        extra_slots = all_slots[extra_rows]
    else:
        extra_rows = extra_slots = np.zeros(0, np.int64)
    return ReadPlan(starts, lengths, row_of_request, request_of_slot, extra_slots, extra_rows)
