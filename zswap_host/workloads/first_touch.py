"""``FirstTouch``: the values a page of ``PagedEmbedding``'s tables starts with, made when it is
first touched — so a table larger than memory needs no up-front initialisation.

Deterministic from ``seed`` and the page id: DLRM's uniform(-1/sqrt(rows), 1/sqrt(rows)) init for
weights, from a counter-based hash of (seed, page, word); optimizer state starts at 0.
"""

from __future__ import annotations

import numpy as np

from .criteo import splitmix64
from .table_layout import TableLayout


class FirstTouch:
    """First-touch values of ``layout``'s pages from ``seed``."""

    def __init__(self, layout: TableLayout, seed: int) -> None:
        self.layout = layout
        self.seed = int(seed)
        rows = np.array(layout.tables, np.int64)
        self._bound = (1.0 / np.sqrt(rows.astype(np.float64))).astype(np.float64)
        self._init_shift = np.zeros(len(layout.tables), np.int64)   # first touch's page id - the page id (init_as)
        self._words = layout.rpp * layout.dims                       # fp32 words of rows per weight page
        with np.errstate(over="ignore"):
            self._word_mix = np.arange(layout.page_size // 4, dtype=np.uint32) * np.uint32(0x9E3779B1)

    def create(self, f32: np.ndarray, pages: np.ndarray, frames: np.ndarray) -> None:
        """First touch: the pages' initial values (``_weights``) into their frames (rows of ``f32``, the
        frames seen as fp32 words); state pages zero."""
        t = self.layout.table_of_page(pages)
        is_state = pages >= self.layout.state_base[t]
        wf = frames[~is_state]
        if wf.size:
            vals, W = self._weights(pages[~is_state], t[~is_state])
            f32[wf, :W] = vals
            f32[wf, W:] = 0.0
        sf = frames[is_state]
        if sf.size:
            f32[sf] = 0.0

    def values(self, pages: np.ndarray) -> np.ndarray:
        """What first touch would put in these pages, float32 (n, page_size // 4)."""
        out = np.zeros((pages.size, self.layout.page_size // 4), np.float32)
        t = self.layout.table_of_page(pages)
        w = pages < self.layout.state_base[t]
        if w.any():
            vals, W = self._weights(pages[w], t[w])
            out[w, :W] = vals
        return out

    def init_as(self, first_pages, rows, touched: bool) -> None:
        """``PagedEmbedding.init_as``: table t's weight page p gets the values of page
        ``first_pages[t] + p`` of a table of ``rows[t]`` rows. ``touched``: whether any page was."""
        first = np.asarray(first_pages, np.int64)
        n = np.asarray(rows, np.int64)
        T = len(self.layout.tables)
        if first.shape != (T,) or n.shape != (T,) or first.min() < 0 or n.min() < 1:
            raise ValueError(f"init_as needs {T} page ids >= 0 and {T} row counts >= 1")
        if touched:
            raise ValueError("init_as after pages were touched: their values would not match")
        self._init_shift = first - self.layout.page_base[:-1]
        self._bound = 1.0 / np.sqrt(n.astype(np.float64))

    def _weights(self, wp: np.ndarray, wt: np.ndarray) -> tuple[np.ndarray, int]:
        """Initial values of weight pages ``wp`` of tables ``wt``: (float32 (n, W), W) for the first W
        words of each page (the rest is padding, zero). A counter-based hash of (seed, page, word),
        uniform in (-1/sqrt(rows), 1/sqrt(rows)) as DLRM initialises."""
        W = int(self._words[wt].max())
        # per-page 32-bit seed (splitmix64 of page id and seed), then murmur3's fmix32 of
        # seed ^ word * golden: cheap uint32 passes over the (pages, words) block
        wp = wp + self._init_shift[wt]
        ps = splitmix64(wp.astype(np.uint64) ^ np.uint64((self.seed * 0x9E3779B1 + 0x51ED) & (2**64 - 1)))
        h = (ps >> np.uint64(32)).astype(np.uint32)[:, None] ^ self._word_mix[None, :W]
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
        u = (h >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / (1 << 24))     # [0, 1)
        b = self._bound[wt].astype(np.float32)[:, None]
        vals = (2.0 * u - 1.0) * b
        if not self.layout.uniform:              # tables with narrower rows have more padding
            vals[np.arange(W)[None, :] >= self._words[wt][:, None]] = 0.0
        return vals, W
