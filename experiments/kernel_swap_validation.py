"""Validate ``ConventionalSwap`` (the Linux 6.1 swap model) against the real 6.1 kernel.

One command boots the Debian 6.1 kernel under QEMU (TCG, ``emulator.zns_vm``), runs DLRM training's
embedding-table traffic (``experiments/kernel_swap_guest.py``: the ``train`` batches, gather ->
pooling -> a numpy stand-in for the MLPs -> apply, every table in DRAM) inside a cgroup v2 whose
``memory.max`` leaves the tables ``--budget`` of their bytes, with real swap on the conventional
namespace /dev/nvme0n1, and measures the kernel: ``/proc/vmstat`` (pswpin, pswpout, swap_ra,
swap_ra_hit), ``/sys/block/nvme0n1/stat``, every request from the ``block:block_rq_issue``
tracepoint, the memcg reclaim calls, and a ``/proc/self/pagemap`` snapshot of the tables after every
iteration (which pages are swapped, and in which slot).

Then, on the host, the model gets the same access pattern twice:

- ``model: kernel's evictions`` replays the kernel's own decisions (pages that went out, in the
  order the kernel wrote them, one ``swap_out`` per memcg reclaim call; pages that came back, in
  the job's fault order) through ``ConventionalSwap`` on an emulated conventional SSD of the same
  size. This isolates the I/O model (slots, in-place rewrites, merging, readahead).
- ``model: same training`` runs the same training with ``PagedEmbedding`` (CLOCK) over
  ``ConventionalSwap``, with a DRAM budget equal to what the kernel kept resident of the tables,
  i.e. what ``bench`` does. ``model before the fix`` is the same with ``in_place=False`` and no
  readahead ageing (the model as it was before this validation).

The guest runs two swap areas in one boot (``--runs``): ``roomy`` (the whole 1 GiB namespace, under
half full) and ``tight`` (128 MiB, over half full, where the kernel frees a page's slot at the fault).
In both, the job's other swapped-out memory occupies the model's area too (``Ballast``).

Writes ``OUT/summary.json``, ``OUT/comparison.csv``, ``OUT/request_sizes.csv``,
``OUT/request_sizes.png`` and the raw kernel data in ``OUT/guest/``, and prints the side-by-side
tables::

    .venv/bin/python experiments/kernel_swap_validation.py [--out experiments/results/kernel_swap]
    .venv/bin/python experiments/kernel_swap_validation.py --guest-results DIR   # reuse a guest run
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
import time
from collections import Counter

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PS = 4096
KiB = 1024
T0 = time.monotonic()


def progress(msg: str) -> None:
    print(f"[{time.monotonic() - T0:6.0f} s] {msg}", flush=True)


# ------------------------------------------------------------------------------------------------
# guest
# ------------------------------------------------------------------------------------------------

def run_guest(a, gdir: str) -> float:
    from emulator.zns_vm import ZnsVmConfig, missing, run_in_guest
    gone = missing()
    if gone:
        raise SystemExit("cannot boot the guest, missing: " + "; ".join(gone))
    work = os.path.abspath(a.workdir)
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "out")
    runs = ",".join(f"{n}:{b >> 10}" for n, b in a.runs)
    cmd = (f"{sys.executable} {os.path.join(REPO, 'experiments', 'kernel_swap_guest.py')} --out {out} "
           f"--scale {a.scale} --iterations {a.iterations} --batch {a.batch} --budget {a.budget} "
           f"--page-cluster {a.page_cluster} --seed {a.seed} --runs {runs}")
    # cached_dirs=[]: the root stays uncached, as when this was validated. Cached shares put the Python
    # libraries in the guest's page cache, and the cgroup then reclaims file pages too (fewer anon swaps).
    cfg = ZnsVmConfig(conv_size=a.conv_size, memory=a.memory, zones=8, cached_dirs=[])
    progress(f"booting the 6.1 guest (QEMU TCG), swap on /dev/nvme0n1 ({a.conv_size >> 20} MiB): {cmd}")
    res = run_in_guest(cmd, cfg, work, timeout=a.timeout, cwd=REPO, echo=True)   # the guest's progress lines
    with open(os.path.join(work, "guest.log"), "w") as f:
        f.write(res.output)
    if res.returncode != 0 or "KSV GUEST DONE rc=0" not in res.output:
        raise SystemExit(f"guest failed (exit {res.returncode}); log: {os.path.join(work, 'guest.log')}\n"
                         + res.output[-3000:])
    import gzip
    import shutil
    for name, _ in a.runs:                             # raw kernel data next to the results
        src, dst = os.path.join(out, name), os.path.join(gdir, name)
        os.makedirs(dst, exist_ok=True)
        for f in os.listdir(src):
            if f in ("trace.txt", "snaps.bin"):         # 12 + 2 MiB a run raw, 1.5 MiB gzipped
                with open(os.path.join(src, f), "rb") as fi, gzip.open(os.path.join(dst, f + ".gz"), "wb") as fo:
                    shutil.copyfileobj(fi, fo)
            else:
                shutil.copyfile(os.path.join(src, f), os.path.join(dst, f))
    shutil.copyfile(os.path.join(work, "guest.log"), os.path.join(gdir, "guest.log"))
    shutil.rmtree(out, ignore_errors=True)
    if getattr(a, "temp_workdir", False):
        shutil.rmtree(work, ignore_errors=True)
    for img in ("conv.img", "zns.img"):                # sparse, but up to 1 GiB each
        try:
            os.remove(os.path.join(work, img))
        except OSError:
            pass
    return res.boot_and_run_s


# ------------------------------------------------------------------------------------------------
# kernel data
# ------------------------------------------------------------------------------------------------

_RQ = re.compile(r"\s(\d+\.\d+): block_rq_issue: \d+,\d+ (\S+) (\d+) \(\S*\) (\d+) \+ (\d+)")
_MK = re.compile(r"\s(\d+\.\d+): tracing_mark_write: ksv (\w+) ?(-?\d+)?")
_RC = re.compile(r"\s(\d+\.\d+): mm_vmscan_memcg_reclaim_(begin|end)(?:: .*nr_reclaimed=(\d+))?")


def parse_trace(path: str) -> list[tuple]:
    """Events in trace order: ("W"|"R", first_slot, nr_slots), ("begin",), ("end", nr_reclaimed),
    ("iter", i), ("limit",)."""
    ev = []
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        import gzip
        opener = lambda: gzip.open(path + ".gz", "rt", errors="replace")   # noqa: E731
    else:
        opener = lambda: open(path, errors="replace")                       # noqa: E731
    with opener() as f:
        for line in f:
            m = _RQ.search(line)
            if m:
                op = "W" if "W" in m[2] else ("R" if "R" in m[2] else None)
                if op and int(m[5]):
                    ev.append((op, int(m[4]) // 8, max(1, int(m[3]) // PS)))
                continue
            m = _MK.search(line)
            if m:
                ev.append(("iter", int(m[3])) if m[2] == "iter" else (m[2],))
                continue
            m = _RC.search(line)
            if m:
                ev.append(("begin",) if m[2] == "begin" else ("end", int(m[3] or 0)))
    return ev


def load_snaps(path: str) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(iteration, page ids that changed, new code): code 0 never touched, 1 present, s + 2 swapped
    in slot s."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        import gzip
        with gzip.open(path + ".gz", "rb") as f:
            b = f.read()
    else:
        with open(path, "rb") as f:
            b = f.read()
    pos, out = 0, []
    while pos < len(b):
        i, n = (int(x) for x in np.frombuffer(b, np.int64, 2, pos))
        pos += 16
        idx = np.frombuffer(b, np.int64, n, pos)
        pos += 8 * n
        code = np.frombuffer(b, np.int64, n, pos)
        pos += 8 * n
        out.append((i, idx, code))
    return out


def size_hist(reqs) -> dict[int, int]:
    return dict(Counter(int(n) * PS for n in reqs))


def kernel_side(gdir: str) -> tuple[dict, list, list, dict]:
    guest = json.load(open(os.path.join(gdir, "guest.json")))
    job = json.load(open(os.path.join(gdir, "job.json")))
    ev = parse_trace(os.path.join(gdir, "trace.txt"))
    last = max(i for i, e in enumerate(ev) if e[0] == "iter")       # the job's exit is not measured
    ev = ev[:last + 1]
    w = [e[2] for e in ev if e[0] == "W"]
    r = [e[2] for e in ev if e[0] == "R"]
    s1 = job["series"][-1]
    s0 = job["limit"]["vmstat"]                       # just before memory.max was set
    d = {k: s1[k] - s0[k] for k in ("pswpin", "pswpout", "swap_ra", "swap_ra_hit")}
    rec = [e[1] for e in ev if e[0] == "end"]
    resident = np.array([s["table_present"] for s in job["series"]])
    half = job["series"][len(job["series"]) // 2:]
    nontable = [s["vmswap"] // PS - s["table_swapped"] for s in half if "vmswap" in s]
    k = {"name": "kernel 6.1", "pages_out": d["pswpout"], "pages_in": d["pswpin"],
         "write_hist": size_hist(w), "read_hist": size_hist(r),
         "readahead_pages": d["swap_ra"], "readahead_hits": d["swap_ra_hit"],
         "major_faults": d["pswpin"] - d["swap_ra"],
         "reclaim_calls": len(rec), "reclaimed_per_call": float(np.mean(rec)) if rec else 0.0,
         "table_resident_pages": float(resident[len(resident) // 2:].mean()),
         "nontable_swapped_pages": float(np.mean(nontable)) if nontable else 0.0}
    snaps = load_snaps(os.path.join(gdir, "snaps.bin"))
    return k, ev, snaps, {"guest": guest, "job": job}


def intervals(ev: list, snaps: list, pages: int):
    """Per iteration: the trace events since the previous snapshot, and the table pages' codes
    before and after."""
    code = np.zeros(pages, np.int64)
    cuts = [i for i, e in enumerate(ev) if e[0] == "iter"]
    starts = [0] + [c + 1 for c in cuts[:-1]]
    si = 0
    if snaps and snaps[0][0] == -1:                  # the snapshot taken before memory.max was set
        code[snaps[0][1]] = snaps[0][2]
        si = 1
    for n, (lo, hi) in enumerate(zip(starts, cuts)):
        if si >= len(snaps):
            break
        it, idx, c = snaps[si]
        si += 1
        new = code.copy()
        new[idx] = c
        yield ev[lo:hi], code, new
        code = new


def in_place_share(ev: list, snaps: list, pages: int) -> tuple[int, int]:
    """Swap-outs seen by the snapshots, and how many went back to the slot the page had before."""
    last = np.full(pages, -1, np.int64)
    outs = same = 0
    for _, old, new in intervals(ev, snaps, pages):
        o = np.flatnonzero((new >= 2) & (new != old))
        outs += o.size
        same += int(((last[o] >= 0) & (last[o] == new[o] - 2)).sum())
        last[o] = new[o] - 2
    return outs, same


# ------------------------------------------------------------------------------------------------
# model runs
# ------------------------------------------------------------------------------------------------

class Ballast:
    """The job's other anonymous memory (Python heap, numpy buffers) that the kernel keeps swapped
    out in the same area: the model gets as many never-touched pages (ids after the tables), so
    both areas are as full -- which decides whether a fault keeps its slot (``vm_swap_full``) and
    how fragmented the free space is. Their own writes are left out of the model's numbers."""

    def __init__(self, sw, base: int, series: list[dict]):
        self.sw, self.base, self.n = sw, base, 0
        self.target = [max(0, s["vmswap"] // PS - s["table_swapped"]) if "vmswap" in s else 0 for s in series]
        self.hist: Counter = Counter()

    def set(self, k: int) -> None:
        """Match the kernel's other swapped memory after iteration ``k`` (-1: before the first)."""
        want = self.target[k] if 0 <= k < len(self.target) else 0
        if want == self.n:
            return
        h0 = Counter(self.sw.stats().write_size_histogram)
        if want > self.n:
            ids = np.arange(self.base + self.n, self.base + want, dtype=np.int64)
            self.sw.swap_out(ids, np.zeros((ids.size, PS), np.uint8))
        else:
            self.sw.discard(np.arange(self.base + want, self.base + self.n, dtype=np.int64))
        self.hist += Counter(self.sw.stats().write_size_histogram) - h0
        self.n = want


def model_stats(name: str, sw, pages_out: int, pages_in: int, ballast: Ballast | None = None) -> dict:
    s = sw.stats()
    x = s.extra
    w = Counter(s.write_size_histogram) - (ballast.hist if ballast else Counter())
    return {"name": name, "pages_out": pages_out, "pages_in": pages_in,
            "write_hist": {int(k): int(v) for k, v in w.items()},
            "read_hist": {int(k): int(v) for k, v in s.read_size_histogram.items()},
            "readahead_pages": x["readahead_pages"], "readahead_hits": x["readahead_hits"],
            "major_faults": x["major_faults"], "in_place_pages": x["in_place_pages"]}


def make_swap(a, fixed=True):
    """The model on an emulated conventional SSD of the swap area's size. ``fixed=False``: the
    model as it was before this validation (every re-swap to a new slot, readahead pages kept
    until 4096 more were read)."""
    from zswap_host import open_device
    from zswap_host.baseline import ConventionalSwap
    return ConventionalSwap(open_device(f"emu-conv://?size={a.conv_size}&preset=none"), page_cluster=a.page_cluster,
                            cluster_slots=a.cluster_slots, in_place=fixed,
                            ra_lifetime=a.ra_lifetime if fixed else None)


def replay_kernel_decisions(a, ev: list, snaps: list, pages: int, series: list[dict]) -> dict:
    """The kernel's own evictions and faults, through the model."""
    sw = make_swap(a)
    ballast = Ballast(sw, pages, series)
    zero = np.zeros((1, PS), np.uint8)
    stored = np.zeros(pages, bool)                   # the model holds a copy, page not resident
    n_out = n_in = 0
    for j, (evs, old, new) in enumerate(intervals(ev, snaps, pages)):
        ballast.set(j - 1)
        ins = np.flatnonzero((old >= 2) & ((new == 1) | ((new >= 2) & (new != old))))
        outs = np.flatnonzero((new >= 2) & (new != old))
        if ins.size == 0 and outs.size == 0:
            continue
        ins = ins[stored[ins]]
        slot_new = {int(s): int(p) for p, s in zip(outs, new[outs] - 2)}
        slot_old = {int(s): int(p) for p, s in zip(ins, old[ins] - 2)}
        want_out = set(outs.tolist())
        batches: list[list[int]] = []
        read_before: list[int] = []                  # per batch: ins pages read before it began
        seen_read: set[int] = set()
        cur: list[int] | None = None
        for e in evs:
            if e[0] == "begin":
                cur = []
                batches.append(cur)
                read_before.append(len(seen_read))
            elif e[0] == "W":
                if cur is None:
                    cur = []
                    batches.append(cur)
                    read_before.append(len(seen_read))
                for s in range(e[1], e[1] + e[2]):
                    p = slot_new.get(s)
                    if p is not None and p in want_out:
                        cur.append(p)
                        want_out.discard(p)
            elif e[0] == "R":
                for s in range(e[1], e[1] + e[2]):
                    p = slot_old.get(s)
                    if p is not None:
                        seen_read.add(p)
        if want_out:                                 # written but not seen (not expected)
            batches.append(sorted(want_out))
            read_before.append(len(seen_read))
        ins_sorted = ins                             # the job faults in ascending page order
        done_in = np.zeros(pages, bool)
        k = 0

        def fault(upto: int):
            nonlocal k, n_in
            if upto > k:
                ids = ins_sorted[k:upto]
                ids = ids[~done_in[ids]]
                if ids.size:
                    sw.swap_in(ids)
                    done_in[ids] = True
                    stored[ids] = False
                    n_in += ids.size
                k = upto

        for b, nb in zip(batches, read_before):
            fault(min(nb, ins_sorted.size))
            if not b:
                continue
            ids = np.array(b, np.int64)
            pend = ids[stored[ids] & ~done_in[ids]]   # must come back before going out again
            if pend.size:
                sw.swap_in(pend)
                done_in[pend] = True
                stored[pend] = False
                n_in += pend.size
            sw.swap_out(ids, np.broadcast_to(zero, (ids.size, PS)))
            stored[ids] = True
            n_out += ids.size
        fault(ins_sorted.size)
    return model_stats("model: kernel's evictions", sw, n_out, n_in, ballast)


def run_training(a, budget_pages: int, fixed: bool, name: str, series: list[dict]) -> dict:
    from kernel_swap_guest import embedding_training
    from zswap_host.workloads import PagedEmbedding, data_preset
    dc = data_preset("kaggle", a.scale)
    sw = make_swap(a, fixed)
    emb = PagedEmbedding(dc.tables, 16, backend=sw, budget=int(budget_pages) * PS, seed=a.seed)
    ballast = Ballast(sw, emb.total_pages, series)
    embedding_training(emb, dc, a.iterations, a.batch, a.seed, progress=lambda i, n: ballast.set(i - 1))
    p = emb.stats()
    return model_stats(name, sw, p["pages_written"], p["faults"], ballast)


# ------------------------------------------------------------------------------------------------
# comparison
# ------------------------------------------------------------------------------------------------

def summarize(r: dict) -> dict:
    wh, rh = r["write_hist"], r["read_hist"]
    nw, nr = sum(wh.values()), sum(rh.values())
    bw = sum(k * v for k, v in wh.items())
    br = sum(k * v for k, v in rh.items())
    share = lambda h, n, f: sum(v for k, v in h.items() if f(k)) / n if n else 0.0   # noqa: E731
    out = {
        "run": r["name"], "pages_out": r["pages_out"], "pages_in": r["pages_in"],
        "write_requests": nw, "write_mib": round(bw / 2**20, 1),
        "mean_write_kib": round(bw / nw / KiB, 2) if nw else 0.0,
        "writes_4k": round(share(wh, nw, lambda k: k == PS), 4),
        "writes_under_32k": round(share(wh, nw, lambda k: k < 32 * KiB), 4),
        "writes_over_128k": round(share(wh, nw, lambda k: k > 128 * KiB), 4),
        "pages_in_writes_ge_32k": round(sum(k * v for k, v in wh.items() if k >= 32 * KiB) / bw, 4) if bw else 0.0,
        "read_requests": nr, "read_mib": round(br / 2**20, 1),
        "mean_read_kib": round(br / nr / KiB, 2) if nr else 0.0,
        "reads_4k": round(share(rh, nr, lambda k: k == PS), 4),
        "all_under_32k": round((share(wh, nw, lambda k: k < 32 * KiB) * nw + share(rh, nr, lambda k: k < 32 * KiB) * nr)
                               / max(nw + nr, 1), 4),
        "major_faults": r["major_faults"], "readahead_pages": r["readahead_pages"],
        "readahead_hits": r["readahead_hits"],
        "in_place_rewrites": r.get("in_place_pages", ""),
    }
    return out


BUCKETS = [(PS, PS, "4K"), (8 * KiB, 8 * KiB, "8K"), (12 * KiB, 28 * KiB, "12-28K"), (32 * KiB, 124 * KiB, "32-124K"),
           (128 * KiB, 128 * KiB, "128K"), (132 * KiB, 1 << 40, ">128K")]


def bucketize(h: dict) -> list[float]:
    n = sum(h.values()) or 1
    return [sum(v for k, v in h.items() if lo <= k <= hi) / n for lo, hi, _ in BUCKETS]


def plot(configs: list[tuple[str, list[dict]]], path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colors = ["#222222", "#1f77b4", "#2ca02c", "#d62728"]
    fig, axes = plt.subplots(len(configs), 2, figsize=(12, 4.2 * len(configs)), squeeze=False)
    x = np.arange(len(BUCKETS))
    for row, (name, runs) in zip(axes, configs):
        w = 0.8 / len(runs)
        for ax, key, title in zip(row, ("write_hist", "read_hist"), ("swap writes", "swap reads")):
            for j, r in enumerate(runs):
                n = sum(r[key].values())
                ax.bar(x + (j - (len(runs) - 1) / 2) * w, bucketize(r[key]), w, color=colors[j % len(colors)],
                       label=f"{r['name']} ({n:,} requests)")
            ax.set_xticks(x, [b[2] for b in BUCKETS])
            ax.set(xlabel="request size", ylabel="share of requests", title=f"{name}: {title}", ylim=(0, 1.05))
            ax.grid(alpha=0.3, axis="y")
            ax.legend(fontsize=8)
    fig.suptitle("Linux 6.1 swap (QEMU guest, cgroup limit) vs ConventionalSwap on the same DLRM embedding traffic",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


COLS = [("pages_out", "pages swapped out", "{:,}"), ("pages_in", "pages swapped in", "{:,}"),
        ("write_requests", "write requests", "{:,}"), ("mean_write_kib", "mean write (KiB)", "{:.2f}"),
        ("writes_4k", "writes of 4 KiB", "{:.1%}"), ("writes_under_32k", "writes < 32 KiB", "{:.1%}"),
        ("writes_over_128k", "writes > 128 KiB", "{:.2%}"),
        ("pages_in_writes_ge_32k", "bytes in writes >= 32 KiB", "{:.1%}"),
        ("read_requests", "read requests", "{:,}"), ("mean_read_kib", "mean read (KiB)", "{:.3f}"),
        ("reads_4k", "reads of 4 KiB", "{:.2%}"), ("all_under_32k", "all requests < 32 KiB", "{:.1%}"),
        ("major_faults", "major faults", "{:,}"), ("readahead_pages", "readahead pages", "{:,}"),
        ("readahead_hits", "readahead hits", "{:,}"), ("in_place_rewrites", "in-place rewrites", "{:,}")]


def table(rows: list[dict]) -> str:
    head = "| | " + " | ".join(r["run"] for r in rows) + " |"
    lines = [head, "|---" * (len(rows) + 1) + "|"]
    for key, label, fmt in COLS:
        cells = []
        for r in rows:
            v = r.get(key, "")
            cells.append(fmt.format(v) if v != "" and v is not None else "–")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def validate_run(a, name: str, gdir: str) -> tuple[list[dict], list[dict], dict]:
    """Kernel numbers and the three model runs for one guest job."""
    kern, ev, snaps, meta = kernel_side(gdir)
    job, guest = meta["job"], meta["guest"]
    a.scale, a.iterations, a.batch, a.seed = job["scale"], job["iterations"], job["batch"], job["seed"]
    a.page_cluster = guest.get("page_cluster", a.page_cluster)
    other = int(round(kern["nontable_swapped_pages"]))
    a.conv_size = guest["dev_bytes"]
    pages = job["table_pages"]
    budget = int(round(kern["table_resident_pages"]))
    a.ra_lifetime = budget // 2
    outs, same = in_place_share(ev, snaps, pages)
    kern["in_place_pages"] = same
    kern["name"] = f"kernel 6.1 ({name})"
    progress(f"[{name}] kernel: {kern['pages_out']:,} pages out, {kern['pages_in']:,} in "
             f"({other:,} pages of the job's other memory swapped out on average), "
             f"{sum(kern['write_hist'].values()):,} write / {sum(kern['read_hist'].values()):,} read requests; "
             f"pagemap: {outs:,} table swap-outs, {same:,} back to the page's previous slot")
    t = time.monotonic()
    rep = replay_kernel_decisions(a, ev, snaps, pages, job["series"])
    progress(f"[{name}] model replaying the kernel's evictions: {time.monotonic() - t:.0f} s")
    t = time.monotonic()
    same_train = run_training(a, budget, True, "model: same training", job["series"])
    progress(f"[{name}] model, same training (PagedEmbedding budget {budget} pages = the kernel's mean table "
             f"residency, ra_lifetime {a.ra_lifetime}): {time.monotonic() - t:.0f} s")
    old = run_training(a, budget, False, "model before the fix", job["series"])
    progress(f"[{name}] model before the fix (in_place=False, no readahead ageing), same training")
    runs = [kern, rep, same_train, old]
    rows = [dict(summarize(r), config=name) for r in runs]
    info = {"swap_area_bytes": guest["dev_bytes"], "nontable_swapped_pages": other, "workload": {k: job[k] for k in (
                "scale", "iterations", "batch", "seed", "budget", "table_pages", "table_bytes", "limit", "wall_s",
                "loss_first", "loss_last")},
            "kernel_reclaim": {"calls": kern["reclaim_calls"], "pages_per_call": round(kern["reclaimed_per_call"], 1)},
            "kernel_vmstat_delta_whole_job": guest.get("vmstat_delta"), "kernel_blk_delta": guest.get("blk_delta"),
            "table_swapouts_seen_in_snapshots": outs, "table_swapouts_to_previous_slot": same,
            "model": {"page_cluster": a.page_cluster, "cluster_slots": a.cluster_slots, "device_bytes": a.conv_size,
                      "budget_pages_same_training": budget, "ra_lifetime": a.ra_lifetime},
            "guest_job_wall_s": guest.get("job_wall_s")}
    return runs, rows, info


def parse_runs(text: str) -> list[tuple[str, int]]:
    from emulator.zns_vm import _size
    out = []
    for spec in text.split(","):
        name, _, size = spec.partition(":")
        out.append((name, _size(size) if size and size != "0" else 0))
    return out


def main(argv=None) -> int:
    from emulator.zns_vm import _size
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--out", default=os.path.join(REPO, "experiments", "results", "kernel_swap"))
    ap.add_argument("--guest-results", default=None, help="reuse the guest results in DIR (no boot)")
    ap.add_argument("--workdir", default=None, help="guest images and raw results [a temporary folder]")
    ap.add_argument("--runs", default="roomy:0,tight:128MiB", type=parse_runs,
                    help="guest jobs, NAME:SWAP_AREA_SIZE (0 = the whole device), one boot "
                         "[roomy:0,tight:128MiB: the area stays under half full / stays over half full]")
    ap.add_argument("--scale", type=float, default=0.05, help="Criteo Kaggle table scale [0.05: 103 MiB, the quick preset]")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--budget", type=float, default=0.25, help="memory.max leaves the tables this share of their bytes")
    ap.add_argument("--page-cluster", type=int, default=3, help="vm.page-cluster in the guest and the model [3]")
    ap.add_argument("--cluster-slots", type=int, default=512, help="SWAPFILE_CLUSTER (512: CONFIG_THP_SWAP=y)")
    ap.add_argument("--conv-size", type=_size, default=1 << 30, help="swap device size [1GiB]")
    ap.add_argument("--memory", default="2G", help="guest memory")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=1800)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    guest_s = None
    if a.guest_results:
        gdir = a.guest_results
        names = [n for n, _ in a.runs if os.path.exists(os.path.join(gdir, n, "guest.json"))] or sorted(
            d for d in os.listdir(gdir) if os.path.exists(os.path.join(gdir, d, "guest.json")))
        progress(f"phase 1/{len(names) + 2}: reusing guest results in {gdir}: {', '.join(names)}")
    else:
        import tempfile
        gdir = os.path.join(a.out, "guest")
        a.temp_workdir = a.workdir is None
        a.workdir = a.workdir or tempfile.mkdtemp(prefix="ksv-")
        names = [n for n, _ in a.runs]
        progress(f"phase 1/{len(names) + 2}: kernel runs in the QEMU guest ({', '.join(names)})")
        guest_s = run_guest(a, gdir)
        progress(f"guest done in {guest_s:.0f} s (boot + runs)")
    all_runs, all_rows, infos = [], [], {}
    for k, name in enumerate(names):
        progress(f"phase {2 + k}/{len(names) + 2}: {name}: parsing the kernel's trace, counters and pagemap "
                 "snapshots, then the model runs")
        runs, rows, info = validate_run(a, name, os.path.join(gdir, name))
        all_runs.append((name, runs))
        all_rows += rows
        infos[name] = info
    progress(f"phase {len(names) + 2}/{len(names) + 2}: comparison")
    with open(os.path.join(a.out, "comparison.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=["config"] + [k for k in all_rows[0] if k != "config"])
        wr.writeheader()
        wr.writerows(all_rows)
    with open(os.path.join(a.out, "request_sizes.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["config", "run", "op", "request_bytes", "count"])
        for name, runs in all_runs:
            for r in runs:
                for op, key in (("write", "write_hist"), ("read", "read_hist")):
                    for k in sorted(r[key]):
                        wr.writerow([name, r["name"], op, k, r[key][k]])
    guest = json.load(open(os.path.join(gdir, names[0], "guest.json")))
    summary = {"clock": "none (request counts and sizes only)", "guest_boot_and_run_s": guest_s,
               "kernel": {k: guest.get(k) for k in ("kernel", "thp_enabled", "lru_gen", "zswap", "vma_ra_enabled",
                                                     "scheduler", "max_sectors_kb", "max_segments", "device_bytes",
                                                     "config", "swappiness", "page_cluster")},
               "configs": infos, "rows": all_rows}
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    try:
        plot(all_runs, os.path.join(a.out, "request_sizes.png"))
    except Exception as e:                          # pragma: no cover - matplotlib missing
        print(f"(no figure: {e})")
    for name, runs in all_runs:
        print(f"\n{name}: swap area {infos[name]['swap_area_bytes'] >> 20} MiB")
        print(table([r for r in all_rows if r["config"] == name]))
    print(f"\nresults in {a.out}; total {time.monotonic() - T0:.0f} s"
          + (f" (guest boot + runs {guest_s:.0f} s)" if guest_s else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
