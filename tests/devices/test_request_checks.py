"""``devices.request_checks.check_batch`` (many ranges at once, a few reductions) against ``check_aligned``
per range: the same ranges refused with the same message, for power-of-two and other block sizes."""
from __future__ import annotations

import numpy as np
import pytest

from zswap_host.devices.request_checks import check_aligned, check_batch
from zswap_host.errors import InvalidIOError

LIMIT = 1 << 30


def _first_refusal(offsets, lengths, block):
    for o, n in zip(offsets.tolist(), lengths.tolist()):
        try:
            check_aligned(o, n, block, LIMIT, "read")
        except InvalidIOError as e:
            return str(e)
    return None


@pytest.mark.parametrize("block", [512, 4096, 12288])
def test_check_batch_refuses_what_check_aligned_refuses(block):
    rng = np.random.default_rng(block)
    for _ in range(400):
        n = int(rng.integers(5, 40))
        offsets = rng.integers(0, LIMIT // block - 64, n).astype(np.int64) * block
        lengths = rng.integers(1, 16, n).astype(np.int64) * block
        k = int(rng.integers(0, n))
        bad = int(rng.integers(0, 6))                  # 0, 1: none; else one kind of bad range at k
        if bad == 2:
            offsets[k] += int(rng.integers(1, block))
        elif bad == 3:
            lengths[k] = 0
        elif bad == 4:
            offsets[k] = -block
        elif bad == 5:
            offsets[k] = LIMIT - block
        want = _first_refusal(offsets, lengths, block)
        if want is None:
            check_batch(offsets, lengths, block, LIMIT, "read")
        else:
            with pytest.raises(InvalidIOError) as e:
                check_batch(offsets, lengths, block, LIMIT, "read")
            assert str(e.value) == want
