"""The thesis's fio study, reproduced on the SSD timing model.

A small fio-like job engine (rw = read / write / randread / randwrite, a block size or a block
size mix, an iodepth, a size) turns each job into request arrays, submits them to the model and
computes bandwidth from the model's completion times (modeled clock).  Then a fixed sequence of
jobs reproduces the thesis's two fio findings and its bandwidth-versus-written-volume curve:

1. the device is trimmed (fresh), then filled sequentially (128 KiB writes, iodepth 32);
2. random reads at the swap path's queue depth: 128 KiB requests against the small-request mix
   swap produces -> ``large_vs_small_request_bw_ratio`` (thesis: 1.75x);
3. random 4 KiB writes (iodepth 32) for several device capacities: the bandwidth per written
   window is the curve (``bw_over_written_volume``), falling as the writes go past the free
   space and device GC starts; then a steady-state random-write job;
4. a sequential 4 KiB pass (warm-up, it undoes the random layout) and a measured sequential
   4 KiB job -> ``seq_vs_random_write_bw_ratio`` (thesis: 4.37x).

The numbers depend only on the model and the seed (deterministic).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .ssdsim.model import READ, TRIM, WRITE

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
UNIT = 4096

THESIS = {"large_vs_small_request_bw_ratio": 1.75, "seq_vs_random_write_bw_ratio": 4.37}

# Swap's request-size mix: Linux swaps 4 KiB pages and merges only adjacent slots, so requests
# are mostly one page and almost all below 32 KiB (thesis finding 2).
SWAP_BS_MIX: tuple[tuple[int, float], ...] = ((4 * KiB, 0.40), (8 * KiB, 0.30), (16 * KiB, 0.20), (32 * KiB, 0.10))
# Queue depth of the swap path: a reclaim pass writes up to SWAP_CLUSTER_MAX = 32 pages and the
# block layer plugs them into one batch; swap-in readahead (page-cluster) plus several training
# threads faulting at once keep a comparable number of reads in flight.
SWAP_IODEPTH = 32
LARGE_BS = 128 * KiB
WRITE_IODEPTH = 32


@dataclass
class Job:
    """An fio-like job. ``bs`` is bytes or a mix [(bytes, weight), ...] (fio's bssplit)."""

    name: str
    rw: str                      # read | write | randread | randwrite | trim
    bs: int | Sequence[tuple[int, float]]
    iodepth: int
    size: int                    # bytes of I/O
    offset: int = 0              # region start
    region: int | None = None    # region length (default: device from offset)
    windows: int = 0             # >0: also report bandwidth per window of size/windows bytes
    extra: dict = field(default_factory=dict)

    def bs_label(self):
        if isinstance(self.bs, (int, np.integer)):
            return int(self.bs)
        return ":".join(f"{s // KiB}k/{int(round(w * 100))}" for s, w in self.bs)

    def mean_bs(self) -> float:
        if isinstance(self.bs, (int, np.integer)):
            return float(self.bs)
        w = np.array([x[1] for x in self.bs], float)
        s = np.array([x[0] for x in self.bs], float)
        return float((s * w).sum() / w.sum())


def _requests(job: Job, capacity: int, rng: np.random.Generator, seq_pos: int = 0):
    """ops, offsets, lengths for the job (sequential jobs wrap inside their region)."""
    region = (capacity - job.offset) if job.region is None else job.region
    if isinstance(job.bs, (int, np.integer)):
        n = max(1, job.size // int(job.bs))
        lengths = np.full(n, int(job.bs), np.int64)
        align = int(job.bs)
    else:
        sizes = np.array([s for s, _ in job.bs], np.int64)
        w = np.array([x for _, x in job.bs], float)
        n = max(1, math.ceil(job.size / job.mean_bs()))
        lengths = sizes[rng.choice(sizes.size, size=n, p=w / w.sum())]
        align = UNIT                                  # fio's blockalign for a bssplit: the smallest size
    if job.rw in ("read", "write", "trim"):
        starts = (seq_pos + np.concatenate(([0], np.cumsum(lengths[:-1])))) % region
        # a request that would cross the region end starts over at the beginning
        over = starts + lengths > region
        starts[over] = 0
        offsets = job.offset + starts
    else:
        slots = (region - lengths) // align + 1
        offsets = job.offset + (rng.random(n) * slots).astype(np.int64) * align
    op = {"read": READ, "randread": READ, "write": WRITE, "randwrite": WRITE, "trim": TRIM}[job.rw]
    return np.full(n, op, np.uint8), offsets.astype(np.int64), lengths


def run_job(model, job: Job, rng: np.random.Generator, chunk_bytes: int | None = None,
            tick: Callable[[int], None] | None = None) -> dict:
    """Run one job on the model; returns its fio-like record (bandwidth from modeled time)."""
    ops, offsets, lengths = _requests(job, model.capacity, rng)
    ends = np.cumsum(lengths)
    n_win = job.windows if job.windows > 0 else 1
    if chunk_bytes:
        n_win = max(n_win, math.ceil(int(ends[-1]) / chunk_bytes))
    cuts = np.searchsorted(ends, np.linspace(0, ends[-1], n_win + 1)[1:], side="left") + 1
    cuts[-1] = ops.size
    c0 = model.counters()
    t_start = model.now
    windows = []
    lo = 0
    for hi in np.unique(np.minimum(cuts, ops.size)):
        if hi <= lo:
            continue
        t0 = model.now
        model.submit(ops[lo:hi], offsets[lo:hi], lengths[lo:hi], qd=job.iodepth)
        nbytes = int(lengths[lo:hi].sum())
        windows.append((nbytes, model.now - t0))
        if tick:
            tick(nbytes)
        lo = hi
    c1 = model.counters()
    runtime = model.now - t_start
    total = int(lengths.sum())
    rec = {
        "name": job.name, "rw": job.rw, "bs": job.bs_label(), "iodepth": job.iodepth, "bytes": total,
        "requests": int(ops.size), "runtime_s": runtime,
        "bw_mib_s": total / runtime / MiB if runtime > 0 else float("inf"),
        "iops": ops.size / runtime if runtime > 0 else float("inf"),
        # Little's law with the queue kept full: mean completion latency
        "mean_lat_us": job.iodepth * runtime / ops.size * 1e6 if ops.size else 0.0,
    }
    if job.rw in ("write", "randwrite"):
        dh = c1["host_write_bytes"] - c0["host_write_bytes"]
        rec["write_amplification"] = (c1["media_write_bytes"] - c0["media_write_bytes"]) / dh if dh else 0.0
        rec["gc_write_bytes"] = c1["gc_write_bytes"] - c0["gc_write_bytes"]
    rec.update(job.extra)
    rec["_windows"] = windows
    return rec


def _plan(capacity: int, quick: bool) -> list[tuple[str, Job]]:
    """The study: (phase, job) in order."""
    cap = capacity
    read_size = min(cap, (256 if quick else 1024) * MiB)
    curve = 2 if quick else 3               # device capacities of random writes for the curve
    steady = cap // 2 if quick else cap
    wins = 16 if quick else 32
    return [
        ("fresh", Job("trim", "trim", min(cap, 1 << 30), 1, cap)),
        ("fill", Job("seq fill", "write", LARGE_BS, WRITE_IODEPTH, cap, windows=8)),
        ("read", Job("seq read 128k", "read", LARGE_BS, SWAP_IODEPTH, read_size)),
        ("read", Job("large", "randread", LARGE_BS, SWAP_IODEPTH, read_size, extra={"role": "large"})),
        ("read", Job("small mix", "randread", list(SWAP_BS_MIX), SWAP_IODEPTH, read_size, extra={"role": "small"})),
        ("read", Job("randread 4k", "randread", 4 * KiB, SWAP_IODEPTH, read_size // 4)),
        ("curve", Job("randwrite curve", "randwrite", 4 * KiB, WRITE_IODEPTH, curve * cap, windows=curve * wins // 2)),
        ("steady", Job("randwrite", "randwrite", 4 * KiB, WRITE_IODEPTH, steady, extra={"role": "random"})),
        ("warmup", Job("seq warm-up", "write", 4 * KiB, WRITE_IODEPTH, cap)),
        ("steady", Job("seq write", "write", 4 * KiB, WRITE_IODEPTH, steady, extra={"role": "sequential"})),
    ]


def characterize(model, preset_name: str, quick: bool = False,
                 progress: Callable[[int, int, str], None] | None = None,
                 plot_path: str | None = None, seed: int = 42) -> dict:
    """Run the study on ``model`` (a ConvSSD; it is trimmed first, so its contents are lost) and
    return the result dict (see module doc).  ``progress(done, total, label)`` counts I/O bytes."""
    cap = int(model.logical_bytes)
    plan = _plan(cap, quick)
    rng = np.random.default_rng(seed)
    total = sum(j.size for ph, j in plan if ph != "fresh")
    done = 0

    def tick_for(label):
        def tick(nbytes):
            nonlocal done
            done += nbytes
            if progress:
                progress(min(done, total), total, label)
        return tick

    jobs, curve = [], []
    written = 0
    by_role = {}
    for phase, job in plan:
        if phase == "fresh":
            model.submit(np.full(1, TRIM, np.uint8), np.zeros(1, np.int64), np.full(1, cap, np.int64))
            continue
        rec = run_job(model, job, rng, chunk_bytes=max(64 * MiB, cap // 64), tick=tick_for(job.name))
        wins = rec.pop("_windows")
        if job.rw in ("write", "randwrite") and phase in ("fill", "curve", "steady", "warmup"):
            for nbytes, dt in wins:
                written += nbytes
                curve.append({"written_gib": written / GiB, "write_bw_mib_s": nbytes / dt / MiB if dt > 0 else 0.0,
                              "phase": f"{job.rw} {rec['bs'] // KiB if isinstance(rec['bs'], int) else rec['bs']}k"})
        rec["phase"] = phase
        if "role" in rec:
            by_role[rec["role"]] = rec
        jobs.append(rec)
    if progress:
        progress(total, total, "done")
    result = {
        "preset": preset_name,
        "clock": "modeled",
        "jobs": jobs,
        "large_vs_small_request_bw_ratio": by_role["large"]["bw_mib_s"] / by_role["small"]["bw_mib_s"],
        "seq_vs_random_write_bw_ratio": by_role["sequential"]["bw_mib_s"] / by_role["random"]["bw_mib_s"],
        "bw_over_written_volume": curve,
        "plot": None,
    }
    if plot_path is not None:
        result["plot"] = _plot(result, plot_path, cap)
    return result


def _plot(result: dict, path: str, cap: int) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = result["bw_over_written_volume"]
    fig, ax = plt.subplots(figsize=(7, 4))
    phases = []
    for p in pts:
        if not phases or phases[-1][0] != p["phase"]:
            phases.append((p["phase"], []))
        phases[-1][1].append(p)
    for name, ps in phases:
        ax.step([p["written_gib"] for p in ps], [p["write_bw_mib_s"] for p in ps], where="post",
                marker=".", label=name)
    ax.axvline(cap / GiB, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("host data written since the device was fresh (GiB)")
    ax.set_ylabel("write bandwidth (MiB/s, modeled)")
    ax.set_title(f"{result['preset']}: write bandwidth vs written volume\n"
                 f"(device {cap / GiB:g} GiB, modeled clock; dotted line: device written once)", fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _fmt_bs(bs) -> str:
    if isinstance(bs, (int, np.integer)):
        return f"{bs // KiB}k"
    return str(bs)


def format_table(result: dict) -> str:
    """Human-readable table of the jobs and the two ratios against the thesis."""
    lines = [f"fio-equivalent study on preset {result['preset']} (clock: {result['clock']})", ""]
    hdr = f"{'job':<16} {'rw':<10} {'bs':<22} {'qd':>3} {'bytes':>10} {'MiB/s':>9} {'IOPS':>9} {'lat us':>8} {'WAF':>5}"
    lines += [hdr, "-" * len(hdr)]
    for j in result["jobs"]:
        waf = f"{j['write_amplification']:.2f}" if "write_amplification" in j else ""
        lines.append(f"{j.get('name', ''):<16} {j['rw']:<10} {_fmt_bs(j['bs']):<22} {j['iodepth']:>3} "
                     f"{j['bytes'] / MiB:>8.0f}Mi {j['bw_mib_s']:>9.1f} {j.get('iops', 0):>9.0f} "
                     f"{j.get('mean_lat_us', 0):>8.1f} {waf:>5}")
    lines.append("")
    for key, label in (("large_vs_small_request_bw_ratio", "128 KiB vs small-request mix (randread)"),
                       ("seq_vs_random_write_bw_ratio", "sequential vs random 4 KiB writes (steady)")):
        v, t = result[key], THESIS[key]
        lines.append(f"{label:<44} {v:5.2f}x   thesis {t:.2f}x ({(v / t - 1) * 100:+.0f}%)")
    curve = result["bw_over_written_volume"]
    if curve:
        peak = max(p["write_bw_mib_s"] for p in curve)
        last = curve[-1]
        rnd = [p for p in curve if p["phase"].startswith("randwrite")]
        if rnd:
            lines.append(f"random-write bandwidth fell from {rnd[0]['write_bw_mib_s']:.0f} to "
                         f"{rnd[-1]['write_bw_mib_s']:.0f} MiB/s over {rnd[-1]['written_gib'] - rnd[0]['written_gib']:.1f} GiB "
                         f"written (peak of the whole run {peak:.0f}, last {last['write_bw_mib_s']:.0f})")
    if result.get("plot"):
        lines.append(f"plot: {result['plot']}")
    return "\n".join(lines)
