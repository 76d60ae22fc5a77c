"""Every name an experiment script or example imports from ``zswap_host`` exists: a module split or
a rename that leaves a script behind fails here, not the next time someone runs the study (the
scripts themselves run for minutes to hours, so few of them run in the suite)."""
from __future__ import annotations

import ast
import importlib
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = sorted(os.path.join(d, f) for d in ("experiments", "examples")
                 for f in os.listdir(os.path.join(ROOT, d)) if f.endswith(".py"))


def missing_names(path: str) -> list[str]:
    """``module.name`` for each ``from zswap_host... import name`` of the file that does not resolve."""
    tree = ast.parse(open(path).read())
    missing = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                and node.module.split(".")[0] == "zswap_host"):
            continue
        module = importlib.import_module(node.module)
        for alias in node.names:
            if alias.name == "*" or hasattr(module, alias.name):
                continue
            try:
                importlib.import_module(f"{node.module}.{alias.name}")
            except ImportError:
                missing.append(f"{node.module}.{alias.name}")
    return missing


@pytest.mark.parametrize("path", SCRIPTS)
def test_a_scripts_zswap_host_names_exist(path):
    assert missing_names(os.path.join(ROOT, path)) == []


def test_a_missing_name_is_seen(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("from zswap_host.workloads.train import train, preset\n")
    assert missing_names(str(script)) == ["zswap_host.workloads.train.train"]
