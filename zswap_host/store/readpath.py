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
    n = slots.size
    ordered = n < 2 or bool((slots[1:] > slots[:-1]).all())      # GC's reads are: no sort then
    order = None if ordered else np.argsort(slots, kind="stable")
    s = slots if ordered else slots[order]
    if window <= 0:
        gaps = np.diff(s)
        if not (gaps == 1).any():                       # no two slots adjacent: a request each
            rank = np.arange(n)
            if not ordered:
                rank[order] = rank.copy()
            return ReadPlan(s, np.ones(n, np.int64), rank, rank, _NONE, _NONE)
    if window > 0:
        zf = s // slots_per_zone * slots_per_zone
        lim = zf + written_at(zf // slots_per_zone)
        lo = zf + (s - zf) // window * window
        starts, first = np.unique(lo, return_index=True)
        lengths = np.minimum(starts + window, lim[first]) - starts
    else:
        # a run breaks at a gap or where a zone starts (adjacent slots there lie in two zones)
        first = np.empty(n, bool)
        first[0] = True
        first[1:] = (gaps != 1) | (s[1:] % slots_per_zone == 0)
        if n > max_pages:                               # ... and every max_pages within a run
            run_first = np.flatnonzero(first)
            first |= (np.arange(n) - run_first[np.cumsum(first) - 1]) % max_pages == 0
        idx = np.flatnonzero(first)
        starts = s[idx]
        lengths = np.diff(idx, append=n)                # requests cover the slots exactly, in order
        req = np.cumsum(first) - 1
        row_sorted = np.arange(n)
    if window > 0:
        out_start = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        req = np.searchsorted(starts, s, side="right") - 1
        row_sorted = out_start[req] + (s - starts[req])
    if ordered:
        row_of_request, request_of_slot = row_sorted, req
    else:
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
