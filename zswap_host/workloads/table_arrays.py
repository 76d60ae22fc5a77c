"""``TableArrays``: rows of a table's weights or optimizer state moved between ``PagedEmbedding``'s
store and the caller page by page, without going through the page cache (checkpoints, inspection).

A read takes resident pages from their frames, swapped-out pages with one ``swap_in``, pages never
touched as first touch creates them; nothing is made resident or evicted. A write overwrites a
resident page in its frame (and dirties it), puts the others in free frames while there are any,
then sends the rest to the backend with one ``swap_out``; pages only partly covered are read first.
"""

from __future__ import annotations

import numpy as np

from .gather_apply import GatherApply
from .page_cache import PageCache
from .table_layout import TableLayout


class TableArrays:
    """The arrays of ``layout``'s tables in ``cache``; ``step``: the step in flight, settled before
    values are read or written and ended by a write. Each public method does what
    ``PagedEmbedding``'s method of the same name documents."""

    def __init__(self, layout: TableLayout, cache: PageCache, step: GatherApply) -> None:
        self.layout = layout
        self.cache = cache
        self.step = step

    def peek_rows(self, table: int, rows) -> np.ndarray:
        r = np.asarray(rows, np.int64).reshape(-1)
        if r.size and (r.min() < 0 or r.max() >= self.layout.tables[table]):
            raise IndexError(f"table {table}: index out of range [0, {self.layout.tables[table]})")
        self.step.settle()
        R, d = int(self.layout.rpp[table]), int(self.layout.dims[table])
        s = self.layout.slots_of(table, r)
        pages, inv = np.unique(self.layout.page_base[table] + s // R, return_inverse=True)
        data = self.cache.read_pages(pages).view(np.float32)[:, :R * d].reshape(-1, R, d)
        return data[inv.reshape(-1), s % R]

    def read_array(self, table: int, name: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        lo, hi = self._range(table, name, lo, hi)
        return self._read_at(table, name, self.layout.slots_of(table, np.arange(lo, hi, dtype=np.int64)))

    def read_slots(self, table: int, name: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        lo, hi = self._range(table, name, lo, hi)
        return self._read_at(table, name, np.arange(lo, hi, dtype=np.int64))

    def _range(self, table: int, name: str, lo, hi) -> tuple[int, int]:
        n = self.layout.array_layout(table, name)[3]
        hi = n if hi is None else int(hi)
        lo = int(lo)
        if not 0 <= lo <= hi <= n:
            raise IndexError(f"table {table}: rows [{lo}, {hi}) not within [0, {n})")
        return lo, hi

    def _read_at(self, table: int, name: str, slots: np.ndarray) -> np.ndarray:
        first, R, w, _ = self.layout.array_layout(table, name)
        if not slots.size:
            return np.zeros((0,) if name == "sum" else (0, w), np.float32)
        self.step.settle()
        pages, inv = np.unique(first + slots // R, return_inverse=True)
        data = self.cache.read_pages(pages)
        out = data.view(np.float32)[:, :R * w].reshape(pages.size, R, w)[inv.reshape(-1), slots % R]
        return out[:, 0] if name == "sum" else out

    def write_array(self, table: int, name: str, lo: int, values) -> None:
        v, lo, hi = self._values(table, name, lo, values)
        self._write_at(table, name, self.layout.slots_of(table, np.arange(lo, hi, dtype=np.int64)), v)

    def write_slots(self, table: int, name: str, lo: int, values) -> None:
        v, lo, hi = self._values(table, name, lo, values)
        self._write_at(table, name, np.arange(lo, hi, dtype=np.int64), v)

    def _values(self, table: int, name: str, lo, values) -> tuple[np.ndarray, int, int]:
        _, _, w, n = self.layout.array_layout(table, name)
        v = np.asarray(values, np.float32)
        want = (v.shape[0],) if name == "sum" else (v.shape[0], w)
        if v.ndim == 0 or v.shape != want:
            raise ValueError(f"table {table} {name}: values of shape {v.shape}, want (rows{', ' + str(w) if name != 'sum' else ''})")
        lo = int(lo)
        hi = lo + v.shape[0]
        if not 0 <= lo <= hi <= n:
            raise IndexError(f"table {table}: rows [{lo}, {hi}) not within [0, {n})")
        return v, lo, hi

    def _write_at(self, table: int, name: str, slots: np.ndarray, v: np.ndarray) -> None:
        first, R, w, n = self.layout.array_layout(table, name)
        self.step.settle()
        self.step.end()
        if not slots.size:
            return
        pages, inv = np.unique(first + slots // R, return_inverse=True)
        inv = inv.reshape(-1)
        buf = np.zeros((pages.size, self.layout.page_size), np.uint8)
        # pages holding slots outside these: read first, to keep them
        full = np.minimum(R, n - (pages - first) * R)
        part = np.flatnonzero(np.bincount(inv, minlength=pages.size) < full)
        if part.size:
            buf[part] = self.cache.read_pages(pages[part])
        buf.view(np.float32)[:, :R * w].reshape(pages.size, R, w)[inv, slots % R] = v.reshape(-1, w)
        self.cache.write_pages(table, pages, buf)
