"""The bench's runs in worker processes give the report they give in one process."""

import pytest

pytest.importorskip("torch")

from zswap_host.bench import BenchSpec, run_bench  # noqa: E402
from zswap_host.bench.parallel import run_parallel  # noqa: E402

WALL = {"measured_compute_s", "paging_bookkeeping_s", "simulation_wall_s", "wall_s", "replicas"}


def _modeled(report: dict) -> list[dict]:
    """Every run's record without the fields measured on the wall clock."""
    out = []
    for r in report["runs"]:
        r = {k: v for k, v in r.items() if k not in WALL}
        r["paging"] = {k: v for k, v in r["paging"].items() if not k.endswith("_wall_s")}
        out.append(r)
    return out


def test_two_workers_equal_one_process():
    spec = dict(preset="tiny", iterations=12, runs=("linux-swap", "store-on-zns"))
    seen: list[tuple] = []
    serial = run_bench(BenchSpec(**spec, jobs=1))
    par = run_bench(BenchSpec(**spec, jobs=2), progress=lambda n, d, t: seen.append((n, d, t)))
    assert _modeled(par) == _modeled(serial)
    assert par["chain"] == serial["chain"] and par["ratios"] == serial["ratios"]
    # every run's progress reached the parent, ending at its last iteration
    assert {(n, d) for n, d, t in seen if d == t} == {(n, 12) for n in ("dram-only", "linux-swap", "store-on-zns")}


def _boom(name: str, k: int, progress=None) -> int:
    if name == "bad":
        raise ValueError(f"run {name} failed")
    if progress is not None:
        progress(name, 1, 1)
    return k * len(name)


def test_a_failing_worker_raises_its_error():
    assert run_parallel(_boom, ["a", "bb"], (3,), jobs=2) == {"a": 3, "bb": 6}
    with pytest.raises(ValueError, match="run bad failed"):
        run_parallel(_boom, ["a", "bad", "bb"], (3,), jobs=2)
