"""Independent bench runs in worker processes, with their progress forwarded to the parent.

Each run of the bench owns its devices and backend and charges modeled time only, so its result does
not depend on which process ran it or what ran beside it (tested: ``jobs=1`` and ``jobs=2`` give equal
reports). Workers are spawned, not forked: the parent has torch (and its thread pools) loaded, and a
forked copy of those may hang.
"""

from __future__ import annotations

import multiprocessing as mp
import queue as queue_mod
from typing import Any, Callable

Progress = Callable[[str, int, int], None]

_progress_q = None          # in a worker: where progress goes


def _init_worker(q) -> None:
    global _progress_q
    _progress_q = q


def _report(name: str, done: int, total: int) -> None:
    _progress_q.put((name, done, total))


def _call(fn: Callable[..., Any], name: str, args: tuple) -> Any:
    return fn(name, *args, progress=_report)


def run_parallel(fn: Callable[..., Any], names: list[str], args: tuple, jobs: int,
                 progress: Progress | None = None) -> dict[str, Any]:
    """``{name: fn(name, *args, progress=…)}`` for every name, on ``jobs`` spawned worker processes
    (``jobs <= 1``: in this process, in order). ``fn`` must be importable by module path and its
    arguments and results picklable. The first run that raises stops the others (their workers are
    terminated) and its exception is raised here."""
    if jobs <= 1 or len(names) <= 1:
        return {n: fn(n, *args, progress=progress) for n in names}
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        q = manager.Queue()
        pool = ctx.Pool(min(jobs, len(names)), initializer=_init_worker, initargs=(q,))
        try:
            pending = {n: pool.apply_async(_call, (fn, n, args)) for n in names}
            results: dict[str, Any] = {}
            while pending:
                for n in [n for n, r in pending.items() if r.ready()]:
                    results[n] = pending.pop(n).get()      # re-raises the worker's exception
                _drain(q, progress)
                if pending:
                    next(iter(pending.values())).wait(0.2)
            _drain(q, progress)
            pool.close()
        except BaseException:
            pool.terminate()
            raise
        finally:
            pool.join()
    return {n: results[n] for n in names}


def _drain(q, progress: Progress | None) -> None:
    while True:
        try:
            item = q.get_nowait()
        except queue_mod.Empty:
            return
        if progress is not None:
            progress(*item)
