"""``bench --pack-hot-rows``: packing as its own step of the chain. The bench adds linux-swap-packed
(linux-swap-lookahead with hot rows packed), the store's runs pack, the Linux runs before it do not;
losses stay equal across every run, and the summary's best Linux run is chosen among all four."""

import pytest

pytest.importorskip("torch")

from zswap_host.bench import BenchError, BenchSpec, plan, run_bench  # noqa: E402
from zswap_host.bench.chain import LINUX_RUNS  # noqa: E402
from zswap_host.bench.plan import PACKED_RUNS, spec_runs  # noqa: E402
from zswap_host.bench.table import format_table  # noqa: E402

# 60 iterations: one repack (every 50 steps) in each packed run
SPEC = dict(preset="tiny", iterations=60, lookahead=1, pack_hot_rows=True)


@pytest.fixture(scope="module")
def report():
    return run_bench(BenchSpec(**SPEC))


def test_packing_is_a_run_and_a_step_of_its_own(report):
    names = [r["name"] for r in report["runs"]]
    assert names == ["dram-only", "linux-swap", "linux-swap-batched", "linux-swap-lookahead", "linux-swap-packed",
                     "store-on-conventional", "store-on-zns"]
    assert [(s["step"], s["from"], s["to"]) for s in report["chain"]] == [
        ("batching", "linux-swap", "linux-swap-batched"),
        ("lookahead", "linux-swap-batched", "linux-swap-lookahead"),
        ("packing", "linux-swap-lookahead", "linux-swap-packed"),
        ("aggregation", "linux-swap-packed", "store-on-conventional"),
        ("zns", "store-on-conventional", "store-on-zns")]
    by = {r["name"]: r for r in report["runs"]}
    # the packed runs repacked; the Linux runs before the packing step never did
    for name in names[1:]:
        assert (by[name]["paging"]["repacks"] > 0) == (name in PACKED_RUNS), name
    # the packed Linux run is linux-swap-lookahead plus packing: the same lookahead
    assert by["linux-swap-packed"]["lookahead"] == by["linux-swap-lookahead"]["lookahead"] == 1
    assert by["linux-swap-packed"]["paging"]["faults"] != by["linux-swap-lookahead"]["paging"]["faults"]
    text = format_table(report)
    assert "  packing      linux-swap-lookahead -> linux-swap-packed: stall" in text


def test_losses_equal_across_every_run(report):
    assert report["ratios"]["losses_match"] and report["ratios"]["max_loss_difference"] == 0
    assert report["pack_hot_rows"] is True


def test_best_linux_run_includes_the_packed_run(report):
    assert "linux-swap-packed" in LINUX_RUNS
    linux = [r for r in report["runs"] if r["name"].startswith("linux-swap")]
    best = min(linux, key=lambda r: (r["train_time_s"], r["io_stall_time_s"]))
    assert report["summary"]["best_linux_run"] == best["name"]
    assert "slowdown_linux-swap-packed" in report["ratios"]


def test_the_packed_run_needs_packing():
    assert "linux-swap-packed" not in spec_runs(BenchSpec(preset="tiny"))
    assert "linux-swap-packed" in spec_runs(BenchSpec(preset="tiny", pack_hot_rows=True))
    with pytest.raises(BenchError, match="needs --pack-hot-rows"):
        plan(BenchSpec(preset="tiny", runs=("linux-swap-packed",)))
    # without lookahead the packed run packs linux-swap-batched, and the step starts there
    from zswap_host.bench import chain

    recs = [{"name": n, "train_time_s": 1.0 + i, "io_stall_time_s": float(i), "write_amplification": 1.0,
             "loss": [0.5]} for i, n in enumerate(("dram-only", "linux-swap", "linux-swap-batched",
                                                   "linux-swap-packed", "store-on-conventional"))]
    steps = [(s["step"], s["from"], s["to"]) for s in chain(recs)["chain"]]
    assert ("packing", "linux-swap-batched", "linux-swap-packed") in steps
    assert ("aggregation", "linux-swap-packed", "store-on-conventional") in steps
