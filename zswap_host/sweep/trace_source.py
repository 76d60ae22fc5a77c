"""The trace a sweep replays: a recorded ``SwapTrace`` file (``bench --trace-out``, ``.npz``) or a
chunked trace directory (``workloads.generate_dlrm_trace``), read the same way — its meta, its
chunks one at a time, a digest — and the device sizing its meta implies (``bench.plan``)."""

from __future__ import annotations

import hashlib
import os
from typing import Iterator

from ..workloads import ChunkedTrace, SwapTrace
from ..workloads.chunked_trace import MANIFEST
from .grid import SweepError


class TraceSource:
    """``path``: a ``.npz`` SwapTrace or a chunked trace directory. ``preset``: the bench preset
    whose tables the trace pages (default: the trace's meta ``preset``). ``SweepError`` (one line)
    for a missing or unreadable trace, or one that names no preset."""

    def __init__(self, path: str, preset: str | None = None) -> None:
        self.path = path
        try:
            if os.path.isdir(path):
                self._chunked = ChunkedTrace(path)
                self.meta = dict(self._chunked.meta)
            elif os.path.isfile(path):
                self._chunked = None
                self._whole = SwapTrace.load(path)
                self.meta = dict(self._whole.meta)
            else:
                raise SweepError(f"{path}: no such trace (a bench --trace-out .npz or a chunked trace directory)")
        except SweepError:
            raise
        except Exception as e:          # corrupt npz, bad manifest: one line, whatever numpy raised
            raise SweepError(f"{path}: not a readable swap trace: {e}") from None
        self.preset = preset or self.meta.get("preset")
        if not self.preset:
            raise SweepError(f"{path}: the trace does not say which training preset (bench --model) it pages; give --model")

    def chunks(self) -> Iterator[SwapTrace]:
        """The trace's events, a chunk at a time (one chunk for a ``.npz``)."""
        if self._chunked is None:
            yield self._whole
        else:
            yield from self._chunked

    def counts(self) -> dict:
        return self._chunked.counts() if self._chunked is not None else self._whole.counts()

    def sha256(self) -> str:
        """Digest of the trace's bytes (a directory: its manifest and chunks, in name order)."""
        h = hashlib.sha256()
        files = [self.path] if self._chunked is None else \
            [os.path.join(self.path, f) for f in [MANIFEST, *(c["file"] for c in self._chunked.chunks)]]
        for name in files:
            with open(name, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        return h.hexdigest()

    def plan(self, utilisation: float):
        """The bench's plan for this trace's preset with the tables at ``utilisation`` of the
        conventional SSD's usable bytes: the devices' URLs and the zoned view's units. The compute
        basis is pinned (it sizes nothing here: the trace carries its own idle windows)."""
        from ..bench import BenchSpec, plan
        from ..bench.compute import ComputeBasis

        m = self.meta
        return plan(BenchSpec(preset=self.preset, utilisation=utilisation, lookahead=0,
                              iterations=m.get("iterations"), batch_size=m.get("batch_size"),
                              compute=ComputeBasis("pinned", float(m.get("us_per_sample") or 1.0), 1, "trace")))
