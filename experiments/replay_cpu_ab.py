#!/usr/bin/env python3
"""A trace replay's CPU here against an older commit, side by side (issue 31's "pages per CPU second
with GC at work"): each store run of the trace replayed in a process of its own, the two commits
alternating (A B A B ...) on the same machine, so that a change in the machine's load moves both
sides of a pair alike. Reports each replay's CPU seconds and pages per CPU second, and per run the
median of the per-pair ratios (new / base CPU seconds).

The replays are ``experiments/gc_cpu.py``'s plain child (no timers: ``--child RUN --plain``), this
commit's script for both sides, each side importing its own package (``PYTHONPATH``). The older
commit is checked out into a temporary git worktree and its C extensions built there. The two
sides' modeled fields (stall, WAF, GC bytes, p99, pages) must agree, pair by pair: the comparison
is of speed alone.

    python experiments/replay_cpu_ab.py --trace DIR --base COMMIT [--pairs 3] [--utilisation 0.95]
        [--runs store-on-zns,store-on-conventional] [--json out.json]

The trace must exist (``gc_cpu.py --trace DIR ...`` generates it). Bad input: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from base_checkout import base_checkout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "experiments", "gc_cpu.py")
MODELED = ("stall_s", "write_amplification", "store_gc_mib", "device_gc_mib", "swap_in_p99_ms", "pages")


def replay(tree: str, trace: str, run: str, utilisation: float) -> dict:
    """One plain replay of ``run`` with the package of ``tree``: its result row."""
    p = subprocess.run([sys.executable, SCRIPT, "--trace", trace, "--utilisation", str(utilisation), "--child", run,
                        "--plain"], env=dict(os.environ, PYTHONPATH=tree), stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    if p.returncode != 0:
        raise SystemExit(f"replay_cpu_ab: run {run} failed in {tree} (exit {p.returncode})")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", required=True, help="chunked trace directory (made by gc_cpu.py)")
    ap.add_argument("--base", required=True, help="the older commit")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--utilisation", type=float, default=0.95)
    ap.add_argument("--runs", default="store-on-zns,store-on-conventional")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    runs = [r.strip() for r in a.runs.split(",") if r.strip()]
    if not os.path.exists(os.path.join(a.trace, "trace.json")):
        print(f"replay_cpu_ab: no trace in {a.trace} (make it with experiments/gc_cpu.py --trace)", file=sys.stderr)
        sys.exit(2)
    if a.pairs < 1 or not runs:
        print("replay_cpu_ab: --pairs must be >= 1 and --runs name a run", file=sys.stderr)
        sys.exit(2)
    rows = []
    with base_checkout(a.base) as base:
        for i in range(a.pairs):
            for run in runs:
                new, old = replay(ROOT, a.trace, run, a.utilisation), replay(base, a.trace, run, a.utilisation)
                differ = [k for k in MODELED if new[k] != old[k]]
                if differ:
                    raise SystemExit(f"replay_cpu_ab: {run}: the modeled {differ} differ: not a speed comparison")
                rows.append({"pair": i + 1, "run": run, "new_cpu_s": new["cpu_s"], "base_cpu_s": old["cpu_s"],
                             "new_pages_per_cpu_s": new["pages_per_cpu_s"],
                             "base_pages_per_cpu_s": old["pages_per_cpu_s"], "pages": new["pages"],
                             **{k: new[k] for k in MODELED if k != "pages"}})
                print(f"pair {i + 1} {run}: {new['cpu_s']} vs {old['cpu_s']} CPU s "
                      f"({new['cpu_s'] / old['cpu_s']:.3f}); {new['pages_per_cpu_s']:,} vs "
                      f"{old['pages_per_cpu_s']:,} pages per CPU s", flush=True)
    summary = {}
    for run in runs:
        mine = [r for r in rows if r["run"] == run]
        ratio = np.array([r["new_cpu_s"] / r["base_cpu_s"] for r in mine])
        summary[run] = {"cpu_ratio_median": round(float(np.median(ratio)), 3),
                        "cpu_ratio_min": round(float(ratio.min()), 3), "cpu_ratio_max": round(float(ratio.max()), 3),
                        "new_pages_per_cpu_s_median": int(np.median([r["new_pages_per_cpu_s"] for r in mine])),
                        "base_pages_per_cpu_s_median": int(np.median([r["base_pages_per_cpu_s"] for r in mine]))}
        s = summary[run]
        print(f"{run}: new / base CPU, median of {len(mine)} pairs {s['cpu_ratio_median']} "
              f"({s['cpu_ratio_min']}-{s['cpu_ratio_max']}); pages per CPU s {s['new_pages_per_cpu_s_median']:,} "
              f"vs {s['base_pages_per_cpu_s_median']:,}")
    res = {"command": "python experiments/replay_cpu_ab.py " + " ".join(sys.argv[1:]), "base": a.base,
           "cpus": len(os.sched_getaffinity(0)), "utilisation": a.utilisation, "summary": summary, "pairs": rows,
           "modeled_results_equal": True}
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
