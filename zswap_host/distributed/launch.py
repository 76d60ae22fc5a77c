"""Running a sharded training: ``run_distributed`` starts one process per rank (gloo over
127.0.0.1) and waits for them, or — under ``torchrun`` (``RANK`` / ``WORLD_SIZE`` set) — runs this
process's rank and gathers every rank's figures to each. A rank that raises reports its error before
leaving; the launcher then ends the other ranks (which would wait forever in a collective) and raises
``RankFailed`` naming the rank."""

from __future__ import annotations

import dataclasses
import os
import queue as queue_mod
import socket
import time
from dataclasses import dataclass

import numpy as np

from ..errors import ZswapError


class RankFailed(ZswapError):
    """A rank of a sharded training failed; ``rank`` names it, the message is one line."""

    def __init__(self, rank: int, message: str) -> None:
        super().__init__(f"rank {rank} failed: {message}")
        self.rank = rank


@dataclass(frozen=True)
class DistSpec:
    """A sharded training. None fields come from the training preset (``workloads.train.PRESETS``).
    ``device``: None = DRAM only (no backend), else a device URL template in which ``{rank}`` is the
    rank (e.g. ``emu://?zones=64`` for a fresh emulated ZNS device per rank): the swap store runs on
    it with ``placement`` / ``victim``, timed by its modeled clock. ``budget``: each rank's DRAM
    budget (a fraction: of that rank's shard bytes). ``split_over``: see ``plan_shards``.
    ``fail_rank``: that rank raises at its first step (tests of the failure path)."""

    ranks: int = 2
    preset: str = "tiny"
    iterations: int | None = None
    batch_size: int | None = None
    seed: int = 0
    budget: float | str | int | None = None
    device: str | None = None
    placement: str = "temporal"
    victim: str = "greedy"
    split_over: float = 1.0
    fail_rank: int | None = None


def resolve_spec(spec: DistSpec) -> tuple:
    """(training preset, model config, data config, iterations, batch size, budget) of ``spec``;
    ``ValueError`` for an unknown preset."""
    from ..workloads.train import preset
    p = preset(spec.preset)
    iterations = p.iterations if spec.iterations is None else int(spec.iterations)
    batch_size = p.batch_size if spec.batch_size is None else int(spec.batch_size)
    return p, p.model_config(), p.data_config(), iterations, batch_size, p.budget if spec.budget is None else spec.budget


def check(spec: DistSpec):
    """The shard plan of ``spec``; ``ValueError`` for what would fail in every rank."""
    from .sharding import plan_shards
    p, mc, dc, iters, bs, _ = resolve_spec(spec)
    if iters < 1 or bs < spec.ranks:
        raise ValueError(f"need iterations >= 1 and a batch of at least one sample per rank, not {iters} x {bs}")
    if spec.fail_rank is not None and not 0 <= spec.fail_rank < spec.ranks:
        raise ValueError(f"fail_rank {spec.fail_rank} is not a rank of {spec.ranks}")
    return plan_shards(dc.tables, mc.dim, spec.ranks, optimizer=mc.emb_optimizer, split_over=spec.split_over)


def device_url(template: str, rank: int) -> str:
    """The device URL of ``rank``: ``{rank}`` in ``template`` replaced by it (no other braces are
    special: URLs keep theirs)."""
    return template.replace("{rank}", str(int(rank)))


def _open(spec: DistSpec, rank: int):
    """This rank's (backend, device), or (None, None) for DRAM only."""
    if spec.device is None:
        return None, None
    from ..bench.plan import READ_QD
    from ..devices import open_device, placement_units
    from ..store import StoreConfig, SwapStore

    dev = placement_units(open_device(device_url(spec.device, rank), zoned=None))
    try:
        return SwapStore(dev, StoreConfig(placement=spec.placement, victim=spec.victim, read_qd=READ_QD)), dev
    except BaseException:
        dev.close()
        raise


def train_rank(spec: DistSpec, rank: int) -> dict:
    """Rank ``rank``'s training, the process group up: its per-iteration figures (lists) and totals.
    Charged compute per iteration: the preset's calibrated cost of this rank's samples (measured
    compute when the preset has none); it is also the idle window handed to the store's GC."""
    import torch

    from ..workloads.criteo import CriteoSynth
    from ..workloads.train import idle_overrun
    from .rank import RankTrainer, sample_bounds

    torch.set_num_threads(1)
    p, mc, dc, n, bs, budget = resolve_spec(spec)
    shard_plan = check(spec)
    backend, dev = _open(spec, rank)
    try:
        modeled = dev is not None and dev.stats().clock == "modeled"
        clock = dev.now if modeled else None
        tr = RankTrainer(mc, dc, shard_plan, rank, backend, budget, spec.seed, clock=clock)
        bounds = sample_bounds(bs, spec.ranks)
        mine = int(bounds[rank + 1] - bounds[rank])
        loss, compute, stall, iowall, charged = (np.zeros(n) for _ in range(5))
        t0 = time.perf_counter()
        for i, b in enumerate(CriteoSynth(dc).batches(n, bs, spec.seed)):
            if spec.fail_rank == rank:
                raise RuntimeError("injected failure (DistSpec.fail_rank)")
            loss[i], compute[i], stall[i], iowall[i] = tr.step(b)
            charged[i] = compute[i] if p.compute_us_per_sample is None else p.compute_us_per_sample * 1e-6 * mine
            if backend is not None:
                stall[i] += idle_overrun(backend.idle, clock, float(charged[i]))
        out = {"rank": rank, "shards": [[s.table, s.lo, s.hi] for s in tr.shards], "samples_per_batch": mine,
               "clock": "modeled" if modeled else ("wall" if backend is not None else "none"),
               "budget_bytes": tr.emb.nframes * tr.emb.page_size, "table_bytes": tr.emb.total_bytes,
               "loss": loss.tolist(), "compute_s": compute.tolist(), "charged_s": charged.tolist(),
               "io_stall_s": stall.tolist(), "io_wall_s": iowall.tolist(), "io_stall_time_s": float(stall.sum()),
               "train_time_s": float((charged + stall).sum()), "wall_s": time.perf_counter() - t0,
               "paging": tr.emb.stats()}
        if backend is not None:
            backend.flush()
            s = backend.stats().as_dict()
            out["device"] = {k: s[k] for k in ("host_write_bytes", "host_read_bytes") if k in s}
            out["device"]["url"] = device_url(spec.device, rank)
            out["device"]["write_amplification"] = s.get("write_amplification")
        return out
    finally:
        if backend is not None:
            backend.close()
            dev.close()


def combine(spec: DistSpec, per_rank: list[dict]) -> dict:
    """The job's figures from its ranks': ranks step together, so an iteration lasts as long as its
    slowest rank (``job_stall_s``: the sum over iterations of the largest rank stall);
    ``total_stall_s``: every rank's stall added."""
    per_rank = sorted(per_rank, key=lambda d: d["rank"])
    stall = np.array([d["io_stall_s"] for d in per_rank])
    it = np.array([np.add(d["charged_s"], d["io_stall_s"]) for d in per_rank])
    return {"ranks": spec.ranks, "spec": dataclasses.asdict(spec), "loss": per_rank[0]["loss"],
            "total_stall_s": float(stall.sum()), "job_stall_s": float(stall.max(axis=0).sum()),
            "train_time_s": float(it.max(axis=0).sum()), "per_rank": per_rank,
            "shards": check(spec).as_dict()}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_line(e: BaseException) -> str:
    msg = " ".join(str(e).split())
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def _worker(spec: DistSpec, rank: int, port: int, results) -> None:
    import datetime

    import torch.distributed as dist
    try:
        from ..plugins import ensure_loaded

        ensure_loaded()             # the parent's --plugin modules (inherited environment) and entry points
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=spec.ranks,
                                timeout=datetime.timedelta(minutes=10))
        out = train_rank(spec, rank)
        results.put(("ok", rank, out))
    except BaseException as e:                  # noqa: BLE001 - reported to the launcher, which stops the job
        results.put(("error", rank, _one_line(e)))
        return
    try:
        dist.destroy_process_group()
    except Exception:
        pass


def run_distributed(spec: DistSpec, timeout_s: float | None = None) -> dict:
    """Train ``spec`` on ``spec.ranks`` ranks and return :func:`combine`'s figures. Under ``torchrun``
    (``WORLD_SIZE`` in the environment) this process is one rank (``env://``; ``spec.ranks`` must be
    the world size) and every rank returns the figures. Else spawned processes, one per rank.
    ``ValueError`` for a spec no rank can run; ``RankFailed`` when a rank raises or dies (the others
    are ended); ``TimeoutError`` after ``timeout_s``."""
    check(spec)
    if "WORLD_SIZE" in os.environ and "RANK" in os.environ:
        return _run_torchrun(spec)
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(spec, r, port, results), daemon=True) for r in range(spec.ranks)]
    for p in procs:
        p.start()
    done: dict[int, dict] = {}
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        while len(done) < spec.ranks:
            try:
                kind, rank, payload = results.get(timeout=1.0)
            except queue_mod.Empty:
                for r, p in enumerate(procs):
                    if r not in done and not p.is_alive() and p.exitcode not in (None, 0):
                        raise RankFailed(r, f"exited with code {p.exitcode}") from None
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"the {spec.ranks} ranks did not finish in {timeout_s} s") from None
                continue
            if kind == "error":
                raise RankFailed(rank, payload)
            done[rank] = payload
    finally:
        for p in procs:                         # our own children only: the rest of a failed job
            if p.is_alive():
                p.join(timeout=0.5 if len(done) < spec.ranks else 10)
            if p.is_alive():
                p.terminate()
                p.join(timeout=5)
    return combine(spec, list(done.values()))


def _run_torchrun(spec: DistSpec) -> dict:
    import torch.distributed as dist

    world, rank = int(os.environ["WORLD_SIZE"]), int(os.environ["RANK"])
    if world != spec.ranks:
        raise ValueError(f"--ranks {spec.ranks} under torchrun with {world} processes")
    if not dist.is_initialized():               # once per process: a bench trains several runs
        dist.init_process_group("gloo", init_method="env://")
    try:
        out = train_rank(spec, rank)
    except Exception as e:                      # torchrun ends the other ranks when this one exits
        raise RankFailed(rank, _one_line(e)) from e
    got = [None] * world
    dist.all_gather_object(got, out)
    return combine(spec, got)
