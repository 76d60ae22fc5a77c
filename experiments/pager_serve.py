"""The pager's backend served by a thread of the process (``Pager(backend, ...)``) against one served
from a process of its own (``Pager.process(factory, ...)``), side by side in one run (issue 33):
random 4 KiB paging on the in-memory emulated ZNS store with the timing model off (``preset=none``).

Each round builds a fresh store and pager (an int64 array of ``--size-mib`` under ``--budget-mib``),
fills it (most of it goes to the store), then for ``--seconds`` runs ``examples/pager_numpy.py``'s loop
— batches of 4,096 random read-modify-writes ``a[idx] = a[idx] + 1``, numpy calls that release the
GIL, so both modes can run them — from each of ``--threads`` counts (each thread its own elements).
Rounds alternate the modes (thread, process, thread, ...), so machine load drifts over both alike; the
ratio reported is the median of the per-pair ratios. Reported per round: faults/s (missing +
write-protect), MB/s of paging (pages in + out, 4 KiB), CPU µs per fault (user + system time of this
process, all its threads, plus the backend process's in the process mode, over the faults: less
sensitive to other jobs' load than wall-clock rates), and the mean pages per backend call
(pages_in / fetch_batches: ``swap_in``; pages_out / evict_batches: ``swap_out``, one stream). The sum
of the array is checked after each round.

``--batched``: also ``--rounds`` pairs of one-thread rounds in the thread mode, each batch touched as
is against each batch announced first with ``Pager.prefetch(a, idx, make_room=True)`` (read in
``swap_in`` calls of many pages before the loop touches them), alternating; the ratio of paging rates
is the median of the pair ratios.

``--scalar``: also a loop only the process mode can run — ``a[i] += 1`` for random ``i`` in a
Python loop (it holds the GIL while it faults; the thread mode deadlocks on it), reported for the
process mode alone.

    python experiments/pager_serve.py [--size-mib 256] [--budget-mib 64] [--seconds 20] [--rounds 2]
                                      [--threads 1 4] [--batched] [--scalar] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import statistics
import sys
import threading
import time

import numpy as np

from zswap_host import SwapStore, open_device
from zswap_host.pager import Pager

URL = "emu://?zones=96&zone_size=4MiB&preset=none"
BATCH = 4096


def make_store(url: str) -> SwapStore:
    """The backend factory (module level: the backend process unpickles it)."""
    return SwapStore(open_device(url))


def open_pager(mode: str, url: str, budget: int) -> Pager:
    if mode == "thread":
        return Pager(make_store(url), budget)
    return Pager.process(functools.partial(make_store, url), budget)


def fill(a: np.ndarray) -> None:
    for lo in range(0, a.size, 1 << 17):  # 1 MiB at a time
        a[lo:lo + (1 << 17)] = np.arange(lo, min(lo + (1 << 17), a.size))


def rmw(a: np.ndarray, nthreads: int, seconds: float, seed: int, pager: Pager | None = None) -> int:
    """``nthreads`` threads of batches of random read-modify-writes for ``seconds``; the increments made.
    ``pager``: each batch is announced first (``pager.prefetch(a, idx, make_room=True)``)."""
    made = [0] * nthreads
    end = time.perf_counter() + seconds

    def work(t: int) -> None:
        rng = np.random.default_rng(seed + t)
        n = (a.size - t + nthreads - 1) // nthreads
        while time.perf_counter() < end:
            idx = np.unique(rng.integers(0, n, BATCH)) * nthreads + t  # thread t's elements only
            if pager is not None:
                pager.prefetch(a, idx, make_room=True)
            a[idx] = a[idx] + 1
            made[t] += idx.size
    ts = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    return sum(made)


def scalar(a: np.ndarray, seconds: float, seed: int) -> int:
    rng = np.random.default_rng(seed)
    made, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        for i in rng.integers(0, a.size, 1000).tolist():
            a[i] += 1
        made += 1000
    return made


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds of this process (every thread) and of process ``pid`` if given."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    t = r.ru_utime + r.ru_stime
    if pid is not None:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        t += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
    return t


def one_round(mode: str, workload: str, nthreads: int, args, seed: int) -> dict:
    with open_pager(mode, args.device, args.budget_mib << 20) as pager:
        a = pager.alloc((args.size_mib << 20) // 8, np.int64)
        fill(a)
        want = int(a.sum())
        s0, t0, c0 = pager.stats(), time.perf_counter(), cpu_seconds(pager.backend_pid)
        made = (scalar(a, args.seconds, seed) if workload == "scalar"
                else rmw(a, nthreads, args.seconds, seed, pager if workload == "rmw+prefetch" else None))
        wall, cpu, s = time.perf_counter() - t0, cpu_seconds(pager.backend_pid) - c0, pager.stats()
        ok = int(a.sum()) == want + made
        d = {k: getattr(s, k) - getattr(s0, k) for k in ("faults_missing", "faults_wp", "pages_in", "pages_out",
                                                      "fetch_batches", "evict_batches")}
    faults = d["faults_missing"] + d["faults_wp"]
    return {"mode": mode, "workload": workload, "threads": nthreads, "seconds": round(wall, 2),
            "updates": made, "faults_per_s": round(faults / wall), "paging_MB_per_s":
            round((d["pages_in"] + d["pages_out"]) * 4096 / wall / 1e6, 1),
            "cpu_us_per_fault": round(cpu / max(1, faults) * 1e6, 1),
            "pages_per_swap_in": round(d["pages_in"] / max(1, d["fetch_batches"]), 2),
            "pages_per_swap_out": round(d["pages_out"] / max(1, d["evict_batches"]), 1),
            "budget_kept": s.max_resident <= pager.budget_pages, "sum_checks": ok, **d}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--budget-mib", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=20, help="work per round (after the fill)")
    ap.add_argument("--rounds", type=int, default=2, help="pairs of rounds (thread, process) per thread count")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--scalar", action="store_true", help="also the GIL-holding scalar loop (process mode)")
    ap.add_argument("--batched", action="store_true",
                    help="also pairs of 1-thread rounds without and with each batch announced (prefetch make_room)")
    ap.add_argument("--device", default=URL, help="ZNS device (in memory)")
    ap.add_argument("--json", help="write the rounds and the summary here")
    args = ap.parse_args(argv)
    if args.size_mib <= 0 or args.budget_mib <= 0 or args.seconds <= 0 or args.rounds < 1 or min(args.threads) < 1:
        print("pager_serve: sizes, seconds, rounds and threads must be positive", file=sys.stderr)
        return 2
    rounds, summary = [], []
    for nthreads in args.threads:
        pairs = []
        for k in range(args.rounds):
            pair = [one_round(mode, "rmw", nthreads, args, seed=100 * k) for mode in ("thread", "process")]
            for r in pair:
                print(json.dumps(r), flush=True)
            rounds += pair
            pairs.append(pair)
        row = {"workload": "rmw", "threads": nthreads}
        for key in ("faults_per_s", "paging_MB_per_s", "cpu_us_per_fault", "pages_per_swap_in", "pages_per_swap_out"):
            for i, mode in enumerate(("thread", "process")):
                row[f"{mode}_{key}"] = statistics.median(p[i][key] for p in pairs)
        row["process_over_thread_faults_per_s"] = round(statistics.median(
            p[1]["faults_per_s"] / p[0]["faults_per_s"] for p in pairs), 2)
        row["process_over_thread_cpu_per_fault"] = round(statistics.median(
            p[1]["cpu_us_per_fault"] / p[0]["cpu_us_per_fault"] for p in pairs), 2)
        summary.append(row)
    if args.batched:
        pairs = []
        for k in range(args.rounds):
            pair = [one_round("thread", w, 1, args, seed=100 * k) for w in ("rmw", "rmw+prefetch")]
            for r in pair:
                print(json.dumps(r), flush=True)
            rounds += pair
            pairs.append(pair)
        row = {"workload": "rmw vs rmw+prefetch(make_room) (thread mode)", "threads": 1}
        for key in ("faults_per_s", "paging_MB_per_s", "cpu_us_per_fault", "pages_per_swap_in", "pages_per_swap_out"):
            for i, w in enumerate(("plain", "prefetch")):
                row[f"{w}_{key}"] = statistics.median(p[i][key] for p in pairs)
        row["prefetch_over_plain_paging_MB_per_s"] = round(statistics.median(
            p[1]["paging_MB_per_s"] / p[0]["paging_MB_per_s"] for p in pairs), 2)
        row["prefetch_over_plain_updates"] = round(statistics.median(p[1]["updates"] / p[0]["updates"] for p in pairs), 2)
        summary.append(row)
    if args.scalar:
        r = one_round("process", "scalar", 1, args, seed=7)
        print(json.dumps(r), flush=True)
        rounds.append(r)
        summary.append({"workload": "scalar (GIL held; thread mode deadlocks)", "threads": 1,
                        "process_faults_per_s": r["faults_per_s"], "process_paging_MB_per_s": r["paging_MB_per_s"],
                        "process_cpu_us_per_fault": r["cpu_us_per_fault"],
                        "process_pages_per_swap_in": r["pages_per_swap_in"]})
    print("summary:")
    for row in summary:
        print(json.dumps(row))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "rounds": rounds, "summary": summary}, f, indent=1)
    return 0 if all(r["sum_checks"] and r["budget_kept"] for r in rounds) else 1


if __name__ == "__main__":
    sys.exit(main())
