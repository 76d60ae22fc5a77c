"""Committed goldens: arrays a fixed scenario must reproduce bit for bit (tests/data/*.npz)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

DATA = Path(__file__).resolve().parent.parent / "data"


def check_golden(got: dict[str, np.ndarray], name: str, what: str, regen: str) -> None:
    """Fail, naming the first differing array and index, unless ``got`` equals the golden ``name``."""
    want = np.load(DATA / name)
    assert sorted(got) == sorted(want.files)
    for k in sorted(got):
        a, b = got[k], want[k]
        if not (a.shape == b.shape and a.tobytes() == b.tobytes()):
            i = int(np.flatnonzero(a != b)[0]) if a.shape == b.shape else -1
            pytest.fail(f"{k}: {what} changed (first difference at index {i}, shapes {a.shape} {b.shape}); "
                        f"if intended, regenerate with `{regen}` and say why")


def regen_main(name: str, run: Callable[[], dict[str, np.ndarray]]) -> None:
    """``PYTHONPATH=tests/support python tests/ROOM/test_x.py --regen-golden``: record the golden anew (deliberately only)."""
    if sys.argv[1:] == ["--regen-golden"]:
        DATA.mkdir(exist_ok=True)
        res = run()
        np.savez_compressed(DATA / name, **res)
        print(f"wrote {DATA / name}: {sum(v.size for v in res.values())} values")
