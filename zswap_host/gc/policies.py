"""Victim policies: which full zone the GC scheduler reclaims next.

A policy is any callable taking a ``ZoneTable`` (numpy columns over the candidate zones) and
returning the chosen zone's index (one of ``table.zone``) or None to reclaim nothing. Register one by
name, without touching the package::

    from zswap_host.gc import register_victim_policy

    @register_victim_policy("oldest-emptiest")
    def pick(table):
        score = table.age * (1 - table.utilization)
        return int(table.zone[score.argmax()])

    SwapStore(dev, StoreConfig(victim="oldest-emptiest"))

or subclass ``VictimPolicy`` and register an instance. Time in the table is the store's write clock
(bytes the store has written so far), so policies behave the same with or without a timing model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class ZoneTable:
    """Candidate zones (full, not being written) as columns of equal length."""

    zone: np.ndarray            # zone index
    valid_bytes: np.ndarray     # live data in the zone
    capacity_bytes: np.ndarray  # data capacity of the zone (footer excluded)
    last_write: np.ndarray      # write clock when the zone was last written
    opened_at: np.ndarray       # write clock when the zone was first written (its fill order)
    resets: np.ndarray          # times the zone has been reset (erase count)
    now: float                  # current write clock

    @property
    def utilization(self) -> np.ndarray:
        return self.valid_bytes / np.maximum(self.capacity_bytes, 1)

    @property
    def age(self) -> np.ndarray:
        return self.now - self.last_write

    def __len__(self) -> int:
        return int(self.zone.size)


Policy = Callable[[ZoneTable], "int | None"]


class VictimPolicy:
    """Base class for policies with state or parameters: override ``select``."""

    def select(self, table: ZoneTable) -> int | None:
        raise NotImplementedError

    def __call__(self, table: ZoneTable) -> int | None:
        return self.select(table)


_REGISTRY: dict[str, Policy] = {}


def register_victim_policy(name: str, policy: Policy | None = None):
    """Register ``policy`` under ``name``; usable as a decorator. Re-registering a name replaces it."""
    if policy is not None:
        _REGISTRY[name] = policy
        return policy

    def deco(fn: Policy) -> Policy:
        _REGISTRY[name] = fn
        return fn

    return deco


def get_victim_policy(name: str) -> Policy:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown victim policy {name!r}; registered: {', '.join(sorted(_REGISTRY))} (register "
                         f"yours with register_victim_policy; zswap-host loads it with --plugin, "
                         f"docs/plugins.md)") from None


def victim_policies() -> list[str]:
    return sorted(_REGISTRY)


@register_victim_policy("greedy")
def greedy(table: ZoneTable) -> int | None:
    """Fewest valid bytes: least to copy now."""
    return int(table.zone[np.argmin(table.valid_bytes)]) if len(table) else None


@register_victim_policy("cost-benefit")
def cost_benefit(table: ZoneTable) -> int | None:
    """LFS (Rosenblum & Ousterhout 1992): maximise age x (1 - u) / (1 + u)."""
    if not len(table):
        return None
    u = table.utilization
    score = (table.age + 1.0) * (1.0 - u) / (1.0 + u)
    return int(table.zone[np.argmax(score)])


@register_victim_policy("fifo")
def fifo(table: ZoneTable) -> int | None:
    """The zone filled first (a log's tail), whatever it holds."""
    return int(table.zone[np.argmin(table.opened_at)]) if len(table) else None
