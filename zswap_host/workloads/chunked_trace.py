"""A swap trace kept on disk in chunks, for traces larger than memory (an MLPerf-size run's is
~1 GB of page ids): a directory with ``trace.json`` (the trace's meta, and per chunk its file,
iterations and counts) and ``chunk_NNNNN.npz`` files, each a ``SwapTrace`` of whole iterations
(every chunk ends after an idle window, so chunks replay one after another as the whole would).

``ChunkWriter`` appends chunks (the manifest is rewritten after each, so a reader sees only whole
chunks); ``ChunkedTrace`` reads them back one at a time.
"""

from __future__ import annotations

import json
import os

from .trace import SwapTrace
from .trace_check import TraceFileError

__all__ = ["ChunkWriter", "ChunkedTrace", "TraceFileError", "MANIFEST"]

MANIFEST = "trace.json"


class ChunkWriter:
    """Writes a chunked trace into ``path`` (created; an existing trace there is replaced)."""

    def __init__(self, path: str, meta: dict) -> None:
        os.makedirs(path, exist_ok=True)
        for f in os.listdir(path):              # a previous trace's chunks must not mix in
            if f.startswith("chunk_") or f == MANIFEST:
                os.remove(os.path.join(path, f))
        self.path = path
        self.meta = dict(meta)
        self.chunks: list[dict] = []
        self._write_manifest(complete=False)

    def add(self, trace: SwapTrace, iterations: tuple[int, int]) -> None:
        name = f"chunk_{len(self.chunks):05d}.npz"
        trace.save(os.path.join(self.path, name), compress=False)
        self.chunks.append({"file": name, "iterations": list(iterations), **trace.counts()})
        self._write_manifest(complete=False)

    def close(self) -> "ChunkedTrace":
        self._write_manifest(complete=True)
        return ChunkedTrace(self.path)

    def _write_manifest(self, complete: bool) -> None:
        tmp = os.path.join(self.path, MANIFEST + ".tmp")
        with open(tmp, "w") as f:
            json.dump({"meta": self.meta, "complete": complete, "chunks": self.chunks}, f, indent=1)
        os.replace(tmp, os.path.join(self.path, MANIFEST))


class ChunkedTrace:
    """A chunked trace directory. ``TraceFileError`` if it is not one or was not finished."""

    def __init__(self, path: str) -> None:
        mpath = os.path.join(path, MANIFEST)
        if not os.path.isfile(mpath):
            raise TraceFileError(f"{path}: not a chunked trace (no {MANIFEST}); make one with "
                                 f"experiments/mlperf_replay.py --generate or workloads.generate_dlrm_trace")
        try:
            with open(mpath) as f:
                m = json.load(f)
            self.meta, self.chunks, complete = m["meta"], list(m["chunks"]), bool(m["complete"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise TraceFileError(f"{mpath} is corrupt: {e}") from None
        if not complete:
            raise TraceFileError(f"{path}: the trace was not finished ({len(self.chunks)} chunks written); "
                                 f"generate it again")
        self.path = path

    def __len__(self) -> int:
        return len(self.chunks)

    def chunk(self, i: int) -> SwapTrace:
        """Chunk ``i``, checked as ``SwapTrace.load`` checks a trace (its ids also below the meta's
        ``total_pages``): ``TraceFileError`` naming the directory, the chunk and the row."""
        name = self.chunks[i].get("file") if isinstance(self.chunks[i], dict) else None
        if not isinstance(name, str) or os.path.basename(name) != name or name in ("", ".", ".."):
            raise TraceFileError(f"{self.path}: chunk {i}: the manifest names {name!r}, not a chunk file")
        where = f"{self.path}: chunk {i} ({name})"
        limit = self.meta.get("total_pages") if isinstance(self.meta, dict) else None
        try:
            return SwapTrace.load(os.path.join(self.path, name), where,
                                  int(limit) if isinstance(limit, int) and limit > 0 else None)
        except OSError as e:
            raise TraceFileError(f"{where}: cannot read it ({e.strerror or e})") from None

    def __iter__(self):
        return (self.chunk(i) for i in range(len(self)))

    def counts(self) -> dict:
        keys = ("events", "swap_in_pages", "swap_out_pages", "idle_s")
        return {k: sum(c[k] for c in self.chunks) for k in keys} | {"chunks": len(self.chunks)}

    def whole(self) -> SwapTrace:
        """All chunks as one in-memory trace (small traces, tests)."""
        import numpy as np

        parts = list(self)
        ids = [p.ids for p in parts]
        lens = [np.diff(p.bounds) for p in parts]
        return SwapTrace(np.concatenate([p.ops for p in parts]), np.concatenate([p.streams for p in parts]),
                         np.concatenate([p.idle_s for p in parts]),
                         np.concatenate([[0], np.cumsum(np.concatenate(lens))]).astype(np.int64),
                         np.concatenate(ids), dict(self.meta))
