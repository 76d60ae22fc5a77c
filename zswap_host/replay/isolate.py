"""A run in a process of its own (spawned: a fresh interpreter), so its peak RSS is the run's and
not what the runs before it left behind; its progress travels back over a queue to the caller's
``progress``, called in the caller's process (a progress bar there keeps working)."""

from __future__ import annotations

import multiprocessing as mp
import queue
import traceback

from .runs import ReplayError


def _child(q, fn, args) -> None:
    from ..errors import ZswapError

    def progress(*a) -> None:
        q.put(("progress", a))

    try:
        from ..plugins import ensure_loaded

        ensure_loaded()             # the parent's --plugin modules (inherited environment) and entry points
        q.put(("done", fn(*args, progress=progress)))
    except BaseException as e:
        if not isinstance(e, (ZswapError, ValueError)):
            traceback.print_exc()           # a bug, not bad input: keep its traceback on stderr
        q.put(("error", f"{type(e).__name__}: {e}" if not isinstance(e, ZswapError) else str(e)))


def in_child(fn, args: tuple, progress=None, what: str = "run"):
    """``fn(*args, progress=...)`` in a spawned process; its result. ``fn`` and ``args`` must pickle.
    ``ReplayError`` (naming ``what``) when it raised or its process died."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q, fn, args), daemon=True)
    p.start()
    try:
        while True:
            try:
                kind, payload = q.get(timeout=0.5)
            except queue.Empty:
                if p.is_alive():
                    continue
                try:                        # it may have put its last message just before exiting
                    kind, payload = q.get(timeout=2)
                except queue.Empty:
                    raise ReplayError(f"{what}: its process died (exit code {p.exitcode})") from None
            if kind == "progress":
                if progress is not None:
                    progress(*payload)
            elif kind == "done":
                return payload
            else:
                raise ReplayError(f"{what}: {payload}")
    finally:
        p.join(timeout=10)
        if p.is_alive():
            p.terminate()
            p.join()
