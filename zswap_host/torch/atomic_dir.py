"""Replace a directory whole: write a new one beside it, then swap it into place (issue 34: a
save that failed part way had already destroyed the checkpoint it was replacing).

``staging(path)`` makes an empty directory next to ``path`` (same filesystem, so renames are
atomic); ``install(staged, path)`` puts it at ``path``. With Linux's ``renameat2(RENAME_EXCHANGE)``
the swap is one atomic step: at every instant ``path`` is either the old directory or the new one.
Where that is missing (another OS, a filesystem without it) the old directory is first renamed
aside, so a crash between the two renames leaves it at ``<path>.old-*`` rather than lost."""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import shutil

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def staging(path: str) -> str:
    """A new empty directory beside ``path`` (created with the usual mode and umask)."""
    parent, base = os.path.split(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{base}.saving-{os.getpid()}-{secrets.token_hex(4)}")
    os.mkdir(tmp)
    return tmp


def discard(staged: str) -> None:
    shutil.rmtree(staged, ignore_errors=True)


def _exchange(a: str, b: str) -> bool:
    """Atomically swap two paths; False when the system cannot."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    e = ctypes.get_errno()
    if e in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(e, f"replace {b}: {os.strerror(e)}")


def install(staged: str, path: str) -> None:
    """Make the directory ``staged`` (from ``staging(path)``) be ``path``; the directory that was at
    ``path`` (if any) is removed once the new one is in place."""
    path = os.path.abspath(path)                        # "ckpt/" names the directory ckpt
    if not os.path.lexists(path):
        os.rename(staged, path)
        return
    if _exchange(staged, path):
        discard(staged)                                 # now the old directory
        return
    aside = f"{staged}.old"
    os.rename(path, aside)
    os.rename(staged, path)
    discard(aside)


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
