"""HOST side: boot the Debian kernel under QEMU (TCG) once, with an NVMe controller whose namespace 1
is conventional and namespace 2 zoned (4 MiB zones of 3 MiB capacity, max open 2, max active 3, zone
append limit 512 KiB), and inside it run (tests/qemu/guest_suite.sh):

- the device conformance suite, unchanged, against /dev/nvme0n2 (guest_conformance.py), with each
  I/O engine (io_uring with zone appends through /dev/ng0n2, and sync);
- ``zswap-host zones /dev/nvme0n2 --json`` against ``blkzone report`` (guest_blkzone.py);
- ``zswap-host devices --json``: libnvme's view of the controller and both namespaces;
- the store's property and read-back tests on /dev/nvme0n2 (guest_store.py), with each I/O engine;
- the io_uring device's append runs (``ur_run_append``) on the real ring, without the store
  (guest_append_run.py);
- ``zswap-host info /dev/nvme0n2 --json``: the engine, depth and append path the device got;
- numpy's sorts against plain Python, to catch a guest CPU that computes wrongly (guest_numerics.py);
- ``zswap-host bench --device /dev/nvme0n2 --baseline-device /dev/nvme0n1 --quick --iterations 20
  --verify`` (``ZSWAP_QEMU_BENCH=0`` leaves it out).

The tests below check what the guest left in the shared results folder. They are skipped (with the
reason) only when QEMU, a kernel in /boot, virtme-ng or a static busybox are missing; the test
command's first run installs them (tests/support/system_packages.py; the devices check skips without libnvme). ``ZSWAP_QEMU=0`` skips them on
purpose; the guest log is kept in the pytest tmp folder.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

import early  # noqa: E402
from emulator.zns_vm import ZnsVmConfig, run_in_guest  # noqa: E402

GUEST_TIMEOUT = 25 * 60       # conformance and store with both engines, the bench with its model twins
BENCH = os.environ.get("ZSWAP_QEMU_BENCH", "1")


def boot(work):
    """The guest run (started early, in the background: tests/qemu/early.py)."""
    results = work / "results"
    results.mkdir()
    bench = f"ZSWAP_QEMU_BENCH={BENCH} "
    cmd = f"{bench}bash {REPO}/tests/qemu/guest_suite.sh {results} {sys.executable}"
    res = run_in_guest(cmd, ZnsVmConfig(), str(work), timeout=GUEST_TIMEOUT, cwd=REPO)
    (work / "guest.log").write_text(res.output)
    return res, results


@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    res, results = early.value(__name__, boot, tmp_path_factory)
    print(f"\nguest log: {results.parent / 'guest.log'} ({res.boot_and_run_s:.0f} s)")
    return res, results


def _steps(output: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^STEP (\w+) rc=(\d+)", output, re.M)}


def _junit(path, module: str, qualified: bool = False) -> dict[str, str]:
    """test name (``classname::name`` if ``qualified``) -> outcome (passed / failed / skipped) of the
    tests of guest module ``module`` (e.g. ``guest_store``) in a junit XML file."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        cls = case.get("classname") or ""
        if module not in (cls, *cls.split(".")):
            continue
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
        out[f"{case.get('classname')}::{case.get('name')}" if qualified else case.get("name")] = outcome
    return out


def _engine_results(results: dict[str, str], engine: str) -> dict[str, str]:
    """The results of one engine's run, its id taken out of the test names: test_x[sync-4096] ->
    test_x[4096], test_x[sync] -> test_x."""
    out = {}
    for name, outcome in results.items():
        head, _, ids = name.partition("[")
        parts = ids.rstrip("]").split("-") if ids else []
        if engine in parts:
            parts.remove(engine)
            out[f"{head}[{'-'.join(parts)}]" if parts else head] = outcome
    return out


def test_guest_ran_the_suite(guest):
    res, _ = guest
    assert res.returncode == 0, res.output[-3000:]
    assert "GUEST done" in res.output, res.output[-3000:]


@pytest.fixture(scope="module")
def emulated(tmp_path_factory) -> dict[str, str]:
    """The same conformance suite on the emulated device (in memory, QEMU-like geometry), on the host,
    once for both engines' comparisons: test name (the device's id taken out) -> outcome."""
    xml = tmp_path_factory.mktemp("emulated_conformance") / "emulated.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}",
                    os.path.join(REPO, "tests", "devices", "test_conformance.py")], cwd=REPO, capture_output=True, text=True)
    return {name.replace("[memory-", "[").replace("[memory]", ""): o
            for name, o in _junit(xml, "test_conformance").items() if "[memory" in name or "[" not in name}


@pytest.mark.parametrize("engine", ["uring", "sync"])
def test_conformance_on_real_zoned_namespace_matches_emulated(guest, emulated, engine):
    """Both I/O engines: io_uring (zone append through /dev/ng0n2) and sync (one ioctl at a time)."""
    res, results = guest
    assert (results / "tests.xml").exists(), res.output[-3000:]
    real = _engine_results(_junit(results / "tests.xml", "guest_conformance"), engine)
    assert real, "no conformance results from the guest"
    assert emulated, "no conformance results from the emulated device"
    assert real == emulated, {k: (real.get(k), emulated.get(k)) for k in set(real) | set(emulated)
                              if real.get(k) != emulated.get(k)}
    assert all(o == "passed" for o in real.values()), real


def test_zones_json_agrees_with_blkzone(guest):
    res, results = guest
    _all_passed(res, results, "guest_blkzone")
    summary = json.loads((results / "blkzone.json").read_text())
    assert summary["zones"] == summary["agree"] == ZnsVmConfig().zones
    assert {"em", "oi", "oe", "cl", "fu"} <= set(summary["conditions"])


def _all_passed(res, results, module: str) -> dict[str, str]:
    """The outcomes of guest module ``module``'s tests (the guest's one pytest session): all passed."""
    xml = results / "tests.xml"
    assert xml.exists(), res.output[-3000:]
    outcome = _junit(xml, module, qualified=True)
    assert outcome and all(o == "passed" for o in outcome.values()), (
        outcome, (results / "tests.log").read_text()[-3000:])
    return outcome


def test_store_property_and_readback_tests_pass_on_real_zoned_namespace(guest):
    res, results = guest
    outcome = _all_passed(res, results, "guest_store")
    for engine in ("uring", "sync"):            # the state machine, the read-back and the GC test, each engine
        assert sum(f"_{engine}::" in n or f"[{engine}]" in n for n in outcome) == 3, (engine, sorted(outcome))


def test_append_runs_land_on_the_real_ring(guest):
    """The io_uring device's writer of append runs (``ur_run_append``), driven without the store on
    the namespace through /dev/ng0n2: back to back from two buffers, past the append limit, elsewhere
    at depth 4, into a full zone, and refused with nothing sent (tests/qemu/guest_append_run.py)."""
    res, results = guest
    outcome = _all_passed(res, results, "guest_append_run")
    assert len(outcome) == 8, sorted(outcome)


def test_info_shows_the_uring_engine_and_its_append_path(guest):
    """The 6.1 guest has io_uring and /dev/ng0n2: the default engine is uring, appends go as
    IORING_OP_URING_CMD."""
    res, results = guest
    assert _steps(res.output).get("engine") == 0, res.output[-3000:]
    info = json.loads((results / "info.json").read_text())
    assert info["io_engine"]["engine"] == "uring" and info["io_engine"]["depth"] >= 32
    assert info["zone_append"] == "uring-cmd"
    text = (results / "info.txt").read_text()
    assert "io engine  uring, depth 64, zone append uring-cmd" in text, text


def test_guest_cpu_computes_numpy_sorts_right(guest):
    res, results = guest
    assert len(_all_passed(res, results, "guest_numerics")) == 15


def _libnvme_missing() -> str | None:
    """Why the guest cannot run `devices` (it uses this venv, so ask here), or None."""
    from zswap_host.devices.nvme_discovery import load_libnvme
    from zswap_host.errors import DependencyMissingError

    try:
        load_libnvme()
    except DependencyMissingError as e:
        return str(e)
    return None


def test_devices_lists_the_controller_and_both_namespaces(guest):
    res, results = guest
    why = _libnvme_missing()
    if why:
        pytest.skip(why)
    assert _steps(res.output).get("devices") == 0, (results / "devices.log").read_text()[-3000:]
    found = {d["name"]: d for d in json.loads((results / "devices.json").read_text())}
    assert set(found) == {"nvme0n1", "nvme0n2"}, found
    cfg = ZnsVmConfig()
    for d in found.values():
        assert d["controller"] == "nvme0" and d["serial"] == "zswapzns" and d["model"], d
        assert d["transport"] == "pcie" and d["firmware"], d
    conv, zns = found["nvme0n1"], found["nvme0n2"]
    assert zns["block_size"] == cfg.block_size and conv["block_size"] == 512   # QEMU's default for nsid 1
    assert (conv["nsid"], conv["zoned"], conv["size"], conv["zone_size"]) == (1, False, cfg.conv_size, None)
    assert zns["nsid"] == 2 and zns["zoned"] is True and zns["zoned_model"] == "host-managed"
    assert {k: zns[k] for k in ("nr_zones", "zone_size", "zone_capacity", "max_open", "max_active", "max_append",
                                "size")} == {
        "nr_zones": cfg.zones, "zone_size": cfg.zone_size, "zone_capacity": cfg.zone_capacity,
        "max_open": cfg.max_open, "max_active": cfg.max_active, "max_append": cfg.max_append,
        "size": cfg.zones * cfg.zone_size}


@pytest.mark.skipif(BENCH == "0", reason="ZSWAP_QEMU_BENCH=0")
def test_bench_on_real_devices(guest):
    res, results = guest
    log = (results / "bench.log").read_text() if (results / "bench.log").exists() else res.output
    assert _steps(res.output).get("bench") == 0, log[-3000:]
    report = json.loads((results / "bench.json").read_text())
    runs = {r["name"]: r for r in report["runs"]}
    assert set(runs) == {"dram-only", "linux-swap", "linux-swap-batched", "linux-swap-lookahead",
                         "store-on-conventional", "store-on-zns"}
    # the lookahead ran on a worker thread beside the real devices (wall clock) and brought pages in
    for name in ("linux-swap-lookahead", "store-on-conventional", "store-on-zns"):
        assert runs[name]["lookahead"] == 1 and runs[name]["paging"]["prefetched"] > 0, name
    assert report["devices"] == {"baseline": "/dev/nvme0n1", "zns": "/dev/nvme0n2"}
    for name in ("linux-swap", "linux-swap-batched", "linux-swap-lookahead", "store-on-conventional", "store-on-zns"):
        assert runs[name]["clock"] == "wall"
        assert runs[name]["swap_out_bytes"] > 0 and runs[name]["swap_in_bytes"] > 0
        # every page that came back from the real devices was checked against its swap-out fingerprint
        assert runs[name]["verify"]["pages_checked"] == runs[name]["paging"]["faults"] > 0
    # the same training on every backend: identical losses
    base = runs["dram-only"]["loss"]
    for r in runs.values():
        assert r["loss"] == base, r["name"]
    # the ZNS store's device writes are large appends; Linux-swap-like baseline writes are small
    zh = runs["store-on-zns"]["write_size_histogram"]
    assert max(int(k) for k in zh) >= 128 << 10
    # the model twin: every run trained again on emulated devices of the namespaces' geometry, timed by
    # the model (no timing thresholds: the guest's wall clock says nothing about flash)
    from zswap_host import open_device

    cfg = ZnsVmConfig()
    # a passthrough append cannot be split: the device's append limit as this host can use it is capped
    # by the queue's segments, one kept for a buffer that is not page aligned
    segs = int((results / "max_segments").read_text())
    max_append = min(cfg.max_append, (segs - 1) * 4096)
    tw = report["model_twin"]
    assert tw["clock"] == "modeled" and tw["preset"] == "thesis-ssd" and tw["confounds"]
    zns, conv = tw["devices"]["zns"], tw["devices"]["baseline"]
    assert (zns["real"], zns["kind"], conv["real"], conv["kind"]) == ("/dev/nvme0n2", "zoned", "/dev/nvme0n1",
                                                                      "conventional")
    assert {k: zns["geometry"][k] for k in ("nr_zones", "zone_size", "zone_capacity", "max_open", "max_active",
                                            "max_append", "block_size")} == {
        "nr_zones": cfg.zones, "zone_size": cfg.zone_size, "zone_capacity": cfg.zone_capacity,
        "max_open": cfg.max_open, "max_active": cfg.max_active, "max_append": max_append,
        "block_size": cfg.block_size}
    assert (conv["size"], conv["block_size"]) == (cfg.conv_size, 512)
    twin_zns, twin_conv = open_device(zns["twin"]), open_device(conv["twin"])     # the URLs the guest used
    try:
        assert twin_zns.geometry.as_dict() == zns["geometry"] and twin_zns.describe()["clock"] == "modeled"
        assert (twin_conv.size, twin_conv.block_size, twin_conv.describe()["clock"]) == (cfg.conv_size, 512, "modeled")
    finally:
        twin_zns.close()
        twin_conv.close()
    twins = {t["name"]: t for t in tw["runs"]}
    assert set(twins) == set(runs) - {"dram-only"}
    for name, t in twins.items():
        assert t["clock"] == "modeled" and t["io_stall_time_s"] >= 0, name     # 0: the lookahead hid it all
        assert t["device"].endswith(zns["twin"] if name == "store-on-zns" else conv["twin"]), name
        assert t["loss"] == base and t["compute_time_s"] == runs[name]["compute_time_s"], name
        s = runs[name]["model_twin"]            # beside the real run: the twin's stall, on the model's clock
        assert s["clock"] == "modeled" and s["io_stall_time_s"] == t["io_stall_time_s"], name
        assert s["stall_wall_over_model"] == (runs[name]["io_stall_time_s"] / t["io_stall_time_s"]
                                              if t["io_stall_time_s"] > 0 else None), name
        # the same training: the twin faulted and wrote the pages the real run did
        assert (t["swap_in_bytes"], t["swap_out_bytes"]) == (runs[name]["swap_in_bytes"], runs[name]["swap_out_bytes"])
