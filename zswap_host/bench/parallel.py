"""Independent bench runs trained at once: this process takes runs itself and ``jobs - 1`` spawned
worker processes take the others, each picking the next run when it finishes one. Progress from the
workers is forwarded to the caller's callback.

Each run of the bench owns its devices and backend and charges modeled time only, so its result does
not depend on which process ran it or what ran beside it (tested: ``jobs=1`` and ``jobs=2`` give equal
reports). Workers are spawned, not forked: this process has torch (and its thread pools) loaded, and
a forked copy of those may hang.
"""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from collections import deque
from typing import Any, Callable

Progress = Callable[[str, int, int], None]

_progress_q = None          # in a worker: where progress goes


def _init_worker(q) -> None:
    global _progress_q
    _progress_q = q


def _report(name: str, done: int, total: int) -> None:
    _progress_q.put((name, done, total))


def _call(fn: Callable[..., Any], name: str, args: tuple) -> Any:
    from ..plugins import ensure_loaded

    ensure_loaded()                 # the parent's --plugin modules (inherited environment) and entry points
    return fn(name, *args, progress=_report)


def run_parallel(fn: Callable[..., Any], names: list[str], args: tuple, jobs: int,
                 progress: Progress | None = None) -> dict[str, Any]:
    """``{name: fn(name, *args, progress=…)}`` for every name, ``jobs`` at a time (``jobs <= 1``: in
    this process, in order). Runs are handed out in ``names`` order to whoever is free, this process
    included. ``fn`` must be importable by module path, its arguments and results picklable. After the
    first run that raises no run is handed out; when this process's own run ends the workers are
    terminated and that exception is raised here."""
    if jobs <= 1 or len(names) <= 1:
        return {n: fn(n, *args, progress=progress) for n in names}
    ctx = mp.get_context("spawn")
    q = ctx.SimpleQueue()
    pending, lock = deque(names), threading.Lock()
    results: dict[str, Any] = {}
    errors: list[BaseException] = []

    def take() -> str | None:
        with lock:
            return pending.popleft() if pending and not errors else None

    def drain() -> None:
        while not q.empty():
            item = q.get()
            if progress is not None:
                progress(*item)

    def here(name: str, done: int, total: int) -> None:      # this process's run: forward the others' too
        drain()
        if progress is not None:
            progress(name, done, total)

    pool = ctx.Pool(min(jobs, len(names)) - 1, initializer=_init_worker, initargs=(q,))

    def hand_out() -> None:                                   # to a worker that is free (pool threads call it)
        n = take()
        if n is not None:
            pool.apply_async(_call, (fn, n, args), callback=lambda r, n=n: finished(n, r),
                             error_callback=errors.append)

    def finished(name: str, result: Any) -> None:
        results[name] = result
        hand_out()

    try:
        for _ in range(min(jobs, len(names)) - 1):
            hand_out()
        while (n := take()) is not None:
            results[n] = fn(n, *args, progress=here)
        while len(results) < len(names) and not errors:
            time.sleep(0.05)
            drain()
        if errors:
            raise errors[0]
        drain()
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
    return {n: results[n] for n in names}
