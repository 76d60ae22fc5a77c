"""A published conventional-SSD characterisation reproduced on the conventional SSD model.

The reference is the conventional NVMe drive of Doekemeijer, Tehrany, Chandrasekaran, Bjørling and
Trivedi, "Performance Characterization of NVMe Flash Devices with Zoned Namespaces (ZNS)", IEEE CLUSTER
2023 (arXiv 2310.19094): the drive its artefact (github.com/stonet-research/NVMeBenchmarks) calls
``nvme-a``, measured with SPDK/fio beside the ZN540.  ``experiments/data/nvme_a_published.csv`` holds the
points, one row per point with the file and field it was read from and its ``role``: ``calibrate``
(the fit of the preset may use it) or ``held_out`` (it may not), declared before the fit.

The study builds the conventional model (``ConvSSD``, the page-mapped FTL with device GC the emulated
conventional devices charge) of a preset at the drive's size, with the preset's erase block unscaled,
and runs the artefact's experiments on its modeled clock:

* ``seq_write`` / ``rand_write``: sequential / random writes in a 40 GiB range (fio ``size=40G``) of a
  fresh drive, 4-128 KiB at QD 1 (and random at QD 32), 4 KiB at QD 1-256 (MiB/s);
* ``read_qd``: 4 KiB random reads of written data at QD 1-256 (KIOPS);
* ``read_under_writes``: 4 KiB random reads (QD 1: mean latency; QD 32: KIOPS) while a writer streams
  128 KiB sequential writes at 0-1000 MiB/s;
* ``gc_steady``: the drive full (every LBA written once, sequentially), then 1 MiB random writes from
  4 jobs x QD 32 over a 400 GiB range (offsets 100-500 GiB) until the FTL's write amplification is
  steady; then the writers' bandwidth, and the mean latency of a 4 KiB read issued among them.  The
  fio writers are rate-limited (250, 750, 1115 MiB/s per job), all above what the drive sustains:
  the model runs them unthrottled, so its value is the same for every rate and reader depth.

``quick`` shrinks the drive 16x (GC ranges with it) and the volumes, for tests.  Deterministic.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .characterize_common import (deep_reads_under_writes, issue_times, load_points, qd1_reads_under_writes,
                                  summarize)
from .ssdsim import ConvSSD, get_preset
from .ssdsim.model import READ, WRITE
from .ssdsim.presets import NandPreset

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

PUBLISHED_CSV = Path(__file__).resolve().parent.parent / "experiments" / "data" / "nvme_a_published.csv"
TOLERANCE = 0.15
DEFAULT_PRESET = "cluster23-nvme-a"

# The drive's exported size.  The artefact does not print it; its long runs address 500 GiB, and the
# preset's geometry (32 dies of 512 Gbit TLC = 2 TiB raw) exports 1.92 TB as the 1 DW/D datacenter drives
# of that raw size do: 3 750 748 848 sectors of 512 B (IDEMA).
DRIVE_BYTES = 3_750_748_848 * 512 // 4096 * 4096
FIO_SIZE = 40 * GiB            # the grid runs' fio size=40G
GC_OFFSET, GC_RANGE = 100 * GiB, 400 * GiB   # long3: 4 jobs x 100 GiB from offset 100 GiB
GC_READ_RANGE = 100 * GiB      # long3: the reader, offset 0, size 100G


def load_published(path: str | Path | None = None) -> list[dict]:
    return load_points(path if path is not None else PUBLISHED_CSV, int_cols=("bs_kib", "qd", "write_rate_mib_s"))


class _Study:
    def __init__(self, preset: NandPreset | str, quick: bool):
        self.preset = get_preset(preset) if isinstance(preset, str) else preset
        self.quick = quick
        self.scale = 16 if quick else 1
        self.cap = DRIVE_BYTES // self.scale // MiB * MiB
        self.volume = (32 if quick else 192) * MiB
        self.reads = 4000 if quick else 40000
        self.model = ConvSSD(self.preset, self.cap)
        self.seq_cursor = 0
        # data to read: a range filled once, clear of the write ranges
        self.read_base, self.read_bytes = FIO_SIZE, (2 if quick else 16) * GiB
        self.wcursor = self.read_base + self.read_bytes      # the interference writer's next offset
        self._write(np.arange(self.read_base, self.read_base + self.read_bytes, 128 * KiB, dtype=np.int64),
                    128 * KiB, qd=4)
        self.idle()

    def idle(self, seconds: float = 1.0) -> None:
        self.model.advance(seconds)

    def _write(self, offs: np.ndarray, bs: int, qd: int) -> np.ndarray:
        return self.model.submit(np.full(offs.size, WRITE, np.uint8), offs, np.full(offs.size, bs, np.int64), qd=qd)

    def write_throughput(self, bs: int, qd: int, random: bool, rng) -> float:
        """MiB/s of writes of ``bs`` at ``qd`` in the 40 GiB range; the first third is warm-up."""
        self.idle()
        n = max(48, self.volume // bs)
        slots = FIO_SIZE // bs
        if random:
            offs = rng.integers(0, slots, n).astype(np.int64) * bs
        else:
            offs = ((self.seq_cursor // bs + np.arange(n, dtype=np.int64)) % slots) * bs
            self.seq_cursor = int(offs[-1]) + bs
        c = self._write(offs, bs, qd)
        warm = n // 3
        return (n - warm) * bs / float(c[-1] - c[warm - 1]) / MiB

    def _random_reads(self, n: int, rng, bs: int = 4 * KiB) -> np.ndarray:
        return self.read_base + rng.integers(0, self.read_bytes // bs, n).astype(np.int64) * bs

    def read_iops(self, qd: int, rng) -> float:
        self.idle()
        n = max(self.reads, 40 * qd)
        c = self.model.submit(np.full(n, READ, np.uint8), self._random_reads(n, rng), np.full(n, 4 * KiB, np.int64),
                              qd=qd)
        warm = n // 10
        return (n - warm) / float(c[-1] - c[warm - 1]) / 1e3

    def _writer_offsets(self, n: int) -> np.ndarray:
        """Sequential 128 KiB writes from the writer's cursor (wrapping inside the drive's upper part)."""
        wbs = 128 * KiB
        lo = self.read_base + self.read_bytes
        span = (self.cap - lo) // wbs
        k = (self.wcursor - lo) // wbs + np.arange(n, dtype=np.int64)
        self.wcursor = lo + int((k[-1] + 1) % span) * wbs if n else self.wcursor
        return lo + (k % span) * wbs

    def reads_under_writes(self, qd: int, rate: float, rng) -> dict:
        wbs, rbs = 128 * KiB, 4 * KiB
        self.idle()
        if qd == 1:
            n_reads = max(2000, self.reads // 4)
            est = int(n_reads * 400e-6 * rate * MiB / wbs) + 16 if rate > 0 else 0
            return qd1_reads_under_writes(self.model, self._random_reads(n_reads, rng, rbs),
                                          self._writer_offsets(est), rate, wbs, rbs)
        return deep_reads_under_writes(self.model, self._random_reads(self.reads, rng, rbs), self._writer_offsets,
                                       qd, rate, wbs, rbs, self.idle)


def gc_steady_state(preset: NandPreset, quick: bool, rng) -> dict:
    """long3 on a full drive: 1 MiB random writes, 4 x QD 32, over 400 GiB, until steady; then one
    4 KiB read (offsets 0-100 GiB) every 128 writes, QD 129 overall.  Write MiB/s, read mean latency,
    write amplification of the measured part."""
    scale = 16 if quick else 1
    cap = DRIVE_BYTES // scale // MiB * MiB
    m = ConvSSD(preset, cap)
    chunk = 1 << 20
    for lo in range(0, cap // (128 * KiB), chunk):                      # fill: every LBA once, in order
        offs = np.arange(lo, min(lo + chunk, cap // (128 * KiB)), dtype=np.int64) * (128 * KiB)
        m.submit(np.full(offs.size, WRITE, np.uint8), offs, np.full(offs.size, 128 * KiB, np.int64), qd=4)
    m.advance(1.0)
    wbs, qd_w = 1 * MiB, 128
    base, slots = GC_OFFSET // scale, GC_RANGE // scale // wbs
    n_pre = 2 * slots                                                   # two passes over the range
    for lo in range(0, n_pre, 100_000):
        n = min(100_000, n_pre - lo)
        offs = base + rng.integers(0, slots, n).astype(np.int64) * wbs
        m.submit(np.full(n, WRITE, np.uint8), offs, np.full(n, wbs, np.int64), qd=qd_w)
    c0 = m.counters()
    n_w = (4000 if quick else 20000)
    per = 128
    n_r = n_w // per
    is_r = np.zeros(n_w + n_r, bool)
    is_r[np.arange(1, n_r + 1) * (per + 1) - 1] = True
    offs = np.empty(is_r.size, np.int64)
    offs[~is_r] = base + rng.integers(0, slots, n_w).astype(np.int64) * wbs
    offs[is_r] = rng.integers(0, GC_READ_RANGE // scale // (4 * KiB), n_r).astype(np.int64) * (4 * KiB)
    t0 = m.now
    qd = qd_w + 1
    c = m.submit(np.where(is_r, READ, WRITE).astype(np.uint8), offs,
                 np.where(is_r, 4 * KiB, wbs).astype(np.int64), qd=qd)
    iss = issue_times(c, qd, t0)
    c1 = m.counters()
    half = is_r.size // 2
    w_done = np.sort(c[~is_r])
    nw2 = w_done.size - w_done.size // 2
    mib_s = nw2 * wbs / float(w_done[-1] - w_done[w_done.size // 2 - 1]) / MiB
    lat = (c[is_r] - iss[is_r])[n_r // 2:]
    dh = c1["host_write_bytes"] - c0["host_write_bytes"]
    return {"write_mib_s": mib_s, "read_mean_latency_us": float(lat.mean() * 1e6),
            "write_amplification": (c1["media_write_bytes"] - c0["media_write_bytes"]) / dh if dh else 0.0,
            "drive_bytes": cap, "raw_bytes": m.raw_bytes, "measured_from_request": half}


def run(preset: NandPreset | str = DEFAULT_PRESET, quick: bool = False, published: str | Path | None = None,
        seed: int = 42, gc: bool = True, progress=None) -> dict:
    """Every published point on the model; per point the error, and per role the accuracy.
    ``progress(done, total, experiment)`` after each published point."""
    rows = load_published(published)
    st = _Study(preset, quick)
    rng = np.random.default_rng(seed)
    cache: dict = {}
    points = []
    for i, r in enumerate(rows):
        if progress is not None and i:
            progress(i, len(rows), rows[i - 1]["experiment"])
        exp, bs = r["experiment"], (r["bs_kib"] or 0) * KiB
        if exp in ("seq_write", "rand_write"):
            key = (exp, bs, r["qd"])
            if key not in cache:
                cache[key] = st.write_throughput(bs, r["qd"], exp == "rand_write", rng)
            model = cache[key]
        elif exp == "read_qd":
            key = ("r", r["qd"])
            if key not in cache:
                cache[key] = st.read_iops(r["qd"], rng)
            model = cache[key]
        elif exp == "read_under_writes":
            key = ("rw", r["qd"], r["write_rate_mib_s"])
            if key not in cache:
                cache[key] = st.reads_under_writes(r["qd"], r["write_rate_mib_s"], rng)
            res = cache[key]
            model = res["read_mean_latency_us"] if r["metric"] == "mean_latency" else res["read_kiops"]
            r = dict(r, model_write_mib_s=res["write_mib_s"])
        elif exp == "gc_steady":
            if not gc:
                continue
            if "gc" not in cache:
                cache["gc"] = gc_steady_state(st.preset, quick, np.random.default_rng(seed))
            res = cache["gc"]
            model = res["read_mean_latency_us"] if r["metric"] == "mean_latency" else res["write_mib_s"]
            r = dict(r, model_write_amplification=res["write_amplification"])
        else:
            raise ValueError(f"unknown experiment {exp!r} in the published data")
        paper = r["value"]
        err = (model / paper - 1.0) if paper else math.inf
        points.append({**{k: r[k] for k in ("experiment", "op", "bs_kib", "qd", "write_rate_mib_s", "metric", "unit",
                                            "role", "source", "field")},
                       "paper": paper, "model": float(model), "error": err,
                       "within_tolerance": bool(abs(err) <= TOLERANCE),
                       **{k: r[k] for k in ("model_write_mib_s", "model_write_amplification") if k in r}})
    if progress is not None:
        progress(len(rows), len(rows), rows[-1]["experiment"])
    summary = summarize(points, TOLERANCE)
    p = st.preset
    return {
        "study": "conv", "preset": p.name, "clock": "modeled", "quick": quick,
        "reference": rows[0]["paper"] + ", drive nvme-a", "tolerance": TOLERANCE,
        "geometry": {"logical_bytes": st.model.logical_bytes, "raw_bytes": st.model.raw_bytes,
                     "op": p.conv_op, "effective_op": st.model.effective_op, "dies": p.n_dies,
                     "erase_block_bytes": st.model.pages_per_block * p.page_size,
                     "blocks_per_die": st.model.blocks_per_die, "drive_scale": 1 / st.scale},
        "points": points, "n_points": len(points),
        "within_tolerance": summary["all"]["within_tolerance"],
        "median_abs_error": summary["all"]["median_abs_error"],
        "calibrate": summary["calibrate"], "held_out": summary["held_out"],
        "gc": cache.get("gc"),
    }


def _label(p: dict) -> str:
    e = p["experiment"]
    if e in ("seq_write", "rand_write"):
        return f"{p['op']} {p['bs_kib']}k qd{p['qd']}"
    if e == "read_qd":
        return f"randread 4k qd{p['qd']}"
    if e == "read_under_writes":
        return f"randread 4k qd{p['qd']} +{p['write_rate_mib_s']} MiB/s seq writes"
    return f"{p['op']} {p['bs_kib']}k, reader qd{p['qd']}, {p['write_rate_mib_s']} MiB/s/job"


def format_table(result: dict) -> str:
    lines = [f"Conventional-SSD characterisation on preset {result['preset']} (clock: {result['clock']}) against "
             f"{result['reference']}", ""]
    g = result["geometry"]
    lines.append(f"model: {g['logical_bytes'] / 1e12:.3f} TB exported, {g['raw_bytes'] / 2**40:.3f} TiB raw "
                 f"(OP {g['op']:.3f}), {g['dies']} dies, erase block {g['erase_block_bytes'] / MiB:g} MiB "
                 f"x {g['blocks_per_die']} per die" + ("" if g["drive_scale"] == 1 else f", drive scaled x{g['drive_scale']:g}"))
    lines.append("")
    hdr = (f"{'experiment':<18} {'point':<48} {'role':<9} {'metric':<12} {'paper':>10} {'model':>10} {'unit':<6} "
           f"{'error':>7}")
    lines += [hdr, "-" * len(hdr)]
    for p in result["points"]:
        mark = "" if p["within_tolerance"] else "  *"
        lines.append(f"{p['experiment']:<18} {_label(p):<48} {p['role']:<9} {p['metric']:<12} {p['paper']:>10.2f} "
                     f"{p['model']:>10.2f} {p['unit']:<6} {p['error'] * 100:>+6.0f}%{mark}")
    if result.get("gc"):
        lines += ["", f"gc_steady on the model: write amplification {result['gc']['write_amplification']:.2f} "
                      f"in the measured part"]
    lines.append("")
    for role in ("calibrate", "held_out"):
        s = result[role]
        med = "n/a" if s["median_abs_error"] is None else f"{s['median_abs_error'] * 100:.1f}%"
        lines.append(f"{role:<9}: {s['within_tolerance']} of {s['n_points']} points within "
                     f"±{result['tolerance'] * 100:.0f}%; median |error| {med}")
    lines.append(f"all      : {result['within_tolerance']} of {result['n_points']} points within "
                 f"±{result['tolerance'] * 100:.0f}% (* = outside); median |error| "
                 f"{result['median_abs_error'] * 100:.1f}%")
    return "\n".join(lines)
