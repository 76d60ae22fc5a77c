"""The thesis fio study on the model: result shape, ratios in the thesis bands for thesis-ssd
(a property of the deterministic model), the falling bandwidth curve, the job engine."""
from __future__ import annotations

import numpy as np
import pytest

from zswap_host.characterize import SWAP_BS_MIX, Job, characterize, format_table, run_job
from zswap_host.ssdsim import ConvSSD, get_preset

MiB, GiB = 1 << 20, 1 << 30
QUICK_SIZE = 1 * GiB


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    plot = tmp_path_factory.mktemp("plot") / "bw.png"
    calls = []
    model = ConvSSD(get_preset("thesis-ssd"), QUICK_SIZE)
    res = characterize(model, "thesis-ssd", quick=True, progress=lambda d, t, l: calls.append((d, t, l)),
                       plot_path=str(plot))
    return res, calls, plot


def test_result_keys_and_jobs(quick):
    res, _, _ = quick
    assert set(res) == {"preset", "clock", "jobs", "large_vs_small_request_bw_ratio",
                        "seq_vs_random_write_bw_ratio", "bw_over_written_volume", "plot"}
    assert res["preset"] == "thesis-ssd" and res["clock"] == "modeled"
    for j in res["jobs"]:
        assert {"rw", "bs", "iodepth", "bytes", "bw_mib_s"} <= set(j)
        assert j["rw"] in ("read", "write", "randread", "randwrite")
        assert j["bw_mib_s"] > 0 and j["bytes"] > 0
    # the small-request side of the large/small ratio is the swap-like mix, the large side 128 KiB reads
    roles = {j["role"]: j for j in res["jobs"] if "role" in j}
    assert roles["small"]["bs"] == "4k/40:8k/30:16k/20:32k/10" and roles["large"]["bs"] == 128 * 1024
    assert roles["small"]["rw"] == roles["large"]["rw"] == "randread"


def test_ratios_within_thesis_bands(quick):
    res, _, _ = quick
    assert res["large_vs_small_request_bw_ratio"] == pytest.approx(1.75, rel=0.15)
    assert res["seq_vs_random_write_bw_ratio"] == pytest.approx(4.37, rel=0.15)


def test_bandwidth_falls_with_written_volume(quick):
    res, _, _ = quick
    curve = res["bw_over_written_volume"]
    assert all({"written_gib", "write_bw_mib_s"} <= set(p) for p in curve)
    x = [p["written_gib"] for p in curve]
    assert x == sorted(x) and x[-1] > 3 * QUICK_SIZE / GiB
    rnd = [p["write_bw_mib_s"] for p in curve if p["phase"].startswith("randwrite")]
    early = [p["write_bw_mib_s"] for p in curve if p["written_gib"] <= QUICK_SIZE / GiB]
    assert min(rnd) < max(early) / 3                 # GC makes the bandwidth fall
    assert rnd[0] > 2 * rnd[-1]                      # ... as the random writes go on


def test_progress_plot_and_table(quick):
    res, calls, plot = quick
    assert calls and calls[-1][0] == calls[-1][1]
    assert all(a[0] <= b[0] for a, b in zip(calls, calls[1:]))
    assert res["plot"] == str(plot) and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = format_table(res)
    assert "thesis 1.75x" in text and "thesis 4.37x" in text and "randwrite" in text


def test_plot_none_and_deterministic():
    a = characterize(ConvSSD(get_preset("thesis-ssd"), 256 * MiB), "thesis-ssd", quick=True)
    b = characterize(ConvSSD(get_preset("thesis-ssd"), 256 * MiB), "thesis-ssd", quick=True)
    assert a["plot"] is None
    assert a["seq_vs_random_write_bw_ratio"] == b["seq_vs_random_write_bw_ratio"]
    assert a["large_vs_small_request_bw_ratio"] == b["large_vs_small_request_bw_ratio"]


def test_job_engine_is_generic():
    m = ConvSSD(get_preset("thesis-ssd"), 128 * MiB)
    rng = np.random.default_rng(0)
    w = run_job(m, Job("w", "write", 64 * 1024, 4, 32 * MiB), rng)
    assert w["bytes"] == 32 * MiB and w["requests"] == 512 and m.host_write_bytes == 32 * MiB
    r = run_job(m, Job("r", "randread", list(SWAP_BS_MIX), 8, 16 * MiB), rng)
    assert r["rw"] == "randread" and r["bs"] == "4k/40:8k/30:16k/20:32k/10"
    # the mix's mean request is .4*4 + .3*8 + .2*16 + .1*32 = 10.4 KiB: 16 MiB takes ceil(1575.4) requests,
    # drawn from the mix (mean within 10% of 10.4 KiB: the spread of 1576 draws is about 2%)
    assert r["requests"] == 1576
    assert r["bytes"] / r["requests"] == pytest.approx(10.4 * 1024, rel=0.1)
    assert m.host_read_bytes == r["bytes"]
    q1 = run_job(m, Job("r1", "randread", 4096, 1, 4 * MiB), rng)
    q16 = run_job(m, Job("r16", "randread", 4096, 16, 4 * MiB), rng)
    assert q16["bw_mib_s"] > 3 * q1["bw_mib_s"]
