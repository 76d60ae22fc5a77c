"""Where the store's stall goes at accelerator speed, and what GC's scheduling changes of it.

    .venv/bin/python experiments/stall_breakdown.py --trace /tmp/mlperf-la [--runs store-on-zns,store-on-conventional]

The regime table's A100 replay with suspend (experiments/regimes_real_geometry.py: the mlperf
lookahead trace on zn540's real geometry, 0.249 us/sample) of each store run, with its stall's
breakdown on the model's clock (``replay/stall.py``), three ways: the store's defaults;
``--gc-step 0`` (a background GC step relocates a whole victim, its pages read as one queue, instead
of one write unit's); ``--gc-yield-to-reads`` (no background GC after a swap-out, in front of the
step's reads: GC in the compute windows, or in the foreground when a swap-out finds no zone). Each
variant is one ``zswap-host replay`` whose JSON lands in --out; one already there is read, not run
again. Writes ``summary.md`` (the table) beside them.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

US_A100 = 0.248756          # the A100 regime's us/sample, as regimes_real_geometry.py passes it
VARIANTS = (("default", []), ("gc-step-victim", ["--gc-step", "0"]), ("gc-yield", ["--gc-yield-to-reads"]))
PARTS = (("swap-in reads", ("swap_in_reads",)), ("swap-out writes", ("swap_out_writes",)),
         ("GC reads", ("gc_background_read", "gc_foreground_read")),
         ("GC writes", ("gc_background_write", "gc_foreground_write")),
         ("GC resets", ("gc_background_reset", "gc_foreground_reset")),
         ("idle overrun", ("idle_overrun",)), ("hidden by compute", ("hidden_by_compute",)))


def replay(exe: str, trace: str, run: str, variant: str, opts: list[str], out: Path) -> dict:
    stem = f"{run}-a100-suspend" + ("" if variant == "default" else f"-{variant}")
    path = out / f"{stem}.json"
    if not path.exists():
        cmd = [exe, "replay", "--trace", trace, "--runs", run, "--ssd", "zn540", "--geometry", "real",
               "--compute-us-per-sample", f"{US_A100:g}", "--suspend", *opts, "--out", str(out / stem),
               "--json", str(path)]
        print("$", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return json.loads(path.read_text())


def table(rows: list[tuple[str, str, dict]]) -> str:
    head = ["run", "GC", "stall s", *(p for p, _ in PARTS), "of it GC in front of reads",
            "GC foreground s", "store GC GiB", "WAF", "swap-in p99 ms"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for run, variant, r in rows:
        b = r["stall_breakdown"]
        fg = sum(b[k] for k in ("gc_foreground_read", "gc_foreground_write", "gc_foreground_reset"))
        cells = [run, variant, f"{r['stall_s']:.1f}", *(f"{sum(b[k] for k in ks):.1f}" for _, ks in PARTS),
                 f"{b['gc_in_front_of_reads']:.1f}", f"{fg:.1f}", f"{r['store_gc_mib'] / 1024:.1f}",
                 f"{r['write_amplification']:.3f}", f"{r['swap_in_p99_ms']:.1f}"]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", required=True, help="the lookahead mlperf trace directory")
    ap.add_argument("--runs", default="store-on-zns,store-on-conventional")
    ap.add_argument("--out", default="experiments/results/stall_breakdown")
    ap.add_argument("--zswap-host", dest="exe", default=str(Path(sys.executable).with_name("zswap-host")))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for run in args.runs.split(","):
        for variant, opts in VARIANTS:
            rep = replay(args.exe, args.trace, run, variant, opts, out)
            rows.append((run, variant, rep["runs"][0]))
    text = table(rows)
    (out / "summary.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
