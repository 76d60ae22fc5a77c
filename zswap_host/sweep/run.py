"""A whole sweep: check the grid, the executor and the trace (nothing is written or started for a
sweep that cannot run), optionally generate the trace from a preset and the seed, run every point
on the serial or the Ray executor, and summarise."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from .grid import Point, SweepError, make_grid
from .point import check_point_inputs
from .serial import Progress, run_serial

EXECUTORS = ("ray", "serial")


@dataclass(frozen=True)
class Generate:
    """Generate the trace first (``workloads.generate_dlrm_trace``, torch-free) from a bench preset:
    its batches drawn from the sweep's seed, its DRAM budget and iterations (None: the preset's)."""

    preset: str
    iterations: int | None = None
    budget: str | None = None
    us_per_sample: float | None = None


@dataclass(frozen=True)
class SweepSpec:
    """What to sweep. ``trace``: a ``.npz`` SwapTrace or a chunked trace directory (with
    ``generate``: where the generated one goes). ``preset``: the trace's bench preset if its meta
    lacks one. ``retries``: extra attempts per point. ``address``/``num_cpus``: the Ray executor's."""

    trace: str
    placements: tuple[str, ...]
    victims: tuple[str, ...]
    utilisations: tuple[float, ...]
    interfaces: tuple[str, ...]
    seed: int = 0
    executor: str = "ray"
    retries: int = 2
    address: str | None = None
    num_cpus: int | None = None
    preset: str | None = None
    generate: Generate | None = None


def check(spec: SweepSpec) -> list[Point]:
    """The grid's points, or ``SweepError`` for a spec that cannot run (names, utilisations,
    executor, retries, Ray missing). The trace is not read here (it may be generated next)."""
    points = make_grid(list(spec.placements), list(spec.victims), list(spec.utilisations), list(spec.interfaces))
    if spec.executor not in EXECUTORS:
        raise SweepError(f"unknown executor {spec.executor!r}; known: {', '.join(EXECUTORS)}")
    if isinstance(spec.retries, bool) or not isinstance(spec.retries, int) or spec.retries < 0:
        raise SweepError(f"retries must be a whole number >= 0, not {spec.retries!r}")
    if spec.num_cpus is not None and spec.num_cpus < 1:
        raise SweepError(f"num_cpus must be >= 1, not {spec.num_cpus}")
    if spec.executor == "ray":
        from .ray_executor import import_ray

        import_ray()
    elif spec.address:
        raise SweepError("--address applies to the Ray executor")
    return points


def run_sweep(spec: SweepSpec, progress: Progress | None = None, on_generate=None) -> dict:
    """Run the sweep; the summary: ``spec``, ``trace`` (path, sha256, meta's preset and counts),
    ``points``, ``wall_s``, ``rows`` (one per point, in point order; equal on both executors) and
    ``point_timing`` (point key -> its ``wall_s`` and ``pages_per_s`` here, outside the rows).
    ``progress(0, points, None)`` is called once before the first point starts.
    ``on_generate(done, total)``: trace generation progress. ``SweepError`` for a spec that cannot
    run (before anything runs) or a point that failed after its retries."""
    points = check(spec)
    t0 = time.monotonic()
    if spec.generate is not None:
        from ..workloads import TraceGenError, generate_dlrm_trace

        g = spec.generate
        try:
            generate_dlrm_trace(spec.trace, g.preset, budget=g.budget, iterations=g.iterations, seed=spec.seed,
                                us_per_sample=g.us_per_sample, progress=on_generate)
        except TraceGenError as e:
            raise SweepError(str(e)) from None
    src = check_point_inputs(spec.trace, spec.preset)
    args = (points, spec.trace, spec.seed, src.preset, spec.retries, progress)
    timing: dict[str, dict] = {}
    if progress is not None:
        progress(0, len(points), None)         # the bar shows before the first point ends
    if spec.executor == "ray":
        from .ray_executor import run_ray

        rows = run_ray(*args, address=spec.address, num_cpus=spec.num_cpus, timing=timing)
    else:
        rows = run_serial(*args, timing=timing)
    return {"spec": asdict(spec), "trace": {"path": spec.trace, "sha256": src.sha256(), "preset": src.preset,
                                            **src.counts()},
            "points": len(points), "wall_s": round(time.monotonic() - t0, 1), "rows": rows,
            "point_timing": {p.key: timing[p.key] for p in points if p.key in timing}}
