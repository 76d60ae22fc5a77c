"""``PagingCounters``: what ``PagedEmbedding``'s page cache did, counted as it runs (its ``stats()``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass
class PagingCounters:
    """What the page cache did (pages unless named bytes)."""

    lookups: int = 0            # (row) lookups served
    unique_rows: int = 0
    page_refs: int = 0          # distinct pages needed, summed over batches
    hits: int = 0               # ... of which were resident
    faults: int = 0             # pages swapped in
    swap_in_calls: int = 0
    first_touch: int = 0        # pages created on first touch
    evictions: int = 0          # pages evicted (written or dropped)
    pages_written: int = 0      # dirty victims swapped out
    swap_out_calls: int = 0
    clean_drops: int = 0        # clean victims dropped without a write
    discards: int = 0           # backend copies discarded (discard_dirty)
    bytes_read: int = 0
    bytes_written: int = 0
    prefetch_calls: int = 0     # prefetch() calls that had pages to bring in
    prefetched: int = 0         # pages a prefetch brought in (swapped in or created), counted in faults / first_touch too
    prefetch_cut: int = 0       # upcoming batches a prefetch left out: their pages would not fit beside the pinned ones
    repacks: int = 0            # repacks that moved rows (``pack``)
    rows_moved: int = 0         # rows a repack moved to another slot (their values and state with them)
    repack_pages: int = 0       # pages a repack rewrote (made resident and dirtied)
    repack_faults: int = 0      # pages swapped in for repacks, counted in faults too
    repack_errors: int = 0      # repacks a device error cut short (nothing moved; retried at the next step)

    def as_dict(self) -> dict:
        return asdict(self)

