"""Does the bench's headline move with machine load? Runs the same bench command twice — alone, and
with a CPU hog (`python -c 'while 1: pass'`) running beside it — and compares: modeled stalls must be
identical and every ratio within 2% (issue 9's acceptance). Writes both reports and a summary JSON.

    python experiments/determinism_check.py [--args=--quick] [--out experiments/results/determinism]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def bench(args: list[str], path: str) -> dict:
    cmd = [sys.executable, "-m", "zswap_host.cli", "bench", *args, "--json", path]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        return json.load(f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--args", default="--quick", help="bench arguments (quoted)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "determinism"))
    a = ap.parse_args()
    args = shlex.split(a.args)
    os.makedirs(a.out, exist_ok=True)
    alone = bench(args, os.path.join(a.out, "alone.json"))
    hog = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        loaded = bench(args, os.path.join(a.out, "with_cpu_hog.json"))
    finally:
        hog.kill()
    runs = []
    for x, y in zip(alone["runs"], loaded["runs"]):
        runs.append({"run": x["name"], "stall_s": [x["io_stall_time_s"], y["io_stall_time_s"]],
                     "train_time_s": [x["train_time_s"], y["train_time_s"]],
                     "measured_compute_s": [x["measured_compute_s"], y["measured_compute_s"]]})
    ratios = {k: [alone["ratios"][k], loaded["ratios"][k]] for k in alone["ratios"]
              if isinstance(alone["ratios"][k], float)}
    worst = max(abs(b / a - 1) for a, b in ratios.values() if a)
    summary = {"command": f"python experiments/determinism_check.py --args={shlex.quote(a.args)}",
               "compute": alone["compute"], "runs": runs, "ratios": ratios,
               "stalls_identical": all(r["stall_s"][0] == r["stall_s"][1] for r in runs),
               "worst_ratio_change": worst, "ratios_within_2pct": worst <= 0.02,
               "measured_compute_change": [r["measured_compute_s"][1] / r["measured_compute_s"][0] - 1
                                           for r in runs]}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"stalls identical: {summary['stalls_identical']}; worst ratio change {worst:.2%}; "
          f"measured (not charged) compute changed by "
          + ", ".join(f"{c:+.0%}" for c in summary["measured_compute_change"]))
    print(f"wrote {a.out}/summary.json")


if __name__ == "__main__":
    main()
