"""A Criteo data file as a batch source: ``CriteoFile(path, tables).batches(n, batch_size)`` yields the
same ``Batch`` objects as the synthetic generator (``criteo.CriteoSynth``), so the trainer consumes
either unchanged.

- Formats: ``kaggle`` (``train.txt``), ``terabyte`` (``day_N``, or ``day_N.gz`` read through gzip) —
  the same text rows, see :mod:`.text` — and ``npz`` (dlrm's preprocessed arrays, :mod:`.npz`).
  ``auto`` picks ``npz`` for a zip archive, ``terabyte`` for a file named ``day_N[.gz]``, else
  ``kaggle``.
- Dense features: DLRM's ``log(x + 1)`` after clamping negatives to 0; an empty field is 0.
- Categorical features: into ``tables`` (the run's table row counts; with ``max_ind_range`` each
  capped at that many rows, as dlrm's ``--max-ind-range`` caps its tables), hashed or
  dictionary-mapped (:mod:`.mapping`). An empty field is the value 0, as in dlrm: it hashes to row 0.
- Single-hot: these formats hold one value per feature, so ``sparse`` is (26, batch, 1).
- Streamed: ``chunk_bytes`` of the file are parsed at a time; nothing else of it is held.
- Order: the file's; no shuffling (``seed`` is accepted for the batch-source interface and ignored).
- Wrap-around: a file with fewer samples than ``n * batch_size`` is read again from its start (one
  more *pass*, an epoch; a batch may span the seam); the stream's ``stats()`` says how many passes
  it started. A file with no sample at all is a ``DataFormatError``.
- Malformed lines fail with ``DataFormatError`` (file and line) unless ``skip_bad_lines``: then they
  are dropped and counted, each once (a wrap-around does not count them again).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import ClassVar, Iterator

import numpy as np

from ..criteo import Batch
from . import npz, text
from .errors import DataFormatError
from .mapping import MAPPINGS, CategoricalMapper
from .rows import NUM_CAT, Rows, log_dense

FORMATS = ("auto", "kaggle", "terabyte", "npz")
_DAY = re.compile(r"day_\d+(\.gz)?$")
_ZIP_MAGIC = b"PK\x03\x04"


@dataclass(frozen=True)
class CriteoFile:
    """A Criteo file read into tables of ``tables`` rows (26 of them). ``tables`` holds the row
    counts actually used: with ``max_ind_range`` they are capped at it. Picklable (a bench hands it to
    its worker processes; each opens the file itself). ``ValueError`` for bad options; the file is
    first opened by :meth:`check` or :meth:`batches`."""

    path: str
    tables: tuple[int, ...]
    format: str = "auto"
    max_ind_range: int | None = None
    mapping: str = "hash"
    skip_bad_lines: bool = False
    chunk_bytes: int = 4 << 20
    hot: ClassVar[int] = 1          # single-hot: one value per feature and sample

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"data format must be one of {', '.join(FORMATS)}, not {self.format!r}")
        if self.mapping not in MAPPINGS:
            raise ValueError(f"categorical mapping must be one of {', '.join(MAPPINGS)}, not {self.mapping!r}")
        if self.max_ind_range is not None and int(self.max_ind_range) < 1:
            raise ValueError(f"max_ind_range must be >= 1, not {self.max_ind_range}")
        if len(self.tables) != NUM_CAT or min(self.tables) < 1:
            raise ValueError(f"a Criteo file fills {NUM_CAT} tables of >= 1 row; got {len(self.tables)} tables")
        if int(self.chunk_bytes) < 1:
            raise ValueError("chunk_bytes must be >= 1")
        cap = int(self.max_ind_range) if self.max_ind_range is not None else None
        object.__setattr__(self, "path", os.fspath(self.path))
        object.__setattr__(self, "tables", tuple(min(int(n), cap) if cap else int(n) for n in self.tables))

    def resolved_format(self) -> str:
        """The format ``auto`` stands for here (``DataFormatError`` if the file cannot be opened)."""
        if os.path.isdir(self.path):
            raise DataFormatError("is a directory, not a data file", self.path)
        try:
            with open(self.path, "rb") as f:
                magic = f.read(4)
        except FileNotFoundError:
            raise DataFormatError("no such data file", self.path) from None
        except OSError as e:
            raise DataFormatError(f"cannot open: {e.strerror or e}", self.path) from None
        if self.format != "auto":
            if (self.format == "npz") != (magic == _ZIP_MAGIC):
                raise DataFormatError(f"not a{'n .npz (zip)' if self.format == 'npz' else ' text'} file; "
                                      f"is --data-format {self.format} right?", self.path)
            return self.format
        if magic == _ZIP_MAGIC:
            return "npz"
        return "terabyte" if _DAY.search(os.path.basename(self.path)) else "kaggle"

    def check(self) -> str:
        """Open the file and read its first chunk (an .npz: its arrays' headers) so that a wrong file
        fails here, before any training; returns the resolved format."""
        fmt = self.resolved_format()
        if fmt == "npz":
            npz.samples(self.path)
        else:
            for _ in self._rows(fmt):
                break
        return fmt

    def describe(self) -> dict:
        """The options, for a report."""
        return {"path": self.path, "format": self.resolved_format(), "mapping": self.mapping,
                "max_ind_range": self.max_ind_range, "skip_bad_lines": self.skip_bad_lines,
                "tables": list(self.tables), "hot": 1}

    def _rows(self, fmt: str) -> Iterator[Rows]:
        read = npz.read_rows if fmt == "npz" else text.read_rows
        return read(self.path, int(self.chunk_bytes), self.skip_bad_lines)

    def batches(self, n: int, batch_size: int, seed: int = 0) -> "BatchStream":
        """``n`` batches of ``batch_size`` samples in file order (``seed`` is ignored)."""
        return BatchStream(self, int(n), int(batch_size))


def _join(pieces: list[np.ndarray], axis: int) -> np.ndarray:
    """One contiguous array of the pieces (a batch that spans chunks, or one chunk's slice)."""
    return np.concatenate(pieces, axis=axis) if len(pieces) > 1 else np.ascontiguousarray(pieces[0])


class BatchStream:
    """The batches of one read of a :class:`CriteoFile` (an iterator); ``stats()`` says what was read."""

    def __init__(self, src: CriteoFile, n: int, batch_size: int) -> None:
        if n < 0 or batch_size < 1:
            raise ValueError(f"need n >= 0 batches of batch_size >= 1, not {n} of {batch_size}")
        self.src, self.n, self.batch_size = src, n, batch_size
        self.format = src.resolved_format()
        self.mapper = CategoricalMapper(src.tables, src.mapping)
        self.done = 0
        self.samples = 0
        self.passes = 0
        self.samples_per_pass: int | None = None
        self.bad_lines_skipped = 0
        self.bad_lines: list = []
        self._chunks = self._mapped()
        self._pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._have = 0

    def _mapped(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(dense float32 (m, 13), sparse int64 (26, m), labels (m,)) chunks, wrapping around."""
        while True:
            self.passes += 1
            got = 0
            for rows in self.src._rows(self.format):
                if self.passes == 1:
                    self.bad_lines_skipped += rows.skipped
                    self.bad_lines.extend(rows.bad[: max(0, 5 - len(self.bad_lines))])
                if rows.size:
                    got += rows.size
                    yield log_dense(rows.dense), self.mapper(rows.cat), rows.labels
            if got == 0:
                skipped = f" ({self.bad_lines_skipped} malformed lines skipped)" if self.bad_lines_skipped else ""
                raise DataFormatError(f"no samples to train on{skipped}", self.src.path)
            self.samples_per_pass = got

    def __iter__(self) -> "BatchStream":
        return self

    def __next__(self) -> Batch:
        if self.done >= self.n:
            raise StopIteration
        B = self.batch_size
        while self._have < B:
            chunk = next(self._chunks)
            self._pending.append(chunk)
            self._have += chunk[2].size
        parts, need = [], B
        while need:
            d, s, y = self._pending[0]
            k = min(need, y.size)
            parts.append((d[:k], s[:, :k], y[:k]))
            if k == y.size:
                self._pending.pop(0)
            else:
                self._pending[0] = (d[k:], s[:, k:], y[k:])
            need -= k
        self._have -= B
        dense, sparse, labels = (_join([p[i] for p in parts], axis) for i, axis in ((0, 0), (1, 1), (2, 0)))
        b = Batch(dense, sparse[:, :, None], labels, self.done)
        self.done += 1
        self.samples += B
        return b

    def stats(self) -> dict:
        """What the stream has read so far: ``samples`` delivered, ``passes`` over the file started
        (> 1: it wrapped around), ``samples_per_pass`` (once a pass ended), ``bad_lines_skipped``
        (each malformed line once) and the first few as ``bad_line_examples`` "line N: why"; dict
        mapping adds the dictionaries' sizes and overflow."""
        return {"source": "file", **self.src.describe(), "batches": self.done, "samples": self.samples,
                "passes": self.passes, "samples_per_pass": self.samples_per_pass,
                "bad_lines_skipped": self.bad_lines_skipped,
                "bad_line_examples": [f"line {ln}: {why}" for ln, why in self.bad_lines], **self.mapper.stats()}
