"""The serial executor: every point in this process, one after another, each retried as the Ray
executor retries its tasks — the reference the Ray executor's output must equal."""

from __future__ import annotations

from typing import Callable

from .failures import describe, permanent
from .grid import Point, SweepError
from .point import run_point_timed

# progress(points done, points, the point just done; None for the call before the first point)
Progress = Callable[[int, int, "Point | None"], None]


def run_serial(points: list[Point], trace_path: str, seed: int = 0, preset: str | None = None,
               retries: int = 2, progress: Progress | None = None, timing: dict | None = None) -> list[dict]:
    """Rows of ``run_point`` for ``points``, sorted by point. A point that raises is run again up to
    ``retries`` times, unless its error cannot change on retry (``failures.permanent``: a bad name
    or argument); if it still fails, ``SweepError`` names it and its last error (the points after it
    are not run). ``progress(done, total, point)`` after each point. ``timing``: filled with point
    key -> ``{"wall_s", "pages_per_s"}`` (``point.run_point_timed``)."""
    if retries < 0:
        raise SweepError(f"retries must be >= 0, not {retries}")
    rows = []
    for i, p in enumerate(sorted(points)):
        for attempt in range(retries + 1):
            try:
                row, took = run_point_timed(p, trace_path, seed, preset)
                rows.append(row)
                if timing is not None:
                    timing[p.key] = took
                break
            except SweepError:
                raise                               # bad input: the same on every attempt
            except Exception as e:
                if permanent(e):
                    raise SweepError(f"point {p.key} failed (not retried: {type(e).__name__} cannot change on "
                                     f"retry): {describe(e)}", p) from None
                if attempt == retries:
                    raise SweepError(f"point {p.key} failed after {retries} retries: {type(e).__name__}: {e}",
                                     p) from e
        if progress is not None:
            progress(i + 1, len(points), p)
    return rows
