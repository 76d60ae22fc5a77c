"""GUEST side: the vectorised numpy operations the paged embedding and the store rely on give the
same answers as plain Python inside the guest. QEMU 7.2's TCG got numpy's AVX2 argsort/argselect
wrong under ``-cpu max`` (np.unique's inverse, np.argpartition); emulator/zns_vm.py picks a CPU
model without AVX, and this check says so at once if a guest CPU ever computes wrongly again."""

import numpy as np
import pytest

rng = np.random.default_rng(7)
CASES = [rng.integers(0, max(2, n // 3), n).astype(dt) for n in (17, 1000, 9000)
         for dt in (np.int64, np.int32, np.uint32, np.float32, np.float64)]


@pytest.mark.parametrize("a", CASES, ids=[f"{a.dtype}-{a.size}" for a in CASES])
def test_unique_argsort_argpartition_agree_with_python(a):
    ref = sorted(a.tolist())
    u, inv = np.unique(a, return_inverse=True)
    assert u.tolist() == sorted(set(ref))
    assert np.array_equal(u[inv.reshape(-1)], a)
    assert a[np.argsort(a)].tolist() == ref
    k = min(a.size, 50)
    assert sorted(a[np.argpartition(a, k - 1)[:k]].tolist()) == ref[:k]
