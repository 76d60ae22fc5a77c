"""``zswap-host bench``: DLRM training in DRAM only and over five swap configurations, side by side,
with the attribution chain (batching, lookahead, aggregation, ZNS) and a summary against the best
Linux run; on real devices, beside each run its model twin (the same run on an emulated device of the
same geometry, :mod:`.twin`). See :mod:`.runs`."""

from .chain import LINUX_RUNS, STEPS, best_linux_run, chain
from .compute import BASES, ComputeBasis, charged_compute, measure_compute
from .plan import RUNS, SIZINGS, SWAP_RUNS, BenchError, BenchSpec, Plan, open_backends, plan
from .runs import run_bench
from .table import format_table
from .twin import model_twin

__all__ = ["BASES", "LINUX_RUNS", "RUNS", "SIZINGS", "STEPS", "SWAP_RUNS", "BenchError", "BenchSpec", "ComputeBasis",
           "Plan", "best_linux_run", "chain", "charged_compute", "format_table", "measure_compute", "model_twin",
           "open_backends", "plan", "run_bench"]
