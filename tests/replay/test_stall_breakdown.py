"""The replay's stall breakdown (``replay/stall.py``): its parts are an exact partition of the stall
on the model's clock, GC's parts are the store's GC clock, and ``--gc-yield-to-reads`` leaves no GC
in front of the reads but counted foreground GC, every swap-in still verified."""

import json

import pytest
from click.testing import CliRunner

from zswap_host.cli import main
from zswap_host.replay import ReplaySpec, run_replay
from zswap_host.workloads import generate_dlrm_trace

PARTS = ("swap_in_reads", "swap_out_writes", "gc_background_read", "gc_background_write", "gc_background_reset",
         "gc_foreground_read", "gc_foreground_write", "gc_foreground_reset", "idle_overrun", "hidden_by_compute")
RUNS = ("linux-swap-batched", "store-on-conventional", "store-on-zns")


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return generate_dlrm_trace(str(tmp_path_factory.mktemp("trace") / "tiny"), "tiny", lookahead=1).path


def replay(trace, **kw):
    spec = ReplaySpec(trace, runs=RUNS, utilisation=0.9, us_per_sample=0.05, isolate=False, suspend=True, **kw)
    return {r["run"]: r for r in run_replay(spec)["runs"]}


@pytest.fixture(scope="module")
def rows(trace):
    return replay(trace)


@pytest.mark.parametrize("run", RUNS)
def test_the_parts_add_up_to_the_stall(rows, run):
    b = rows[run]["stall_breakdown"]
    assert rows[run]["stall_s"] > 0
    assert sum(b[k] for k in PARTS) == pytest.approx(b["sum"], abs=1e-3)
    assert b["sum"] == pytest.approx(rows[run]["stall_s"], abs=1e-3)
    assert b["swap_in_reads"] > 0 and b["swap_out_writes"] > 0 and b["hidden_by_compute"] <= 0
    assert all(b[k] >= 0 for k in PARTS if k != "hidden_by_compute")
    gc = sum(b[k] for k in PARTS if k.startswith("gc_"))
    assert b["gc_in_front_of_reads"] == pytest.approx(gc, abs=1e-3)


def test_gc_parts_are_the_stores_gc(rows):
    assert rows["linux-swap-batched"]["stall_breakdown"]["gc_in_front_of_reads"] == 0     # no host GC
    conv = rows["store-on-conventional"]
    assert conv["store_gc_mib"] > 0 and conv["stall_breakdown"]["gc_background_read"] > 0


def test_yielding_gc_leaves_only_counted_foreground_gc_in_front_of_reads(trace, rows):
    got = replay(trace, gc_yield_to_reads=True)          # every swap-in verified against its fingerprint
    for run in ("store-on-conventional", "store-on-zns"):
        b = got[run]["stall_breakdown"]
        assert b["gc_background_read"] == b["gc_background_write"] == b["gc_background_reset"] == 0
        assert sum(b[k] for k in PARTS) == pytest.approx(got[run]["stall_s"], abs=1e-3)
    assert got["linux-swap-batched"]["stall_s"] == rows["linux-swap-batched"]["stall_s"]   # not the store: unchanged


def test_the_command_takes_the_option_and_keys_its_journal_on_it(trace, tmp_path):
    out, args = str(tmp_path / "out"), ("replay", "--trace", trace, "--runs", "store-on-zns", "--utilisation", "0.9")
    r = CliRunner().invoke(main, [*args, "--out", out, "--gc-yield-to-reads", "--json", str(tmp_path / "y.json")])
    assert r.exit_code == 0, r.output
    got = json.loads((tmp_path / "y.json").read_text())
    assert got["gc_yield_to_reads"] is True and "--gc-yield-to-reads" in got["command"]
    assert "stall_breakdown" in got["runs"][0]
    again = CliRunner().invoke(main, [*args, "--out", out, "--json", str(tmp_path / "n.json")])
    assert again.exit_code == 0 and json.loads((tmp_path / "n.json").read_text())["resumed"] == []


def test_a_whole_victim_gc_step_and_a_bad_one(trace, tmp_path):
    args = ("replay", "--trace", trace, "--runs", "store-on-conventional", "--utilisation", "0.9",
            "--compute-us-per-sample", "0.05", "--suspend")
    r = CliRunner().invoke(main, [*args, "--gc-step", "0", "--json", str(tmp_path / "w.json")])
    assert r.exit_code == 0, r.output
    got = json.loads((tmp_path / "w.json").read_text())
    assert got["gc_step_bytes"] == 0 and "--gc-step 0" in got["command"]
    assert got["runs"][0]["stall_breakdown"]["gc_background_read"] > 0
    bad = CliRunner().invoke(main, [*args, "--gc-step", "lots", "--json", str(tmp_path / "b.json")])
    assert bad.exit_code == 2 and "bad --gc-step 'lots'" in bad.output and not (tmp_path / "b.json").exists()
    assert "Traceback" not in bad.output and len(bad.output.strip().splitlines()) == 1
