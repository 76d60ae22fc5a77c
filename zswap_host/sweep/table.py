"""The sweep's terminal table: a pivot per metric, victim policies as columns and utilisations as rows
(under each interface and placement), every axis in the order the command line gave it, each victim
after the first beside its change against the first; then each point's wall time and pages/s. The
CSV keeps one row per point; this is for reading."""

from __future__ import annotations

from ..text_table import aligned

# (title, value of a row, format); the deltas are relative to the first victim's value
METRICS = (
    ("write amplification (flash writes / swapped-out pages, after the replay's final flush)",
     lambda r: r["write_amplification"], "{:.3f}"),
    ("stall s (modeled)", lambda r: r["stall_s"], "{:.3f}"),
    ("GC MiB (store + device)", lambda r: r["store_gc_mib"] + r["device_gc_mib"], "{:.1f}"),
    ("swap-in p99 us (modeled)", lambda r: r["swap_in_p99_us"], "{:.1f}"),
)

MISSING = "-"

# why a write amplification can read below 1 once the replay has flushed (docs/glossary.md, "WAF")
WAF_BELOW_1 = ("WAF below 1: pages rewritten or discarded while still in the store's write buffers never "
               "reached flash (every replay ends with a flush)")


def _delta(v: float, v0: float) -> str:
    """The change from ``v0`` to ``v``: a percentage, or the difference when ``v0`` is 0."""
    if v0 == 0:
        return "+0" if v == 0 else f"{v - v0:+.3g}"
    return f"{round((v - v0) / abs(v0) * 100, 1) + 0.0:+.1f}%"     # + 0.0: no "-0.0%"


def _label_rows(interfaces, placements, utilisations):
    """(interface, placement, utilisation) in the given order, with a label cell left blank where it
    repeats the row above (the block reads as a tree)."""
    out, prev = [], (None, None)
    for i in interfaces:
        for p in placements:
            for u in utilisations:
                cells = [i if prev[0] != i else "", p if prev != (i, p) else "", f"{u:g}"]
                prev = (i, p)
                out.append(((i, p, u), cells))
    return out


def format_sweep(rows: list[dict], placements, victims, utilisations, interfaces,
                 timing: dict[str, dict] | None = None) -> str:
    """The pivot tables of ``rows`` (``run_point`` rows) for the axes in the order given;
    ``timing``: point key -> ``{"wall_s", "pages_per_s"}`` (the per-point block, if given)."""
    by = {(r["interface"], r["placement"], float(r["utilisation"]), r["victim"]): r for r in rows}
    labels = _label_rows(interfaces, placements, [float(u) for u in utilisations])
    first = victims[0]
    head = ["interface", "placement", "util", first]
    for v in victims[1:]:
        head += [v, f"vs {first}"]
    out: list[str] = []
    for title, value, fmt in METRICS:
        body = []
        for (i, p, u), cells in labels:
            r0 = by.get((i, p, u, first))
            v0 = value(r0) if r0 else None
            row = [*cells, fmt.format(v0) if r0 else MISSING]
            for v in victims[1:]:
                r = by.get((i, p, u, v))
                row += [fmt.format(value(r)) if r else MISSING,
                        _delta(value(r), v0) if r and r0 else MISSING]
            body.append(row)
        out += [title, *aligned(head, body, labels=3)]
        if title.startswith("write amplification") and any(r["write_amplification"] < 1 for r in rows):
            out.append(WAF_BELOW_1)
        out.append("")
    if timing:
        body = []
        for (i, p, u), cells in labels:
            row = list(cells)
            for v in victims:
                t = timing.get(_key(p, v, u, i))
                row.append(f"{t['wall_s']:.1f} s  {t['pages_per_s']:>9,}/s" if t else MISSING)
            body.append(row)
        out += ["wall time and pages/s per point (this machine)",
                *aligned(["interface", "placement", "util", *victims], body, labels=3), ""]
    return "\n".join(out).rstrip("\n")


def _key(placement: str, victim: str, utilisation: float, interface: str) -> str:
    from .grid import Point

    return Point(placement, victim, float(utilisation), interface).key
