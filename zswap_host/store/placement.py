"""Placement policies: which write stream each swapped-out page joins.

Streams are numbered 0..n-1 for user data; the GC stream is separate (see ``SwapStore``).
"""

from __future__ import annotations

import numpy as np

USER_STREAMS = {"single": 1, "temporal": 1, "stream": None, "hotness": 2}
HOT, WARM = 0, 1


def user_streams(placement: str, max_streams: int) -> int:
    n = USER_STREAMS[placement]
    return max_streams if n is None else n


def assign(placement: str, ids: np.ndarray, stream: int, swap_counts: np.ndarray,
           n_streams: int, hot_threshold: int) -> np.ndarray | int:
    """Stream per page (an int when the whole batch goes to one stream).

    - single / temporal: the batch stays together, in the order given (pages swapped out together
      are stored together).
    - stream: the caller's stream id, folded onto the streams the device's open limit allows.
    - hotness: pages swapped out ``hot_threshold`` times or more are hot, the rest warm.
    """
    if placement in ("single", "temporal"):
        return 0
    if placement == "stream":
        return int(stream) % n_streams
    return np.where(swap_counts >= hot_threshold, HOT, WARM).astype(np.int64)
