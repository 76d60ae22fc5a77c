#!/usr/bin/env python3
"""Speed of the SSD timing model: simulated 4 KiB page operations per second (wall clock) for
uniform random 4 KiB overwrites on a FULL conventional device in steady-state GC.

The device is filled sequentially first, then overwritten randomly until GC is in steady state
(warm-up, not timed); then the timed random overwrites run at each queue depth.  Prints the
rate (per wall second, and per CPU second of this thread, which other load on the machine moves
less), the modeled write amplification and bandwidth.  Not a test.

    python experiments/bench_ssdsim.py [--size 4GiB] [--preset thesis-ssd] [--ops 4000000] [--json]

The wall-clock rate moves with other load on the machine; instruction counts do not.  With
``--callgrind`` the script runs itself under valgrind twice per queue depth, with --ops N and 2N,
collecting only inside ``conv_submit_h`` (where every ``ConvSSD`` call reaches the FTL), and prints
(Ir(2N) - Ir(N)) / N: instructions per timed 4 KiB overwrite, GC included, with the fill and warm-up cancelled out.  Equivalent by hand:

    valgrind --tool=callgrind --collect-atstart=no --toggle-collect=conv_submit_h \
        --callgrind-out-file=/tmp/cg.%p python experiments/bench_ssdsim.py --qd 32 --ops 200000
    (and again with --ops 400000; subtract the "totals:" lines, divide by 200000)
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

from zswap_host.ssdsim import WRITE, ConvSSD, get_preset

UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
DEFAULT_OPS = 4_000_000


def parse_size(s: str) -> int:
    s = s.strip().lower().removesuffix("ib").removesuffix("b")
    if s and s[-1] in UNITS:
        return int(float(s[:-1]) * UNITS[s[-1]])
    return int(s)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="4GiB", help="logical capacity (default 4GiB)")
    ap.add_argument("--preset", default="thesis-ssd")
    ap.add_argument("--op", type=float, default=None, help="over-provisioning (default: the preset's)")
    ap.add_argument("--ops", type=int, default=DEFAULT_OPS, help="timed 4 KiB overwrites per queue depth")
    ap.add_argument("--qd", default="1,32", help="queue depths (comma separated)")
    ap.add_argument("--batch", type=int, default=1 << 20, help="requests per submit() call")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--callgrind", action="store_true",
                    help="print instructions per 4 KiB op (valgrind callgrind; --ops defaults to 200000)")
    a = ap.parse_args()
    if a.callgrind:
        callgrind(a)
        return

    preset = get_preset(a.preset)
    size = parse_size(a.size)
    m = ConvSSD(preset, size, a.op)
    units = size // 4096
    rng = np.random.default_rng(a.seed)

    t0 = time.perf_counter()
    offs = np.arange(0, size, 128 << 10, dtype=np.int64)
    m.submit(np.full(offs.size, WRITE, np.uint8), offs, np.full(offs.size, 128 << 10, np.int64), qd=32)
    fill_s = time.perf_counter() - t0

    def overwrite(n: int, qd: int) -> tuple[float, float]:
        """n random 4 KiB overwrites; returns wall and CPU (this thread) seconds inside submit()."""
        spent = cpu = 0.0
        done = 0
        while done < n:
            k = min(a.batch, n - done)
            offsets = rng.integers(0, units, k, dtype=np.int64) * 4096
            ops = np.full(k, WRITE, np.uint8)
            lens = np.full(k, 4096, np.int64)
            t, c = time.perf_counter(), time.thread_time()
            m.submit(ops, offsets, lens, qd=qd)
            spent += time.perf_counter() - t
            cpu += time.thread_time() - c
            done += k
        return spent, cpu

    t0 = time.perf_counter()
    overwrite(2 * units, 32)          # warm-up into steady-state GC
    warm_s = time.perf_counter() - t0

    rows = []
    for qd in (int(x) for x in a.qd.split(",")):
        c0 = m.counters()
        spent, cpu = overwrite(a.ops, qd)
        c1 = m.counters()
        d = {k: c1[k] - c0[k] for k in c0}
        rows.append({
            "qd": qd, "ops": a.ops, "wall_s": spent, "page_ops_per_s": a.ops / spent,
            "cpu_s": cpu, "page_ops_per_cpu_s": a.ops / cpu,
            "write_amplification": d["media_write_bytes"] / d["host_write_bytes"],
            "gc_relocations_per_s": d["gc_write_bytes"] / 4096 / spent,
            "modeled_bw_mib_s": d["host_write_bytes"] / d["device_time_s"] / (1 << 20),
        })
    out = {"preset": preset.name, "logical_bytes": size, "op": m.op, "effective_op": m.effective_op,
           "blocks_per_die": m.blocks_per_die, "pages_per_block": m.pages_per_block,
           "fill_wall_s": fill_s, "warmup_wall_s": warm_s, "results": rows}
    if a.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{preset.name}: {size / (1 << 30):g} GiB logical, OP {m.op:.1%} (effective {m.effective_op:.1%}), "
          f"{m.blocks_per_die} blocks/die x {m.pages_per_block} pages; fill {fill_s:.2f}s, warm-up {warm_s:.2f}s wall")
    for r in rows:
        print(f"  qd {r['qd']:>3}: {r['page_ops_per_s'] / 1e6:6.2f} M simulated 4 KiB ops/s "
              f"({r['page_ops_per_cpu_s'] / 1e6:.2f} M per CPU second) "
              f"(+{r['gc_relocations_per_s'] / 1e6:.2f} M GC relocations/s)  WAF {r['write_amplification']:.2f}  "
              f"modeled {r['modeled_bw_mib_s']:.0f} MiB/s")


def _callgrind_ir(a, qd: int, ops: int) -> int:
    """Instructions executed inside conv_submit_h for fill + warm-up + `ops` timed overwrites."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=conv_submit_h",
               f"--callgrind-out-file={out}", sys.executable, os.path.abspath(__file__),
               "--size", a.size, "--preset", a.preset, "--ops", str(ops), "--qd", str(qd),
               "--batch", str(a.batch), "--seed", str(a.seed), "--json"]
        if a.op is not None:
            cmd += ["--op", str(a.op)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            m = re.search(r"^(?:totals|summary): (\d+)", f.read(), re.M)
        return int(m.group(1))


def callgrind(a) -> None:
    """Instructions per timed op, fill and warm-up cancelled: (Ir(2N) - Ir(N)) / N."""
    n = a.ops if a.ops != DEFAULT_OPS else 200_000
    rows = []
    for qd in (int(x) for x in a.qd.split(",")):
        i1, i2 = _callgrind_ir(a, qd, n), _callgrind_ir(a, qd, 2 * n)
        rows.append({"qd": qd, "ops": n, "instructions_per_op": (i2 - i1) / n})
    if a.json:
        print(json.dumps({"preset": a.preset, "size": a.size, "results": rows}, indent=2))
        return
    for r in rows:
        print(f"  qd {r['qd']:>3}: {r['instructions_per_op']:8.1f} instructions per simulated 4 KiB op "
              f"(callgrind, {a.size} {a.preset}, N={r['ops']})")


if __name__ == "__main__":
    main()
