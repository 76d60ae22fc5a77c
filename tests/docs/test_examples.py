"""The examples as a user runs them: examples/train_dlrm.py (a user's own loop over the swapped
modules, on the committed Criteo-format sample, swapping and prefetching) and
examples/custom_victim_policy.py (a user's victim policy swept on Ray), examples/pager_numpy.py
(unmodified numpy over a paged array)."""

import json
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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


def test_custom_victim_policy_example_sweeps_its_policy_on_ray(tmp_path):
    """The researcher's loop: a policy registered with the documented decorator, swept in one command
    on Ray (the file is its own --plugin, so the workers know the policy), in at most 30 lines."""
    example = os.path.join(REPO, "examples", "custom_victim_policy.py")
    r = subprocess.run([sys.executable, example, "--out", str(tmp_path / "out"), "--trace", str(tmp_path / "trace")],
                       capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = (tmp_path / "out" / "sweep.csv").read_text().splitlines()
    assert sorted(row.split(",")[1] for row in rows[1:]) == ["cost-benefit", "greedy", "wear-aware"]
    summary = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert summary["spec"]["executor"] == "ray" and f"--plugin {example}" in summary["command"]
    assert len(open(example).read().splitlines()) <= 30


@pytest.mark.parametrize("serve", ["thread", "process"])
def test_pager_numpy_example_pages_a_plain_array_within_its_budget(serve):
    """examples/pager_numpy.py (issue 33), small: unmodified numpy calls over a paged array 4x its
    budget, the store in a thread or in a process of its own; the sum it checks at the end equals the
    read-modify-writes it made."""
    r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "pager_numpy.py"), "--size-mib", "16",
                        "--budget-mib", "4", "--seconds", "1", "--device", "emu://?zones=16&zone_size=4MiB&preset=none",
                        "--serve", serve], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r"([\d,]+) faults/s, ([\d.]+) MB/s of paging \(([\d,]+) pages in, ([\d,]+) out\)", r.stdout)
    assert m and all(float(x.replace(",", "")) > 0 for x in m.groups()), r.stdout
    assert "resident <= budget: True, sum checks: True" in r.stdout, r.stdout


@pytest.mark.parametrize("serve", ["thread", "process"])
def test_pager_torch_example_trains_a_plain_embedding_bag_to_the_dram_losses(serve):
    """examples/pager_torch.py (issue 33), small: an adopted nn.EmbeddingBag 4x its budget pages in
    and out, and its losses equal the same table's in DRAM."""
    r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "pager_torch.py"), "--rows", "16384",
                        "--dim", "64", "--budget-mib", "1", "--steps", "4", "--batch", "256", "--serve", serve],
                       capture_output=True, text=True, cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r"([\d,]+) faults, ([\d,]+) pages in, ([\d,]+) out", r.stdout)
    assert m and all(int(x.replace(",", "")) > 0 for x in m.groups()), r.stdout
    assert f"({serve} mode)" in r.stdout and "resident <= budget: True; losses equal: True" in r.stdout, r.stdout


def test_pager_torch_example_refuses_a_single_step():
    r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "pager_torch.py"), "--steps", "1"],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2 and "--steps must be at least 2" in r.stderr and "Traceback" not in r.stderr
