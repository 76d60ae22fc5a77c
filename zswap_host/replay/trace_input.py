"""The trace a replay reads: a ``bench --trace-out`` ``.npz`` or a chunked trace directory
(``sweep.trace_source`` reads both), with what sizes its devices — the bench preset whose tables it
pages and its DRAM budget — taken from its meta, asked for only when the meta lacks them; or a
preset's trace generated first (``workloads.generate_dlrm_trace``, torch-free), reused when it is
there with the same parameters."""

from __future__ import annotations

import hashlib
import json
import os

from .runs import ReplayError, Sizing


def _budget_pages(meta: dict) -> int | None:
    """The DRAM budget (pages) a trace's meta records: a generated trace's ``budget_pages``, a bench
    trace's ``budget_bytes``, a synthetic one's (``synthetic_dlrm_trace``) fraction of its pages."""
    if meta.get("budget_pages") is not None:
        return int(meta["budget_pages"])
    if meta.get("budget_bytes") is not None:
        return int(meta["budget_bytes"]) // int(meta.get("page_size", 4096))
    if meta.get("kind") == "synthetic-dlrm":
        return max(int(meta["batch_pages"]), int(float(meta["dram_fraction"]) * int(meta["pages"])))
    return None


def bench_budget(budget):
    """A budget as ``bench.plan`` takes it: '0.25' a fraction, a whole number above 1 bytes; '25%'
    and '64MiB' stay strings."""
    if budget is None or isinstance(budget, int):
        return budget
    try:
        b = float(budget)
    except (TypeError, ValueError):
        return budget
    return int(b) if b > 1 and b.is_integer() else b


class ReplayTrace:
    """``path``'s trace. ``preset`` / ``budget``: for a trace whose meta does not say (a budget as
    the bench takes it: ``25%``, ``0.25``, ``64MiB``); a value that contradicts the meta is refused.
    ``ReplayError`` (one line) for a missing, unreadable or under-described trace."""

    def __init__(self, path: str, preset: str | None = None, budget: str | float | None = None) -> None:
        from ..sweep.grid import SweepError
        from ..sweep.trace_source import TraceSource

        try:
            self.source = TraceSource(path, preset)   # names the preset, or says to give --model
        except SweepError as e:
            raise ReplayError(str(e)) from None
        self.path, self.meta = path, self.source.meta
        meta_preset = self.meta.get("preset")
        if preset and meta_preset and preset != meta_preset:
            raise ReplayError(f"{path} is the {meta_preset!r} preset's trace, not {preset!r}: leave --model out")
        self.preset = meta_preset or preset
        self.budget_pages = _budget_pages(self.meta)
        if budget is not None and self.budget_pages is not None:
            raise ReplayError(f"{path} records its DRAM budget ({self.budget_pages} pages): --budget applies "
                              f"only to a trace that does not, or with --generate")
        self.budget = budget

    def sizing(self, utilisation: float | None = None, op: float | None = None,
               erase_block: int | None = None, ssd: str = "thesis-ssd", geometry: str = "scaled",
               idle_gc: bool = True, suspend: bool = False) -> Sizing:
        """The bench's devices for this trace's preset (same flash; the tables at ``utilisation`` of
        the conventional SSD's usable bytes, default the bench's; its over-provisioning ``op`` and
        erase block, default the bench's; ``ssd``, ``geometry``, ``idle_gc`` and ``suspend`` as ``BenchSpec`` takes them).
        ``ReplayError`` for a bad budget, utilisation, OP, erase block, SSD preset or geometry, or an
        unknown preset."""
        from ..bench import BenchSpec, plan
        from ..bench.compute import ComputeBasis
        from ..errors import ZswapError

        m = self.meta
        budget = self.budget
        if budget is None:
            budget = self.budget_pages * int(m.get("page_size", 4096)) if self.budget_pages is not None else None
        if budget is None:
            raise ReplayError(f"{self.path}: the trace does not record its DRAM budget; give --budget")
        try:
            pl = plan(BenchSpec(preset=self.preset, budget=bench_budget(budget), lookahead=0, utilisation=utilisation,
                                op=op, erase_block=erase_block, ssd=ssd, geometry=geometry, idle_gc=idle_gc, suspend=suspend,
                                iterations=m.get("iterations"), batch_size=m.get("batch_size"),
                                compute=ComputeBasis("pinned", float(m.get("us_per_sample") or 1.0), 1, "trace")))
        except ZswapError as e:
            raise ReplayError(str(e)) from None
        return Sizing.of_plan(pl, self.budget_pages if self.budget_pages is not None else pl.budget_pages, idle_gc)

    def idle_scale(self, us_per_sample: float | None) -> float:
        """What the trace's compute windows are multiplied by to charge ``us_per_sample`` per sample
        instead of the trace's own (1.0 for None). ``ReplayError`` for a trace that does not record its
        compute per sample, or records none (its windows cannot be rescaled)."""
        if us_per_sample is None:
            return 1.0
        own = self.meta.get("us_per_sample")
        if not own or float(own) <= 0:
            raise ReplayError(f"{self.path} does not record a compute per sample above 0 "
                              f"(us_per_sample {own!r}): its compute windows cannot be rescaled")
        return float(us_per_sample) / float(own)

    def counts(self) -> dict:
        return self.source.counts()

    def chunks(self):
        return self.source.chunks()

    def identity_of(self) -> str:
        """What :meth:`identity` digests."""
        return ("the manifest (trace.json) without its wall-clock fields" if os.path.isdir(self.path)
                else "the file")

    def identity(self) -> str:
        """A digest that changes with the trace (an ``.npz``: its bytes; a directory: its manifest,
        which holds the meta, seed included, and every chunk's counts, less the fields the generator
        measured on the wall clock, so identical generations share it): what a resumed run is keyed on."""
        from ..workloads.chunked_trace import MANIFEST

        h = hashlib.sha256()
        if os.path.isdir(self.path):
            with open(os.path.join(self.path, MANIFEST)) as f:
                manifest = json.load(f)
            h.update(json.dumps(without_wall_clock(manifest), sort_keys=True).encode())
            return h.hexdigest()
        with open(self.path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()


# the generator's paging runs on the wall clock (no device model): its stall and overlap are wall time
_WALL_CLOCK_KEYS = frozenset({"io_stall_s", "io_overlap_s"})


def without_wall_clock(manifest: dict) -> dict:
    """``manifest`` less what the generation measured on the wall clock (``*_wall_s`` anywhere in
    its meta; the paging's stall and overlap): what two generations of the same parameters share."""
    def strip(d: dict, paging: bool) -> dict:
        return {k: strip(v, k == "paging") if isinstance(v, dict) else v for k, v in d.items()
                if not k.endswith("_wall_s") and not (paging and k in _WALL_CLOCK_KEYS)}

    return {**manifest, "meta": strip(manifest.get("meta", {}), False)}


def ensure_trace(path: str, preset: str, *, budget=None, iterations: int | None = None,
                 us_per_sample: float | None = None, seed: int = 0, lookahead: int = 0, progress=None,
                 sizing: dict | None = None) -> bool:
    """Generate ``preset``'s page trace into directory ``path`` unless a finished trace of the same
    parameters (None: the preset's) is there already; True when it generated one. ``progress(done,
    total)`` per chunk of iterations. ``lookahead``: batches prefetched ahead (``generate_dlrm_trace``).
    ``sizing``: the replay's ``ReplayTrace.sizing`` arguments (``utilisation``, ``op``, ``erase_block``,
    ``ssd``, ``geometry``), checked against the preset before anything is generated.
    ``ReplayError`` for bad parameters, or a ``path`` that is a file."""
    from ..workloads import ChunkedTrace, TraceFileError, TraceGenError, generate_dlrm_trace
    from ..workloads.train import preset as train_preset

    try:
        p = train_preset(preset)
    except ValueError as e:
        raise ReplayError(str(e)) from None
    if os.path.exists(path) and not os.path.isdir(path):
        raise ReplayError(f"{path} is a file; --generate writes a trace directory there")
    want = {"preset": preset, "budget": p.budget if budget is None else budget,
            "iterations": p.iterations if iterations is None else iterations,
            "us_per_sample": p.compute_us_per_sample if us_per_sample is None else us_per_sample, "seed": seed,
            "lookahead": lookahead}
    try:
        m = ChunkedTrace(path).meta
        if all(str(m.get(k)) == str(v) for k, v in want.items()):
            return False
    except TraceFileError:
        pass
    _check_budget(preset, budget, iterations, sizing or {})          # before anything is written
    try:
        generate_dlrm_trace(path, preset, budget=budget, iterations=iterations, us_per_sample=us_per_sample,
                            seed=seed, lookahead=lookahead, progress=progress)
    except TraceGenError as e:
        raise ReplayError(str(e)) from None
    return True


def _check_budget(preset: str, budget, iterations: int | None, sizing: dict) -> None:
    """``ReplayError`` for a budget the bench would refuse (all the tables, less than a batch, not
    a budget), or devices it could not size (``sizing``: an unknown SSD preset, a real geometry too
    large for the tables): the trace would not swap, could not be made, or could not be replayed."""
    from ..bench import BenchSpec, plan
    from ..bench.compute import ComputeBasis
    from ..errors import ZswapError

    try:
        plan(BenchSpec(preset=preset, budget=bench_budget(budget), lookahead=0, iterations=iterations,
                       compute=ComputeBasis("pinned", 1.0, 1, "check"), **sizing))
    except ZswapError as e:
        raise ReplayError(str(e)) from None
