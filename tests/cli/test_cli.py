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


@pytest.mark.parametrize("url", ["emu://?zones=8&zone_size=4MiB&zone_capacity=3MiB", "emu-conv://?size=16MiB",
                                 "emu-conv://?size=16MiB&preset=cluster23-nvme-a"])
def test_info_json_carries_the_whole_preset(url):
    """The preset's nested controller model is JSON too (it was a TypeError traceback)."""
    r = run("info", url, "--json")
    assert r.exit_code == 0, r.output
    m = json.loads(r.output)["model"]
    assert isinstance(m["controller"], dict) and "gc_striped" in m["controller"]


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


def test_help_names_every_scheme_the_default_op_and_the_glossary():
    import os

    from zswap_host.devices.url import schemes
    from zswap_host.ssdsim import get_preset

    out = run("--help").output
    for s in schemes():
        if s["form"] != "PATH":                          # the bare-path kinds (files, block devices) below
            assert s["form"] in out, s["name"]
    assert "/path/to/file" in out and "/dev/nvme0n2" in out
    assert f"op={get_preset('thesis-ssd').conv_op:g}" in out and "op=0.07" not in out
    assert "docs/glossary.md" in out
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    glossary = open(os.path.join(root, "docs", "glossary.md")).read()
    readme = open(os.path.join(root, "README.md")).read()
    assert sum("docs/glossary.md" in line for line in readme.splitlines()) == 1
    for term in ("payload-free", "model twin", "charged compute", "same-flash", "zoned view", "idle window",
                 "WAF", "ruhs", "ws_min", "mw_cunits", "OP", "stall", "attribution chain", "store-on-zns"):
        assert f"**{term}" in glossary or f"`{term}`" in glossary, term


def test_a_closed_stdout_ends_info_quietly(tmp_path):
    """``zswap-host info … | head``: the reader has gone; no 'Broken pipe' error, no traceback."""
    import os
    import subprocess
    import sys

    r, w = os.pipe()
    os.close(r)                                          # nobody reads: the first write fails with EPIPE
    try:
        p = subprocess.run([sys.executable, "-m", "zswap_host.cli", "info", "emu://?zones=4&preset=none"],
                           stdout=w, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)
    assert p.stderr == "" and p.returncode == 141


def test_bench_progress_lines_quiet_and_no_empty_chain():
    """Off a terminal, one line per finished run; --quiet: none; a bench whose runs form no chain
    step says so instead of printing an empty chain header."""
    r = run("bench", "--model", "tiny", "--runs", "store-on-zns", "--jobs", "1")
    assert r.exit_code == 0, r.output
    done = [line for line in r.output.splitlines() if line.startswith("bench: ")]
    assert [d.split()[1] for d in done] == ["dram-only", "store-on-zns"]
    assert all("20 iterations" in d for d in done) and "(2/2, " in done[1]
    assert "attribution chain: no step" in r.output and "attribution chain (before" not in r.output
    q = run("bench", "--model", "tiny", "--runs", "store-on-zns", "--jobs", "1", "--quiet")
    assert q.exit_code == 0 and not any(line.startswith("bench: ") for line in q.output.splitlines())
    table = lambda out: [line for line in out.splitlines() if line.startswith(("dram-only", "store-on-zns"))]  # noqa: E731
    assert [t.split()[:2] for t in table(q.output)] == [t.split()[:2] for t in table(r.output)]
