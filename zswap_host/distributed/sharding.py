"""Which rank holds which rows: tables placed whole (greedy by bytes onto the least loaded rank), and
the largest table split row-wise over every rank when it alone exceeds a rank's share. Row shards
start on page boundaries, so a shard's pages are pages of the whole table (``PagedEmbedding.init_as``
then gives them the unsharded run's initial values)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Shard:
    """Rows ``[lo, hi)`` of table ``table``, held by ``rank``; ``first_page``: the page id its first
    weight page has in the whole tables' layout (one page cache over every table)."""

    table: int
    lo: int
    hi: int
    rank: int
    first_page: int

    @property
    def rows(self) -> int:
        return self.hi - self.lo


@dataclass(frozen=True)
class ShardPlan:
    """The shards of every rank: ``by_rank[r]`` in the order rank r's page cache holds them (tables
    ascending); ``table_rows``: the whole tables' rows; ``bytes_by_rank``: paged weight bytes."""

    ranks: int
    table_rows: tuple[int, ...]
    by_rank: tuple[tuple[Shard, ...], ...]
    bytes_by_rank: tuple[int, ...]
    split_table: int | None          # the table split row-wise (None: every table whole)

    def as_dict(self) -> dict:
        return {"ranks": self.ranks, "split_table": self.split_table, "bytes_by_rank": list(self.bytes_by_rank),
                "shards": [[(s.table, s.lo, s.hi) for s in shards] for shards in self.by_rank]}


def page_layout(rows, dim: int, optimizer: str = "sgd", page_size: int = 4096) -> np.ndarray:
    """The first page id of each table when one ``PagedEmbedding`` holds them all (its ``page_base``
    without the end), computed without building one."""
    n = np.asarray(rows, np.int64)
    weight = -(-n // (page_size // (4 * dim)))
    state = {"sgd": 0 * weight, "adagrad": -(-n // (page_size // 4)), "adam": 2 * weight}[optimizer]
    return np.concatenate([[0], np.cumsum(weight + state)[:-1]]).astype(np.int64)


def plan_shards(rows, dim: int, ranks: int, *, optimizer: str = "sgd", page_size: int = 4096,
                split_over: float = 1.0) -> ShardPlan:
    """Shard tables of ``rows[t]`` x ``dim`` fp32 over ``ranks``. The largest table is split row-wise
    (an equal number of pages per rank) when its bytes exceed ``split_over`` x (all bytes / ranks);
    the others go whole, largest first, to the rank with the fewest bytes (ties: lowest rank).
    Deterministic. ``ValueError`` for ranks < 1, a bad ``split_over`` or a table too small to split
    (fewer pages than ranks)."""
    if isinstance(ranks, bool) or int(ranks) != ranks or ranks < 1:
        raise ValueError(f"ranks must be a whole number >= 1, not {ranks!r}")
    if not split_over > 0:
        raise ValueError(f"split_over must be > 0, not {split_over}")
    n = np.asarray(rows, np.int64)
    R = page_size // (4 * dim)
    if R < 1:
        raise ValueError(f"a {dim}-float row does not fit a {page_size}-byte page")
    first = page_layout(n, dim, optimizer, page_size)
    nbytes = -(-n // R) * page_size
    load = np.zeros(ranks, np.int64)
    shards: list[list[Shard]] = [[] for _ in range(ranks)]
    order = sorted(range(n.size), key=lambda t: (-int(nbytes[t]), t))
    split = None
    if ranks > 1 and nbytes[order[0]] > split_over * nbytes.sum() / ranks:
        split = order.pop(0)
        pages = int(-(-n[split] // R))
        if pages < ranks:
            raise ValueError(f"table {split} has {pages} pages, too few to split over {ranks} ranks")
        cuts = [p * R for p in np.linspace(0, pages, ranks + 1).round().astype(np.int64)]
        cuts[-1] = int(n[split])
        for r in range(ranks):
            shards[r].append(Shard(split, int(cuts[r]), int(cuts[r + 1]), r, int(first[split]) + cuts[r] // R))
            load[r] += -(-(cuts[r + 1] - cuts[r]) // R) * page_size
    for t in order:
        r = int(np.argmin(load))
        shards[r].append(Shard(t, 0, int(n[t]), r, int(first[t])))
        load[r] += nbytes[t]
    if any(not s for s in shards):
        raise ValueError(f"{n.size} tables leave a rank of {ranks} without rows (split_over lower splits one)")
    by_rank = tuple(tuple(sorted(s, key=lambda x: x.table)) for s in shards)
    return ShardPlan(ranks, tuple(int(x) for x in n), by_rank, tuple(int(x) for x in load), split)
