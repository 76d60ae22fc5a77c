"""A swap-out batch past its checks: the batch's handles (``Bookkeeper.prepare``, the id map for
what the C declines), the capacity check (the last refusal: SwapFullError, nothing changed), then
the commit point, the bookkeeping of an accepted batch and its write (``Committer.write_batch``).
``SwapStore.swap_out`` checks the arguments and holds the lock; the express path
(store/express.py) takes the usual call before it reaches here."""

from __future__ import annotations

import numpy as np

from ..errors import SwapFullError
from .book import Bookkeeper
from .commit import Committer
from .idmap import as_page_ids
from .state import StoreState


def accept(st: StoreState, book: Bookkeeper, writer: Committer, ids: np.ndarray, pages: np.ndarray,
           stream: int, fast: bool) -> None:
    """Store a checked, non-empty batch (``ids`` C-contiguous int64, ``pages`` its rows, ``fast``:
    ids not yet checked by ``as_page_ids``, which then names a bad id first). Raises what
    ``SwapStore.swap_out`` raises from here: ValueError for a bad id and SwapFullError before the
    commit point (nothing changed); past it, the write's errors (``Committer.write_batch``)."""
    rc, h, fresh_n, new, buffered_n = book.prepare(ids)
    if not rc:
        st.fast_path["prepared"] += 1
    else:                                       # repeated ids, or ids in the id map's hashed range
        if fast:
            as_page_ids(ids)                    # raises for a negative id
        srt = np.sort(ids)
        if np.count_nonzero(srt[1:] == srt[:-1]):    # the last copy of an id wins
            rev = ids[::-1]
            _, first = np.unique(rev, return_index=True)
            keep = np.sort(ids.size - 1 - first)
            ids, pages = ids[keep], pages[keep]
        h = st.idmap.lookup(ids)
        fresh = h < 0
        hk = h[~fresh]
        new = int(np.count_nonzero(fresh)) + \
            int(np.count_nonzero((~st.slots.mapped(hk)) & (st.buffer_of[hk] == 0)))
    if st.live > st.capacity:     # zones were retired: shed pages before writing more
        raise SwapFullError(
            f"swap store over capacity: {st.live} pages stored, {st.capacity} fit since "
            f"zones were retired; discard pages first (nothing of this batch was stored)", ids.copy())
    if st.live + new > st.capacity:
        raise SwapFullError(
            f"swap store full: {st.live} pages stored, {new} more do not fit in "
            f"{st.capacity}; nothing of this batch was stored", ids.copy())
    # -- commit point: from here on the batch is accepted
    if rc == 0:
        if fresh_n:
            if not book.insert(ids, h, fresh_n):
                fresh = h < 0
                h[fresh] = st.idmap.insert(ids[fresh])
            if st.idmap.handles > st.slots.handles:
                st.grow(st.idmap.handles)
        if buffered_n:
            st.unbuffer(h)
    else:
        if fresh.any():
            h[fresh] = st.idmap.insert(ids[fresh])
            st.grow(st.idmap.handles)
        b = st.buffer_of[h]
        if np.count_nonzero(b):
            st.unbuffer(h)
    if st.prefetch.size:
        st.prefetch.drop(st.prefetch_pos, h)
    if st.lost_count:
        st.lost_count -= int(st.lost[h].sum())
        st.lost[h] = False
    st.live += new
    counts = None
    if st.placement.counts_swap_outs:        # only then does placement look at it
        counts = st.swap_outs[h]
        counts += counts < 65535
        st.swap_outs[h] = counts
    st.host_write_bytes += ids.size * st.page_size
    streams = st.placement.assign(h, stream, counts, st.n_user, st.config.hot_threshold)
    writer.write_batch(h, pages, streams)
