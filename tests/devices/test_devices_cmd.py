"""`zswap-host devices`: NVMe discovery through libnvme. This machine has no NVMe devices; the QEMU
guest test (tests/qemu) checks a real controller with a zoned and a conventional namespace."""

import dataclasses
import importlib.metadata
import json
import os
import re
from pathlib import Path

import pytest
import system_packages
from click.testing import CliRunner

from zswap_host.cli import format_devices, main
from zswap_host.devices import nvme_discovery
from zswap_host.devices.nvme_discovery import LIBNVME_REQUIREMENT, NvmeNamespace

ROOT = Path(__file__).resolve().parents[2]
CTRL = dict(controller="nvme0", model="QEMU NVMe Ctrl", serial="zswapzns", firmware="8.0.2", transport="pcie",
            block_size=4096)
CONV = NvmeNamespace(name="nvme0n1", nsid=1, size=256 << 20, zoned=False, **CTRL)
ZNS = NvmeNamespace(name="nvme0n2", nsid=2, size=512 << 20, zoned=True, zoned_model="host-managed",
                    zone_size=4 << 20, zone_capacity=3 << 20, nr_zones=128, max_open=2, max_active=3,
                    max_append=512 << 10, **CTRL)


def run(*args):
    return CliRunner().invoke(main, ["devices", *args])


@pytest.fixture
def fresh_loader():
    """load_libnvme caches its module: start and end each test with an empty cache."""
    nvme_discovery.load_libnvme.cache_clear()
    yield
    nvme_discovery.load_libnvme.cache_clear()


def libnvme_missing() -> str | None:
    """Why libnvme's Python module does not load, naming the package to install; None when it loads."""
    try:
        nvme_discovery.load_libnvme()
        return None
    except Exception as e:
        swig = system_packages.skip_reason("swig")
        if swig:   # pip built libnvme without its module: swig first, then the rebuild
            return (f"libnvme's Python module {swig}, then pip install --no-cache-dir --force-reinstall "
                    f"'{LIBNVME_REQUIREMENT}'")
        return f"needs the pip package {LIBNVME_REQUIREMENT} (the dev extra) with its Python module: {e}"


LIBNVME_MISSING = libnvme_missing()


def test_no_devices_is_a_plain_sentence(monkeypatch):
    monkeypatch.setattr(nvme_discovery, "discover", lambda: [])
    r = run()
    assert r.exit_code == 0 and r.output == "No NVMe devices found.\n"
    r = run("--json")
    assert r.exit_code == 0 and json.loads(r.output) == []


@pytest.mark.skipif(LIBNVME_MISSING is not None, reason=str(LIBNVME_MISSING))
@pytest.mark.skipif(os.path.isdir("/sys/class/nvme") and bool(os.listdir("/sys/class/nvme")),
                    reason="this machine has NVMe controllers")
def test_this_machine_has_no_nvme_devices():
    """The real libnvme walk, on a machine without NVMe: nothing found, said plainly."""
    assert nvme_discovery.discover() == []
    r = run()
    assert r.exit_code == 0 and r.output == "No NVMe devices found.\n"
    assert json.loads(run("--json").output) == []


@pytest.mark.skipif(LIBNVME_MISSING is not None, reason=str(LIBNVME_MISSING))
def test_bundled_libnvme_is_the_one_loaded():
    nvme_discovery.load_libnvme()
    maps = Path("/proc/self/maps").read_text()
    assert re.search(r"\.libnvme\.mesonpy\.libs/libnvme\.so\.1\.16\.2$", maps, re.M), "bundled libnvme not mapped"


def test_missing_extra_names_what_to_install(monkeypatch, fresh_loader):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", not_installed)
    r = run()
    assert r.exit_code == 2
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    assert "not installed" in r.output
    assert "pip install 'zswap-host[nvme]'" in r.output and "apt install swig" in r.output
    assert run("--json").exit_code == 2


def test_libnvme_built_without_swig_gets_the_reinstall_command(monkeypatch, fresh_loader):
    class NoModule:   # what pip installs from a wheel built while swig was missing
        files = [importlib.metadata.PackagePath(p) for p in
                 ("libnvme/__init__.py", ".libnvme.mesonpy.libs/libnvme.so.1.16.2")]

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: NoModule())
    r = run()
    assert r.exit_code == 2
    assert "without its Python module" in r.output
    assert f"pip install --no-cache-dir --force-reinstall '{LIBNVME_REQUIREMENT}'" in r.output
    assert "apt install swig" in r.output


def test_table_groups_namespaces_under_their_controller(monkeypatch):
    other = NvmeNamespace(name="nvme1n1", nsid=1, size=1 << 40, zoned=False,
                          **{**CTRL, "controller": "nvme1", "model": "Some SSD 2TB", "serial": "S6B0"})
    monkeypatch.setattr(nvme_discovery, "discover", lambda: [CONV, ZNS, other])
    r = run()
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "nvme0: QEMU NVMe Ctrl, serial zswapzns, firmware 8.0.2, pcie"
    assert re.split(r"\s{2,}", lines[1].strip()) == ["namespace", "nsid", "size", "block", "zoned", "zones",
                                                     "zone size", "capacity", "max open", "max active", "append"]
    assert lines[2].split() == ["nvme0n1", "1", "256MiB", "4096", "no"]
    assert lines[3].split() == ["nvme0n2", "2", "512MiB", "4096", "host-managed", "128", "4MiB", "3MiB", "2", "3",
                                "512KiB"]
    assert lines[4].startswith("nvme1: Some SSD 2TB, serial S6B0")
    assert lines[5].split() == ["namespace", "nsid", "size", "block", "zoned"]   # no zoned namespace: no zone columns
    assert lines[6].split() == ["nvme1n1", "1", "1TiB", "4096", "no"]


def test_table_unknown_capacity_and_no_limits():
    ns = dataclasses.replace(ZNS, zone_capacity=None, max_open=0, max_active=0, max_append=0)
    assert format_devices([ns]).splitlines()[2].split()[-5:] == ["4MiB", "?", "none", "none", "none"]


def test_json_has_every_field(monkeypatch):
    monkeypatch.setattr(nvme_discovery, "discover", lambda: [CONV, ZNS])
    out = json.loads(run("--json").output)
    assert [d["name"] for d in out] == ["nvme0n1", "nvme0n2"]
    assert out[1] == {**CTRL, "name": "nvme0n2", "path": "/dev/nvme0n2", "nsid": 2, "size": 512 << 20,
                      "zoned": True, "zoned_model": "host-managed", "zone_size": 4 << 20,
                      "zone_capacity": 3 << 20, "nr_zones": 128, "max_open": 2, "max_active": 3,
                      "max_append": 512 << 10}
    assert out[0]["zoned"] is False and out[0]["zone_size"] is None and out[0]["nr_zones"] is None


def test_one_libnvme_pin_everywhere():
    """pyproject's nvme and dev extras, the reinstall command we print and the test set-up's rebuild
    (tests/support/system_packages.py) name the same release."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    extra = re.search(r"^nvme = \[(.*)\]$", pyproject, re.M)
    assert extra and extra.group(1) == f'"{LIBNVME_REQUIREMENT}"'
    dev = re.search(r"^dev = \[(.*?)^\]", pyproject, re.M | re.S)
    assert dev and f'"{LIBNVME_REQUIREMENT}"' in dev.group(1)
    assert system_packages.LIBNVME_REQUIREMENT == LIBNVME_REQUIREMENT


def test_help_says_how_to_install():
    r = run("--help")
    assert r.exit_code == 0
    assert "pip install 'zswap-host[nvme]'" in r.output and "apt install swig" in r.output


def test_zone_limits_come_from_the_queue_folder(tmp_path):
    """The sysfs reader discovery and the zoned backend share: whole blocks, 0 where sysfs says nothing."""
    from zswap_host.devices.sysfs import max_transfer_bytes, queue_zone_limits

    q = tmp_path / "queue"
    q.mkdir()
    for name, value in {"logical_block_size": "4096", "chunk_sectors": "8192", "nr_zones": "128",
                        "max_open_zones": "2", "max_active_zones": "3", "zone_append_max_bytes": "524800",
                        "max_sectors_kb": "1280"}.items():
        (q / name).write_text(value + "\n")
    lim = queue_zone_limits(str(q))
    assert lim == (4096, 8192, 128, 2, 3, 512 << 10)          # 524800 rounded down to whole blocks
    assert max_transfer_bytes(str(q)) == 1280 << 10
    empty = tmp_path / "empty"
    empty.mkdir()
    assert tuple(queue_zone_limits(str(empty))) == (0, 0, 0, 0, 0, 0) and max_transfer_bytes(str(empty)) == 0


def test_zone_capacity_of_something_that_is_not_zoned_is_unknown(tmp_path):
    from zswap_host.devices.blkzoned import first_zone_capacity

    f = tmp_path / "plain.img"
    f.write_bytes(bytes(1 << 20))
    assert first_zone_capacity(str(f), 8192) is None              # the report ioctl is refused
    assert first_zone_capacity(str(tmp_path / "missing"), 8192) is None
