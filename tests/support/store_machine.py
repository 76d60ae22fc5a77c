"""The backends' state machine (hypothesis): random sequences of swap_out / swap_in / discard / flush
(and gc_step / idle on the store) against a dict oracle, over whatever ``factory`` makes. Run on the
host by tests/store/test_properties.py, on a real zoned namespace by tests/qemu/guest_store.py."""

import numpy as np
import pytest
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from zswap_host import SwapFullError, SwapStore

PS = 4096
ID_SPACE = 500


def page(i: int, v: int) -> np.ndarray:
    return np.full(PS // 8, i * 7919 + v, np.int64).view(np.uint8)


class BackendMachine(RuleBasedStateMachine):
    factory = None

    @initialize()
    def setup(self):
        self.b = self.factory()
        self.oracle: dict[int, int] = {}
        self.version = 0
        self.host_written = 0                 # bytes of accepted swap_outs (distinct ids per batch)
        self.host_read = 0

    def teardown(self):
        self.b.close()

    def _check_all(self):
        if self.oracle:
            ids = np.array(sorted(self.oracle), np.int64)
            got = self.b.swap_in(ids)
            self.host_read += ids.size * PS
            want = np.stack([page(i, self.oracle[i]) for i in ids.tolist()])
            assert np.array_equal(got, want)

    @rule(start=st.integers(0, ID_SPACE - 1), length=st.integers(1, 160),
          scattered=st.lists(st.integers(0, ID_SPACE - 1), max_size=40), stream=st.integers(0, 3))
    def swap_out(self, start, length, scattered, stream):
        """A run of ids (a reclaim batch of neighbours) plus scattered ones: fills the device fast."""
        ids = [(start + k) % ID_SPACE for k in range(length)] + scattered
        self.version += 1
        arr = np.array(ids, np.int64)
        pages = np.stack([page(i, self.version) for i in ids])
        after = set(self.oracle) | set(ids)
        try:
            self.b.swap_out(arr, pages, stream)
        except SwapFullError:
            assert len(after) > self.b.capacity_pages, "SwapFullError although the pages fit"
            event("swap store full")
            self._check_all()
            return
        assert len(after) <= self.b.capacity_pages
        # the store keeps the last copy of an id repeated in a batch; Linux swap writes each
        self.host_written += (len(set(ids)) if isinstance(self.b, SwapStore) else len(ids)) * PS
        if len(after) > 0.8 * self.b.capacity_pages:
            event("over 80% full")
        for i in ids:
            self.oracle[i] = self.version

    @rule(data=st.data())
    def swap_in(self, data):
        if not self.oracle:
            return
        ids = data.draw(st.lists(st.sampled_from(sorted(self.oracle)), min_size=1, max_size=60))
        got = self.b.swap_in(np.array(ids, np.int64))
        want = np.stack([page(i, self.oracle[i]) for i in ids])
        assert np.array_equal(got, want)
        self.host_read += len(ids) * PS

    @rule(i=st.integers(0, ID_SPACE - 1))
    def swap_in_unknown(self, i):
        if i not in self.oracle:
            with pytest.raises(KeyError):
                self.b.swap_in(np.array([i]))

    @rule(ids=st.lists(st.integers(0, ID_SPACE - 1), max_size=60))
    def discard(self, ids):
        self.b.discard(np.array(ids, np.int64))
        for i in ids:
            self.oracle.pop(i, None)

    @rule()
    def flush(self):
        self.b.flush()

    @rule(max_pages=st.one_of(st.none(), st.integers(1, 64)))
    def gc_step(self, max_pages):
        if hasattr(self.b, "gc_step"):
            moved = self.b.gc_step(None if max_pages is None else max_pages * PS)
            assert moved % PS == 0 and 0 <= moved <= PS * (max_pages or len(self.oracle) or 1)
            self._check_all()

    @rule(seconds=st.sampled_from([0.0, 0.001, 0.05]))
    def idle(self, seconds):
        if hasattr(self.b, "idle"):
            self.b.idle(seconds)
            self._check_all()

    @invariant()
    def consistent(self):
        if hasattr(self, "b"):
            if hasattr(self.b, "check"):
                self.b.check()
            s = self.b.stats()
            assert s.pages_stored == len(self.oracle)
            assert (s.host_write_bytes, s.host_read_bytes) == (self.host_written, self.host_read)
