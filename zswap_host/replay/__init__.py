"""Trace replay through named swap runs on payload-free emulated devices (``zswap-host replay``,
``experiments/mlperf_replay.py``): the run names and how each is built (``runs.py``), the trace and
what sizes its devices (``trace_input.py``), one run's replay and measurement (``measure.py``), a run
in a process of its own (``isolate.py``), the resumable record (``journal.py``); ``session.py``
composes them."""

from .journal import Journal
from .measure import replay_run
from .runs import DEFAULT_RUNS, RENAMED_RUNS, RUNS, ReplayError, Sizing, check_runs, make_run
from .session import ReplaySpec, run_replay
from .trace_input import ReplayTrace, ensure_trace

__all__ = ["DEFAULT_RUNS", "Journal", "RENAMED_RUNS", "RUNS", "ReplayError", "ReplaySpec", "ReplayTrace", "Sizing", "check_runs",
           "ensure_trace", "make_run", "replay_run", "run_replay"]
