"""``bench --gc-yield-to-reads`` (``BenchSpec.gc_yield_to_reads``): the store's run trains the same
losses with its GC out of the way of its reads — no background GC, only counted foreground GC when
no idle window is given to GC — and the report and its table say the option was on."""

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from zswap_host.bench import BenchSpec, format_table, run_bench  # noqa: E402
from zswap_host.cli import main  # noqa: E402

SPEC = dict(preset="tiny", iterations=30, lookahead=0, utilisation=0.9, idle_gc=False, runs=("store-on-zns",), jobs=1)


def test_same_losses_and_no_background_gc():
    runs = {y: {r["name"]: r for r in run_bench(BenchSpec(**SPEC, gc_yield_to_reads=y))["runs"]} for y in (False, True)}
    before, after = runs[False]["store-on-zns"], runs[True]["store-on-zns"]
    assert before["gc_runs_background"] > 0 and before["gc_yielded"] == 0          # the control: GC was due
    assert after["gc_runs_background"] == 0 and after["gc_yielded"] > 0 and after["gc_runs_foreground"] > 0
    assert after["loss"] == before["loss"] == runs[True]["dram-only"]["loss"]


def test_the_report_and_the_command_say_so():
    r = run_bench(BenchSpec(**{**SPEC, "iterations": 4}, gc_yield_to_reads=True))
    assert r["gc_yield_to_reads"] is True and "the store's GC yields to reads" in format_table(r)
    assert "gc_yield_to_reads" not in run_bench(BenchSpec(**{**SPEC, "iterations": 4}))
    bad = CliRunner().invoke(main, ["bench", "--ranks", "2", "--gc-yield-to-reads"])
    assert bad.exit_code == 2 and "--gc-yield-to-reads does not apply" in bad.output


def test_whole_victim_gc_steps_train_the_same_losses():
    base = {r["name"]: r for r in run_bench(BenchSpec(**SPEC))["runs"]}
    rep = run_bench(BenchSpec(**SPEC, gc_step_bytes=0))
    got = {r["name"]: r for r in rep["runs"]}
    assert got["store-on-zns"]["gc_runs_background"] > 0
    assert got["store-on-zns"]["loss"] == base["store-on-zns"]["loss"]
    assert rep["gc_step_bytes"] == 0 and "background GC steps of a whole victim" in format_table(rep)
    bad = CliRunner().invoke(main, ["bench", "--model", "tiny", "--gc-step", "lots"])
    assert bad.exit_code == 2 and "bad --gc-step 'lots'" in bad.output
