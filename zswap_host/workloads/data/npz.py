"""facebookresearch/dlrm's preprocessed ``.npz`` (``X_int`` (n, 13), ``X_cat`` (n, 26), ``y`` (n,)),
read a chunk of samples at a time, never whole.

``np.load(mmap_mode="r")`` maps only ``.npy`` files; an ``.npz`` is a zip of ``.npy`` members, so each
member is read here through its own ``.npy`` header and then by rows:

- a *stored* member (``np.savez``) is memory-mapped where its data lies inside the zip: random access,
  C or Fortran order alike;
- a *deflated* member (``np.savez_compressed``, what dlrm writes) in C order is decompressed as a
  stream, one chunk of rows at a time;
- a deflated member in Fortran (column-major) order — dlrm saves ``X_cat`` as the transpose of a
  (26, n) array, which ``np.save`` stores column-major — is read through one stream per column, each
  first skipped forward to its column: opening it decompresses about ``columns / 2`` times the
  member once per pass (memory stays bounded; time grows). ``np.savez`` (stored) or a C-order
  ``X_cat`` avoid that cost.

Values are checked per sample: ``X_int`` finite, ``X_cat`` whole and non-negative (dlrm's ``X_cat`` is
float64 after its dictionary pass), ``y`` 0 or 1. A bad sample fails with ``DataFormatError`` naming
the file and its 1-based row, or is dropped and counted. Extra members (dlrm's ``counts``) are ignored.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from typing import Iterator

import numpy as np

from .errors import DataFormatError
from .rows import NUM_CAT, NUM_DENSE, Rows

MEMBERS = (("X_int", NUM_DENSE), ("X_cat", NUM_CAT), ("y", None))
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")     # a zip local file header (30 bytes)


class _Member:
    """One ``.npy`` member of the archive: ``shape``, ``dtype``, ``fortran`` and a row reader."""

    def __init__(self, zf: zipfile.ZipFile, path: str, name: str) -> None:
        try:
            self.info = zf.getinfo(name + ".npy")
        except KeyError:
            raise DataFormatError(f"no {name} array in the .npz (members: "
                                  f"{', '.join(n.removesuffix('.npy') for n in zf.namelist())})", path) from None
        self.zf, self.path, self.name = zf, path, name
        with zf.open(self.info) as f:
            try:
                version = np.lib.format.read_magic(f)
                read = {(1, 0): np.lib.format.read_array_header_1_0,
                        (2, 0): np.lib.format.read_array_header_2_0}[version]
                self.shape, self.fortran, self.dtype = read(f)
            except (ValueError, KeyError) as e:
                raise DataFormatError(f"{name} is not a .npy array numpy can stream ({e})", path) from None
            self.header = f.tell()
        if self.dtype.hasobject or self.dtype.kind not in "biuf":
            raise DataFormatError(f"{name} holds {self.dtype}, not numbers", path)

    def _data_offset(self) -> int:
        """Where the member's array data starts in the zip file (stored members only)."""
        with open(self.path, "rb") as raw:
            raw.seek(self.info.header_offset)
            head = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
        return self.info.header_offset + _LOCAL_HEADER.size + head[-2] + head[-1] + self.header

    def chunks(self, rows: int) -> Iterator[np.ndarray]:
        """The array ``rows`` rows at a time, in order."""
        n = self.shape[0]
        if n == 0:
            return
        cols = int(np.prod(self.shape[1:], dtype=np.int64))
        order = "F" if self.fortran else "C"
        if self.info.compress_type == zipfile.ZIP_STORED:
            a = np.memmap(self.path, self.dtype, "r", self._data_offset(), self.shape, order)
            for i in range(0, n, rows):
                yield np.array(a[i:i + rows])
            return
        item = self.dtype.itemsize
        if not self.fortran or cols == 1:
            with self.zf.open(self.info) as f:
                f.seek(self.header)
                for i in range(0, n, rows):
                    m = min(rows, n - i)
                    yield self._exact(f, m * cols * item).reshape((m, *self.shape[1:]))
            return
        streams = [self.zf.open(self.info) for _ in range(cols)]
        try:
            for j, f in enumerate(streams):
                f.seek(self.header + j * n * item)
            for i in range(0, n, rows):
                m = min(rows, n - i)
                yield np.stack([self._exact(f, m * item) for f in streams], axis=1).reshape((m, *self.shape[1:]))
        finally:
            for f in streams:
                f.close()

    def _exact(self, f, nbytes: int) -> np.ndarray:
        buf = f.read(nbytes)
        if len(buf) != nbytes:
            raise DataFormatError(f"{self.name} ends early (truncated archive)", self.path)
        return np.frombuffer(buf, self.dtype)


def _open(path: str) -> tuple[zipfile.ZipFile, dict]:
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile as e:
        raise DataFormatError(f"not an .npz (zip) archive: {e}", path) from None
    try:
        members = {name: _Member(zf, path, name) for name, _ in MEMBERS}
        n = members["y"].shape[0] if members["y"].shape else -1
        for name, cols in MEMBERS:
            want = (n,) if cols is None else (n, cols)
            if members[name].shape != want:
                shapes = ", ".join(f"{k} {m.shape}" for k, m in members.items())
                raise DataFormatError(f"expected X_int (n, 13), X_cat (n, 26) and y (n,); found {shapes}", path)
    except BaseException:
        zf.close()
        raise
    return zf, members


def samples(path: str) -> int:
    """How many samples the archive holds (checks its members' shapes and types)."""
    zf, members = _open(path)
    zf.close()
    return int(members["y"].shape[0])


def _whole(x: np.ndarray) -> np.ndarray:
    """Per element: a whole, non-negative number (integer dtypes: non-negative)."""
    if x.dtype.kind in "biu":
        return x >= 0
    with np.errstate(invalid="ignore"):
        return np.isfinite(x) & (x >= 0) & (x == np.floor(x)) & (x < 2.0 ** 63)


def _check(dense, cat, y, first_row: int, path: str, skip_bad: bool, keep_bad: int = 5) -> Rows:
    dense_ok = np.isfinite(dense).all(axis=1) if dense.dtype.kind == "f" else np.ones(len(y), bool)
    cat_ok = _whole(cat)
    y_ok = (y == 0) | (y == 1)
    ok = dense_ok & cat_ok.all(axis=1) & y_ok
    labels = np.asarray(y == 1, np.float32)
    if ok.all():
        return Rows(dense, cat.astype(np.uint64), labels)
    reasons = []
    for i in np.flatnonzero(~ok)[: keep_bad if skip_bad else 1]:
        if not y_ok[i]:
            why = f"y is {y[i].item()!r}, not 0 or 1"
        elif not cat_ok[i].all():
            c = int(np.flatnonzero(~cat_ok[i])[0])
            why = f"X_cat column {c} (C{c + 1}) is {cat[i, c].item()!r}, not a non-negative integer"
        else:
            c = int(np.flatnonzero(~np.isfinite(dense[i]))[0])
            why = f"X_int column {c} (I{c + 1}) is {dense[i, c].item()!r}, not a finite number"
        reasons.append((first_row + int(i), why))
    if not skip_bad:
        raise DataFormatError(reasons[0][1], path, reasons[0][0])
    return Rows(dense[ok], cat[ok].astype(np.uint64), labels[ok], int((~ok).sum()), tuple(reasons))


def read_rows(path: str, chunk_bytes: int, skip_bad: bool) -> Iterator[Rows]:
    """Every sample of the archive in order, about ``chunk_bytes`` of arrays at a time."""
    zf, m = _open(path)
    with zf:
        row_bytes = sum(x.dtype.itemsize * int(np.prod(x.shape[1:], dtype=np.int64)) for x in m.values())
        rows = max(1, chunk_bytes // row_bytes)
        first = 1
        try:
            for dense, cat, y in zip(m["X_int"].chunks(rows), m["X_cat"].chunks(rows), m["y"].chunks(rows)):
                yield _check(dense, cat, y, first, path, skip_bad)
                first += len(y)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as e:       # a corrupt or truncated member
            raise DataFormatError(f"cannot read past sample {first - 1}: {e}", path) from None
