"""The bench's chain in three compute regimes: which conclusions hold where.

    .venv/bin/python experiments/regimes.py [--out experiments/results/regimes] [--quick]

Runs ``zswap-host bench`` (default preset, everything else the bench's) once per regime, charging
every run the regime's compute per sample, and tabulates per regime: each run's training time over
DRAM-only's with its modeled stall in seconds, the best Linux run (the lowest training time of
linux-swap, -batched, -lookahead), the store's runs against it, and the write amplification.

The regimes (compute per training sample, charged to every run alike; modeled device time is
deterministic, so the table does not move with this machine's load):

- ``cpu``: the bench's calibration, one CPU core of this machine (``compute_calibration.json``);
- ``cpu/10``: ten times faster;
- ``v100``: one NVIDIA V100 32 GB, mixed precision: 2,090,000 samples/s, 0.478 us/sample;
- ``a100``: one NVIDIA A100 80 GB, mixed precision: 4,020,000 samples/s, 0.249 us/sample.

The accelerator figures are NVIDIA's published DLRM training throughput ("Training performance"
tables of NVIDIA DeepLearningExamples, PyTorch/Recommendation/DLRM/README.md, October 2021 release:
one GPU, the "small" Criteo 1 TB model, 64k batch, averaged over a training epoch). A GPU's HBM holds
that model; here the tables are larger than the DRAM budget, so the figure stands for the compute
alone, as the bench charges it. A regime whose JSON is already in --out is read, not run again.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from zswap_host.run_names import current_report

REGIMES = [
    ("cpu", None, "the bench's calibrated compute (one CPU core of the reference machine)"),
    ("cpu/10", 0.1, "ten times the calibrated compute's speed"),
    ("v100", 1e6 / 2_090_000, "1x V100 32GB, mixed precision, 2.09 M samples/s (NVIDIA DLRM README)"),
    ("a100", 1e6 / 4_020_000, "1x A100 80GB, mixed precision, 4.02 M samples/s (NVIDIA DLRM README)"),
]
LINUX = ("linux-swap", "linux-swap-batched", "linux-swap-lookahead")
STORE = ("store-on-conventional", "store-on-zns")


def calibrated_us() -> float:
    from zswap_host.bench.plan import plan
    from zswap_host.bench import BenchSpec

    return float(plan(BenchSpec(preset="default")).compute.us_per_sample)


def run_bench(exe: str, name: str, us: float, out: Path, quick: bool) -> dict:
    path = out / f"bench-{name.replace('/', '-')}.json"
    if path.exists():                    # a regime already run (modeled time: the same command gives the same)
        return current_report(json.loads(path.read_text()))     # (run before a run's rename: its name now)
    cmd = [exe, "bench", "--compute-us-per-sample", f"{us:.6g}", "--json", str(path)] + (["--quick"] if quick else [])
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(path.read_text())


def summarise(name: str, us: float, what: str, report: dict) -> dict:
    runs = {r["name"]: r for r in report["runs"]}
    dram = runs["dram-only"]["train_time_s"]
    linux = [r for r in LINUX if r in runs]
    best = min(linux, key=lambda r: (runs[r]["train_time_s"], runs[r]["io_stall_time_s"]))
    waf = {}
    for step in report.get("chain", []):         # each step: write amplification of its two runs
        waf[step["from"]], waf[step["to"]] = step["write_amplification"]
    row = {"regime": name, "us_per_sample": us, "what": what, "dram_only_s": dram, "best_linux": best,
           "runs": {r: {"slowdown": runs[r]["train_time_s"] / dram, "stall_s": runs[r]["io_stall_time_s"],
                        "write_amplification": waf.get(r)}
                    for r in (*linux, *STORE) if r in runs}}
    for s in STORE:
        if s in runs:
            row[f"{s}_vs_best_linux"] = runs[best]["train_time_s"] / runs[s]["train_time_s"]
    return row


def table(rows: list[dict]) -> str:
    head = ("| regime | µs/sample | DRAM-only s | linux-swap | linux-swap-batched | linux-swap-lookahead "
            "| store-on-conventional | store-on-zns | best Linux | ZNS store vs best Linux | store/conv vs best Linux "
            "| WAF: best Linux / store/conv / ZNS |")
    out = [head, "|---|---:|---:|---|---|---|---|---|---|---:|---:|---|"]
    for r in rows:
        cells = []
        for k in (*LINUX, *STORE):
            x = r["runs"].get(k)
            cells.append("–" if x is None else f"{x['slowdown']:.2f}× ({x['stall_s']:.2f} s)")
        out.append(f"| {r['regime']} | {r['us_per_sample']:.3g} | {r['dram_only_s']:.2f} | " + " | ".join(cells)
                   + f" | {r['best_linux']} | {r['store-on-zns_vs_best_linux']:.2f}× "
                   f"| {r['store-on-conventional_vs_best_linux']:.2f}× | "
                   + " / ".join(f"{r['runs'][k]['write_amplification']:.2f}"
                                for k in (r['best_linux'], *STORE)) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="experiments/results/regimes")
    ap.add_argument("--quick", action="store_true", help="the bench's --quick preset (a smoke run)")
    ap.add_argument("--zswap-host", dest="exe", default=str(Path(sys.executable).with_name("zswap-host")))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cpu = calibrated_us() if not args.quick else None
    rows = []
    for name, factor, what in REGIMES:
        if factor is None or factor == 0.1:
            base = cpu if cpu is not None else _quick_us(args.exe)
            us = base if factor is None else base * factor
        else:
            us = factor
        rows.append(summarise(name, us, what, run_bench(args.exe, name, us, out, args.quick)))
    write_summary(out, rows, table(rows))
    return 0


def write_summary(out: Path, rows: list[dict], md: str) -> None:
    """OUT/summary.json (the rows) and OUT/summary.md (their table), which is printed too."""
    (out / "summary.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / "summary.md").write_text(md + "\n")
    print(md)


def _quick_us(exe: str) -> float:
    from zswap_host.bench.plan import plan
    from zswap_host.bench import BenchSpec

    return float(plan(BenchSpec(preset="quick")).compute.us_per_sample)


if __name__ == "__main__":
    sys.exit(main())
