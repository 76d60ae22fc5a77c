"""Store overhead benchmark (issue 11): the store's host-side cost as ratios to the raw operation on
the same bytes, in the same run, on an in-memory emulated ZNS device with the timing model off
(``preset=none``).

* swap-out ratio = raw zone appends of the pages (512 KiB each) / ``SwapStore.swap_out`` of the same
  pages in batches of ``--batch`` (time of raw over time of store; 1.0 = free). Target >= 0.9.
* swap-in ratio = ``np.take`` of the same random pages from a page array / ``SwapStore.swap_in`` of
  them, ``--batch`` pages a call. Target >= 0.5.

Raw and store trials alternate, so machine load drifts over both alike; the ratio reported is the
median of the per-pair ratios (and the ratio of the best times beside it).

``--callgrind`` also counts instructions per page under valgrind (stable under load): each phase
runs in its own process, minus the same process doing everything but the phase; ``non-copy`` leaves
out memcpy/memmove/memset (the bytes themselves).

``--call-pages N`` (issue 12) measures one ``swap_out`` call of N pages instead, on the QEMU guest's
namespace shape (``GUEST_URL``: 64 zones of 16 MiB, capacity 12 MiB, limits 14/14, 512 KiB appends
(``--max-append 504KiB``: the guest's own limit, which leaves a buffered tail per call),
timing model off): a fresh store filled to half the device with fresh ids in calls of N pages.
It reports instructions per call under callgrind (all, and without memcpy/memmove/memset; the
process minus the same process making no calls) and Python function calls per call (cProfile).

    python experiments/bench_store_overhead.py [--pages 100000] [--batch 256] [--callgrind] [--json out.json]
    python experiments/bench_store_overhead.py --call-pages 512 [--max-append 504KiB] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

from zswap_host import StoreConfig, SwapStore, open_device

PS = 4096
UNIT = (512 << 10) // PS
PHASES = ("raw-append", "store-swap-out", "np-take", "store-swap-in")


GUEST_URL = "emu://?zones=64&zone_size=16MiB&zone_capacity=12MiB&max_open=14&max_active=14&max_append=512KiB&preset=none"


def device(zones: int):
    return open_device(f"emu://?zones={zones}&zone_size=64MiB&max_open=14&max_active=14&max_append=512KiB&preset=none")


class Bench:
    """One device (its memory touched once) and the four phases over the same pages."""

    def __init__(self, pages: int, batch: int, reads: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.pages, self.batch, self.reads = pages, batch, reads
        self.zones = -(-pages * PS // (62 << 20)) + 6
        self.data = rng.integers(0, 256, (pages, PS), dtype=np.uint8)
        self.ids = rng.permutation(pages).astype(np.int64)
        self.want = rng.integers(0, pages, reads).astype(np.int64)
        self.row_of_id = np.empty(pages, np.int64)     # id -> its row of data
        self.row_of_id[self.ids] = np.arange(pages)
        self.dev = device(self.zones)
        self.store = None
        self.raw_append()                       # first touch of the device's memory

    def reset(self) -> None:
        for z in range(self.zones):
            self.dev.reset_zone(z)

    def raw_append(self) -> None:
        z, used, cap = 0, 0, self.dev.geometry.zone_capacity
        for i in range(0, self.pages, UNIT):
            chunk = self.data[i:i + UNIT]
            if used + chunk.nbytes > cap:
                z, used = z + 1, 0
            self.dev.append(z, chunk)
            used += chunk.nbytes

    def new_store(self) -> None:
        self.reset()
        self.store = SwapStore(self.dev, StoreConfig(placement="temporal", write_size=512 << 10, prefetch=False))

    def store_swap_out(self) -> None:
        st, b = self.store, self.batch
        for i in range(0, self.pages, b):
            st.swap_out(self.ids[i:i + b], self.data[i:i + b])
        st.flush()

    def np_take(self) -> None:
        rows, b = self.row_of_id[self.want], self.batch
        for i in range(0, self.reads, b):
            np.take(self.data, rows[i:i + b], axis=0)

    def store_swap_in(self) -> None:
        st, b = self.store, self.batch
        for i in range(0, self.reads, b):
            st.swap_in(self.want[i:i + b])


def timed(fn, setup=None) -> float:
    if setup is not None:
        setup()
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def measure(a) -> dict:
    b = Bench(a.pages, a.batch, a.reads)
    out_pairs, in_pairs, best = [], [], {p: float("inf") for p in PHASES}
    for _ in range(a.repeat):
        ra = timed(b.raw_append, b.reset)
        so = timed(b.store_swap_out, b.new_store)
        nt = timed(b.np_take)
        si = timed(b.store_swap_in)
        out_pairs.append(ra / so)
        in_pairs.append(nt / si)
        for p, t in zip(PHASES, (ra, so, nt, si)):
            best[p] = min(best[p], t)
    got = b.store.swap_in(np.arange(1000))
    assert np.array_equal(got, b.data[b.row_of_id[:1000]]), "store returned wrong bytes"
    return {
        "clock": "wall (timing model off: the store's host-side cost)",
        "pages": a.pages, "batch": a.batch, "reads": a.reads, "repeat": a.repeat,
        "raw_append_pages_per_s": a.pages / best["raw-append"],
        "store_swap_out_pages_per_s": a.pages / best["store-swap-out"],
        "swap_out_vs_raw_append": float(np.median(out_pairs)),
        "swap_out_vs_raw_append_best_times": best["raw-append"] / best["store-swap-out"],
        "np_take_pages_per_s": a.reads / best["np-take"],
        "store_swap_in_pages_per_s": a.reads / best["store-swap-in"],
        "swap_in_vs_np_take": float(np.median(in_pairs)),
        "swap_in_vs_np_take_best_times": best["np-take"] / best["store-swap-in"],
    }


# -- instruction counts ------------------------------------------------------------------------------
def _phase_main(a) -> None:
    """Child process under callgrind: set up, then run one phase (or none: the baseline)."""
    b = Bench(a.pages, a.batch, a.reads)
    # warm every code path once (lazy imports, first-call caches), in the baseline run too
    b.new_store()
    b.store.swap_out(b.ids[:2 * a.batch], b.data[:2 * a.batch])
    b.store.swap_in(b.ids[:a.batch])
    np.take(b.data, b.row_of_id[b.want[:a.batch]], axis=0)
    if a.phase in ("store-swap-in", "np-take", "none-in"):
        b.new_store()
        b.store_swap_out()
    else:
        b.reset()
        if a.phase == "store-swap-out":
            b.new_store()
    run = {"raw-append": b.raw_append, "store-swap-out": b.store_swap_out, "np-take": b.np_take,
           "store-swap-in": b.store_swap_in}.get(a.phase)
    if run is not None:
        run()


class Calls:
    """``--call-pages``: swap_out calls of ``n`` fresh pages each into a fresh store on the guest's
    namespace shape, until half the device is filled."""

    def __init__(self, n: int, seed: int = 0, max_append: str = "512KiB") -> None:
        self.url = GUEST_URL.replace("max_append=512KiB", f"max_append={max_append}")
        self.dev = open_device(self.url)
        g = self.dev.geometry
        self.n = n
        self.calls = g.nr_zones * g.zone_capacity // PS // 2 // n
        self.data = np.random.default_rng(seed).integers(0, 256, (n, PS), dtype=np.uint8)   # the same bytes each call
        self.ids = np.arange(self.calls * n, dtype=np.int64)
        self.store = None

    def new_store(self) -> None:
        for z in range(self.dev.geometry.nr_zones):
            self.dev.reset_zone(z)
        self.store = SwapStore(self.dev, StoreConfig(placement="temporal", write_size=512 << 10, prefetch=False))

    def run(self, calls: int | None = None) -> None:
        st, n, data = self.store, self.n, self.data
        for i in range(calls if calls is not None else self.calls):
            st.swap_out(self.ids[i * n:(i + 1) * n], data)


def _calls_main(a) -> None:
    """Child process under callgrind: set up and warm up, then make the calls (or none: the baseline)."""
    c = Calls(a.call_pages, max_append=a.max_append)
    c.new_store()
    c.run(min(c.calls, 8))                        # warm every code path once (zone ends included)
    c.store.swap_in(c.ids[:16])
    c.new_store()
    if a.phase == "calls":
        c.run()


def call_counts(a) -> dict:
    """Instructions (callgrind) and Python calls (cProfile) per swap_out of ``--call-pages`` pages."""
    import cProfile
    import pstats

    c = Calls(a.call_pages, max_append=a.max_append)
    c.new_store()
    c.run(min(c.calls, 8))
    c.new_store()
    prof = cProfile.Profile()
    prof.enable()
    c.run()
    prof.disable()
    st = pstats.Stats(prof)
    res = {"url": c.url, "call_pages": a.call_pages, "calls": c.calls,
           "python_calls_per_call": st.total_calls / c.calls,
           "primitive_python_calls_per_call": st.prim_calls / c.calls}
    if not a.no_callgrind:
        for phase in ("none-calls", "calls"):                # compile stale .pyc files outside valgrind
            subprocess.run([sys.executable, __file__, "--phase", phase, "--call-pages", "16"],
                           check=True, capture_output=True, env=_child_env())
        base = _callgrind(a, "none-calls")
        tot, non_copy = _callgrind(a, "calls")
        res["instructions_per_call"] = (tot - base[0]) / c.calls
        res["non_copy_instructions_per_call"] = (non_copy - base[1]) / c.calls
    return res


def _child_env() -> dict:
    """The callgrind children's environment: one BLAS thread (idle ones would count), a fixed hash
    seed, and bytecode caching on (with PYTHONDONTWRITEBYTECODE set every run would compile the
    package again, and modules first imported in the measured part would count)."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


_COPY = re.compile(r"mem(cpy|move|set)|__memcpy|__memmove|__memset", re.I)


def _callgrind(a, phase: str) -> tuple[int, int]:
    """(all instructions, instructions outside memcpy/memmove/memset) of a child run."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, __file__,
               "--phase", phase, "--pages", str(a.cg_pages), "--reads", str(a.cg_pages), "--batch", str(a.batch)]
        if a.call_pages:
            cmd += ["--call-pages", str(a.call_pages), "--max-append", a.max_append]
        subprocess.run(cmd, check=True, capture_output=True, env=_child_env())
        # --auto=no: no annotated source, whose call lines ("=> memcpy") would count the copies twice
        ann = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", out],
                             check=True, capture_output=True, text=True).stdout
    total = copy = 0
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(\(\s*[\d.]+%\)\s+)?(.*)", line)
        if not m:
            continue
        n = int(m.group(1).replace(",", ""))
        if "PROGRAM TOTALS" in m.group(3):
            total = n
        elif _COPY.search(m.group(3)):
            copy += n
    return total, total - copy


def instruction_counts(a) -> dict:
    # one small run outside valgrind first, so no measured run pays for compiling stale .pyc files
    subprocess.run([sys.executable, __file__, "--phase", "store-swap-in", "--pages", "1024", "--reads", "1024"],
                   check=True, capture_output=True, env=_child_env())
    base = {"out": _callgrind(a, "none-out"), "in": _callgrind(a, "none-in")}
    res = {}
    for phase in PHASES:
        side = "in" if phase in ("np-take", "store-swap-in") else "out"
        tot, non_copy = _callgrind(a, phase)
        res[phase] = {"instructions_per_page": (tot - base[side][0]) / a.cg_pages,
                      "non_copy_instructions_per_page": (non_copy - base[side][1]) / a.cg_pages}
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=256, help="pages per swap_out / swap_in call")
    ap.add_argument("--reads", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--callgrind", action="store_true", help="also count instructions per page (valgrind)")
    ap.add_argument("--cg-pages", type=int, default=16384, help="pages per phase under callgrind")
    ap.add_argument("--call-pages", type=int, default=0,
                    help="instead: instructions (callgrind) and Python calls (cProfile) per swap_out of this "
                         "many pages on the guest's namespace shape")
    ap.add_argument("--max-append", default="512KiB",
                    help="with --call-pages: the namespace's append limit (the QEMU guest's is 504KiB)")
    ap.add_argument("--no-callgrind", action="store_true", help="with --call-pages: cProfile only")
    ap.add_argument("--phase", choices=PHASES + ("none-out", "none-in", "calls", "none-calls"), help=argparse.SUPPRESS)
    ap.add_argument("--json", help="write results here")
    a = ap.parse_args()
    if a.phase in ("calls", "none-calls"):
        _calls_main(a)
        return
    if a.phase:
        _phase_main(a)
        return
    res = call_counts(a) if a.call_pages else measure(a)
    if a.callgrind and not a.call_pages:
        res["callgrind"] = instruction_counts(a)
    for k, v in res.items():
        if isinstance(v, dict):
            for p, c in v.items():
                print(f"{k + ' ' + p:36} " + ", ".join(f"{n} {x:,.0f}" for n, x in c.items()))
        else:
            print(f"{k:36} {v:,.3f}" if isinstance(v, float) else f"{k:36} {v}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
