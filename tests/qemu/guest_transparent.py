"""GUEST side of experiments/transparent_guest.py (issue 15): the transparent DLRM (plain
``nn.EmbeddingBag`` tables, ``workloads.transparent.PlainDLRM``) in the 6.1 guest, three ways and
DRAM once more, one process each, same preset, seed and batches::

    guest_transparent.py --out DIR [--preset quick --iterations 150 --warm 10 --runs dram,kernel,pager]

The set-up process imports torch, the jobs' modules and torch's optimizer machinery once and forks
one child per run (``--job`` runs one in this process instead).

- ``dram``: the tables in DRAM, no limit: the reference losses, final tables and step times;
- ``kernel``: the same, in a cgroup v2: two steps before the end of the warm-up everything the job
  has is reclaimed once (``memory.reclaim``: its cold pages go to swap), a step later ``memory.max`` is
  set to the job's non-table memory (what came back) plus the budget (the bench's page-cache budget
  for the preset), then moved
  after every step by the tables' resident pages above (or below) the budget, so that the tables get
  the budget and not whatever the rest of the job frees (measured: with a fixed limit the kernel kept
  7.9 of the tiny preset's 8.3 MiB of tables resident against a 2.1 MiB budget); real Linux
  swap on the conventional namespace (``mkswap``, ``vm.page-cluster`` 3); requests from
  ``/sys/block/nvme0n1/stat``;
- ``pager``: each table's weight adopted by ``Pager(VerifyingBackend(SwapStore(/dev/nvme0n2)),
  budget, discard_on_write=True)`` — the store on the real zoned namespace through the uring engine,
  every swapped-in page checked against the fingerprint taken when it was swapped out; requests from
  the store's device counters (appends go through the NVMe char device, which the block layer's
  stat does not count);
- ``dram-after``: ``dram`` again, last: if its step times differ from the first's, the machine's
  load changed during the session (the step times are wall clock under TCG).

After every step the tables' resident pages are counted (``/proc/self/pagemap``): what they really
got is measured, not assumed. Every job disables THP (``PR_SET_THP_DISABLE``: 4 KiB pages in every run), uses one torch thread, and
times every step (wall clock; the pager's steps include ``Pager.quiesce``: its faults and the
evictions they set off). Figures after ``--warm`` steps only (the kernel's limit is not set before).
The final tables are hashed in every run: equal hashes = every page of the tables came back right.
Writes ``OUT/RUN.json`` per run and prints ``TRANSPARENT GUEST DONE rc=N`` at the end.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import multiprocessing
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "experiments"))

from kernel_swap_guest import blkstat, log, rd, vmstat, wr  # noqa: E402

CG = "/sys/fs/cgroup"
SWAP_DEV = "nvme0n1"
ZNS_DEV = "/dev/nvme0n2"
PM_PRESENT = 1 << 63
PS = 4096
RUNS = ("dram", "kernel", "pager", "dram-after")


def present_pages(tables) -> int:
    """Resident pages of the tables' weights (``/proc/self/pagemap``)."""
    import numpy as np

    n = 0
    with open("/proc/self/pagemap", "rb", buffering=0) as pm:
        for e in tables:
            w = e.weight
            a, b = w.data_ptr() // PS, -(-(w.data_ptr() + w.numel() * w.element_size()) // PS)
            raw = np.frombuffer(os.pread(pm.fileno(), 8 * (b - a), a * 8), np.uint64)
            n += int(np.count_nonzero(raw & np.uint64(PM_PRESENT)))
    return n


def tables_sha(tables) -> str:
    """sha256 of the tables' bytes, read through a torch copy: ``clone`` releases the GIL while it
    touches the (maybe paged) weights, as the pager's contract requires."""
    h = hashlib.sha256()
    for e in tables:
        h.update(e.weight.detach().clone().numpy().tobytes())
    return h.hexdigest()


def open_pager_backend():
    from zswap_host import StoreConfig, SwapStore, open_device
    from zswap_host.bench.plan import READ_QD
    from zswap_host.verify import VerifyingBackend

    dev = open_device(ZNS_DEV, zoned=True, io_engine="uring")
    return VerifyingBackend(SwapStore(dev, StoreConfig(placement="temporal", victim="greedy", read_qd=READ_QD))), dev


def job(a) -> int:
    """One training run in this process (``a.job`` names it)."""
    import numpy as np

    ctypes.CDLL(None, use_errno=True).prctl(41, 1, 0, 0, 0)       # PR_SET_THP_DISABLE
    os.environ.setdefault("ZSWAP_PAGER_ABORT_S", "300")           # a GIL deadlock fails the run, not hangs it
    if a.job == "kernel":
        wr(os.path.join(CG, a.cgroup, "cgroup.procs"), str(os.getpid()))
    import torch

    from zswap_host.bench.plan import BenchSpec, plan
    from zswap_host.workloads.criteo import CriteoSynth
    from zswap_host.workloads.transparent import PlainDLRM

    torch.set_num_threads(1)
    pl = plan(BenchSpec(preset=a.preset, iterations=a.iterations, seed=a.seed))
    n, bs, budget = pl.iterations, pl.batch_size, pl.budget_bytes
    pager = backend = dev = None
    if a.job == "pager":
        from zswap_host.pager import Pager

        backend, dev = open_pager_backend()
        pager = Pager(backend, budget, PS, discard_on_write=True)
    t0 = time.monotonic()
    net = PlainDLRM(pl.model, pl.data, a.seed, pager=pager)
    if pager is not None:
        pager.quiesce()
    build_s = time.monotonic() - t0
    rec = {"run": a.job, "preset": a.preset, "iterations": n, "batch": bs, "seed": a.seed, "warm": a.warm,
           "budget_bytes": budget, "table_bytes": sum(e.weight.numel() * 4 for e in net.tables),
           "build_s": build_s}
    loss, wall = np.zeros(n), np.zeros(n)
    resident = np.zeros(n, np.int64)          # table pages resident after each step (pagemap)
    marks = {}

    def mark(when: str) -> None:
        m = {"vmstat": {k: v for k, v in vmstat().items() if k in ("pswpin", "pswpout", "pgmajfault", "swap_ra",
                                                                    "swap_ra_hit")},
             "blk_swap": blkstat(SWAP_DEV), "blk_zns": blkstat(os.path.basename(ZNS_DEV))}
        if backend is not None:
            s = backend.stats().as_dict()
            m["backend"] = {k: s[k] for k in ("host_write_bytes", "host_read_bytes", "device_write_bytes",
                                                "device_read_bytes", "gc_write_bytes", "discard_bytes",
                                                "write_size_histogram", "read_size_histogram")}
            m["pager"] = pager.stats().as_dict()
            m["pages_checked"] = backend.pages_checked
        if a.job == "kernel":
            m["memory_current"] = int(rd(os.path.join(CG, a.cgroup, "memory.current")))
        marks[when] = m

    def set_limit() -> None:
        cg = os.path.join(CG, a.cgroup)
        present = present_pages(net.tables)
        cur = int(rd(os.path.join(cg, "memory.current")))
        nontable = cur - present * PS
        wr(os.path.join(cg, "memory.max"), str(nontable + budget))
        state["max"] = nontable + budget
        rec["limit"] = {"memory_current": cur, "table_present_pages": present, "nontable_bytes": nontable,
                        "memory_max": nontable + budget}
        log(f"[kernel] memory.current {cur >> 20} MiB, tables {present} pages resident: memory.max := "
            f"{(nontable + budget) >> 20} MiB (budget {budget >> 20} MiB)")

    limits = np.zeros(n, np.int64)             # the kernel run's memory.max after each step

    def retarget(resident_pages: int) -> None:
        """Move memory.max by the tables' excess over the budget (or their shortfall): the rest of the
        job's memory changes from step to step, and a fixed limit would hand what it frees to the
        tables — the kernel would get a larger budget than the pager."""
        excess = (resident_pages - budget // PS) * PS
        state["max"] = max(budget, state["max"] - excess)
        wr(os.path.join(CG, a.cgroup, "memory.max"), str(state["max"]))

    def squeeze() -> None:
        """Reclaim everything the job has (``memory.reclaim``): its cold pages (the imports' data,
        the build's leftovers) go to swap now, so that the limit set a step later is the hot
        non-table memory + the budget, and the kernel's LRU does not spend the budget's pressure on
        cold pages first (measured: without this the tiny preset's tables stayed 7.9 of 8.3 MiB
        resident under the limit)."""
        try:
            wr(os.path.join(CG, a.cgroup, "memory.reclaim"), str(int(rd(os.path.join(CG, a.cgroup, "memory.current")))))
        except OSError:                         # EAGAIN: it reclaimed what it could
            pass
        log(f"[kernel] squeezed: memory.current {int(rd(os.path.join(CG, a.cgroup, 'memory.current'))) >> 20} MiB")

    state = {}
    for i, b in enumerate(CriteoSynth(pl.data).batches(n, bs, a.seed)):
        if a.job == "kernel" and i == a.warm - 2:
            squeeze()
        if a.job == "kernel" and i == a.warm - 1:
            set_limit()                          # hot non-table memory (one step after the squeeze) + budget
        if i == a.warm:
            mark("warm")
        t = time.perf_counter()
        loss[i] = net.step(b)
        if pager is not None:
            pager.quiesce()
        wall[i] = time.perf_counter() - t
        resident[i] = present_pages(net.tables)
        if a.job == "kernel" and i >= a.warm - 1:
            retarget(int(resident[i]))
            limits[i] = state["max"]
        if (i + 1) % max(1, n // 10) == 0:
            log(f"[{a.job}] iteration {i + 1}/{n}: step {wall[i] * 1e3:.0f} ms")
    mark("end")
    rec.update(loss=loss.tolist(), step_wall_s=wall.tolist(), table_resident_pages=resident.tolist(), marks=marks, tables_sha256=tables_sha(net.tables),
               peak_rss_kib=int(rd("/proc/self/status").split("VmHWM:")[1].split()[0]))
    if a.job == "kernel":
        rec["memory_events"] = rd(os.path.join(CG, a.cgroup, "memory.events"))
        rec["memory_max_per_step"] = limits.tolist()
    if pager is not None:
        rec["engine"] = {"io_engine": dev.io_engine, "io_depth": dev.io_depth, "zone_append": dev.append_path}
        rec["pager_errors"] = [repr(e) for e in pager.errors]
        del net
        pager.close()
        backend.close()
        dev.close()
    with open(os.path.join(a.out, f"{a.job}.json"), "w") as f:
        json.dump(rec, f)
    log(f"[{a.job}] done: {wall[a.warm:].sum():.1f} s over steps {a.warm}..{n - 1}")
    return 0


def _child(a, run: str) -> None:
    a.job = run
    sys.exit(job(a))


def setup(a) -> int:
    """Root side: swap area, cgroup, one job process per run."""
    os.makedirs(a.out, exist_ok=True)
    info = {"kernel": os.uname().release, "cpus": os.cpu_count(), "page_cluster": 3,
            "swap_scheduler": rd(f"/sys/block/{SWAP_DEV}/queue/scheduler")}
    subprocess.run(["swapoff", "-a"], check=False)
    subprocess.run(["mkswap", "-f", f"/dev/{SWAP_DEV}"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["swapon", f"/dev/{SWAP_DEV}"], check=True)
    wr("/proc/sys/vm/page-cluster", "3")
    if "memory" not in rd(os.path.join(CG, "cgroup.subtree_control")).split():
        wr(os.path.join(CG, "cgroup.subtree_control"), "+memory")
    cg = os.path.join(CG, a.cgroup)
    os.makedirs(cg, exist_ok=True)
    wr(os.path.join(cg, "memory.max"), "max")
    wr(os.path.join(cg, "memory.swap.max"), "max")
    subprocess.run(["blkzone", "reset", ZNS_DEV], check=False)
    with open(os.path.join(a.out, "guest.json"), "w") as f:
        json.dump(info, f)
    t0 = time.monotonic()
    import torch  # once, here (minutes under TCG); the runs are forked from this process

    import zswap_host.pager  # noqa: F401
    # and what every run imports, here too: the jobs' own imports, and torch's first optimizer, which
    # imports torch._dynamo (3 s on the host, about 90 s under TCG, once per forked job otherwise)
    import zswap_host.bench.plan  # noqa: F401
    import zswap_host.workloads.criteo  # noqa: F401
    import zswap_host.workloads.dlrm  # noqa: F401
    import zswap_host.workloads.transparent  # noqa: F401

    torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    log(f"imports {time.monotonic() - t0:.0f} s")
    rc = 0
    for run in a.runs.split(","):
        t0 = time.monotonic()
        p = multiprocessing.get_context("fork").Process(target=_child, args=(a, run))
        p.start()
        p.join()
        log(f"[{run}] job rc={p.exitcode} in {time.monotonic() - t0:.0f} s")
        rc = rc or p.exitcode or 0
    subprocess.run(["swapoff", f"/dev/{SWAP_DEV}"], check=False)
    print(f"TRANSPARENT GUEST DONE rc={rc}", flush=True)
    return rc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--preset", default="quick")
    p.add_argument("--iterations", type=int, default=150)
    p.add_argument("--warm", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--runs", default=",".join(RUNS))
    p.add_argument("--cgroup", default="tdlrm")
    p.add_argument("--job", choices=RUNS, help="run only this one, in this process (set-up done)")
    a = p.parse_args(argv)
    if not 2 < a.warm < a.iterations:
        p.error("need 2 < --warm < --iterations (the kernel run squeezes and sets its limit in the last two warm-up steps)")
    return job(a) if a.job else setup(a)


if __name__ == "__main__":
    sys.exit(main())
