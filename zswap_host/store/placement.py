"""Placement policies: which write stream each swapped-out page joins, as a registry (like victim
policies): the names live here only; ``StoreConfig`` validates against ``placements()`` and the
CLI offers them.

User streams are numbered ``0..n-1``; the GC stream is separate unless the placement shares
stream 0's zone with GC (``single``). Register your own::

    from zswap_host.store.placement import Placement, register_placement

    class ByParity(Placement):
        def user_streams(self, max_streams, open_limit):
            return 2
        def assign(self, handles, stream, swap_counts, n_streams, hot_threshold):
            return (handles & 1).astype(np.int64)

    register_placement("parity", ByParity())
    SwapStore(dev, StoreConfig(placement="parity"))
"""

from __future__ import annotations

import numpy as np

HOT, WARM = 0, 1


class Placement:
    """A placement policy. Override ``assign`` (and ``user_streams`` for more than one stream).

    ``gc_own_stream``: GC relocations get a write group of their own (else they share stream 0's).
    ``counts_swap_outs``: ``assign`` reads how often each page was swapped out; the store then keeps
    a discarded id's handle and count (the id may come back).
    """

    gc_own_stream = True
    counts_swap_outs = False

    def user_streams(self, max_streams: int, open_limit: int) -> int:
        """User streams (each with an open zone) given ``StoreConfig.max_streams`` and the device's
        open-zone limit (the GC stream needs one more)."""
        return 1

    def assign(self, handles: np.ndarray, stream: int, swap_counts: np.ndarray | None, n_streams: int,
               hot_threshold: int) -> np.ndarray | int:
        """Stream per page of a swap-out batch (an int when the whole batch goes to one stream).
        ``swap_counts`` is None unless ``counts_swap_outs``."""
        return 0


class Single(Placement):
    """One open zone for everything, GC included."""

    gc_own_stream = False


class Temporal(Placement):
    """Pages swapped out together are stored together, in swap-out order; GC survivors apart."""


class Streams(Placement):
    """The caller's stream id (e.g. one per embedding table), folded onto the streams the device's
    open limit allows."""

    def user_streams(self, max_streams: int, open_limit: int) -> int:
        return min(max_streams, max(1, open_limit - 1))

    def assign(self, handles, stream, swap_counts, n_streams, hot_threshold):
        return int(stream) % n_streams


class Hotness(Placement):
    """Pages swapped out ``hot_threshold`` times or more go to a hot zone, the rest to a warm one."""

    counts_swap_outs = True

    def user_streams(self, max_streams: int, open_limit: int) -> int:
        return 2

    def assign(self, handles, stream, swap_counts, n_streams, hot_threshold):
        return np.where(swap_counts >= hot_threshold, HOT, WARM).astype(np.int64)


_REGISTRY: dict[str, Placement] = {}


def register_placement(name: str, placement: Placement) -> Placement:
    """Register ``placement`` under ``name`` (re-registering a name replaces it). Returns it.
    ``TypeError`` unless it is a ``Placement``."""
    if not isinstance(placement, Placement):
        raise TypeError(f"a placement must be a Placement instance, not {type(placement).__name__}")
    _REGISTRY[name] = placement
    return placement


def get_placement(name: str) -> Placement:
    """The placement registered as ``name``; ``ValueError`` naming the registered ones otherwise."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown placement {name!r}: {', '.join(placements())} (register yours with "
                         f"register_placement; zswap-host loads it with --plugin, docs/plugins.md)") from None


def placements() -> list[str]:
    """Registered placement names, in registration order (the built-in ones first)."""
    return list(_REGISTRY)


register_placement("single", Single())
register_placement("temporal", Temporal())
register_placement("stream", Streams())
register_placement("hotness", Hotness())
