"""Hostile input for the command line (issue 10): malformed URLs, sizes, sidecar files and options
for ``info``, ``zones``, ``reset``, ``characterize`` and ``bench`` (options that fail before
training). Every case must end with exit code 2, one error line (``zswap-host: error: …``, or
click's own usage block with one ``Error:`` line), no traceback, and nothing written to disk.

Also item 10 of the issue: corrupt state of a file-backed emulated device (``PATH.zones``,
``PATH.json``, a short image) is refused with one clear error, and ``zones``/``info`` never write."""

import hashlib
import itertools
import json
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from zswap_host.cli import main
from zswap_host.devices import open_device
from zswap_host.errors import DeviceSpecError

GEOM = "zones=4&zone_size=1MiB&zone_capacity=768KiB&max_open=2&max_active=3&preset=none"
CAP = 768 << 10
MiB = 1 << 20

# -- malformed URLs and sizes (in-memory devices: nothing on disk to write) -------------------------
BAD_SIZES = ["99999999999999999999999", "1.5KiB", "0", "-4096", "4097", "1e6", "0x1000", "MiB", "",
             "16 MiB B", "nan", "inf", "1TiB1", "2PiB", "1.0000001MiB", "4096BB", "９"]
BAD_COUNTS = ["-1", "abc", "1.5", "", "4294967296", "99999999999999999999999", "+3", "0x4", "1e2", "٣"]
BAD_URLS = [
    "emu://?zones=4&zones=5", "emu://?zones=4#frag", "emu://?zones=4#", "emu://?&&", "emu://?zones",
    "emu://?=4", "emu://?zones=0", "emu://?bogus=1", "emu://?zones=4&preset=", "emu://?preset=nosuch",
    "emu://?preset=none&zone_size=1MiB&zone_capacity=2MiB", "emu://?max_open=5&max_active=2&preset=none",
    "emu://?max_append=100&preset=none", "emu://?block_size=3000&preset=none", "emu://?suspend=2",
    "emu://?idle_gc=1", "emu://?zones=4096&zone_size=1PiB&preset=none",
    "emu-conv://?size=2PiB&preset=none", "emu-conv://?op=nan",
    "emu-conv://?op=1.5", "emu-conv://?op=-0.1", "emu-conv://?op=abc", "emu-conv://?size=0",
    "emu-conv://?size=4095&preset=none", "emu-conv://?zones=4", "emu-conv://?size=1MiB&size=2MiB",
    "bogus://x", "://x", "", "/no/such/dev", "/dev/null", ".", "emu:///no/such/dir/x.img?zones=4",
    "emu://?zones=4&zone_size=1MiB&preset=none&block_size=0", "emu://?zones=4&preset=none\x00",
]
BAD_URLS += [f"emu://?zones=2&zone_size={s}&preset=none" for s in BAD_SIZES]
BAD_URLS += [f"emu://?zones={c}&zone_size=1MiB&preset=none" for c in BAD_COUNTS]
BAD_URLS += [f"emu-conv://?size={s}&preset=none" for s in BAD_SIZES]
BAD_URLS += [f"emu://?zones=2&zone_size=1MiB&max_open={c}&preset=none" for c in BAD_COUNTS[:5]]
BAD_URLS += ["ocssd://?groups=0&preset=none", "ocssd://?ws_min=5&preset=none", "ocssd://?groups=3",
             "ocssd://?mw_cunits=99999&preset=none", "ocssd://?chunks=1&chunks=2", "ocssd://?zones=4"]


def url_cases():
    for url, cmd in itertools.product(BAD_URLS, ["info", "zones", "reset"]):
        if cmd == "zones" and url.startswith("emu-conv://?size=1MiB"):
            continue
        args = [cmd, url] + (["--all", "--yes"] if cmd == "reset" else [])
        yield pytest.param(args, id=f"{cmd}-{url[:60]}")
    for url in BAD_URLS[:30]:
        if not url:
            continue                    # --device "" means the default device
        yield pytest.param(["characterize", "--device", url], id=f"characterize-{url[:60]}")


OPTION_CASES = [
    ["reset", "emu://?zones=4&preset=none", "--zone", "-1"],
    ["reset", "emu://?zones=4&preset=none", "--zone", "4"],
    ["reset", "emu://?zones=4&preset=none", "--zone", "abc"],
    ["reset", "emu://?zones=4&preset=none", "--zone", "99999999999999999999"],
    ["reset", "emu://?zones=4&preset=none", "--zone", "1", "--all"],
    ["reset", "emu://?zones=4&preset=none"],
    ["reset"],
    ["info"],
    ["zones"],
    ["info", "emu://?zones=4&preset=none", "extra"],
    ["zones", "emu://?zones=4&preset=none", "--jsn"],
    ["zones", "emu-conv://?size=1MiB&preset=none"],
    ["zones", "ocssd://?chunks=1&preset=none"],
    ["reset", "ocssd://?chunks=1&preset=none", "--all", "--yes"],
    ["characterize", "--device", "emu://?zones=4&preset=none"],
    ["characterize", "--device", "emu-conv://?size=1MiB&preset=none"],
    ["characterize", "--bogus"],
    ["nosuchcommand"],
    ["bench", "--placement", "random"],
    ["bench", "--iterations", "abc"],
    ["bench", "--model", "nosuch"],
    ["bench", "--model", "tiny", "--device", "bogus://x"],
    ["bench", "--model", "tiny", "--device", "emu://?zones=4&zones=5"],
    ["bench", "--model", "tiny", "--device", "emu://?zones=4&zone_size=1MiB&preset=none"],
    ["bench", "--model", "tiny", "--baseline-device", "emu-conv://?size=2PiB"],
    ["bench", "--model", "tiny", "--victim", "nosuch"],
    ["bench", "--model", "tiny", "--budget", "abc"],
    ["bench", "--model", "tiny", "--budget", "-1"],
    ["bench", "--model", "tiny", "--iterations", "0"],
    ["bench", "--model", "tiny", "--iterations", "-1"],
    ["bench", "--model", "tiny", "--batch-size", "0"],
]
# not here: ``bench --model tiny --batch-size 100000000`` still starts allocating (bench.py is not
# this module's; reported in issue 10)


def _snapshot(root):
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            st = os.stat(p)
            with open(p, "rb") as fh:
                out[p] = (st.st_size, st.st_mtime_ns, hashlib.sha1(fh.read()).hexdigest())
    return out


def run_hostile(args, cwd):
    before = _snapshot(cwd)
    r = CliRunner().invoke(main, args, catch_exceptions=True)
    after = _snapshot(cwd)
    out = r.output
    assert not (r.exception is not None and not isinstance(r.exception, SystemExit)), \
        f"{args}: traceback {r.exception!r}"
    assert r.exit_code == 2, f"{args}: exit {r.exit_code}: {out}"
    assert "Traceback" not in out
    ours = [line for line in out.splitlines() if line.startswith("zswap-host: error:")]
    clicks = [line for line in out.splitlines() if line.startswith("Error:")]
    if ours:
        assert len(ours) == 1 and len(out.strip().splitlines()) == 1, f"{args}: {out}"
    else:
        assert len(clicks) == 1 and out.startswith("Usage:"), f"{args}: {out}"
    assert before == after, f"{args}: wrote {set(after.items()) ^ set(before.items())}"
    return out


@pytest.mark.parametrize("args", list(url_cases()))
def test_malformed_urls_and_sizes(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_hostile(args, str(tmp_path))


@pytest.mark.parametrize("args", OPTION_CASES, ids=lambda a: " ".join(a)[:60])
def test_malformed_options(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_hostile(args, str(tmp_path))


# -- corrupt sidecar state of a file-backed device ------------------------------------------------
@pytest.fixture(scope="module")
def template(tmp_path_factory):
    d = tmp_path_factory.mktemp("tpl")
    path = d / "z.img"
    dev = open_device(f"emu://{path}?{GEOM}")
    dev.write(0, np.ones(8192, np.uint8))
    dev.finish_zone(2)
    dev.close()
    return d


def _zones_bytes(rows):
    return np.array(rows, "<i8").tobytes()


GOOD_ZONES = [[8192, 4], [0, 1], [CAP, 0xE], [0, 1]]
ZONES_CORRUPTION = {
    "7-bytes": b"\x01" * 7,
    "empty": b"",
    "one-zone-extra": _zones_bytes(GOOD_ZONES + [[0, 1]]),
    "wp-negative": _zones_bytes([[-4096, 4]] + GOOD_ZONES[1:]),
    "wp-1TiB": _zones_bytes([[1 << 40, 4]] + GOOD_ZONES[1:]),
    "wp-4097": _zones_bytes([[4097, 4]] + GOOD_ZONES[1:]),
    "wp-past-capacity": _zones_bytes([[CAP + 4096, 4]] + GOOD_ZONES[1:]),
    "cond-99": _zones_bytes([[8192, 99]] + GOOD_ZONES[1:]),
    "cond-negative": _zones_bytes([[8192, -1]] + GOOD_ZONES[1:]),
    "empty-with-data": _zones_bytes([[8192, 1]] + GOOD_ZONES[1:]),
    "full-short": _zones_bytes(GOOD_ZONES[:2] + [[4096, 0xE], [0, 1]]),
    "too-many-active": _zones_bytes([[4096, 4], [4096, 4], [4096, 4], [4096, 4]]),
}
JSON_CORRUPTION = {
    "list": "[1, 2, 3]",
    "null": "null",
    "string": '"zns"',
    "garbage": "{not json",
    "empty-file": "",
    "no-zone-size": lambda m: {k: v for k, v in m.items() if k != "zone_size"},
    "no-kind": lambda m: {k: v for k, v in m.items() if k != "kind"},
    "zone-size-string": lambda m: {**m, "zone_size": "1MiB"},
    "zone-size-bool": lambda m: {**m, "zone_size": True},
    "zone-size-negative": lambda m: {**m, "zone_size": -1048576},
    "zone-size-float": lambda m: {**m, "zone_size": 1048576.0},
    "zones-huge": lambda m: {**m, "nr_zones": 1 << 70},
    "zones-zero": lambda m: {**m, "nr_zones": 0},
    "kind-conventional": lambda m: {**m, "kind": "conventional"},
    "preset-list": lambda m: {**m, "preset": ["none"]},
    "capacity-over-size": lambda m: {**m, "zone_capacity": 4 << 20},
}
IMAGE_CORRUPTION = {
    "image-5000-bytes": lambda p: open(p, "r+b").truncate(5000),
    "image-empty": lambda p: open(p, "r+b").truncate(0),
    "image-grown": lambda p: open(p, "r+b").truncate(8 << 20),
    "image-missing": lambda p: os.remove(p),
    "zones-missing": lambda p: os.remove(str(p) + ".zones"),
    "image-is-dir": lambda p: (os.remove(p), os.mkdir(p)),
}


def _corrupt(template, tmp_path, kind, what):
    dst = tmp_path / "dev"
    shutil.copytree(template, dst)
    path = dst / "z.img"
    if kind == "zones":
        (dst / "z.img.zones").write_bytes(what)
    elif kind == "json":
        if callable(what):
            meta = json.loads((dst / "z.img.json").read_text())
            (dst / "z.img.json").write_text(json.dumps(what(meta)))
        else:
            (dst / "z.img.json").write_text(what)
    else:
        what(path)
    return path


SIDECAR_CASES = [("zones", k, v) for k, v in ZONES_CORRUPTION.items()] + \
    [("json", k, v) for k, v in JSON_CORRUPTION.items()] + [("image", k, v) for k, v in IMAGE_CORRUPTION.items()]


@pytest.mark.parametrize("cmd", ["info", "zones", "reset"])
@pytest.mark.parametrize("kind,name,what", SIDECAR_CASES, ids=[f"{c[0]}-{c[1]}" for c in SIDECAR_CASES])
def test_corrupt_device_state_is_refused_and_nothing_written(template, tmp_path, cmd, kind, name, what):
    path = _corrupt(template, tmp_path, kind, what)
    args = [cmd, f"emu://{path}"] + (["--all", "--yes"] if cmd == "reset" else [])
    out = run_hostile(args, str(tmp_path))
    assert str(path) in out or "z.img" in out, out


def test_corrupt_device_state_is_a_device_spec_error(template, tmp_path):
    path = _corrupt(template, tmp_path, "zones", ZONES_CORRUPTION["wp-4097"])
    with pytest.raises(DeviceSpecError, match="corrupt"):
        open_device(f"emu://{path}")


@pytest.mark.parametrize("cmd", ["info", "zones"])
def test_read_only_commands_never_write(template, tmp_path, cmd):
    dst = tmp_path / "dev"
    shutil.copytree(template, dst)
    # a device left with an open zone: reopening read-write power-cycles it (OPEN -> CLOSED)
    dev = open_device(f"emu://{dst / 'z.img'}")
    dev.write(CAP // 2 * 0 + (1 << 20), np.ones(4096, np.uint8))     # zone 1 implicitly open
    dev._state.flush()
    dev._backing.flush()
    on_disk = lambda: np.fromfile(dst / "z.img.zones", "<i8").reshape(-1, 2)    # noqa: E731  (wp, cond)
    assert on_disk()[1].tolist() == [4096, 2]                         # IMPLICIT_OPEN on disk
    before = _snapshot(str(dst))
    r = CliRunner().invoke(main, [cmd, f"emu://{dst / 'z.img'}"])
    assert r.exit_code == 0, r.output
    assert _snapshot(str(dst)) == before
    assert on_disk()[1].tolist() == [4096, 2]                         # still IMPLICIT_OPEN on disk
    dev.close()
    # a path that does not exist is not created by a read-only command
    r = CliRunner().invoke(main, [cmd, f"emu://{tmp_path / 'new.img'}?zones=4&preset=none"])
    assert r.exit_code == 2 and not list(tmp_path.glob("new.img*"))


def test_read_only_device_refuses_writes(template, tmp_path):
    dst = tmp_path / "dev"
    shutil.copytree(template, dst)
    dev = open_device(f"emu://{dst / 'z.img'}", readonly=True)
    from zswap_host.errors import DeviceIOError

    for call in (lambda: dev.write(8192, np.ones(4096, np.uint8)), lambda: dev.reset_zone(0),
                 lambda: dev.finish_zone(1), lambda: dev.append(1, np.ones(4096, np.uint8))):
        with pytest.raises(DeviceIOError, match="read-only"):
            call()
    assert np.array_equal(dev.read(0, 8192), np.ones(8192, np.uint8))
    dev.close()


def test_a_real_drive_geometry_opens_without_allocating_it():
    """ZN540-like geometry in memory (904 zones of 2 GiB): opens, describes itself, takes writes
    (timing model off: the model's arrays are another module's business)."""
    try:
        dev = open_device("emu://?zones=904&zone_size=2GiB&zone_capacity=1077MiB&preset=none")
    except DeviceSpecError as e:                 # a process under a small address-space limit
        if "address space" not in str(e):
            raise
        pytest.skip(str(e))
    assert dev.describe()["geometry"]["nr_zones"] == 904
    last = 903 * (2 << 30)
    assert dev.append(903, np.ones(512 << 10, np.uint8)) == last
    assert dev.read(last, 4096).all() and dev.report_zones()[903].wp == last + (512 << 10)
    dev.reset_zone(903)
    assert not dev.read(last, 4096).any() and dev.report_zones()[903].wp == last
    dev.close()


# -- a user's data file as a device (issue 34, item 1): refused, one line, nothing written -------------
DATA_FILE_CASES = [
    ["bench", "--quick", "--baseline-device", "{p}"],
    ["bench", "--model", "tiny", "--baseline-device", "emu-conv://{p}?size=1MiB"],
    ["bench", "--model", "tiny", "--device", "emu://{p}?zones=4&zone_size=256KiB"],
    ["reset", "emu://{p}?zones=4&zone_size=256KiB&preset=none", "--all", "--yes"],
    ["characterize", "--device", "emu-conv://{p}?size=1MiB"],
]


@pytest.mark.parametrize("args", DATA_FILE_CASES, ids=lambda a: " ".join(a)[:60])
def test_a_data_file_as_a_device_is_refused_and_unchanged(args, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "notes.txt"
    p.write_bytes(b"my notes, not a device\n" * (MiB // 23) + b"\n" * (MiB % 23))    # 1 MiB of text
    out = run_hostile([a.format(p=p) for a in args], str(tmp_path))
    assert str(p) in out and "--force" in out


# -- issue 34, items 5-7: hostile traces, late-checked outputs, spawned runs ------------------------
# Run as a real process: a replay's runs are spawned interpreters whose stderr CliRunner cannot see.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_real(args, cwd, timeout=300):
    """``zswap-host ARGS`` in a process of its own: exit 2, one ``zswap-host: error:`` line on stderr
    and nothing else (or click's usage block with one ``Error:`` line), no traceback, nothing under
    ``cwd`` created or changed. The error line."""
    import subprocess
    import sys

    before = _snapshot(cwd)
    dirs = sorted(d for d, _, _ in os.walk(cwd))
    p = subprocess.run([sys.executable, "-m", "zswap_host.cli", *args], cwd=cwd, capture_output=True,
                       text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": ROOT})
    err = p.stderr.strip().splitlines()
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout, f"{args}: {p.stderr}"
    assert p.returncode == 2, f"{args}: exit {p.returncode}: {p.stderr}{p.stdout}"
    if err and err[0].startswith("Usage:"):           # click's own usage block: one Error: line
        assert sum(line.startswith("Error:") for line in err) == 1, f"{args}: {p.stderr}"
        err = [line for line in err if line.startswith("Error:")]
    else:
        assert len(err) == 1 and err[0].startswith("zswap-host: error: "), f"{args}: {p.stderr}"
    assert _snapshot(cwd) == before, f"{args}: wrote {set(_snapshot(cwd).items()) ^ set(before.items())}"
    assert sorted(d for d, _, _ in os.walk(cwd)) == dirs, f"{args}: created a directory"
    return err[0]


def _good_trace():
    from zswap_host.workloads import SwapTrace, synthetic_dlrm_trace

    t = synthetic_dlrm_trace(2000, dram_fraction=0.3, batch_pages=64, iterations=6, idle_s=1e-3, seed=1,
                             discard_faulted=True)
    return SwapTrace(t.ops, t.streams, t.idle_s, t.bounds, t.ids, {**t.meta, "preset": "tiny"})


def _with(t, **arrays):
    from zswap_host.workloads import SwapTrace

    a = {k: getattr(t, k) for k in ("ops", "streams", "idle_s", "bounds", "ids")} | arrays
    return SwapTrace(a["ops"], a["streams"], a["idle_s"], a["bounds"], a["ids"], t.meta)


def _swap_rows(x, i, j):
    x = x.copy()
    x[i], x[j] = x[j], x[i]
    return x


def _set(x, i, v, dtype=None):
    x = x.astype(dtype or x.dtype)
    x[i] = v
    return x


# (name, what to do to a good trace, what the one line must say)
HOSTILE_TRACES = [
    ("unknown-op", lambda t: _with(t, ops=_set(t.ops, 5, 9)), "row 5: unknown op code 9"),
    ("reversed-bounds", lambda t: _with(t, bounds=_swap_rows(t.bounds, 3, 4)), "row 3: reversed bounds"),
    ("negative-idle", lambda t: _with(t, idle_s=_set(t.idle_s, int(np.argmax(t.ops == 3)), -0.5)), "idle window -0.5"),
    ("nan-idle", lambda t: _with(t, idle_s=_set(t.idle_s, 2, np.nan)), "row 2: idle window nan"),
    ("float-ids", lambda t: _with(t, ids=t.ids.astype(np.float64) + 0.5), "ids holds float64"),
    ("negative-id", lambda t: _with(t, ids=_set(t.ids, 0, -7)), "row 0: negative page id -7"),
    ("short-bounds", lambda t: _with(t, bounds=t.bounds[:-1]), "bounds has"),
    ("bounds-past-ids", lambda t: _with(t, ids=t.ids[:-3]), "bounds end at"),
    ("negative-stream", lambda t: _with(t, streams=_set(t.streams, 1, -3)), "row 1: negative stream -3"),
    ("2d-ops", lambda t: _with(t, ops=t.ops.reshape(1, -1)), "ops has shape"),
    ("id-past-its-pages", lambda t: _with(t, ids=_set(t.ids, 4, 1 << 38)), "beyond the trace's 2000 pages"),
]


@pytest.mark.parametrize("name,damage,message", HOSTILE_TRACES, ids=[c[0] for c in HOSTILE_TRACES])
def test_a_hostile_trace_is_refused_naming_its_row(tmp_path, name, damage, message):
    p = tmp_path / "bad.npz"
    damage(_good_trace()).save(str(p))
    line = run_real(["replay", "--trace", str(p), "--runs", "store-on-zns",
                     "--json", str(tmp_path / "r.json"), "--out", str(tmp_path / "out")], str(tmp_path))
    assert str(p) in line and message in line, line


def _npz_damage(kind):
    def damage(path):
        if kind == "truncated":
            os.truncate(path, os.path.getsize(path) // 2)
        elif kind == "not-npz":
            with open(path, "wb") as f:
                f.write(b"not a zip file at all\n" * 40)
        elif kind == "meta-not-json":
            with np.load(path) as f:
                a = {k: f[k] for k in f.files}
            np.savez(path, **{**a, "meta": np.array("{nope")})
        elif kind == "no-ids":
            with np.load(path) as f:
                a = {k: f[k] for k in f.files if k != "ids"}
            np.savez(path, **a)
    return damage


@pytest.mark.parametrize("kind", ["truncated", "not-npz", "meta-not-json", "no-ids"])
def test_a_damaged_trace_file_is_one_line(tmp_path, kind):
    p = tmp_path / "bad.npz"
    _good_trace().save(str(p))
    _npz_damage(kind)(str(p))
    line = run_real(["replay", "--trace", str(p), "--runs", "store-on-zns"], str(tmp_path))
    assert str(p) in line, line


@pytest.fixture(scope="module")
def tiny_chunked(tmp_path_factory):
    from zswap_host.workloads import generate_dlrm_trace

    return generate_dlrm_trace(str(tmp_path_factory.mktemp("chunked") / "tiny"), "tiny", iterations=12,
                               chunk_iterations=4).path


CHUNK_DAMAGE = {
    "truncated": lambda p: os.truncate(p, os.path.getsize(p) // 2),
    "float-ids": lambda p: _rewrite_chunk(p, lambda a: {**a, "ids": a["ids"].astype(np.float64)}),
    "unknown-op": lambda p: _rewrite_chunk(p, lambda a: {**a, "ops": _set(a["ops"], 2, 77)}),
    "id-past-the-tables": lambda p: _rewrite_chunk(p, lambda a: {**a, "ids": _set(a["ids"], 0, 1 << 39)}),
}


def _rewrite_chunk(path, change):
    with np.load(path) as f:
        a = {k: f[k] for k in f.files}
    np.savez(path, **change(a))


@pytest.mark.parametrize("kind", list(CHUNK_DAMAGE))
def test_a_damaged_chunk_is_one_line_from_the_spawned_run(tiny_chunked, tmp_path, kind):
    """The chunks are read by each run's spawned process: its error is the command's one line (no
    traceback from the child), naming the trace, the chunk and, for bad contents, the row."""
    d = tmp_path / "trace"
    shutil.copytree(tiny_chunked, d)
    CHUNK_DAMAGE[kind](str(d / "chunk_00001.npz"))
    line = run_real(["replay", "--trace", str(d), "--runs", "store-on-zns",
                     "--json", str(tmp_path / "r.json")], str(tmp_path))
    assert "chunk 1 (chunk_00001.npz)" in line, line
    if kind != "truncated":
        assert "row" in line or "holds float64" in line, line


# late checks: every output path and option is checked before any work (a trace generated, a run run)
def late_cases(tmp):
    f = tmp / "notes.txt"
    return [
        ["sweep", "--generate", "tiny", "--trace", f"{tmp}/t", "--executor", "serial", "--out", str(f)],
        ["sweep", "--generate", "tiny", "--trace", f"{tmp}/t", "--executor", "serial", "--out", f"{f}/out"],
        ["bench", "--model", "tiny", "--plot", f"{f}/plots"],
        ["bench", "--model", "tiny", "--json", "/nonexistent/x.json"],
        ["bench", "--model", "tiny", "--json", f"{f}/x.json"],
        ["bench", "--model", "tiny", "--json", str(tmp)],
        ["bench", "--model", "tiny", "--trace-out", f"{f}/t.npz"],
        ["replay", "--generate", "tiny", "--trace", f"{tmp}/t", "--compute-us-per-sample", "inf"],
        ["replay", "--generate", "tiny", "--trace", f"{tmp}/t", "--compute-us-per-sample", "nan"],
        ["replay", "--generate", "tiny", "--trace", f"{tmp}/t", "--json", "/nonexistent/r.json"],
        ["replay", "--generate", "tiny", "--trace", f"{tmp}/t", "--out", f"{f}/out"],
        ["replay", "--generate", "tiny", "--trace", f"{tmp}/t", "--out", str(f)],
        ["characterize", "--quick", "--json", "/nonexistent/c.json"],
        ["replay", "--generate", "tiny", "--trace", f"{tmp}/t", "--ssd", "nosuch"],
        ["replay", "--generate", "tiny", "--trace", f"{tmp}/t", "--geometry", "real"],
    ]


@pytest.mark.parametrize("i", range(15))
def test_outputs_and_options_are_checked_before_any_work(tmp_path, i):
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "keep").mkdir()                       # the sweep's --out {tmp}: a directory with other files
    (tmp_path / "keep" / "a.txt").write_text("a\n")
    args = late_cases(tmp_path)[i]
    line = run_real(args, str(tmp_path), timeout=120)
    assert "--" in line or "SSD preset" in line or "geometry" in line, line     # names the option


def test_a_deeply_nested_device_json_is_one_line(template, tmp_path):
    dst = tmp_path / "dev"
    shutil.copytree(template, dst)
    (dst / "z.img.json").write_text("[" * 100_000 + "]" * 100_000)
    line = run_real(["info", f"emu://{dst / 'z.img'}"], str(tmp_path))
    assert "z.img" in line, line


@pytest.mark.parametrize("block_size", [0, 3000, "4096"])
def test_a_conventional_sidecar_block_size_is_checked(tmp_path, monkeypatch, block_size):
    """Issue 34 item 8: a corrupt block_size in an emulated conventional SSD's PATH.json was replaced
    by 4096 (and the sidecar rewritten so); now it is refused, the files left as they are."""
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "c.img"
    open_device(f"emu-conv://{p}?size=1MiB&preset=none").close()
    meta = json.loads((tmp_path / "c.img.json").read_text())
    (tmp_path / "c.img.json").write_text(json.dumps({**meta, "block_size": block_size}))
    for args in (["info", f"emu-conv://{p}"], ["characterize", "--device", f"emu-conv://{p}"]):
        out = run_hostile(args, str(tmp_path))
        assert "block_size" in out and "c.img" in out, out


def test_a_sharded_bench_refuses_a_lookahead_it_would_ignore(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = run_hostile(["bench", "--ranks", "2", "--lookahead", "2", "--model", "tiny"], str(tmp_path))
    assert "--lookahead 2" in out and "--ranks" in out, out
