"""The pager's hang list (issue 33): each call a user may make over a paged array — numpy
reductions with and without a cast, np.dot, copies, take, fancy indexing, scalar access and small
slice writes in a loop, many threads, torch ops, an adopted EmbeddingBag forward and backward,
close() during faults — runs in a child process (tests/support/pager_hang_child.py) with a timeout, and
must end: with the right result, or, where a call holding the GIL faults and the Python resolver
cannot run, with the abort timer's message. The expected outcome of each is what docs/design.md
("Which calls are safe") states; a call moving from one side to the other fails here. With the
backend served from a process of its own (``Pager.process``) no Python runs on the fault path, so
every call ends correct (close() during faults still ends in its SIGBUS)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

pytest.importorskip("zswap_host.pager")
if not os.path.exists("/dev/userfaultfd") and os.geteuid() != 0:
    pytest.skip("userfaultfd needs root here", allow_module_level=True)

import pager_hang_child  # noqa: E402 - after the skips

CHILD = os.path.abspath(pager_hang_child.__file__)
ABORT_S = "6"      # the host's backend calls take milliseconds: 6 s without the resolver is a deadlock

OK, ABORT, CLOSED = "ok", "abort", "sigbus at close"
EXPECT = {
    "np_sum": OK, "np_sum_float64": ABORT, "np_mean": ABORT, "np_sum_float_array": OK, "np_dot": OK,
    "np_copy": OK, "np_astype": OK, "np_take": OK, "np_fancy_index": OK, "np_fancy_write": OK,
    "np_slice_assign": OK, "np_copyto": OK,
    "scalar_loop": ABORT, "small_slice_writes": ABORT,
    "threads_copy": OK, "threads_sum": OK, "threads_scalar": ABORT,
    "torch_sum": OK, "torch_double_sum": OK, "torch_index": OK, "torch_matmul": OK, "torch_embedding_bag": OK,
    "close_during_faults": CLOSED,
}


# the backend in a process of its own: nothing deadlocks
EXPECT_PROCESS = {case: CLOSED if outcome == CLOSED else OK for case, outcome in EXPECT.items()}


def test_every_case_has_an_expected_outcome():
    assert set(EXPECT) == set(pager_hang_child.CASES)
    assert {c for c, o in EXPECT.items() if o == ABORT} == {"np_sum_float64", "np_mean", "scalar_loop",
                                                             "small_slice_writes", "threads_scalar"}


@pytest.mark.parametrize("mode", ["thread", "process"])
@pytest.mark.parametrize("case", list(EXPECT))
def test_the_call_ends(case, mode):
    # process mode expects no deadlock: a long abort timer keeps a loaded machine from faking one
    env = {**os.environ, "ZSWAP_PAGER_ABORT_S": ABORT_S if mode == "thread" else "120"}
    r = subprocess.run([sys.executable, CHILD, case, mode], capture_output=True, text=True, timeout=300, env=env)
    why = (r.returncode, r.stdout, r.stderr[-3000:])
    expect = EXPECT[case] if mode == "thread" else EXPECT_PROCESS[case]
    assert f"start {case}" in r.stdout, why
    if expect == OK:
        assert r.returncode == 0 and "result ok" in r.stdout, why
    elif expect == ABORT:
        assert r.returncode == -signal.SIGABRT, why
        assert "zswap pager: aborting: page faults have waited" in r.stderr and "holds the GIL" in r.stderr, why
        assert "result" not in r.stdout, why
    else:  # close() while the copying thread waits on a fault: that thread gets SIGBUS with a line
        assert r.returncode == -signal.SIGBUS, why
        assert "the pager was closed while this thread waited for a page of it" in r.stderr, why
        assert "closed after the copy" not in r.stdout, why
