"""``zswap-host bench`` on the tiny preset: the report's shape, equal losses, and bad input refused
before any training starts."""

import json

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from zswap_host import NotZonedError  # noqa: E402
from zswap_host.bench import BenchError, BenchSpec, plan, run_bench  # noqa: E402
from zswap_host.cli import main  # noqa: E402

RUNS = ["dram-only", "conventional", "store-on-conventional", "zns-host-gc"]


@pytest.fixture(scope="module")
def report():
    return run_bench(BenchSpec(preset="tiny", iterations=30))


def test_runs_and_metrics(report):
    assert [r["name"] for r in report["runs"]] == RUNS
    dram = report["runs"][0]
    assert dram["clock"] == "wall" and dram["io_stall_time_s"] == 0
    for r in report["runs"][1:]:
        assert r["clock"] == "modeled"
        assert r["train_time_s"] == pytest.approx(r["compute_time_s"] + r["io_stall_time_s"])
        assert r["io_stall_time_s"] > 0 and r["swap_in_bytes"] > 0 and r["swap_out_bytes"] > 0
        for key in ("host_write_bytes", "device_write_bytes", "media_write_bytes", "write_amplification",
                    "write_size_histogram", "read_size_histogram", "device_time_s", "gc_write_bytes",
                    "swap_in_latency_p50_s", "swap_in_latency_p99_s", "requests_under_32k_share"):
            assert key in r, key
        assert len(r["per_iteration_s"]) == 30 and len(r["loss"]) == 30
    conv, zns = report["runs"][1], report["runs"][3]
    # the store writes whole units; Linux swap writes what adjacent slots give
    mean = lambda h: sum(int(k) * v for k, v in h.items()) / sum(h.values())  # noqa: E731
    assert mean(zns["write_size_histogram"]) > mean(conv["write_size_histogram"])
    assert conv["device_gc_write_bytes"] >= 0 and zns["device_gc_write_bytes"] == 0


def test_ratios_and_equal_losses(report):
    q = report["ratios"]
    assert q["losses_match"] and q["max_loss_difference"] <= 1e-6
    t = {r["name"]: r["train_time_s"] for r in report["runs"]}
    assert q["slowdown_conventional"] == pytest.approx(t["conventional"] / t["dram-only"])
    assert q["speedup_zns_host_gc_vs_conventional"] == pytest.approx(t["conventional"] / t["zns-host-gc"])
    assert q["aggregation_gain"] * q["zns_gain"] == pytest.approx(q["speedup_zns_host_gc_vs_conventional"])


def test_default_devices_share_the_flash():
    pl = plan(BenchSpec(preset="quick"))
    from zswap_host import open_device

    conv, zns = open_device(pl.baseline_url), open_device(pl.zns_url)
    raw_conv = conv.model.raw_bytes
    raw_zns = zns.geometry.nr_zones * zns.geometry.zone_capacity
    assert abs(raw_conv - raw_zns) / raw_conv < 0.02


@pytest.mark.parametrize("spec,error,words", [
    (BenchSpec(preset="tiny", budget=1.5), BenchError, "budget"),
    (BenchSpec(preset="tiny", budget=1.0), BenchError, "nothing would swap"),
    (BenchSpec(preset="tiny", budget=0.01), BenchError, "smaller than one batch"),
    (BenchSpec(preset="nope"), BenchError, "unknown training preset"),
    (BenchSpec(preset="tiny", device="emu-conv://?size=64MiB&preset=none"), NotZonedError, "not a zoned device"),
    (BenchSpec(preset="tiny", device="emu://?zones=4&zone_size=1MiB&preset=none"), BenchError, "too small"),
    (BenchSpec(preset="tiny", baseline_device="emu-conv://?size=1MiB&preset=none"), BenchError, "too small"),
])
def test_bad_input_fails_before_training(spec, error, words, monkeypatch):
    import importlib

    train_mod = importlib.import_module("zswap_host.workloads.train")
    monkeypatch.setattr(train_mod, "train", lambda *a, **k: pytest.fail("training started"))
    with pytest.raises(error, match=words):
        run_bench(spec)


def test_cli_json_and_plots(tmp_path):
    out = tmp_path / "bench.json"
    r = CliRunner().invoke(main, ["bench", "--model", "tiny", "--iterations", "12", "--json", str(out),
                                  "--plot", str(tmp_path / "plots"), "--no-ablation",
                                  "--trace-out", str(tmp_path / "t.npz"), "--verify"])
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    assert [x["name"] for x in d["runs"]] == ["dram-only", "conventional", "zns-host-gc"]
    for run in d["runs"][1:]:           # every page that came back was checked against its fingerprint
        assert run["verify"]["pages_checked"] == run["paging"]["faults"] > 0
    assert "pages verified bit-exact" in r.output
    assert set(d["ratios"]) >= {"slowdown_conventional", "slowdown_zns-host-gc", "losses_match"}
    assert len(list((tmp_path / "plots").glob("*.png"))) == 4
    from zswap_host.workloads import SwapTrace

    assert SwapTrace.load(str(tmp_path / "t.npz")).counts()["swap_out_pages"] > 0
    bad = CliRunner().invoke(main, ["bench", "--model", "tiny", "--budget", "150%"])
    assert bad.exit_code == 2 and "budget" in bad.output and "Traceback" not in bad.output
