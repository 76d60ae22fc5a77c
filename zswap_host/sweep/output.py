"""A sweep's output: one CSV (a row per point, in point order), a JSON summary (the command, the
trace's digest and counts, the seed, the rows) and a PNG (write amplification and stall against
utilisation, a panel per interface, a line per placement and victim policy; the panels of a row share
their y-axis, so a 0.4% difference looks as small as it is)."""

from __future__ import annotations

import csv
import json
import os

CSV, JSON, PNG = "sweep.csv", "sweep.json", "sweep.png"


def write_csv(rows: list[dict], path: str) -> None:
    """``rows`` as CSV, columns in the first row's order. ``ValueError`` for no rows."""
    if not rows:
        raise ValueError("no rows to write")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def write_json(summary: dict, path: str) -> None:
    with open(path, "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")


def _ordered(values, order) -> list:
    """``values`` in ``order`` (the command line's), any others after them sorted."""
    order = [o for o in (order or ()) if o in values]
    return order + sorted(v for v in values if v not in order)


def plot(rows: list[dict], path: str, title: str = "", spec: dict | None = None) -> None:
    """Write amplification and stall (rows) against utilisation, one column per interface, one line
    per (placement, victim); each row of panels on one y-axis. ``spec``: the sweep's (its axes'
    order orders the panels and lines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spec = spec or {}
    ifaces = _ordered({r["interface"] for r in rows}, spec.get("interfaces"))
    configs = [(p, v) for p in _ordered({r["placement"] for r in rows}, spec.get("placements"))
               for v in _ordered({r["victim"] for r in rows}, spec.get("victims"))
               if any(r["placement"] == p and r["victim"] == v for r in rows)]
    metrics = (("write_amplification", "write amplification (flash / host)"), ("stall_s", "stall (s, modeled)"))
    fig, axes = plt.subplots(len(metrics), len(ifaces), figsize=(4.2 * len(ifaces), 3.4 * len(metrics)),
                             squeeze=False, sharex=True, sharey="row")
    for j, iface in enumerate(ifaces):
        for i, (key, label) in enumerate(metrics):
            ax = axes[i][j]
            for placement, victim in configs:
                rs = sorted((r for r in rows if r["interface"] == iface and r["placement"] == placement
                             and r["victim"] == victim), key=lambda r: r["utilisation"])
                ax.plot([100 * r["utilisation"] for r in rs], [r[key] for r in rs], "o-", ms=3,
                        label=f"{placement} / {victim}")
            ax.set(ylabel=label if j == 0 else None, xlabel="tables / conventional usable (%)" if i else None)
            ax.set_title(iface if i == 0 else "")
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, title="placement / victim", title_fontsize=7)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_outputs(rows: list[dict], summary: dict, out: str, title: str = "") -> list[str]:
    """CSV, JSON and PNG into directory ``out`` (created); the paths written."""
    os.makedirs(out, exist_ok=True)
    paths = [os.path.join(out, n) for n in (CSV, JSON, PNG)]
    write_csv(rows, paths[0])
    write_json({**summary, "rows": rows}, paths[1])
    plot(rows, paths[2], title, summary.get("spec"))
    return paths
