"""How the bench's conclusions move with the conventional SSD's geometry: erase block, OP, utilisation.

    .venv/bin/python experiments/geometry_sensitivity.py [--trace /tmp/default-trace] \
        [--out experiments/results/sensitivity]

The bench's own devices are small (the default preset's conventional SSD: 544 MiB usable), so the
emulated FTL scales its erase block down to keep 256 blocks per die (144 KiB instead of thesis-ssd's
real 6 MiB). This replays the default preset's page trace (``zswap-host replay --generate default``,
payload-free: the same swap-ins and swap-outs as the bench's training) through Linux swap (batched),
the store on the conventional SSD and the store on ZNS, on devices that differ in one parameter at a
time from the bench's, and reports per setting the write amplification, the GC bytes and the modeled
stall, and which run wins. Every setting is one committed ``zswap-host replay`` command whose JSON is
kept in ``--out``. A large block on a small device leaves too few blocks per die for GC, so the FTL
is given more raw flash than the OP asks (the table's "effective OP" says how much): the drive's real
geometry needs the drive's capacity, which the payload-free MLPerf-size replay has (docs/results/mlperf-replay.md:
125 GB, 6 MiB blocks), so that run is quoted beside this table, not redone.
(At 1.5 MiB blocks the default trace's 544 MiB SSD has 29 blocks per die and its per-die GC runs out
of blocks: the replay stops, "no die has a free block". A setting whose JSON is in --out is read,
not replayed again.)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from regimes import REGIMES, write_summary
from zswap_host.run_names import current_report

RUNS = ("linux-swap-batched", "store-on-conventional", "store-on-zns")
# (name, option list): the bench's settings, then one parameter moved at a time
SETTINGS = [
    ("erase-48KiB", ["--erase-block", "48KiB"]),
    ("bench", []),
    ("erase-288KiB", ["--erase-block", "288KiB"]),
    ("erase-576KiB", ["--erase-block", "576KiB"]),
    ("op-7", ["--op", "0.07"]),
    ("op-28", ["--op", "0.28"]),
    # the erase block held at the bench's 144 KiB (the scaling rule would move it with the SSD's size)
    ("util-50", ["--utilisation", "0.5", "--erase-block", "144KiB"]),
    ("util-90", ["--utilisation", "0.9", "--erase-block", "144KiB"]),
]


# --real: the drive's own geometry at its scale (the mlperf preset's lookahead trace, 89.5 GiB of
# tables, on zn540 flash; experiments/regimes_real_geometry.py generates it), one parameter moved at a
# time from the real drive's. The conventional SSD's erase block does not change the ZNS device: its
# rows replay Linux and the store on the conventional SSD only.
REAL = ["--ssd", "zn540", "--geometry", "real"]
CONV_RUNS = RUNS[:2]
REAL_SETTINGS = [
    ("erase-192KiB", ["--erase-block", "192KiB"], CONV_RUNS),
    ("erase-1536KiB", ["--erase-block", "1536KiB"], CONV_RUNS),
    ("erase-6MiB", ["--erase-block", "6MiB"], CONV_RUNS),
    ("op-28", ["--op", "0.28"], RUNS),
    ("util-50", ["--utilisation", "0.5"], RUNS),
    ("util-90", ["--utilisation", "0.9"], RUNS),
    # the compute windows to neither GC: how much of a run's WAF its drive's background GC makes
    ("no-idle-gc", ["--no-idle-gc"], RUNS),
    ("real", [], RUNS),                  # last: the regime table's replay of the regime, read from its journal
]
# --regime: the compute charged per sample (experiments/regimes_real_geometry.py's regimes): cpu is the
# trace's own (481 us, mlperf's assumed CPU cost), where prefetch hides every stall; v100/a100 are the
# accelerator regimes, where the stall is the training time
REAL_REGIMES = {"cpu": None, **{name: us for name, us, _ in REGIMES if name in ("v100", "a100")}}


def replay(exe: str, trace: str, name: str, opts: list[str], out: Path, runs=RUNS, journal: bool = False) -> dict:
    path = out / f"{name}.json"
    if path.exists():                    # a setting already replayed (the replay is deterministic)
        return current_report(json.loads(path.read_text()))     # (replayed before a run's rename: its name now)
    cmd = [exe, "replay", "--trace", trace, "--runs", ",".join(runs), *opts, "--json", str(path)]
    if journal:                          # long runs: resumable (a finished run is not run again)
        cmd += ["--out", str(journal if isinstance(journal, Path) else out / name)]
    if not Path(trace).exists():
        cmd[2:2] = ["--generate", "default"]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return json.loads(path.read_text())


def row_of(name: str, opts: list[str], summary: dict, base: str = "(the bench's)") -> dict:
    d = summary["devices"]
    runs = {r["run"]: r for r in summary["runs"]}
    waf = {k: runs[k]["write_amplification"] if k in runs else None for k in RUNS}
    stall = {k: runs[k]["stall_s"] if k in runs else None for k in RUNS}
    return {"setting": name, "options": " ".join(opts) or base,
            "erase_block_kib": d["conventional_erase_block_bytes"] // 1024,
            "effective_op": round(d["conventional_op"], 4),
            "utilisation": round(d["tables_over_conventional_usable"], 3),
            "waf": waf, "stall_s": stall,
            "device_gc_mib": {k: runs[k]["device_gc_mib"] for k in RUNS if k in runs},
            "store_gc_mib": {k: runs[k]["store_gc_mib"] for k in RUNS if k in runs},
            "waf_order": " < ".join(sorted((k for k in RUNS if k in runs), key=waf.get)),
            "store_beats_linux_waf": waf["store-on-conventional"] < waf["linux-swap-batched"],
            "store_beats_linux_stall": stall["store-on-conventional"] < stall["linux-swap-batched"]}


def table(rows: list[dict]) -> str:
    short = {"linux-swap-batched": "Linux", "store-on-conventional": "store/conv", "store-on-zns": "ZNS"}
    out = ["| setting | erase block | effective OP | tables / usable | WAF Linux | WAF store/conv | WAF ZNS "
           "| stall s Linux | stall s store/conv | stall s ZNS | store/conv vs Linux: WAF, stall |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        w, s = r["waf"], r["stall_s"]
        verdict = (f"{'lower' if r['store_beats_linux_waf'] else '**higher**'}, "
                   f"{'lower' if r['store_beats_linux_stall'] else '**higher**'}")
        out.append(f"| {r['options']} | {r['erase_block_kib']:,} KiB | {r['effective_op'] * 100:.1f} % "
                   f"| {r['utilisation'] * 100:.0f} % | "
                   + " | ".join("–" if w[k] is None else f"{w[k]:.3f}" for k in short) + " | "
                   + " | ".join("–" if s[k] is None else f"{s[k]:.2f}" for k in short) + f" | {verdict} |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default="/tmp/default-trace", help="the default preset's trace (generated if absent); "
                    "with --real the mlperf lookahead trace of experiments/regimes_real_geometry.py")
    ap.add_argument("--real", action="store_true", help="zn540's real geometry at MLPerf size (REAL_SETTINGS)")
    ap.add_argument("--regime", choices=sorted(REAL_REGIMES), default="cpu",
                    help="with --real: the compute charged per sample (default: the trace's, cpu); "
                    "results go to OUT/<regime> unless cpu")
    ap.add_argument("--only", default=None, help="comma list: replay only these settings (the table: those done)")
    ap.add_argument("--out", default=None, help="default: experiments/results/sensitivity (--real: sensitivity_real)")
    ap.add_argument("--zswap-host", dest="exe", default=str(Path(sys.executable).with_name("zswap-host")))
    args = ap.parse_args(argv)
    out = Path(args.out or ("experiments/results/sensitivity_real" if args.real else "experiments/results/sensitivity"))
    out.mkdir(parents=True, exist_ok=True)
    if args.real:
        if not Path(args.trace).exists():
            raise SystemExit(f"{args.trace}: no trace; experiments/regimes_real_geometry.py generates it")
        us = REAL_REGIMES[args.regime]
        compute = [] if us is None else ["--compute-us-per-sample", f"{us:.6g}"]
        if us is not None and not args.out:
            out = out / args.regime
            out.mkdir(parents=True, exist_ok=True)
        # the real drive's row is the regime table's replay (same trace, devices and compute): its journal
        same = Path("experiments/results/regimes_real/zn540") / args.regime
        only = set(args.only.split(",")) if args.only else None
        table_json = same.with_suffix(".json")
        if not (out / "real.json").exists() and table_json.exists():    # that replay's report is the row
            (out / "real.json").write_text(table_json.read_text())
        rows = [row_of(name, opts, replay(args.exe, args.trace, name, [*REAL, *opts, *compute], out, runs,
                                          journal=same if name == "real" and same.is_dir() else True),
                       base="(zn540, real geometry)") for name, opts, runs in REAL_SETTINGS
                if only is None or name in only or (out / f"{name}.json").exists()]
    else:
        rows = [row_of(name, opts, replay(args.exe, args.trace, name, opts, out)) for name, opts in SETTINGS]
    write_summary(out, rows, table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
