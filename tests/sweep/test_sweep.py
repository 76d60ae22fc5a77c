"""``zswap-host sweep`` (``zswap_host/sweep``): the grid, one pure function per point, the serial and
the Ray executor giving identical CSVs, determinism by seed, retries of failed points, a point that
keeps failing named, and the command's one-line errors. One local Ray session (2 CPUs) for the module;
a tiny generated trace."""

import csv
import json
import os
import subprocess
import sys

import pytest
import ray
from click.testing import CliRunner

from zswap_host.cli import main
from zswap_host.sweep import Point, SweepError, make_grid, parse_utilisations, run_point, run_serial
from zswap_host.sweep.output import write_csv
from zswap_host.sweep.point import FAULTS_ENV
from zswap_host.sweep.ray_executor import run_ray
from zswap_host.workloads import generate_dlrm_trace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRID = dict(placements=["temporal", "hotness"], victims=["greedy", "fifo"], utilisations=[0.75, 0.95],
            interfaces=["zns", "conventional"])
CLI_GRID = ["--placement", "temporal,hotness", "--victim", "greedy,fifo", "--utilisation", "0.75,95%",
            "--interface", "zns,conventional"]
ROW_KEYS = ["placement", "victim", "utilisation", "interface", "seed", "tables_over_usable", "stall_s",
            "write_amplification", "store_gc_mib", "device_gc_mib", "swap_in_p99_us", "erase_blocks", "erases",
            "wear_max_over_mean", "wear_cv"]


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return generate_dlrm_trace(str(tmp_path_factory.mktemp("trace") / "tiny"), "tiny").path


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    """The failure-injection directory, in the environment before Ray starts (its workers inherit it)."""
    d = str(tmp_path_factory.mktemp("faults"))
    old = os.environ.get(FAULTS_ENV)
    os.environ[FAULTS_ENV] = d
    yield d
    if old is None:
        os.environ.pop(FAULTS_ENV, None)
    else:
        os.environ[FAULTS_ENV] = old


@pytest.fixture(scope="module")
def ray_session(faults):
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             object_store_memory=100 << 20)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def serial_rows(trace):
    return run_serial(make_grid(**GRID), trace)


def _fail_point(faults: str, point: Point, times: int) -> str:
    path = os.path.join(faults, point.key + ".fail")
    with open(path, "w") as f:
        f.write(str(times))
    return path


def test_grid_is_the_sorted_product_with_stable_keys():
    pts = make_grid(["hotness", "temporal"], ["greedy"], [0.9, 0.75, 0.9], ["zns", "conventional"])
    assert len(pts) == 8 and pts == sorted(pts)
    assert pts[0] == Point("hotness", "greedy", 0.75, "conventional")
    assert pts[0].key == "hotness.greedy.u0.75.conventional"
    assert len({p.key for p in pts}) == 8
    assert parse_utilisations("0.5, 90%") == [0.5, 0.9]
    for bad in (dict(placements=["nope"]), dict(victims=["lru"]), dict(interfaces=["nvme"]),
                dict(utilisations=[1.0]), dict(utilisations=[float("nan")]), dict(placements=[])):
        with pytest.raises(SweepError):
            make_grid(**{**GRID, **bad})
    with pytest.raises(SweepError, match="known: single, temporal, stream, hotness"):
        make_grid(**{**GRID, "placements": ["nope"]})
    with pytest.raises(SweepError, match="bad utilisation"):
        parse_utilisations("0.5,x")


def test_a_point_is_a_pure_function(trace, serial_rows):
    p = Point("hotness", "greedy", 0.95, "conventional")
    row = run_point(p, trace, seed=0)
    assert list(row) == ROW_KEYS
    assert row == run_point(p, trace, seed=0) == next(r for r in serial_rows if Point(**{
        k: r[k] for k in ("placement", "victim", "utilisation", "interface")}) == p)
    assert row["store_gc_mib"] > 0 and row["erases"] > 0      # the tiny grid's high end does collect
    assert len({(r["write_amplification"], r["store_gc_mib"]) for r in serial_rows}) > 2


def test_the_replay_is_interfaces_replay_s(trace, tmp_path):
    """The sweep measures a point as experiments/interfaces_replay.py measures its runs (same function)."""
    sys.path.insert(0, os.path.join(ROOT, "experiments"))
    from interfaces_replay import run_one

    from zswap_host.bench import BenchSpec, plan
    from zswap_host.bench.same_flash import interface_urls
    from zswap_host.workloads import ChunkedTrace

    npz = str(tmp_path / "t.npz")
    ChunkedTrace(trace).whole().save(npz)
    urls = interface_urls(plan(BenchSpec(preset="tiny", utilisation=0.95, lookahead=0)))
    old = run_one((npz, "tiny", 0.95, "zns", "store", urls, 0, "tiny"))
    new = run_point(Point("temporal", "greedy", 0.95, "zns"), trace)
    assert {k: old[k] for k in ROW_KEYS[5:]} == {k: new[k] for k in ROW_KEYS[5:]}


def test_serial_and_ray_give_identical_csvs(trace, ray_session, serial_rows, tmp_path):
    done = []
    rows = run_ray(make_grid(**GRID), trace, progress=lambda d, n, p: done.append((d, n)))
    assert done[-1] == (16, 16) and len(done) == 16
    write_csv(serial_rows, str(tmp_path / "serial.csv"))
    write_csv(rows, str(tmp_path / "ray.csv"))
    assert (tmp_path / "serial.csv").read_bytes() == (tmp_path / "ray.csv").read_bytes()
    # and through the command: the same CSV from both executors (Ray: this module's session)
    for ex in ("ray", "serial"):
        r = CliRunner().invoke(main, ["sweep", "--trace", trace, *CLI_GRID, "--executor", ex,
                                      "--out", str(tmp_path / ex)])
        assert r.exit_code == 0, r.output
    assert (tmp_path / "ray" / "sweep.csv").read_bytes() == (tmp_path / "serial" / "sweep.csv").read_bytes() \
        == (tmp_path / "serial.csv").read_bytes()
    assert (tmp_path / "ray" / "sweep.png").stat().st_size > 0


def test_deterministic_by_seed(tmp_path):
    def csv(seed: int, name: str) -> bytes:
        r = CliRunner().invoke(main, ["sweep", "--generate", "tiny", "--iterations", "10", "--trace",
                                      str(tmp_path / f"trace-{name}"), "--placement", "temporal", "--victim",
                                      "greedy", "--utilisation", "0.95", "--interface", "conventional",
                                      "--executor", "serial", "--seed", str(seed), "--out", str(tmp_path / name)])
        assert r.exit_code == 0, r.output
        return (tmp_path / name / "sweep.csv").read_bytes()

    a, b, c = csv(0, "a"), csv(0, "b"), csv(1, "c")
    assert a == b
    assert a != c and a.splitlines()[1].split(b",")[5:] != c.splitlines()[1].split(b",")[5:]


def test_a_failed_point_is_retried(trace, ray_session, faults, serial_rows):
    grid = make_grid(**GRID)
    p = grid[5]
    marker = _fail_point(faults, p, 2)
    rows = run_ray(grid, trace, retries=2)
    assert open(marker).read() == "0"          # both injected failures happened, then it ran
    assert rows == serial_rows
    _fail_point(faults, p, 1)
    assert run_serial(grid[4:6], trace, retries=1) == serial_rows[4:6]
    os.remove(marker)


def test_a_point_that_keeps_failing_stops_the_sweep_named(trace, ray_session, faults, tmp_path):
    grid = make_grid(**GRID)
    p = grid[3]
    marker = _fail_point(faults, p, -1)
    try:
        with pytest.raises(SweepError, match=rf"point {p.key} failed after 1 retries: InjectedFault") as e:
            run_ray(grid, trace, retries=1)
        assert e.value.point == p
        with pytest.raises(SweepError, match=rf"point {p.key} failed after 0 retries"):
            run_serial(grid, trace, retries=0)
        r = CliRunner().invoke(main, ["sweep", "--trace", trace, *CLI_GRID, "--executor", "serial",
                                      "--retries", "0", "--out", str(tmp_path / "out")])
        assert r.exit_code == 2 and p.key in r.output
        assert not (tmp_path / "out").exists()
    finally:
        os.remove(marker)


@pytest.mark.parametrize("args, message", [
    (["--placement", "temporal,nope"], "unknown placement 'nope'; known: single, temporal, stream, hotness"),
    (["--victim", "lru"], "unknown victim 'lru'; known: cost-benefit, fifo, greedy"),
    (["--interface", "zns,nvme"], "unknown interface 'nvme'; known: conventional, fdp, zns, ocssd"),
    (["--utilisation", "0.9,1.2"], "utilisation must be within 0.05..0.99"),
    (["--utilisation", "lots"], "bad utilisation 'lots'"),
    (["--iterations", "3"], "--iterations and --budget apply to --generate"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(trace, tmp_path, args, message):
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["sweep", "--trace", trace, "--executor", "serial", "--out", str(out), *args])
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [f"zswap-host: error: {message}"] or \
        (len(r.output.strip().splitlines()) == 1 and message in r.output)
    assert not out.exists()


def test_missing_trace_and_missing_ray(tmp_path):
    r = CliRunner().invoke(main, ["sweep", "--trace", str(tmp_path / "none"), "--executor", "serial",
                                  "--out", str(tmp_path / "out")])
    assert r.exit_code == 2 and "no such trace" in r.output and not (tmp_path / "out").exists()
    code = ("import sys; sys.modules['ray'] = None\n"
            "from zswap_host.cli import main\n"
            f"main(['sweep', '--trace', {str(tmp_path / 'none')!r}, '--out', {str(tmp_path / 'out')!r}])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": ROOT})
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        "zswap-host: error: the Ray executor needs Ray: pip install ray==2.60.0 (or --executor serial)"]
    assert not (tmp_path / "out").exists()


def _blocks(output: str) -> dict[str, list[str]]:
    """The sweep's printed tables: title -> its lines (header, rule, rows), up to the blank line."""
    blocks, title = {}, None
    for line in output.splitlines():
        if title is None:
            if line and not line.startswith(("sweep:", "zswap-host")):
                title, blocks[line] = line, []
        elif line == "":
            title = None
        else:
            blocks[title].append(line)
    return blocks


def test_the_table_keeps_the_given_order_aligned_with_deltas(trace, tmp_path):
    """Victims as columns and utilisations as rows in the command line's order (not sorted), every
    line of a table on the same column starts, the deltas those of the CSV's values, and each point's
    wall time and pages/s; off a terminal one progress line per point."""
    r = CliRunner().invoke(main, ["sweep", "--trace", trace, "--placement", "temporal", "--victim", "greedy,fifo",
                                  "--utilisation", "0.95,0.75", "--interface", "zns,conventional",
                                  "--executor", "serial", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    blocks = _blocks(r.output)
    waf = next(v for k, v in blocks.items() if k.startswith("write amplification"))
    head, rule, *body = waf
    assert head.split() == ["interface", "placement", "util", "greedy", "fifo", "vs", "greedy"]
    body = [b for b in body if not b.startswith("WAF below 1")]
    assert len({len(line) for line in [head, rule, *body]}) == 1          # right-aligned numbers: one width
    for col in ("greedy", "fifo"):                                        # each column's cells end under its name
        end = head.index(col) + len(col)
        assert all(line[end - 1] != " " and (end == len(line) or line[end] == " ") for line in body)
    cells = [line.split() for line in body]
    assert [c[-4] for c in cells] == ["0.95", "0.75", "0.95", "0.75"]
    assert [c[0] for c in cells if len(c) == 6] == ["zns", "conventional"]
    rows = {(x["interface"], float(x["utilisation"]), x["victim"]): x
            for x in csv.DictReader(open(tmp_path / "o" / "sweep.csv"))}
    for c, (iface, u) in zip(cells, [("zns", 0.95), ("zns", 0.75), ("conventional", 0.95), ("conventional", 0.75)]):
        g, f = (float(rows[(iface, u, v)]["write_amplification"]) for v in ("greedy", "fifo"))
        assert c[-3:-1] == [f"{g:.3f}", f"{f:.3f}"]
        assert c[-1] == (f"{(f - g) / g * 100:+.1f}%" if g else "+0")
    timing = blocks["wall time and pages/s per point (this machine)"]
    assert timing[0].split()[-2:] == ["greedy", "fifo"] and len(timing) == 2 + 4
    assert all(line.count("/s") == 2 for line in timing[2:])
    summary = json.loads((tmp_path / "o" / "sweep.json").read_text())
    assert len(summary["point_timing"]) == 8 and all(t["pages_per_s"] > 0 for t in summary["point_timing"].values())
    assert "--placement temporal --victim greedy,fifo --utilisation 0.95,0.75 --interface zns,conventional" \
        in summary["command"]
    assert len([line for line in r.output.splitlines() if line.startswith("sweep: ")]) == 8
    assert "fifo," not in r.output.splitlines()[0]       # no old CSV-like line


def test_old_option_names_still_work_with_one_line_each(trace, tmp_path):
    old = CliRunner().invoke(main, ["sweep", "--trace", trace, "--placements", "temporal", "--victims", "greedy",
                                    "--utilisations", "0.95", "--interfaces", "zns", "--preset", "tiny",
                                    "--executor", "serial", "--quiet", "--out", str(tmp_path / "old")])
    new = CliRunner().invoke(main, ["sweep", "--trace", trace, "--placement", "temporal", "--victim", "greedy",
                                    "--utilisation", "0.95", "--interface", "zns", "--model", "tiny",
                                    "--executor", "serial", "--quiet", "--out", str(tmp_path / "new")])
    assert old.exit_code == 0 and new.exit_code == 0, old.output + new.output
    for o, n in (("--placements", "--placement"), ("--victims", "--victim"), ("--utilisations", "--utilisation"),
                 ("--interfaces", "--interface"), ("--preset", "--model")):
        assert old.output.count(f"zswap-host sweep: {o} is deprecated, use {n}\n") == 1
    assert "deprecated" not in new.output and "sweep: " not in new.output       # --quiet: no progress lines
    assert (tmp_path / "old" / "sweep.csv").read_bytes() == (tmp_path / "new" / "sweep.csv").read_bytes()


def test_the_progress_starts_before_the_first_point(trace):
    from zswap_host.sweep import SweepSpec, run_sweep

    calls = []
    spec = SweepSpec(trace=trace, placements=("temporal",), victims=("greedy",), utilisations=(0.95, 0.75),
                     interfaces=("zns",), executor="serial")
    s = run_sweep(spec, lambda d, n, p: calls.append((d, n, p and p.key)))
    assert calls[0] == (0, 2, None) and [c[0] for c in calls] == [0, 1, 2]
    assert sorted(s["point_timing"]) == sorted(c[2] for c in calls[1:])
