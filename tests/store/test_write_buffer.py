"""``store/buffers.WriteBuffer``: a buffer of pages and a buffer of words (GC's on a payload-free
device) hold the same pages through adds, drops and removals; a buffer of words refuses pages."""
from __future__ import annotations

import numpy as np
import pytest

from zswap_host.store.buffers import WriteBuffer

PS = 64


def _pages(words: np.ndarray) -> np.ndarray:
    p = np.zeros((words.size, PS), np.uint8)
    p[:, :8] = words.astype(np.uint64).view(np.uint8).reshape(-1, 8)
    return p


def test_words_and_pages_buffers_hold_the_same_pages():
    rng = np.random.default_rng(3)
    pages_buf, words_buf = WriteBuffer(4, PS), WriteBuffer(4, PS, words=True)
    # a page buffer that once held whole pages: add_words must clear what they left
    pages_buf.add(np.arange(3), np.full((3, PS), 0xAB, np.uint8))
    pages_buf.drop_front(3)
    next_id = 100
    for _ in range(200):
        op = rng.integers(0, 3)
        if op == 0 or pages_buf.n == 0:
            k = int(rng.integers(1, 9))
            ids = np.arange(next_id, next_id + k)
            next_id += k
            words = rng.integers(1, 1 << 62, k, dtype=np.uint64)
            pages_buf.add_words(ids, words)
            words_buf.add_words(ids, words)
        elif op == 1:
            k = int(rng.integers(0, pages_buf.n + 1))
            pages_buf.drop_front(k)
            words_buf.drop_front(k)
        else:
            gone = rng.choice(pages_buf.ids[:pages_buf.n], size=min(2, pages_buf.n), replace=False)
            pages_buf.remove(gone)
            words_buf.remove(gone)
        assert words_buf.n == pages_buf.n
        assert np.array_equal(words_buf.ids[:words_buf.n], pages_buf.ids[:pages_buf.n])
        assert np.array_equal(words_buf.data[:words_buf.n], pages_buf.data[:pages_buf.n])
        assert not words_buf.data[:, 8:].any()          # past the words: zeros for good
    have = pages_buf.ids[:pages_buf.n]
    assert np.array_equal(words_buf.lookup(have), pages_buf.lookup(have))


def test_a_buffer_of_words_refuses_pages():
    b = WriteBuffer(4, PS, words=True)
    with pytest.raises(ValueError):
        b.add(np.arange(2), _pages(np.arange(2)))
    assert b.n == 0


def test_drop_front_checks_its_count():
    for words in (False, True):
        b = WriteBuffer(4, PS, words=words)
        b.add_words(np.arange(2), np.arange(2, dtype=np.uint64))
        with pytest.raises(ValueError):
            b.drop_front(3)
        assert b.n == 2
