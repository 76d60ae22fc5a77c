"""Page-id and stream ranges on a shared backend: every set of swapped tables over one backend gets
ids and streams no other set uses, so that several modules can share one device.

Ranges are handed out in order and never reused (ids are 63-bit). Only the modules of this package
coordinate here: a backend that other code also writes to at small ids should be given to the
modules before that code writes ids at or above the claimed ones.
"""

from __future__ import annotations

import threading
import weakref

_lock = threading.Lock()
_next: "weakref.WeakKeyDictionary[object, tuple[int, int]]" = weakref.WeakKeyDictionary()


def claim(backend, pages: int, streams: int) -> tuple[int, int]:
    """``(id_base, stream_base)`` for ``pages`` page ids and ``streams`` streams on ``backend``
    (``(0, 0)`` for no backend)."""
    if backend is None:
        return 0, 0
    with _lock:
        ids, st = _next.get(backend, (0, 0))
        _next[backend] = (ids + int(pages), st + int(streams))
    return ids, st
