"""Which regular files zswap-host made: a file is ours when it carries our mark beside it.

The mark is what the project already writes beside a file-backed device: ``PATH.json`` describing it
(``kind`` one of ``OWN_KINDS``; emulated devices keep their geometry there, a regular file used as a
device gets ``{"kind": "file", ...}``), or an emulated device's state file (``PATH.zones``,
``PATH.chunks``). ``safety.check_unowned`` refuses to write into an existing file that holds data and
carries no mark: it may be anyone's (an 18 MiB text file given as ``--baseline-device`` was
overwritten before this check).
"""

from __future__ import annotations

import errno
import json
import os

from .backing import save_sidecar, sidecar_path

# the ``kind`` of every device description this project writes as ``PATH.json``
OWN_KINDS = ("file", "zns", "conventional", "fdp", "ocssd")
STATE_SUFFIXES = (".zones", ".chunks")        # emulated ZNS / Open-Channel state beside the data


def _description(path: str) -> dict | None:
    """``PATH.json`` as a dict when it is one of our device descriptions, else None (absent, not
    JSON, someone else's)."""
    try:
        with open(sidecar_path(path)) as f:
            meta = json.load(f)
    except (OSError, ValueError, RecursionError):
        return None
    return meta if isinstance(meta, dict) and meta.get("kind") in OWN_KINDS else None


def is_ours(path: str) -> bool:
    """Whether ``path`` carries the mark of a file this project created (or was told to take)."""
    return _description(path) is not None or any(os.path.exists(path + s) for s in STATE_SUFFIXES)


def holds_data(path: str, chunk: int = 1 << 20) -> bool:
    """Whether any byte of the regular file is not zero. Holes are skipped (``SEEK_DATA``), so a
    sparse file made by ``truncate -s`` answers at once; a file of written zeros is read through."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size:
            try:
                pos = os.lseek(fd, pos, os.SEEK_DATA)
                end = os.lseek(fd, pos, os.SEEK_HOLE)
            except OSError as e:
                if e.errno == errno.ENXIO:           # nothing but holes from pos to the end
                    return False
                end = size                           # no SEEK_DATA here: read it all
            while pos < end:
                buf = os.pread(fd, min(chunk, end - pos), pos)
                if not buf:
                    return False
                if buf.count(0) != len(buf):
                    return True
                pos += len(buf)
        return False
    finally:
        os.close(fd)


def claim(path: str, meta: dict) -> None:
    """Mark ``path`` as ours by writing its description ``PATH.json`` (``meta`` with a ``kind`` of
    ``OWN_KINDS``). A ``PATH.json`` that is not ours is left alone (then the file stays unmarked),
    and so is a directory we cannot write into: the mark only spares a later ``--force``."""
    if os.path.exists(sidecar_path(path)) and _description(path) is None:
        return
    try:
        save_sidecar(path, meta)
    except OSError:
        pass
