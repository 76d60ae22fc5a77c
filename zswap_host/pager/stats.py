"""What a pager did (``Pager.stats()``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class PagerStats:
    """Counters since the pager opened (pages of ``page_size`` bytes); ``resident``, ``in_flight``
    and ``waiting`` are the values now. ``max_resident`` counts pages mapped plus pages being
    fetched, so the regions' RSS never exceeded ``max_resident * page_size``."""

    page_size: int
    budget_pages: int
    regions: int
    faults_missing: int       # MISSING fault events (first touch of an unmapped page)
    faults_wp: int            # write-protect fault events (first write to a mapped page)
    zero_fills: int           # never-written pages mapped as zeros, no I/O
    pages_in: int             # pages read from the backend
    fetch_batches: int        # backend.swap_in calls made for faults
    fetch_failures: int       # pages whose swap_in failed (their faulting threads got SIGBUS)
    sigbus: int               # SIGBUS signals sent
    pages_out: int            # dirty pages written by eviction
    evict_batches: int        # evictions (each at most one swap_out per stream)
    evictions: int            # pages released by eviction (pages_out + clean_drops)
    clean_drops: int          # pages released without I/O
    evict_aborts: int         # evictions undone because swap_out failed
    deferred: int             # faults that waited for room
    evict_waits: int          # writes that faulted on a page being evicted (waited, then re-read it)
    stale_events: int         # fault events already resolved (woken again; harmless)
    stale_copies: int         # discard_on_write: first writes that made a backend copy stale (queued for discard)
    discards: int             # discard_on_write: stale copies discarded (backend.discard)
    discard_batches: int      # discard_on_write: backend.discard calls
    discards_skipped: int     # discard_on_write: stale copies written over by an eviction before their discard ran
    spec_pages_in: int        # fault_around: pages read ahead with the faulted ones (in pages_in too)
    spec_hits: int            # fault_around: of those, touched (a fault named them) before eviction
    spec_unused: int          # fault_around: of those, evicted untouched (read-only use makes no fault)
    rearms: int               # rearm_wp: dirty pages the CLOCK hand write-protected again (second chance)
    rearm_faults: int         # rearm_wp: writes to re-armed pages (a WP fault that only marks the page referenced)
    uffd_errors: int          # unexpected userfaultfd ioctl failures (a bug if not 0)
    resident: int
    max_resident: int
    in_flight: int
    waiting: int
    backend_errors: int       # exceptions from the backend (swap_in or swap_out)

    @property
    def readahead_hit_ratio(self) -> float:
        """spec_hits / spec_pages_in (0.0 before any read-ahead). A lower bound: a page read ahead
        and then only read, never written, makes no fault and is not counted as a hit."""
        return self.spec_hits / self.spec_pages_in if self.spec_pages_in else 0.0

    def as_dict(self) -> dict:
        d = asdict(self)
        d["readahead_hit_ratio"] = self.readahead_hit_ratio
        return d
