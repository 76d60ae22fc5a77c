"""The sweep's grid: the cartesian product of store placements x GC victim policies x utilisations
x interfaces, each point a small frozen record with a stable key. Names are checked against the
registries (``store.placement``, ``gc.policies``, ``bench.same_flash.INTERFACES``) before anything
runs, so a typo costs one line, not a half-finished sweep."""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass

from ..errors import ZswapError

PLUGIN_DOC = "docs/plugins.md"
# the bench's bounds on tables / usable bytes (bench.plan): outside them no device can be sized
MIN_UTILISATION, MAX_UTILISATION = 0.05, 0.99


class SweepError(ZswapError, ValueError):
    """A sweep that cannot run as asked (unknown name, bad utilisation, missing trace or Ray), or a
    point that failed after its retries (``point`` names it)."""

    def __init__(self, message: str, point: "Point | None" = None) -> None:
        super().__init__(message)
        self.point = point


@dataclass(frozen=True, order=True)
class Point:
    """One run of the sweep: the store with ``placement`` and ``victim`` on an ``interface``'s SSD
    sized so the trace's tables fill ``utilisation`` of the conventional SSD's usable bytes (all
    interfaces built from the same raw flash). Ordered by its fields, in this order."""

    placement: str
    victim: str
    utilisation: float
    interface: str

    @property
    def key(self) -> str:
        """Stable, unique within a grid, safe in a file name: ``temporal.greedy.u0.9.zns``."""
        return f"{self.placement}.{self.victim}.u{self.utilisation:g}.{self.interface}"

    def as_dict(self) -> dict:
        return asdict(self)


def known() -> dict[str, list[str]]:
    """The names each axis accepts now (registered placements and victim policies included)."""
    from ..bench.same_flash import INTERFACES
    from ..gc import victim_policies
    from ..store.placement import placements

    return {"placement": list(placements()), "victim": list(victim_policies()), "interface": list(INTERFACES)}


def make_grid(placements: list[str], victims: list[str], utilisations: list[float],
              interfaces: list[str]) -> list[Point]:
    """Every combination, sorted by key fields (duplicates dropped). ``SweepError`` (one line,
    listing the known names and, for policies, how to load one's own) for an unknown name, an empty axis or a utilisation outside
    0.05..0.99."""
    ok = known()
    for axis, given in (("placement", placements), ("victim", victims), ("interface", interfaces)):
        if not given:
            raise SweepError(f"no {axis} given; known: {', '.join(ok[axis])}")
        bad = [g for g in given if g not in ok[axis]]
        if bad:
            own = f"; one of your own: --plugin MODULE|FILE.py that registers it ({PLUGIN_DOC})" \
                if axis in ("placement", "victim") else ""
            raise SweepError(f"unknown {axis} {bad[0]!r}; known: {', '.join(ok[axis])}{own}")
    if not utilisations:
        raise SweepError("no utilisation given")
    for u in utilisations:
        if isinstance(u, bool) or not isinstance(u, (int, float)) or not MIN_UTILISATION <= u <= MAX_UTILISATION:
            raise SweepError(f"utilisation must be within {MIN_UTILISATION}..{MAX_UTILISATION} "
                             f"(tables / usable bytes), not {u!r}")
    return sorted({Point(p, v, float(u), i)
                   for p, v, u, i in itertools.product(placements, victims, utilisations, interfaces)})


def parse_utilisations(text: str) -> list[float]:
    """'0.75,0.9' or '75%,90%' -> [0.75, 0.9]; ``SweepError`` for anything else."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            out.append(float(part[:-1]) / 100 if part.endswith("%") else float(part))
        except ValueError:
            raise SweepError(f"bad utilisation {part!r}: give fractions (0.9) or percentages (90%)") from None
    return out
