#!/usr/bin/env python3
"""``zswap-host bench --quick`` here against an older commit, side by side: the two alternate (A B A B
…) on the same machine, each a whole process, and the ratio is taken pair by pair so that a change in
the machine's load moves both sides of a pair alike. Reports wall and CPU seconds (the process and its
children: the bench's worker processes) and the median of the per-pair ratios.

The older commit is checked out into a temporary git worktree and its C extension built there; both
sides run with the same interpreter. The modeled results of the two must agree (checked: every run's
modeled fields equal), so the comparison is of speed alone.

    python experiments/bench_quick_ab.py [--base cfa481b] [--pairs 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from base_checkout import base_checkout
from zswap_host.run_names import current_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WALL_FIELDS = {"wall_s", "measured_compute_s", "paging_bookkeeping_s", "replicas", "simulation_wall_s"}


def run(tree: str, out: str) -> tuple[float, float]:
    """One ``bench --quick`` in ``tree``: (wall s, CPU s of the process and its children)."""
    env = dict(os.environ, PYTHONPATH=tree)
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "zswap_host.cli", "bench", "--quick", "--json", out], cwd=tree,
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench --quick failed in {tree}")
    return wall, ru.ru_utime + ru.ru_stime


def modeled(path: str) -> list[dict]:
    """The report's runs without wall-clock fields (an older commit's run names as they are now)."""
    with open(path) as f:
        runs = current_report(json.load(f))["runs"]
    out = []
    for r in runs:
        r = {k: v for k, v in r.items() if k not in WALL_FIELDS}
        r["paging"] = {k: v for k, v in r["paging"].items() if not k.endswith("_wall_s")}   # io, prefetch, bookkeeping
        out.append(r)
    return out


def same(new: list[dict], base: list[dict]) -> bool:
    """Every field the base reports is equal in the new report (which may report more)."""
    return len(new) == len(base) and all(n.get(k) == v for n, b in zip(new, base) for k, v in b.items())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="cfa481b", help="the older commit (default: the start of issue 11)")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, base_checkout(a.base) as base:
        rows = []
        run(ROOT, os.path.join(tmp, "warm.json"))                 # warm-up: caches, page cache
        for i in range(a.pairs):
            wa, ca = run(ROOT, os.path.join(tmp, "a.json"))
            wb, cb = run(base, os.path.join(tmp, "b.json"))
            if i == 0 and not same(modeled(os.path.join(tmp, "a.json")), modeled(os.path.join(tmp, "b.json"))):
                raise SystemExit("the two commits' modeled results differ: not a speed comparison")
            rows.append({"new_wall_s": wa, "new_cpu_s": ca, "base_wall_s": wb, "base_cpu_s": cb})
            print(f"pair {i + 1}: wall {wa:.1f} s vs {wb:.1f} s ({wa / wb:.3f}), "
                  f"cpu {ca:.1f} s vs {cb:.1f} s ({ca / cb:.3f})", flush=True)
    wall = np.array([r["new_wall_s"] / r["base_wall_s"] for r in rows])
    cpu = np.array([r["new_cpu_s"] / r["base_cpu_s"] for r in rows])
    res = {"base": a.base, "pairs": rows, "cpus": len(os.sched_getaffinity(0)),
           "wall_ratio_median": float(np.median(wall)), "wall_ratio_min": float(wall.min()),
           "wall_ratio_max": float(wall.max()), "cpu_ratio_median": float(np.median(cpu)),
           "modeled_results_equal": True}
    print(f"new / base, median of {len(rows)} pairs: wall {res['wall_ratio_median']:.3f} "
          f"(range {wall.min():.3f}-{wall.max():.3f}), cpu {res['cpu_ratio_median']:.3f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
