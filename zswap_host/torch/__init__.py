"""Swapped embedding tables as PyTorch modules: rows in the paged store, within a DRAM budget, over
any ``SwapBackend`` (the host-managed store on a ZNS device, the Linux-swap model on a conventional
SSD, or none: DRAM only).

- ``SwappedEmbeddingBag(num_embeddings, embedding_dim, mode, backend=, budget=, optimizer=, lr=)``:
  ``nn.EmbeddingBag``'s ``forward(input, offsets=None, per_sample_weights=None)`` (1-D with offsets,
  2-D fixed-size bags; modes ``"sum"`` and ``"mean"``).
- ``SwappedEmbeddingBagCollection(tables, ...)``: many tables in one budget and one backend (a
  stream per table), ``forward(features)`` with a ``KeyedJagged`` or a dict key -> (values,
  offsets), returning key -> pooled (or one concatenated tensor).

Contract.

- Training: the modules' rows are not ``nn.Parameter``s. The forward gathers the step's rows (every
  table's at once, pinned) and pools them with torch's own ``F.embedding_bag``; the backward hands
  the rows' gradients to a fused optimizer (``FusedOptimizer``: SGD, row-wise Adagrad, SparseAdam's
  Adam) that updates them in place, as FBGEMM's table-batched embeddings do. The rest of the model
  trains with any torch optimizer. One backward per forward; gradient accumulation over several
  forwards is not supported (the second forward unpins the first one's rows: its backward raises).
- Numerics: with ``budget=1.0`` a module equals ``nn.EmbeddingBag`` + the torch optimizer named in
  ``optim`` bit for bit; swapping never changes a value (a smaller budget trains bit-identically).
- Checkpoints: ``save(path)`` / ``load(path)`` stream page by page (tables larger than DRAM);
  ``state_dict()`` (weights, as ``nn.EmbeddingBag``'s) and ``optimizer_state_dict()`` materialise
  whole tables; their ``load_*`` stream from the given tensors (``torch.load(..., mmap=True)``).
  See ``checkpoint``.
- Lookahead: ``prefetch(*upcoming)`` faults in the pages of upcoming steps' lookups while the
  current step computes (a worker thread; synchronous on a modeled clock), never evicting a page the
  current or a queued step needs; ``prefetching(loader, module, depth)`` calls it for a loop.
- Any budget holding one row and its optimizer state (1, 2 or 3 pages): a step needing more pages
  streams through the budget in pieces, forward and update alike, with equal results.
- Faults: a device error costs one step, never the module or an update — a failed forward raises
  and pins nothing (the pending step's backward then raises: not applied); a backward never loses
  its update; a failed prefetch is counted, not raised. See ``SwappedModule``.
- Clocks: ``stats()`` reports stall on the backend device's modeled clock when it has one (else wall
  time; ``clock=`` overrides) and names it in ``stats()["clock"]``, with the device's busy time and
  the slowdown over DRAM (``clocks``, ``SwappedModule.stats``).
- Hot rows packed together: ``pack_hot_rows=True`` (or a ``RowPacking``: ``every`` steps between
  repacks, default 50; ``max_rows`` moved per repack; ``decay`` of the counts, 0.9; tier ``growth``,
  1.25) keeps a row -> slot map per table, counts the steps each row is looked up in (decayed at
  every repack), and every ``every`` steps, at the start of a forward, moves rows so that the most
  looked-up ones share pages (tiers of slots by rank; a row moves only when its rank leaves its
  tier). Their values and optimizer state move with them within the pages of the slots involved,
  made resident together (within the budget's unpinned frames: that bounds the moves) and dirtied:
  the cost is those pages' faults and later write-backs (``stats()``: ``repacks``, ``rows_moved``,
  ``repack_pages``, ``repack_faults``) and 10 bytes a row of DRAM outside the budget
  (``pack_bytes``). Guarantees: no value ever changes — forwards, updates, losses, ``state_dict``,
  ``optimizer_state_dict`` and checkpoints (row order, loadable with or without packing) equal
  those without it bit for bit; a repack's device error moves nothing, is counted
  (``repack_errors``, ``last_repack_error``), never raised, and the next step tries again. A
  prefetch issued before a repack may have brought pages the moved rows left (their rows then fault
  in on demand).
- ``flush()`` writes dirty pages to the backend; ``close()`` discards the tables' pages from the
  backend and frees the cache; ``stats()`` reports the page cache's counters. The backend belongs to
  the caller: modules never close it; several modules may share it (disjoint page ids, ``ranges``).
- Not supported: ``mode="max"``, ``padding_idx``, ``max_norm``, ``scale_grad_by_freq``, devices
  other than the CPU.
"""

try:
    import torch  # noqa: F401  (the real torch: this package is zswap_host.torch)
except ImportError as e:  # pragma: no cover - the dlrm extra is optional
    raise ImportError("zswap_host.torch needs PyTorch: pip install 'zswap-host[dlrm]' (torch==2.13.0)") from e

from .collection import SwappedEmbeddingBagCollection
from .embedding_bag import SwappedEmbeddingBag
from .inputs import EmbeddingIndexError, KeyedJagged
from .lookahead import prefetching
from .optim import OPTIMIZERS, FusedOptimizer
from ..workloads.row_packing import RowPacking

__all__ = ["EmbeddingIndexError", "FusedOptimizer", "KeyedJagged", "OPTIMIZERS", "RowPacking", "SwappedEmbeddingBag",
           "SwappedEmbeddingBagCollection", "prefetching"]
