"""Checkpoints of swapped tables: which of them streams, and how.

- ``save(tables, keys, path)`` / ``load(tables, keys, path)`` stream: a directory holding one ``.npy``
  file per table and array (``t{i}.weight.npy``, ``t{i}.exp_avg.npy``, ...) and ``meta.json``.
  ``save`` is atomic (written beside ``path``, swapped into place: a failed save leaves the old
  checkpoint); ``load`` checks every file before it changes anything. A table is moved in
  chunks of about ``chunk_bytes``, page by page between the store and the file (``read_array`` /
  ``write_array``: the DRAM cache is neither filled nor evicted), so a table larger than DRAM is
  saved and loaded in ``chunk_bytes`` of memory (plus the OS's page cache of the file). The files
  are plain ``.npy`` (``np.load(..., mmap_mode="r")`` reads them), row-major, independent of the
  page size.
- ``state_tensors`` (behind ``state_dict()``) materialises each table as one tensor: the whole table
  in DRAM, outside the budget — for tables that fit. ``load_state_tensors`` (behind
  ``load_state_dict()``) streams *in*: it copies from the given tensors in chunks, so a state dict
  opened with ``torch.load(path, mmap=True)`` loads a table larger than DRAM.

Hot rows packed together (``pack_hot_rows``): files and tensors are in row order, as without it;
they are streamed in page (slot) order, each chunk's rows scattered to (or gathered from) their
places in the file or tensor (``slot_rows``), so a table is still read and written page by page,
once.

Saved per table: ``weight`` (rows, dim), the optimizer's state (``sum`` (rows,) for row-wise Adagrad,
``exp_avg`` / ``exp_avg_sq`` (rows, dim) for Adam) and ``step`` (the table's step count). On load an
array the checkpoint lacks (another optimizer's state) keeps its current values.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import torch

from ..workloads.table_layout import ARRAYS
from . import atomic_dir
from .tables import SwappedTables

FORMAT = "zswap-host-embeddings"
VERSION = 1
CHUNK_BYTES = 16 << 20


def _chunk_rows(tables: SwappedTables, t: int, name: str, chunk_bytes: int) -> int:
    """Rows per chunk: about chunk_bytes, a whole number of pages (no partly written pages)."""
    _, R, w, _ = tables.store.array_layout(t, name)
    return max(R, int(chunk_bytes) // (4 * w) // R * R)


_OURS = re.compile(r"meta\.json(\.partial)?|t\d+\.\w+\.npy")


def _check_target(path: str) -> None:
    """``ValueError`` unless ``path`` is missing, or a directory holding only checkpoint files (the
    save replaces it whole: nothing else the user keeps there may go with it)."""
    if not os.path.lexists(path):
        return
    if not os.path.isdir(path) or os.path.islink(path):
        raise ValueError(f"{path}: exists and is not a directory; a checkpoint is a directory")
    foreign = sorted(e for e in os.listdir(path) if not _OURS.fullmatch(e))
    if foreign:
        raise ValueError(f"{path}: holds {foreign[0]!r}, not a checkpoint's file; save replaces the "
                         f"directory whole, so give a new or checkpoint directory")


def save(tables: SwappedTables, keys: list[str], path: str, chunk_bytes: int = CHUNK_BYTES) -> None:
    """Write every table to directory ``path``, streaming (see the module docstring). Atomic: the
    files are written to a new directory beside ``path``, synced, and swapped into place, so a
    save that fails (a device error, a full disk) leaves ``path`` as it was, e.g. the previous
    checkpoint, loadable. ``path`` may be missing (parents are created), an empty directory, or a
    checkpoint directory (replaced whole); anything else is ``ValueError`` before any work. A
    pending step stays pending."""
    tables.finish_prefetch()             # no prefetch thread beside the page I/O here
    tables.check_open()
    _check_target(path)
    tmp = atomic_dir.staging(path)
    try:
        _write_files(tables, keys, tmp, chunk_bytes)
        atomic_dir.fsync_dir(tmp)
        atomic_dir.install(tmp, path)
    except BaseException:
        atomic_dir.discard(tmp)
        raise
    atomic_dir.fsync_dir(os.path.dirname(os.path.abspath(path)))


def _write_files(tables: SwappedTables, keys: list[str], path: str, chunk_bytes: int) -> None:
    st = tables.store
    meta = {"format": FORMAT, "version": VERSION, "optimizer": st.optimizer, "tables": []}
    for t, key in enumerate(keys):
        files = {}
        for name in ARRAYS[st.optimizer]:
            shape = st.array_shape(t, name)
            fname = f"t{t}.{name}.npy"
            step = _chunk_rows(tables, t, name, chunk_bytes)
            fpath = os.path.join(path, fname)
            # chunks of slots, in page order, each scattered to its rows (a slice without packing)
            out = np.lib.format.open_memmap(fpath, mode="w+", dtype="<f4", shape=shape)
            for lo in range(0, shape[0], step):
                hi = min(shape[0], lo + step)
                out[st.slot_rows(t, lo, hi)] = st.read_slots(t, name, lo, hi)
            out.flush()
            del out
            fd = os.open(fpath, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            files[name] = fname
        meta["tables"].append({"key": key, "rows": st.tables[t], "dim": int(st.dims[t]),
                               "step": int(st.steps[t]), "files": files})
    with open(os.path.join(path, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.flush()
        os.fsync(f.fileno())


def load(tables: SwappedTables, keys: list[str], path: str, chunk_bytes: int = CHUNK_BYTES) -> None:
    """Read a directory written by ``save`` into the tables, streaming. Everything is checked
    before anything is applied: ``FileNotFoundError`` if it has no ``meta.json`` or lacks a file it
    names; ``ValueError`` if its tables (keys, rows, dims) differ from these, or a file is not a
    readable ``.npy`` of the table's shape (damaged, truncated). A refused load changes nothing
    (not even the pending step). Then it ends the current step and writes the tables; a device
    error part way through leaves them partly loaded (load again)."""
    tables.finish_prefetch()             # no prefetch thread beside the page I/O here
    tables.check_open()
    with open(os.path.join(path, "meta.json")) as f:
        try:
            meta = json.load(f)
        except ValueError as e:
            raise ValueError(f"{path}: meta.json is not JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ValueError(f"{path}: not a {FORMAT} v{VERSION} checkpoint")
    st = tables.store
    try:
        have = [(m["key"], m["rows"], m["dim"]) for m in meta["tables"]]
        steps = [int(m["step"]) for m in meta["tables"]]
        files = [dict(m["files"]) for m in meta["tables"]]
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path}: meta.json is damaged ({type(e).__name__}: {e})") from None
    want = [(k, st.tables[t], int(st.dims[t])) for t, k in enumerate(keys)]
    if have != want:
        raise ValueError(f"{path}: its tables (key, rows, dim) {have} are not these {want}")
    arrays = []                          # (t, name, memory-mapped file): all opened and checked first
    for t, fs in enumerate(files):
        for name in ARRAYS[st.optimizer]:
            if name in fs:
                arrays.append((t, name, _open_array(path, fs[name], st.array_shape(t, name))))
    tables.end_step("a checkpoint was loaded since; its update was not applied")
    for t, name, a in arrays:
        _write(tables, t, name, a, chunk_bytes)
    for t, step in enumerate(steps):
        st.steps[t] = step


def _open_array(path: str, fname, shape: tuple[int, ...]) -> np.ndarray:
    """The checkpoint's file ``fname`` memory-mapped, checked: a plain name in ``path``, a float
    ``.npy`` of ``shape`` whose data the file holds in full."""
    if not isinstance(fname, str) or os.path.basename(fname) != fname or fname in ("", ".", ".."):
        raise ValueError(f"{path}: meta.json names {fname!r}, not a file of the checkpoint")
    try:
        a = np.load(os.path.join(path, fname), mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise
    except (ValueError, OSError, EOFError) as e:
        raise ValueError(f"{path}: {fname} is not a readable .npy file ({e})") from None
    if not isinstance(a, np.ndarray) or a.shape != shape or a.dtype.kind != "f":
        raise ValueError(f"{path}: {fname} has shape {getattr(a, 'shape', None)} and dtype "
                         f"{getattr(a, 'dtype', None)}, want {shape} float32")
    return a


def state_tensors(tables: SwappedTables, t: int, names, chunk_bytes: int = CHUNK_BYTES) -> dict[str, torch.Tensor]:
    """Table t's arrays ``names`` (of ``ARRAYS[optimizer]``, and ``"step"``: its step count) as whole
    tensors: read in chunks, but the result is the whole table."""
    tables.finish_prefetch()             # no prefetch thread beside the page I/O here
    tables.check_open()
    st = tables.store
    out = {}
    for name in names:
        if name == "step":
            out[name] = torch.tensor(int(st.steps[t]), dtype=torch.int64)
            continue
        shape = st.array_shape(t, name)
        x = torch.empty(shape, dtype=torch.float32)
        xn = x.numpy()
        step = _chunk_rows(tables, t, name, chunk_bytes)
        for lo in range(0, shape[0], step):                    # chunks, not rows
            hi = min(shape[0], lo + step)
            xn[st.slot_rows(t, lo, hi)] = st.read_slots(t, name, lo, hi)
        out[name] = x
    return out


def load_state_tensors(tables: SwappedTables, t: int, arrays: dict, chunk_bytes: int = CHUNK_BYTES) -> None:
    """Copy table t's arrays (a subset of ``state_tensors``' names, shapes checked by the caller)
    into the store, chunk by chunk. Ends the current step."""
    tables.finish_prefetch()             # no prefetch thread beside the page I/O here
    tables.check_open()
    tables.end_step("a checkpoint was loaded since; its update was not applied")
    for name, x in arrays.items():
        if name == "step":
            tables.store.steps[t] = int(x)
        else:
            _write(tables, t, name, x, chunk_bytes)


def _write(tables: SwappedTables, t: int, name: str, src, chunk_bytes: int) -> None:
    step = _chunk_rows(tables, t, name, chunk_bytes)
    n = tables.store.array_shape(t, name)[0]
    for lo in range(0, n, step):                    # chunks of slots, in page order
        hi = min(n, lo + step)
        rows = tables.store.slot_rows(t, lo, hi)
        if isinstance(src, torch.Tensor):
            c = src[rows if isinstance(rows, slice) else torch.from_numpy(rows)]
            c = c.detach().to("cpu", torch.float32).numpy()
        else:
            c = src[rows]
        tables.store.write_slots(t, name, lo, np.asarray(c, np.float32))
