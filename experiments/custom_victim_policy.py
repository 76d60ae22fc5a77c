"""How to plug your own GC victim policy into the store, without touching the package.

A policy is a callable that gets a ``ZoneTable`` (numpy columns over the full zones: valid bytes,
capacity, last write, fill order, resets, and the store's write clock) and returns a zone index.
This one prefers old, empty zones but avoids zones that have been reset much more than the rest
(a simple wear-aware cost-benefit). The script replays a synthetic DLRM-like trace with it and with
the built-in policies and prints write amplification and modeled device time side by side.

    python experiments/custom_victim_policy.py
"""

from __future__ import annotations

import numpy as np

from zswap_host import StoreConfig, SwapStore, open_device
from zswap_host.gc import VictimPolicy, ZoneTable, register_victim_policy
from zswap_host.workloads import replay, synthetic_dlrm_trace


class WearAwareCostBenefit(VictimPolicy):
    """LFS cost-benefit, discounted for zones reset more often than average."""

    def __init__(self, wear_weight: float = 0.5) -> None:
        self.wear_weight = wear_weight

    def select(self, table: ZoneTable) -> int | None:
        if not len(table):
            return None
        u = table.utilization
        benefit = (table.age + 1.0) * (1.0 - u) / (1.0 + u)
        wear = table.resets / max(table.resets.mean(), 1.0)
        return int(table.zone[np.argmax(benefit / (1.0 + self.wear_weight * wear))])


register_victim_policy("wear-aware", WearAwareCostBenefit())


def main() -> None:
    trace = synthetic_dlrm_trace(90_000, iterations=250, idle_s=0.005, seed=3)
    print(f"trace: {trace.counts()}")
    for victim in ("greedy", "cost-benefit", "fifo", "wear-aware"):
        dev = open_device("emu://?zones=32&zone_size=16MiB&preset=thesis-ssd")
        store = SwapStore(dev, StoreConfig(placement="temporal", victim=victim))
        replay(store, trace, verify=True)
        s = store.stats().as_dict()
        print(f"{victim:13} WAF {s['write_amplification']:.3f}  device time {s['device_time_s']:.2f} s (modeled)  "
              f"GC relocated {s['gc_relocated_bytes'] / 2**20:.0f} MiB in {s['gc_runs']} zone reclaims")


if __name__ == "__main__":
    main()
