"""Helpers shared by the published-characterisation studies (``characterize_conv``; ``characterize_zns``
can fold onto them: its loader, its reads-under-writes drivers and its summary are the same ideas).

* :func:`load_points`: a published-points CSV, numeric columns converted, ``role`` checked;
* :func:`issue_times`: when ``submit(..., qd)`` issued each request (the model returns completions only);
* :func:`qd1_reads_under_writes` / :func:`deep_reads_under_writes`: 4 KiB random reads while a writer
  streams at a target rate, on any model with ``submit``/``advance``/``now``;
* :func:`summarize`: per role (calibrate / held_out / all): points within tolerance, median |error|.
"""
from __future__ import annotations

import csv
import heapq
import math
from pathlib import Path
from typing import Callable

import numpy as np

from .ssdsim.model import READ, WRITE

MiB = 1 << 20
ROLES = ("calibrate", "held_out")


def load_points(path: str | Path, int_cols=(), float_cols=(), roles: bool = True) -> list[dict]:
    """Rows of a published-points CSV; ``value`` and the named columns numeric (empty -> None).
    With ``roles``, every row must say ``calibrate`` or ``held_out``."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"published data not found: {path}")
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            for k in int_cols:
                r[k] = int(r[k]) if r.get(k) not in ("", None) else None
            for k in float_cols:
                r[k] = float(r[k]) if r.get(k) not in ("", None) else None
            r["value"] = float(r["value"])
            if roles and r.get("role") not in ROLES:
                raise ValueError(f"{path}: row {len(rows) + 2} has role {r.get('role')!r}, not one of {ROLES}")
            rows.append(r)
    if not rows:
        raise ValueError(f"{path} holds no published points")
    return rows


def issue_times(completions: np.ndarray, qd: int, t0: float) -> np.ndarray:
    """Issue time of every request of one ``submit(..., qd)`` that started at ``t0``: the first ``qd``
    at ``t0``, each later one when the earliest outstanding request completed."""
    n = completions.size
    out = np.full(n, t0)
    heap = [float(c) for c in completions[:qd]]
    heapq.heapify(heap)
    last = t0
    for i in range(qd, n):
        last = max(last, heapq.heappop(heap))
        out[i] = last
        heapq.heappush(heap, float(completions[i]))
    return out


def qd1_reads_under_writes(model, roffs: np.ndarray, woffs: np.ndarray, rate_mib_s: float, wbs: int,
                           rbs: int) -> dict:
    """One read at a time; the writes due by then (fio ``rate``: one every ``wbs / rate`` seconds, at
    most 8 at once if it fell behind) are issued together with the next read, so both are in flight.
    The read is issued first: it reaches its die before the writes' data has crossed the link, and
    the model reserves dies in issue order.  Its latency is its own completion; the next read starts
    when all of them are done."""
    period = wbs / (rate_mib_s * MiB) if rate_mib_s > 0 else math.inf
    t_start = t_next = model.now
    nw = 0
    lat = np.empty(roffs.size)
    for i in range(roffs.size):
        t = model.now
        k = 0
        if t >= t_next and nw < woffs.size:
            k = min(8, int((t - t_next) / period) + 1, woffs.size - nw)
            t_next += k * period
        ops = np.full(k + 1, WRITE, np.uint8)
        ops[0] = READ
        offs = np.append(roffs[i], woffs[nw:nw + k]).astype(np.int64)
        lens = np.full(k + 1, wbs, np.int64)
        lens[0] = rbs
        c = model.submit(ops, offs, lens, qd=k + 1)
        nw += k
        lat[i] = c[0] - t
    dt = model.now - t_start
    return {"read_kiops": roffs.size / dt / 1e3, "write_mib_s": nw * wbs / dt / MiB,
            "read_mean_latency_us": float(lat.mean() * 1e6)}


def deep_reads_under_writes(model, roffs: np.ndarray, write_offsets: Callable[[int], np.ndarray], read_qd: int,
                            rate_mib_s: float, wbs: int, rbs: int, idle: Callable[[], None]) -> dict:
    """``read_qd`` reads in flight; the writes are spread evenly through the read stream (one more
    request in flight), at a ratio adjusted (6 rounds) until the writer achieves the target rate."""
    n_reads = roffs.size
    ratio, out = 0.0, {}
    for _ in range(6 if rate_mib_s > 0 else 1):
        idle()
        n_w = int(round(ratio * n_reads))
        where = np.floor(np.arange(n_w) * (n_reads / n_w)).astype(np.int64) if n_w else np.zeros(0, np.int64)
        is_w = np.zeros(n_reads + n_w, bool)
        is_w[where + np.arange(n_w)] = True
        offs = np.empty(n_reads + n_w, np.int64)
        offs[~is_w] = roffs
        offs[is_w] = write_offsets(n_w)
        t0 = model.now
        c = model.submit(np.where(is_w, WRITE, READ).astype(np.uint8), offs,
                         np.where(is_w, wbs, rbs).astype(np.int64), qd=read_qd + (1 if n_w else 0))
        dt = float(c[-1] - t0)
        achieved = n_w * wbs / dt / MiB
        out = {"read_kiops": n_reads / dt / 1e3, "write_mib_s": achieved, "read_mean_latency_us": None}
        if rate_mib_s <= 0:
            break
        ratio = rate_mib_s * MiB / wbs / (n_reads / dt) if ratio == 0 else ratio * rate_mib_s / max(achieved, 1e-9)
    return out


def summarize(points: list[dict], tolerance: float) -> dict:
    """For calibrate, held_out and all points: how many, how many within ``tolerance``, median |error|."""
    out = {}
    for role in ROLES + ("all",):
        sel = [p for p in points if role == "all" or p.get("role") == role]
        errs = [abs(p["error"]) for p in sel]
        out[role] = {"n_points": len(sel), "within_tolerance": sum(e <= tolerance for e in errs),
                     "median_abs_error": float(np.median(errs)) if errs else None}
    return out
