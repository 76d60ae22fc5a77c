"""examples/train_dlrm.py, as README runs it: a user's own loop over the swapped modules, on the
committed Criteo-format sample, swapping and prefetching."""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_train_dlrm_example_runs_on_the_sample_and_swaps():
    r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "train_dlrm.py"), "--data",
                        os.path.join(REPO, "tests", "data", "criteo-sample.txt"), "--steps", "12"],
                       capture_output=True, text=True, cwd=REPO, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "step   11  loss" in r.stdout
    m = re.search(r"pages: (\d+) swapped in \((\d+) ahead of need\), (\d+) out", r.stdout)
    assert m and all(int(x) > 0 for x in m.groups()), r.stdout
    lines = open(os.path.join(REPO, "examples", "train_dlrm.py")).read().splitlines()
    assert len(lines) <= 60                      # the bound for a user's loop
