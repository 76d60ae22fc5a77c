"""HOST side of issue 15's guest comparison (experiments/transparent_guest.py holds the config and the
guest command and writes experiments/results/transparent_guest/; this test does not): boots the 6.1
guest once and trains the plain-``nn.EmbeddingBag`` DLRM in DRAM, under the kernel's swap with a
cgroup ``memory.max`` of the bench's budget, and through the pager over the store on the zoned
namespace — on the ``tiny`` preset (the experiment: ``quick``).

Checked is what the guest recorded: all four ran; both swapped runs swapped during training; their
losses and final tables equal the DRAM run's bit for bit; every page the store returned matched its
fingerprint (``VerifyingBackend`` raises otherwise, which the pager turns into SIGBUS and the job
into a failure) and the training read pages through the pager; requests were counted on both
namespaces. No timing threshold (TCG, shared machine): the step times are reported, not asserted.

Skipped, like the other tests here, when QEMU, a kernel in /boot, virtme-ng or a static busybox is
missing, or with ``ZSWAP_QEMU=0``.
"""

from __future__ import annotations

import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "experiments"))

import early  # noqa: E402

PRESET, ITERATIONS, WARM = "tiny", 14, 4       # tiny: 8 MiB of tables, a 2 MiB budget


def boot(work):
    """The guest run (started early, in the background: tests/qemu/early.py)."""
    import transparent_guest as tg

    return (*tg.run(str(work), ITERATIONS, WARM, PRESET), work)


@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    import transparent_guest as tg

    res, recs, work = early.value(__name__, boot, tmp_path_factory)
    print(f"\nguest log: {work / 'guest.log'} ({res.boot_and_run_s:.0f} s)")
    assert res.returncode == 0 and "TRANSPARENT GUEST DONE rc=0" in res.output, res.output[-3000:]
    assert set(recs) == set(tg.RUNS), sorted(recs)
    rows = tg.summarize(recs)
    print(tg.table(rows))
    return recs, rows


def test_every_run_trained_the_same_model(guest):
    recs, rows = guest
    for name in ("kernel", "pager", "dram-after"):
        assert rows[name]["steps"] == ITERATIONS - WARM
        assert rows[name]["losses_equal_dram"], name
        assert rows[name]["tables_equal_dram"], name
    assert len(recs["dram"]["loss"]) == ITERATIONS


def test_kernel_swapped_under_the_limit(guest):
    recs, rows = guest
    k = rows["kernel"]
    assert k["pages_out"] > 0 and k["pages_in"] > 0, k
    assert k["write_requests"] > 0 and k["read_requests"] > 0, k
    # the limit follows the tables: they get about the budget, not what the rest of the job frees
    # (with a fixed limit they kept 7.9 of 8.3 MiB against a 2.1 MiB budget)
    budget_mib = recs["kernel"]["budget_bytes"] / 2**20
    assert k["table_resident_mib_mean"] < 2 * budget_mib, (k["table_resident_mib_mean"], budget_mib)


def test_pager_verified_every_page_it_read(guest):
    recs, rows = guest
    p = rows["pager"]
    assert p["pages_in"] > 0 and p["pages_out"] > 0 and p["faults"] > 0, p
    end = recs["pager"]["marks"]["end"]
    # every page the pager read came through VerifyingBackend.swap_in and was checked
    assert end["pages_checked"] == end["pager"]["pages_in"] > 0
    assert p["write_requests"] > 0 and p["read_requests"] > 0, p
    assert not p["pager_errors"], p["pager_errors"]
    assert p["engine"]["io_engine"] == "uring"
