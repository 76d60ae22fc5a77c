"""What a trace replay writes into pages so that every swap-in can be checked: the first 64-bit word
of a page is its *fingerprint* — the page id in the low 40 bits, the page's version (how many times
it was swapped out so far, from 1) above. The rest of the page is zeros. A backend that returns
another page, or an older copy of the same page, returns another word.

This is all a payload-free device keeps of a page (``devices/fingerprint.py``), so a replay over one
verifies as fully as over a device with bytes.
"""

from __future__ import annotations

import numpy as np

from ..devices.fingerprint import first_words  # noqa: F401  (the words a replay checks)

ID_BITS = 40                    # page ids below 2**40 (4 PiB of 4 KiB pages)
_ID_MASK = np.uint64((1 << ID_BITS) - 1)


class PageVersions:
    """Per page id, how many times it was written; the fingerprint words of its versions."""

    def __init__(self, pages: int = 0) -> None:
        self.version = np.zeros(max(0, int(pages)), np.uint32)

    def _grow(self, ids: np.ndarray) -> None:
        top = int(ids.max()) + 1 if ids.size else 0
        if top > self.version.size:
            if top > 1 << ID_BITS:
                raise ValueError(f"page id {top - 1} does not fit a fingerprint's {ID_BITS} bits")
            self.version = np.concatenate([self.version, np.zeros(max(top, 2 * self.version.size) - self.version.size,
                                                                    np.uint32)])

    def _of(self, ids: np.ndarray) -> np.ndarray:
        """The versions of ``ids`` (non-negative), growing the table when one is beyond it (the
        gather's IndexError says so: no scan for the largest id on every call)."""
        try:
            return self.version[ids]
        except IndexError:
            self._grow(ids)
            return self.version[ids]

    def stamp(self, ids: np.ndarray) -> np.ndarray:
        """A new version of each page (``ids`` distinct): their fingerprint words, uint64."""
        v = self._of(ids) + np.uint32(1)            # one gather and one scatter: ids are random over a big array
        self.version[ids] = v
        return ids.astype(np.uint64) | (v.astype(np.uint64) << np.uint64(ID_BITS))

    def words(self, ids: np.ndarray) -> np.ndarray:
        """The fingerprint words of the pages' current versions."""
        return ids.astype(np.uint64) | (self._of(ids).astype(np.uint64) << np.uint64(ID_BITS))

    def mismatches(self, ids: np.ndarray, got: np.ndarray) -> np.ndarray:
        """Positions where ``got`` (fingerprint words read back) is not the pages' current version."""
        return np.flatnonzero(got != self.words(ids))


def describe(word: int) -> str:
    """A fingerprint word as 'page P version V' (error messages)."""
    w = int(word)
    return f"page {w & ((1 << ID_BITS) - 1)} version {w >> ID_BITS}"


class PageImages:
    """Pages of ``width`` bytes holding given words in their first 8 bytes, zeros after, in one
    buffer reused from call to call (a fresh zeroed buffer per swap-out costs a page fault per
    page). The view returned is valid until the next call: for a backend's ``swap_out``, which
    copies what it is given."""

    def __init__(self, width: int) -> None:
        self._buf = np.zeros((0, width), np.uint8)

    def of(self, words: np.ndarray) -> np.ndarray:
        n = words.size
        if n > self._buf.shape[0]:
            self._buf = np.zeros((max(n, 2 * self._buf.shape[0]), self._buf.shape[1]), np.uint8)
        out = self._buf[:n]
        out[:, :8] = words.astype(np.uint64, copy=False).view(np.uint8).reshape(-1, 8)
        return out
