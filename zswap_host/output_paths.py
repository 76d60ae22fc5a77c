"""Output paths checked before any work (issue 34: a sweep's ``--out`` was made only after every
point ran, ``bench --json`` was opened after every run trained; a bad path lost all of it). The
checks create nothing: they ask whether the write at the end can succeed."""

from __future__ import annotations

import os


def _nearest_existing(path: str) -> str:
    p = os.path.abspath(path)
    while not os.path.lexists(p):
        p = os.path.dirname(p)
    return p


def check_output_file(path: str, option: str) -> None:
    """``ValueError`` (naming ``option``) unless a file can be written at ``path``: not a directory,
    its directory exists and is writable, an existing file is writable."""
    if os.path.isdir(path):
        raise ValueError(f"{option} {path}: is a directory, not a file")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        what = "is not a directory" if os.path.lexists(_nearest_existing(parent)) and \
            not os.path.isdir(_nearest_existing(parent)) else "does not exist"
        raise ValueError(f"{option} {path}: its directory {parent} {what}")
    if not os.access(parent, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ValueError(f"{option} {path}: not writable")


def check_output_dir(path: str, option: str) -> None:
    """``ValueError`` (naming ``option``) unless ``path`` is a writable directory or can be made one
    (``os.makedirs``): every existing part of it a directory, the deepest writable."""
    near = _nearest_existing(path)
    if not os.path.isdir(near):
        raise ValueError(f"{option} {path}: {near} is a file, not a directory")
    if not os.access(near, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {path}: {near} is not writable")
