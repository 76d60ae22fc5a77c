"""Devices of a preset's real geometry (``BenchSpec(ssd=, geometry="real")``, ``replay --ssd
--geometry``), replay under another compute per sample (``--compute-us-per-sample`` on a recorded
trace) and lookahead traces (``replay --generate --lookahead``): issue 29's real-geometry regime table
(experiments/regimes_real_geometry.py) rests on these."""

import json

import pytest
from click.testing import CliRunner

from zswap_host.bench import BenchSpec, plan
from zswap_host.bench.compute import ComputeBasis
from zswap_host.bench.plan import BenchError
from zswap_host.cli import main
from zswap_host.devices import open_device
from zswap_host.replay import ReplayTrace, replay_run
from zswap_host.ssdsim import get_preset
from zswap_host.workloads import generate_dlrm_trace

MLPERF = dict(preset="mlperf", budget="10%", lookahead=0, iterations=10,
              compute=ComputeBasis("pinned", 481.0, 1, "test"))


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return generate_dlrm_trace(str(tmp_path_factory.mktemp("trace") / "tiny"), "tiny", lookahead=1).path


def test_the_bench_default_is_unchanged():
    pl = plan(BenchSpec(preset="default"))
    assert "preset=thesis-ssd" in pl.baseline_url and "erase_block" not in pl.baseline_url
    assert pl.devices["geometry"] == "scaled" and pl.devices["ssd"] == "thesis-ssd"
    assert pl.devices["conventional_erase_block_bytes"] < get_preset("thesis-ssd").block_bytes


@pytest.mark.parametrize("ssd", ["zn540", "cluster23-nvme-a"])
def test_real_geometry_is_the_presets_own(ssd):
    n = get_preset(ssd)
    pl = plan(BenchSpec(**MLPERF, ssd=ssd, geometry="real"))
    d = pl.devices
    assert d["conventional_erase_block_bytes"] == n.block_bytes
    assert (d["zone_size"], d["zone_capacity"]) == (n.zone_size, n.zone_capacity)
    assert f"preset={ssd}" in pl.baseline_url and f"preset={ssd}" in pl.zns_url
    assert f"zone_size={n.zone_size}&zone_capacity={n.zone_capacity}" in pl.zns_url
    # the zoned view's LBA ranges hold a ZNS zone's capacity
    assert pl.zone_size == pl.zone_capacity == n.zone_capacity
    assert d["conventional_op"] == pytest.approx(n.conv_op, abs=0.01)
    url = pl.baseline_url.replace("emu-conv://?", "emu-conv://?payload=0&")
    dev = open_device(url, zoned=False)
    try:
        ssd_model = dev.model
        assert ssd_model.pages_per_block * n.page_size == n.block_bytes
        assert ssd_model.preset.n_dies == n.n_dies and ssd_model.blocks_per_die >= 64
    finally:
        dev.close()


def test_real_geometry_refuses_a_device_too_small_for_it():
    with pytest.raises(BenchError, match="real geometry: .* fewer than the 16 a store's GC needs"):
        plan(BenchSpec(preset="default", ssd="zn540", geometry="real"))
    with pytest.raises(BenchError, match="unknown geometry 'big'"):
        plan(BenchSpec(preset="default", geometry="big"))
    with pytest.raises(BenchError, match="unknown SSD preset 'nope'"):
        plan(BenchSpec(preset="default", ssd="nope"))


def test_a_scaled_run_on_another_presets_flash(trace):
    s = ReplayTrace(trace).sizing(ssd="zn540")
    assert "preset=zn540" in s.baseline_url and "preset=zn540" in s.zns_url
    row = replay_run("store-on-zns", trace, "tiny", s)
    base = replay_run("store-on-zns", trace, "tiny", ReplayTrace(trace).sizing())
    assert row["pages"] == base["pages"] and row["compute_s"] == base["compute_s"]
    assert row["swap_in_p99_ms"] != base["swap_in_p99_ms"]          # another drive's timing


def test_another_compute_per_sample_rescales_the_windows_only(trace):
    tr = ReplayTrace(trace)
    own = float(tr.meta["us_per_sample"])
    s = tr.sizing()
    base = replay_run("store-on-zns", trace, "tiny", s)
    same = replay_run("store-on-zns", trace, "tiny", s, idle_scale=tr.idle_scale(own))
    assert {k: same[k] for k in ("stall_s", "write_amplification", "compute_s")} == \
        {k: base[k] for k in ("stall_s", "write_amplification", "compute_s")}
    fast = replay_run("store-on-zns", trace, "tiny", s, idle_scale=tr.idle_scale(own / 100))
    assert fast["compute_s"] == pytest.approx(base["compute_s"] / 100, abs=1e-3)     # rounded to 1 ms
    slow = replay_run("store-on-zns", trace, "tiny", s, idle_scale=tr.idle_scale(own * 10))
    assert slow["compute_s"] == pytest.approx(base["compute_s"] * 10, abs=0.01)      # base rounded to 1 ms
    assert fast["pages"] == slow["pages"] == base["pages"]
    # less compute to hide the lookahead's reads behind: the stall cannot shrink
    assert fast["stall_s"] >= base["stall_s"]


def test_the_command_takes_ssd_geometry_and_compute(trace, tmp_path):
    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["replay", "--trace", trace, "--runs", "store-on-zns", "--ssd", "zn540",
                                  "--compute-us-per-sample", "0.25", "--json", str(out)])
    assert r.exit_code == 0, r.output
    got = json.loads(out.read_text())
    assert "--ssd zn540" in got["command"] and "--compute-us-per-sample 0.25" in got["command"]
    assert got["us_per_sample"] == 0.25 and got["devices"]["ssd"] == "zn540"
    assert got["trace"]["lookahead"] == 1
    r = CliRunner().invoke(main, ["replay", "--trace", trace, "--runs", "store-on-zns", "--geometry", "real"])
    assert r.exit_code == 2 and "real geometry" in r.output and len(r.output.strip().splitlines()) == 1
    r = CliRunner().invoke(main, ["replay", "--trace", trace, "--lookahead", "1"])
    assert r.exit_code == 2 and "--lookahead applies to --generate" in r.output


def test_the_bench_runs_on_the_presets_flash(tmp_path):
    out = tmp_path / "b.json"
    r = CliRunner().invoke(main, ["bench", "--model", "tiny", "--preset", "zn540", "--runs", "store-on-zns",
                                  "--jobs", "1", "--quiet", "--json", str(out)])
    assert r.exit_code == 0, r.output
    got = json.loads(out.read_text())
    assert "preset=zn540" in got["devices"]["baseline"] and "preset=zn540" in got["devices"]["zns"]
    assert [run["device"] for run in got["runs"] if run.get("device")] == [got["devices"]["zns"]]
    r = CliRunner().invoke(main, ["bench", "--model", "tiny", "--geometry", "real", "--quiet"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and "real geometry" in r.output, r.output
