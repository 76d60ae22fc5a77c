"""A trace's identity (what a resumed replay is keyed on): two generations of the same parameters
share it though their manifests record different wall-clock times; other parameters change it."""

from __future__ import annotations

import json
import os

from zswap_host.replay.trace_input import ReplayTrace, without_wall_clock
from zswap_host.workloads import generate_dlrm_trace


def _gen(path, seed=0):
    return generate_dlrm_trace(str(path), "tiny", iterations=6, seed=seed).path


def test_identical_generations_share_the_identity(tmp_path):
    a, b = _gen(tmp_path / "a"), _gen(tmp_path / "b")
    ma, mb = (json.load(open(os.path.join(p, "trace.json"))) for p in (a, b))
    ma["meta"]["generate_wall_s"], mb["meta"]["generate_wall_s"] = 1.0, 2.0  # the clock did differ
    for p, m in ((a, ma), (b, mb)):
        json.dump(m, open(os.path.join(p, "trace.json"), "w"))
    assert ReplayTrace(a, "tiny", None).identity() == ReplayTrace(b, "tiny", None).identity()


def test_another_seed_changes_the_identity(tmp_path):
    a, b = _gen(tmp_path / "a"), _gen(tmp_path / "b", seed=1)
    assert ReplayTrace(a, "tiny", None).identity() != ReplayTrace(b, "tiny", None).identity()


def test_only_wall_clock_fields_are_dropped():
    m = {"meta": {"seed": 3, "generate_wall_s": 0.5, "paging": {"faults": 7, "io_wall_s": 1e-5,
                                                                "io_stall_s": 1e-5, "io_overlap_s": 0.0}},
         "chunks": [{"events": 4, "idle_s": 0.1}], "complete": True}
    assert without_wall_clock(m) == {"meta": {"seed": 3, "paging": {"faults": 7}},
                                     "chunks": [{"events": 4, "idle_s": 0.1}], "complete": True}
