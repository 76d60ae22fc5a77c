"""The pure parts of experiments/nvmevirt_970pro.py and the throughput rule of nvmevirt_guest.py: the
fio jobs as our model's requests, NVMeVirt's Little's-law rule, our nvmevirt-970pro preset's unloaded
latencies (its NVMeVirt constants' arithmetic) and the one-line error.  No guest."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "experiments"))

import nvmevirt_970pro as e  # noqa: E402
from nvmevirt_guest import jobs, little_throughput, ssd_reference  # noqa: E402

from zswap_host.ssdsim import get_preset  # noqa: E402
from zswap_host.ssdsim.model import READ, WRITE  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20
P = get_preset("nvmevirt-970pro")


def job(name):
    return next(j for j in jobs(zoned=False) if j["name"] == name)


def test_littles_law_and_the_pcie_cap():
    mib_s, kiops, capped = little_throughput(2, 8000.0, 4)          # 2 in flight, 8 us each, 4 KiB
    assert kiops == pytest.approx(250.0) and mib_s == pytest.approx(250e3 * 4 / 1024)
    mib_s, kiops, capped = little_throughput(256, 8000.0, 4, pcie_mib_s=100.0)
    assert capped and mib_s == 100.0 and kiops == pytest.approx(100 * 1024 / 4 / 1e3)


def test_writers_each_write_their_own_zone_in_order_interleaved():
    ops, offs = e.job_requests(job("write_16k_qd1_8z"), None, np.random.default_rng(0))
    zone = e.ZONE_MIB * MiB
    assert (ops == WRITE).all() and offs.size == 8 * zone // (16 * KiB)
    assert list(offs[:8] // zone) == list(range(2, 10))               # one command of each writer in turn
    per = offs.reshape(-1, 8)
    assert (np.diff(per, axis=0) == 16 * KiB).all()                   # each writer sequential


def test_reads_stay_in_the_filled_zones_and_take_the_count_asked():
    ops, offs = e.job_requests(job("randread_16k_qd32"), 500, np.random.default_rng(0))
    assert (ops == READ).all() and offs.size == 500
    assert (offs % (16 * KiB) == 0).all() and offs.max() + 16 * KiB <= 2 * e.ZONE_MIB * MiB


def test_unloaded_latencies_are_the_presets_nvmevirt_arithmetic():
    c = P.controller
    w = e.latencies(job("write_4k_qd1_1z"), P, 5, unloaded=True)
    assert w == pytest.approx(np.full(5, (P.cmd_overhead_us + 4096 / c.write_link_mb_s) * 1e-6), abs=2e-9)   # whole ns
    r = e.latencies(job("randread_4k_qd8"), P, 5, unloaded=True)
    want = P.cmd_overhead_us + c.t_read_cmd_us + P.t_read_us + 4096 / P.channel_mb_s + 4096 / P.host_link_mb_s
    assert r == pytest.approx(np.full(5, want * 1e-6), abs=3e-9)
    assert (P.cmd_overhead_us, P.cmd_overhead_us + c.t_read_cmd_us) == (4.0, 21.5)   # FW_WBUF_LATENCY0, FW_4KB_READ


def test_loaded_reads_queue_at_the_dies():
    lat = e.latencies(job("randread_4k_qd256"), P, None, unloaded=False)
    s = e.summarize(job("randread_4k_qd256"), lat)
    assert s["lat_us"] > 2 * e.summarize(job("randread_4k_qd1"), e.latencies(job("randread_4k_qd1"), P, 200, True))["lat_us"]
    assert not s["capped_by_pcie"]


def test_the_guest_table_takes_ours_and_published_from_the_970pro_file(tmp_path):
    (tmp_path / "nvmevirt_970pro.json").write_text(json.dumps({"jobs": [
        {"name": "a", "unit": "MiB/s", "published": {"value": 5.0}, "loaded": {"mib_s": 1.0, "kiops": 2.0}},
        {"name": "b", "unit": "KIOPS", "published": None, "loaded": {"mib_s": 1.0, "kiops": 2.0}}]}))
    assert ssd_reference(str(tmp_path)) == {"a": (5.0, 1.0), "b": (None, 2.0)}
    assert ssd_reference(str(tmp_path / "nowhere")) == {}


def test_missing_nvmevirt_results_is_one_line(tmp_path, capsys):
    assert e.main(["--out", str(tmp_path), "--nvmevirt-json", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "none.json" in err and not os.listdir(tmp_path)


def test_nvmevirt_bandwidths_are_mib_s_at_whole_ns_per_128_bytes():
    from nvmevirt_guest import nvmevirt_rate_mib_s
    assert nvmevirt_rate_mib_s(3360) == pytest.approx(128 / 36e-9 / MiB)       # 36.3 ns truncated to 36
    assert nvmevirt_rate_mib_s(3050) == pytest.approx(128 / 40e-9 / MiB)
    assert P.host_link_mb_s == pytest.approx(128e3 / 36, rel=1e-4)             # the preset uses the same rates
    assert P.channel_mb_s == pytest.approx(128e3 / 152, rel=1e-4)
