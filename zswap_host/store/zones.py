"""Zone allocator: which zone each stream writes into, the free list, and per-zone bookkeeping
that GC victim policies decide from."""

from __future__ import annotations

from collections import deque

import numpy as np

FREE, OPEN, FULL, RETIRED = 0, 1, 2, 3


class ZoneAllocator:
    """Hands free zones to write groups (a stream, or the GC stream) and takes reclaimed ones back.

    A group holds at most one open zone, so the device's open/active limits hold as long as the
    number of groups does (checked by the store). ``reserve`` free zones are kept for GC: user
    groups may not take them, so GC can always make progress.
    """

    def __init__(self, nr_zones: int, data_slots: int, reserve: int = 1) -> None:
        self.nr_zones = nr_zones
        self.data_slots = data_slots
        self.reserve = reserve
        self.state = np.zeros(nr_zones, np.int8)
        self.written = np.zeros(nr_zones, np.int64)      # data slots written
        self.last_write = np.zeros(nr_zones, np.float64)  # store write clock
        self.opened_at = np.zeros(nr_zones, np.float64)
        self.resets = np.zeros(nr_zones, np.int64)
        self.seq = np.zeros(nr_zones, np.int64)
        self._next_seq = 1
        self.free: deque[int] = deque(range(nr_zones))
        self.owner: dict[int, int] = {}                   # group -> open zone

    def free_count(self) -> int:
        return len(self.free)

    def current(self, group: int) -> int | None:
        return self.owner.get(group)

    def can_take(self, for_gc: bool) -> bool:
        return len(self.free) > (0 if for_gc else self.reserve)

    def take(self, group: int, clock: float) -> int:
        z = self.free.popleft()
        self.state[z] = OPEN
        self.written[z] = 0
        self.opened_at[z] = clock
        self.last_write[z] = clock
        self.seq[z] = self._next_seq
        self._next_seq += 1
        self.owner[group] = z
        return z

    def close_group(self, group: int) -> int | None:
        """The group's zone is done (full, or abandoned after a failure): it becomes a GC candidate."""
        z = self.owner.pop(group, None)
        if z is not None and self.state[z] == OPEN:
            self.state[z] = FULL
        return z

    def freed(self, z: int) -> None:
        self.state[z] = FREE
        self.written[z] = 0
        self.resets[z] += 1
        self.free.append(z)

    def retire(self, z: int) -> None:
        for g, oz in list(self.owner.items()):
            if oz == z:
                del self.owner[g]
        if self.state[z] == FREE:
            self.free.remove(z)
        self.state[z] = RETIRED

    def usable(self) -> int:
        return int((self.state != RETIRED).sum())

    def counts(self) -> dict[str, int]:
        return {"zones_free": int((self.state == FREE).sum()), "zones_open": int((self.state == OPEN).sum()),
                "zones_full": int((self.state == FULL).sum()), "zones_retired": int((self.state == RETIRED).sum())}
