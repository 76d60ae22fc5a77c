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


def plan_reads(slots: np.ndarray, zone_first: np.ndarray, limit: np.ndarray,
               window: int, max_pages: int) -> ReadPlan:
    """Plan reads for distinct ``slots``. Without a window, runs of adjacent slots in one zone become
    one request (split at ``max_pages``). With a window of W pages, each request is the W-aligned
    window (from the zone's start) holding requested slots, clipped at ``limit`` (the zone's written end)."""
    order = np.argsort(slots, kind="stable")
    s, zf, lim = slots[order], zone_first[order], limit[order]
    n = s.size
    if window > 0:
        lo = zf + (s - zf) // window * window
        starts, first = np.unique(lo, return_index=True)
        ends = np.minimum(starts + window, lim[first])
    else:
        brk = np.ones(n, bool)
        brk[1:] = (np.diff(s) != 1) | (zf[1:] != zf[:-1])
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
