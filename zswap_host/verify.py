"""``VerifyingBackend``: checks that every page a ``SwapBackend`` returns is the page it was given.

On ``swap_out`` it keeps a 64-bit fingerprint per page id; on ``swap_in`` it recomputes the
fingerprints of what came back and raises ``PageCorruptError`` naming the pages that differ. Meant
for real devices and emulators (``zswap-host bench --verify``): a wrong LBA, a lost write or a
stale read shows up at the first swap-in of the page, not as a drift in the training loss.

The fingerprint is a multilinear hash over the page's 64-bit words with fixed random odd multipliers
(wrapping arithmetic): one multiply-add per 8 bytes in numpy, no Python loop over pages. A change
confined to one word always changes it (the multipliers are odd, so invertible mod 2^64); wider
random damage goes unnoticed with a probability of the order of 2^-64.
"""

from __future__ import annotations

import numpy as np

from .backend import SwapStats
from .errors import PageCorruptError


def page_fingerprints(pages: np.ndarray) -> np.ndarray:
    """uint64 fingerprint of each row of ``pages`` (uint8, shape (n, page_size), page_size % 8 == 0)."""
    p = np.ascontiguousarray(pages, dtype=np.uint8)
    words = p.view(np.uint64).reshape(p.shape[0], -1)
    mult = _multipliers(words.shape[1])
    with np.errstate(over="ignore"):
        return (words * mult).sum(axis=1, dtype=np.uint64)


_MULT: dict[int, np.ndarray] = {}


def _multipliers(n: int) -> np.ndarray:
    m = _MULT.get(n)
    if m is None:
        m = np.random.default_rng(0x5A5).integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        _MULT[n] = m
    return m


class VerifyingBackend:
    """Wraps ``backend`` (any ``SwapBackend``) and is one: the ``SwapBackend`` methods it does not
    check forward to ``backend`` (anything else is reached as ``.backend``). ``pages_checked``
    counts verified pages."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self._fp = np.zeros(0, np.uint64)
        self._known = np.zeros(0, bool)
        self.pages_checked = 0
        self.pages_fingerprinted = 0

    def _grow(self, top: int) -> None:
        if top >= self._fp.size:
            n = max(top + 1, 2 * self._fp.size, 1024)
            self._fp = np.concatenate([self._fp, np.zeros(n - self._fp.size, np.uint64)])
            self._known = np.concatenate([self._known, np.zeros(n - self._known.size, bool)])

    def swap_out(self, page_ids, pages, stream: int = 0):
        ids = np.asarray(page_ids, np.int64)
        fp = page_fingerprints(pages) if ids.size else np.zeros(0, np.uint64)
        r = self.backend.swap_out(ids, pages, stream=stream)
        if ids.size:                 # recorded after the backend took them: a failed swap_out keeps the old copy
            self._grow(int(ids.max()))
            self._fp[ids] = fp       # a repeated id in one batch: the last copy wins, as in the backends
            self._known[ids] = True
            self.pages_fingerprinted += int(ids.size)
        return r

    def swap_in(self, page_ids):
        ids = np.asarray(page_ids, np.int64)
        out = self.backend.swap_in(ids)
        if ids.size:
            ok = ids < self._known.size
            ok[ok] = self._known[ids[ok]]
            if not ok.all():
                raise PageCorruptError(f"{int((~ok).sum())} page(s) came back that were never swapped out "
                                       f"(first id {int(ids[~ok][0])})", ids[~ok])
            bad = page_fingerprints(out) != self._fp[ids]
            if bad.any():
                raise PageCorruptError(f"{int(bad.sum())} of {ids.size} page(s) came back with other bytes than "
                                       f"were swapped out (first id {int(ids[bad][0])})", ids[bad])
            self.pages_checked += int(ids.size)
        return out

    def discard(self, page_ids):
        ids = np.asarray(page_ids, np.int64)
        r = self.backend.discard(ids)
        ids = ids[ids < self._known.size]
        self._known[ids] = False
        return r

    def neighbours(self, page_ids, limit: int) -> np.ndarray:
        """The wrapped backend's fault-around hint; none (an empty array) when it has none."""
        hint = getattr(self.backend, "neighbours", None)
        return np.zeros(0, np.int64) if hint is None else hint(page_ids, limit)

    def verify_stats(self) -> dict:
        return {"pages_checked": self.pages_checked, "pages_fingerprinted": self.pages_fingerprinted}

    # -- the rest of SwapBackend, forwarded --------------------------------------------------------
    @property
    def page_size(self) -> int:
        return self.backend.page_size

    @property
    def capacity_pages(self) -> int:
        return self.backend.capacity_pages

    def flush(self) -> None:
        self.backend.flush()

    def idle(self, seconds: float) -> None:
        self.backend.idle(seconds)

    def stats(self) -> SwapStats:
        return self.backend.stats()

    def swap_in_latencies(self) -> np.ndarray:
        return self.backend.swap_in_latencies()

    def close(self) -> None:
        self.backend.close()
