"""The bench's model twin: a run on a real (wall-clock) device is trained again on an emulated device
of the same geometry, reported beside it; ``--no-model-twin`` leaves it out; an emulated-only bench
has none; the twin changes nothing of the real runs."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from zswap_host import open_device  # noqa: E402
from zswap_host.bench import BenchSpec, plan, run_bench  # noqa: E402
from zswap_host.bench.twin import model_twin, twin_url  # noqa: E402
from zswap_host.cli import main  # noqa: E402
from zswap_host.devices import url as url_registry  # noqa: E402
from zswap_host.devices.emulated import EmulatedZonedDevice  # noqa: E402
from zswap_host.devices.schemes.emu import EmuScheme  # noqa: E402
from loop_devices import loopdev, needs_loop  # noqa: E402,F401  (loopdev: a fixture)

# no lookahead: the stalls are what these tests compare (lookahead on a real device: test_lookahead.py)
TINY = ["bench", "--model", "tiny", "--iterations", "12", "--compute-us-per-sample", "40", "--lookahead", "0"]
# what the training decides, whatever the device's clock: it must not move with the twin
DETERMINED = ("loss", "swap_in_bytes", "swap_out_bytes", "pages_in_per_iteration", "pages_out_per_iteration",
              "compute_time_s")


def _determined(r: dict) -> dict:
    """A run record's fields that the training decides (not the clock)."""
    out = {k: r[k] for k in DETERMINED}
    out["paging"] = {k: v for k, v in r["paging"].items() if not k.endswith("_wall_s")
                   and k not in ("io_stall_s", "io_overlap_s")}
    return out


def _bench(*args: str) -> tuple[dict, str]:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "bench.json")
        r = CliRunner().invoke(main, [*TINY, *args, "--json", out])
        assert r.exit_code == 0, r.output
        with open(out) as f:
            return json.load(f), r.output


def test_twin_url_has_the_geometry():
    z = open_device("emu://?zones=20&zone_size=2MiB&zone_capacity=1536KiB&max_open=2&max_active=3"
                    "&max_append=256KiB&block_size=512&preset=none")
    url = twin_url(z, "zn540", suspend=True)
    t = open_device(url)
    assert url.startswith("emu://?") and "preset=zn540" in url and "suspend=1" in url
    assert t.geometry == z.geometry and t.describe()["clock"] == "modeled" and t.preset == "zn540"
    c = open_device("emu-conv://?size=40MiB&block_size=512&preset=none")
    url = twin_url(c, "thesis-ssd", idle_gc=True)
    t = open_device(url)
    assert url == "emu-conv://?size=40MiB&block_size=512&preset=thesis-ssd&idle_gc=1"
    assert (t.size, t.block_size, t.describe()["clock"]) == (c.size, c.block_size, "modeled")
    for d in (z, c):
        d.close()


def test_emulated_benches_have_no_twin():
    spec = BenchSpec(preset="tiny", iterations=12, baseline_device="emu-conv://?size=40MiB&preset=thesis-ssd")
    assert model_twin(plan(spec), spec) is None                 # given, but emulated
    spec = BenchSpec(preset="tiny", iterations=12)
    assert model_twin(plan(spec), spec) is None                 # the defaults
    from zswap_host.bench import BenchError

    with pytest.raises(BenchError, match="unknown SSD preset"):
        model_twin(plan(spec), BenchSpec(preset="tiny", twin_preset="nope"))


def test_a_file_baseline_gets_a_model_twin_and_no_model_twin_leaves_it_out(tmp_path):
    img = tmp_path / "swap.img"
    img.write_bytes(b"")
    os.truncate(img, 32 << 20)
    runs = "linux-swap,store-on-conventional,store-on-zns"
    d, out = _bench("--baseline-device", str(img), "--runs", runs, "--verify")
    tw = d["model_twin"]
    assert tw["preset"] == "thesis-ssd" and tw["clock"] == "modeled"
    assert tw["devices"] == {"baseline": {"real": str(img), "twin": "emu-conv://?size=32MiB&preset=thesis-ssd&idle_gc=1",
                                          "kind": "conventional", "size": 32 << 20, "block_size": 4096}}
    # the baseline's runs have a twin; store-on-zns ran on an emulated device and has none
    assert [t["name"] for t in tw["runs"]] == ["linux-swap", "store-on-conventional"]
    by = {r["name"]: r for r in d["runs"]}
    assert "model_twin" not in by["store-on-zns"] and "model_twin" not in by["dram-only"]
    for t in tw["runs"]:
        r = by[t["name"]]
        assert r["clock"] == "wall" and t["clock"] == "modeled" and "verify" not in t
        assert t["device"].endswith("emu-conv://?size=32MiB&preset=thesis-ssd&idle_gc=1")
        # the same training on the model: same pages moved, same losses, charged the same compute
        assert _determined(t) == _determined(r)
        s = r["model_twin"]
        assert s["clock"] == "modeled" and s["io_stall_time_s"] == t["io_stall_time_s"] > 0
        assert s["train_time_s"] == pytest.approx(t["compute_time_s"] + t["io_stall_time_s"])
        assert s["stall_wall_over_model"] == pytest.approx(r["io_stall_time_s"] / t["io_stall_time_s"])
        assert s["losses_match_real_run"]
    assert tw["ratios"]["losses_match"] and [s["step"] for s in tw["chain"]] == []   # no neighbouring pair
    assert len(tw["confounds"]) >= 4
    # the chain and ratios are the real runs' alone
    assert d["ratios"]["slowdown_linux-swap"] == pytest.approx(by["linux-swap"]["train_time_s"] /
                                                               by["dram-only"]["train_time_s"])
    assert "model twin (modeled, same geometry)" in out and f"baseline {img}: conventional, 32MiB" in out
    assert "confounds: wall" in out
    # the twin is the emulated bench on the twin's URL: the same modeled record
    emu = run_bench(BenchSpec(preset="tiny", iterations=12, runs=("linux-swap",), jobs=1,
                              baseline_device=tw["devices"]["baseline"]["twin"], **_pinned(40)))
    e = emu["runs"][1]
    assert (e["io_stall_time_s"], e["page_wait_p99_s"], e["device_write_bytes"]) == (
        tw["runs"][0]["io_stall_time_s"], tw["runs"][0]["page_wait_p99_s"], tw["runs"][0]["device_write_bytes"])

    off, out = _bench("--baseline-device", str(img), "--runs", runs, "--verify", "--no-model-twin")
    assert "model_twin" not in off and all("model_twin" not in r for r in off["runs"])
    assert "model twin" not in out
    # the real runs' training is the same with or without their twins
    for a, b in zip(d["runs"][1:], off["runs"][1:]):
        assert _determined(a) == _determined(b), a["name"]


def _pinned(us: float) -> dict:
    from zswap_host.bench import ComputeBasis

    return {"compute": ComputeBasis("pinned", us, 1, "--compute-us-per-sample")}


@needs_loop
def test_a_loop_device_gets_a_twin_of_its_size_and_block_size(loopdev):
    loopdev, _ = loopdev
    d, out = _bench("--baseline-device", loopdev, "--runs", "linux-swap-batched")
    dev = open_device(loopdev, readonly=True)
    size, bs = dev.size, dev.block_size
    dev.close()
    tw = d["model_twin"]
    b = tw["devices"]["baseline"]
    assert (b["real"], b["kind"], b["size"], b["block_size"]) == (loopdev, "conventional", size, bs)
    twin = open_device(b["twin"])
    assert (twin.size, twin.block_size, twin.describe()["clock"]) == (size, bs, "modeled")
    twin.close()
    r, t = d["runs"][1], tw["runs"][0]
    assert r["name"] == t["name"] == "linux-swap-batched" and r["clock"] == "wall" and t["clock"] == "modeled"
    assert r["model_twin"]["io_stall_time_s"] == t["io_stall_time_s"] > 0 and t["loss"] == r["loss"]
    assert "linux-swap-batched" in out.split("model twin (modeled, same geometry)")[1]


class _WallZoned(EmulatedZonedDevice):
    """An emulated namespace without a timing model that reports the wall clock, as a real zoned
    device does (the host has no zoned device to test with; tests/qemu uses QEMU's)."""

    def stats(self):
        s = super().stats()
        s.clock = "wall"
        return s

    def describe(self) -> dict:
        return {**super().describe(), "clock": "wall"}


class _WallZonedScheme(EmuScheme):
    name = "wallzns"

    def open(self, url, **kw):
        dev = super().open(url, **kw)
        dev.__class__ = _WallZoned
        return dev


@pytest.fixture
def wallzns():
    url_registry.register_scheme("wallzns", _WallZonedScheme)
    try:
        yield
    finally:
        url_registry.unregister_scheme("wallzns")


def test_a_zoned_real_device_gets_a_zoned_twin_of_its_geometry(wallzns):
    real = "wallzns://?zones=48&zone_size=1MiB&zone_capacity=768KiB&max_open=4&max_active=6&max_append=256KiB&preset=none"
    spec = BenchSpec(preset="tiny", iterations=8, runs=("linux-swap", "store-on-zns"), device=real,
                     twin_preset="zn540", **_pinned(40))
    rep = run_bench(spec)
    tw = rep["model_twin"]
    z = tw["devices"]["zns"]
    assert list(tw["devices"]) == ["zns"] and z["real"] == real and z["kind"] == "zoned"
    assert z["twin"] == ("emu://?zones=48&zone_size=1MiB&zone_capacity=768KiB&max_open=4&max_active=6"
                         "&max_append=256KiB&preset=zn540")
    geometry = open_device(real).geometry
    assert open_device(z["twin"]).geometry == geometry and z["geometry"] == geometry.as_dict()
    assert [t["name"] for t in tw["runs"]] == ["store-on-zns"] and tw["runs"][0]["clock"] == "modeled"
    by = {r["name"]: r for r in rep["runs"]}
    assert by["store-on-zns"]["clock"] == "wall" and by["store-on-zns"]["model_twin"]["clock"] == "modeled"
    assert "model_twin" not in by["linux-swap"]                    # its device is the emulated default
    assert rep["devices"] == {"baseline": plan(spec).baseline_url, "zns": real}
    from zswap_host.bench import format_table

    text = format_table(rep)
    assert "zns wallzns://" in text and "48 zones of 1MiB (capacity 768KiB), max open/active 4/6" in text
