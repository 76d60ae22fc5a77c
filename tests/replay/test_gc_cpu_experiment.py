"""``experiments/gc_cpu.py``: the store's GC CPU counted around a replay that fills the SSD (tiny
preset at 95%: GC at work in a few seconds), one row per store run (each replayed without and with
the timers), Linux runs refused."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "experiments", "gc_cpu.py")


def _run(tmp_path, *args):
    return subprocess.run([sys.executable, SCRIPT, "--trace", str(tmp_path / "trace"), "--preset", "tiny",
                           "--budget", "50%", "--iterations", "300", *args], capture_output=True, text=True)


def test_gc_cpu_counts_the_collectors_work(tmp_path):
    out = tmp_path / "gc.json"
    p = _run(tmp_path, "--runs", "store-on-zns,store-on-conventional", "--out", str(out))
    assert p.returncode == 0, p.stderr
    res = json.loads(out.read_text())
    assert [r["run"] for r in res["runs"]] == ["store-on-zns", "store-on-conventional"]
    assert res["utilisation"] == 0.95 and res["trace"]["iterations"] == 300
    for r in res["runs"]:
        # GC ran (its entry points were timed) and relocated what the store counts as GC writes
        assert r["gc_entries"] > 0 and r["store_gc_mib"] > 0
        assert r["relocated_gib"] == round(r["store_gc_mib"] / 1024, 2)
        # the GC split comes from the replay with the timers, the pages per CPU s from the one without
        assert 0 <= r["gc_device_cpu_s"] <= r["gc_cpu_s"] <= r["timed_cpu_s"] + 0.1
        assert r["timed_pages_per_cpu_s"] > 0 and r["gc_share_of_cpu"] == round(r["gc_cpu_s"] / r["timed_cpu_s"], 3)
        assert r["gc_pick_cpu_s"] <= r["gc_cpu_s"] and r["gc_reset_cpu_s"] <= r["gc_cpu_s"]
        assert r["modeled_time_s"] == round(r["stall_s"] + r["compute_s"], 3)
        assert r["pages_per_cpu_s"] > 0


def test_linux_runs_are_refused(tmp_path):
    p = _run(tmp_path, "--runs", "linux-swap-batched")
    assert p.returncode == 2 and "no store GC" in p.stderr and "Traceback" not in p.stderr


def test_replay_cpu_ab_refuses_a_missing_trace(tmp_path):
    """``experiments/replay_cpu_ab.py`` (this commit against an older one, replay by replay): a trace
    directory without a trace is one line, exit 2, before any worktree is made."""
    ab = os.path.join(ROOT, "experiments", "replay_cpu_ab.py")
    p = subprocess.run([sys.executable, ab, "--trace", str(tmp_path / "none"), "--base", "HEAD"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "no trace" in p.stderr and "Traceback" not in p.stderr
