"""A whole replay: the runs checked and the trace opened and sized before anything runs (bad input
fails in one line, nothing written), then each run not already in the journal replayed in a process
of its own, recorded as it finishes, and the summary."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable

from .journal import Journal
from .measure import Progress, replay_run
from .runs import DEFAULT_RUNS, check_runs
from .trace_input import ReplayTrace


@dataclass(frozen=True)
class ReplaySpec:
    """What to replay. ``trace``: a ``.npz`` SwapTrace or a chunked trace directory. ``preset`` /
    ``budget``: for a trace whose meta lacks them. ``utilisation``: tables / the conventional SSD's
    usable bytes (None: the bench's); ``op`` / ``erase_block``: that SSD's over-provisioning and
    erase block in bytes (None: the bench's); ``ssd`` / ``geometry``: the devices' SSD preset and
    geometry (``BenchSpec``'s). ``us_per_sample``: charge this compute per sample instead of the
    trace's (its idle windows scaled by the ratio; None: the trace's). ``journal``: the resumable jsonl (None: none); ``key``: what its
    rows are keyed on (None: the trace's digest, preset, budget and utilisation); ``restart``: forget
    the journal first. ``isolate``: each run in a spawned process (its peak RSS its own). ``idle_gc``:
    the trace's compute windows go to both GCs (the store's and the conventional SSD's background GC;
    False: to neither). ``suspend``: every run's SSD suspends programs and erases for reads.
    ``gc_yield_to_reads``: the store runs' GC yields to reads (``StoreConfig.gc_yield_to_reads``);
    ``gc_step_bytes``: their background GC step (``StoreConfig.gc_step_bytes``; None: the store's)."""

    trace: str
    runs: tuple[str, ...] = DEFAULT_RUNS
    preset: str | None = None
    budget: str | float | None = None
    utilisation: float | None = None
    op: float | None = None
    erase_block: int | None = None
    ssd: str = "thesis-ssd"
    geometry: str = "scaled"
    us_per_sample: float | None = None
    journal: str | None = None
    key: dict | None = None
    restart: bool = False
    isolate: bool = True
    verify: bool = True
    idle_gc: bool = True
    suspend: bool = False
    gc_yield_to_reads: bool = False
    gc_step_bytes: int | None = None


def run_replay(spec: ReplaySpec, progress: Progress | None = None,
               on_row: Callable[[dict, bool], None] | None = None) -> dict:
    """Replay ``spec.trace`` through every run; the summary: ``trace`` (path, digest and what it is
    of, preset, counts, iterations, batch size, budget pages, compute per sample), ``utilisation``,
    ``devices`` (the sizing), ``wall_s_this_invocation``, ``resumed`` (the runs found in the
    journal) and ``runs`` (one row per run, in ``spec.runs`` order: see ``measure.replay_run``; each
    with its ``key``). ``progress``: per chunk of each run;
    ``on_row(row, resumed)``: per run, as it finishes or is found in the journal. ``ReplayError`` for
    bad input (before any run) or a run that failed (named; the runs before it stay journalled)."""
    runs = check_runs(spec.runs)
    tr = ReplayTrace(spec.trace, spec.preset, spec.budget)
    sizing = tr.sizing(spec.utilisation, spec.op, spec.erase_block, spec.ssd, spec.geometry, spec.idle_gc,
                       spec.suspend)
    if spec.gc_yield_to_reads or spec.gc_step_bytes is not None:
        sizing = dataclasses.replace(sizing, gc_yield_to_reads=spec.gc_yield_to_reads, gc_step_bytes=spec.gc_step_bytes)
    idle_scale = tr.idle_scale(spec.us_per_sample)
    t0 = time.monotonic()
    digest = tr.identity()
    key = spec.key if spec.key is not None else {"trace_sha256": digest, "preset": tr.preset,
                                                 "budget_pages": sizing.budget_pages, "utilisation": spec.utilisation,
                                                 **{k: v for k, v in (("op", spec.op), ("erase_block", spec.erase_block),
                                                                      ("us_per_sample", spec.us_per_sample),
                                                                      ("gc_step_bytes", spec.gc_step_bytes))
                                                    if v is not None},
                                                 **{k: v for k, v in (("ssd", spec.ssd), ("geometry", spec.geometry),
                                                                      ("idle_gc", spec.idle_gc),
                                                                      ("suspend", spec.suspend),
                                                                      ("gc_yield_to_reads", spec.gc_yield_to_reads))
                                                    if v != ReplaySpec.__dataclass_fields__[k].default}}
    journal = Journal(spec.journal, key)
    if spec.restart:
        journal.restart()
    done = journal.done()
    resumed = [r for r in runs if r in done]
    for name in runs:
        if name in done and on_row is not None:
            on_row(done[name], True)
    for name in (r for r in runs if r not in done):
        args = (name, spec.trace, tr.preset, sizing)
        if spec.isolate:
            from .isolate import in_child

            row = in_child(_replay_run, (*args, spec.verify, idle_scale), progress, what=f"run {name}")
        else:
            row = replay_run(*args, progress=progress, verify=spec.verify, idle_scale=idle_scale)
        done[name] = journal.add(row)
        if on_row is not None:
            on_row(done[name], False)
    m = tr.meta
    return {"trace": {"path": spec.trace, "sha256": digest, "sha256_of": tr.identity_of(), "preset": tr.preset,
                      **tr.counts(),
                      **{k: m.get(k) for k in ("kind", "iterations", "batch_size", "seed", "us_per_sample", "lookahead")},
                      "budget_pages": sizing.budget_pages},
            "utilisation": spec.utilisation, "op": spec.op, "erase_block": spec.erase_block, "idle_gc": spec.idle_gc,
            "suspend": spec.suspend, "gc_yield_to_reads": spec.gc_yield_to_reads, "gc_step_bytes": spec.gc_step_bytes,
            "us_per_sample": spec.us_per_sample or m.get("us_per_sample"), "devices": sizing.devices,
            "wall_s_this_invocation": round(time.monotonic() - t0, 1), "resumed": resumed,
            "runs": [done[r] for r in runs]}


def _replay_run(name, trace, preset, sizing, verify, idle_scale=1.0, progress=None) -> dict:
    return replay_run(name, trace, preset, sizing, progress=progress, verify=verify, idle_scale=idle_scale)
