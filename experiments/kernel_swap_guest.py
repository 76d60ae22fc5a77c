"""GUEST side of experiments/kernel_swap_validation.py: DLRM training under a cgroup memory limit
with real Linux swap on /dev/nvme0n1, measured from the kernel. Runs as root inside the QEMU guest::

    kernel_swap_guest.py --out DIR [--scale 0.05 --iterations 400 --batch 256 --budget 0.25 ...]

What it does (``setup`` mode, the default):

1. ``mkswap``/``swapon`` the conventional namespace (no discard), ``vm.page-cluster``;
2. warms the page cache with the job's imports *outside* the cgroup (so the libraries' file pages
   are charged to the root cgroup and the limit bites on anonymous memory);
3. a cgroup v2 ``ksv`` with the memory controller; ftrace: ``block:block_rq_issue`` filtered on the
   swap device, ``vmscan:mm_vmscan_memcg_reclaim_begin/end``, streamed from ``trace_pipe`` to tmpfs;
4. starts the job (this file with ``--job``) inside the cgroup, and records /proc/vmstat and
   /sys/block/DEV/stat before and after.

The job trains DLRM (``torch.training.train``, ``backend=None``: every table in DRAM) with the
tables laid out like real DLRM tables: one page-aligned (2 MiB-aligned) anonymous mapping, virtual
page ``p`` = embedding page ``p`` (so the kernel's VMA readahead sees the same neighbourhood the
model's page ids give). After ``--warm`` iterations it sets ``memory.max`` to its non-table memory
plus ``--budget`` of the table bytes. After every iteration it writes a marker into the trace and
snapshots ``/proc/self/pagemap`` of the tables (present / swapped + swap slot of every page), and
appends the pages that changed to ``snaps.bin``. THP is off for the job (``PR_SET_THP_DISABLE``)
unless ``--thp``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import shutil
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CG = "/sys/fs/cgroup"
TR = "/sys/kernel/tracing"
PM_PRESENT = 1 << 63
PM_SWAP = 1 << 62
SWP_OFFSET_MASK = (1 << 55) - 1            # bits 0-54; type in bits 0-4, offset in bits 5-54
PMD = 2 << 20
PS_ = 4096


def log(msg: str) -> None:
    print(f"[guest {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def rd(path: str, default: str = "") -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def wr(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def vmstat() -> dict[str, int]:
    out = {}
    for line in rd("/proc/vmstat").splitlines():
        k, v = line.split()
        out[k] = int(v)
    return out


def blkstat(dev: str) -> dict[str, int]:
    f = [int(x) for x in rd(f"/sys/block/{dev}/stat").split()]
    names = ["reads", "reads_merged", "read_sectors", "read_ms", "writes", "writes_merged", "write_sectors",
             "write_ms", "in_flight", "io_ms", "queue_ms", "discards", "discards_merged", "discard_sectors",
             "discard_ms", "flushes", "flush_ms"]
    return dict(zip(names, f))


# ------------------------------------------------------------------------------------------------
# the workload (shared with the host side)
# ------------------------------------------------------------------------------------------------

def embedding_training(emb, data_cfg, iterations: int, batch: int, seed: int = 0, lr: float = 0.1,
                       progress=None) -> list[float]:
    """DLRM training's embedding-table traffic, numpy only: the batches of ``train`` (same
    ``CriteoSynth`` stream for ``seed``), ``emb.gather`` -> sum pooling -> a linear logistic
    head over the 26 pooled vectors and the dense features (a stand-in for DLRM's MLPs: torch
    takes 7-11 minutes to import in the TCG guest over 9p) -> ``emb.apply(row gradients)``.
    The pages it reads and writes per iteration are those ``train`` reads and writes (the same
    ``gather``/``apply`` calls on the same indices). Returns the per-iteration losses."""
    import numpy as np
    from zswap_host.workloads.criteo import CriteoSynth
    T, dim, k = data_cfg.num_tables, emb.dim, data_cfg.hot
    rng = np.random.default_rng(seed)
    V = (rng.standard_normal((T, dim)) * 0.1).astype(np.float32)
    u = (rng.standard_normal(13) * 0.1).astype(np.float32)
    losses = []
    for i, b in enumerate(CriteoSynth(data_cfg).batches(iterations, batch, seed)):
        rows, inv = emb.gather(b.sparse)
        B = b.size
        pooled = rows[inv].reshape(T, B, k, dim).sum(axis=2)             # (T, B, dim)
        z = np.einsum("tbd,td->b", pooled, V) + b.dense @ u
        p = 1.0 / (1.0 + np.exp(-z))
        y = b.labels
        losses.append(float(-np.mean(y * np.log(p + 1e-7) + (1 - y) * np.log(1 - p + 1e-7))))
        g = ((p - y) / B).astype(np.float32)                              # dloss/dz
        gl = np.broadcast_to(g[None, :, None, None] * V[:, None, None, :], (T, B, k, dim)).reshape(-1, dim)
        grad = np.zeros_like(rows)
        np.add.at(grad, inv, gl)
        V -= lr * np.einsum("tbd,b->td", pooled, g)
        u -= lr * (b.dense.T @ g)
        emb.apply(grad)
        if progress is not None:
            progress(i + 1, iterations)
    return losses


def table_layout_embedding(tables, dim: int, seed: int = 0, optimizer: str = "sgd"):
    """A DRAM-only ``PagedEmbedding`` laid out like DLRM's dense tables: page ``p`` at virtual page
    ``base + p`` of one 2 MiB-aligned anonymous mapping (the stock one hands frames out in
    first-touch order). First touch still initialises a page."""
    import numpy as np
    from zswap_host.workloads.page_cache import RESIDENT, PageCache
    from zswap_host.workloads.paged_embedding import PagedEmbedding

    class TableLayoutCache(PageCache):
        def make_resident(self, pages):
            c = self.counters
            res = self.page_frame[pages] >= 0
            c.page_refs += int(pages.size)
            c.hits += int(res.sum())
            missing = pages[~res]
            if missing.size:
                self.first_touch.create(self.f32, missing, missing)
                self.page_frame[missing] = missing
                self.frame_page[missing] = missing
                self.page_state[missing] = RESIDENT
                self.nfree -= int(missing.size)
                c.first_touch += int(missing.size)

    class TableLayoutEmbedding(PagedEmbedding):
        def __init__(self):
            super().__init__(tables, dim, backend=None, seed=seed, optimizer=optimizer)
            cache = self.cache
            cache.__class__ = TableLayoutCache          # frame f holds page f: the mapping below
            n, ps = self.nframes, self.page_size
            self._mm = mmap.mmap(-1, n * ps + PMD, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            base = ctypes.addressof(ctypes.c_char.from_buffer(self._mm))
            off = (-base) % PMD
            cache.frames = np.frombuffer(self._mm, np.uint8, count=n * ps, offset=off).reshape(n, ps)
            cache.f32 = cache.frames.view(np.float32)
            cache.rows = np.lib.stride_tricks.as_strided(
                cache.f32, shape=(n, self.rows_per_page, self.dim), strides=(ps, 4 * self.dim, 4), writeable=True)
            self.addr = base + off

    return TableLayoutEmbedding()


# ------------------------------------------------------------------------------------------------
# the job (inside the cgroup)
# ------------------------------------------------------------------------------------------------

def job(a) -> int:
    cg = os.path.join(CG, a.cgroup)
    wr(os.path.join(cg, "cgroup.procs"), str(os.getpid()))
    if not a.thp:
        PR_SET_THP_DISABLE = 41
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)
    sys.path.insert(0, REPO)
    import numpy as np
    from zswap_host.workloads import data_preset

    dc = data_preset(a.data, a.scale)
    emb = table_layout_embedding(dc.tables, a.dim, a.seed)
    marker = open(os.path.join(TR, "trace_marker"), "w")
    pm = os.open("/proc/self/pagemap", os.O_RDONLY)
    snaps = open(os.path.join(a.out, "snaps.bin"), "wb")
    series = []
    state = {"prev": None, "t0": time.monotonic()}

    def snapshot(i: int):
        n = emb.nframes
        raw = np.frombuffer(os.pread(pm, 8 * n, (emb.addr >> 12) * 8), np.uint64)
        swp = (raw & np.uint64(PM_SWAP)) != 0
        pres = (raw & np.uint64(PM_PRESENT)) != 0
        code = np.where(swp, ((raw & np.uint64(SWP_OFFSET_MASK)) >> np.uint64(5)).astype(np.int64) + 2,
                        pres.astype(np.int64))
        prev = state["prev"]
        idx = np.flatnonzero(code != prev) if prev is not None else np.flatnonzero(code)
        snaps.write(np.array([i, idx.size], np.int64).tobytes() + idx.astype(np.int64).tobytes()
                    + code[idx].tobytes())
        snaps.flush()
        state["prev"] = code
        return int(pres.sum()), int(swp.sum())

    def vmswap() -> int:
        for line in rd("/proc/self/status").splitlines():
            if line.startswith("VmSwap:"):
                return int(line.split()[1]) * 1024
        return 0

    def set_limit():
        present, _ = snapshot(-1)
        vs = vmstat()
        cur = int(rd(os.path.join(cg, "memory.current")))
        nontable = cur - present * emb.page_size
        budget = int(a.budget * emb.total_bytes)
        limit = nontable + budget
        wr(os.path.join(cg, "memory.max"), str(limit))
        marker.write("ksv limit\n")
        marker.flush()
        log(f"memory.current {cur >> 20} MiB with {present} table pages resident: non-table {nontable >> 20} MiB; "
            f"memory.max := {limit >> 20} MiB (tables {emb.total_bytes >> 20} MiB, budget {budget >> 20} MiB)")
        state["limit"] = {"memory_current": cur, "table_present_pages": present, "nontable_bytes": nontable,
                          "budget_bytes": budget, "memory_max": limit,
                          "vmstat": {k: vs.get(k, 0) for k in ("pswpin", "pswpout", "pgmajfault", "swap_ra",
                                                                 "swap_ra_hit", "pgfault")}}

    def progress(done: int, total: int):
        i = done - 1
        if done == a.warm:
            set_limit()
        marker.write(f"ksv iter {i}\n")
        marker.flush()
        present, swapped = snapshot(i)
        vs = vmstat()
        series.append({"iter": i, "t": time.monotonic() - state["t0"], "table_present": present,
                       "table_swapped": swapped, "memory_current": int(rd(os.path.join(cg, "memory.current"))),
                       "swap_current": int(rd(os.path.join(cg, "memory.swap.current"), "0")),
                       "vmswap": vmswap(),
                       **{k: vs.get(k, 0) for k in ("pswpin", "pswpout", "pgmajfault", "swap_ra", "swap_ra_hit",
                                                     "pgfault")}})
        if done % max(1, total // 10) == 0 or done == total:
            log(f"iteration {done}/{total}: tables {present} pages resident, {swapped} swapped; "
                f"pswpin {vs['pswpin']} pswpout {vs['pswpout']}")

    t0 = time.monotonic()
    losses = embedding_training(emb, dc, a.iterations, a.batch, a.seed, progress=progress)
    wall = time.monotonic() - t0
    snaps.close()
    with open(os.path.join(a.out, "job.json"), "w") as f:
        json.dump({"wall_s": wall, "iterations": a.iterations, "batch": a.batch, "seed": a.seed, "dim": a.dim,
                   "data": a.data, "scale": a.scale, "budget": a.budget, "warm": a.warm,
                   "thp": a.thp, "table_pages": emb.total_pages, "table_bytes": emb.total_bytes,
                   "table_addr": emb.addr, "limit": state.get("limit"), "series": series,
                   "loss_first": float(np.mean(losses[:10])), "loss_last": float(np.mean(losses[-10:])),
                   "paging": emb.stats(), "memory_stat": rd(os.path.join(cg, "memory.stat"))}, f)
    log(f"job done in {wall:.0f} s")
    return 0


# ------------------------------------------------------------------------------------------------
# the set-up (root cgroup)
# ------------------------------------------------------------------------------------------------

def system_info(dev: str) -> dict:
    info = {"kernel": os.uname().release, "thp_enabled": rd("/sys/kernel/mm/transparent_hugepage/enabled"),
            "lru_gen": rd("/sys/kernel/mm/lru_gen/enabled"), "zswap": rd("/sys/module/zswap/parameters/enabled"),
            "vma_ra_enabled": rd("/sys/kernel/mm/swap/vma_ra_enabled"),
            "scheduler": rd(f"/sys/block/{dev}/queue/scheduler"),
            "max_sectors_kb": rd(f"/sys/block/{dev}/queue/max_sectors_kb"),
            "max_segments": rd(f"/sys/block/{dev}/queue/max_segments"),
            "rotational": rd(f"/sys/block/{dev}/queue/rotational"), "dev_t": rd(f"/sys/block/{dev}/dev"),
            "device_bytes": int(rd(f"/sys/block/{dev}/size")) * 512, "swappiness": rd("/proc/sys/vm/swappiness")}
    opts = {}
    for line in rd(f"/boot/config-{info['kernel']}").splitlines():
        if line.startswith(("CONFIG_THP_SWAP", "CONFIG_TRANSPARENT_HUGEPAGE", "CONFIG_LRU_GEN", "CONFIG_ZSWAP=")):
            k, _, v = line.partition("=")
            opts[k] = v
    info["config"] = opts
    return info


def run_one(a, name: str, swap_kib: int, info: dict) -> int:
    """One job on a fresh swap area of ``swap_kib`` KiB (0: the whole device), results in OUT/name."""
    out = os.path.join(a.out, name)
    os.makedirs(out, exist_ok=True)
    dev = a.dev
    info = dict(info, name=name)
    subprocess.run(["swapoff", "-a"], check=False)
    mk = ["mkswap", "-f", f"/dev/{dev}"] + ([str(swap_kib)] if swap_kib else [])
    subprocess.run(mk, check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["swapon", f"/dev/{dev}"], check=True)
    wr("/proc/sys/vm/page-cluster", str(a.page_cluster))
    info["swaps"] = rd("/proc/swaps")
    info["page_cluster"] = int(rd("/proc/sys/vm/page-cluster"))
    info["dev_bytes"] = int(info["swaps"].splitlines()[-1].split()[2]) * 1024 + PS_   # area incl. header
    log(f"[{name}] swap on /dev/{dev}: {info['dev_bytes'] >> 20} MiB area, page-cluster {info['page_cluster']}")

    if "memory" not in rd(os.path.join(CG, "cgroup.subtree_control")).split():
        wr(os.path.join(CG, "cgroup.subtree_control"), "+memory")
    cg = os.path.join(CG, a.cgroup)
    if os.path.isdir(cg):
        os.rmdir(cg)                                # fresh counters for every run
    os.makedirs(cg)
    wr(os.path.join(cg, "memory.max"), "max")
    wr(os.path.join(cg, "memory.swap.max"), "max")

    major, minor = (int(x) for x in info["dev_t"].split(":"))
    devt = (major << 20) | minor
    wr(os.path.join(TR, "tracing_on"), "0")
    wr(os.path.join(TR, "trace"), "")
    wr(os.path.join(TR, "buffer_size_kb"), str(a.trace_kb))
    ev = os.path.join(TR, "events")
    wr(os.path.join(ev, "block/block_rq_issue/filter"), f"dev == {devt}")
    wr(os.path.join(ev, "block/block_rq_issue/enable"), "1")
    for e in ("mm_vmscan_memcg_reclaim_begin", "mm_vmscan_memcg_reclaim_end"):
        if os.path.exists(os.path.join(ev, "vmscan", e)):
            wr(os.path.join(ev, "vmscan", e, "enable"), "1")
    tfile = "/run/ksv_trace.txt"
    tout = open(tfile, "wb")
    cat = subprocess.Popen(["cat", os.path.join(TR, "trace_pipe")], stdout=tout)
    wr(os.path.join(TR, "tracing_on"), "1")

    v0, b0 = vmstat(), blkstat(dev)
    t0 = time.monotonic()
    args = [sys.executable, os.path.abspath(__file__), "--job", "--out", out, "--cgroup", a.cgroup,
            "--dim", str(a.dim), "--data", a.data, "--scale", str(a.scale), "--iterations", str(a.iterations),
            "--batch", str(a.batch), "--budget", str(a.budget), "--warm", str(a.warm), "--seed", str(a.seed)]
    if a.thp:
        args.append("--thp")
    rc = subprocess.run(args, cwd=REPO).returncode
    wall = time.monotonic() - t0
    v1, b1 = vmstat(), blkstat(dev)
    events = rd(os.path.join(cg, "memory.events"))
    time.sleep(1.0)
    wr(os.path.join(TR, "tracing_on"), "0")
    time.sleep(0.5)
    cat.send_signal(signal.SIGTERM)
    cat.wait()
    tout.close()
    info["trace_stats"] = {c: rd(os.path.join(TR, f"per_cpu/{c}/stats")) for c in sorted(os.listdir(os.path.join(TR, "per_cpu")))}
    shutil.copyfile(tfile, os.path.join(out, "trace.txt"))
    os.remove(tfile)
    keys = sorted(set(v0) | set(v1))
    info.update(job_rc=rc, job_wall_s=wall,
                vmstat_delta={k: v1.get(k, 0) - v0.get(k, 0) for k in keys if v1.get(k, 0) != v0.get(k, 0)},
                blk_delta={k: b1[k] - b0[k] for k in b0}, memory_events=events)
    with open(os.path.join(out, "guest.json"), "w") as f:
        json.dump(info, f, indent=1)
    d = info["vmstat_delta"]
    log(f"[{name}] job rc={rc} in {wall:.0f} s: pswpout {d.get('pswpout', 0)} pswpin {d.get('pswpin', 0)}; "
        f"{dev} writes {info['blk_delta']['writes']} ({info['blk_delta']['write_sectors'] * 512 >> 20} MiB), "
        f"reads {info['blk_delta']['reads']} ({info['blk_delta']['read_sectors'] * 512 >> 20} MiB)")
    subprocess.run(["swapoff", f"/dev/{dev}"], check=False)
    return rc


def setup(a) -> int:
    os.makedirs(a.out, exist_ok=True)
    info = system_info(a.dev)
    log(f"kernel {info['kernel']}, THP {info['thp_enabled']}, CONFIG_THP_SWAP={info['config'].get('CONFIG_THP_SWAP')}, "
        f"lru_gen {info['lru_gen']}, zswap {info['zswap']}, scheduler {info['scheduler']}, "
        f"max_sectors_kb {info['max_sectors_kb']}, max_segments {info['max_segments']}")
    rc = 0
    for spec in a.runs.split(","):
        name, _, size = spec.partition(":")
        rc = rc or run_one(a, name, int(size or 0), info)
    print("KSV GUEST DONE rc=%d" % rc, flush=True)
    return rc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="results folder (shared with the host)")
    ap.add_argument("--job", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dev", default="nvme0n1", help="swap device [nvme0n1]")
    ap.add_argument("--cgroup", default="ksv")
    ap.add_argument("--dim", type=int, default=16, help="embedding dim [16]")
    ap.add_argument("--data", default="kaggle")
    ap.add_argument("--scale", type=float, default=0.05)
    ap.add_argument("--iterations", type=int, default=400)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--budget", type=float, default=0.25, help="DRAM left for the tables, fraction of their bytes")
    ap.add_argument("--warm", type=int, default=1, help="iterations before memory.max is set")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--page-cluster", type=int, default=3)
    ap.add_argument("--thp", action="store_true", help="leave transparent huge pages on for the job")
    ap.add_argument("--trace-kb", type=int, default=16384, help="ftrace buffer per CPU (KiB)")
    ap.add_argument("--runs", default="roomy:0",
                    help="comma-separated NAME:SWAP_KIB (0 = the whole device), one job each [roomy:0]")
    a = ap.parse_args(argv)
    return job(a) if a.job else setup(a)


if __name__ == "__main__":
    sys.exit(main())
