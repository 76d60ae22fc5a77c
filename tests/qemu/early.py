"""Guest runs started early: the QEMU guests boot one after another in a background thread as soon as
collection ends, while the rest of the suite runs in the foreground (a TCG guest waits on QEMU, not on
this process: the two share the machine's cores instead of taking turns). The host-side tests here
run last; each module's fixture waits for its own guest's result.

A module opts in by defining ``boot(work: pathlib.Path)``: everything its fixture did up to the guest's
result (run it, parse it, check it booted), returning the fixture's value; messages for the log go in
``EarlyRun.log`` instead of print (a background thread's print would land in whichever test's capture
is active). An exception in ``boot`` is raised by ``result`` in the fixture, as before.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Callable


class EarlyRun:
    """The guest runs of one session, in the order given (one at a time)."""

    def __init__(self) -> None:
        self._runs: dict[str, Future] = {}
        self.log: dict[str, list[str]] = {}

    def start(self, jobs: list[tuple[str, Callable[[Path], object], Path]]) -> None:
        """Run ``boot(work)`` for each (name, boot, work) in a daemon thread, one after another."""
        for name, _, _ in jobs:
            self._runs[name] = Future()
            self.log[name] = []

        def work() -> None:
            for name, boot, path in jobs:
                fut = self._runs[name]
                if not fut.set_running_or_notify_cancel():
                    continue
                t0 = time.monotonic()
                try:
                    fut.set_result(boot(path))
                except BaseException as e:      # raised again in the test's fixture
                    fut.set_exception(e)
                self.log[name].append(f"{name}: guest run took {time.monotonic() - t0:.0f} s (started early)")

        threading.Thread(target=work, name="qemu-early", daemon=True).start()

    def has(self, name: str) -> bool:
        return name in self._runs

    def result(self, name: str):
        """The value ``boot`` returned for module ``name`` (waits for it), or its exception."""
        return self._runs[name].result()

    def cancel_pending(self) -> None:
        for fut in self._runs.values():
            fut.cancel()


RUNS = EarlyRun()


def value(name: str, boot: Callable[[Path], object], tmp_path_factory):
    """A module fixture's value: its early run's result, or ``boot`` run now (the module was not
    started early, e.g. selected alone with ``-p no:...``)."""
    if RUNS.has(name):
        got = RUNS.result(name)
        for line in RUNS.log.get(name, []):
            print("\n" + line)
        return got
    return boot(tmp_path_factory.mktemp(name.rsplit(".", 1)[-1]))
