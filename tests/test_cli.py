"""The command line: info, zones, reset, and one-line errors with exit code 2."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from zswap_host.cli import main
from zswap_host.devices import open_device

GEOM = "zones=4&zone_size=1MiB&zone_capacity=768KiB&max_open=2&max_active=3&preset=none"


@pytest.fixture
def zns_file(tmp_path):
    """A file-backed emulated ZNS device left with zone 0 holding data and zone 2 full."""
    path = tmp_path / "z.img"
    dev = open_device(f"emu://{path}?{GEOM}")
    dev.write(0, np.ones(8192, np.uint8))
    dev.finish_zone(2)
    dev.close()
    return f"emu://{path}"


def run(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input)


def test_zones_shows_what_a_previous_run_left(zns_file):
    r = run("zones", zns_file)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0].split() == ["zone", "start", "len", "cap", "wp", "cond"]
    assert lines[1].split() == ["0", "0", str(1 << 20), str(768 << 10), "8192", "cl"]
    assert lines[3].split()[-1] == "fu" and lines[2].split()[-1] == "em"


def test_zones_json(zns_file):
    r = run("zones", zns_file, "--json")
    zones = json.loads(r.output)
    assert [z["cond"] for z in zones] == ["CLOSED", "EMPTY", "FULL", "EMPTY"]
    assert zones[2]["wp"] == 2 * (1 << 20) + (1 << 20)
    assert set(zones[0]) == {"index", "start", "len", "capacity", "wp", "cond"}


def test_info_text_and_json(zns_file):
    r = run("info", zns_file)
    assert r.exit_code == 0 and "max_open 2, max_active 3" in r.output
    d = json.loads(run("info", zns_file, "--json").output)
    assert d["geometry"]["nr_zones"] == 4 and d["zoned"] is True


def test_reset_asks_before_destroying_data(zns_file):
    r = run("reset", zns_file, "--all", input="n\n")
    assert r.exit_code != 0
    assert json.loads(run("zones", zns_file, "--json").output)[0]["cond"] == "CLOSED"
    r = run("reset", zns_file, "--zone", "0", "--yes")
    assert r.exit_code == 0 and "reset 1 zone" in r.output
    assert json.loads(run("zones", zns_file, "--json").output)[0]["cond"] == "EMPTY"
    r = run("reset", zns_file, "--all", input="y\n")
    assert r.exit_code == 0
    assert {z["cond"] for z in json.loads(run("zones", zns_file, "--json").output)} == {"EMPTY"}


@pytest.mark.parametrize("args,words", [
    (["zones", "bogus://x"], "unknown device URL scheme"),
    (["zones", "/no/such/dev"], "no such file"),
    (["zones", "emu://?zones=2&zone_size=1MiB&zone_capacity=2MiB&preset=none"], "larger than the zone size"),
    (["zones", "emu://?zones=2&zone_size=5000&preset=none"], "multiple of the block size"),
    (["zones", "emu-conv://?size=1MiB&preset=none"], "not a zoned device"),
    (["info", "emu://?zones=2&preset=nosuch"], "nosuch"),
    (["reset", "emu://?zones=2&zone_size=1MiB&preset=none"], "exactly one of"),
    (["reset", "emu://?zones=2&zone_size=1MiB&preset=none", "--zone", "5"], "does not exist"),
])
def test_bad_input_is_one_line_and_exit_2(args, words):
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert words in r.output
    assert "Traceback" not in r.output
    assert len([l for l in r.output.splitlines() if l.startswith("zswap-host: error:")]) == 1


def test_help_explains_urls():
    r = run("--help")
    assert r.exit_code == 0 and "emu-conv://" in r.output and "characterize" in r.output
