"""A bench preset's DLRM page trace — up to the MLPerf tables (~96 GB at dim 128) — replayed through
the swap backends on payload-free emulated SSDs (``payload=0``: zone state, FTL and timing, a
fingerprint word per page, no page bytes), so a working set far beyond this machine's RAM replays in
a few GB.

1. The trace: generated without torch or tables (``workloads.generate_dlrm_trace``: the preset's
   synthetic Criteo batches through the bench's page cache at the DRAM budget, the store runs'
   discards), in chunks on disk (``--trace DIR``; reused when it is there with the same parameters).
2. Each run (``--runs``, the bench's names) replays it on fresh devices sized as the bench sizes them
   (``bench.plan``: same flash), every swap-in verified against its fingerprint. Linux-swap runs
   replay it without the discards, as their bench runs issue none.
3. Output: ``OUT/runs.jsonl``, one line per finished run — resumable: a run already there is not
   run again (``--restart``: all again) — and ``OUT/mlperf_replay.json`` with the trace's counts,
   the command, and per run: modeled stall (replay time minus the compute windows), write
   amplification, GC, swap-in p99, wall time, pages/s, CPU time and pages per CPU second (less moved
   by other load on the machine than wall time), and the run's peak RSS (its own process).

Progress: one line per trace chunk on stderr (pages done, pages/s). Bad input: one line, exit 2.

    python experiments/mlperf_replay.py [--preset mlperf] [--budget 10%] [--iterations N]
        [--compute-us-per-sample US] [--runs zns-host-gc,...] [--trace DIR] [--out DIR] [--restart] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from concurrent.futures import ProcessPoolExecutor

DEFAULT_RUNS = ("linux-swap-batched", "store-on-conventional", "zns-host-gc")
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "mlperf_replay")


def payload_free(url: str) -> str:
    return url + ("&" if "?" in url else "?") + "payload=0"


def make_run(name: str, pl, budget_pages: int, id_space: int = 0):
    """(backend, device clock, device) of a bench run on payload-free devices."""
    from zswap_host.bench.plan import READ_QD, linux_swap
    from zswap_host.devices import open_device, placement_units
    from zswap_host.store import StoreConfig, SwapStore

    if name.startswith("linux"):
        dev = open_device(payload_free(pl.baseline_url), zoned=False)
        return linux_swap(dev, budget_pages, "serial" if name == "linux-swap" else "batched", id_space=id_space), dev.now, dev
    url = pl.baseline_url if name == "store-on-conventional" else pl.zns_url
    units = placement_units(open_device(payload_free(url), zoned=None), pl.zone_size, pl.zone_capacity)
    return SwapStore(units, StoreConfig(read_qd=READ_QD, id_space=id_space)), units.now, units


def run_one(task: tuple) -> dict:
    """Replay the chunked trace through one run; in a process of its own (its peak RSS is the run's)."""
    from zswap_host.bench import BenchSpec, plan
    from zswap_host.bench.compute import ComputeBasis
    from zswap_host.workloads import ChunkedTrace, replay
    from zswap_host.workloads.page_words import PageVersions
    from zswap_host.workloads.trace import DISCARD

    name, trace_dir, preset, budget, us, utilisation = task
    tr = ChunkedTrace(trace_dir)
    m = tr.meta
    pl = plan(BenchSpec(preset=preset, budget=budget, lookahead=0, utilisation=utilisation,
                        iterations=m["iterations"], batch_size=m["batch_size"],
                        compute=ComputeBasis("pinned", us, 1, "given")))
    backend, clock, dev = make_run(name, pl, int(m["budget_pages"]), int(m["total_pages"]))
    vers = PageVersions(int(m["total_pages"]))
    total = tr.counts()
    pages_total = total["swap_in_pages"] + total["swap_out_pages"]
    wall0, cpu0, t0, done, idle = time.monotonic(), time.process_time(), clock(), 0, 0.0
    for i, chunk in enumerate(tr):
        if name.startswith("linux"):
            chunk = chunk.without(DISCARD)
        replay(backend, chunk, verify=True, clock=clock, versions=vers)
        c = chunk.counts()
        done += c["swap_in_pages"] + c["swap_out_pages"]
        idle += c["idle_s"]
        w = time.monotonic() - wall0
        print(f"[{name}] chunk {i + 1}/{len(tr)}: {done:,}/{pages_total:,} pages, {done / max(w, 1e-9):,.0f} pages/s, "
              f"{w:.0f} s", file=sys.stderr, flush=True)
    backend.flush()                     # the end of training, as the bench ends it
    wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
    s = backend.stats()
    row = {"run": name, "stall_s": round(clock() - t0 - idle, 4) or 0.0, "write_amplification": round(s.write_amplification, 4),
           "store_gc_mib": round(s.gc_write_bytes / 2**20, 1),
           "device_gc_mib": round(s.device_gc_write_bytes / 2**20, 1),
           "swap_in_p99_ms": round(s.swap_in_latency_p99_s * 1e3, 3), "compute_s": round(idle, 3),
           "pages": pages_total, "wall_s": round(wall, 1), "pages_per_s": round(pages_total / max(wall, 1e-9)),
           "cpu_s": round(cpu, 1), "pages_per_cpu_s": round(pages_total / max(cpu, 1e-9)),
           "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
           "devices": pl.devices}
    backend.close()
    dev.close()
    return row


def fail(msg: str) -> None:
    print(f"mlperf_replay: {msg}", file=sys.stderr)
    sys.exit(2)


def ensure_trace(a) -> str:
    """The trace directory for these parameters, generated unless it is there already."""
    from zswap_host.workloads import ChunkedTrace, TraceFileError, generate_dlrm_trace

    want = {"preset": a.preset, "budget": a.budget, "iterations": a.iterations, "us_per_sample": a.compute_us_per_sample}
    try:
        tr = ChunkedTrace(a.trace)
        if all(v is None or str(tr.meta.get(k)) == str(v) for k, v in want.items()):
            return a.trace
    except TraceFileError:
        pass
    t0 = time.monotonic()
    tr = generate_dlrm_trace(a.trace, a.preset, budget=a.budget, iterations=a.iterations,
                             us_per_sample=a.compute_us_per_sample,
                             progress=lambda d, n: print(f"[trace] {d}/{n} iterations, {time.monotonic() - t0:.0f} s",
                                                         file=sys.stderr, flush=True))
    return a.trace


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
    from zswap_host.bench.plan import SWAP_RUNS
    from zswap_host.errors import ZswapError

    runs = [r.strip() for r in a.runs.split(",") if r.strip()]
    bad = [r for r in runs if r not in SWAP_RUNS or r == "linux-swap-lookahead"]
    if bad or not runs:
        fail(f"unknown run {bad[0] if bad else '(none)'!r}; known: {', '.join(r for r in SWAP_RUNS if r != 'linux-swap-lookahead')}")
    tag = a.budget.replace("%", "pct")
    a.trace = a.trace or os.path.join(a.out, f"trace-{a.preset}-{tag}" + (f"-{a.iterations}" if a.iterations else ""))
    cmd = "python experiments/mlperf_replay.py " + " ".join(sys.argv[1:])
    try:
        os.makedirs(a.out, exist_ok=True)
        t0 = time.monotonic()
        ensure_trace(a)
        from zswap_host.workloads import ChunkedTrace

        tr = ChunkedTrace(a.trace)
        us = float(tr.meta["us_per_sample"])
        key = {"preset": a.preset, "budget": a.budget, "iterations": tr.meta["iterations"], "us_per_sample": us,
               "utilisation": a.utilisation}
        jl = os.path.join(a.out, f"runs-{a.preset}-{tag}.jsonl")
        done = {}
        if os.path.exists(jl) and not a.restart:
            with open(jl) as f:
                for line in f:
                    r = json.loads(line)
                    if r.get("key") == key:
                        done[r["run"]] = r
        elif a.restart and os.path.exists(jl):
            os.remove(jl)
        todo = [r for r in runs if r not in done]
        for r in runs:
            if r in done:
                print(f"[{r}] done before (resumed from {jl})", file=sys.stderr)
        with ProcessPoolExecutor(1, max_tasks_per_child=1) as pool:
            for name in todo:
                row = pool.submit(run_one, (name, a.trace, a.preset, a.budget, us, a.utilisation)).result()
                row["key"] = key
                with open(jl, "a") as f:
                    f.write(json.dumps(row) + "\n")
                done[name] = row
                print(f"[{name}] stall {row['stall_s']:.2f} s, WAF {row['write_amplification']:.3f}, "
                      f"{row['pages_per_s']:,} pages/s, peak RSS {row['peak_rss_mib']:.0f} MiB", file=sys.stderr, flush=True)
    except ZswapError as e:
        fail(str(e))
    out = {"command": cmd, "trace": {"dir": os.path.relpath(a.trace), **tr.counts(),
                                     **{k: tr.meta[k] for k in ("preset", "iterations", "batch_size", "budget",
                                                                 "budget_pages", "total_pages", "us_per_sample",
                                                                 "generate_wall_s")},
                                     "paging": tr.meta["paging"]},
           "wall_s_this_invocation": round(time.monotonic() - t0, 1), "runs": [done[r] for r in runs]}
    with open(os.path.join(a.out, f"mlperf_replay-{a.preset}-{tag}-{tr.meta['iterations']}it.json"), "w") as f:
        json.dump(out, f, indent=1)
    if a.json:
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
