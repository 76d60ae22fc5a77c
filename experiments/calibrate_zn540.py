"""Fit the zn540 preset's controller to the published points declared ``calibrate``.

    .venv/bin/python experiments/calibrate_zn540.py [--out experiments/results/zn540_fit.json]

The points and their roles are in experiments/data/zn540_published.csv (roles declared in a commit
of their own, before this fit). The fit runs the characterisation study on the calibrate points
only (``characterize_zns.run(roles=("calibrate",))``): the held-out points are never read here.

The flash stays NVMeVirt's WD_ZN540 (dies, pages, tR, tPROG, channels, link); the fit sets the
controller mechanisms the published misses name (docs/ssd-model.md, "The controller"):

- per-command controller time of reads, writes and appends, and the command latency,
- zones striped from die z (zone_die_stagger): the drive reaches its write ceiling with 8 zones
  written at once, which zones all starting on die 0 cannot,
- the host -> device rate of write data, the program path's rate (the write ceiling),
- the flash's read time (NVMeVirt's 50 us is its model's, not the drive's), a zone append's latency
  beyond a write's,
- the reset cost of a zone holding data, a + b * MiB**g: least squares on the calibrate reset
  points (g on a grid); the rest by coordinate descent on the sum of |log error| (robust to points
  no setting reaches), multiplicative steps from 2x down to 1.01x.
- A finish pads the rest of the zone (the published finish latency falls linearly with occupancy
  at the write ceiling's rate); the latency of an empty zone's reset and a finish's own latency
  beyond its padding have no calibrate point (their points are held out), so they stay 0.

The fitted values are printed as the ``ControllerModel(...)`` the preset carries, and saved with
the calibrate points' errors in ``--out``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from zswap_host import characterize_zns as cz  # noqa: E402
from zswap_host.ssdsim import ControllerModel, get_preset  # noqa: E402

MiB = 1 << 20

# name: (start, low, high).  The starts are read off calibrate points only:
#   ctrl_write_us    1 / 185.9 KIOPS   (4 KiB writes over 8 zones)
#   ctrl_append_us   1 / 132.3 KIOPS   (4 KiB appends at QD 8)
#   ctrl_read_us     1 / 424.5 KIOPS   (4 KiB random reads at QD 128)
#   write_link_mb_s  24 KiB / (27.29 - 11.71 us): QD 1 write latency at 32 KiB and 8 KiB
#   write_path_mb_s  1146.3 MiB/s      (128 KiB writes at QD 1)
#   cmd_overhead_us  11.71 us - 8 KiB at write_link (8 KiB write at QD 1)
#   t_append_us      14.48 us - cmd - ctrl_append (8 KiB append at QD 1)
#   t_read_us        NVMeVirt's 50 us
START = {
    "cmd_overhead_us": (6.51, 1.0, 30.0),
    "t_read_us": (50.0, 20.0, 100.0),
    "t_append_us": (0.41, 0.05, 10.0),
    "ctrl_read_us": (2.356, 0.5, 10.0),
    "ctrl_write_us": (5.381, 0.5, 20.0),
    "ctrl_append_us": (7.56, 0.5, 20.0),
    "write_link_mb_s": (1577.0, 500.0, 4000.0),
    "write_path_mb_s": (1202.0, 500.0, 4000.0),
}


def preset_with(base, x: dict, reset: tuple[float, float, float]):
    ctrl = ControllerModel(
        ctrl_read_us=x["ctrl_read_us"], ctrl_write_us=x["ctrl_write_us"], ctrl_append_us=x["ctrl_append_us"],
        t_append_us=x["t_append_us"], write_link_mb_s=x["write_link_mb_s"], write_path_mb_s=x["write_path_mb_s"],
        t_reset_written_us=reset[0], reset_us_per_mib=reset[1], reset_exponent=reset[2],
        finish_pads_zone=True, zone_die_stagger=True)
    return dataclasses.replace(base, cmd_overhead_us=x["cmd_overhead_us"], t_read_us=x["t_read_us"], controller=ctrl)


def fit_reset(rows: list[dict]) -> tuple[float, float, float]:
    """(fixed us, us per MiB**g, g) of a written zone's reset, a + b * MiB**g: for each g on a grid,
    a and b by least squares on the calibrate reset points; the g of the least squared log error."""
    pts = [(r["occupancy_pct"], r["value"]) for r in rows if r["experiment"] == "reset" and r["occupancy_pct"] > 0]
    mib = np.array([max(1, round(o / 100 * cz.DRIVE_ZONE_BLOCKS)) * 4096 / MiB for o, _ in pts])
    us = np.array([v for _, v in pts]) * 1e3
    best = None
    for g in np.arange(0.1, 1.501, 0.01):
        a, b = np.linalg.lstsq(np.stack([np.ones_like(mib), mib ** g], 1), us, rcond=None)[0]
        a, b = max(a, 0.0), max(b, 0.0)
        err = float(np.sum(np.log((a + b * mib ** g) / us) ** 2)) if a + b > 0 else math.inf
        if best is None or err < best[0]:
            best = (err, float(a), float(b), float(round(g, 2)))
    return best[1:]


def loss(result: dict) -> float:
    return float(sum(abs(math.log(max(p["model"], 1e-9) / p["paper"])) for p in result["points"]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="experiments/results/zn540_fit.json")
    ap.add_argument("--quick", action="store_true", help="the study's quick volumes while fitting")
    args = ap.parse_args(argv)
    base = get_preset("zn540")
    rows = [r for r in cz.load_published() if r["role"] == "calibrate"]
    reset = fit_reset(rows)
    x = {k: v[0] for k, v in START.items()}

    def evaluate(x):
        return loss(cz.run(preset_with(base, x, reset), quick=args.quick, roles=("calibrate",)))

    best = evaluate(x)
    print(f"start: loss {best:.3f}", flush=True)
    step = 2.0
    while step > 1.01:
        improved = True
        while improved:
            improved = False
            for k, (_, lo, hi) in START.items():
                for f in (step, 1 / step):
                    y = dict(x, **{k: min(hi, max(lo, x[k] * f))})
                    if y[k] == x[k]:
                        continue
                    v = evaluate(y)
                    if v < best - 1e-9:
                        best, x, improved = v, y, True
                        print(f"step {step:.3f}: {k} = {y[k]:.4g}  loss {best:.3f}", flush=True)
        step = math.sqrt(step)
    fitted = preset_with(base, x, reset)
    result = cz.run(fitted, quick=False, roles=("calibrate",))
    out = {"loss_sum_abs_log_error": loss(result), "cmd_overhead_us": fitted.cmd_overhead_us,
           "t_read_us": fitted.t_read_us,
           "controller": dataclasses.asdict(fitted.controller),
           "calibrate": result["by_role"]["calibrate"],
           "points": [{k: p[k] for k in ("experiment", "op", "bs_kib", "qd", "zones", "write_rate_mib_s",
                                         "occupancy_pct", "paper", "model", "error")} for p in result["points"]]}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"cmd_overhead_us={fitted.cmd_overhead_us:.4g} t_read_us={fitted.t_read_us:.4g}")
    print(repr(fitted.controller))
    acc = out["calibrate"]
    print(f"calibrate points: {acc['within_tolerance']} of {acc['n_points']} within ±15%, "
          f"median |error| {acc['median_abs_error'] * 100:.1f}%  -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
