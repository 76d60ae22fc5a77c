"""Open-Channel SSD 2.0: the chunk rules every ``OpenChannelDevice`` follows (the conformance suite,
on the emulated device in memory without timing and in a sparse file with the thesis-ssd timing
model), the emulator's own behaviour (failure injection, reopen, URLs, ``zswap-host info``) and the
timing model ``OcssdSSD``. Modeled time only, nothing depends on wall-clock speed."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from click.testing import CliRunner

from zswap_host.cli import main
from zswap_host.devices import (BlockDevice, ChunkState, OcssdGeometry, OpenChannelDevice, ZonedDevice,
                                open_device)
from zswap_host.errors import DeviceIOError, DeviceSpecError, InvalidIOError, NotZonedError, ZoneStateError
from zswap_host.ssdsim import READ, RESET, WRITE, ControllerModel, OcssdSSD, get_preset

THESIS = get_preset("thesis-ssd")
ZN540 = get_preset("zn540")
# 8 groups x 2 PUs (thesis-ssd's channels and dies), 2 chunks of 48 sectors (4 program units) per PU
SMALL = "chunks=2&sectors=48&ws_min=4&ws_opt=12&mw_cunits=8"


def sectors(dev, n: int, seed: int = 0) -> np.ndarray:
    """n sectors of recognisable random bytes."""
    return np.random.default_rng(seed).integers(0, 256, n * dev.geometry.sector_size, dtype=np.uint8)


def run(dev, chunk: int, start: int, n: int) -> np.ndarray:
    """The linear sector addresses of sectors start..start+n-1 of a chunk (its linear index)."""
    return chunk * dev.geometry.sectors + start + np.arange(n)


def info(dev, chunk: int):
    return dev.chunk_info([chunk])[0]


@pytest.fixture(params=["memory", "file-timed"])
def odev(request, tmp_path):
    if request.param == "memory":
        dev = open_device(f"ocssd://?{SMALL}&preset=none")
    else:
        dev = open_device(f"ocssd://{tmp_path}/oc.img?{SMALL}&preset=thesis-ssd")
    yield dev
    dev.close()


# ================================================================ the conformance suite
def test_the_device_is_neither_zoned_nor_a_block_device(odev):
    assert isinstance(odev, OpenChannelDevice)
    assert not isinstance(odev, ZonedDevice) and not isinstance(odev, BlockDevice)
    d = odev.describe()
    assert d["kind"] == odev.kind == "emulated-ocssd" and d["open_channel"] and d["zoned"] is False
    assert d["geometry"] == odev.geometry.as_dict()


def test_fresh_device_reports_free_chunks_in_the_chunk_log(odev):
    g = odev.geometry
    log = odev.chunk_info()
    assert len(log) == g.nr_chunks == g.groups * g.pus * g.chunks
    for c, e in enumerate(log):
        assert (e.chunk, e.state, e.type, e.wear_index, e.slba, e.cnlb, e.wp) == \
            (c, ChunkState.FREE, 0x1, 0, c * g.sectors, g.sectors, 0)


def test_addresses_are_group_pu_chunk_sector():
    g = OcssdGeometry(groups=3, pus=2, chunks=5, sectors=8)
    ppa = g.ppa(2, 1, 3, 7)
    assert ppa == ((2 * 2 + 1) * 5 + 3) * 8 + 7 and g.address(ppa) == (2, 1, 3, 7)
    assert g.chunk_index(2, 1, 3) == ppa // g.sectors and g.size == 3 * 2 * 5 * 8 * 4096


def test_first_write_opens_a_chunk_and_filling_it_closes_it(odev):
    g = odev.geometry
    data = sectors(odev, g.sectors, seed=1)
    odev.write(run(odev, 3, 0, 12), data[:12 * 4096])
    e = info(odev, 3)
    assert (e.state, e.wp) == (ChunkState.OPEN, 12)
    odev.write(run(odev, 3, 12, g.sectors - 12), data[12 * 4096:])
    e = info(odev, 3)
    assert (e.state, e.wp) == (ChunkState.CLOSED, g.sectors)
    assert np.array_equal(odev.read(run(odev, 3, 0, g.sectors)), data)     # all of a closed chunk reads


@pytest.mark.parametrize("at", [-4, 4, 8])
def test_a_write_away_from_the_write_pointer_fails_and_writes_nothing(odev, at):
    odev.write(run(odev, 0, 0, 12), sectors(odev, 12))
    before = odev.read(run(odev, 0, 0, 4))
    with pytest.raises(ZoneStateError, match="takes sector 12 next") as e:
        odev.write(run(odev, 0, 12 + at, 4), sectors(odev, 4, seed=2))
    assert e.value.zone == 0 and f"sector {12 + at})" in str(e.value)
    assert (info(odev, 0).state, info(odev, 0).wp) == (ChunkState.OPEN, 12)
    assert np.array_equal(odev.read(run(odev, 0, 0, 4)), before)


def test_a_write_ahead_of_the_write_pointer_of_a_free_chunk_fails(odev):
    with pytest.raises(ZoneStateError, match="chunk 5 takes sector 0 next"):
        odev.write(run(odev, 5, 4, 4), sectors(odev, 4))
    assert info(odev, 5).state == ChunkState.FREE


@pytest.mark.parametrize("n", [1, 3, 6])
def test_writes_carry_multiples_of_ws_min_per_chunk(odev, n):
    with pytest.raises(ZoneStateError, match=f"{n} sectors to chunk 2 is not a multiple of ws_min=4"):
        odev.write(run(odev, 2, 0, n), sectors(odev, n))
    assert (info(odev, 2).state, info(odev, 2).wp) == (ChunkState.FREE, 0)


def test_a_vector_write_is_checked_whole_before_anything_is_written(odev):
    good, bad = run(odev, 6, 0, 4), run(odev, 7, 4, 4)        # chunk 7's part skips its first sectors
    with pytest.raises(ZoneStateError, match="chunk 7"):
        odev.write(np.concatenate([good, bad]), sectors(odev, 8))
    assert [info(odev, c).state for c in (6, 7)] == [ChunkState.FREE, ChunkState.FREE]
    assert odev.stats().device_write_bytes == 0


def test_a_closed_chunk_takes_no_more_writes(odev):
    g = odev.geometry
    odev.write(run(odev, 1, 0, g.sectors), sectors(odev, g.sectors))
    with pytest.raises(ZoneStateError, match="chunk 1 is CLOSED"):
        odev.write(run(odev, 1, 0, 4), sectors(odev, 4))
    with pytest.raises(InvalidIOError, match="outside the device"):      # the next sector is another chunk's
        odev.write(np.array([g.total_sectors]), sectors(odev, 1))


def test_sectors_become_readable_mw_cunits_behind_the_write_pointer(odev):
    g = odev.geometry                                         # mw_cunits = 8
    data = sectors(odev, 16, seed=3)
    odev.write(run(odev, 4, 0, 12), data[:12 * 4096])
    assert np.array_equal(odev.read(run(odev, 4, 0, 4)), data[:4 * 4096])
    for s in (4, 11, 12, 40):                                 # in the write cache, or never written
        with pytest.raises(ZoneStateError, match="not yet readable") as e:
            odev.read(run(odev, 4, s, 1))
        assert e.value.zone == 4 and f"sector {s})" in str(e.value)
    odev.write(run(odev, 4, 12, 4), data[12 * 4096:])
    assert np.array_equal(odev.read(run(odev, 4, 0, 8)), data[:8 * 4096])
    with pytest.raises(ZoneStateError, match="chunk 9 is FREE"):
        odev.read(run(odev, 9, 0, 1))
    assert g.mw_cunits == 8


def test_vectored_io_across_pus_and_chunks(odev):
    g = odev.geometry
    # interleaved as a host stripes: ws_min sectors of chunk 0 of every PU, then the next ws_min
    pus = [(grp, pu) for grp in range(g.groups) for pu in range(g.pus)]
    ppas = np.array([g.ppa(grp, pu, 1, k * 4 + i) for k in range(3) for grp, pu in pus for i in range(4)])
    data = sectors(odev, ppas.size, seed=4)
    odev.write(ppas, data)
    for grp, pu in pus:
        e = info(odev, g.chunk_index(grp, pu, 1))
        assert (e.state, e.wp) == (ChunkState.OPEN, 12)
    order = np.random.default_rng(5).permutation(ppas.size)
    readable = (ppas % g.sectors)[order] < 12 - g.mw_cunits
    got = odev.read(ppas[order][readable])
    want = data.reshape(-1, 4096)[order][readable].reshape(-1)
    assert np.array_equal(got, want)


def test_reset_frees_free_and_closed_chunks_and_counts_wear(odev):
    g = odev.geometry
    odev.write(run(odev, 8, 0, g.sectors), sectors(odev, g.sectors))
    odev.reset([8, 9])                                        # 8 CLOSED, 9 FREE
    for c in (8, 9):
        e = info(odev, c)
        assert (e.state, e.wp, e.wear_index) == (ChunkState.FREE, 0, 1)
    odev.reset([8])
    assert info(odev, 8).wear_index == 2
    with pytest.raises(ZoneStateError, match="FREE"):         # the old data is gone
        odev.read(run(odev, 8, 0, 1))
    data = sectors(odev, g.sectors, seed=6)
    odev.write(run(odev, 8, 0, g.sectors), data)              # writable again from sector 0
    assert np.array_equal(odev.read(run(odev, 8, 0, g.sectors)), data)


def test_an_open_chunk_cannot_be_reset(odev):
    g = odev.geometry
    odev.write(run(odev, 10, 0, g.sectors), sectors(odev, g.sectors))
    odev.write(run(odev, 11, 0, 4), sectors(odev, 4))
    with pytest.raises(ZoneStateError, match="chunk 11: it is OPEN") as e:
        odev.reset([10, 11])
    assert e.value.zone == 11
    assert [info(odev, c).state for c in (10, 11)] == [ChunkState.CLOSED, ChunkState.OPEN]   # neither reset
    assert info(odev, 10).wear_index == 0


def test_bad_vectors_are_invalid_io(odev):
    g = odev.geometry
    for call, words in [
        (lambda: odev.write(np.array([0, 1, 2, 3]), sectors(odev, 3)), "4 sectors with 12288 bytes"),
        (lambda: odev.write(np.array([], np.int64), b""), "empty vector"),
        (lambda: odev.read(np.array([-1])), "ppa -1 is outside"),
        (lambda: odev.read(np.array([0.5])), "integers"),
        (lambda: odev.reset([g.nr_chunks]), f"chunk {g.nr_chunks} does not exist"),
        (lambda: odev.reset([3, 3]), "named twice"),
    ]:
        with pytest.raises(InvalidIOError, match=words) as e:
            call()
        assert "\n" not in str(e.value)


def test_the_chunk_log_follows_a_mixed_history(odev):
    g = odev.geometry
    odev.write(run(odev, 0, 0, g.sectors), sectors(odev, g.sectors))
    odev.write(run(odev, 1, 0, 8), sectors(odev, 8))
    odev.reset([0])
    odev.write(run(odev, 0, 0, 4), sectors(odev, 4))
    log = {e.chunk: e for e in odev.chunk_info([0, 1, 2])}
    assert [(log[c].state, log[c].wp, log[c].wear_index) for c in (0, 1, 2)] == \
        [(ChunkState.OPEN, 4, 1), (ChunkState.OPEN, 8, 0), (ChunkState.FREE, 0, 0)]
    assert log[1].as_dict() == {"chunk": 1, "state": "OPEN", "type": 1, "wear_index": 0, "slba": g.sectors,
                                "cnlb": g.sectors, "wp": 8}
    state, wp, wear = odev.chunk_states()             # the same log as arrays
    every = odev.chunk_info()
    assert (state.tolist(), wp.tolist(), wear.tolist()) == \
        ([int(e.state) for e in every], [e.wp for e in every], [e.wear_index for e in every])
    assert [a.tolist() for a in odev.chunk_states([2, 0])] == [[ChunkState.FREE, ChunkState.OPEN], [0, 4], [0, 1]]


def test_stats_count_what_the_device_saw(odev):
    odev.write(run(odev, 0, 0, 12), sectors(odev, 12))
    odev.read(run(odev, 0, 0, 4))
    odev.write(run(odev, 1, 0, odev.geometry.sectors), sectors(odev, odev.geometry.sectors))
    odev.reset([1])
    s = odev.stats()
    assert (s.device_write_bytes, s.device_read_bytes, s.erase_count) == ((12 + 48) * 4096, 4 * 4096, 1)
    assert s.clock == ("modeled" if odev.model is not None else "none")


# ================================================================ the emulator: failures, reopen, timing
def test_an_offline_chunk_refuses_everything(odev):
    odev.write(run(odev, 12, 0, 12), sectors(odev, 12))
    odev.set_offline(12)
    assert info(odev, 12).state == ChunkState.OFFLINE
    for call, what in [(lambda: odev.read(run(odev, 12, 0, 1)), "read"),
                       (lambda: odev.write(run(odev, 12, 12, 4), sectors(odev, 4)), "write"),
                       (lambda: odev.reset([12]), "reset")]:
        with pytest.raises(DeviceIOError, match=f"{what} of .*chunk 12 is offline"):
            call()
    assert odev.describe()["chunk_states"]["OFFLINE"] == 1


def test_a_failed_reset_takes_its_chunk_offline_and_resets_the_others(odev):
    odev.inject_reset_failures(1)
    with pytest.raises(DeviceIOError, match="reset of chunk.* 13 failed"):
        odev.reset([13, 14])
    assert (info(odev, 13).state, info(odev, 14).state) == (ChunkState.OFFLINE, ChunkState.FREE)
    assert info(odev, 14).wear_index == 1
    odev.reset([15])                                          # one failure only
    assert info(odev, 15).wear_index == 1


def test_modeled_time_moves_with_io_and_idle_time(odev):
    t0 = odev.now()
    odev.write(run(odev, 0, 0, 24), sectors(odev, 24))
    t1 = odev.now()
    odev.read(run(odev, 0, 0, 4))
    t2 = odev.now()
    odev.advance(0.25)
    if odev.model is None:
        assert t0 == t1 == t2 == odev.now() == 0.0
    else:
        assert t0 < t1 < t2 and odev.now() == pytest.approx(t2 + 0.25, abs=1e-12)


def test_a_file_device_reopens_with_its_data_chunk_states_and_wear(tmp_path):
    url = f"ocssd://{tmp_path}/oc.img?{SMALL}&preset=thesis-ssd"
    dev = open_device(url)
    g = dev.geometry
    full, part = sectors(dev, g.sectors, seed=7), sectors(dev, 16, seed=8)
    dev.write(run(dev, 0, 0, g.sectors), full)
    dev.write(run(dev, 1, 0, 16), part)
    dev.reset([2])
    dev.reset([2])
    dev.set_offline(3)
    log = dev.chunk_info()
    dev.close()
    again = open_device(f"ocssd://{tmp_path}/oc.img")           # the geometry comes from PATH.json
    assert again.geometry == g and again.preset == "thesis-ssd" and again.chunk_info() == log
    assert np.array_equal(again.read(run(again, 0, 0, g.sectors)), full)
    assert np.array_equal(again.read(run(again, 1, 0, 8)), part[:8 * 4096])
    more = sectors(again, 32, seed=9)
    again.write(run(again, 1, 16, 32), more)                  # the open chunk goes on from its write pointer
    assert info(again, 1).state == ChunkState.CLOSED
    assert np.array_equal(again.read(run(again, 1, 0, 48)), np.concatenate([part, more]))
    again.close()
    ro = open_device(f"ocssd://{tmp_path}/oc.img", readonly=True)
    assert info(ro, 1).state == ChunkState.CLOSED
    with pytest.raises(DeviceIOError, match="read-only"):
        ro.reset([0])
    ro.close()


def test_a_reopen_must_agree_with_the_device_file(tmp_path):
    open_device(f"ocssd://{tmp_path}/oc.img?{SMALL}&preset=none").close()
    with pytest.raises(DeviceSpecError, match="created with sectors=48, not 96") as e:
        open_device(f"ocssd://{tmp_path}/oc.img?sectors=96")
    assert "\n" not in str(e.value)
    open_device(f"emu://{tmp_path}/z.img?zones=2&zone_size=1MiB&preset=none").close()
    with pytest.raises(DeviceSpecError, match="holds an emulated 'zns' device, not an Open-Channel one"):
        open_device(f"ocssd://{tmp_path}/z.img")
    with pytest.raises(DeviceSpecError, match="no such emulated device"):
        open_device(f"ocssd://{tmp_path}/none.img", readonly=True)
    assert not (tmp_path / "none.img").exists()
    (tmp_path / "oc.img.chunks").write_bytes(b"\0" * 16)
    with pytest.raises(DeviceSpecError, match="oc.img.chunks is corrupt"):
        open_device(f"ocssd://{tmp_path}/oc.img")


@pytest.mark.parametrize("url,words", [
    ("ocssd://?groups=0&preset=none", "groups=0: an Open-Channel SSD needs a whole number >= 1"),
    ("ocssd://?sectors=50&ws_min=4&preset=none", "ws_min=4 does not divide the 50 sectors"),
    ("ocssd://?sectors=48&ws_min=4&ws_opt=6&preset=none", "ws_opt=6 is not a multiple of ws_min=4"),
    ("ocssd://?sectors=48&ws_min=4&mw_cunits=49&preset=none", "mw_cunits=49 is outside 0..48"),
    ("ocssd://?groups=4&pus=4", "on thesis-ssd a group is one of its 8 channels"),
    ("ocssd://?sectors=40&ws_min=4", "40 sectors per chunk is not a positive multiple of thesis-ssd's 12-sector"),
    ("ocssd://?zones=3", "unknown parameter 'zones'"),
    ("ocssd://?chunks=x", "bad value for chunks"),
    ("ocssd://?preset=nope", "unknown SSD preset 'nope'"),
    ("ocssd://?chunks=5000000000", "too large"),
    ("ocssd://?chunks=1000000&sectors=1000000&ws_min=1&preset=none", "more than an emulated device may have"),
])
def test_bad_urls_are_one_line_device_spec_errors(url, words):
    with pytest.raises(DeviceSpecError, match=words) as e:
        open_device(url)
    assert "\n" not in str(e.value)


def test_asked_for_a_zoned_or_a_block_device_it_is_refused():
    with pytest.raises(NotZonedError, match="is an Open-Channel SSD, not a zoned device"):
        open_device(f"ocssd://?{SMALL}&preset=none", zoned=True)
    with pytest.raises(DeviceSpecError, match="a conventional block device is needed here"):
        open_device(f"ocssd://?{SMALL}&preset=none", zoned=False)


def test_defaults_come_from_the_preset():
    dev = open_device("ocssd://?preset=zn540")
    g, unit = dev.geometry, ZN540.program_unit_bytes // 4096
    assert (g.groups, g.pus, g.sectors) == (ZN540.channels, ZN540.dies_per_channel, ZN540.block_bytes // 4096)
    assert g.ws_min == g.ws_opt == g.mw_cunits == unit and g.chunks == 8
    dev.close()


def test_info_prints_the_geometry_and_refuses_a_bad_url():
    r = CliRunner().invoke(main, ["info", f"ocssd://?{SMALL}"])
    assert r.exit_code == 0, r.output
    assert "(emulated-ocssd)" in r.output and "8 groups x 2 PUs x 2 chunks x 48 sectors of 4096 B" in r.output
    assert "ws_min 4, ws_opt 12" in r.output and "32 free, 0 open, 0 closed, 0 offline" in r.output
    assert "model      thesis-ssd" in r.output
    r = CliRunner().invoke(main, ["info", "--json", f"ocssd://?{SMALL}&preset=none"])
    assert r.exit_code == 0 and json.loads(r.output)["geometry"]["mw_cunits"] == 8
    r = CliRunner().invoke(main, ["info", "ocssd://?ws_min=0"])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "ws_min=0" in r.output


# ================================================================ the timing model (OcssdSSD)
def _stripe_writes(m, chunks, units):
    """``units`` program units to each chunk, round-robin over the chunks, all in flight at once."""
    upp = m.preset.program_unit_bytes // 4096
    ppas = np.array([c * m.sectors + k * upp for k in range(units) for c in chunks])
    return m.submit(WRITE, ppas, np.full(ppas.size, upp), qd=len(chunks))


@pytest.mark.parametrize("preset", [THESIS, ZN540], ids=lambda p: p.name)
@pytest.mark.parametrize("n", [2, 4, 16])
def test_writes_to_n_pus_complete_about_n_times_faster_than_to_one(preset, n):
    # the flash's parallelism alone: zn540's controller would cap 16 PUs at its write-data rate
    preset = dataclasses.replace(preset, controller=ControllerModel())
    upp = preset.program_unit_bytes // 4096
    buffer_units = preset.buffer_bytes // preset.program_unit_bytes
    units = 8 * buffer_units // n                             # far more than the write buffer holds
    spread = OcssdSSD(preset, chunks=n, sectors=units * upp)
    one = OcssdSSD(preset, chunks=n, sectors=units * upp)
    t_spread = _stripe_writes(spread, [p * n for p in range(n)], units).max()   # chunk 0 of PUs 0..n-1
    t_one = _stripe_writes(one, list(range(n)), units).max()                   # n chunks of PU 0
    assert t_one / t_spread > 0.75 * n
    assert [spread.chunk_die(p * n) for p in range(n)] != [one.chunk_die(c) for c in range(n)]


@pytest.mark.parametrize("n", [2, 4, 16])
def test_reads_on_n_pus_overlap(n):
    def reads(m, chunks):
        for c in chunks:
            m.submit(WRITE, [c * m.sectors], [m.sectors])
        m.advance(1.0)                                        # programs done: dies idle
        t0 = m.now
        return m.submit(READ, [c * m.sectors for c in chunks], np.ones(n), qd=n).max() - t0
    spread = reads(OcssdSSD(THESIS, chunks=n, sectors=48), [p * n for p in range(n)])
    one = reads(OcssdSSD(THESIS, chunks=n, sectors=48), list(range(n)))
    assert one / spread > n / 2


def test_a_pu_is_a_die_on_its_groups_channel():
    m = OcssdSSD(THESIS, chunks=3, sectors=48)
    for grp in range(m.groups):
        for pu in range(m.pus):
            for c in range(m.chunks):
                die = m.chunk_die((grp * m.pus + pu) * m.chunks + c)
                assert die == pu * m.groups + grp and die % THESIS.channels == grp


def test_reads_of_buffered_sectors_cost_no_flash_access():
    m = OcssdSSD(THESIS, chunks=1, sectors=48)
    m.submit(WRITE, [0], [6])                                 # half a program unit: still in the buffer
    t0 = m.now
    done = m.submit(READ, [0], [6])[0]
    c = m.counters()
    assert c["nand_read_ops"] == 0 and c["buffer_read_bytes"] == 6 * 4096 and c["nand_prog_ops"] == 0
    assert done - t0 < THESIS.t_read_us * 1e-6
    m.submit(WRITE, [6], [6])                                 # the unit is full: programmed
    m.advance(0.01)
    m.submit(READ, [0], [6])
    assert m.counters()["nand_prog_ops"] == 1 and m.counters()["nand_read_ops"] == 2   # 6 sectors = 2 pages
    assert m.counters()["buffer_read_bytes"] == 6 * 4096


def test_resets_erase_the_chunk_and_count_wear():
    m = OcssdSSD(THESIS, chunks=4, sectors=192)
    m.submit(WRITE, [3 * 192], [192])
    t = m.reset(3)
    m.reset(3)
    m.reset(5)
    counts = m.erase_counts()
    assert counts.shape == (m.nr_chunks,) and counts[3] == 2 and counts[5] == 1 and counts.sum() == 3
    assert m.erase_count == 3 and m.chunk_written(3) == 0
    erase_ns = round(THESIS.t_erase_us * 1000 * 192 / (THESIS.block_bytes // 4096))   # scaled to the chunk
    assert m.erase_ns == 3 * erase_ns and t >= erase_ns * 1e-9
    m.submit(WRITE, [3 * 192], [12])                          # a reset chunk is written from sector 0
    assert m.chunk_written(3) == 12


def test_the_model_refuses_writes_away_from_the_write_pointer_and_partial_resets():
    m = OcssdSSD(THESIS, chunks=1, sectors=48)
    m.submit(WRITE, [0], [12])
    with pytest.raises(ValueError, match="ppa 24, 4 sectors"):
        m.submit(WRITE, [24], [4])
    with pytest.raises(ValueError, match="rejected request 0"):
        m.submit(RESET, [0], [12])
    with pytest.raises(ValueError, match="rejected request 0"):
        m.submit(WRITE, [40], [12])                           # would cross into the next chunk


def test_model_geometry_checks_and_defaults():
    with pytest.raises(ValueError, match="a group is one of its 8 channels"):
        OcssdSSD(THESIS, groups=4, pus=4, chunks=1)
    with pytest.raises(ValueError, match="not a positive multiple of thesis-ssd's 12-sector program unit"):
        OcssdSSD(THESIS, chunks=1, sectors=20)
    with pytest.raises(ValueError, match="give chunks"):
        OcssdSSD(THESIS)
    m = OcssdSSD(THESIS, size=1 << 30)
    assert (m.groups, m.pus, m.sectors) == (8, 2, THESIS.block_bytes // 4096)
    assert m.chunks == (1 << 30) // (16 * THESIS.block_bytes) and m.capacity == m.nr_chunks * THESIS.block_bytes


def test_groups_of_requests_are_a_submit_per_group_and_deterministic():
    def history(m, grouped):
        ops = np.array([WRITE] * 4 + [READ] * 4, np.uint8)
        ppas = np.array([0, 48, 96, 144, 0, 48, 96, 144]) * 4
        n = np.array([12] * 8)
        if grouped:
            return m.submit_groups(ops, ppas, n, [4, 4], [4, 2])
        return np.concatenate([m.submit(ops[:4], ppas[:4], n[:4], qd=4), m.submit(ops[4:], ppas[4:], n[4:], qd=2)])
    a = history(OcssdSSD(THESIS, chunks=4, sectors=48), True)
    b = history(OcssdSSD(THESIS, chunks=4, sectors=48), False)
    c = history(OcssdSSD(THESIS, chunks=4, sectors=48), True)
    assert a.tobytes() == b.tobytes() == c.tobytes() and (np.diff(a[:4]) >= 0).all()
