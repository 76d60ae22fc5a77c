"""When GC runs: watermarks on free zones, a rate limit on background GC in bytes per second of
device time, and the counters reports use. What to reclaim is the victim policy's business
(``policies.py``); how pages move is the store's."""

from __future__ import annotations

import math
from typing import Callable

ACTIVITIES = ("read", "write", "reset")     # what GC holds the device clock for


class GcScheduler:
    """Background GC starts when free zones fall below ``low`` and runs until ``high``; foreground
    GC (the store's call) only when a swap-out cannot get a zone; idle windows reclaim up to
    ``idle_target``. Defaults follow ZNSwap: ~2% / ~4% of zones, never fewer than 2 / 3 zones.
    ``yield_to_reads`` (``config.gc_yield_to_reads``): no background GC at all, only idle and
    foreground (``yielded`` counts the operations after which it was due)."""

    def __init__(self, nr_zones: int, config, clock: Callable[[], float]) -> None:
        self.low = max(2, math.ceil(config.gc_low_watermark * nr_zones))
        self.high = max(self.low + 1, math.ceil(config.gc_high_watermark * nr_zones))
        self.idle_target = max(self.high, math.ceil(2 * config.gc_high_watermark * nr_zones))
        self.rate = config.gc_rate_limit
        self.yield_to_reads = bool(getattr(config, "gc_yield_to_reads", False))
        self.step_bytes = getattr(config, "gc_step_bytes", None)   # a background step (None: a write unit; 0: a victim)
        self.yielded = 0                       # background GC due after an operation, left to idle / foreground
        self._clock = clock
        self._last = clock()
        self._tokens = 0.0
        self.foreground_runs = 0
        self.runs = {"foreground": 0, "background": 0, "idle": 0, "manual": 0, "drain": 0}
        self.relocated_bytes = 0
        self.reclaimed_bytes = 0
        self.time_s = 0.0
        # device-clock seconds GC held the caller, by why x what (read: the victim's pages;
        # write: their relocation writes; reset: the victim's reset): the replay's stall breakdown
        self.clock_s = {(w, a): 0.0 for w in self.runs for a in ACTIVITIES}

    def background_budget(self) -> float:
        """Bytes background GC may move now (infinite without a rate limit)."""
        if self.rate is None:
            return math.inf
        now = self._clock()
        self._tokens = min(self._tokens + (now - self._last) * self.rate, 64 * 2**20)
        self._last = now
        return self._tokens

    def charge(self, nbytes: int) -> None:
        if self.rate is not None:
            self._tokens -= nbytes

    def relocated(self, nbytes: int, seconds: float) -> None:
        self.relocated_bytes += nbytes
        self.time_s += seconds

    def clocked(self, why: str, activity: str, seconds: float) -> None:
        """GC of bucket ``why`` held the device clock ``seconds`` doing ``activity`` (ACTIVITIES)."""
        self.clock_s[why, activity] += seconds

    def reclaimed(self, why: str, nbytes: int) -> None:
        self.runs[why] += 1
        self.reclaimed_bytes += nbytes

    def counters(self) -> dict:
        return {"gc_runs": sum(self.runs.values()), **{f"gc_runs_{k}": v for k, v in self.runs.items()},
                "gc_foreground_stalls": self.foreground_runs, "gc_relocated_bytes": self.relocated_bytes,
                "gc_reclaimed_bytes": self.reclaimed_bytes, "gc_time_s": self.time_s, "gc_yielded": self.yielded,
                **{f"gc_clock_{w}_{a}_s": v for (w, a), v in self.clock_s.items()}}
