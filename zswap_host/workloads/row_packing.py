"""Hot rows packed together: a row -> slot indirection for ``PagedEmbedding``, learnt online from
measured access frequency.

Embedding access is skewed; with a page-granular DRAM budget a cold row that shares a page with a
hot one wastes the budget. ``RowPacker`` keeps, per table, a permutation between rows (what the
caller indexes) and slots (where a row's values sit in the table's pages: slot s is on page
``s // rows_per_page``), a decayed per-row count of the steps each row was looked up in, and plans
repacks: rows ranked by count (ties: current slot, so equal rows stay put) belong to *tiers* of
slots — page-aligned ranges whose sizes grow geometrically (``RowPacking.growth``), one page first —
and a row moves only when its rank leaves its tier (so noise among middling rows moves nothing).
A repack fixes the hottest tiers first, as many as ``cap`` moved rows allow, then swaps the
hottest rows waiting to enter the next tier with its coldest occupants. Every plan is a
permutation of the slots it touches (the slots the moved rows leave are the slots they take), so
``PagedEmbedding`` moves the values (weights and optimizer state) within those pages only.

Memory: 10 bytes a row (int32 slot, int32 inverse, float16 count; int64 indices for a table of
2**31 rows or more), outside the DRAM budget (``nbytes``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RowPacking:
    """How ``PagedEmbedding`` packs hot rows (``pack=``). ``every``: steps (gathers) between repacks;
    ``max_rows``: rows moved per repack at most, over all tables (None: a budget's worth of rows);
    fewer when the pages they are on (weights and optimizer state) would not fit the budget's
    unpinned frames at once; ``decay``: the counts are multiplied by it after each repack (a
    row's count is about the steps it was in over the last ``every / (1 - decay)`` steps: 500 by
    default; on the bench's quick preset 0.9 packed better than 0.5, and 1.0 — no forgetting, for
    data whose popularity never drifts — about as 0.9);
    ``growth``: each tier of slots is this much larger than the one before (> 1; smaller: a finer
    sort, more rows moved)."""

    every: int = 50
    max_rows: int | None = None
    decay: float = 0.9
    growth: float = 1.25

    def __post_init__(self) -> None:
        if int(self.every) < 1:
            raise ValueError(f"RowPacking.every must be >= 1 step, not {self.every}")
        if self.max_rows is not None and int(self.max_rows) < 0:
            raise ValueError(f"RowPacking.max_rows must be >= 0 or None, not {self.max_rows}")
        if not 0.0 <= float(self.decay) <= 1.0:
            raise ValueError(f"RowPacking.decay must be in [0, 1], not {self.decay}")
        if not float(self.growth) > 1.0:
            raise ValueError(f"RowPacking.growth must be > 1, not {self.growth}")


def packing(option) -> RowPacking | None:
    """``pack_hot_rows`` as users give it: False/None (off), True (defaults) or a ``RowPacking``."""
    if option is None or option is False:
        return None
    if option is True:
        return RowPacking()
    if isinstance(option, RowPacking):
        return option
    raise TypeError(f"pack_hot_rows must be a bool or a RowPacking, not {type(option).__name__}")


def tiers(rows: int, rpp: int, growth: float) -> np.ndarray:
    """Slot bounds of a table's tiers: 0, one page, then each tier ``growth`` times the last (whole
    pages, at least one more), the last ending at ``rows``."""
    b, size = [0], 1.0
    while b[-1] < rows:
        b.append(min(rows, b[-1] + int(round(size)) * rpp))
        size = max(size * growth, round(size) + 1.0)
    return np.asarray(b, np.int64)


class RowPacker:
    """The indirection of tables of ``rows[t]`` rows, ``rpp[t]`` rows to a page. Flat arrays over
    every table (table t's rows at ``base[t]``): ``slot_of[base[t] + r]`` is row r's slot in table
    t, ``row_of[base[t] + s]`` the row in slot s, ``counts`` the decayed step counts."""

    def __init__(self, rows, rpp, cfg: RowPacking) -> None:
        self.cfg = cfg
        self.rows = np.asarray(rows, np.int64)
        self.base = np.concatenate([[0], np.cumsum(self.rows)]).astype(np.int64)
        n = int(self.base[-1])
        dt = np.int32 if int(self.rows.max()) < 2**31 else np.int64
        self.slot_of = np.arange(n, dtype=np.int64)
        self.slot_of -= np.repeat(self.base[:-1], self.rows)
        self.slot_of = self.slot_of.astype(dt)
        self.row_of = self.slot_of.copy()
        self.counts = np.zeros(n, np.float16)       # +1 stops counting at 2048: enough to rank
        self.tiers = [tiers(int(r), int(p), cfg.growth) for r, p in zip(self.rows, rpp)]
        self.steps_since = 0

    @property
    def nbytes(self) -> int:
        return self.slot_of.nbytes + self.row_of.nbytes + self.counts.nbytes

    def due(self) -> bool:
        return self.steps_since >= self.cfg.every

    def slots(self, tt: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Slots of rows ``rows`` of tables ``tt`` (arrays of one shape), int64."""
        return self.slot_of[self.base[tt] + rows].astype(np.int64)

    def rows_in(self, t: int, slots) -> np.ndarray:
        """Rows held by slots ``slots`` (an array or a slice) of table t, int64."""
        s = self.row_of[self.base[t]:self.base[t + 1]]
        return s[slots].astype(np.int64)

    def rows_of_slots(self, t: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Rows in slots ``slots`` of tables ``t`` (arrays of one shape), int64."""
        return self.row_of[self.base[t] + slots].astype(np.int64)

    def count(self, t: np.ndarray, slots: np.ndarray) -> None:
        """One step looked up these (unique) slots of tables ``t``."""
        self.steps_since += 1
        flat = self.base[t] + slots
        self.counts[self.base[t] + self.row_of[flat]] += np.float16(1)

    def plan(self, cap: int) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """Moves of at most ``cap`` rows over all tables, shared by their lookups' weight: per table
        with more than one tier, ``(t, rows, from slots, to slots)``; every row's new slot is one
        some moved row leaves. Nothing changes until ``commit``."""
        T = len(self.rows)
        mass = np.array([self.counts[self.base[t]:self.base[t + 1]].sum(dtype=np.float64) if self.tiers[t].size > 2 else 0.0
                         for t in range(T)])
        if cap < 2 or mass.sum() <= 0:
            return []
        share = np.floor(cap * mass / mass.sum()).astype(np.int64)
        out = []
        for t in np.flatnonzero(share >= 2).tolist():
            mv = self._plan_table(t, int(share[t]))
            if mv is not None:
                out.append((t, *mv))
        return out

    def _plan_table(self, t: int, cap: int):
        lo, hi = int(self.base[t]), int(self.base[t + 1])
        n = hi - lo
        c = self.counts[lo:hi]
        s = self.slot_of[lo:hi].astype(np.int64)
        ro = self.row_of[lo:hi].astype(np.int64)
        b = self.tiers[t]
        pos = np.flatnonzero(c > 0)
        ranked = np.concatenate([pos[np.lexsort((s[pos], -c[pos].astype(np.float64)))], ro[c[ro] == 0]])
        rank = np.empty(n, np.int64)
        rank[ranked] = np.arange(n)
        tgt = np.searchsorted(b, rank, side="right") - 1
        cur = np.searchsorted(b, s, side="right") - 1
        mis = np.flatnonzero(tgt != cur)
        if not mis.size:
            return None
        low = np.minimum(tgt[mis], cur[mis])
        moves = np.cumsum(np.bincount(low, minlength=b.size - 1))
        k = int(np.searchsorted(moves, cap, side="right")) - 1     # the hottest tiers cap allows
        rows = [np.zeros(0, np.int64)]
        dst = [np.zeros(0, np.int64)]
        if k >= 0:
            sel = mis[low <= k]               # misplaced among tiers 0..k and the rest as one tier
            tg = np.minimum(tgt[sel], k + 1)
            order = sel[np.lexsort((rank[sel], tg))]
            rows.append(order)
            dst.append(np.sort(s[sel]))     # per clipped tier as many slots freed as rows enter it
            cap -= int(sel.size)
        j = k + 1
        if j < b.size - 2 and cap >= 2:       # part of the next tier: hottest in, coldest out, pairwise
            at = low == j
            inn = mis[at & (tgt[mis] == j)]
            out = mis[at & (cur[mis] == j)]
            m = min(inn.size, out.size, cap // 2)
            if m:
                inn = inn[np.argsort(rank[inn], kind="stable")[:m]]
                out = out[np.argsort(-rank[out], kind="stable")[:m]]
                rows += [inn, out]
                dst += [s[out], s[inn]]
        r = np.concatenate(rows)
        if not r.size:
            return None
        return r, s[r], np.concatenate(dst)

    def commit(self, plan) -> None:
        """Make the planned moves the mapping (after their values moved)."""
        for t, rows, _, to in plan:
            b = int(self.base[t])
            self.slot_of[b + rows] = to
            self.row_of[b + to] = rows

    def decay(self) -> None:
        """After a repack (or a skipped one): age the counts, restart the step count."""
        self.counts *= np.float16(self.cfg.decay)
        self.steps_since = 0
