"""A payload-free medium for the emulated devices (``payload=0`` in their URLs): instead of a
device's bytes it keeps one 64-bit word per block — the first 8 bytes written there, the block's
*fingerprint* — so a device of a real drive's size (a 96 GB working set) costs 1/512 of its size in
RAM. Zone and chunk state, the FTL and the timing model are the device's own and do not look at
data, so a payload-free device reports the same modeled time, flash writes and GC as the same
device with its bytes.

Contract: a read returns, per block, the fingerprint word followed by zeros; everything past a
block's first 8 bytes is dropped at write. Whoever writes (the trace replay, ``verify.py``-style
checks) puts what it must recognise in each page's first word — e.g. the page id and its version —
and verification works end to end. Data that needs its bytes (a model's rows, the store's zone
summary footers beyond their first word) does not survive: use a payload device for those.
In memory only (a file-backed device keeps bytes).
"""

from __future__ import annotations

import numpy as np

WORD = 8        # bytes of a block the medium keeps


def first_words(blocks: np.ndarray) -> np.ndarray:
    """The first 64-bit word of each block (uint8 (n, width >= 8)): uint64 (n,)."""
    return np.ascontiguousarray(blocks[:, :WORD]).view(np.uint64).reshape(-1)


class FingerprintBacking:
    """``Backing``'s interface over one uint64 word per ``block`` bytes. Offsets and lengths are
    block-aligned (the devices check it before calling)."""

    path = None

    def __init__(self, size: int, block: int) -> None:
        if block < WORD or size % block:
            raise ValueError(f"a payload-free medium needs blocks of >= {WORD} bytes dividing its size "
                             f"({size} bytes, blocks of {block})")
        self.size = size
        self.block = block
        self.words = np.zeros(size // block, np.uint64)     # zeros cost nothing until written
        self._shift = block.bit_length() - 1 if block & (block - 1) == 0 else None

    # -- bytes <-> words --------------------------------------------------------------------------
    def _words_of(self, view: np.ndarray) -> np.ndarray:
        """The first word of every block of ``view`` (bytes, a whole number of blocks)."""
        return view.reshape(-1, self.block)[:, :WORD].copy().view(np.uint64).reshape(-1)

    def _blocks_of(self, words: np.ndarray) -> np.ndarray:
        """Blocks (flat bytes) holding ``words`` in their first 8 bytes, zeros after."""
        out = np.zeros((words.size, self.block), np.uint8)
        out[:, :WORD] = words.view(np.uint8).reshape(-1, WORD)
        return out.reshape(-1)

    def _index(self, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The block indices the ranges cover, in order (int64)."""
        sh = self._shift
        if sh is not None:                      # blocks of a power of two: shifts, not divisions
            nb, first = np.asarray(lengths, np.int64) >> sh, np.asarray(offsets, np.int64) >> sh
        else:
            nb, first = np.asarray(lengths, np.int64) // self.block, np.asarray(offsets, np.int64) // self.block
        if not (nb != 1).any():                 # a block each: the usual page I/O
            return first
        ends = np.cumsum(nb)
        return np.repeat(first - ends + nb, nb) + np.arange(int(ends[-1]))

    # -- Backing's interface ------------------------------------------------------------------------
    def read(self, offset: int, length: int) -> np.ndarray:
        b = self.block
        return self._blocks_of(self.words[offset // b:(offset + length) // b])

    def write(self, offset: int, view: np.ndarray) -> None:
        b = self.block
        self.words[offset // b:(offset + view.size) // b] = self._words_of(view)

    def gather(self, offsets: np.ndarray, lengths: np.ndarray, bs: int) -> np.ndarray:
        return self._blocks_of(self.words[self._index(offsets, lengths)])

    def gather_words(self, offsets: np.ndarray, lengths: np.ndarray, bs: int) -> np.ndarray:
        return self.words[self._index(offsets, lengths)]

    def scatter(self, offsets: np.ndarray, lengths: np.ndarray, view: np.ndarray, bs: int) -> None:
        self.words[self._index(offsets, lengths)] = self._words_of(view)

    def scatter_words(self, offsets: np.ndarray, lengths: np.ndarray, words: np.ndarray, bs: int) -> None:
        self.words[self._index(offsets, lengths)] = words

    def gather_block_words(self, blocks: np.ndarray) -> np.ndarray:
        """``gather_words`` of one block each, by block index (int64, inside the medium: the caller
        checked them). A new array."""
        return self.words.take(blocks)

    def scatter_block_words(self, blocks: np.ndarray, words: np.ndarray) -> None:
        """``scatter_words`` of one block each, by block index (int64, inside the medium: the
        caller checked them)."""
        self.words.put(blocks, words)       # several times faster than words[blocks] = ... here

    def zero(self, offset: int, length: int) -> None:
        b = self.block
        self.words[offset // b:(offset + length) // b] = 0

    def corrupt(self, offset: int, mask: int = 1) -> None:
        """Flip bits of the fingerprint of the block at ``offset`` (tests: verification must catch it)."""
        self.words[offset // self.block] ^= np.uint64(mask)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.words = np.zeros(0, np.uint64)


def make_backing(size: int, path: str | None, readonly: bool, payload: bool, block: int, new: bool = False):
    """The medium of an emulated device: its bytes (``Backing``; ``new``: the device is being
    created, an existing empty file is taken), or fingerprints only (``payload=False``; in memory
    only, ``DeviceSpecError`` with a path)."""
    from ..errors import DeviceSpecError
    from .backing import Backing

    if payload:
        return Backing(size, path, readonly=readonly, new=new)
    if path is not None:
        raise DeviceSpecError(f"{path}: a payload-free device (payload=0) is kept in memory only; "
                              f"give no path")
    return FingerprintBacking(size, block)
