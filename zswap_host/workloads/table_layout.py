"""``TableLayout``: where each row of ``PagedEmbedding``'s tables lives — its page and slot.

Table t's rows are packed ``rows_per_page = page_size // (dim * 4)`` to a page (a row never
straddles pages; the tail of a page is padding); ``dim`` may differ per table. With row-wise Adagrad
each table also has state pages (one fp32 accumulator per row, ``page_size // 4`` per page); with Adam
two sets of state pages laid out like the weights (``exp_avg``, then ``exp_avg_sq``: one fp32 per
element). One page id space covers every table: table t owns the contiguous id range
``[page_base[t], page_base[t + 1])`` — its weight pages, then its state pages — and every page of
table t is swapped out with ``stream=t``.

With packing (``RowPacker``, :mod:`.row_packing`) row r sits in the slot the packer gives it, else in
slot r. A lookup's *key* is ``page * key_rows + slot`` (``key_rows``: the most rows a page holds).
"""

from __future__ import annotations

import numpy as np

from .row_packing import RowPacker, RowPacking

OPTIMIZERS = ("sgd", "adagrad", "adam")
# the per-table arrays each optimizer keeps (weights first); "sum" is row-wise Adagrad's accumulator
ARRAYS = {"sgd": ("weight",), "adagrad": ("weight", "sum"), "adam": ("weight", "exp_avg", "exp_avg_sq")}


class TableLayout:
    """The pages of tables of ``tables[t]`` rows of ``dims[t]`` fp32 columns (checked by the
    caller), with ``optimizer``'s state pages, in ``page_size``-byte pages; ``pack``: a
    ``RowPacking`` (hot rows packed together) or None. ``ValueError`` if a row does not fit a page."""

    def __init__(self, tables: tuple[int, ...], dims: np.ndarray, page_size: int, optimizer: str,
                 pack: RowPacking | None) -> None:
        self.tables = tables
        self.page_size = page_size
        self.optimizer = optimizer
        T = len(tables)
        self.dims = dims
        self.rpp = self.page_size // (4 * dims)                     # rows per page, per table
        if self.rpp.min() < 1:
            raise ValueError(f"a {int(dims.max())}-float row does not fit a {self.page_size}-byte page")
        self.uniform = bool((dims == dims[0]).all())
        # one dim: the scalars the bench reads; several dims: None (use dims / rpp)
        self.dim = int(dims[0]) if self.uniform else None
        self.rows_per_page = int(self.rpp[0]) if self.uniform else None
        self.key_rows = int(self.rpp.max())                         # key = page * key_rows + slot
        self.states_per_page = S = self.page_size // 4
        rows = np.array(self.tables, np.int64)
        self.weight_pages = -(-rows // self.rpp)
        if optimizer == "adagrad":
            self.state_pages = -(-rows // S)
        elif optimizer == "adam":
            self.state_pages = 2 * self.weight_pages
        else:
            self.state_pages = np.zeros(T, np.int64)
        per_table = self.weight_pages + self.state_pages
        self.page_base = np.concatenate([[0], np.cumsum(per_table)]).astype(np.int64)  # T + 1 entries
        self.state_base = self.page_base[:-1] + self.weight_pages
        self.total_pages = int(self.page_base[-1])
        self.total_bytes = self.total_pages * self.page_size
        # hot rows packed together (row_packing): None = row r sits in slot r
        self.packer = RowPacker(self.tables, self.rpp, pack) if pack is not None else None

    def table_of_page(self, pages: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.page_base, pages, side="right") - 1

    def page_of(self, table: int, rows: np.ndarray) -> np.ndarray:
        """Weight page ids of rows of one table."""
        return self.page_base[table] + self.slots_of(table, np.asarray(rows, np.int64)) // self.rpp[table]

    def slots_of(self, table: int, rows: np.ndarray) -> np.ndarray:
        """Slots of rows of one table (the rows themselves without packing)."""
        if self.packer is None:
            return rows
        return self.packer.slots(np.full(rows.shape, table, np.int64), rows)

    def slot_rows(self, table: int, lo: int, hi: int):
        """The rows held by slots ``[lo, hi)`` of a table: ``slice(lo, hi)`` without packing, else an
        int64 array."""
        if self.packer is None:
            return slice(int(lo), int(hi))
        return self.packer.rows_in(table, slice(int(lo), int(hi)))

    def array_layout(self, t: int, name: str) -> tuple[int, int, int, int]:
        """(first page, rows per page, floats per row, rows) of table t's array ``name``; ``KeyError``
        for an array the optimizer does not keep."""
        if name not in ARRAYS[self.optimizer]:
            raise KeyError(f"{name!r} is not an array of optimizer {self.optimizer!r}: {ARRAYS[self.optimizer]}")
        if not 0 <= t < len(self.tables):
            raise IndexError(f"no table {t} (there are {len(self.tables)})")
        R, d, n = int(self.rpp[t]), int(self.dims[t]), self.tables[t]
        if name == "weight":
            return int(self.page_base[t]), R, d, n
        if name == "sum":
            return int(self.state_base[t]), self.states_per_page, 1, n
        first = int(self.state_base[t]) + (int(self.weight_pages[t]) if name == "exp_avg_sq" else 0)
        return first, R, d, n

    def array_shape(self, table: int, name: str) -> tuple[int, ...]:
        """Shape of one of table ``table``'s arrays (``ARRAYS[optimizer]``): (rows, dim), or (rows,)
        for row-wise Adagrad's ``"sum"``."""
        self.array_layout(table, name)
        n = self.tables[table]
        return (n,) if name == "sum" else (n, int(self.dims[table]))

    def key_pages(self, ukeys: np.ndarray) -> tuple:
        """For sorted unique keys (page * key_rows + slot): (upage, uslot, table, state pages, state
        slots, every page needed, sorted)."""
        R = self.key_rows
        upage, uslot = ukeys // R, ukeys % R
        first = np.ones(upage.size, bool)
        first[1:] = upage[1:] != upage[:-1]
        pages = upage[first]
        t = self.table_of_page(upage)
        spage = sslot = None
        if self.optimizer == "adagrad":
            row = (upage - self.page_base[t]) * self.rpp[t] + uslot
            spage = self.state_base[t] + row // self.states_per_page
            sslot = row % self.states_per_page
            pages = np.union1d(pages, spage)
        elif self.optimizer == "adam":            # exp_avg, exp_avg_sq: the weight page's twins
            m = self.state_base[t] + (upage - self.page_base[t])
            spage = np.stack([m, m + self.weight_pages[t]])
            pages = np.union1d(pages, spage)
        return upage, uslot, t, spage, sslot, pages

    def lookup_keys(self, indices) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-table index arrays (None: table not in the step), checked (``ValueError`` for the wrong
        number of tables, ``TypeError`` for non-integer indices, ``IndexError`` for one out of range):
        (the tables present, their lookup counts, every lookup's key = page * key_rows + slot, table
        by table)."""
        T = len(self.tables)
        if len(indices) != T:
            raise ValueError(f"indices must have one entry per table ({T}), has {len(indices)}")
        present = np.array([t for t in range(T) if indices[t] is not None], np.int64)
        idx = [np.asarray(indices[t]).reshape(-1) for t in present]
        for t, i in zip(present, idx):
            if i.size and not np.issubdtype(i.dtype, np.integer):
                raise TypeError(f"table {t}: indices must be integers, not {i.dtype}")
        lens = np.array([i.size for i in idx], np.int64)
        flat = np.concatenate(idx).astype(np.int64, copy=False) if idx else np.zeros(0, np.int64)
        tt = np.repeat(present, lens)
        bad = (flat < 0) | (flat >= np.asarray(self.tables, np.int64)[tt])
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            t = int(tt[k])
            raise IndexError(f"table {t}: index {int(flat[k])} out of range [0, {self.tables[t]})")
        R = self.rpp[tt]
        if self.packer is not None:
            flat = self.packer.slots(tt, flat)
        return present, lens, (self.page_base[tt] + flat // R) * self.key_rows + flat % R

    def batch_pages(self, indices) -> np.ndarray:
        """The sorted pages (weights and optimizer state) a gather of ``indices`` needs: a ``sparse``
        array as ``gather`` takes, or per-table index arrays (None: not in the step) as
        ``gather_tables`` takes. Errors as ``gather_tables``."""
        if not isinstance(indices, (list, tuple)):
            sp = np.asarray(indices)
            T = len(self.tables)
            if sp.shape[0] != T:
                raise ValueError(f"sparse must have {T} tables on axis 0, has shape {sp.shape}")
            indices = list(sp.reshape(T, -1))
        return self.key_pages(np.unique(self.lookup_keys(indices)[2]))[-1]
