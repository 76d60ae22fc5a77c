"""The regime table again, on drives of real geometry: MLPerf-size tables, payload-free replay.

    .venv/bin/python experiments/regimes_real_geometry.py --trace /tmp/mlperf-la [--ssd zn540] \
        [--iterations 30000] [--out experiments/results/regimes_real/zn540] [--suspend] [--regimes a100]
    .venv/bin/python experiments/regimes_real_geometry.py --model default --geometry scaled \
        --ssd thesis-ssd --trace /tmp/default-la      # the bench's devices, by replay (the comparison)

The bench's own devices are small, so their erase blocks and zones are scaled down (144 KiB blocks,
8 MiB zones); that scaling moves the write-amplification ranking (experiments/geometry_sensitivity.py).
Here the devices have the ``--ssd`` preset's real geometry (``--geometry real``: zn540's 32 dies,
33.7 MiB erase blocks, 2 GiB zones of 1077 MiB capacity, 7% OP), which needs tables of the drive's
scale: the ``mlperf`` preset's page trace (89.5 GiB of tables, 10% DRAM budget, lookahead 1,
generated torch-free: ``zswap-host replay --generate mlperf --lookahead 1``), replayed payload-free
with the tables at the bench's utilisation (1/1.3) of the conventional SSD. Same flash, same
controller for every run: the interface is the one difference.

Runs (``zswap-host replay``): ``linux-swap-batched`` on the lookahead trace (= the bench's
``linux-swap-lookahead``: batched faults and the next batch announced), ``store-on-conventional`` and
``store-on-zns``. The regimes charge each run the same compute per sample (the trace's windows
rescaled, ``--compute-us-per-sample``; no page moves): ``cpu`` = 481 us, the mlperf preset's
*assumed* CPU cost (the kaggle calibration scaled by dense MACs, docs/results/
mlperf-replay.md), ``cpu/10``, and the V100 / A100 figures of experiments/regimes.py (NVIDIA's published DLRM
throughput). Training time = compute + modeled stall; modeled numbers are deterministic. A regime
whose JSON is in --out is read, not replayed again.

``--model default --geometry scaled`` replays the bench's own default-preset trace (lookahead 1, its
calibrated CPU compute 26.2 us/sample) on the bench's scaled devices: with ``--ssd thesis-ssd`` the
bench's regime table (experiments/regimes.py) by replay, with ``--ssd zn540`` the same small devices
on the fitted drive's flash, so flash and geometry each move one at a time.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

from regimes import REGIMES as BENCH_REGIMES, write_summary

# the CPU compute per sample, us: mlperf's is assumed (no calibration), default's the bench's calibration
CPU_US = {"mlperf": 481.0, "default": None}
GENERATE = {"mlperf": ["--budget", "10%"], "default": []}


def regimes(cpu_us: float) -> list[tuple[str, float, str]]:
    return [("cpu", cpu_us, "the model's CPU compute (mlperf: assumed, kaggle calibration x dense MACs; default: "
                            "the bench's calibration)"),
            ("cpu/10", cpu_us / 10, "ten times faster"),
            *((name, us, what) for name, us, what in BENCH_REGIMES if name in ("v100", "a100"))]
LINUX, STORE = "linux-swap-batched", ("store-on-conventional", "store-on-zns")
RUNS = (LINUX, *STORE)


def replay(exe: str, args, name: str, us: float, cpu_us: float, out: Path) -> dict:
    """Regime ``name``'s replay JSON: the first (cpu) generates the trace when it is absent."""
    path = out / f"{name.replace('/', '-')}.json"
    if path.exists():
        return json.loads(path.read_text())
    cmd = [exe, "replay", "--trace", args.trace, "--runs", ",".join(RUNS), "--ssd", args.ssd,
           "--geometry", args.geometry, "--out", str(out / name.replace("/", "-")), "--json", str(path),
           *(["--suspend"] if args.suspend else [])]
    if not Path(args.trace).exists():
        if us != cpu_us:
            raise SystemExit(f"{args.trace}: no trace; the cpu regime generates it")
        cmd[2:2] = ["--generate", args.model, *GENERATE[args.model], "--lookahead", "1",
                    *(["--iterations", str(args.iterations)] if args.iterations else []),
                    *(["--compute-us-per-sample", f"{cpu_us:g}"] if CPU_US[args.model] else [])]
    elif us != cpu_us:                  # the trace's compute windows rescaled (no page moves)
        cmd += ["--compute-us-per-sample", f"{us:.6g}"]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return json.loads(path.read_text())


def calibrated_us(model: str) -> float:
    from zswap_host.bench import BenchSpec, plan

    return float(plan(BenchSpec(preset=model)).compute.us_per_sample)


def io_floor(rep: dict) -> dict:
    """The least device time the trace's swap traffic needs on the run's SSD preset, GC and queueing
    aside: its swap-ins at the preset's 4 KiB read ceiling (its serial controller time per read, or
    every die reading at once) and its swap-outs at its write ceiling (the write path, or every die
    programming at once). A floor no run can beat, whatever the store does: with lookahead the I/O
    overlaps compute, so a run trains no faster than max(compute, the larger of the two)."""
    from zswap_host.ssdsim import get_preset

    p = get_preset(rep["devices"]["ssd"])
    c = p.controller
    reads_per_s = min(1e6 / c.ctrl_read_us if c.ctrl_read_us else math.inf, p.n_dies * 1e6 / p.t_read_us)
    write_mb_s = min(c.write_path_mb_s or math.inf, p.program_mb_s)
    tr = rep["trace"]
    return {"reads_s": tr["swap_in_pages"] / reads_per_s, "writes_s": tr["swap_out_pages"] * 4096 / (write_mb_s * 1e6),
            "read_ceiling_kiops": reads_per_s / 1e3, "write_ceiling_mb_s": write_mb_s}


def summarise(name: str, us: float, what: str, rep: dict) -> dict:
    runs = {r["run"]: r for r in rep["runs"]}
    compute = runs[LINUX]["compute_s"]
    row = {"regime": name, "us_per_sample": us, "what": what, "compute_s": compute,
           "runs": {r: {"slowdown": (compute + x["stall_s"]) / compute, "stall_s": x["stall_s"],
                        "write_amplification": x["write_amplification"], "store_gc_gib": x["store_gc_mib"] / 1024,
                        "device_gc_gib": x["device_gc_mib"] / 1024, "swap_in_p99_ms": x["swap_in_p99_ms"]}
                    for r, x in runs.items()},
           "devices": rep["devices"], "trace": rep["trace"], "io_floor": io_floor(rep)}
    for s in STORE:
        row[f"{s}_vs_linux"] = (compute + runs[LINUX]["stall_s"]) / (compute + runs[s]["stall_s"])
    return row


def table(rows: list[dict]) -> str:
    out = ["| regime | µs/sample | compute s | linux-swap-lookahead | store-on-conventional | store-on-zns "
           "| ZNS store vs Linux | store/conv vs Linux | WAF: Linux / store/conv / ZNS "
           "| I/O floor s: reads / writes | floor slowdown |",
           "|---|---:|---:|---|---|---|---:|---:|---|---|---:|"]
    for r in rows:
        cells = [f"{r['runs'][k]['slowdown']:.2f}× ({r['runs'][k]['stall_s']:.1f} s)" for k in RUNS]
        out.append(f"| {r['regime']} | {r['us_per_sample']:.3g} | {r['compute_s']:.1f} | " + " | ".join(cells)
                   + f" | {r['store-on-zns_vs_linux']:.2f}× | {r['store-on-conventional_vs_linux']:.2f}× | "
                   + " / ".join(f"{r['runs'][k]['write_amplification']:.2f}" for k in RUNS)
                   + f" | {r['io_floor']['reads_s']:.1f} / {r['io_floor']['writes_s']:.1f} | "
                   + f"{max(r['compute_s'], r['io_floor']['reads_s'], r['io_floor']['writes_s']) / r['compute_s']:.2f}× |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", required=True, help="the lookahead mlperf trace directory (generated when absent)")
    ap.add_argument("--model", choices=sorted(CPU_US), default="mlperf", help="training preset of the trace")
    ap.add_argument("--ssd", default="zn540")
    ap.add_argument("--geometry", choices=("real", "scaled"), default="real")
    ap.add_argument("--iterations", type=int, default=None, help="default: 30000 for mlperf, the preset's else")
    ap.add_argument("--regimes", default=None, help="comma list of regimes to run (default: all four)")
    ap.add_argument("--out", default=None, help="default: experiments/results/regimes_real/<ssd> (mlperf, real), "
                    "else .../<model>-<ssd>-<geometry>")
    ap.add_argument("--suspend", action="store_true", help="every SSD suspends programs and erases for reads, "
                    "as drives do (default --out: .../<ssd>-suspend)")
    ap.add_argument("--zswap-host", dest="exe", default=str(Path(sys.executable).with_name("zswap-host")))
    args = ap.parse_args(argv)
    if args.model == "mlperf" and args.iterations is None:
        args.iterations = 30000
    tag = args.ssd if (args.model, args.geometry) == ("mlperf", "real") else f"{args.model}-{args.ssd}-{args.geometry}"
    out = Path(args.out or f"experiments/results/regimes_real/{tag}" + ("-suspend" if args.suspend else ""))
    out.mkdir(parents=True, exist_ok=True)
    cpu_us = CPU_US[args.model] or calibrated_us(args.model)
    pick = set(args.regimes.split(",")) if args.regimes else None
    rows = [summarise(name, us, what, replay(args.exe, args, name, us, cpu_us, out))
            for name, us, what in regimes(cpu_us) if pick is None or name in pick]
    write_summary(out, rows, table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
