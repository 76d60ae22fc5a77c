"""A bench preset's DLRM page trace — up to the MLPerf tables (~96 GB at dim 128) — replayed through
the swap backends on payload-free emulated SSDs (``payload=0``: zone state, FTL and timing, a
fingerprint word per page, no page bytes), so a working set far beyond this machine's RAM replays in
a few GB.

1. The trace: generated without torch or tables (``workloads.generate_dlrm_trace``: the preset's
   synthetic Criteo batches through the bench's page cache at the DRAM budget, the store runs'
   discards), in chunks on disk (``--trace DIR``; reused when it is there with the same parameters).
2. Each run (``--runs``: the bench's names, and the store on the FDP and Open-Channel SSDs of the same
   flash, ``store-on-fdp`` / ``store-on-ocssd``) replays it on fresh devices sized as the bench sizes
   them (``bench.plan``: same flash), every swap-in verified against its fingerprint. Linux-swap runs
   replay it without the discards, as their bench runs issue none. The runs, their replay and the
   resumable record are ``zswap_host.replay``'s (``zswap-host replay`` is the same replay as a command).
3. Output: ``OUT/runs-PRESET-BUDGET.jsonl``, one line per finished run — resumable: a run already there is not
   run again (``--restart``: all again) — and ``OUT/mlperf_replay-PRESET-BUDGET-Nit.json`` with the trace's counts,
   the command, and per run: modeled stall (replay time minus the compute windows), write
   amplification, GC, swap-in p99, wall time, pages/s, CPU time and pages per CPU second (less moved
   by other load on the machine than wall time), and the run's peak RSS (its own process).

Progress: one line per trace chunk on stderr (pages done, pages/s). Bad input: one line, exit 2.

    python experiments/mlperf_replay.py [--preset mlperf] [--budget 10%] [--iterations N]
        [--compute-us-per-sample US] [--runs store-on-zns,...] [--trace DIR] [--out DIR] [--restart] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from zswap_host.replay import DEFAULT_RUNS, ReplayError, ReplaySpec, ensure_trace, run_replay

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "mlperf_replay")


def fail(msg: str) -> None:
    print(f"mlperf_replay: {msg}", file=sys.stderr)
    sys.exit(2)


def progress(name: str, done: int, total: int, chunk: int, chunks: int, wall: float) -> None:
    if chunk:
        print(f"[{name}] chunk {chunk}/{chunks}: {done:,}/{total:,} pages, {done / max(wall, 1e-9):,.0f} pages/s, "
              f"{wall:.0f} s", file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="mlperf")
    ap.add_argument("--budget", default="10%")
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--compute-us-per-sample", type=float, default=None,
                    help="charged compute per sample (the idle windows); default: the preset's calibration")
    ap.add_argument("--utilisation", type=float, default=None, help="tables / usable bytes (default: the bench's)")
    ap.add_argument("--runs", default=",".join(DEFAULT_RUNS))
    ap.add_argument("--trace", default=None, help="chunked trace directory (default OUT/trace-BUDGET, not committed)")
    ap.add_argument("--out", default=RESULTS)
    ap.add_argument("--restart", action="store_true", help="run every run again (default: resume)")
    ap.add_argument("--json", action="store_true", help="print the result JSON on stdout")
    a = ap.parse_args()
    from zswap_host.errors import ZswapError

    runs = tuple(r.strip() for r in a.runs.split(",") if r.strip())
    tag = a.budget.replace("%", "pct")
    a.trace = a.trace or os.path.join(a.out, f"trace-{a.preset}-{tag}" + (f"-{a.iterations}" if a.iterations else ""))
    cmd = "python experiments/mlperf_replay.py " + " ".join(sys.argv[1:])
    jl = os.path.join(a.out, f"runs-{a.preset}-{tag}.jsonl")

    def on_row(row: dict, resumed: bool) -> None:
        if resumed:
            print(f"[{row['run']}] done before (resumed from {jl})", file=sys.stderr)
        else:
            print(f"[{row['run']}] stall {row['stall_s']:.2f} s, WAF {row['write_amplification']:.3f}, "
                  f"{row['pages_per_s']:,} pages/s, peak RSS {row['peak_rss_mib']:.0f} MiB", file=sys.stderr, flush=True)

    try:
        from zswap_host.replay import check_runs

        check_runs(runs)
        t0 = time.monotonic()
        ensure_trace(a.trace, a.preset, budget=a.budget, iterations=a.iterations,
                     us_per_sample=a.compute_us_per_sample,
                     progress=lambda d, n: print(f"[trace] {d}/{n} iterations, {time.monotonic() - t0:.0f} s",
                                                 file=sys.stderr, flush=True))
        os.makedirs(a.out, exist_ok=True)
        from zswap_host.workloads import ChunkedTrace

        tr = ChunkedTrace(a.trace)
        key = {"preset": a.preset, "budget": a.budget, "iterations": tr.meta["iterations"],
               "us_per_sample": float(tr.meta["us_per_sample"]), "utilisation": a.utilisation}
        res = run_replay(ReplaySpec(trace=a.trace, runs=runs, utilisation=a.utilisation, journal=jl, key=key,
                                    restart=a.restart), progress, on_row)
    except (ReplayError, ZswapError) as e:
        fail(str(e))
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    where = os.path.abspath(a.trace)        # a trace outside the checkout (not committed): its full path
    if os.path.commonpath([where, repo]) == repo:
        where = os.path.relpath(where, repo)
    out = {"command": cmd, "trace": {"dir": where, **tr.counts(),
                                     **{k: tr.meta[k] for k in ("preset", "iterations", "batch_size", "budget",
                                                                 "budget_pages", "total_pages", "us_per_sample",
                                                                 "generate_wall_s")},
                                     "paging": tr.meta["paging"]},
           "wall_s_this_invocation": round(time.monotonic() - t0, 1), "runs": res["runs"]}
    with open(os.path.join(a.out, f"mlperf_replay-{a.preset}-{tag}-{tr.meta['iterations']}it.json"), "w") as f:
        json.dump(out, f, indent=1)
    if a.json:
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
