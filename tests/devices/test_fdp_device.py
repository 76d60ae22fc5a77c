"""The emulated FDP device (``fdp://``): placement handles on writes, their checks, per-handle
statistics and the FDP log, persistence of its description, and what handles buy on the timing
model (the FTL's own rules: tests/ssdsim/test_fdp_model.py)."""

import json

import numpy as np
import pytest

from click.testing import CliRunner

from bench_cli import STORE_RUN, bench_store_run
from zswap_host.cli import main
from zswap_host.devices import open_device
from zswap_host.errors import DeviceSpecError

MiB = 1 << 20


def _pages(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n * 4096, dtype=np.uint8)


def test_defaults_and_description():
    dev = open_device("fdp://?size=8MiB&preset=none")
    d = dev.describe()
    assert (d["kind"], d["ruhs"], d["isolation"], d["zoned"]) == ("emulated-fdp", 8, "persistent", False)
    dev.close()


@pytest.mark.parametrize("url,words", [
    ("fdp://?size=8MiB&ruhs=0", "1 to 256 placement handles"),
    ("fdp://?size=8MiB&ruhs=300", "1 to 256 placement handles"),
    ("fdp://?size=8MiB&isolation=sometimes", "not one of persistent, initial"),
    ("fdp://?size=8MiB&ruhs=x", "ruhs"),
    ("fdp://?size=8MiB&zones=3", "zones"),
])
def test_bad_urls_are_spec_errors(url, words):
    with pytest.raises(DeviceSpecError, match=words):
        open_device(url)


@pytest.mark.parametrize("preset", ["none", "thesis-ssd"])
def test_handles_are_checked_before_anything_is_written(preset):
    dev = open_device(f"fdp://?size=8MiB&ruhs=4&preset={preset}")
    data = _pages(2)
    before = (dev.stats().device_write_bytes, dev.now(), dev.fdp_stats())
    for handle, words in [(4, "handle 4 is outside"), (-1, "handle -1 is outside"),
                          (np.array([0, 7]), "range 1: placement handle 7"),
                          (np.array([0]), "one per range"), (np.array([0.5, 1.0]), "one per range")]:
        with pytest.raises(ValueError, match=words):
            dev.write_batch(np.array([0, 4096]), data, np.array([4096, 4096]), handle=handle)
    with pytest.raises(ValueError, match="handle 9"):
        dev.write(0, data[:4096], handle=9)
    assert (dev.stats().device_write_bytes, dev.now(), dev.fdp_stats()) == before
    assert not dev.read(0, 8192).any()
    dev.close()


def test_host_bytes_are_counted_per_handle():
    dev = open_device("fdp://?size=8MiB&ruhs=3&preset=none")
    dev.write(0, _pages(1))                                        # the default handle: 0
    dev.write(4096, _pages(2), handle=2)
    dev.write_batch(np.array([0, 8 * 4096, 16 * 4096]), _pages(4), np.array([4096, 4096, 8192]),
                    handle=np.array([1, 2, 1]))
    dev.write_groups(np.array([0]), _pages(1), np.array([4096]), np.array([1]), np.array([1]), handle=1)
    assert [s["host_write_bytes"] for s in dev.ruh_stats()] == [4096, 4 * 4096, 3 * 4096]
    assert dev.fdp_stats()["host_bytes_with_metadata_written"] == 8 * 4096 == dev.stats().device_write_bytes
    dev.close()


def test_a_conventional_device_refuses_handles():
    dev = open_device("emu-conv://?size=1MiB&preset=none")
    with pytest.raises(ValueError, match="no placement handles"):
        dev.write(0, _pages(1), handle=0)
    assert dev.stats().device_write_bytes == 0
    dev.close()


def test_file_backed_device_reopens_with_its_handles(tmp_path):
    path = tmp_path / "f.img"
    dev = open_device(f"fdp://{path}?size=2MiB&ruhs=3&isolation=initial&preset=none")
    dev.write(4096, _pages(1, seed=3), handle=2)
    dev.close()
    meta = json.loads((tmp_path / "f.img.json").read_text())
    assert (meta["kind"], meta["ruhs"], meta["isolation"]) == ("fdp", 3, "initial")
    again = open_device(f"fdp://{path}")
    assert (again.ruhs, again.isolation, again.size) == (3, "initial", 2 * MiB)
    assert np.array_equal(again.read(4096, 4096), _pages(1, seed=3))
    again.close()
    with pytest.raises(DeviceSpecError, match="created with ruhs=3, not 4"):
        open_device(f"fdp://{path}?ruhs=4")
    with pytest.raises(DeviceSpecError, match="'fdp' device, not a conventional one"):
        open_device(f"emu-conv://{path}")


def _hot_and_cold(url: str, separate: bool) -> dict:
    """Cold pages written once, in pieces of 16, each followed by rewrites of random hot pages (so
    the two are interleaved in time): with ``separate``, the hot ones under a handle of their own."""
    dev = open_device(url)
    pages = dev.size // 4096
    cold, hot = np.arange(int(pages * 0.6)), np.arange(int(pages * 0.6), int(pages * 0.8))
    per = hot.size * 8 // cold.size                      # hot rewrites per cold page: 8 passes over hot
    hots = np.random.default_rng(1).choice(hot, cold.size * per)
    data = _pages(64)
    for i in range(0, cold.size, 16):
        c = cold[i:i + 16]
        dev.write_batch(c * 4096, data[:c.size * 4096], np.full(c.size, 4096), handle=0)
        for j in range(i * per, (i + c.size) * per, 64):
            h = hots[j:min(j + 64, (i + c.size) * per)]
            dev.write_batch(h * 4096, data[:h.size * 4096], np.full(h.size, 4096), handle=1 if separate else 0)
    out = {"waf": dev.model.write_amplification, "ruhs": dev.ruh_stats(), "log": dev.fdp_stats(),
           "gc": dev.stats().gc_write_bytes}
    dev.close()
    return out


def test_separating_hot_from_cold_cuts_device_write_amplification():
    url = "fdp://?size=24MiB&ruhs=2&op=0.07&preset=thesis-ssd"
    mixed, apart = _hot_and_cold(url, False), _hot_and_cold(url, True)
    assert mixed["waf"] > 1.3 and apart["waf"] < 1.1          # measured: 1.41 and 1.01
    for r in (mixed, apart):                     # the per-handle counters add up to the device's
        assert sum(s["host_write_bytes"] for s in r["ruhs"]) == r["log"]["host_bytes_with_metadata_written"]
        assert sum(s["media_write_bytes"] for s in r["ruhs"]) == r["log"]["media_bytes_with_metadata_written"]
        assert sum(s["gc_write_bytes"] for s in r["ruhs"]) == r["gc"]
    assert mixed["ruhs"][1]["host_write_bytes"] == 0
    assert apart["ruhs"][0]["gc_write_bytes"] == 0       # cold reclaim units never needed collecting


def test_info_shows_an_fdp_device():
    r = CliRunner().invoke(main, ["info", "fdp://?size=8MiB&ruhs=4&preset=none", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["ruhs"] == 4
    r = CliRunner().invoke(main, ["info", "fdp://?size=8MiB&ruhs=4&isolation=initial&preset=none"])
    assert r.exit_code == 0 and "FDP, 4 reclaim unit handles, initial isolation" in r.output
    r = CliRunner().invoke(main, ["info", "fdp://?size=8MiB&ruhs=999"])
    assert r.exit_code == 2 and "placement handles" in r.output and "Traceback" not in r.output


def test_the_store_on_fdp_writes_each_stream_and_gc_under_its_own_handle():
    from zswap_host.devices import ZonedBlockView
    from zswap_host.store import StoreConfig, SwapStore

    block = open_device("fdp://?size=24MiB&ruhs=4&preset=thesis-ssd")
    view = ZonedBlockView(block, 1 * MiB)
    store = SwapStore(view, StoreConfig(placement="stream", write_size=128 << 10))
    rng = np.random.default_rng(2)
    n = store.capacity_pages * 3 // 4
    ids = np.arange(n)
    for r in range(6):                     # stream 0 rewrites half its pages each round: GC must run
        for s, sel in ((0, ids[: n // 2]), (1, ids[n // 2:])):
            if s == 1 and r:
                continue
            part = sel if r == 0 else rng.choice(sel, sel.size // 2, replace=False)
            store.swap_out(part, np.repeat(part.astype(np.uint8)[:, None], 4096, axis=1), stream=s)
    store.flush()
    store.check()
    got = store.swap_in(ids[::97])
    assert np.array_equal(got[:, 0], ids[::97].astype(np.uint8))
    host = [s["host_write_bytes"] for s in block.ruh_stats()]
    assert host[0] > 0 and host[1] > 0 and host[3] > 0 and host[2] == 0     # GC: the last handle
    assert store.gc_write_bytes > 0
    assert view.describe()["zone_handles"].count(3) >= 1
    store.close()


def test_bench_runs_the_store_on_an_fdp_device(tmp_path):
    bench_store_run(f"fdp://{tmp_path / 'f.img'}?size=64MiB&ruhs=4&preset=thesis-ssd",   # file-backed: reopened
                    tmp_path / "b.json")
    r = CliRunner().invoke(main, [*STORE_RUN, "--device", "emu-conv://?size=64MiB&preset=none"])
    assert r.exit_code == 2 and "not a zoned device" in r.output


def test_linux_swap_can_write_each_stream_under_its_own_handle():
    from zswap_host.baseline import ConventionalSwap

    with pytest.raises(ValueError, match="needs a device with placement handles"):
        ConventionalSwap(open_device("emu-conv://?size=8MiB&preset=none"), handles="stream")
    with pytest.raises(ValueError, match="handles must be None or 'stream'"):
        ConventionalSwap(open_device("fdp://?size=8MiB&preset=none"), handles="table")
    for handles, want in ((None, [12, 0, 0]), ("stream", [4, 4, 4])):
        dev = open_device("fdp://?size=8MiB&ruhs=3&preset=none")
        swap = ConventionalSwap(dev, handles=handles)
        for s in range(6):                              # streams 0..5: handles 0, 1, 2, 0, 1, 2
            ids = np.arange(2) + 2 * s
            swap.swap_out(ids, np.zeros((2, 4096), np.uint8) + s, stream=s)
        assert [st["host_write_bytes"] // 4096 for st in dev.ruh_stats()] == want
        assert np.array_equal(swap.swap_in(np.array([11]))[0], np.full(4096, 5, np.uint8))
        swap.close()
