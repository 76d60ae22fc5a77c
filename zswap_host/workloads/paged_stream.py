"""A step whose pages do not fit the DRAM budget, streamed through the page cache in pieces.

A batch may need more pages than ``PagedEmbedding``'s budget holds (a large batch at a small
budget). ``gather`` then cuts the step's unique rows (sorted by page) into pieces whose pages —
weights and optimizer state — fit the budget, brings each piece in, copies its rows and their
optimizer state out, and unpins it before the next one: the caller pools over the copies (a
(U, dim) array per table, what pooling reads anyway), as FBGEMM's cache reads the rows it cannot
cache straight from host memory. ``apply`` computes the fused optimizer's update from those copies
(no other step ran in between: a step's rows change only through its own update, and a step ends
at the next forward, load or close), so it reads nothing; ``write_back`` then puts the new rows
and states into their pages piece by piece. The result equals an unbounded cache's bit for bit:
the same rows, the same arithmetic, one step count per table.

Failures. A device error in ``gather`` leaves no page pinned and no step pending (the caller retries
or skips the step). A device error in ``write_back`` keeps the pieces not yet written with the cache
(``apply`` returns the step, which the cache keeps): every later read of values finishes them first
(``PagedEmbedding.settle``), so an applied update is never lost nor seen half-written.

The cache's own steps these functions need (bring pages in, its rows' views, its update rule) come
as a ``CachePort`` the cache hands over, so this module reads only the cache's public state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, NamedTuple

import numpy as np


class CachePort(NamedTuple):
    """The cache's steps a streamed step uses (``PagedEmbedding``'s ``GatherApply`` and ``PageCache``,
    bound to them)."""
    make_resident: Callable     # (sorted unique pages): resident and pinned; atomic on error
    view: Callable              # (table) -> its frames' rows, (frames, slots, dim)
    states: Callable            # (pending, selection, view) -> the rows' optimizer state arrays
    put: Callable               # (pending, selection, view, rows, states): write rows and states
    dirtied: Callable           # (frames, state frames): mark them dirty
    rule: Callable              # () -> the built-in optimizer's update rule


@dataclass
class Pending:
    """The rows of ``PagedEmbedding``'s last gather (or of one piece of a streamed step), until
    they are updated: per unique row its frame and slot, its table, and its state frames (Adagrad:
    accumulator frame/slot; Adam: exp_avg/exp_avg_sq frames, same slot as the row)."""

    f: np.ndarray
    slot: np.ndarray
    table: np.ndarray
    sf: np.ndarray | None
    sslot: np.ndarray | None
    rows: np.ndarray | None          # (U, dim) when every table has one dim
    tables: np.ndarray | None = None  # gather_tables: the tables in the step
    order: np.ndarray | None = None   # packing: the unique rows in (table, row) order (``_ordered``)
    rank: np.ndarray | None = None    # ... and each one's place in that order


@dataclass
class StreamedStep:
    """One streamed step. Per unique row (sorted by page): its weight page and slot, its table,
    its state pages (Adagrad: (U,), Adam: (2, U); None for SGD) and state slots (Adagrad). ``cuts``:
    the pieces' bounds over the unique rows. ``rows[t]`` / ``states[t]``: table t's rows and optimizer
    state, copied at ``gather``, replaced by their updated values at ``apply``. ``done``: pieces
    written back."""

    upage: np.ndarray
    uslot: np.ndarray
    table: np.ndarray
    spage: np.ndarray | None
    sslot: np.ndarray | None
    cuts: np.ndarray
    tcut: np.ndarray
    rows: list
    states: list
    flat: np.ndarray | None                 # rows of every table as one array (tables of one dim)
    tables: np.ndarray | None = None        # the tables in the step (set by gather_tables)
    done: int = 0
    pieces: list = field(default_factory=list)
    order: np.ndarray | None = None         # packing: the rows in row order (GatherApply._ordered)
    rank: np.ndarray | None = None

    def flat_rows(self) -> np.ndarray | None:
        return self.flat


def pages_per_row(emb) -> int:
    """Pages one row needs resident at once: its weight page and its optimizer state's."""
    return 1 + {"sgd": 0, "adagrad": 1, "adam": 2}[emb.optimizer]


def _pieces(emb, upage: np.ndarray, spage: np.ndarray | None) -> np.ndarray:
    """Bounds of consecutive pieces of the unique rows, each needing at most ``nframes`` pages:
    greedy over the running count of distinct pages (weight and state pages both rise with the
    sorted rows), one ``searchsorted`` per piece."""
    U = upage.size
    k0 = pages_per_row(emb)
    n = emb.nframes
    if n < k0:
        raise ValueError(f"the DRAM budget holds {n} page{'s' if n != 1 else ''}; one row with its "
                         f"{emb.optimizer} state needs {k0}: raise the budget")
    inc = np.zeros(U, np.int64)
    inc[1:] = upage[1:] != upage[:-1]
    if emb.optimizer == "adam":
        inc *= 3                            # exp_avg and exp_avg_sq pages are the weight page's twins
    elif emb.optimizer == "adagrad":
        inc[1:] += spage[1:] != spage[:-1]
    cum = np.cumsum(inc)
    cuts = [0]
    while cuts[-1] < U:
        a = cuts[-1]
        cuts.append(int(np.searchsorted(cum, cum[a] + n - k0, side="right")))
    return np.asarray(cuts, np.int64)


def _piece(emb, port: CachePort, step: StreamedStep, a: int, b: int):
    """Make rows [a, b) of the step resident (only they pinned); their frames as a ``Pending``."""
    up = step.upage[a:b]
    sp = step.spage[..., a:b] if step.spage is not None else None
    pages = np.unique(up) if sp is None else np.union1d(up, sp.reshape(-1))
    emb.cache.pin.fill(False)
    port.make_resident(pages)
    f = emb.cache.page_frame[up].astype(np.int64)
    sf = emb.cache.page_frame[sp].astype(np.int64) if sp is not None else None
    return Pending(f, step.uslot[a:b], step.table[a:b], sf,
                    step.sslot[a:b] if step.sslot is not None else None, None)


def _spans(step: StreamedStep, a: int, b: int):
    """(table, slice in the piece, slice in the table's copies) for each table among rows [a, b)."""
    for t in range(int(step.table[a]), int(step.table[b - 1]) + 1):
        lo, hi = max(a, int(step.tcut[t])), min(b, int(step.tcut[t + 1]))
        if lo < hi:
            yield t, slice(lo - a, hi - a), slice(lo - int(step.tcut[t]), hi - int(step.tcut[t]))


def gather(emb, port: CachePort, upage, uslot, table, spage, sslot) -> StreamedStep:
    """Copy the rows (sorted unique keys' pages and slots) and their optimizer state out of the
    cache, piece by piece within the budget. ``ValueError`` if one row does not fit; a device error
    propagates with nothing pinned."""
    cuts = _pieces(emb, upage, spage)
    T = len(emb.tables)
    tcut = np.searchsorted(table, np.arange(T + 1))
    U = upage.size
    flat = np.empty((U, emb.dim), np.float32) if emb.uniform else None
    rows, states = [], []
    nstate = pages_per_row(emb) - 1
    for t in range(T):
        u = int(tcut[t + 1] - tcut[t])
        d = int(emb.dims[t])
        rows.append(flat[tcut[t]:tcut[t + 1]] if flat is not None else np.empty((u, d), np.float32))
        states.append(tuple(np.empty((u,) if emb.optimizer == "adagrad" else (u, d), np.float32)
                            for _ in range(nstate)))
    step = StreamedStep(upage, uslot, table, spage, sslot, cuts, tcut, rows, states, flat)
    try:
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            p = _piece(emb, port, step, a, b)
            for t, ps, ts in _spans(step, a, b):
                view = port.view(t)
                rows[t][ts] = view[p.f[ps], p.slot[ps]]
                for k, s in enumerate(port.states(p, ps, view)):
                    states[t][k][ts] = s
            emb.cache.pin.fill(False)
    except BaseException:
        emb.cache.pin.fill(False)
        raise
    return step


def apply(emb, port: CachePort, step: StreamedStep, present: np.ndarray, grads, rule) -> StreamedStep | None:
    """The update of a streamed step (``PagedEmbedding.apply_tables``' contract): new rows and
    states from the copies, then ``write_back``. A device error while writing back does not undo
    or drop the update: the step is returned, its rest to be written by ``write_back`` (the cache's
    ``settle``); None when everything was written."""
    from ..errors import ZswapError
    emb.steps[present] += 1
    builtin = port.rule() if rule is None else None
    for t in present.tolist():
        rows = step.rows[t]
        if rows.shape[0] == 0:
            continue
        g = np.asarray(grads[t], np.float32)
        if g.shape != rows.shape:
            raise ValueError(f"table {t}: grad shape {g.shape} != rows shape {rows.shape}")
        new_rows, new_states = builtin(rows, g, step.states[t]) if rule is None else \
            rule(t, rows, g, step.states[t])
        step.rows[t] = np.asarray(new_rows, np.float32)
        step.states[t] = tuple(new_states)
    try:
        write_back(emb, port, step)
    except ZswapError:
        return step
    return None


def write_back(emb, port: CachePort, step: StreamedStep) -> None:
    """Write the step's rows and states into their pages, from the first piece not yet written.
    A device error propagates with nothing pinned; the pieces written stay written."""
    try:
        while step.done < len(step.cuts) - 1:
            a, b = int(step.cuts[step.done]), int(step.cuts[step.done + 1])
            p = _piece(emb, port, step, a, b)
            for t, ps, ts in _spans(step, a, b):
                view = port.view(t)
                port.put(p, ps, view, step.rows[t][ts], tuple(s[ts] for s in step.states[t]))
            port.dirtied(p.f, p.sf)
            emb.cache.pin.fill(False)
            step.done += 1
    except BaseException:
        emb.cache.pin.fill(False)
        raise
