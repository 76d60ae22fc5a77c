"""``StoreConfig``: every knob of the host-managed swap store, with the defaults it runs with."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .placement import get_placement


@dataclass
class StoreConfig:
    """Configuration of a ``SwapStore``.

    Placement (``placement``, a name registered in ``store.placement``): ``single`` one open zone
    for everything, GC included; ``stream`` the caller's stream ids (e.g. one per embedding table); ``temporal`` pages swapped out together are
    stored together, in swap-out order, and prefetch reads back what was written with a page;
    ``hotness`` pages that keep coming back go to a hot zone, the rest to a warm one, GC survivors to
    a cold one. Every placement but ``single`` gives GC relocations their own stream.

    GC timing (``gc_yield_to_reads``): by default background GC runs after a swap-out once free
    zones fall below ``gc_low_watermark`` — on a synchronous caller, in front of the reads of the
    step that swap-out made room for. With ``gc_yield_to_reads`` it never does: GC runs only in the
    idle windows the caller hands over (``idle``) and, as before, in the foreground when a swap-out
    finds no zone (``gc_runs_foreground``; the hard floor is the user streams' reserve zone).
    Background GC that was due and yielded is counted (``gc_yielded``). Off by default: at
    accelerator speed there are no idle windows to move GC into (docs/results/regimes.md).
    ``gc_step_bytes``: how much a background GC step relocates — its victim pages are read as one
    queue — (None: one write unit; 0: the whole victim, as foreground GC does).

    Victim policy (``victim``): ``greedy``, ``cost-benefit``, ``fifo`` or a name registered with
    ``zswap_host.gc.register_victim_policy``.
    """

    page_size: int = 4096
    placement: str = "temporal"
    victim: str = "greedy"
    write_size: int = 512 << 10        # target device write; clipped to the device's append limit, at least 128 KiB
    max_streams: int = 4               # user streams with an open zone at once (the GC stream is extra)
    gc_low_watermark: float = 0.02     # background GC starts when free zones < this fraction (>= 2 zones)
    gc_high_watermark: float = 0.04    # ... and runs until free zones >= this fraction (>= low + 1)
    gc_rate_limit: float | None = None  # background GC bytes per second of device time (None: no limit)
    gc_yield_to_reads: bool = False    # GC never runs after a swap-out, in front of the step's reads: only in idle
    #                                    windows, or in the foreground when a swap-out finds no zone (counted)
    gc_step_bytes: int | None = None   # background GC relocates this much per step, its reads one queue (None: a write unit; 0: the whole victim)
    hot_threshold: int = 2             # hotness: a page swapped out this many times is hot
    prefetch: bool = False             # read whole write units around faults (helps when faults follow swap-out order)
    prefetch_bytes: int = 128 << 10    # read back up to this much around a faulting page (its write unit)
    prefetch_buffer_pages: int = 4096  # bound of the prefetch buffer
    read_qd: int = 32                  # queue depth of a batched swap_in
    append_qd: int = 8                 # write units of one zone in flight at once (zone appends)
    max_read_bytes: int = 512 << 10    # a coalesced read is split beyond this
    write_retries: int = 3             # a failed write is retried in this many other zones
    idle_gc_bandwidth: float = 1e9     # idle(): bytes of GC per second of window on a device without a clock
    id_space: int = 0                  # ids below this resolve through a direct array from the start (8 B per id); 0: it grows with the ids held

    def __post_init__(self) -> None:
        if self.page_size <= 0 or self.page_size & (self.page_size - 1):
            raise ValueError(f"page_size {self.page_size} is not a power of two")
        get_placement(self.placement)      # ValueError naming the registered placements
        if not 0 < self.gc_low_watermark < self.gc_high_watermark < 1:
            raise ValueError("need 0 < gc_low_watermark < gc_high_watermark < 1")
        if self.write_size < 128 << 10 or self.write_size % self.page_size:
            raise ValueError("write_size must be a multiple of page_size and at least 128 KiB")
        if self.max_streams < 1:
            raise ValueError("max_streams must be at least 1")
        if self.append_qd < 1:
            raise ValueError(f"append_qd must be >= 1, not {self.append_qd}")
        if self.read_qd < 1:
            raise ValueError(f"read_qd must be at least 1, not {self.read_qd}")
        if self.max_read_bytes < self.page_size:
            raise ValueError(f"max_read_bytes must be at least one page ({self.page_size}), not {self.max_read_bytes}")
        if self.prefetch_bytes < self.page_size:
            raise ValueError(f"prefetch_bytes must be at least one page ({self.page_size}), not {self.prefetch_bytes}")
        if self.id_space < 0:
            raise ValueError(f"id_space must not be negative, not {self.id_space}")
        if self.prefetch_buffer_pages < 0 or self.write_retries < 0:
            raise ValueError("prefetch_buffer_pages and write_retries must not be negative")
        if self.hot_threshold < 1:
            raise ValueError(f"hot_threshold must be at least 1, not {self.hot_threshold}")
        if self.gc_rate_limit is not None and not 0 < self.gc_rate_limit < float("inf"):
            raise ValueError(f"gc_rate_limit must be a positive number of bytes per second or None, not {self.gc_rate_limit}")
        if self.gc_step_bytes is not None and (type(self.gc_step_bytes) is not int or self.gc_step_bytes < 0):
            raise ValueError(f"gc_step_bytes must be None or a number of bytes >= 0, not {self.gc_step_bytes!r}")
        if not 0 < self.idle_gc_bandwidth < float("inf"):
            raise ValueError(f"idle_gc_bandwidth must be positive and finite, not {self.idle_gc_bandwidth}")

    def as_dict(self) -> dict:
        return asdict(self)
