"""Workloads that drive a swap backend: page traces (synthetic DLRM-like, recorded, replayed)."""

from .trace import SwapTrace, replay, synthetic_dlrm_trace

__all__ = ["SwapTrace", "replay", "synthetic_dlrm_trace"]
