"""Categorical values -> embedding rows, per table: hashed (``value % rows``) or dictionary-mapped.

- ``hash``: row = value mod rows, what facebookresearch/dlrm's ``--max-ind-range`` does to the raw
  value (Criteo's values are already hashes, so the modulo spreads them). Distinct values may share
  a row. Stateless: any chunk maps the same way wherever it is read.
- ``dict``: each table numbers the values it meets 0, 1, 2, … in first-seen order (file order; within
  a chunk, line order), as dlrm's own preprocessing numbers them per feature. When a table's
  dictionary is full (as many values as the table has rows), a value not in it is hashed into the
  table (``value % rows``), sharing a row with a dictionary entry; ``overflow`` counts those lookups.
  The dictionary lives as long as the stream (it survives a wrap-around, so a value keeps its row).

The dictionary is a :class:`IdMap`: sorted runs of (key, id) searched with ``np.searchsorted`` and
merged like a binary counter, so a chunk is mapped in a few vectorised passes and growing to n keys
costs O(n log n) in all; it holds 16 bytes per key (at most the table's rows).
"""

from __future__ import annotations

import numpy as np

MAPPINGS = ("hash", "dict")


class IdMap:
    """uint64 keys -> ids 0, 1, 2, … in first-seen order, up to ``capacity`` keys."""

    def __init__(self, capacity: int) -> None:
        self.capacity = int(capacity)
        self.size = 0
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []     # (sorted keys, their ids), larger first

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The id of each key, -1 where it has none."""
        out = np.full(keys.shape, -1, np.int64)
        for k, v in self._runs:
            pos = np.minimum(np.searchsorted(k, keys), k.size - 1)
            hit = k[pos] == keys
            out[hit] = v[pos[hit]]
        return out

    def add(self, keys: np.ndarray) -> np.ndarray:
        """Ids of ``keys`` (uint64, in order), numbering the unseen ones in order of first occurrence
        while there is room; -1 for the unseen keys that found the map full."""
        keys = np.asarray(keys, np.uint64)
        # distinct keys, sorted: fewer lookups, and sorted queries search the runs cache-friendly
        uniq, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        ids = self.lookup(uniq)
        room = self.capacity - self.size
        new = np.flatnonzero(ids < 0)
        if new.size and room > 0:
            take = new[np.argsort(first[new], kind="stable")][:room]     # the first-seen new keys, in order
            ids[take] = self.size + np.arange(take.size)
            self.size += int(take.size)
            kept = np.sort(take)                                        # `uniq` is sorted: so is uniq[kept]
            self._push(uniq[kept], ids[kept])
        return ids[inv.reshape(-1)]

    def _push(self, keys: np.ndarray, ids: np.ndarray) -> None:
        self._runs.append((keys, ids))
        while len(self._runs) > 1 and self._runs[-2][0].size <= 2 * self._runs[-1][0].size:
            (k1, v1), (k2, v2) = self._runs.pop(), self._runs.pop()
            k = np.concatenate((k2, k1))
            order = np.argsort(k, kind="stable")
            self._runs.append((k[order], np.concatenate((v2, v1))[order]))


class CategoricalMapper:
    """Maps a chunk's categorical values (uint64 (m, tables)) to rows (int64 (tables, m)) of tables of
    ``rows`` rows each, by ``mode`` (``hash`` or ``dict``)."""

    def __init__(self, rows, mode: str = "hash") -> None:
        if mode not in MAPPINGS:
            raise ValueError(f"categorical mapping must be one of {', '.join(MAPPINGS)}, not {mode!r}")
        self.rows = np.array(rows, np.uint64)
        self.mode = mode
        self.maps = [IdMap(int(n)) for n in rows] if mode == "dict" else []
        self.overflow = 0           # dict: lookups of values hashed because their table's dictionary was full

    def __call__(self, cat: np.ndarray) -> np.ndarray:
        cat = np.asarray(cat, np.uint64)
        if cat.shape[1] != self.rows.size:
            raise ValueError(f"{cat.shape[1]} categorical features for {self.rows.size} tables")
        hashed = (cat % self.rows).T.astype(np.int64)
        if self.mode == "hash":
            return np.ascontiguousarray(hashed)
        out = np.empty_like(hashed)
        for t, m in enumerate(self.maps):
            ids = m.add(cat[:, t])
            full = ids < 0
            self.overflow += int(full.sum())
            out[t] = np.where(full, hashed[t], ids)
        return out

    def stats(self) -> dict:
        """Dictionary sizes per table and the overflow count (dict mode)."""
        if self.mode != "dict":
            return {}
        return {"dict_sizes": [m.size for m in self.maps],
                "dict_full_tables": sum(m.size >= m.capacity for m in self.maps),
                "dict_overflow_lookups": self.overflow}
