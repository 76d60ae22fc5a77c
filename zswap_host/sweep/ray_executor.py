"""The Ray executor: each point a Ray task (``ray.remote`` with ``max_retries``: a task that raises
or whose worker dies is run again), gathered as they finish, merged in point order so the output
does not depend on which finished first. Each task first loads the driver's plugins in its worker
(``plugins.ensure_loaded``: the entry points and the ``--plugin`` specs, passed with the task), so a
registered victim policy or placement is known there too; a failure a retry cannot change
(``failures.permanent``) comes back as a value, so Ray does not retry it. Local Ray by default
(started and stopped here, with ``num_cpus`` workers); ``address`` joins a running cluster
(``ray://host:10001`` or ``auto``), whose nodes must import this ``zswap_host`` and read the trace
(and a plugin file) at the same path."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .failures import describe, permanent
from .grid import Point, SweepError
from .point import run_point_timed
from .serial import Progress

RAY_PIN = "ray==2.60.0"


def import_ray():
    """The ``ray`` module; ``SweepError`` naming the install command if it is missing."""
    try:
        import ray
    except ImportError:
        raise SweepError(f"the Ray executor needs Ray: pip install {RAY_PIN} (or --executor serial)") from None
    return ray


def default_cpus() -> int:
    return max(1, len(os.sched_getaffinity(0)))


@dataclass(frozen=True)
class Failed:
    """A task's failure that a retry cannot change, returned instead of raised (a raised one Ray
    would retry): the one-line message the driver reports."""

    message: str


def point_task(plugins: list[str], point: Point, trace_path: str, seed: int, preset: str | None):
    """The Ray task: the driver's ``plugins`` loaded here, then ``run_point_timed``'s (row, timing), or ``Failed``
    for an error that would come back on every attempt. Anything else is raised (and retried)."""
    from ..plugins import ensure_loaded

    try:
        ensure_loaded(plugins)
        return run_point_timed(point, trace_path, seed, preset)
    except Exception as e:
        if isinstance(e, SweepError):
            return Failed(str(e))
        if permanent(e):
            return Failed(f"point {point.key} failed (not retried: {type(e).__name__} cannot change on retry): "
                          f"{describe(e)}")
        raise


def run_ray(points: list[Point], trace_path: str, seed: int = 0, preset: str | None = None, retries: int = 2,
            progress: Progress | None = None, address: str | None = None, num_cpus: int | None = None,
            timing: dict | None = None) -> list[dict]:
    """Rows of ``run_point`` for ``points``, computed as Ray tasks, sorted by point (equal to
    ``run_serial``'s). A task is retried up to ``retries`` times (``max_retries``: a lost worker or
    an application error, except one that cannot change on retry, ``failures.permanent``, which
    fails the point at once); a point that fails cancels the rest and raises ``SweepError`` naming
    it. An already initialised Ray (e.g. a test's session) is used as it is and left running;
    otherwise Ray is started (local with ``num_cpus``, default this process's CPUs; or at
    ``address``) and shut down at the end. ``timing``: filled as ``run_serial`` fills it."""
    if retries < 0:
        raise SweepError(f"retries must be >= 0, not {retries}")
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        kw = {"address": address} if address else {"num_cpus": num_cpus or default_cpus(),
                                                   "object_store_memory": 100 << 20}
        # local workers inherit the driver's environment (PYTHONPATH: the same zswap_host)
        ray.init(include_dashboard=False, log_to_driver=False, logging_level="ERROR", **kw)
    try:
        from ..plugins import given

        task = ray.remote(num_cpus=1, max_retries=retries, retry_exceptions=True)(point_task)
        plugins = given()
        pending = {task.remote(plugins, p, trace_path, seed, preset): p for p in points}
        rows: dict[Point, dict] = {}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            p = pending.pop(ready[0])
            try:
                got = ray.get(ready[0])
                if isinstance(got, Failed):
                    raise SweepError(got.message, p)
                rows[p], took = got
                if timing is not None:
                    timing[p.key] = took
            except Exception as e:
                for ref in pending:
                    ray.cancel(ref, force=True)
                if isinstance(e, SweepError):
                    raise
                cause = getattr(e, "cause", None) or e
                raise SweepError(f"point {p.key} failed after {retries} retries: {type(cause).__name__}: "
                                 f"{str(cause).strip().splitlines()[-1] if str(cause).strip() else ''}", p) from None
            if progress is not None:
                progress(len(rows), len(points), p)
        return [rows[p] for p in sorted(rows)]
    finally:
        if started:
            ray.shutdown()
