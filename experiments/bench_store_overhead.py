"""Store overhead benchmark: SwapStore swap-out / swap-in pages per second on an in-memory emulated
ZNS device with the timing model off, next to the raw device rate for the same bytes in the same run.

Targets (issue 3): swap-out >= 70% of raw zone-append throughput; swap-in of random pages >= 50% of
raw random 4 KiB reads.

    python experiments/bench_store_overhead.py [--pages 100000] [--batch 256] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from zswap_host import StoreConfig, SwapStore, open_device

PS = 4096


def device(zones: int):
    return open_device(f"emu://?zones={zones}&zone_size=64MiB&max_open=14&max_active=14&max_append=512KiB&preset=none")


def best_of(fn, repeat: int, setup=None) -> float:
    times = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=256, help="pages per swap_out / swap_in call")
    ap.add_argument("--reads", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="write results here")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    zones = -(-a.pages * PS // (62 << 20)) + 6
    data = rng.integers(0, 256, (a.pages, PS), dtype=np.uint8)
    ids = rng.permutation(a.pages).astype(np.int64)

    # one device, its memory touched once, so neither side pays first-touch page faults
    dev = device(zones)
    unit = (512 << 10) // PS

    def reset_all():
        for z in range(zones):
            dev.reset_zone(z)

    def raw_write():
        z, used = 0, 0
        for i in range(0, a.pages, unit):
            chunk = data[i:i + unit]
            if used + chunk.shape[0] * PS > dev.geometry.zone_capacity:
                z, used = z + 1, 0
            dev.append(z, chunk)
            used += chunk.shape[0] * PS

    raw_write()
    offs = rng.integers(0, a.pages, a.reads) * PS
    want = rng.integers(0, a.pages, a.reads).astype(np.int64)
    holder = {}

    def new_store():
        reset_all()
        holder["st"] = SwapStore(dev, StoreConfig(placement="temporal", write_size=512 << 10, prefetch=False))

    def store_write():
        st = holder["st"]
        for i in range(0, a.pages, a.batch):
            st.swap_out(ids[i:i + a.batch], data[i:i + a.batch])
        st.flush()

    # raw and store trials alternate, so machine load drifts over both alike; each side keeps its best
    t_raw_w = t_st_w = t_raw_r = t_st_r = float("inf")
    pair_w, pair_r = [], []
    for _ in range(a.repeat):
        rw = best_of(raw_write, 1, reset_all)
        sw = best_of(store_write, 1, new_store)
        rr = best_of(lambda: [dev.read(int(o), PS) for o in offs], 1)
        st = holder["st"]
        sr = best_of(lambda: [st.swap_in(want[i:i + a.batch]) for i in range(0, a.reads, a.batch)], 1)
        pair_w.append(rw / sw)
        pair_r.append(rr / sr)
        t_raw_w, t_st_w, t_raw_r, t_st_r = min(t_raw_w, rw), min(t_st_w, sw), min(t_raw_r, rr), min(t_st_r, sr)
    order = np.argsort(ids)
    assert np.array_equal(st.swap_in(np.arange(1000)), data[order[:1000]]), "store returned wrong bytes"

    res = {
        "clock": "wall (timing model off: this measures the store's host-side cost)",
        "pages": a.pages, "batch": a.batch,
        "raw_append_pages_per_s": a.pages / t_raw_w,
        "store_swap_out_pages_per_s": a.pages / t_st_w,
        "swap_out_vs_raw": (a.pages / t_st_w) / (a.pages / t_raw_w),
        "swap_out_vs_raw_median_of_pairs": float(np.median(pair_w)),
        "raw_random_read_pages_per_s": a.reads / t_raw_r,
        "store_swap_in_random_pages_per_s": a.reads / t_st_r,
        "swap_in_vs_raw": (a.reads / t_st_r) / (a.reads / t_raw_r),
        "swap_in_vs_raw_median_of_pairs": float(np.median(pair_r)),
    }
    for k, v in res.items():
        print(f"{k:36} {v:,.3f}" if isinstance(v, float) else f"{k:36} {v}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
