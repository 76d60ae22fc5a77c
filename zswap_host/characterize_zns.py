"""A published, independent ZNS characterisation reproduced on the SSD timing model.

The reference is Doekemeijer, Tehrany, Chandrasekaran, Bjørling and Trivedi, "Performance
Characterization of NVMe Flash Devices with Zoned Namespaces (ZNS)", IEEE CLUSTER 2023
(arXiv 2310.19094), measured on a WD Ultrastar DC ZN540 (904 zones of 2 GiB, capacity 1077 MiB,
14 active zones) with SPDK/fio.  Every published value comes from the paper's artefact repository
(github.com/stonet-research/NVMeBenchmarks): the raw fio JSON and latency logs behind its figures.
``experiments/data/zn540_published.csv`` holds them, one row per point, with the file and field
each was read from; nothing here knows them except through that file.

The study builds the ZNS model of a preset (the same ``ZNSSSD`` an emulated ZNS device
``emu://?preset=…`` charges, with the drive's geometry: 904 zones of 2 GiB, 1077 MiB capacity)
and runs the paper's experiments on its modeled clock:

* ``size_sweep``: writes and appends to one zone at queue depth 1, 4–128 KiB requests (MiB/s);
* ``qd_sweep``: 4 KiB appends to one zone at queue depth 1–64 (KIOPS);
* ``zone_sweep`` / ``zone_sweep_bw``: one writer (QD 1) per zone on 1–14 zones (KIOPS, MiB/s);
* ``read_qd``: random reads of written zones at queue depth 1–256 (KIOPS);
* ``read_under_writes``: 4 KiB random reads (QD 1: mean latency; QD 32: KIOPS) while a writer
  streams 128 KiB sequential writes at 0–1000 MiB/s into other zones;
* ``reset`` / ``finish``: latency of a zone reset / finish against the zone's occupancy.

The model has no separate append command: an append is a write at the write pointer, so the
model value of an append point is that of the write with the same shape.  The results are
deterministic (modeled time only).
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from .characterize_common import qd1_reads_under_writes
from .ssdsim import ZNSSSD, NandPreset, get_preset
from .ssdsim.model import APPEND, READ, WRITE

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

PUBLISHED_CSV = Path(__file__).resolve().parent.parent / "experiments" / "data" / "zn540_published.csv"
TOLERANCE = 0.15
# Each published point's role, declared in the CSV before the preset was fitted: ``calibrate``
# points may set the preset's parameters, ``held_out`` points only judge them.
ROLES = ("calibrate", "held_out")

# The characterised drive: 904 zones of 2 GiB (524288 blocks of 4 KiB) with 1077 MiB capacity
# (275712 blocks), as printed by the artefact's partial_zone_reset runs.
DRIVE_ZONES = 904
DRIVE_ZONE_BLOCKS = 275712


def load_published(path: str | Path | None = None) -> list[dict]:
    """The published points (rows of the CSV, numeric columns converted)."""
    path = Path(path) if path is not None else PUBLISHED_CSV
    if not path.is_file():
        raise ValueError(f"published data not found: {path}")
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            for k in ("bs_kib", "qd", "zones", "write_rate_mib_s"):
                r[k] = int(r[k]) if r[k] not in ("", None) else None
            r["occupancy_pct"] = float(r["occupancy_pct"]) if r["occupancy_pct"] not in ("", None) else None
            r["value"] = float(r["value"])
            r["role"] = r.get("role") or "held_out"
            if r["role"] not in ROLES:
                raise ValueError(f"{path}: role {r['role']!r} is not one of {', '.join(ROLES)}")
            rows.append(r)
    if not rows:
        raise ValueError(f"{path} holds no published points")
    return rows


class _Study:
    """Runs the experiments on one ZNS model, handing out fresh zones as it goes."""

    def __init__(self, preset: str | NandPreset, quick: bool, suspend: bool = False):
        self.preset = preset if isinstance(preset, NandPreset) else get_preset(preset)
        p = self.preset
        self.zone_size, self.cap = p.zone_size, p.zone_capacity
        self.model = ZNSSSD(p, DRIVE_ZONES, p.zone_size, p.zone_capacity, suspend=suspend)
        self.next_zone = 0
        self.quick = quick
        # bytes written per throughput point (steady state: many times the write buffer)
        self.volume = (32 if quick else 192) * MiB
        self.reads = 4000 if quick else 40000

    # -- helpers ------------------------------------------------------------------------------
    def zones(self, n: int) -> list[int]:
        if self.next_zone + n > self.model.nr_zones:     # recycle: reset everything, start over
            for z in range(self.model.nr_zones):
                if self.model.zone_written(z):
                    self.model.reset(z)
            self.next_zone = 0
        zs = list(range(self.next_zone, self.next_zone + n))
        self.next_zone += n
        return zs

    def idle(self, seconds: float = 1.0) -> None:
        self.model.advance(seconds)           # queued programs finish; the next point starts idle

    def _seq_writes(self, zones: list[int], bs: int, total: int):
        """Requests that write ``total`` bytes round-robin over ``zones``, sequentially in each."""
        per_zone = min(self.cap // bs, max(1, total // bs // len(zones)))
        k = np.arange(per_zone, dtype=np.int64)
        offs = (np.asarray(zones, np.int64)[None, :] * self.zone_size + (k * bs)[:, None]).reshape(-1)
        return offs

    def write_throughput(self, bs: int, qd: int, nzones: int, op: int = WRITE) -> tuple[float, float]:
        """(MiB/s, KIOPS) of sequential writes (or zone appends: ``op``) of ``bs`` to ``nzones``
        zones, ``qd`` in flight overall; the first third of the requests is warm-up (fills the
        write buffer), the rest is measured."""
        self.idle()
        offs = self._seq_writes(self.zones(nzones), bs, self.volume)
        n = offs.size
        warm = n // 3
        m = self.model
        c = m.submit(np.full(n, op, np.uint8), offs, np.full(n, bs, np.int64), qd=qd)
        t0 = c[warm - 1] if warm else 0.0
        dt = float(c[-1] - t0)
        nreq = n - warm
        return nreq * bs / dt / MiB, nreq / dt / 1e3

    def fill(self, nzones: int) -> list[int]:
        zs = self.zones(nzones)
        offs = self._seq_writes(zs, 128 * KiB, nzones * self.cap)
        self.model.submit(np.full(offs.size, WRITE, np.uint8), offs, np.full(offs.size, 128 * KiB, np.int64), qd=4)
        self.idle()
        return zs

    def _random_reads(self, zs: list[int], bs: int, n: int, rng) -> np.ndarray:
        z = np.asarray(zs, np.int64)[rng.integers(0, len(zs), n)]
        return z * self.zone_size + rng.integers(0, self.cap // bs, n).astype(np.int64) * bs

    def read_iops(self, zs: list[int], bs: int, qd: int, rng) -> float:
        self.idle()
        n = max(self.reads, 40 * qd)
        offs = self._random_reads(zs, bs, n, rng)
        c = self.model.submit(np.full(n, READ, np.uint8), offs, np.full(n, bs, np.int64), qd=qd)
        warm = n // 10
        return (n - warm) / float(c[-1] - c[warm - 1]) / 1e3

    def reads_under_writes(self, zs: list[int], read_qd: int, rate_mib_s: float, rng) -> dict:
        """4 KiB random reads (``read_qd`` in flight) while a writer streams 128 KiB sequential writes
        into fresh zones at ``rate_mib_s`` (fio ``rate``), as the artefact's interference runs do."""
        if read_qd == 1:
            return self._qd1_reads_under_writes(zs, rate_mib_s, rng)
        return self._deep_reads_under_writes(zs, read_qd, rate_mib_s, rng)

    def _write_offsets(self, n_w: int, wbs: int) -> np.ndarray:
        per_zone = self.cap // wbs
        wzs = np.asarray(self.zones(max(1, -(-n_w // per_zone))), np.int64)   # fresh zones, filled in turn
        k = np.arange(n_w, dtype=np.int64)
        return wzs[k // per_zone] * self.zone_size + (k % per_zone) * wbs

    def _qd1_reads_under_writes(self, zs, rate_mib_s, rng) -> dict:
        """One read at a time, the writer's due writes issued with it (``characterize_common``)."""
        wbs, rbs = 128 * KiB, 4 * KiB
        n_reads = max(2000, self.reads // 4)
        self.idle()
        roffs = self._random_reads(zs, rbs, n_reads, rng)
        period = wbs / (rate_mib_s * MiB) if rate_mib_s > 0 else math.inf
        est = int(n_reads * 400e-6 / period) + 16 if rate_mib_s > 0 else 0   # ample: reads take < 400 us
        woffs = self._write_offsets(est, wbs) if est else np.zeros(0, np.int64)
        return qd1_reads_under_writes(self.model, roffs, woffs, rate_mib_s, wbs, rbs)

    def _deep_reads_under_writes(self, zs, read_qd, rate_mib_s, rng) -> dict:
        """The writes are spread evenly through the read stream (one more request in flight), at a
        ratio adjusted until the writer's achieved rate is the target."""
        wbs, rbs = 128 * KiB, 4 * KiB
        n_reads = self.reads
        m = self.model
        ratio = 0.0                                    # writes per read
        out = {}
        for _ in range(6 if rate_mib_s > 0 else 1):
            self.idle()
            n_w = int(round(ratio * n_reads))
            roffs = self._random_reads(zs, rbs, n_reads, rng)
            where = np.floor(np.arange(n_w) * (n_reads / n_w)).astype(np.int64) if n_w else np.zeros(0, np.int64)
            is_w = np.zeros(n_reads + n_w, bool)
            is_w[where + np.arange(n_w)] = True
            offs = np.empty(n_reads + n_w, np.int64)
            offs[~is_w] = roffs
            offs[is_w] = self._write_offsets(n_w, wbs)
            ops = np.where(is_w, WRITE, READ).astype(np.uint8)
            lens = np.where(is_w, wbs, rbs).astype(np.int64)
            t0 = m.now
            c = m.submit(ops, offs, lens, qd=read_qd + (1 if n_w else 0))
            dt = float(c[-1] - t0)
            achieved = n_w * wbs / dt / MiB
            out = {"read_kiops": n_reads / dt / 1e3, "write_mib_s": achieved, "read_mean_latency_us": None}
            if rate_mib_s <= 0:
                break
            ratio = rate_mib_s * MiB / wbs / (n_reads / dt) if ratio == 0 else ratio * rate_mib_s / max(achieved, 1e-9)
        return out

    def reset_latency(self, occupancy_pct: float) -> float:
        z = self.zones(1)[0]
        nbytes = self._occupied_bytes(occupancy_pct)
        if nbytes:
            offs = np.arange(0, nbytes, 128 * KiB, dtype=np.int64)
        else:
            offs = np.zeros(0, np.int64)
        lens = np.minimum(128 * KiB, nbytes - offs)
        if offs.size:
            self.model.submit(np.full(offs.size, WRITE, np.uint8), z * self.zone_size + offs, lens, qd=4)
        self.idle()
        t0 = self.model.now
        return (self.model.reset(z) - t0) * 1e3

    def finish_latency(self, occupancy_pct: float) -> float:
        """Latency of a finish (ms): to its completion, the padding programmed where the preset's
        controller pads the zone (``finish_pads_zone``), else the clock's advance (none)."""
        z = self.zones(1)[0]
        nbytes = self._occupied_bytes(occupancy_pct, finish=True)
        if nbytes:
            offs = np.arange(0, nbytes, 128 * KiB, dtype=np.int64)
            lens = np.minimum(128 * KiB, nbytes - offs)
            self.model.submit(np.full(offs.size, WRITE, np.uint8), z * self.zone_size + offs, lens, qd=4)
        self.idle()
        t0 = self.model.now
        return (max(self.model.finish(z), t0) - t0) * 1e3

    def _occupied_bytes(self, occupancy_pct: float, finish: bool = False) -> int:
        """The artefact writes whole 4 KiB blocks of the 275712-block capacity (finish: one block
        short of full at 100 %)."""
        blocks = int(round(occupancy_pct / 100.0 * DRIVE_ZONE_BLOCKS))
        if occupancy_pct > 0 and blocks == 0:
            blocks = 1
        if finish and blocks >= DRIVE_ZONE_BLOCKS:
            blocks = DRIVE_ZONE_BLOCKS - 1
        return min(blocks * 4096, self.cap)


def run(preset: str | NandPreset = "zn540", quick: bool = False, published: str | Path | None = None,
        plot_path: str | None = None, seed: int = 42, roles: tuple[str, ...] = ROLES,
        progress=None) -> dict:
    """Run every published point on the model; returns {"points": [...], summary...}.
    ``progress(done, total, experiment)`` after each published point.

    The points use the model as the emulated devices do by default (no program/erase suspend);
    the read-under-writes points are also run with suspend on (``model_with_suspend``), which the
    model offers as an option."""
    rows = [r for r in load_published(published) if r["role"] in roles]
    if not rows:
        raise ValueError(f"no published points with the roles {', '.join(roles)}")
    preset_name = preset.name if isinstance(preset, NandPreset) else preset
    st = _Study(preset, quick)
    st_susp = None
    rng = np.random.default_rng(seed)
    cache: dict = {}
    read_zones = st.fill(2)
    points = []
    for i, r in enumerate(rows):
        if progress is not None and i:
            progress(i, len(rows), rows[i - 1]["experiment"])
        exp, bs = r["experiment"], (r["bs_kib"] or 0) * KiB
        if exp in ("size_sweep", "qd_sweep", "zone_sweep", "zone_sweep_bw"):
            # QD per zone x zones in flight; appends as the model's zone append op
            op = APPEND if r["op"] == "append" else WRITE
            key = ("w", op, bs, r["qd"] * r["zones"], r["zones"])
            if key not in cache:
                cache[key] = st.write_throughput(bs, r["qd"] * r["zones"], r["zones"], op)
            mib_s, kiops = cache[key]
            model = mib_s if r["unit"] == "MiB/s" else kiops
        elif exp == "read_qd":
            key = ("r", bs, r["qd"])
            if key not in cache:
                cache[key] = st.read_iops(read_zones, bs, r["qd"], rng)
            model = cache[key]
        elif exp == "read_under_writes":
            key = ("rw", r["qd"], r["write_rate_mib_s"])
            if key not in cache:
                cache[key] = st.reads_under_writes(read_zones, r["qd"], r["write_rate_mib_s"], rng)
            if st_susp is None:
                st_susp = _Study(preset, quick, suspend=True)
                susp_zones = st_susp.fill(2)
            if ("s",) + key not in cache:
                cache[("s",) + key] = st_susp.reads_under_writes(susp_zones, r["qd"], r["write_rate_mib_s"],
                                                                  np.random.default_rng(seed))
            res, sres = cache[key], cache[("s",) + key]
            pick = "read_mean_latency_us" if r["metric"] == "mean_latency" else "read_kiops"
            model = res[pick]
            r = dict(r, model_write_mib_s=res["write_mib_s"], model_with_suspend=sres[pick])
        elif exp == "reset":
            model = st.reset_latency(r["occupancy_pct"])
        elif exp == "finish":
            model = st.finish_latency(r["occupancy_pct"])
        else:
            raise ValueError(f"unknown experiment {exp!r} in the published data")
        paper = r["value"]
        err = (model / paper - 1.0) if paper else math.inf
        points.append({**{k: r[k] for k in ("experiment", "op", "bs_kib", "qd", "zones", "write_rate_mib_s",
                                            "occupancy_pct", "metric", "unit", "source", "field", "role")},
                       "paper": paper, "model": float(model), "error": err,
                       "within_tolerance": bool(abs(err) <= TOLERANCE),
                       **{k: r[k] for k in ("model_write_mib_s", "model_with_suspend") if k in r}})
    if progress is not None:
        progress(len(rows), len(rows), rows[-1]["experiment"])
    within = sum(p["within_tolerance"] for p in points)
    result = {
        "study": "zns", "preset": preset_name, "clock": "modeled", "quick": quick,
        "reference": rows[0]["paper"], "tolerance": TOLERANCE,
        "geometry": {"zones": st.model.nr_zones, "zone_size": st.zone_size, "zone_capacity": st.cap,
                     "dies_per_zone": st.model.dies_per_zone},
        "points": points, "within_tolerance": within, "n_points": len(points),
        "median_abs_error": float(np.median([abs(p["error"]) for p in points])),
        "by_role": {role: _accuracy([p for p in points if p["role"] == role]) for role in ROLES},
        "plot": None,
    }
    if plot_path:
        result["plot"] = _plot(result, plot_path)
    return result


def _accuracy(points: list[dict]) -> dict:
    """Points within the tolerance and the median |error| of a set of points."""
    errs = [abs(p["error"]) for p in points]
    return {"n_points": len(points), "within_tolerance": sum(p["within_tolerance"] for p in points),
            "median_abs_error": float(np.median(errs)) if errs else None}


def _label(p: dict) -> str:
    e = p["experiment"]
    if e in ("size_sweep",):
        return f"{p['op']} {p['bs_kib']}k qd1"
    if e == "qd_sweep":
        return f"{p['op']} 4k qd{p['qd']}"
    if e in ("zone_sweep", "zone_sweep_bw"):
        return f"{p['op']} {p['bs_kib']}k {p['zones']} zones"
    if e == "read_qd":
        return f"randread {p['bs_kib']}k qd{p['qd']}"
    if e == "read_under_writes":
        return f"randread 4k qd{p['qd']} +{p['write_rate_mib_s']} MiB/s writes"
    return f"{p['op']} at {p['occupancy_pct']:g}% full"


def format_table(result: dict) -> str:
    lines = [f"ZNS characterisation on preset {result['preset']} (clock: {result['clock']}) against "
             f"{result['reference']}", ""]
    hdr = (f"{'experiment':<18} {'point':<36} {'role':<9} {'metric':<13} {'paper':>10} {'model':>10} "
           f"{'unit':<6} {'error':>7}")
    lines += [hdr, "-" * len(hdr)]
    for p in result["points"]:
        mark = "" if p["within_tolerance"] else "  *"
        role = "held out" if p["role"] == "held_out" else "calib"
        lines.append(f"{p['experiment']:<18} {_label(p):<36} {role:<9} {p['metric']:<13} {p['paper']:>10.3f} "
                     f"{p['model']:>10.3f} {p['unit']:<6} {p['error'] * 100:>+6.0f}%{mark}")
    susp = [p for p in result["points"] if "model_with_suspend" in p]
    if susp:
        lines += ["", "reads under writes with program/erase suspend on (model option, not the default):"]
        for p in susp:
            e = p["model_with_suspend"] / p["paper"] - 1
            lines.append(f"  {_label(p):<52} paper {p['paper']:>8.1f}  model {p['model_with_suspend']:>8.1f} "
                         f"{p['unit']:<6} {e * 100:+5.0f}%   (writer achieved {p['model_write_mib_s']:.0f} MiB/s)")
    lines += ["", f"{result['within_tolerance']} of {result['n_points']} points within "
              f"±{result['tolerance'] * 100:.0f}% (* = outside); median |error| "
              f"{result['median_abs_error'] * 100:.0f}%"]
    for role, acc in result.get("by_role", {}).items():
        if acc["n_points"]:
            lines.append(f"  {role.replace('_', ' ') + ' points:':<18} {acc['within_tolerance']} of {acc['n_points']} "
                         f"within ±{result['tolerance'] * 100:.0f}%, median |error| {acc['median_abs_error'] * 100:.1f}%")
    if result.get("plot"):
        lines.append(f"plot: {result['plot']}")
    return "\n".join(lines)


def _plot(result: dict, path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = result["points"]
    fig, axes = plt.subplots(2, 3, figsize=(14, 8))
    panels = [
        ("size_sweep", "request size (KiB), QD 1, 1 zone", "MiB/s", lambda p: p["bs_kib"], "op", True),
        ("qd_sweep", "queue depth, 4 KiB appends, 1 zone", "KIOPS", lambda p: p["qd"], "op", True),
        ("zone_sweep", "concurrent zones, 4 KiB, QD 1 each", "KIOPS", lambda p: p["zones"], "op", False),
        ("read_qd", "queue depth, random reads", "KIOPS", lambda p: p["qd"], "bs_kib", True),
        ("read_under_writes", "concurrent write rate (MiB/s), 4 KiB reads QD 1", "mean read latency (us)",
         lambda p: p["write_rate_mib_s"], None, False),
        ("reset", "zone occupancy (%)", "latency (ms)", lambda p: p["occupancy_pct"], "op", False),
    ]
    for ax, (exp, xl, yl, xf, group, logx) in zip(axes.flat, panels):
        sel = [p for p in pts if p["experiment"] == exp and (exp != "read_under_writes" or p["qd"] == 1)]
        if exp == "reset":
            sel += [p for p in pts if p["experiment"] == "finish"]
        groups: dict = {}
        for p in sel:
            groups.setdefault(p[group] if group else "", []).append(p)
        for i, (g, ps) in enumerate(sorted(groups.items(), key=lambda kv: str(kv[0]))):
            ps = sorted(ps, key=xf)
            x = [max(xf(p), 1e-3) if logx else xf(p) for p in ps]
            col = f"C{i}"
            name = f"{g}k" if group == "bs_kib" else str(g)
            ax.plot(x, [p["paper"] for p in ps], "o-", color=col, label=f"paper {name}".strip())
            ax.plot(x, [p["model"] for p in ps], "s--", color=col, mfc="none", label=f"model {name}".strip())
        if logx:
            ax.set_xscale("log", base=2)
        if exp == "reset":
            ax.set_yscale("symlog", linthresh=1.0)
        ax.set_xlabel(xl, fontsize=9)
        ax.set_ylabel(yl, fontsize=9)
        ax.set_title(exp, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{result['preset']} model vs Doekemeijer et al. 2023 (ZN540); "
                 f"{result['within_tolerance']}/{result['n_points']} points within ±15%", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
