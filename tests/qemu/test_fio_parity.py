"""HOST side of issue 12's guest measurement: boot the Debian kernel under QEMU (TCG) once, with the
namespace of issue 12 (64 zones of 16 MiB, capacity 12 MiB, max open/active 14), and run
tests/qemu/guest_parity.py in it: fio's sequential 512 KiB writes (psync QD1, io_uring QD4) and 4 KiB
random reads (io_uring QD32, psync QD1) beside the store's ``swap_out`` / ``swap_in`` of the same
bytes and pages, with the ``uring`` and the ``sync`` engine (experiments/fio_parity.py holds the
config and the guest command, and writes experiments/results/fio_parity/; this test does not).

What is checked is what the guest recorded: it ran, fio and the store moved the bytes asked, every
page read back equals what was written, the ratios store/fio are there, and the uring engine had
several appends in flight to one zone. No timing threshold: the guest is TCG-slow and shared, its
ratios are reported (goal >= 0.8, issue 12), not asserted.

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

PAGE = 4096
# Smaller than the experiment's (384 MiB, 8,192 pages, 5 pairs): nothing checked here depends on the
# volume, only that every phase ran and moved what it was asked. 128 MiB is 11 zones of capacity: the
# store's 2 MiB calls still cross zone ends (the express path's split), and 16 MiB calls still fit.
WRITE_MIB, READ_PAGES, PAIRS = 128, 2048, 2


def boot(work):
    """The guest run (started early, in the background: tests/qemu/early.py)."""
    import fio_parity

    return (*fio_parity.run(str(work), WRITE_MIB, READ_PAGES, pairs=PAIRS), work)


@pytest.fixture(scope="module")
def parity(tmp_path_factory):
    import fio_parity

    res, p, work = early.value(__name__, boot, tmp_path_factory)
    print(f"\nguest log: {work / 'guest.log'} ({res.boot_and_run_s:.0f} s)")
    if p is not None:
        print(fio_parity.table(p))
    return res, p


def _store(p, eng):
    s = p["store"].get(eng) or {}
    assert s and "error" not in s, s.get("traceback", s.get("error"))
    return s


def test_guest_ran(parity):
    res, p = parity
    assert "PARITY DONE rc=0" in res.output and res.returncode == 0, res.output[-3000:]
    assert p is not None
    assert p["fio_version"].startswith("fio-") and p["kernel"]
    assert "[mq-deadline]" in p["scheduler"]
    g = p["geometry"]
    assert (g["nr_zones"], g["zone_size"], g["zone_capacity"], g["max_open"], g["max_active"], g["block_size"]) == \
        (64, 16 << 20, 12 << 20, 14, 14, 4096)


@pytest.mark.parametrize("job", ["write_psync_qd1", "write_io_uring_qd4"])
def test_fio_wrote_the_bytes_asked(parity, job):
    _, p = parity
    r = p["fio"][job]
    if "error" in r and _reference_unavailable(p, job):
        return                  # the 6.1 kernel reordered fio's own zoned writes: no reference this boot
    assert "error" not in r, r
    assert r["bytes"] == p["write_bytes"] and r["seconds"] > 0, r


def _reference_unavailable(p, job: str) -> bool:
    """fio's io_uring QD4 zoned write failed on every attempt with nothing but EIO on writes inside a
    zone (a write that overtook the one before it: the kernel's doing, seen on 6.1 now and then;
    guest_parity.py retries it three times). Any other failure is a test failure."""
    r = p["fio"][job]
    return job == "write_io_uring_qd4" and r.get("zone_write_reordered") is True and \
        len(r.get("attempt_errors", ())) == 3 and "bytes" in p["fio"]["write_psync_qd1"]


@pytest.mark.parametrize("job", ["randread_io_uring_qd32", "randread_psync_qd1", "randread_io_uring_qd32_batched"])
def test_fio_read_the_pages_asked(parity, job):
    _, p = parity
    r = p["fio"][job]
    assert "error" not in r, r
    assert r["ios"] == p["read_pages"] and r["bytes"] == p["read_pages"] * PAGE and r["iops"] > 0, r


@pytest.mark.parametrize("eng", ["uring", "sync", "uring_registered", "uring_16mib"])
def test_store_moved_the_bytes_asked(parity, eng):
    _, p = parity
    s = _store(p, eng)
    o, i = s["swap_out"], s["swap_in"]
    assert o["bytes"] == p["write_bytes"] and o["seconds"] > 0
    assert o["device_write_bytes"] >= o["bytes"]          # every page is on the namespace after flush()
    assert i["pages"] == p["read_pages"] and i["device_read_bytes"] >= i["bytes"]
    assert s["io_engine"] == eng.split("_")[0], s        # no silent fallback to the other engine


@pytest.mark.parametrize("eng", ["uring", "sync", "uring_registered", "uring_16mib"])
def test_store_pages_read_back_as_written(parity, eng):
    _, p = parity
    i = _store(p, eng)["swap_in"]
    assert i["pages_checked"] == p["read_pages"] and i["mismatches"] == 0, i


@pytest.mark.parametrize("eng", ["uring", "sync", "uring_registered", "uring_16mib"])
def test_ratios_present_and_positive(parity, eng):
    _, p = parity
    _store(p, eng)
    keys = [f"{phase}_store_{eng}_vs_fio_{job}" for phase, jobs in
            (("swap_out", ("io_uring_qd4", "psync_qd1")),
             ("swap_in", ("io_uring_qd32", "psync_qd1", "io_uring_qd32_batched"))) for job in jobs]
    if "error" in p["fio"]["write_io_uring_qd4"] and _reference_unavailable(p, "write_io_uring_qd4"):
        keys = [k for k in keys if not k.endswith("io_uring_qd4")]
    r = p["ratios"]
    assert all(r.get(k) is not None and r[k] > 0 for k in keys), {k: r.get(k) for k in keys}


def test_uring_engine_has_several_appends_in_flight_per_zone(parity):
    _, p = parity
    s = _store(p, "uring")
    assert s["io_engine"] == "uring", s
    st = s["after_swap_out"]["engine_stats"]
    assert st["append_path"] == "uring-cmd" and st["max_appends_per_zone"] > 1, st   # most in flight to one zone
    assert _store(p, "sync")["after_swap_out"]["engine_stats"]["max_appends_per_zone"] == 1


def test_fio_zone_append_recorded(parity):
    """fio 3.33 cannot zone-append (no option asks for it); the probe must say so, with fio's answer."""
    _, p = parity
    za = p["fio_zone_append"]
    assert "error" not in za, za
    assert za["supported"] in (False, True, None) and za["why"] and za["fio_answer_to_zone_append"], za


def test_registered_buffers_only_where_asked(parity):
    _, p = parity
    assert _store(p, "uring")["after_swap_in"]["engine_stats"]["fixed_batches"] == 0
    assert _store(p, "uring_registered")["after_swap_in"]["engine_stats"]["fixed_batches"] > 0


def test_only_eio_inside_zones_counts_as_a_reordered_fio_write():
    from guest_parity import reordered_write

    line = "fio: io_u error on file /dev/nvme0n2: Input/output error: write offset={}, buflen=524288"
    zone = 16 << 20
    assert reordered_write("\n".join(line.format(o) for o in (524288, 1048576)), zone)
    assert not reordered_write(line.format(zone), zone)                 # at a zone start: not overtaking
    assert not reordered_write(line.format(524288) + "\nfio: pid=1, got signal=11", zone)
    assert not reordered_write("fio: io_u error on file /dev/nvme0n2: No space left on device", zone)


def test_interleaved_pairs_recorded_and_the_express_path_taken(parity):
    """Every interleaved fio / store pair is kept with its ratio (no timing asserted); the store's
    2 MiB calls on the uring engine went through the express path with the ring write in the same
    C call, and its zone ends as two runs."""
    _, p = parity
    pr = p["pairs"]
    assert len(pr["ratio"]) == len(pr["fio_psync_qd1"]) == len(pr["store_uring"]) > 0, pr
    assert all(x is not None and x > 0 for x in pr["ratio"]) and pr["median"] > 0 and not pr.get("errors"), pr
    ex = _store(p, "uring")["express"]
    assert ex["in_one_c_call"] and ex["calls"] > 0 and ex["split_at_zone_end"] > 0, ex
