"""Transparent swap of unmodified code (issue 15): DLRM with plain ``torch.nn.EmbeddingBag`` tables
whose weights the userfaultfd pager adopts, against the bench's module-based training — same
preset, same DRAM budget, same seed, same batches, same devices, same charged compute.

The runs (``--preset quick`` by default: 400 iterations of 256 samples, 103.1 MiB of tables, a 25%
budget = 25.8 MiB):

- ``module …``: the bench's own runs (``bench.runs._swap_run``: ``SwappedEmbeddingBagCollection``,
  its page cache and fused SGD): ``linux-swap`` (ConventionalSwap, one fault at a time, VMA
  readahead), ``linux-swap-batched`` (a step's missing pages read as one queue), ``store-on-zns``
  (the store on emulated ZNS) without lookahead and with the bench's default lookahead of 1.
- ``transparent …``: ``workloads.transparent.train_plain``: facebookresearch/dlrm's model on plain
  ``nn.EmbeddingBag(sparse=True)`` tables + ``torch.optim.SGD``, each table's weight adopted by one
  ``Pager(backend, budget, discard_on_write=DISCARD_DIRTY[run])`` (stream = table), over the same
  backend the bench builds:
  ``linux-swap`` (``bench.plan.linux_swap``, serial faults — the kernel's fault path, which is what a
  pager fault is) on the emulated conventional SSD, and ``store-on-zns`` (SwapStore) on emulated ZNS.
  The pager's budget = the bench's page-cache budget (``Plan.budget_bytes``); the tables take the
  same pages (one region per table, rows never straddle a page: 64 rows of 16 floats per page).
- ``transparent … (fault-around N)`` (``--fault-around N``, repeatable): the same with
  ``Pager(fault_around=N)``: each fault batch also reads up to N of the backend's ``neighbours`` of the
  faulted pages in its ``swap_in`` (the store: pages written next to them in their zone; the Linux
  model: their aligned swap-slot cluster of 2^page_cluster = 8 slots). Read ahead: the pager's
  ``spec_pages_in``; hit ratio: the share of them touched (a fault named them: the sparse SGD step
  writes every row the step looked up, so every page it used) before their eviction.
- ``transparent … (rearm-wp)`` (``--rearm-wp``): the same with ``Pager(rearm_wp=True)`` (the
  CLOCK hand write-protects a dirty page again when it clears its referenced bit, so the next write
  marks it referenced); the runs without the suffix pass ``rearm_wp=False`` (the pager before it).
- DRAM references: the module without a backend (the bench's ``dram-only`` losses), the plain
  model in DRAM with sparse gradients (what the transparent runs must equal bit for bit), and with
  dense gradients (``sparse=False``: equals the module bit for bit — the module's fused SGD is
  torch's dense-gradient SGD).

Stall. The bench's stall (module runs) is the device clock's change across the module's own backend
calls — its demand faults for a step, gathered as one ``swap_in`` per step, and its evictions —
plus the part of a lookahead prefetch the step's compute did not cover, plus GC overrunning an idle
window. The transparent run's stall is the device clock's advance from the start of a step until
the pager is quiet again (``Pager.quiesce``: every fault of the step served and every eviction it
set off written), plus the overrun of the idle window: after each step the backend gets the same
charged compute (``backend.idle(charged_compute_s)``, as the bench's ``on_idle`` with idle GC) as an
idle window. Nothing of the transparent run is overlapped with compute, and its reads come as the
faults come: one page per fault, as torch's kernels touch the rows one after another (with one
torch thread a fault blocks the only thread that could raise the next one), where the module reads a
step's pages as one batch and can prefetch the next step's during compute. That difference is the
finding. Building the tables is not training: adopting them writes their initial values out
through eviction before step 0 (the module creates pages on first touch, without I/O); its device
time and pages are reported apart (``init``), and they make every page the transparent run touches
first a swap-in where the module's first touch is free.

Loss. ``sparse=True`` SGD adds each lookup's gradient to its row one at a time (torch's sparse
``add_``), the module (and ``sparse=False``) adds a row's summed gradient once: a row looked up
twice in a step is rounded differently, so the plain model's losses drift from the module's in the
last bits (the max difference is reported); the transparent runs equal the plain in-DRAM run bit for
bit (the pager changes no value).

Figures. Request counts and sizes are the backend's device request-size histograms (the bench's:
``write_size_histogram`` / ``read_size_histogram``, shares under 32 KiB), GC included; for the
transparent runs the part after the tables were built (the build's own write-outs are the ``init``
row). Pages in / out: the pager's ``pages_in`` / ``pages_out`` per step, the module's faults and
pages written. A page wait is from the moment a backend call asked for the page to its read's
completion (``swap_in_latencies``): a single page at queue depth 1 for the pager, the step's whole
batch for the module, so the two are not the same measure. Stale copies: as the bench's
``discard_dirty`` (``bench.runs.DISCARD_DIRTY``), the pager over the store discards a page's backend
copy on the page's first write (``Pager(discard_on_write=True)``: one batched ``discard`` per resolver
wake-up), and over the Linux model keeps it until the page is written out again (Linux's swap cache
keeps the slot); the pager's ``discards`` / ``discards_skipped`` count them.

The pager's resolver is a thread: which pages an eviction takes depends on how many faults
arrived while it ran, so the transparent runs' I/O counts can move slightly from run to run
(losses cannot).

    python experiments/transparent_dlrm.py [--preset quick] [--iterations N] [--jobs 2] [--out DIR]
                                           [--fault-around N [N ...]]
    python experiments/transparent_dlrm.py --render RESULT.json [--out DIR]   # table and summary only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from zswap_host.bench import BenchSpec, plan
from zswap_host.bench.chain import latency_summary, merge_hist, share_under
from zswap_host.bench.parallel import run_parallel
from zswap_host.bench.plan import backend_factories
from zswap_host.run_names import current_report

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results", "transparent_dlrm")
MODULE_RUNS = {"module linux-swap": ("linux-swap", 0), "module linux-swap-batched": ("linux-swap-batched", 0),
               "module store-on-zns (lookahead 0)": ("store-on-zns", 0),
               "module store-on-zns (lookahead 1)": ("store-on-zns", 1)}
TRANSPARENT_RUNS = {"transparent linux-swap": "linux-swap", "transparent store-on-zns": "store-on-zns"}
CUMULATIVE = ("host_write_bytes", "device_write_bytes", "media_write_bytes", "gc_write_bytes", "write_amplification",
              "write_size_histogram")      # the transparent runs' backend figures with the tables' build
DRAM_RUNS = ("dram module", "dram plain sparse", "dram plain dense")


def transparent_runs(fault_around=(), rearm_wp=False, announce=False) -> dict[str, tuple[str, int, bool, bool]]:
    """Transparent run name -> (backend run, fault_around, rearm_wp, announce): the two without
    read-ahead, then each backend with each ``fault_around`` value, (``rearm_wp``) with
    ``Pager(rearm_wp=True)`` and (``announce``) with each step's rows announced
    (``Pager.prefetch(..., make_room=True)``), next to each other."""
    out = {}
    for name, run in TRANSPARENT_RUNS.items():
        out[name] = (run, 0, False, False)
        for n in fault_around:
            out[f"{name} (fault-around {n})"] = (run, int(n), False, False)
        if rearm_wp:
            out[f"{name} (rearm-wp)"] = (run, 0, True, False)
        if announce:
            out[f"{name} (announced)"] = (run, 0, False, True)
    return out


def order(fault_around=(), rearm_wp=False, announce=False) -> tuple[str, ...]:
    return (*DRAM_RUNS, *transparent_runs(fault_around, rearm_wp, announce), *MODULE_RUNS)   # the slow runs first


def transparent_names(runs: dict) -> list[str]:
    return [n for n in runs if n.startswith("transparent")]


def _spec(a, lookahead: int = 1) -> BenchSpec:
    return BenchSpec(preset=a["preset"], iterations=a["iterations"], seed=a["seed"], lookahead=lookahead)


def backend_block(backend, dev) -> dict:
    """The bench's backend figures (``bench.runs._swap_run``): flushed, then stats, request sizes
    (shares under 32 KiB), page waits."""
    backend.flush()
    s = backend.stats().as_dict()
    s["write_requests_under_32k_share"] = share_under(s["write_size_histogram"])
    s["read_requests_under_32k_share"] = share_under(s["read_size_histogram"])
    s["requests_under_32k_share"] = share_under(merge_hist(s["write_size_histogram"], s["read_size_histogram"]))
    s["device"] = dev.describe().get("url")
    s.update(latency_summary(backend.swap_in_latencies()))
    return s


def since(end: dict, start: dict) -> dict:
    """The training's share of a backend's cumulative figures: byte counters and request-size
    histograms minus what they were after the tables were built."""
    out = dict(end)
    for k in ("host_write_bytes", "host_read_bytes", "device_write_bytes", "device_read_bytes", "gc_write_bytes",
              "device_gc_write_bytes", "media_write_bytes", "discard_bytes"):
        if k in end and k in start:
            out[k] = end[k] - start[k]
    for k in ("write_size_histogram", "read_size_histogram"):
        h = {s: v - start[k].get(s, 0) for s, v in end[k].items()}
        out[k] = {s: v for s, v in h.items() if v}
    hw = out["host_write_bytes"]
    out["write_amplification"] = out["media_write_bytes"] / hw if hw else 1.0
    out["host_write_amplification"] = out["device_write_bytes"] / hw if hw else 1.0
    out["write_requests_under_32k_share"] = share_under(out["write_size_histogram"])
    out["read_requests_under_32k_share"] = share_under(out["read_size_histogram"])
    out["requests_under_32k_share"] = share_under(merge_hist(out["write_size_histogram"], out["read_size_histogram"]))
    return out


def run_one(name: str, a: dict, progress=None) -> dict:
    """One run by name (a worker's job)."""
    import torch

    from zswap_host.bench.runs import DISCARD_DIRTY, _swap_run
    from zswap_host.torch.training import train
    from zswap_host.workloads.transparent import train_plain

    torch.set_num_threads(1)
    t0 = time.monotonic()
    tell = (lambda d, t: progress(name, d, t)) if progress else None
    pl = plan(_spec(a))
    n, bs, seed = pl.iterations, pl.batch_size, a["seed"]
    charged = np.full(n, pl.compute.us_per_sample * 1e-6 * bs)
    if name == "dram module":
        r = train(pl.model, pl.data, None, 1.0, n, bs, seed, progress=tell)
        rec = {"loss": r.loss.tolist()}
    elif name.startswith("dram plain"):
        r = train_plain(pl.model, pl.data, n, bs, seed, sparse=name.endswith("sparse"), progress=tell)
        rec = {"loss": r.loss.tolist()}
    elif name in MODULE_RUNS:
        run, la = MODULE_RUNS[name]
        spec = _spec(a, la)
        rec, _ = _swap_run(run, plan(spec), spec, charged,
                           (lambda _, d, t: progress(name, d, t)) if progress else None)
        rec = {k: v for k, v in rec.items() if k not in ("per_iteration_s", "device_write_bytes_cumulative",
                                                          "media_write_bytes_cumulative")}
        rec["pages_in"] = int(sum(rec.pop("pages_in_per_iteration")))
        rec["pages_out"] = int(sum(rec.pop("pages_out_per_iteration")))
    else:
        run, fault_around, rearm_wp, announce = transparent_runs(a.get("fault_around", ()), a.get("rearm_wp", False),
                                                                 a.get("announce", False))[name]
        spec = _spec(a, 0)
        backend, dev = backend_factories(pl, spec)[run]()
        r = train_plain(pl.model, pl.data, n, bs, seed, backend=backend, budget_bytes=pl.budget_bytes,
                        clock=dev.now, on_idle=backend.idle, charged_compute_s=charged, progress=tell,
                        on_start=lambda: backend.stats().as_dict(), on_end=lambda: backend_block(backend, dev),
                        discard_on_write=DISCARD_DIRTY[run], fault_around=fault_around,
                        rearm_wp=rearm_wp, announce=announce)
        backend.close()
        dev.close()
        stall = r.io_stall_s
        trained = since(r.end, r.start)
        rec = {**{f"backend_{k}" if k in ("faults",) else k: v for k, v in trained.items()},
               "backend_cumulative": {k: r.end[k] for k in CUMULATIVE if k in r.end},
               "name": run, "clock": "modeled", "train_time_s": r.train_time_s,
               "compute_time_s": float(r.charged_s.sum()), "io_stall_time_s": r.io_stall_time_s,
               "step_stall_p50_s": float(np.percentile(stall, 50)), "step_stall_p99_s": float(np.percentile(stall, 99)),
               "iterations": n, "io_stall_per_iteration_s": stall.tolist(), "loss": r.loss.tolist(),
               "pages_in": int(r.pages_in.sum()), "pages_out": int(r.pages_out.sum()), "faults": int(r.faults.sum()),
               "init_io_s": r.init_io_s, "init_pages_out": r.init_pages_out, "pager": r.pager,
               "budget_bytes": r.budget_bytes, "table_bytes": r.table_bytes, "fault_around": fault_around,
               "rearm_wp": rearm_wp, "announce": announce,
               "step_wall_s": float(r.step_wall_s.sum())}
        rec["swap_in_bytes"], rec["swap_out_bytes"] = rec["host_read_bytes"], rec["host_write_bytes"]
    rec["run_wall_s"] = round(time.monotonic() - t0, 1)
    return rec


def requests(hist: dict) -> tuple[int, float]:
    """(requests, mean size in KiB) of a size histogram."""
    n = sum(hist.values())
    return n, (sum(int(k) * v for k, v in hist.items()) / n / 1024 if n else 0.0)


def table(runs: dict) -> str:
    """The side-by-side table (markdown) of the swap runs."""
    names = [*transparent_names(runs), *MODULE_RUNS]
    ref = np.array(runs["dram module"]["loss"])
    plain = np.array(runs["dram plain sparse"]["loss"])

    def col(name: str) -> dict:
        r = runs[name]
        loss = np.array(r["loss"])
        w, wkib = requests(r["write_size_histogram"])
        rd, rkib = requests(r["read_size_histogram"])
        transparent = name.startswith("transparent")
        same = plain if transparent else ref
        pg = r.get("pager", {})
        return {
            "losses": ("= plain DRAM (bit for bit)" if np.array_equal(loss, same) else
                       f"≠ plain DRAM (max {np.abs(loss - same).max():.1e})") if transparent else
                      ("= DRAM-only (bit for bit)" if np.array_equal(loss, same) else
                       f"≠ DRAM-only (max {np.abs(loss - same).max():.1e})"),
            "max abs loss diff vs module DRAM-only (mean loss)": f"{np.abs(loss - ref).max():.1e} ({loss.mean():.6f})",
            "modeled I/O stall (s)": f"{r['io_stall_time_s']:.2f}",
            "training time (s) = compute + stall": f"{r['train_time_s']:.2f}",
            "step stall p50 / p99 (ms)": f"{1e3 * r['step_stall_p50_s']:.2f} / {1e3 * r['step_stall_p99_s']:.2f}",
            "pages in / out (training)": f"{r['pages_in']:,} / {r['pages_out']:,}",
            "stale copies discarded on first write": f"{r['pager'].get('discards', 0):,}" if transparent
            else f"{r['paging']['discards']:,}",
            "pages created on first touch, no I/O": "0 (all written at build)" if transparent
            else f"{r['paging']['first_touch']:,}",
            "faults (missing + write-protect)": f"{r['faults']:,}" if transparent else "—",
            "swap_in calls (pager: fetch batches)": f"{r['pager']['fetch_batches']:,}" if transparent
            else f"{r['paging']['swap_in_calls']:,}",
            "fault-around: pages read ahead, hit ratio": (
                f"{pg.get('spec_pages_in', 0):,}, {pg.get('readahead_hit_ratio', 0.0):.0%}"
                if transparent and r.get("fault_around") else "—"),
            "announced: pages read ahead, hit ratio": (
                f"{pg.get('spec_pages_in', 0):,}, {pg.get('readahead_hit_ratio', 0.0):.0%}"
                if transparent and r.get("announce") else "—"),
            "rearm_wp: re-arms, writes that hit one": (f"{pg.get('rearms', 0):,}, {pg.get('rearm_faults', 0):,}"
                                                       if transparent and r.get("rearm_wp") else "—"),
            "device write requests, mean KiB": f"{w:,}, {wkib:.1f}",
            "device read requests, mean KiB": f"{rd:,}, {rkib:.1f}",
            "requests < 32 KiB (write / read / all)": f"{100 * r['write_requests_under_32k_share']:.0f}% / "
                                                       f"{100 * r['read_requests_under_32k_share']:.0f}% / "
                                                       f"{100 * r['requests_under_32k_share']:.0f}%",
            "device write MiB, write amplification": f"{r['device_write_bytes'] / 2**20:.0f}, "
                                                    f"{r['write_amplification']:.2f}",
            "store GC MiB written": f"{r.get('gc_write_bytes', 0) / 2**20:.0f}",
            "page wait p50 / p99 (µs)": f"{1e6 * r['page_wait_p50_s']:.0f} / {1e6 * r['page_wait_p99_s']:.0f}",
            "init: pages written, device s": f"{r['init_pages_out']:,}, {r['init_io_s']:.2f}" if transparent else "—",
            "wall time of the run (s)": f"{r['run_wall_s']:.0f}",
        }

    cols = {n: col(n) for n in names if n in runs}
    rows = list(next(iter(cols.values())))
    out = ["| | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    out += [f"| {k} | " + " | ".join(c[k] for c in cols.values()) + " |" for k in rows]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="quick")
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2, help="runs at once (spawned workers; results do not depend on it)")
    ap.add_argument("--fault-around", type=int, nargs="+", default=[], metavar="N",
                    help="also run each transparent run with Pager(fault_around=N), for each N")
    ap.add_argument("--rearm-wp", action="store_true",
                    help="also run each transparent run with Pager(rearm_wp=True) (CLOCK re-arms write "
                         "protection on dirty pages)")
    ap.add_argument("--announce", action="store_true",
                    help="also run each transparent run with each step's rows announced before it "
                         "(Pager.prefetch(weight, rows, make_room=True))")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--render", metavar="JSON", help="only rewrite the JSON's summary and table and the README "
                    "from an existing result file (into --out)")
    args = ap.parse_args()
    if args.render:
        with open(args.render) as f:
            report = current_report(json.load(f))      # a result from before a run's rename: its name now
        for k in ("summary", "table_markdown", "losses", "transparent_vs_module"):
            report.pop(k, None)
        render(report, args.out)
        return
    if any(n < 1 for n in args.fault_around):
        ap.error("--fault-around values must be >= 1")
    a = {"preset": args.preset, "iterations": args.iterations, "seed": args.seed,
         "fault_around": tuple(args.fault_around), "rearm_wp": args.rearm_wp, "announce": args.announce}
    pl = plan(_spec(a))
    cmd = (f"python experiments/transparent_dlrm.py --preset {args.preset}"
           + (f" --iterations {args.iterations}" if args.iterations else "") + f" --seed {args.seed}"
           + f" --jobs {args.jobs}"
           + (f" --fault-around {' '.join(map(str, args.fault_around))}" if args.fault_around else "")
           + (" --rearm-wp" if args.rearm_wp else "") + (" --announce" if args.announce else "")
           + f" --out {os.path.relpath(args.out)}")
    print(f"{cmd}\n{pl.iterations} iterations of {pl.batch_size}, tables {pl.table_bytes / 2**20:.1f} MiB, "
          f"budget {pl.budget_bytes / 2**20:.1f} MiB ({pl.budget_pages} pages)", flush=True)
    t0 = time.monotonic()
    last: dict = {}

    def progress(name: str, done: int, total: int) -> None:
        if done == total or done - last.get(name, 0) >= max(1, total // 5):
            last[name] = done
            print(f"  {name}: {done}/{total} ({time.monotonic() - t0:.0f} s)", flush=True)

    names = order(args.fault_around, args.rearm_wp, args.announce)
    runs = run_parallel(run_one, list(names), (a,), args.jobs, progress)
    wall = time.monotonic() - t0
    for n in names:
        print(f"{n}: {runs[n]['run_wall_s']} s" + (f", stall {runs[n]['io_stall_time_s']:.2f} s"
                                                   if "io_stall_time_s" in runs[n] else ""))
    runs = {n: runs[n] for n in names}
    report = {"command": cmd, "preset": pl.preset.name, "iterations": pl.iterations, "batch_size": pl.batch_size,
              "seed": args.seed, "table_bytes": pl.table_bytes, "budget_bytes": pl.budget_bytes,
              "budget_pages": pl.budget_pages, "compute": pl.compute.as_dict(),
              "devices": {"baseline": pl.baseline_url, "zns": pl.zns_url},
              "wall_s": round(wall, 1), "jobs": args.jobs, "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
              "runs": runs}
    render(report, args.out)


def summary(runs: dict) -> dict:
    """The losses' checks and the transparent runs against the module's (ratios of the table's figures)."""
    ref = np.array(runs["dram module"]["loss"])
    plain = np.array(runs["dram plain sparse"]["loss"])
    losses = {"dense_plain_equals_module": bool(np.array_equal(np.array(runs["dram plain dense"]["loss"]), ref)),
              "sparse_plain_max_abs_diff_vs_module": float(np.abs(plain - ref).max()),
              "sparse_plain_steps_equal_module": int((plain == ref).sum()),
              "transparent_equal_plain_sparse": {n: bool(np.array_equal(np.array(runs[n]["loss"]), plain))
                                                 for n in transparent_names(runs)},
              "module_runs_equal_dram_module": {n: bool(np.array_equal(np.array(runs[n]["loss"]), ref))
                                                for n in MODULE_RUNS}}
    vs = {}
    for t in transparent_names(runs):
        m = "module store-on-zns (lookahead 0)" if "store-on-zns" in t else "module linux-swap"
        a, b = runs[t], runs[m]
        vs[f"{t} / {m}"] = {k: (a[k] / b[k] if b[k] else None)
                            for k in ("io_stall_time_s", "train_time_s", "pages_in", "pages_out", "device_write_bytes")}
        vs[f"{t} / {m}"]["stall_per_page_in_us"] = [1e6 * a["io_stall_time_s"] / a["pages_in"],
                                                   1e6 * b["io_stall_time_s"] / b["pages_in"]]
    return {"losses": losses, "transparent_vs_module": vs}


def render(report: dict, out: str) -> None:
    """Write the JSON (with the summary and the table) and the README of a report."""
    runs = report["runs"]
    report.update(summary(runs))
    md = report["table_markdown"] = table(runs)
    check = report["losses"]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "transparent_dlrm.json"), "w") as f:
        json.dump(report, f, indent=1)
    mib = 2 ** 20
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(f"# Transparent DLRM (issue 15): plain EmbeddingBag through the pager vs the bench's module\n\n"
                f"`{report['command']}` ({report['wall_s']:.0f} s wall on {report['machine']}; "
                f"{report['iterations']} iterations of {report['batch_size']}, {report['table_bytes'] / mib:.1f} MiB "
                f"of tables, DRAM budget {report['budget_bytes'] / mib:.1f} MiB; charged compute "
                f"{report['compute']['us_per_sample']} µs/sample). Definitions: the script's docstring.\n\n{md}\n\n"
                f"Losses: plain `sparse=False` in DRAM = module bit for bit: {check['dense_plain_equals_module']}; "
                f"plain `sparse=True` vs module: max |Δ| {check['sparse_plain_max_abs_diff_vs_module']:.1e} "
                f"(torch's sparse SGD adds a row's lookups one at a time); transparent = plain `sparse=True` "
                f"in DRAM bit for bit: {check['transparent_equal_plain_sparse']}.\n")
        fa = [n for n in transparent_names(runs) if runs[n].get("fault_around")]
        if fa:
            f.write("\nFault-around (stall, pages read, against the same backend without it): " + "; ".join(
                f"{n}: {runs[n]['io_stall_time_s'] / runs[n.split(' (')[0]]['io_stall_time_s']:.2f}x, "
                f"{runs[n]['pages_in'] / runs[n.split(' (')[0]]['pages_in']:.2f}x, hit ratio "
                f"{runs[n]['pager']['readahead_hit_ratio']:.1%}" for n in fa) + ".\n")
    print(md)
    print(f"wrote {out}/transparent_dlrm.json, README.md")

if __name__ == "__main__":
    main()
