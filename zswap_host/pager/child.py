"""The backend process of ``Pager.process`` (started by ``process.BackendProcess`` as
``python -m zswap_host.pager.child CTRL SHM REQ REP``): it builds the backend from the factory it is
sent, runs the ``Resolver`` over the channel to the pager (``ChannelCore``), and answers the
pager's control messages on CTRL (a socket of pickled messages):

    ("errors",)          -> (nerrors, [exceptions])
    ("call", fn, args)   -> ("ok", fn(backend, *args)) or ("error", exception)
    ("stop",)            -> joins the resolver (the pager has stopped it), then (nerrors, [exceptions])
    ("discard", ids)     -> backend.discard(ids) (errors noted), (nerrors, [exceptions]), exit 0

EOF on CTRL (the pager's process is gone) exits at once. A resolver thread that dies of anything but
a backend error (which it notes) ends the process with status 70 (``RESOLVER_FAILED``), so the pager fails the faults that
needed it instead of waiting."""

from __future__ import annotations

import os
import pickle
import sys
import threading
import traceback
from multiprocessing.connection import Connection

from .channel import ChannelCore
from .resolver import Resolver, describe


def portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a ``RuntimeError`` naming it."""
    try:
        return pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - any exception type may refuse pickling
        return RuntimeError(describe(exc))


RESOLVER_FAILED = 70  # the exit status when the resolver thread died


def _resolver_died(died: threading.Event):
    def hook(args) -> None:
        traceback.print_exception(args.exc_type, args.exc_value, args.exc_traceback)
        print(f"zswap pager: the backend process's resolver failed: {args.exc_value!r}", file=sys.stderr, flush=True)
        died.set()  # the main thread sees it and exits
    return hook


def main(argv: list[str]) -> int:
    ctrl_fd, shm_fd, req_fd, rep_fd = (int(x) for x in argv[:4])
    conn = Connection(ctrl_fd)
    try:
        sys.path[:] = conn.recv()
        main_path = conn.recv()
        cfg = conn.recv()
        pickled = conn.recv_bytes()
        if main_path and b"__main__" in pickled:  # a factory of the parent's script: import it, as spawn does
            import multiprocessing.spawn
            multiprocessing.spawn.import_main_path(main_path)
        factory = pickle.loads(pickled)
        backend = factory()
        ps = getattr(backend, "page_size", cfg["page_size"])
        if ps != cfg["page_size"]:
            raise ValueError(f"backend page_size {ps} != pager page_size {cfg['page_size']}")
    except EOFError:
        return 0
    except BaseException as exc:  # noqa: BLE001 - reported to the pager, which raises it
        conn.send(("error", portable(exc)))
        return 1
    core = ChannelCore(shm_fd, req_fd, rep_fd, cfg["page_size"])
    core.fetch_cap = cfg["fetch_batch"]
    resolver = Resolver(core, backend, id_base=cfg["id_base"], page_size=cfg["page_size"],
                        fetch_batch=cfg["fetch_batch"], evict_batch=cfg["evict_batch"],
                        fault_around=cfg["fault_around"])
    died = threading.Event()
    threading.excepthook = _resolver_died(died)
    resolver.start()
    conn.send(("ready", os.getpid()))

    def state():
        return resolver.nerrors, [portable(e) for e in resolver.errors]

    while True:
        try:
            while not conn.poll(0.2):
                if died.is_set():
                    return RESOLVER_FAILED
            msg = conn.recv()
        except (EOFError, OSError):
            return 0  # the pager's process is gone: nothing left to serve (the resolver is a daemon thread)
        if msg[0] == "errors":
            conn.send(state())
        elif msg[0] == "call":
            try:
                result = ("ok", msg[1](backend, *msg[2]))
                pickle.dumps(result)
            except Exception as exc:  # noqa: BLE001 - handed back to the caller
                result = ("error", portable(exc))
            conn.send(result)
        elif msg[0] == "stop":
            resolver.join()
            conn.send(state())
        elif msg[0] == "discard":
            try:
                if len(msg[1]):
                    backend.discard(msg[1])
            except Exception as exc:  # noqa: BLE001 - as Pager.close in the thread mode
                resolver.note(exc)
            conn.send(state())
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
