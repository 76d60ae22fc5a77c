"""The published conventional-drive study (zswap-host characterize --study conv)."""
import csv
import json

import pytest
from click.testing import CliRunner

from zswap_host.characterize_common import issue_times, summarize
from zswap_host.characterize_conv import DEFAULT_PRESET, PUBLISHED_CSV, format_table, load_published, run
from zswap_host.cli import main
from zswap_host.ssdsim import get_preset

EXPERIMENTS = {"seq_write", "rand_write", "read_qd", "read_under_writes", "gc_steady"}


@pytest.fixture(scope="module")
def quick_result():
    return run(DEFAULT_PRESET, quick=True)


def test_published_points_load_with_a_role_and_a_source_each():
    rows = load_published()
    assert {r["experiment"] for r in rows} == EXPERIMENTS
    for r in rows:
        assert r["value"] > 0 and r["unit"] and r["metric"]
        assert r["role"] in ("calibrate", "held_out")
        assert r["source"].startswith("github.com/stonet-research/NVMeBenchmarks@") and r["field"]
        assert "Doekemeijer" in r["paper"]
    held = [r for r in rows if r["role"] == "held_out"]
    assert 2 * len(held) >= len(rows)                      # at least half held out
    for exp in EXPERIMENTS:                                 # ... and every experiment has both roles
        assert {r["role"] for r in rows if r["experiment"] == exp} == {"calibrate", "held_out"}
    with open(PUBLISHED_CSV, newline="") as f:
        assert len(list(csv.DictReader(f))) == len(rows)


def test_a_row_without_a_role_is_refused(tmp_path):
    rows = list(csv.DictReader(open(PUBLISHED_CSV, newline="")))
    path = tmp_path / "bad.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerow({**rows[0], "role": ""})
    with pytest.raises(ValueError, match="role"):
        load_published(path)


def test_quick_study_reports_every_point_and_both_sets(quick_result):
    pts, rows = quick_result["points"], load_published()
    assert len(pts) == len(rows) == quick_result["n_points"]
    for p, r in zip(pts, rows):
        assert (p["experiment"], p["metric"], p["source"], p["paper"], p["role"]) == \
            (r["experiment"], r["metric"], r["source"], r["value"], r["role"])
        assert p["model"] > 0
        assert p["error"] == pytest.approx(p["model"] / p["paper"] - 1)
    assert quick_result["clock"] == "modeled" and quick_result["preset"] == DEFAULT_PRESET
    for role in ("calibrate", "held_out"):
        s = quick_result[role]
        sel = [p for p in pts if p["role"] == role]
        assert s["n_points"] == len(sel) > 0
        assert s["within_tolerance"] == sum(p["within_tolerance"] for p in sel)
        assert 0 <= s["median_abs_error"]
    table = format_table(quick_result)
    assert "calibrate:" in table and "held_out :" in table
    assert quick_result["gc"]["write_amplification"] > 1           # GC ran: the steady state relocates data


def test_the_model_runs_at_the_drive_geometry_with_the_real_erase_block(quick_result):
    g, p = quick_result["geometry"], get_preset(DEFAULT_PRESET)
    assert g["erase_block_bytes"] == p.block_bytes                 # not scaled down, even on the quick drive
    assert g["dies"] == p.n_dies and g["op"] == p.conv_op


def test_summary_and_issue_times_by_hand():
    pts = [{"role": "calibrate", "error": 0.1}, {"role": "calibrate", "error": -0.3},
           {"role": "held_out", "error": 0.05}]
    s = summarize(pts, 0.15)
    assert s["calibrate"] == {"n_points": 2, "within_tolerance": 1, "median_abs_error": pytest.approx(0.2)}
    assert s["held_out"]["within_tolerance"] == 1 and s["all"]["n_points"] == 3
    # qd 2: requests 0 and 1 at t0; request 2 when the first completes (1.0), request 3 at the next (2.0)
    assert list(issue_times(__import__("numpy").array([1.0, 2.0, 3.0, 4.0]), 2, 0.0)) == [0.0, 0.0, 1.0, 2.0]


def test_cli_characterize_study_conv_json(tmp_path):
    out = tmp_path / "conv.json"
    r = CliRunner().invoke(main, ["characterize", "--study", "conv", "--quick", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "held_out" in r.output and "calibrate" in r.output
    assert r.output.count("characterize: conv study done (1/1, ") == 1     # off a terminal: one progress line
    d = json.loads(out.read_text())
    assert d["study"] == "conv" and d["preset"] == DEFAULT_PRESET
    assert d["held_out"]["n_points"] + d["calibrate"]["n_points"] == d["n_points"]
    r = CliRunner().invoke(main, ["characterize", "--study", "conv", "--quick", "--device", "emu-conv://?size=1GiB"])
    assert r.exit_code != 0 and "--device" in r.output
