"""``SwappedModule``: what ``SwappedEmbeddingBag`` and ``SwappedEmbeddingBagCollection`` share — the
tables (``SwappedTables``), the lookup, the checkpoint paths, ``flush`` / ``close`` / ``stats``."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch import nn

from ..workloads.table_layout import ARRAYS
from . import checkpoint
from .function import pooled_lookup
from .inputs import Bags, EmbeddingIndexError, check_mode
from .optim import fused
from .tables import SwappedTables


class SwappedModule(nn.Module):
    """Tables named ``keys`` of ``rows[t]`` x ``dims[t]`` fp32, pooled with ``mode``, in one
    ``PagedEmbedding`` over ``backend`` within ``budget``; trained by a fused optimizer in backward.

    ``state_dict()`` holds each table's ``weight`` only (as ``nn.EmbeddingBag``'s; the optimizer's
    state is in ``optimizer_state_dict()``, as TorchRec keeps it apart): both materialise whole
    tables; their ``load_*`` stream in from the given tensors. ``save`` / ``load`` stream both ways
    (module ``checkpoint``).

    ``clock``: which clock the stall figures use (``clocks``: by default the backend device's modeled
    clock when it has one, else wall time; ``stats()["clock"]`` names it). ``discard_dirty`` and
    ``trace`` (a ``TraceBuilder`` recording every backend call) are ``PagedEmbedding``'s;
    ``page_cache`` is it.

    Budgets: a step whose pages do not fit the budget streams through it in pieces (forward and
    update alike, ``workloads.paged_stream``): any budget works that holds one row and its optimizer
    state (1 page for SGD, 2 for Adagrad, 3 for Adam; ``ValueError`` below that).

    Device errors (``DeviceIOError`` and the other ``ZswapError``s of the backend) cost a step, never
    the module: a forward that fails raises, pins nothing and ends the pending step (that step's
    backward raises ``RuntimeError`` saying so: its update was not applied); the step may be retried
    or skipped. A backward never loses its update: with the rows pinned it does no I/O; a streamed
    one whose write-back fails keeps the rest and finishes it before any later read of values (the
    next forward, ``read_rows``, a checkpoint or ``flush``, which raise while it cannot). A prefetch's
    device error is not raised: counted in ``stats()["prefetch_errors"]``, its pages come on demand.
    A failed ``save`` leaves no ``meta.json`` (``load`` refuses it); a failed ``load`` may have loaded
    part of the tables: retry it."""

    def __init__(self, keys, rows, dims, mode: str, *, backend, budget, optimizer, lr, eps, betas, seed: int,
                 page_size: int, clock, discard_dirty: bool, trace=None, pack_hot_rows=False) -> None:
        super().__init__()
        self.mode = check_mode(mode)
        self._keys = list(keys)
        self._tables = SwappedTables(rows, dims, backend=backend, budget=budget,
                                     optimizer=fused(optimizer, lr, eps, betas), seed=int(seed),
                                     page_size=int(page_size), clock=clock, discard_dirty=discard_dirty,
                                     trace=trace, pack_hot_rows=pack_hot_rows)
        self._anchor = torch.zeros(0, requires_grad=True)      # makes backward reach the tables

    # -- lookups -----------------------------------------------------------------------------
    def _lookup(self, bags: list[Bags | None]) -> list[torch.Tensor | None]:
        return pooled_lookup(self._tables, bags, self.mode, self._anchor)

    def _read_rows(self, t: int, indices) -> torch.Tensor:
        self._tables.check_open()
        self._tables.finish_prefetch()
        idx = np.asarray(indices.detach().cpu() if isinstance(indices, torch.Tensor) else indices, np.int64)
        try:
            rows = self._tables.store.peek_rows(t, idx.reshape(-1))
        except IndexError as e:
            raise EmbeddingIndexError(str(e)) from None
        return torch.from_numpy(rows).view(*idx.shape, -1)

    @property
    def page_cache(self):
        """The ``PagedEmbedding`` holding the tables: its counters and clocks (for instrumentation;
        change rows only through the module)."""
        return self._tables.store

    def _indices(self, step) -> list:
        """One upcoming step's lookups as per-table int64 arrays (None: table not in it)."""
        raise NotImplementedError

    @property
    def last_prefetch_error(self):
        """The device error that cut the last failed prefetch short, or None."""
        return self._tables.last_prefetch_error

    def prefetch(self, *upcoming) -> None:
        """Fault in the pages of upcoming steps' lookups (nearest first; each what ``forward`` takes
        as its lookups) while this step computes: called between a forward and its backward it
        starts at once, called before a forward it starts right after that forward's gather (see
        ``SwappedTables.prefetch``). Within the same budget; never changes a value (losses equal
        those without it). ``lookahead.prefetching`` wraps a data loader to call it for you."""
        self._tables.prefetch([self._indices(u) for u in upcoming])

    def wait_prefetch(self):
        """Wait for a running prefetch and return what it cost (``workloads.lookahead.Overlap``:
        device time on a modeled clock, wall time the caller blocked, pages brought in), or None if
        none ran since the last call or it failed: a device error is not raised (the prefetch is a
        hint; ``stats()["prefetch_errors"]``, the error in ``last_prefetch_error``), any other error
        of the worker is. The backward waits anyway; this is for a caller that times its steps or
        stops early."""
        self._tables.finish_prefetch()
        out, self._tables.last_prefetch = self._tables.last_prefetch, None
        return out

    # -- optimizer ---------------------------------------------------------------------------
    @property
    def optimizer(self):
        """The fused optimizer (``FusedOptimizer``: name, lr, eps, betas)."""
        return self._tables.optimizer

    @property
    def lr(self) -> float:
        """The fused optimizer's learning rate (settable, e.g. by a schedule)."""
        return self._tables.lr

    @lr.setter
    def lr(self, value: float) -> None:
        self._tables.lr = value

    # -- lifecycle ---------------------------------------------------------------------------
    def flush(self) -> None:
        """Write every dirty page to the backend and flush the backend's buffers to its device."""
        self._tables.flush()

    def close(self) -> None:
        """Discard the tables' pages from the backend and free the DRAM cache; the backend stays open
        (the caller owns it). The module cannot be used afterwards; a second ``close`` does nothing."""
        self._tables.close()

    def stats(self) -> dict:
        """The page cache's counters (``PagedEmbedding.stats``: lookups, hits, faults, pages written,
        ...), the optimizer, its per-table step counts, budget and table bytes, and the time figures,
        every ``*_s`` on the clock ``clock`` names (``"modeled"``: the device's SSD model;
        ``"wall"``; ``"caller"``: the ``clock=`` given; ``"none"``: no backend, no I/O):

        - ``io_stall_s``: the steps' demand I/O (faults and evictions in forwards, checkpoints, flush);
        - ``prefetch_stall_s``: prefetch I/O the compute beside it did not cover (modeled: per
          prefetch ``max(0, its device time - the wall time until the step needed it)``; wall: the
          time the step waited for the worker);
        - ``stall_s``: the two together, what the steps waited for the device;
        - ``device_busy_s``: the device's time in all of the module's I/O, prefetch included;
        - ``compute_s``: wall time from the first forward to the last backward, less the time in
          backend calls, in prefetches the step ran or waited for, and the cache's bookkeeping;
        - ``slowdown_vs_dram``: ``(compute_s + stall_s) / compute_s`` — the I/O's cost over a
          DRAM-only run of the same compute (None before a step).

        And ``failed_steps`` (forwards a device error failed), ``prefetch_errors`` and
        ``last_prefetch_error``, ``unsettled`` (an update waiting for its write-back)."""
        return self._tables.stats()

    # -- checkpoints -------------------------------------------------------------------------
    def save(self, path: str, chunk_bytes: int = checkpoint.CHUNK_BYTES) -> None:
        """Stream every table (weights, optimizer state, step counts) to directory ``path`` in chunks of
        about ``chunk_bytes``: works for tables larger than DRAM. The DRAM cache is left as it is."""
        checkpoint.save(self._tables, self._keys, path, chunk_bytes)

    def load(self, path: str, chunk_bytes: int = checkpoint.CHUNK_BYTES) -> None:
        """Stream a directory written by ``save`` back in (same keys, rows and dims; ``ValueError``
        otherwise). Ends the current step."""
        checkpoint.load(self._tables, self._keys, path, chunk_bytes)

    def _entry(self, t: int) -> str:
        """The state-dict name prefix of table t (``""`` for a single table)."""
        raise NotImplementedError

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        for t in range(len(self._keys)):
            destination[prefix + self._entry(t) + "weight"] = checkpoint.state_tensors(self._tables, t, ("weight",))["weight"]

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        st = self._tables.store
        mine = set()
        for t in range(len(self._keys)):
            k = prefix + self._entry(t) + "weight"
            mine.add(k)
            if k not in state_dict:
                missing_keys.append(k)
                continue
            x = state_dict[k]
            shape = st.array_shape(t, "weight")
            if tuple(x.shape) != shape:
                error_msgs.append(f"size mismatch for {k}: copying a param with shape {tuple(x.shape)} from "
                                  f"checkpoint, the shape in current model is {torch.Size(shape)}.")
                continue
            checkpoint.load_state_tensors(self._tables, t, {"weight": x})
        if strict:
            unexpected_keys.extend(k for k in state_dict if k.startswith(prefix) and k not in mine)

    def optimizer_state_dict(self) -> dict:
        """The fused optimizer's hyper-parameters and, per table key, its state tensors (``sum``,
        ``exp_avg``, ``exp_avg_sq`` as the optimizer keeps them) and ``step``. Materialises them."""
        o = self._tables.optimizer
        state = {}
        for t, key in enumerate(self._keys):
            state[key] = checkpoint.state_tensors(self._tables, t, ARRAYS[o.name][1:] + ("step",))
        return {"name": o.name, "lr": o.lr, "eps": o.eps, "betas": tuple(o.betas), "state": state}

    def load_optimizer_state_dict(self, state_dict: dict) -> None:
        """Restore ``optimizer_state_dict()``'s output (streamed in from its tensors). ``ValueError``
        for another optimizer, unknown table keys or wrong shapes (nothing loaded then)."""
        o = self._tables.optimizer
        if state_dict.get("name") != o.name:
            raise ValueError(f"optimizer state of {state_dict.get('name')!r}, this module's is {o.name!r}")
        st = self._tables.store
        state = state_dict.get("state", {})
        unknown = set(state) - set(self._keys)
        if unknown:
            raise ValueError(f"optimizer state for unknown tables {sorted(unknown)}")
        for t, key in enumerate(self._keys):
            for name, x in state.get(key, {}).items():
                want = () if name == "step" else st.array_shape(t, name)
                if tuple(torch.as_tensor(x).shape) != want:
                    raise ValueError(f"optimizer state {key}.{name}: shape {tuple(x.shape)}, want {want}")
        for t, key in enumerate(self._keys):
            if key in state:
                checkpoint.load_state_tensors(self._tables, t, state[key])
        self._tables.optimizer = dataclasses.replace(o, eps=float(state_dict.get("eps", o.eps)),
                                                     betas=tuple(state_dict.get("betas", o.betas)))
        self._tables.store.eps = self._tables.optimizer.eps
        self.lr = float(state_dict.get("lr", o.lr))
