"""The torch-free page trace generator (``workloads/trace_gen.py``), its chunked trace files and the
MLPerf-size replay experiment (``experiments/mlperf_replay.py``) at the tiny preset."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from zswap_host.workloads import ChunkedTrace, CriteoSynth, TraceFileError, TraceGenError, generate_dlrm_trace
from zswap_host.workloads.criteo import data_preset

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("ops", "streams", "bounds", "ids", "idle_s"))


def test_indices_are_the_batches_indices():
    s = CriteoSynth(data_preset("tiny"))
    rng = s.batch_rng(5)
    for b in s.batches(3, 64, seed=5):
        assert np.array_equal(s.indices(rng, 64), b.sparse)


def test_deterministic_by_seed_and_independent_of_chunking(tmp_path):
    a = generate_dlrm_trace(str(tmp_path / "a"), "tiny", chunk_iterations=3)
    b = generate_dlrm_trace(str(tmp_path / "b"), "tiny", chunk_iterations=100)
    c = generate_dlrm_trace(str(tmp_path / "c"), "tiny", chunk_iterations=3, seed=1)
    assert len(a) == 7 and len(b) == 1
    assert _same(a.whole(), b.whole())
    assert not _same(a.whole(), c.whole())
    assert a.counts()["swap_in_pages"] == a.whole().counts()["swap_in_pages"] > 0


def test_bad_input_and_unfinished_traces(tmp_path):
    with pytest.raises(TraceGenError, match="compute"):
        generate_dlrm_trace(str(tmp_path / "m"), "mlperf", iterations=1)
    with pytest.raises(TraceGenError, match="unknown training preset"):
        generate_dlrm_trace(str(tmp_path / "m"), "nope")
    with pytest.raises(TraceFileError, match="not a chunked trace"):
        ChunkedTrace(str(tmp_path / "nothing"))
    tr = generate_dlrm_trace(str(tmp_path / "t"), "tiny")
    m = json.load(open(os.path.join(tr.path, "trace.json")))
    m["complete"] = False
    json.dump(m, open(os.path.join(tr.path, "trace.json"), "w"))
    with pytest.raises(TraceFileError, match="not finished"):
        ChunkedTrace(tr.path)


@pytest.mark.parametrize("lookahead", [0, 1])
def test_equals_the_bench_trace_and_replays_to_its_numbers(tmp_path, lookahead):
    """The generated trace is the one ``bench --trace-out`` records (tiny, store-on-zns, the same
    lookahead), and replaying it on payload-free devices gives that run's stall and write
    amplification."""
    pytest.importorskip("torch")
    from zswap_host.bench import BenchSpec, run_bench
    from zswap_host.workloads import SwapTrace

    from zswap_host.replay import ReplayTrace, replay_run

    rec = str(tmp_path / "rec.npz")
    rep = run_bench(BenchSpec(preset="tiny", lookahead=lookahead, runs=("store-on-zns",), jobs=1, trace_out=rec))
    gen = generate_dlrm_trace(str(tmp_path / "gen"), "tiny", chunk_iterations=6, lookahead=lookahead)
    assert _same(SwapTrace.load(rec), gen.whole())
    row = replay_run("store-on-zns", gen.path, "tiny", ReplayTrace(gen.path).sizing())
    bench = rep["runs"][-1]
    assert row["stall_s"] == pytest.approx(bench["io_stall_time_s"], abs=1e-4)
    assert row["write_amplification"] == pytest.approx(bench["write_amplification"], abs=1e-4)


def _cli(*args, cwd):
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, os.path.join(ROOT, "experiments", "mlperf_replay.py"), *args],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def test_replay_experiment_resumes_and_refuses_bad_input(tmp_path):
    out = str(tmp_path / "out")
    r = _cli("--preset", "tiny", "--budget", "25%", "--runs", "store-on-zns,linux-swap-batched", "--out", out,
             "--json", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert [x["run"] for x in res["runs"]] == ["store-on-zns", "linux-swap-batched"]
    assert all(x["pages_per_s"] > 0 and x["peak_rss_mib"] > 0 for x in res["runs"])
    assert "pages/s" in r.stderr                                  # progress
    again = _cli("--preset", "tiny", "--budget", "25%", "--runs", "store-on-zns,linux-swap-batched", "--out", out,
                 "--json", cwd=str(tmp_path))
    assert again.returncode == 0 and "done before" in again.stderr and "chunk" not in again.stderr
    assert json.loads(again.stdout)["runs"] == res["runs"]
    for bad in (["--runs", "nope"], ["--preset", "nope"], ["--budget", "200%"],
                ["--preset", "mlperf", "--iterations", "1"]):
        r = _cli(*bad, "--out", out, cwd=str(tmp_path))
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, (bad, r.stderr)
