"""Sharded training (zswap_host.distributed): the shard plan, first touch of a shard equal to the whole
tables', and 2 ranks on gloo (127.0.0.1, a free port) training the tiny preset to the 1-rank losses —
DRAM only with a row-split table, and with each rank's shards in a store on its own emulated ZNS
device — and a failing rank stopping the job with its rank named. No timing thresholds."""

import json

import numpy as np
import pytest

from zswap_host.distributed import DistSpec, RankFailed, plan_shards, run_distributed
from zswap_host.distributed.sharding import page_layout
from zswap_host.workloads.criteo import TINY_TABLES
from zswap_host.workloads.paged_embedding import PagedEmbedding

ITER = 6
# a device of its own per rank: 30 zones for rank 0, 31 for rank 1 (the template at work)
ZNS = "emu://?zones=3{rank}&zone_size=1048576&zone_capacity=786432&preset=thesis-ssd"
TIMEOUT = 600


@pytest.fixture(scope="module")
def one_rank_loss():
    from zswap_host.torch.training import train
    return train("tiny", "tiny", None, 1.0, ITER, 64, 0).loss


def _covers(plan):
    got = sorted((s.table, s.lo, s.hi) for shards in plan.by_rank for s in shards)
    by_table: dict = {}
    for t, lo, hi in got:
        by_table.setdefault(t, []).append((lo, hi))
    assert sorted(by_table) == list(range(len(TINY_TABLES)))
    for t, parts in by_table.items():      # every row of every table on exactly one rank
        assert parts[0][0] == 0 and parts[-1][1] == TINY_TABLES[t]
        assert all(a[1] == b[0] for a, b in zip(parts, parts[1:]))


def test_plan_table_wise_balances_bytes():
    p = plan_shards(TINY_TABLES, 16, 2)
    assert p.split_table is None
    _covers(p)
    biggest = -(-max(TINY_TABLES) // 64) * 4096
    assert abs(p.bytes_by_rank[0] - p.bytes_by_rank[1]) <= biggest
    assert p == plan_shards(TINY_TABLES, 16, 2)          # deterministic


def test_plan_row_wise_splits_the_largest_on_page_boundaries():
    p = plan_shards(TINY_TABLES, 16, 2, split_over=0.2)
    big = int(np.argmax(TINY_TABLES))
    assert p.split_table == big
    _covers(p)
    base = page_layout(TINY_TABLES, 16)
    parts = [s for shards in p.by_rank for s in shards if s.table == big]
    assert [s.rank for s in parts] == [0, 1]
    for s in parts:
        assert s.lo % 64 == 0 and s.first_page == base[big] + s.lo // 64


def test_plan_errors():
    with pytest.raises(ValueError, match="ranks"):
        plan_shards(TINY_TABLES, 16, 0)
    with pytest.raises(ValueError, match="without rows"):
        plan_shards((10, 10), 16, 3, split_over=10)   # 3 ranks, 2 tables, none split
    with pytest.raises(ValueError, match="too few"):
        plan_shards((100, 10), 16, 3, split_over=0.1)  # 2 pages cannot go to 3 ranks


def test_init_as_gives_a_shard_the_whole_tables_rows():
    whole = PagedEmbedding(TINY_TABLES, 16, seed=3, optimizer="adagrad")
    t, lo, hi = 2, 128, 40525
    first = page_layout(TINY_TABLES, 16, "adagrad")[t] + lo // 64
    shard = PagedEmbedding((hi - lo, 9), 16, seed=3, optimizer="adagrad")
    shard.init_as([first, page_layout(TINY_TABLES, 16, "adagrad")[9]], [TINY_TABLES[t], TINY_TABLES[9]])
    rows = np.array([0, 1, 63, 64, 5000, hi - lo - 1])
    np.testing.assert_array_equal(shard.peek_rows(0, rows), whole.peek_rows(t, rows + lo))
    np.testing.assert_array_equal(shard.peek_rows(1, np.arange(9)), whole.peek_rows(9, np.arange(9)))
    shard.gather_tables([np.array([0]), None])
    with pytest.raises(ValueError, match="touched"):
        shard.init_as([first, 0], [TINY_TABLES[t], TINY_TABLES[9]])


def test_two_ranks_dram_only_row_split_equal_one_rank(one_rank_loss):
    out = run_distributed(DistSpec(ranks=2, iterations=ITER, split_over=0.2), timeout_s=TIMEOUT)
    assert out["shards"]["split_table"] == int(np.argmax(TINY_TABLES))
    np.testing.assert_allclose(out["loss"], one_rank_loss, rtol=1e-5, atol=1e-6)
    assert [d["rank"] for d in out["per_rank"]] == [0, 1]
    for d in out["per_rank"]:
        assert d["loss"] == out["loss"] and d["clock"] == "none" and d["io_stall_time_s"] == 0.0
        assert d["samples_per_batch"] == 32
    assert out["total_stall_s"] == 0.0 and out["job_stall_s"] == 0.0


def test_two_ranks_on_their_own_zns_devices_equal_one_rank(one_rank_loss):
    out = run_distributed(DistSpec(ranks=2, iterations=ITER, device=ZNS, budget=0.25), timeout_s=TIMEOUT)
    np.testing.assert_allclose(out["loss"], one_rank_loss, rtol=1e-5, atol=1e-6)
    stalls = [d["io_stall_time_s"] for d in out["per_rank"]]
    for d in out["per_rank"]:
        assert d["clock"] == "modeled" and d["device"]["url"] == ZNS.replace("{rank}", str(d["rank"]))
        assert d["paging"]["pages_written"] > 0 and d["device"]["host_write_bytes"] > 0
        assert d["budget_bytes"] <= d["table_bytes"] // 4 + 4096     # its own budget, of its own shards
    assert out["total_stall_s"] == pytest.approx(sum(stalls))
    assert max(stalls) <= out["job_stall_s"] <= out["total_stall_s"]
    assert out["train_time_s"] >= max(d["train_time_s"] for d in out["per_rank"]) - 1e-12


def test_a_failing_rank_stops_the_job_and_is_named():
    with pytest.raises(RankFailed, match=r"^rank 1 failed: RuntimeError: injected failure") as e:
        run_distributed(DistSpec(ranks=2, iterations=ITER, fail_rank=1), timeout_s=TIMEOUT)
    assert e.value.rank == 1


def test_bench_ranks_cli(tmp_path):
    from click.testing import CliRunner

    from zswap_host.cli import main

    out = tmp_path / "sharded.json"
    r = CliRunner().invoke(main, ["bench", "--ranks", "2", "--model", "tiny", "--iterations", "3",
                                  "--runs", "store-on-zns", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "store-on-zns" in r.output and "rank 1" in r.output
    rep = json.loads(out.read_text())
    assert [x["name"] for x in rep["runs"]] == ["store-on-zns"]
    for x in rep["runs"]:
        assert x["loss_max_abs_diff_vs_1_rank"] < 1e-5 and len(x["per_rank"]) == 2
    bad = CliRunner().invoke(main, ["bench", "--ranks", "2", "--model", "tiny", "--verify"])
    assert bad.exit_code == 2 and "does not apply" in bad.output
    bad = CliRunner().invoke(main, ["bench", "--ranks", "2", "--model", "tiny", "--runs", "linux-swap"])
    assert bad.exit_code == 2 and "sharded runs are dram-only, store-on-zns" in bad.output


def test_torchrun_launch_equals_the_built_in_one(tmp_path):
    # the same 2-rank job started by torchrun (RANK / WORLD_SIZE, env://): rank 0 writes the report;
    # losses and modeled stalls equal the built-in launcher's run of the same spec
    import os
    import subprocess
    import sys

    from zswap_host.cli import main as _  # noqa: F401  (the console script's module must import)

    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    script = os.path.join(os.path.dirname(sys.executable), "zswap-host")
    out = tmp_path / "torchrun.json"
    p = subprocess.run([torchrun, "--standalone", "--nproc_per_node", "2", script, "bench", "--ranks", "2",
                        "--model", "tiny", "--iterations", str(ITER), "--runs", "store-on-zns", "--json", str(out)],
                       capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(out.read_text())["runs"]
    assert [r["name"] for r in got] == ["store-on-zns"]
    spec = DistSpec(**{**got[0]["spec"], "fail_rank": None})
    ref = run_distributed(spec, timeout_s=TIMEOUT)
    assert got[0]["loss"] == ref["loss"]
    assert [d["rank"] for d in got[0]["per_rank"]] == [0, 1]
    assert [d["io_stall_time_s"] for d in got[0]["per_rank"]] == [d["io_stall_time_s"] for d in ref["per_rank"]]
    assert got[0]["job_stall_s"] == ref["job_stall_s"] > 0
