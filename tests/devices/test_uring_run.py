"""The io_uring device's side of an append run (native/uring_store.c, native/append_run.h): its
check refuses a run of another version and the runs ``ur_append_run`` would refuse, before
anything is sent (no ring or namespace needed for that part; the append itself runs in the QEMU
guest, tests/qemu)."""

import pytest

uring = pytest.importorskip("zswap_host._uring")
ffi, lib = uring.ffi, uring.lib

PS = 4096


def run_and_ctx(**over):
    ctx = ffi.new("ur_run_ctx *")
    ctx.lba_size, ctx.zone_lbas, ctx.nzones, ctx.max_len, ctx.qd = 4096, 256, 8, 128 << 10, 1
    buf = ffi.new("uint8_t[]", 8 * PS + 8)
    base = int(ffi.cast("uintptr_t", buf))
    aligned = ffi.cast("uint8_t *", base + (-base % 8))
    run = ffi.new("zs_run *")
    run.version, run.nunits, run.expect = 1, 3, 5 * PS
    run.seg0, run.seg0_len, run.seg1, run.seg1_len = aligned, 2 * PS, aligned + 2 * PS, 4 * PS
    for i, (z, n) in enumerate([(2, 2 * PS), (2, 2 * PS), (2, 2 * PS)]):
        run.zones[i], run.lens[i] = z, n
    for k, v in over.items():
        setattr(run, k, v)
    return run, ctx, buf


def test_a_sane_run_passes_the_check():
    run, ctx, _ = run_and_ctx()
    assert lib.ur_run_check(ctx, run) == 0       # ZS_RUN_OK


@pytest.mark.parametrize("change,code", [
    ({"version": 2}, -11),                       # another layout: refused at the boundary
    ({"version": 0}, -11),
    ({"nunits": 65}, -9),                        # more than UR_RUN_MAX
    ({"expect": 5 * PS + 512}, -9),              # not on a block
])
def test_a_run_the_device_cannot_take_is_refused_before_anything_is_sent(change, code):
    run, ctx, _ = run_and_ctx(**change)
    assert lib.ur_run_check(ctx, run) == code


@pytest.mark.parametrize("what", ["zone", "too_long", "not_blocks", "unaligned"])
def test_units_ur_append_run_would_refuse_are_refused_by_the_check(what):
    run, ctx, _ = run_and_ctx()
    if what == "zone":
        run.zones[1] = 8                         # the device has 8 zones
    elif what == "too_long":
        run.lens[0] = (128 << 10) + PS           # beyond max_len
    elif what == "not_blocks":
        run.lens[2] = 2 * PS - 512
    else:
        run.seg1 = run.seg1 + 2                  # not dword aligned
    assert lib.ur_run_check(ctx, run) == -9      # ZS_RUN_CANNOT


def _fake_zoned(ring):
    """A ``LinuxZonedDevice`` on the uring-cmd path without a namespace: the state its append path
    and run writer use."""
    from zswap_host.devices.io_counters import IoTally
    from zswap_host.devices.linux_zone_append import ZoneAppender
    from zswap_host.devices.linux_zoned import LinuxZonedDevice
    from zswap_host.devices.zone import ZoneGeometry
    d = object.__new__(LinuxZonedDevice)
    d.geometry = ZoneGeometry(nr_zones=8, zone_size=1 << 20, zone_capacity=1 << 20, block_size=PS,
                              max_open=4, max_active=4, max_append=128 << 10)
    d.path, d.nsid, d.tally = "/dev/fake", 1, IoTally()
    d.appender = ZoneAppender(d)
    d.appender.ngfd, d.appender.passthrough, d.appender.engine = 99, True, ring
    return d


def test_the_run_writer_crosses_from_the_store_module_and_counts_what_landed():
    """``LinuxZonedDevice.run_writer``: its ``writer`` address, cast by the store's module
    (``zswap_host._native``, which fills the run), checks runs there with the device's C; a call
    that landed is counted from the run's lengths under the append lock; a closed engine declines."""
    from zswap_host import _native
    from zswap_host.devices.io_engine import UringEngine, uring_unavailable
    if uring_unavailable():
        pytest.skip(uring_unavailable())
    eng = UringEngine(passthrough=True)
    try:
        dev = _fake_zoned(eng)
        nffi = _native.ffi
        run = nffi.new("zs_run *")
        port = dev.run_writer(int(nffi.cast("uintptr_t", run)))
        assert port is not None
        w = nffi.cast("zs_run_writer *", port.writer)            # the store's view of the device's writer
        buf = nffi.new("uint8_t[]", 4 * PS)
        run.version, run.nunits, run.expect = 1, 2, 4 * PS
        run.seg0, run.seg0_len, run.seg1, run.seg1_len = nffi.NULL, 0, buf, 4 * PS
        run.zones[0] = run.zones[1] = 1
        run.lens[0], run.lens[1] = PS, 3 * PS
        assert w.check(w.ctx, run) == 0
        run.version = 2
        assert w.check(w.ctx, run) == -11
        run.version = 1
        calls = []

        def landed():
            calls.append(dev.tally.in_flight_batches)          # inside the device's batch
            return (1 << 8) | 2
        assert port(4, landed) == (1 << 8) | 2
        assert calls == [1] and dev.tally.in_flight_batches == 0
        assert dev.tally.io.write_bytes == 4 * PS and dev.appender.count == 2
        assert port(4, lambda: -7) == -7 and dev.tally.io.write_bytes == 4 * PS   # declined: nothing counted
    finally:
        eng.close()
    assert port(4, landed) == port.DECLINED and len(calls) == 1              # the engine closed
