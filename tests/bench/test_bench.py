"""``zswap-host bench`` on the tiny preset: the five runs, the attribution chain, a deterministic
compute basis, the two sizing modes, and bad input refused before any training starts."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from zswap_host import NotZonedError  # noqa: E402
from zswap_host.bench import RUNS, BenchError, BenchSpec, ComputeBasis, charged_compute, plan, run_bench  # noqa: E402
from zswap_host.cli import main  # noqa: E402

SPEC = dict(preset="tiny", iterations=30, lookahead=0)     # stalls to compare (lookahead: test_lookahead.py)


def _one_read_s() -> float:
    """A 4 KiB read on an idle thesis-ssd: command, tR, the channel and the host link."""
    from zswap_host.ssdsim import get_preset
    p = get_preset("thesis-ssd")
    return (p.cmd_overhead_us + p.t_read_us + 4096 / p.channel_mb_s + 4096 / p.host_link_mb_s) * 1e-6


ONE_READ_S = _one_read_s()                  # 66.3 us


@pytest.fixture(scope="module")
def report():
    return run_bench(BenchSpec(**SPEC))


def test_runs_and_metrics(report):
    # no lookahead, no packing: neither linux-swap-lookahead nor linux-swap-packed
    assert tuple(r["name"] for r in report["runs"]) == tuple(
        r for r in RUNS if r not in ("linux-swap-lookahead", "linux-swap-packed"))
    # emulated devices only: no model twin (tests/bench/test_bench_twin.py)
    assert "model_twin" not in report and not any("model_twin" in r for r in report["runs"])
    dram = report["runs"][0]
    assert dram["clock"] == "charged" and dram["io_stall_time_s"] == 0
    charged = dram["compute_time_s"]
    assert report["compute"]["kind"] == "pinned"
    assert charged == pytest.approx(report["compute"]["us_per_sample"] * 1e-6 * 64 * 30)
    for r in report["runs"][1:]:
        assert r["clock"] == "modeled"
        assert r["compute_time_s"] == charged                        # every run charged the same compute
        # the device's own modeled clock saw every idle window (the charged compute) and every request:
        # it ends where the run's training time says the training ended
        assert r["io_stall_time_s"] > 0
        assert r["train_time_s"] == pytest.approx(r["device_time_s"], rel=1e-9)
        # the pager's bookkeeping was timed, and inside the run's own measured compute
        assert 0 < r["paging_bookkeeping_s"] <= r["measured_compute_s"]
        # the backend moved exactly the pages the pager faulted in and wrote out
        assert r["swap_in_bytes"] == r["paging"]["faults"] * 4096 > 0
        assert r["swap_out_bytes"] == r["paging"]["pages_written"] * 4096 > 0
        for key in ("host_write_bytes", "device_write_bytes", "media_write_bytes", "write_amplification",
                    "write_size_histogram", "read_size_histogram", "device_time_s", "gc_write_bytes",
                    "page_wait_p50_s", "page_wait_p99_s", "page_wait_p999_s", "step_stall_p50_s",
                    "step_stall_p99_s", "requests_under_32k_share"):
            assert key in r, key
        # the typical fault waited at least for one 4 KiB flash read (tiny's devices are thesis-ssd)
        assert r["page_wait_p50_s"] >= ONE_READ_S
        assert r["page_waits"] == r["paging"]["faults"]
        assert len(r["per_iteration_s"]) == 30 and len(r["loss"]) == 30
    by = {r["name"]: r for r in report["runs"]}
    lin, bat, zns = by["linux-swap"], by["linux-swap-batched"], by["store-on-zns"]
    # the fastest of linux-swap's one-at-a-time faults found the device idle: exactly one 4 KiB read
    # (the model counts whole nanoseconds: within a few ns)
    assert min(report["_extras"]["linux-swap"]["latencies"]) == pytest.approx(ONE_READ_S, abs=5e-9)
    # the store writes whole units; Linux swap writes what adjacent slots give
    mean = lambda h: sum(int(k) * v for k, v in h.items()) / sum(h.values())  # noqa: E731
    assert mean(zns["write_size_histogram"]) > mean(lin["write_size_histogram"])
    # tiny writes less than the conventional SSD's usable bytes, so its free flash never fell below the
    # spare (raw - usable), above the idle-GC target (a quarter of the spare): the FTL never collected
    # and programmed exactly what the host wrote. The ZNS device has no FTL GC at all.
    assert lin["device_write_bytes"] < report["sizing"]["conventional_usable_bytes"]
    for r in (lin, bat, zns):
        assert r["device_gc_write_bytes"] == 0 and r["media_write_bytes"] == r["device_write_bytes"], r["name"]
    # batching changes reads only: same pages out, same write requests, one deep queue instead of faults
    assert bat["write_size_histogram"] == lin["write_size_histogram"]
    assert bat["major_faults"] == 0 < lin["major_faults"] and bat["io_stall_time_s"] < lin["io_stall_time_s"]


def test_chain_and_equal_losses(report):
    q, steps = report["ratios"], report["chain"]
    assert q["losses_match"] and q["max_loss_difference"] == 0
    # the chain walks from linux-swap to store-on-zns, each step changing one thing, with no gap
    assert [(s["step"], s["from"], s["to"]) for s in steps] == [
        ("batching", "linux-swap", "linux-swap-batched"),
        ("aggregation", "linux-swap-batched", "store-on-conventional"),
        ("zns", "store-on-conventional", "store-on-zns")]
    by = {r["name"]: r for r in report["runs"]}
    compute = by["dram-only"]["train_time_s"]
    for s in steps:                     # before / after: > 1 when the step's run trains faster
        a, b = by[s["from"]], by[s["to"]]
        assert (s["train_time_ratio"] > 1) == (a["train_time_s"] > b["train_time_s"])
        assert s["stall_ratio"] == pytest.approx(a["io_stall_time_s"] / b["io_stall_time_s"])
        assert s["write_amplification"] == [a["write_amplification"], b["write_amplification"]]
    # batching turns linux-swap's faults into one queue per step: the stall falls, and with the same
    # charged compute the training time falls by exactly the stall it saved
    bat = steps[0]
    assert bat["stall_ratio"] > 1
    lin, bt = by["linux-swap"], by["linux-swap-batched"]
    assert bat["train_time_ratio"] == pytest.approx((compute + lin["io_stall_time_s"]) / (compute + bt["io_stall_time_s"]))
    # a slowdown is what the run's stall adds to the DRAM-only training
    for r in report["runs"][1:]:
        assert q[f"slowdown_{r['name']}"] == pytest.approx(1 + r["io_stall_time_s"] / compute)
    zns = by["store-on-zns"]
    assert q["speedup_store_on_zns_vs_linux_swap"] == pytest.approx(
        (compute + lin["io_stall_time_s"]) / (compute + zns["io_stall_time_s"]))
    assert q["stall_ratio_linux_swap_vs_store_on_zns"] == pytest.approx(lin["io_stall_time_s"] / zns["io_stall_time_s"])
    # the summary: store-on-zns against the fastest Linux run that ran (no lookahead here: the batched
    # one, whose deep queue beat linux-swap above) and against linux-swap, stall seconds beside ratios
    head = report["summary"]
    assert head["best_linux_run"] == "linux-swap-batched" == head["vs_best_linux"]["run"]
    assert head["vs_best_linux"]["io_stall_time_s"] == [bt["io_stall_time_s"], zns["io_stall_time_s"]]
    assert head["vs_best_linux"]["speedup"] == pytest.approx(bt["train_time_s"] / zns["train_time_s"])
    assert head["vs_linux_swap"]["speedup"] == q["speedup_store_on_zns_vs_linux_swap"]
    assert head["vs_linux_swap"]["stall_ratio"] == q["stall_ratio_linux_swap_vs_store_on_zns"]
    # the keys derived from the run's old name (zns-host-gc) stay as aliases for old readers
    assert q["speedup_zns_host_gc_vs_linux_swap"] == q["speedup_store_on_zns_vs_linux_swap"]
    assert q["stall_ratio_linux_swap_vs_zns_host_gc"] == q["stall_ratio_linux_swap_vs_store_on_zns"]
    assert q["slowdown_zns-host-gc"] == q["slowdown_store-on-zns"]


def _record(name: str, train: float, stall: float) -> dict:
    """The fields of a run record that the chain and the summary read."""
    return {"name": name, "train_time_s": train, "io_stall_time_s": stall, "write_amplification": 1.0,
            "loss": [0.5, 0.4]}


LINUX = ("linux-swap", "linux-swap-batched", "linux-swap-lookahead", "linux-swap-packed")


@pytest.mark.parametrize("winner", LINUX)
def test_summary_compares_with_the_best_linux_run(winner):
    """Whichever Linux run trains fastest is the summary's reference, named in the JSON and the line."""
    from zswap_host.bench import best_linux_run, chain
    from zswap_host.bench.table import summary_line

    runs = [_record("dram-only", 1.0, 0.0)]
    runs += [_record(n, 2.0 if n == winner else 3.0 + i, 1.0 if n == winner else 2.0 + i)
             for i, n in enumerate(LINUX)]
    runs += [_record("store-on-conventional", 1.6, 0.6), _record("store-on-zns", 1.25, 0.25)]
    assert best_linux_run(runs) == winner
    head = chain(runs)["summary"]
    assert head["run"] == "store-on-zns" and head["best_linux_run"] == winner
    best = head["vs_best_linux"]
    assert best == {"run": winner, "speedup": 2.0 / 1.25, "train_time_s": [2.0, 1.25], "stall_ratio": 4.0,
                    "io_stall_time_s": [1.0, 0.25]}
    lin = head["vs_linux_swap"]
    assert lin["run"] == "linux-swap" and lin["io_stall_time_s"] == [runs[1]["io_stall_time_s"], 0.25]
    line = summary_line(head)
    assert line.startswith(f"summary: store-on-zns trains 1.60x faster than the best Linux run, {winner} "
                           f"(stall 1 s -> 0.25 s (4.00x))")
    # then linux-swap, unless it is the best run
    if winner == "linux-swap":
        assert "; " not in line
    else:
        assert line.endswith("; 2.40x faster than linux-swap (stall 2 s -> 0.25 s (8.00x))")


def test_best_linux_run_ties_go_to_the_lower_stall_then_the_earlier_run():
    from zswap_host.bench import best_linux_run

    tie = [_record("linux-swap", 2.0, 1.0), _record("linux-swap-batched", 2.0, 0.5),
           _record("linux-swap-lookahead", 2.0, 0.5)]
    assert best_linux_run(tie) == "linux-swap-batched"
    assert best_linux_run(tie[::-1]) == "linux-swap-batched"       # by LINUX_RUNS order, not the list's
    assert best_linux_run([_record("dram-only", 1.0, 0.0), _record("store-on-zns", 1.0, 0.1)]) is None


def test_no_summary_without_zns_or_a_linux_run():
    from zswap_host.bench import chain

    dram = _record("dram-only", 1.0, 0.0)
    assert "summary" not in chain([dram, _record("linux-swap", 2.0, 1.0)])
    assert "summary" not in chain([dram, _record("store-on-conventional", 1.5, 0.5), _record("store-on-zns", 1.2, 0.2)])
    # only linux-swap ran: it is the best Linux run, named once; a hidden stall has no finite ratio
    head = chain([dram, _record("linux-swap", 2.0, 1.0), _record("store-on-zns", 1.0, 0.0)])["summary"]
    assert head["best_linux_run"] == "linux-swap" and head["vs_best_linux"]["stall_ratio"] is None
    from zswap_host.bench.table import summary_line

    assert summary_line(head) == ("summary: store-on-zns trains 2.00x faster than the best Linux run, linux-swap "
                                  "(stall 1 s -> 0 s)")


def test_pinned_compute_makes_the_report_deterministic(report, monkeypatch):
    """The same command gives the same training times and ratios however long the compute took: a
    second run with every step's measured compute inflated agrees to the last bit."""
    import importlib

    train_mod = importlib.import_module("zswap_host.torch.training")
    step = train_mod.Trainer.step

    slowed = []

    def slow(self, b, ahead=()):
        loss, comp, pag, stall, iow = step(self, b, ahead)
        slowed.append(comp)
        return loss, comp * 3 + 0.01, pag, stall, iow          # a loaded machine
    monkeypatch.setattr(train_mod.Trainer, "step", slow)
    again = run_bench(BenchSpec(**SPEC, jobs=1))              # the patch reaches this process only
    # every step of every run went through the patch (counted, not timed: comparing the two reports'
    # measured compute would compare wall-clock timings of a loaded machine)
    assert len(slowed) == len(again["runs"]) * SPEC["iterations"]
    for a, b in zip(report["runs"], again["runs"]):
        assert a["train_time_s"] == b["train_time_s"] and a["io_stall_time_s"] == b["io_stall_time_s"]
    assert again["ratios"] == report["ratios"] and again["chain"] == report["chain"]


def test_measured_compute_is_the_median_of_interleaved_replicas(monkeypatch):
    from zswap_host.bench import runs as runs_mod

    seen = []                           # the replicas' step times, as measured (the real measurement)
    real = runs_mod.measure_compute
    monkeypatch.setattr(runs_mod, "measure_compute", lambda *a, **k: seen.append(real(*a, **k)) or seen[-1])
    r = run_bench(BenchSpec(preset="tiny", iterations=8, runs=("store-on-zns",),
                            compute=ComputeBasis("measured", repeats=3)))
    dram = r["runs"][0]
    comp = seen[0].compute_s
    assert comp.shape == (3, 8)
    assert r["compute"]["kind"] == "measured" and dram["replicas"]["replicas"] == 3
    assert dram["replicas"]["replica_compute_s"] == pytest.approx(comp.sum(axis=1).tolist())
    # each iteration is charged the median of its three replicas' times, in every run
    median = [sorted(col)[1] for col in comp.T.tolist()]
    assert dram["per_iteration_s"] == pytest.approx(median)
    zns = r["runs"][1]
    assert zns["compute_time_s"] == pytest.approx(sum(median))
    assert zns["train_time_s"] == pytest.approx(sum(median) + zns["io_stall_time_s"])


def test_charged_compute_is_the_per_iteration_median_or_the_pinned_cost():
    from zswap_host.bench.compute import MeasuredCompute

    comp = np.array([[1.0, 5.0, 2.0], [3.0, 1.0, 9.0], [2.0, 4.0, 4.0]])     # replicas x iterations
    m = MeasuredCompute(comp, comp * 0, np.zeros_like(comp), 0.0, {})
    assert m.median_s.tolist() == [2.0, 4.0, 4.0]
    assert charged_compute(ComputeBasis("measured", repeats=3), m, 64).tolist() == [2.0, 4.0, 4.0]
    assert charged_compute(ComputeBasis("pinned", 10.0), m, 64).tolist() == pytest.approx([640e-6] * 3)
    with pytest.raises(ValueError, match="us_per_sample"):
        ComputeBasis("pinned", None)
    with pytest.raises(ValueError, match="basis"):
        ComputeBasis("wall")


def test_sizing_modes():
    from zswap_host import open_device
    from zswap_host.devices import ZonedBlockView
    from zswap_host.ssdsim import get_preset

    stripe = get_preset("thesis-ssd").stripe_bytes
    flash = plan(BenchSpec(preset="quick"))
    conv, zns = open_device(flash.baseline_url), open_device(flash.zns_url)
    g = zns.geometry
    assert g.zone_capacity % stripe == 0 and g.zone_capacity <= g.zone_size     # whole stripes per zone
    raw_zns = g.nr_zones * g.zone_capacity
    assert 0 <= conv.model.raw_bytes - raw_zns < g.zone_capacity                  # same flash, never more
    assert raw_zns > conv.size                                                   # ZNS exposes the OP
    assert flash.zone_capacity == flash.zone_size                                # the view uses its LBAs whole
    cap = plan(BenchSpec(preset="quick", sizing="same-capacity"))
    zc = open_device(cap.zns_url)
    view = ZonedBlockView(open_device(cap.baseline_url), cap.zone_size, cap.zone_capacity)
    assert cap.baseline_url == flash.baseline_url
    usable = lambda d: d.geometry.nr_zones * d.geometry.zone_capacity  # noqa: E731
    assert usable(zc) == usable(view) == cap.devices["zns_usable_bytes"]         # equal usable bytes
    u = plan(BenchSpec(preset="quick", utilisation=0.9))
    # the planned SSD's own size puts the tables at 90% of it (and the report says so)
    assert u.table_bytes / open_device(u.baseline_url).size == pytest.approx(0.9, abs=0.01)
    assert u.devices["tables_over_conventional_usable"] == pytest.approx(u.table_bytes / open_device(u.baseline_url).size)
    assert "suspend=1" in plan(BenchSpec(preset="quick", suspend=True)).zns_url
    given = plan(BenchSpec(preset="quick", device="emu://?zones=64&zone_size=4MiB&preset=none"))
    assert given.devices["sizing"] == "given" and given.devices["zns"].startswith("emu://?zones=64")


@pytest.mark.parametrize("spec,error,words", [
    (BenchSpec(preset="tiny", budget=1.5), BenchError, "budget"),
    (BenchSpec(preset="tiny", budget=1.0), BenchError, "nothing would swap"),
    (BenchSpec(preset="tiny", budget=0.01), BenchError, "smaller than one batch"),
    (BenchSpec(preset="nope"), BenchError, "unknown training preset"),
    (BenchSpec(preset="tiny", sizing="same-price"), BenchError, "unknown sizing"),
    (BenchSpec(preset="tiny", runs=("linux-swap", "zfs")), BenchError, "unknown run"),
    (BenchSpec(preset="tiny", runs=("linux-swap-lookahead",), lookahead=0), BenchError, "needs --lookahead"),
    (BenchSpec(preset="tiny", lookahead=-1), BenchError, "lookahead"),
    (BenchSpec(preset="tiny", utilisation=1.5), BenchError, "utilisation"),
    (BenchSpec(preset="tiny", iterations=0), BenchError, "positive"),
    (BenchSpec(preset="tiny", batch_size=10**8), BenchError, "batch size"),
    (BenchSpec(preset="tiny", device="emu-conv://?size=64MiB&preset=none"), NotZonedError, "not a zoned device"),
    (BenchSpec(preset="tiny", device="emu://?zones=4&zone_size=1MiB&preset=none"), BenchError, "too small"),
    (BenchSpec(preset="tiny", baseline_device="emu-conv://?size=1MiB&preset=none"), BenchError, "too small"),
])
def test_bad_input_fails_before_training(spec, error, words, monkeypatch):
    from zswap_host.bench import runs as runs_mod

    monkeypatch.setattr(runs_mod, "measure_compute", lambda *a, **k: pytest.fail("training started"))
    with pytest.raises(error, match=words):
        run_bench(spec)


def test_cli_json_and_plots(tmp_path):
    out = tmp_path / "bench.json"
    r = CliRunner().invoke(main, ["bench", "--model", "tiny", "--iterations", "12", "--json", str(out),
                                  "--plot", str(tmp_path / "plots"), "--runs", "linux-swap,store-on-zns",
                                  "--trace-out", str(tmp_path / "t.npz"), "--verify", "--compute-us-per-sample", "40"])
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    assert [x["name"] for x in d["runs"]] == ["dram-only", "linux-swap", "store-on-zns"]
    assert d["compute"] == {"kind": "pinned", "us_per_sample": 40.0, "repeats": 1, "source": "--compute-us-per-sample"}
    assert d["runs"][0]["train_time_s"] == pytest.approx(40e-6 * 64 * 12)
    for run in d["runs"][1:]:           # every page that came back was checked against its fingerprint
        assert run["verify"]["pages_checked"] == run["paging"]["faults"] > 0
    assert "pages verified bit-exact" in r.output and "pinned at 40 us/sample" in r.output
    assert set(d["ratios"]) >= {"slowdown_linux-swap", "slowdown_store-on-zns", "losses_match"}
    # the report's last line is the summary against the best (here: the only) Linux run
    assert d["summary"]["best_linux_run"] == "linux-swap"
    report_lines = r.output.split("\nwrote ")[0].splitlines()
    assert report_lines[-1].startswith("summary: store-on-zns trains ") and "the best Linux run, linux-swap" in \
        report_lines[-1]
    assert len(list((tmp_path / "plots").glob("*.png"))) == 4
    from zswap_host.workloads import SwapTrace

    assert SwapTrace.load(str(tmp_path / "t.npz")).counts()["swap_out_pages"] > 0


def test_cli_old_run_name_still_works_with_one_line(tmp_path):
    """``--runs zns-host-gc`` (the store-on-zns run's old name, given twice) trains the store-on-zns run,
    names it so in the table and the JSON, and says so once on stderr; the new name says nothing."""
    out = {}
    for name, runs in (("old", "linux-swap,zns-host-gc,zns-host-gc"), ("new", "linux-swap,store-on-zns")):
        out[name] = CliRunner().invoke(main, ["bench", "--model", "tiny", "--iterations", "6", "--lookahead", "0",
                                              "--jobs", "1", "--quiet", "--runs", runs,
                                              "--json", str(tmp_path / f"{name}.json")])
        assert out[name].exit_code == 0, out[name].output
    assert out["old"].stderr == "zswap-host bench: run zns-host-gc is called store-on-zns now\n"
    assert out["new"].stderr == "" and "zns-host-gc" not in out["old"].stdout
    old, new = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("old", "new"))
    assert [r["name"] for r in old["runs"]] == ["dram-only", "linux-swap", "store-on-zns"]
    assert old["summary"]["run"] == "store-on-zns" and old["ratios"] == new["ratios"]
    assert [r["loss"] for r in old["runs"]] == [r["loss"] for r in new["runs"]]
    assert any(line.startswith("store-on-zns ") for line in out["old"].stdout.splitlines())


@pytest.mark.parametrize("args,words", [
    (["--budget", "150%"], "budget"),
    (["--runs", "linux-swap,zfs"], "unknown run"),
    (["--runs", "linux-swap-lookahead", "--lookahead", "0"], "needs --lookahead"),
    (["--runs", "linux-swap-packed"], "needs --pack-hot-rows"),
    (["--lookahead", "-1"], "lookahead"),
    (["--compute", "measured", "--compute-us-per-sample", "10"], "not both"),
    (["--compute-us-per-sample", "-1"], "compute-us-per-sample"),
    (["--sizing", "same-price"], "sizing"),
    (["--iterations", "0"], "iterations"),
    (["--preset", "nope"], "unknown SSD preset"),
])
def test_cli_bad_input_is_one_line_exit_2(args, words):
    bad = CliRunner().invoke(main, ["bench", "--model", "tiny", *args])
    assert bad.exit_code == 2 and words in bad.output and "Traceback" not in bad.output


def test_help_lists_the_runs_one_line_each():
    out = CliRunner().invoke(main, ["bench", "--help"]).output
    assert "best Linux run" in out
    listing = out.split("The runs (", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    assert [line.split()[0] for line in listing] == list(RUNS)
    assert all(len(line.split()) > 3 for line in listing)            # each says what changes
