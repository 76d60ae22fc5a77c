"""Workloads that drive a swap backend: page traces (synthetic DLRM-like, recorded, replayed), and
DLRM training runs with paged embedding tables (``train``: presets and results; the loop, which
needs the ``dlrm`` extra, is ``zswap_host.torch.training.train``)."""

from .criteo import CriteoSynth, DataConfig, data_preset
from .paged_embedding import PagedEmbedding
from .chunked_trace import ChunkedTrace, TraceFileError
from .trace import SwapTrace, TraceBuilder, replay, synthetic_dlrm_trace
from .trace_gen import TraceGenError, generate_dlrm_trace
from .train import PRESETS, BenchPreset, TrainResult, footprint, preset

__all__ = ["SwapTrace", "replay", "synthetic_dlrm_trace", "ChunkedTrace", "TraceFileError", "TraceGenError",
           "generate_dlrm_trace",
           "BenchPreset", "CriteoSynth", "DataConfig", "PRESETS", "PagedEmbedding", "TraceBuilder",
           "TrainResult", "data_preset", "footprint", "preset"]
