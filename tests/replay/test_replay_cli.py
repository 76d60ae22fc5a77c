"""``zswap-host replay`` (``zswap_host/replay``): the command's rows are the library's, a finished run
is not run again, the FDP and Open-Channel runs verify every page they swap in, and bad input is one
line and exit 2 with nothing written. A tiny generated trace and a tiny synthetic ``.npz``."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from zswap_host.cli import main
from zswap_host.errors import PageCorruptError
from zswap_host.replay import RUNS, ReplaySpec, ReplayTrace, replay_run, run_replay
from zswap_host.workloads import generate_dlrm_trace, synthetic_dlrm_trace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELED = ("stall_s", "write_amplification", "store_gc_mib", "device_gc_mib", "swap_in_p99_ms", "compute_s", "pages")


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return generate_dlrm_trace(str(tmp_path_factory.mktemp("trace") / "tiny"), "tiny").path


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """A synthetic trace (no preset, its budget a fraction of its pages) over the tiny tables' pages."""
    pages = _tiny_pages()
    path = str(tmp_path_factory.mktemp("npz") / "synthetic.npz")
    synthetic_dlrm_trace(pages, dram_fraction=0.3, batch_pages=64, iterations=8, idle_s=1e-3, seed=2,
                         discard_faulted=True).save(path)
    return path


def _tiny_pages() -> int:
    from zswap_host.bench import BenchSpec, plan

    return plan(BenchSpec(preset="tiny", lookahead=0)).table_pages


def cli(*args):
    return CliRunner().invoke(main, ["replay", *args])


def test_the_command_reports_what_the_library_measures(trace, tmp_path):
    runs = ["store-on-zns", "store-on-fdp", "linux-swap-batched"]
    r = cli("--trace", trace, "--runs", ",".join(runs), "--json", str(tmp_path / "r.json"))
    assert r.exit_code == 0, r.output
    got = json.loads((tmp_path / "r.json").read_text())
    assert [x["run"] for x in got["runs"]] == runs
    assert got["command"].startswith("zswap-host replay --trace")
    sizing = ReplayTrace(trace).sizing()
    for row in got["runs"]:
        direct = replay_run(row["run"], trace, "tiny", sizing)
        assert {k: row[k] for k in MODELED} == {k: direct[k] for k in MODELED}
        assert row["pages_per_s"] > 0 and row["peak_rss_mib"] > 0 and row["device"] == direct["device"]
        assert f"{row['stall_s']:.4f}" in r.output and f"{row['write_amplification']:.4f}" in r.output
    assert got["trace"]["swap_in_pages"] + got["trace"]["swap_out_pages"] == got["runs"][0]["pages"]


def test_every_run_shares_the_raw_flash(trace):
    """FDP is the conventional SSD with handles, Open-Channel the ZNS device's flash as chunks."""
    from zswap_host.replay.runs import run_url

    s = ReplayTrace(trace).sizing()
    urls = {n: run_url(n, s) for n in RUNS}
    assert urls["store-on-fdp"].startswith("fdp://?size=" + s.baseline_url.split("size=")[1].split("&")[0])
    assert urls["store-on-ocssd"].startswith("ocssd://") and all(u.endswith("payload=0") for u in urls.values())


def test_a_finished_run_is_not_run_again(trace, tmp_path):
    out = str(tmp_path / "out")
    first = cli("--trace", trace, "--runs", "store-on-zns", "--out", out, "--json", str(tmp_path / "a.json"))
    assert first.exit_code == 0, first.output
    more = cli("--trace", trace, "--runs", "store-on-zns,store-on-ocssd", "--out", out, "--json", str(tmp_path / "b.json"))
    assert more.exit_code == 0, more.output
    assert "finished before" in _done(more.output, "store-on-zns")
    assert "finished before" not in _done(more.output, "store-on-ocssd")
    a, b = (json.loads((tmp_path / f).read_text())["runs"] for f in ("a.json", "b.json"))
    assert b[0] == a[0]                                     # the journalled row itself, wall time included
    with open(os.path.join(out, "replay.jsonl")) as f:
        assert [json.loads(line)["run"] for line in f] == ["store-on-zns", "store-on-ocssd"]
    again = cli("--trace", trace, "--runs", "store-on-zns", "--out", out, "--restart")
    assert again.exit_code == 0 and "finished before" not in _done(again.output, "store-on-zns")
    with open(os.path.join(out, "replay.jsonl")) as f:
        assert [json.loads(line)["run"] for line in f] == ["store-on-zns"]


def _done(output: str, run: str) -> str:
    """The progress line saying ``run`` is done (off a terminal, one line per finished run)."""
    lines = [line for line in output.splitlines() if line.startswith(f"replay: {run} done (")]
    assert len(lines) == 1, output
    return lines[0]


def test_old_names_still_work_with_a_line_each(synthetic, trace, tmp_path):
    """--preset (now --model) and the run zns-host-gc (now store-on-zns): same result, one line each on stderr."""
    old = cli("--trace", synthetic, "--preset", "tiny", "--runs", "zns-host-gc", "--json", str(tmp_path / "o.json"))
    new = cli("--trace", synthetic, "--model", "tiny", "--runs", "store-on-zns", "--json", str(tmp_path / "n.json"))
    assert old.exit_code == 0 and new.exit_code == 0, old.output + new.output
    assert "zswap-host replay: --preset is deprecated, use --model" in old.output
    assert "zswap-host replay: run zns-host-gc is called store-on-zns now" in old.output
    assert "deprecated" not in new.output and "called" not in new.output
    o, n = (json.loads((tmp_path / f).read_text()) for f in ("o.json", "n.json"))
    assert [r["run"] for r in o["runs"]] == ["store-on-zns"]
    assert {k: o["runs"][0][k] for k in MODELED} == {k: n["runs"][0][k] for k in MODELED}
    assert "--model tiny" in o["command"] and "--runs store-on-zns" in o["command"]


def test_a_journal_row_under_the_old_run_name_is_resumed(trace, tmp_path):
    j = str(tmp_path / "j.jsonl")
    run_replay(ReplaySpec(trace, runs=("store-on-zns",), journal=j, isolate=False))
    with open(j) as f:
        row = json.loads(f.read())
    with open(j, "w") as f:
        f.write(json.dumps({**row, "run": "zns-host-gc"}) + "\n")       # as a journal before the rename
    seen = []
    run_replay(ReplaySpec(trace, runs=("store-on-zns",), journal=j, isolate=False),
               on_row=lambda r, resumed: seen.append((r["run"], resumed)))
    assert seen == [("store-on-zns", True)]


def test_a_journal_of_another_sizing_is_not_resumed(trace, tmp_path):
    j = str(tmp_path / "j.jsonl")
    run_replay(ReplaySpec(trace, runs=("store-on-zns",), journal=j, isolate=False))
    seen = []
    run_replay(ReplaySpec(trace, runs=("store-on-zns",), journal=j, utilisation=0.9, isolate=False),
               on_row=lambda row, resumed: seen.append(resumed))
    assert seen == [False]


class _WrongPage:
    """A backend that hands back one page's neighbour on its ``nth`` swap-in call."""

    def __init__(self, backend, nth: int) -> None:
        self._b, self._nth, self._calls = backend, nth, 0

    def swap_in(self, ids):
        return self._swapped(self._b.swap_in(ids))

    def swap_in_words(self, ids):               # what the replay reads with (a store has it)
        return self._swapped(self._b.swap_in_words(ids))

    def _swapped(self, got):
        self._calls += 1
        if self._calls == self._nth and len(got) > 1:
            got = np.array(got)
            got[[0, 1]] = got[[1, 0]]
        return got

    def __getattr__(self, name):
        return getattr(self._b, name)


@pytest.mark.parametrize("run", ["store-on-fdp", "store-on-ocssd"])
def test_fdp_and_ocssd_runs_verify_every_page(trace, monkeypatch, run):
    import zswap_host.replay.measure as measure
    from zswap_host.replay.runs import make_run

    sizing = ReplayTrace(trace).sizing()
    row = replay_run(run, trace, "tiny", sizing, verify=True)        # every swap-in checked, all right
    assert row["pages"] > 0 and row["write_amplification"] >= 1.0

    def tampered(name, s, id_space=0):
        backend, clock, dev = make_run(name, s, id_space)
        return _WrongPage(backend, 2), clock, dev

    monkeypatch.setattr(measure, "make_run", tampered)
    with pytest.raises(PageCorruptError, match="swap_in of page"):
        replay_run(run, trace, "tiny", sizing, verify=True)


def test_an_npz_trace_with_its_preset_given(synthetic, tmp_path):
    r = cli("--trace", synthetic, "--model", "tiny", "--runs", "store-on-ocssd", "--json", str(tmp_path / "s.json"))
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["trace"]["kind"] == "synthetic-dlrm" and s["trace"]["preset"] == "tiny"
    assert s["trace"]["budget_pages"] == max(64, int(0.3 * _tiny_pages()))      # what its meta implies


def test_generate_then_reuse(tmp_path):
    t = str(tmp_path / "g")
    args = ("--generate", "tiny", "--iterations", "4", "--trace", t, "--runs", "store-on-zns")
    first = cli(*args)
    assert first.exit_code == 0 and "generated the tiny trace" in first.output, first.output
    again = cli(*args)
    assert again.exit_code == 0 and "reusing the tiny trace" in again.output, again.output
    row = [next(line.split()[1:6] for line in r.output.splitlines() if line.startswith("store-on-zns"))
           for r in (first, again)]
    assert row[0] == row[1]


@pytest.mark.parametrize("args, message", [
    (["--runs", "store-on-zns,nope"], "unknown run 'nope'; known: linux-swap, linux-swap-batched"),
    (["--runs", ","], "unknown run '(none)'"),
    (["--budget", "10%"], "records its DRAM budget"),
    (["--model", "default"], "is the 'tiny' preset's trace, not 'default'"),
    (["--utilisation", "1.5"], "utilisation must be within 0.05..0.99"),
    (["--iterations", "3"], "--iterations applies to --generate MODEL"),
    (["--restart"], "--restart applies to --out DIR"),
    (["--op", "0.9"], "--op must be within 0..0.5"),
    (["--erase-block", "lots"], "bad --erase-block 'lots'"),
    (["--erase-block", "100KiB"], "is not a positive multiple of the 49152-byte program unit"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(trace, tmp_path, args, message):
    out = tmp_path / "out"
    keep = [] if "--restart" in args else ["--out", str(out)]
    r = cli("--trace", trace, *keep, "--json", str(tmp_path / "r.json"), *args)
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and r.output.startswith("zswap-host: error: "), r.output
    assert message in r.output
    assert not out.exists() and not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("args, message", [
    (["--generate", "tiny", "--budget", "200%"], "bad DRAM budget '200%'"),
    (["--generate", "tiny", "--budget", "100%"], "nothing would swap"),
    (["--generate", "nope"], "nope"),
])
def test_bad_generate_input_writes_no_trace(tmp_path, args, message):
    r = cli("--trace", str(tmp_path / "t"), *args)
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and message in r.output, r.output
    assert not (tmp_path / "t").exists()


def test_an_npz_without_its_preset_or_budget(synthetic, tmp_path):
    r = cli("--trace", synthetic)
    assert r.exit_code == 2 and "give --model" in r.output and len(r.output.strip().splitlines()) == 1
    bare = str(tmp_path / "bare.npz")
    from zswap_host.workloads import SwapTrace

    t = SwapTrace.load(synthetic)
    SwapTrace(t.ops, t.streams, t.idle_s, t.bounds, t.ids, {"preset": "tiny"}).save(bare)
    r = cli("--trace", bare, "--runs", "store-on-zns")
    assert r.exit_code == 2 and "does not record its DRAM budget; give --budget" in r.output, r.output
    r = cli("--trace", bare, "--runs", "store-on-zns", "--budget", "lots")
    assert r.exit_code == 2 and "bad DRAM budget 'lots'" in r.output and len(r.output.strip().splitlines()) == 1


def test_a_missing_trace_on_the_real_command_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "zswap_host.cli", "replay", "--trace", str(tmp_path / "none")],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": ROOT})
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [f"zswap-host: error: {tmp_path / 'none'}: no such trace (a bench "
                                             f"--trace-out .npz or a chunked trace directory)"]


def test_the_conventional_ssd_takes_the_given_op_and_erase_block(trace, tmp_path):
    """--op and --erase-block build every run's conventional SSD so (and its FDP twin's raw flash from
    it); the JSON records the sizing, a journal keys its rows on them."""
    from zswap_host.replay.runs import run_url

    s = ReplayTrace(trace).sizing(op=0.28, erase_block=6 << 20)
    assert "op=0.28" in s.baseline_url and f"erase_block={6 << 20}" in s.baseline_url
    assert s.devices["conventional_erase_block_bytes"] == 6 << 20
    assert s.devices["conventional_op"] >= 0.28            # GC's blocks per die may raise it, never lower it
    base = ReplayTrace(trace).sizing()
    assert base.devices["conventional_erase_block_bytes"] < 6 << 20   # the bench's: scaled down
    assert "erase_block=" not in run_url("linux-swap-batched", base)
    out = str(tmp_path / "out")
    r = cli("--trace", trace, "--runs", "linux-swap-batched", "--erase-block", "6MiB", "--op", "0.28", "--out", out,
            "--json", str(tmp_path / "r.json"))
    assert r.exit_code == 0, r.output
    got = json.loads((tmp_path / "r.json").read_text())
    assert got["erase_block"] == 6 << 20 and got["op"] == 0.28
    assert "--erase-block 6MiB" in got["command"] and "--op 0.28" in got["command"]
    assert "erase block 6,144 KiB" in r.output
    assert got["runs"][0]["key"]["erase_block"] == 6 << 20
    again = cli("--trace", trace, "--runs", "linux-swap-batched", "--out", out)      # another sizing: runs again
    assert again.exit_code == 0 and "not run again" not in again.output


def test_no_idle_gc_gives_the_windows_to_neither_gc(trace, tmp_path):
    """--no-idle-gc: the conventional SSD has no background GC, the store's GC gets no window, the
    clocks still pass the windows (same compute); the JSON and the journal key record it."""
    from zswap_host.replay.runs import run_url

    s = ReplayTrace(trace).sizing(idle_gc=False)
    assert not s.idle_gc and "idle_gc=1" not in run_url("linux-swap-batched", s)
    assert "idle_gc=1" in run_url("linux-swap-batched", ReplayTrace(trace).sizing())
    out = str(tmp_path / "out")
    r = cli("--trace", trace, "--runs", "store-on-zns,linux-swap-batched", "--no-idle-gc", "--out", out,
            "--json", str(tmp_path / "r.json"))
    assert r.exit_code == 0, r.output
    got = json.loads((tmp_path / "r.json").read_text())
    assert got["idle_gc"] is False and "--no-idle-gc" in got["command"]
    assert all(row["key"]["idle_gc"] is False for row in got["runs"])
    on = cli("--trace", trace, "--runs", "store-on-zns,linux-swap-batched", "--json", str(tmp_path / "on.json"))
    assert on.exit_code == 0, on.output
    base = json.loads((tmp_path / "on.json").read_text())
    for a, b in zip(got["runs"], base["runs"]):
        assert a["compute_s"] == b["compute_s"] and a["pages"] == b["pages"]


def test_suspend_reaches_every_runs_device_and_shortens_no_read(trace, tmp_path):
    """--suspend: every run's SSD (conventional, FDP, ZNS, Open-Channel) suspends programs and erases
    for reads; a read then never waits longer than without, so no run's stall grows; the JSON and the
    journal key record it."""
    from zswap_host.replay.runs import RUNS, run_url

    on, off = ReplayTrace(trace).sizing(suspend=True), ReplayTrace(trace).sizing()
    for name in RUNS:
        assert "suspend=1" in run_url(name, on) and "suspend" not in run_url(name, off), name
    runs = "store-on-zns,linux-swap-batched,store-on-ocssd"
    r = cli("--trace", trace, "--runs", runs, "--suspend", "--out", str(tmp_path / "out"),
            "--json", str(tmp_path / "s.json"))
    assert r.exit_code == 0, r.output
    got = json.loads((tmp_path / "s.json").read_text())
    assert got["suspend"] is True and "--suspend" in got["command"]
    assert all(row["key"]["suspend"] is True for row in got["runs"])
    base = cli("--trace", trace, "--runs", runs, "--json", str(tmp_path / "b.json"))
    assert base.exit_code == 0, base.output
    plain = json.loads((tmp_path / "b.json").read_text())
    assert plain["suspend"] is False
    for a, b in zip(got["runs"], plain["runs"]):
        assert a["pages"] == b["pages"] and a["stall_s"] <= b["stall_s"] + 1e-9, (a["run"], a["stall_s"], b["stall_s"])


def test_a_window_goes_where_on_idle_says():
    """workloads.replay: an idle window calls on_idle instead of backend.idle when given."""
    from zswap_host.workloads.trace import IDLE, SwapTrace, replay

    class Backend:
        page_size = 4096

        def idle(self, s):
            raise AssertionError("backend.idle called")

    t = SwapTrace(np.array([IDLE, IDLE], np.uint8), np.zeros(2, np.int32), np.array([0.5, 0.25]),
                  np.zeros(3, np.int64), np.zeros(0, np.int64), {})
    seen = []
    replay(Backend(), t, on_idle=seen.append)
    assert seen == [0.5, 0.25]
