"""The published-ZNS-study reproduction (zswap-host characterize --study zns)."""
import csv
import json

import pytest
from click.testing import CliRunner

from zswap_host.characterize_zns import PUBLISHED_CSV, _Study, format_table, load_published, run
from zswap_host.cli import main
from zswap_host.ssdsim import get_preset

EXPERIMENTS = {"size_sweep", "qd_sweep", "zone_sweep", "zone_sweep_bw", "read_qd", "read_under_writes", "reset",
               "finish"}


@pytest.fixture(scope="module")
def quick_result():
    return run("zn540", quick=True)


def test_published_data_has_a_source_for_every_point():
    rows = load_published()
    assert {r["experiment"] for r in rows} == EXPERIMENTS
    for r in rows:
        assert r["value"] > 0 and r["unit"] and r["metric"]     # a zero would leave the error undefined
        assert r["source"].startswith("github.com/stonet-research/NVMeBenchmarks@") and r["field"]
        assert "Doekemeijer" in r["paper"]
    with open(PUBLISHED_CSV, newline="") as f:
        assert len(list(csv.DictReader(f))) == len(rows)


def test_every_point_has_paper_and_model_values(quick_result):
    pts, rows = quick_result["points"], load_published()
    assert len(pts) == len(rows) == quick_result["n_points"]
    for p, r in zip(pts, rows):             # each published point, in order, beside its modeled value
        assert (p["experiment"], p["op"], p["metric"], p["source"], p["paper"]) == \
            (r["experiment"], r["op"], r["metric"], r["source"], r["value"])
        # every experiment ran and gave a throughput, a rate or a latency (a finish pads the zone)
        assert p["model"] > 0 and p["role"] == r["role"], p
    assert quick_result["clock"] == "modeled"
    assert quick_result["within_tolerance"] == sum(p["within_tolerance"] for p in pts)
    table = format_table(quick_result)
    assert table.count("\n") >= len(pts)
    assert f"{quick_result['within_tolerance']} of {len(pts)} points within ±15%" in table


def test_error_is_relative_to_the_paper_and_judged_at_15_percent(tmp_path):
    """Published data made up around a value known by hand (resetting an empty zone costs only the
    command): the paper says 10% more, or less by a factor 1.14, 1.16 and 1.25."""
    cmd_ms = get_preset("zn540").cmd_overhead_us / 1e3
    row = next(r for r in csv.DictReader(open(PUBLISHED_CSV, newline=""))
               if r["experiment"] == "reset" and r["occupancy_pct"] and float(r["occupancy_pct"]) == 0)
    path = tmp_path / "made_up.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row))
        w.writeheader()
        for paper in (cmd_ms * 1.1, cmd_ms / 1.14, cmd_ms / 1.16, cmd_ms / 1.25):
            w.writerow({**row, "value": repr(paper)})
    pts = run("zn540", quick=True, published=path)["points"]
    assert [p["model"] for p in pts] == pytest.approx([cmd_ms] * 4)
    # model 1, paper 1.1: 1/1.1 - 1 = -9.1%; paper 1/1.14: +14%; 1/1.16: +16%; 1/1.25: +25%
    assert [p["error"] for p in pts] == pytest.approx([-1 / 11, 0.14, 0.16, 0.25])
    assert [p["within_tolerance"] for p in pts] == [True, True, False, False]


def test_modeled_values_follow_the_model(quick_result):
    """Deterministic modeled-clock facts, from the preset's parameters (docs/ssd-model.md)."""
    p = get_preset("zn540")
    c = p.controller
    by = {(q["experiment"], q["op"], q["bs_kib"], q["qd"], q["zones"], q["write_rate_mib_s"], q["occupancy_pct"]): q
          for q in quick_result["points"]}
    # one 4 KiB write at QD 1: the command latency, then the controller's time or the data's transfer,
    # whichever is longer; the write path's share bounds it from below
    w_us = max(p.cmd_overhead_us + max(c.ctrl_write_us, 4096 / c.write_link_mb_s), 4096 / c.write_path_mb_s)
    w4 = by[("size_sweep", "write", 4, 1, 1, 0, None)]["model"]
    assert w4 == pytest.approx(4096 / (w_us * 1e-6) / (1 << 20), rel=0.02)
    # an append: its own controller time, and its latency over a write's
    a_us = p.cmd_overhead_us + max(c.ctrl_append_us, 4096 / c.write_link_mb_s) + c.t_append_us
    assert by[("size_sweep", "append", 4, 1, 1, 0, None)]["model"] == \
        pytest.approx(4096 / (a_us * 1e-6) / (1 << 20), rel=0.02)
    # deep queues of 4 KiB appends reach the append command ceiling, no more
    assert by[("qd_sweep", "append", 4, 64, 1, 0, None)]["model"] == pytest.approx(1e3 / c.ctrl_append_us, rel=0.01)
    # large writes reach the write path's ceiling, on one zone or eight
    for zones in (1, 8):
        assert by[("zone_sweep_bw", "write", 128, 1, zones, 0, None)]["model"] == \
            pytest.approx(c.write_path_mb_s * 1e6 / (1 << 20), rel=0.02)
    # an idle 4 KiB random read: command + controller + tR + channel + link
    lat = by[("read_under_writes", "randread", 4, 1, 1, 0, None)]["model"]
    expect = p.cmd_overhead_us + c.ctrl_read_us + p.t_read_us + 4096 / p.channel_mb_s + 4096 / p.host_link_mb_s
    assert lat == pytest.approx(expect, rel=0.05)
    # concurrent writes make reads wait behind programs
    assert by[("read_under_writes", "randread", 4, 1, 1, 1000, None)]["model"] > lat
    # a written zone's reset: the drive's cost by the MiB it holds (the erases run on behind it)
    mib = 1077
    assert by[("reset", "reset", None, None, None, None, 100.0)]["model"] == pytest.approx(
        (p.cmd_overhead_us + c.t_reset_written_us + c.reset_us_per_mib * mib ** c.reset_exponent) / 1e3, rel=0.01)
    # resetting an empty zone costs only the command
    assert by[("reset", "reset", None, None, None, None, 0.0)]["model"] == pytest.approx(p.cmd_overhead_us / 1e3)
    # a finish pads the rest of the zone through the write path: half a zone at its rate
    half = p.zone_capacity / 2
    assert by[("finish", "finish", None, None, None, None, 50.0)]["model"] == \
        pytest.approx(half / (c.write_path_mb_s * 1e6) * 1e3, rel=0.05)


def test_roles_are_declared_and_the_fit_sees_calibrate_points_only():
    rows = load_published()
    held = [r for r in rows if r["role"] == "held_out"]
    assert 2 * len(held) >= len(rows)                          # at least half held out
    assert {r["experiment"] for r in held} == EXPERIMENTS      # in every experiment
    cal = run("zn540", quick=True, roles=("calibrate",))
    assert {p["role"] for p in cal["points"]} == {"calibrate"}
    assert cal["n_points"] == len(rows) - len(held)
    # the same measurement (one source file and field) has one role
    role: dict = {}
    for r in rows:
        assert role.setdefault((r["source"], r["field"], r["metric"]), r["role"]) == r["role"]


def test_accuracy_is_reported_per_role(quick_result):
    by_role = quick_result["by_role"]
    assert set(by_role) == {"calibrate", "held_out"}
    assert sum(a["n_points"] for a in by_role.values()) == quick_result["n_points"]
    for role, a in by_role.items():
        pts = [p for p in quick_result["points"] if p["role"] == role]
        assert a["within_tolerance"] == sum(p["within_tolerance"] for p in pts)
    assert "held out points:" in format_table(quick_result)


def test_run_is_deterministic():
    a = run("zn540", quick=True)
    b = run("zn540", quick=True)
    assert [p["model"] for p in a["points"]] == [p["model"] for p in b["points"]]


def test_study_recycles_zones():
    st = _Study("zn540", quick=True)
    n = st.model.nr_zones
    assert st.fill(2) == [0, 1] and st.model.zone_written(0) > 0 and st.model.zone_written(1) > 0
    assert st.zones(n - 2) == list(range(2, n))          # fresh zones in turn, none handed out twice
    # none left: every written zone is reset before the numbering starts over
    assert st.zones(2) == [0, 1]
    assert st.model.zone_written(0) == 0 and st.model.zone_written(1) == 0


def test_cli_zns_study_writes_json_and_plot(tmp_path):
    out = tmp_path / "zns.json"
    r = CliRunner().invoke(main, ["characterize", "--study", "zns", "--preset", "zn540", "--quick", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "paper" in r.output and "model" in r.output and "within ±15%" in r.output
    assert r.output.count("characterize: zns study done (1/1, ") == 1      # off a terminal: one progress line
    data = json.loads(out.read_text())
    assert data["study"] == "zns" and data["preset"] == "zn540"
    assert all({"paper", "model", "error"} <= set(p) for p in data["points"])
    assert (tmp_path / "zns.png").stat().st_size > 0


@pytest.mark.parametrize("args, msg", [
    (["--study", "zns", "--preset", "nope"], "unknown SSD preset"),
    (["--study", "zns", "--device", "emu://"], "--device applies to --study thesis"),
    (["--study", "bogus"], "bogus"),
])
def test_cli_bad_input_exits_2_with_one_line(args, msg):
    r = CliRunner().invoke(main, ["characterize", *args])
    assert r.exit_code == 2
    err = r.output.strip().splitlines()
    assert msg in r.output
    assert "Traceback" not in r.output
    if args[1] != "bogus":            # click's own usage error prints usage lines; ours print exactly one
        assert len(err) == 1
