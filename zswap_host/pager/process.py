"""``BackendProcess``: the pager's side of ``Pager.process`` — the backend served from a process of
its own (``child.py``), so no Python runs on the pager's fault path: faults go from the C handler
thread to the C bridge thread (``pg_serve``) and through shared memory to the child's resolver,
whatever the faulting thread holds (the GIL included)."""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any, Callable

import numpy as np

from .native import check
from .resolver import describe

STOP_TIMEOUT_S = 300.0   # close()'s default: the child's last batch, its final discard and its exit
EXIT_TIMEOUT_S = 30.0    # at most this of it for the exit, before the child is killed


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


class BackendGone(RuntimeError):
    """The backend process ended (or stopped answering) while the pager needed it."""


class BackendProcess:
    """The child serving one pager's backend. ``__init__`` starts it (the channel's shared memory
    and eventfds, a control socket); ``connect`` hands it the factory and starts the bridge; after
    ``pg_close``, ``close_fds``. The ``Pager`` owns the order (``Pager.process``, ``Pager.close``)."""

    def __init__(self, *, page_size: int, cap: int, channel_bytes: int) -> None:
        self._lock = threading.Lock()
        self._nerrors, self._errors = 0, []
        self._stopped = False  # stop() saw the resolver finish
        self._timeout, self._deadline = STOP_TIMEOUT_S, 0.0    # close()'s bound (stop() sets them)
        self.cap = cap
        shm = os.memfd_create("zswap-pager-channel")
        req, rep = os.eventfd(0), os.eventfd(0)  # blocking: each side waits in read()
        self._fds = [shm, req, rep]
        os.ftruncate(shm, channel_bytes)
        mine, theirs = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "zswap_host.pager.child", str(theirs.fileno()), str(shm), str(req), str(rep)],
                pass_fds=(theirs.fileno(), shm, req, rep), start_new_session=True)  # no Ctrl-C from the terminal
        except BaseException:
            mine.close()
            for fd in self._fds:
                os.close(fd)
            raise
        finally:
            theirs.close()
        self.pid = self.proc.pid
        self._conn = Connection(mine.detach())
        self._fds.append(os.pidfd_open(self.pid))

    def connect(self, lib, handle, factory: Callable[[], Any], settings: dict, timeout: float) -> None:
        """Start the bridge (``pg_serve``), send the child ``sys.path``, ``settings`` and
        ``factory``, and wait until it has built the backend. ``RuntimeError`` when it could not
        (the factory's exception is the cause) or ended first; ``pickle.PicklingError``,
        ``TypeError`` or ``AttributeError`` when ``factory`` cannot be pickled (a lambda, a local
        function: use a module-level function or ``functools.partial`` of one)."""
        shm, req, rep, pidfd = self._fds
        check(lib.pg_serve(handle, shm, self.cap, req, rep, pidfd), "start the backend bridge")
        pickled = pickle.dumps(factory)  # before anything is sent: an unpicklable factory raises here
        self._conn.send(list(sys.path))
        self._conn.send(getattr(sys.modules["__main__"], "__file__", None))
        self._conn.send(settings)
        self._conn.send_bytes(pickled)
        reply = self._recv(timeout, "its start")
        if reply[0] != "ready":
            raise RuntimeError(f"the backend process could not build the backend: {describe(reply[1])}") from reply[1]

    def _recv(self, timeout: float, what: str):
        try:
            if not self._conn.poll(timeout):
                raise BackendGone(f"the backend process (pid {self.pid}) did not answer {what} in {timeout:.0f} s")
            return self._conn.recv()
        except (EOFError, OSError) as exc:
            raise BackendGone(f"the backend process (pid {self.pid}) ended (exit status "
                              f"{self.proc.poll()}) before it answered {what}") from exc

    def _ask(self, msg: tuple, what: str, timeout: float = STOP_TIMEOUT_S):
        with self._lock:
            self._conn.send(msg)
            return self._recv(timeout, what)

    def kill(self) -> None:
        """End the child now (a start that failed)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def errors(self) -> tuple[int, list[BaseException]]:
        """(backend exceptions counted, the last 16) as the child's resolver noted them; the last
        known once the child has ended."""
        if self.alive:
            try:
                self._nerrors, self._errors = self._ask(("errors",), "errors", 60.0)
            except (BackendGone, OSError):
                pass
        return self._nerrors, list(self._errors)

    def call(self, fn: Callable[..., Any], *args) -> Any:
        """``fn(backend, *args)`` in the child (``fn``, ``args`` and the result pickled); its
        exception is raised here. ``BackendGone`` when the child has ended."""
        try:
            status, value = self._ask(("call", fn, args), "a call")
        except (BrokenPipeError, ConnectionError) as exc:
            raise BackendGone(f"the backend process (pid {self.pid}) has ended (exit status {self.proc.poll()})") from exc
        if status == "error":
            raise value
        return value

    def stop(self, timeout: float) -> None:
        """After ``pg_stop``: wait for the child's resolver to finish (the reads already queued).
        ``timeout``: seconds from now for this, the final discard and the exit together; past
        them the child is killed and that is noted in ``errors``."""
        self._timeout = timeout
        self._deadline = deadline = time.monotonic() + timeout
        if self.alive:
            try:
                self._nerrors, self._errors = self._ask(("stop",), "stop", _left(deadline))
                self._stopped = True
            except (BackendGone, OSError):
                self._killed("its last batch", deadline)

    def discard_and_exit(self, ids: np.ndarray) -> None:
        """Discard ``ids`` from the backend, then let the child exit; killed past ``stop``'s
        deadline or if ``stop`` found it stuck."""
        deadline = self._deadline
        if self.alive and self._stopped:
            try:
                self._nerrors, self._errors = self._ask(("discard", ids), "the final discard", _left(deadline))
            except (BackendGone, OSError):
                self._killed("the final discard", deadline)
        try:
            self.proc.wait(min(EXIT_TIMEOUT_S, _left(deadline)))
        except subprocess.TimeoutExpired:
            self._killed("its exit", deadline)

    def _killed(self, what: str, deadline: float) -> None:
        """The child did not finish ``what`` in time (a backend call that does not return): kill it
        and note why (``errors`` counts it; the pager's pages stay in the backend)."""
        if not self.alive:
            return
        self.kill()
        self._nerrors += 1
        self._errors = (self._errors + [BackendGone(
            f"the backend process (pid {self.pid}) did not finish {what} by close()'s deadline "
            f"({self._timeout:g} s): killed, this pager's pages were not discarded from the backend")])[-16:]

    def close_fds(self) -> None:
        """After ``pg_close`` (the bridge has stopped)."""
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        if not self._conn.closed:
            self._conn.close()
