"""Sweeps of the store's knobs over a recorded or generated trace (``zswap-host sweep``): the grid
of placements x victim policies x utilisations x interfaces (``grid.py``), one pure function per
point (``point.py``, measuring as ``replay_run.py`` does), a serial and a Ray executor with retries
(``serial.py``, ``ray_executor.py``) whose outputs are equal, and the CSV, JSON and plot
(``output.py``); ``run.py`` composes them."""

from .grid import Point, SweepError, known, make_grid, parse_utilisations
from .point import run_point
from .run import EXECUTORS, Generate, SweepSpec, check, run_sweep
from .serial import run_serial

__all__ = ["EXECUTORS", "Generate", "Point", "SweepError", "SweepSpec", "check", "known", "make_grid",
           "parse_utilisations", "run_point", "run_serial", "run_sweep"]
