"""Host cost of the Open-Channel write and read paths (zoned view over the emulated device, timing
on, payload-free as the replays run it): a fixed script of appends, zone resets and page read
batches, timed or run under callgrind for its instruction count (stable under load).

    valgrind --tool=callgrind --callgrind-out-file=OUT python experiments/bench_ocssd_paths.py [APPENDS]

(APPENDS: 3000; a run of 0 counts the start-up alone, to subtract.)

Prints the device's modeled clock and a digest of what was read, so two packages compared side
by side can be checked to have done the same work.
"""
from __future__ import annotations

import hashlib
import sys
import time

import numpy as np

from zswap_host.devices import OcssdZonedView, open_device


def main(appends: int = 3000, pages: int = 32) -> None:
    view = OcssdZonedView(open_device("ocssd://?preset=thesis-ssd&payload=0"))
    g = view.geometry
    cap = g.zone_capacity // 4096
    rng = np.random.default_rng(0)
    digest = hashlib.sha256()
    t0 = time.process_time()
    z = top = 0                         # the zone written, its pages
    for i in range(appends):
        if top + pages > cap:
            z, top = (z + 1) % g.nr_zones, 0
            view.reset_zone(z)
        view.append(z, rng.integers(0, 2**63, pages * 512, dtype=np.int64).view(np.uint8))
        top += pages
        if i % 4 == 3:                  # a batch of page reads in the zone being written
            offs = g.zone_start(z) + rng.integers(0, top, 64) * 4096
            data, _ = view.read_batch(offs, np.full(64, 4096, np.int64), 32, words=True)
            digest.update(data.tobytes())
    print(f"{appends} appends of {pages} pages: modeled clock {view.now():.6f} s, reads {digest.hexdigest()[:16]}, "
          f"CPU {time.process_time() - t0:.2f} s")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:2]))
