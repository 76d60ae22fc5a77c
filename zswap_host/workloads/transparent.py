"""DLRM with plain ``torch.nn.EmbeddingBag`` tables, optionally paged by the userfaultfd pager
(issue 15): the unmodified-code counterpart of ``torch.training.train``'s module-based training.

The model is the one facebookresearch/dlrm builds: the dense part (:class:`.dlrm.DLRM`, the same
class and seed as the bench) and one ``nn.EmbeddingBag(rows, dim, mode="sum", sparse=True)`` per
table, trained with ``torch.optim.SGD`` (the MLPs at ``lr``, the tables at ``emb_lr``: sparse
gradients, so a step touches only the rows it looked up). The tables start from the values the
bench's module creates on first touch (``PagedEmbedding``'s deterministic init, same seed), and the
batches are the bench's (same generator, same seed). With a backend, each table's weight is
``Pager.adopt``-ed (stream = its table index, as the module's streams) right after it is built: the
training code does not change; its faults are the pager's.

``sparse=False`` trains the same model with dense gradients (a table-sized gradient per step, and an
SGD step that reads and writes every row): it equals the module bit for bit (the module's fused SGD
is ``nn.EmbeddingBag(sparse=False)`` + SGD), and is for DRAM-only checks: paged, every step would
fault the whole tables in and write them out.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from .criteo import CriteoSynth
from .paged_embedding import PagedEmbedding
from .train import idle_overrun


def initial_weights(mc, dc, seed: int, table: int) -> np.ndarray:
    """Table ``table``'s initial weights, float32 (rows, dim): what the bench's module creates on
    first touch with this seed."""
    pe = PagedEmbedding(dc.tables, mc.dim, backend=None, seed=seed, optimizer=mc.emb_optimizer)
    try:
        return pe.read_array(table, "weight")
    finally:
        pe.release()


class PlainDLRM:
    """The DLRM of facebookresearch/dlrm on plain torch modules: ``model`` (the dense part),
    ``tables`` (an ``nn.ModuleList`` of ``nn.EmbeddingBag``), their SGD optimizers. ``pager``: adopt
    each table's weight into paged memory as it is built (None: plain DRAM)."""

    def __init__(self, mc, dc, seed: int, *, pager=None, sparse: bool = True) -> None:
        import torch

        from .dlrm import DLRM

        if mc.emb_optimizer != "sgd":
            raise ValueError(f"plain EmbeddingBag training has torch's SGD only, not {mc.emb_optimizer!r}")
        self.mc, self.dc = mc, dc
        self.model = DLRM(mc, dc.num_tables, seed=seed)
        tables = []
        for t, rows in enumerate(dc.tables):
            e = torch.nn.EmbeddingBag(rows, mc.dim, mode="sum", sparse=sparse)
            with torch.no_grad():
                e.weight.copy_(torch.from_numpy(initial_weights(mc, dc, seed, t)))
            if pager is not None:
                pager.adopt(e.weight, stream=t)
            tables.append(e)
        self.tables = torch.nn.ModuleList(tables)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=mc.lr)
        self.emb_opt = torch.optim.SGD(self.tables.parameters(), lr=mc.emb_lr)

    def step(self, b) -> float:
        """One iteration on batch ``b``; returns its loss. Touches the tables only through torch
        operators (which release the GIL: the pager's contract)."""
        import torch

        from .dlrm import bce

        pooled = torch.cat([e(torch.from_numpy(b.sparse[t])) for t, e in enumerate(self.tables)], dim=1)
        prob = self.model(torch.from_numpy(b.dense), pooled.view(b.size, self.dc.num_tables, self.mc.dim))
        loss = bce(prob, torch.from_numpy(b.labels))
        self.opt.zero_grad(set_to_none=True)
        self.emb_opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.emb_opt.step()
        return float(loss.detach())


@dataclass
class TransparentResult:
    """Per-iteration arrays and totals of one plain-EmbeddingBag training (paged or not)."""

    iterations: int
    batch_size: int
    seed: int
    sparse: bool
    paged: bool
    clock: str                       # "modeled" (clock given), "none"
    budget_bytes: int                # the pager's budget (0: not paged)
    table_bytes: int                 # the tables' bytes in whole pages (each table a region)
    loss: np.ndarray
    io_stall_s: np.ndarray           # device clock advance across the step (+ idle overrun)
    step_wall_s: np.ndarray          # wall time of the step, faults included
    charged_s: np.ndarray
    pages_in: np.ndarray
    pages_out: np.ndarray
    faults: np.ndarray               # MISSING + write-protect fault events
    init_io_s: float = 0.0           # device time of building (adopting) the tables, before step 0
    init_pages_out: int = 0
    pager: dict = field(default_factory=dict)     # PagerStats at the end
    start: object = None             # what on_start returned
    end: object = None               # what on_end returned
    wall_s: float = 0.0

    @property
    def io_stall_time_s(self) -> float:
        return float(self.io_stall_s.sum())

    @property
    def train_time_s(self) -> float:
        return float((self.charged_s + self.io_stall_s).sum())

    def as_dict(self) -> dict:
        d = {}
        for k, v in asdict(self).items():
            d[k] = v.tolist() if isinstance(v, np.ndarray) else v
        d.update(io_stall_time_s=self.io_stall_time_s, train_time_s=self.train_time_s)
        return d


def train_plain(mc, dc, iterations: int, batch_size: int, seed: int, *, backend=None, budget_bytes: int = 0,
                clock=None, on_idle=None, charged_compute_s=None, sparse: bool = True, progress=None,
                threads: int | None = 1, page_size: int = 4096, on_start=None, on_end=None,
                discard_on_write: bool = False, fault_around: int = 0, rearm_wp: bool = True,
                announce: bool = False) -> TransparentResult:
    """Train :class:`PlainDLRM` for ``iterations`` batches of the bench's batch stream. With
    ``backend``, its tables live in a ``Pager(backend, budget_bytes, discard_on_write=...,
    fault_around=..., rearm_wp=...)`` (``discard_on_write`` as the bench's ``discard_dirty``: True for the store,
    False for the Linux-swap model; ``fault_around``: pages read ahead per fault batch, 0: none).
    ``announce``: before each step the training loop names the rows it will look up
    (``Pager.prefetch(weight, rows, make_room=True)``, table by table), so they are read in batches
    of up to the pager's fetch batch instead of one fault at a time, as the module's lookahead
    would read them but without overlapping compute (the stall still counts them).

    Timing (modeled clock ``clock``, e.g. the emulated device's ``now``): a step's I/O stall is the
    clock's advance from the step's start until the pager is quiet again (``Pager.quiesce``: every
    fault served and every eviction the step set off written) — the device time of the step's
    faults and write-outs, none of it overlapped with compute. Then ``on_idle(charged_compute_s[i])``
    hands the step's compute to the backend as an idle window (as ``torch.training.train`` does); if the
    clock moved past the window, the excess is stall too. Building the tables (adoption: their
    initial values written out through eviction) happens before step 0 and is reported apart
    (``init_io_s``). ``progress(done, total)`` after each step. ``on_end()``: called after the last
    step while the pager is still open (its pages still in the backend); what it returns is kept in
    ``TransparentResult.end`` (e.g. the backend's stats: ``close`` discards the pager's pages);
    ``on_start()`` likewise after the tables are built, before step 0 (``TransparentResult.start``)."""
    import torch

    if threads is not None:
        torch.set_num_threads(int(threads))
    n = int(iterations)
    charged = np.zeros(n) if charged_compute_s is None else np.asarray(charged_compute_s, np.float64)
    if charged.shape != (n,):
        raise ValueError(f"charged_compute_s must be {n} seconds")
    t_start = time.perf_counter()
    pager = None
    if backend is not None:
        from ..pager import Pager

        pager = Pager(backend, budget_bytes, page_size, discard_on_write=discard_on_write, fault_around=fault_around,
                      rearm_wp=rearm_wp)
    now = clock if clock is not None else (lambda: 0.0)
    try:
        c0 = now()
        net = PlainDLRM(mc, dc, seed, pager=pager, sparse=sparse)
        if pager is not None:
            pager.quiesce()
        init_io = now() - c0
        s = pager.stats() if pager is not None else None
        init_out = s.pages_out if s is not None else 0
        start = on_start() if on_start is not None else None
        loss, stall, wall = np.zeros(n), np.zeros(n), np.zeros(n)
        pin, pout, faults = (np.zeros(n, np.int64) for _ in range(3))
        for i, b in enumerate(CriteoSynth(dc).batches(n, batch_size, seed)):
            c0, t0 = now(), time.perf_counter()
            if announce and pager is not None:
                for t, e in enumerate(net.tables):
                    pager.prefetch(e.weight, np.unique(b.sparse[t]), make_room=True)
            loss[i] = net.step(b)
            if pager is not None:
                pager.quiesce()
            wall[i] = time.perf_counter() - t0
            stall[i] = now() - c0
            if pager is not None:
                s1 = pager.stats()
                pin[i], pout[i] = s1.pages_in - s.pages_in, s1.pages_out - s.pages_out
                faults[i] = (s1.faults_missing + s1.faults_wp) - (s.faults_missing + s.faults_wp)
                s = s1
            if on_idle is not None:
                stall[i] += idle_overrun(on_idle, now, float(charged[i]))
            if progress is not None:
                progress(i + 1, n)
        final = pager.stats().as_dict() if pager is not None else {}
        end = on_end() if on_end is not None else None
        table_bytes = sum(-(-r * mc.dim * 4 // page_size) * page_size for r in dc.tables)
        return TransparentResult(
            iterations=n, batch_size=int(batch_size), seed=int(seed), sparse=sparse, paged=pager is not None,
            clock="modeled" if clock is not None else "none",
            budget_bytes=pager.budget_pages * page_size if pager is not None else 0, table_bytes=table_bytes,
            loss=loss, io_stall_s=stall, step_wall_s=wall, charged_s=charged.copy(), pages_in=pin, pages_out=pout,
            faults=faults, init_io_s=float(init_io), init_pages_out=int(init_out), pager=final,
            start=start, end=end, wall_s=time.perf_counter() - t_start)
    finally:
        if pager is not None:
            # the tensors are unusable after close; drop the model first (nothing touches them now)
            net = None
            pager.close()
