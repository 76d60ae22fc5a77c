"""The emulated Open-Channel SSD's write and read paths, in C only in the package
(``native/ocssd_stripe.c``: the zoned view's commit; ``native/ocssd_vector.c``: the device's
vector write and read checks; ``native/ocssd_read.c``: the zoned view's read plan), against their
numpy oracle (``tests/support/ocssd_oracle.py``: ``OracleView``, ``OracleDevice``): the same chunk log,
data, completion times, statistics, histogram and modeled time after the same random appends and
reads, and the same errors with the same messages for the same bad vectors and reads. Each test
counts the C calls (``CountingLib``) so that it fails if the C did not run."""
from __future__ import annotations

import numpy as np
import pytest

from ocssd_oracle import CountingLib, OracleView, oracle_device
from zswap_host.devices import OcssdZonedView, ocssd, ocssd_read, ocssd_view, open_device
from zswap_host.devices.zone import ZoneCond
from zswap_host.errors import DeviceIOError


@pytest.fixture(autouse=True)
def calls(monkeypatch) -> dict[str, int]:
    """The C functions' calls in this test (one counter for the device and the view)."""
    counting = CountingLib(ocssd.lib)
    monkeypatch.setattr(ocssd, "lib", counting)
    monkeypatch.setattr(ocssd_view, "lib", counting)
    monkeypatch.setattr(ocssd_read, "lib", counting)
    return counting.calls


# 8 groups x 2 PUs (thesis-ssd); the stripe unit ws_opt=12 (divides the chunk) or ws_min=4 (60 % 8)
GEOMETRIES = {"ws_opt": "chunks=6&sectors=48&ws_min=4&ws_opt=12&mw_cunits=8",
              "ws_min": "chunks=6&sectors=60&ws_min=4&ws_opt=8&mw_cunits=6"}


def _pair(geometry: str, payload: str, layout: str) -> tuple[OcssdZonedView, OracleView]:
    """The view on the device (C) and the oracle view on the oracle device (numpy)."""
    url = f"ocssd://?{GEOMETRIES[geometry]}&preset=thesis-ssd{payload}"
    return OcssdZonedView(open_device(url), layout=layout), OracleView(oracle_device(url), layout=layout)


def _same(a: OcssdZonedView, b: OcssdZonedView) -> None:
    for x, y in zip(a.ocssd.chunk_states(), b.ocssd.chunk_states()):
        assert np.array_equal(x, y)
    assert a.stats() == b.stats() and a.now() == b.now()
    assert a.ocssd.model.counters() == b.ocssd.model.counters()
    assert np.array_equal(a._dwp, b._dwp) and np.array_equal(a._hw, b._hw)
    assert a._tail.keys() == b._tail.keys() and all(np.array_equal(a._tail[z], b._tail[z]) for z in a._tail)


@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
@pytest.mark.parametrize("payload", ["", "&payload=0"])
@pytest.mark.parametrize("layout", ["stripe", "isolate"])
def test_view_commit_in_c_equals_numpy(geometry, payload, layout, calls):
    a, b = _pair(geometry, payload, layout)
    g = a.geometry
    rng = np.random.default_rng([sorted(GEOMETRIES).index(geometry), len(payload), len(layout)])
    cap, most = g.zone_capacity // 4096, g.max_append // 4096
    zones = range(min(3, g.nr_zones))
    for step in range(150):
        z = int(rng.choice(zones))
        room = cap - int(a._wp[z]) // 4096
        if room == 0 or rng.random() < 0.03:
            finish = room and rng.random() < 0.5
            for v in (a, b):
                (v.finish_zone if finish else v.reset_zone)(z)
            _same(a, b)
            continue
        # 1..4 appends back to back (append_batch: one commit, one device write each), of any
        # length: a few sectors, across stripe units and chunk rows, up to the zone's end
        k = int(rng.integers(1, 5))
        lens = []
        for _ in range(k):
            if room == 0:
                break
            n = int(rng.integers(1, min(most if rng.random() < 0.5 else 9, room) + 1))
            lens.append(n)
            room -= n
        data = rng.integers(0, 256, sum(lens) * 4096, dtype=np.uint8)
        one = len(lens) == 1 and rng.random() < 0.5
        for v in (a, b):
            if one:
                v.append(z, data)
            else:
                v.append_batch(np.full(len(lens), z), data, np.array(lens) * 4096)
        _same(a, b)
        if step % 10 == 0:
            for zz in zones:
                n = int(a._wp[zz])
                if n:
                    got = [v.read(g.zone_start(zz), n) for v in (a, b)]
                    assert np.array_equal(*got)
            _same(a, b)
    # every commit of the C view (one per append or run of appends) went through C
    assert calls["ocs_commit_plan"] >= 50 and calls["ocv_check"] >= 50
    assert calls["ocr_plan"] and calls["ocv_read_check"]


def _device_pair() -> tuple:
    url = f"ocssd://?{GEOMETRIES['ws_opt']}&preset=thesis-ssd"
    return open_device(url), oracle_device(url)


def _outcome(dev, ppas, data, counts):
    try:
        dev.write_vectors(ppas, data, counts)
    except Exception as e:      # noqa: BLE001 - the error itself is what is compared
        return type(e), str(e), getattr(e, "zone", None)
    return None


def test_device_vector_checks_in_c_equal_numpy(calls):
    """Good and bad vectors (off the write pointer, not a multiple of ws_min per chunk or per
    write, counts that do not split the vector, a CLOSED or OFFLINE chunk, outside the device):
    the same outcome, error and message, and the same state after."""
    a, b = _device_pair()
    g = a.geometry
    for dev in (a, b):
        dev.set_offline(5)
    rng = np.random.default_rng(7)
    bad = 0
    for _ in range(400):
        wp = a.chunk_states()[1]
        chunks = rng.choice(g.nr_chunks, int(rng.integers(1, 5)), replace=False)
        pieces = []
        for c in chunks.tolist():
            n = int(rng.integers(1, 4)) * g.ws_min
            start = int(wp[c]) if rng.random() < 0.9 else int(wp[c]) + int(rng.integers(-2, 3))
            pieces.append(c * g.sectors + np.arange(start, start + n) % g.sectors)
        # interleave the chunks' pieces, each in its own order
        owner = rng.permutation(np.repeat(np.arange(len(pieces)), [p.size for p in pieces]))
        ppas = np.empty(owner.size, np.int64)
        for i, p in enumerate(pieces):
            ppas[owner == i] = p
        if rng.random() < 0.05:
            ppas[int(rng.integers(ppas.size))] = g.total_sectors + int(rng.integers(0, 3)) - 1
        if rng.random() < 0.1:
            ppas = ppas[:-1]                    # a sector short of ws_min
        r = rng.random()
        if r < 0.4:
            counts = None
        else:
            cuts = np.sort(rng.integers(0, ppas.size + 1, int(rng.integers(1, 4))))
            counts = np.diff(np.concatenate([[0], cuts, [ppas.size]]))
            if r < 0.45:
                counts[0] += 1                  # do not add up
            elif r < 0.5:
                counts = counts[:0]             # none
            counts = counts.tolist() if 0.5 <= r < 0.6 else counts
        data = rng.integers(0, 256, (ppas.size, 4096), dtype=np.uint8)
        got, want = _outcome(a, ppas, data, counts), _outcome(b, ppas, data, counts)
        assert got == want
        bad += want is not None
        for x, y in zip(a.chunk_states(), b.chunk_states()):
            assert np.array_equal(x, y)
        assert a.stats() == b.stats() and a.model.counters() == b.model.counters()
    assert 50 < bad < 350                       # both kinds were tried
    assert calls["ocv_check"] == 400            # every write of the C device, good or bad, checked in C
    assert np.array_equal(a.read_timed(np.arange(g.sectors * 2) % 4)[0], b.read_timed(np.arange(g.sectors * 2) % 4)[0])


def test_device_arguments_of_other_types_in_c_equal_numpy(calls):
    """Vectors and counts as lists, tuples, int32 or uint arrays, word data of another dtype, and
    arguments the device refuses before its rules (a float or 2-D vector, none, data of the wrong
    size, which an address outside the device goes before): the same outcome as the oracle's."""
    a, b = _device_pair()
    g = a.geometry
    s = g.sectors
    cases = [
        (list(range(g.ws_min)), None, False),
        (np.arange(s, s + 2 * g.ws_min, dtype=np.int32), (g.ws_min, g.ws_min), False),
        (np.arange(2 * s, 2 * s + g.ws_min, dtype=np.uint64), [g.ws_min], True),
        (np.arange(g.ws_min, 2 * g.ws_min, dtype=np.int64), np.array([g.ws_min], np.int32), True),
        (np.arange(4.0), None, False),
        (np.arange(8).reshape(2, 4), None, False),
        ([], None, False),
        (np.array([g.total_sectors + 5, *range(2 * g.ws_min, 3 * g.ws_min - 1)]), None, False),   # short data too
        (np.arange(2 * g.ws_min, 3 * g.ws_min), None, False),                                   # short data
        (np.arange(2 * g.ws_min, 3 * g.ws_min), [g.ws_min, 0, 0], False),                       # empty writes
        (np.arange(3 * g.ws_min, 4 * g.ws_min), [], False),                                     # no counts
    ]
    seen = []
    for i, (ppas, counts, words) in enumerate(cases):
        n = np.asarray(ppas).size
        data = np.arange(n, dtype=np.int64) if words else np.full(n * 4096 - (7 if i in (7, 8) else 0), 3, np.uint8)
        outs = []
        for dev in (a, b):
            try:
                dev.write_vectors(ppas, data, counts, words=words)
                outs.append(None)
            except Exception as e:      # noqa: BLE001 - the error itself is what is compared
                outs.append((type(e), str(e), getattr(e, "zone", None)))
        assert outs[0] == outs[1], (ppas, counts)
        seen.append(outs[0] and outs[0][0].__name__)
        for x, y in zip(a.chunk_states(), b.chunk_states()):
            assert np.array_equal(x, y)
        assert a.stats() == b.stats() and a.model.counters() == b.model.counters()
    assert seen == [None, None, None, None, "InvalidIOError", "InvalidIOError", "InvalidIOError", "InvalidIOError",
                    "InvalidIOError", None, "InvalidIOError"], seen
    for ppas in ([0, 1], (g.ws_min, 0), np.arange(2, dtype=np.uint32), [], [-1]):
        outs = []
        for dev in (a, b):
            try:
                d, t = dev.read_timed(ppas)
                outs.append((d.tobytes(), t.tobytes()))
            except Exception as e:      # noqa: BLE001
                outs.append((type(e), str(e)))
        assert outs[0] == outs[1], ppas
    assert calls["ocv_check"] >= 6 and calls["ocv_read_check"] >= 3


def test_submit_writes_charges_as_submit_groups():
    """``OcssdSSD.submit_writes`` (the C write path's one model call) is ``submit_groups`` of WRITE
    requests at each group's size as its depth: the same completions, clock and counters."""
    from zswap_host.ssdsim import WRITE, OcssdSSD, get_preset

    a, b = (OcssdSSD(get_preset("thesis-ssd"), chunks=4, sectors=48) for _ in range(2))
    ppas = np.array([0, 12, 48, 60, 96, 24, 36], np.int64)      # runs of 12 sectors, chunks 0..2
    lens = np.full(ppas.size, 12, np.int64)
    groups = np.array([2, 0, 3, 2], np.int64)
    got = a.submit_writes(ppas, lens, groups)
    want = b.submit_groups(WRITE, ppas, lens, groups, groups)
    assert np.array_equal(got, want) and a.now == b.now and a.counters() == b.counters()
    with pytest.raises(ValueError, match="rejected"):
        a.submit_writes(np.array([12], np.int64), np.array([12], np.int64), np.array([1], np.int64))


# -- the read path (native/ocssd_read.c: the view's plan; ocssd_vector.c: the device's read checks) --
_read_pair = _pair


def _read_outcome(v: OcssdZonedView, offsets, lengths, qd: int, words: bool):
    try:
        data, done = v.read_batch(offsets, lengths, qd, words=words)
    except Exception as e:      # noqa: BLE001 - the error itself is what is compared
        return type(e), str(e), getattr(e, "offset", None)
    return data.dtype, data, done


def _same_read(got, want) -> None:
    assert len(got) == len(want) and got[0] == want[0]
    if isinstance(got[1], np.ndarray):
        assert np.array_equal(got[1], want[1]) and np.array_equal(got[2], want[2])
        assert got[2].dtype == want[2].dtype
    else:
        assert got == want


@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
@pytest.mark.parametrize("payload", ["", "&payload=0"])
@pytest.mark.parametrize("layout", ["stripe", "isolate"])
def test_view_reads_in_c_equal_numpy(geometry, payload, layout, calls):
    """Random read batches between random appends: single pages and requests across stripe units,
    chunks and zones, sectors held in open zones' tails, never-written ranges, finished zones;
    words and bytes; the same data, completion times, clock, counters and statistics."""
    a, b = _read_pair(geometry, payload, layout)
    g = a.geometry
    rng = np.random.default_rng([11, sorted(GEOMETRIES).index(geometry), len(payload), len(layout)])
    cap, zsec = g.zone_capacity // 4096, g.zone_size // 4096
    zones = range(min(4, g.nr_zones))
    held = 0
    for step in range(120):
        z = int(rng.choice(zones))
        room = cap - int(a._wp[z]) // 4096
        r = rng.random()
        if room and r < 0.5:
            n = int(rng.integers(1, min(room, 3 * a.width * a.unit, g.max_append // 4096) + 1))
            data = rng.integers(0, 256, n * 4096, dtype=np.uint8)
            for v in (a, b):
                v.append(z, data)
        elif r < 0.55 and room:
            for v in (a, b):
                v.finish_zone(z)
        elif r < 0.57:
            for v in (a, b):
                v.reset_zone(z)
        # a batch of reads: pages where the zones are written (or not), and longer requests
        k = int(rng.integers(1, 40))
        zz = rng.choice(zones, k)
        top = np.maximum(a._wp[zz] // 4096 + 4, 1)
        first = zz * zsec + rng.integers(0, top) % zsec
        n = np.where(rng.random(k) < 0.6, 1, rng.integers(1, 3 * a.width * a.unit, k))
        if rng.random() < 0.3:          # pages well below the write pointers: all on the device (the usual)
            safe = a._wp[zz] // 4096 - 2 * a.width * (a.unit + a._ring)
            first = zz * zsec + rng.integers(0, np.maximum(safe, 1))
            n[:] = 1
        n = np.minimum(n, g.nr_zones * zsec - first)
        words = bool(rng.random() < 0.5)
        qd = int(rng.integers(1, 64))
        held += int(sum(len(v) for v in a._tail.values()) > 0)
        got, want = (_read_outcome(v, first * 4096, n * 4096, qd, words) for v in (a, b))
        _same_read(got, want)
        _same(a, b)
        assert a.ocssd.stats() == b.ocssd.stats()
    assert held
    assert calls["ocr_plan"] >= 120             # each batch of the C view planned in C (a retry: more room)


@pytest.mark.parametrize("payload", ["", "&payload=0"])
def test_view_read_of_offline_chunk_in_c_equals_numpy(payload, calls):
    """A read meeting an OFFLINE chunk: the same DeviceIOError and message, the zone OFFLINE in
    both, nothing charged; reads of other zones go on the same."""
    a, b = _read_pair("ws_opt", payload, "stripe")
    g = a.geometry
    data = np.arange(a.width * a.unit * 4096, dtype=np.uint8)
    for v in (a, b):
        for z in (0, 0, 1, 1):
            v.append(z, data)
        v.ocssd.set_offline(v.zone_chunks(0)[1])
    offs = np.array([g.zone_start(1), g.zone_start(0), g.zone_start(0) + a.unit * 4096], np.int64)
    lens = np.full(3, 4096, np.int64)
    got, want = (_read_outcome(v, offs, lens, 4, False) for v in (a, b))
    assert got[0] is DeviceIOError and got == want
    assert a._cond[0] == ZoneCond.OFFLINE and np.array_equal(a._cond, b._cond)
    _same(a, b)
    for words in (False, True):
        _same_read(*(_read_outcome(v, offs[:1], lens[:1], 4, words) for v in (a, b)))
    _same(a, b)
    assert calls["ocr_plan"] == 3 and calls["ocv_read_check"] == 3


def test_device_reads_in_c_equal_numpy(calls):
    """The device's read_timed, good vectors and bad ones (outside the device, not yet readable in
    an open chunk, an OFFLINE chunk): the same data, times, error and message, state after."""
    a, b = _device_pair()
    g = a.geometry
    rng = np.random.default_rng(5)
    for dev in (a, b):
        dev.set_offline(5)
        for c in (0, 1, 2, 7):          # chunks at several write pointers: CLOSED, OPEN
            n = g.sectors if c != 2 else g.ws_min * 5
            dev.write(c * g.sectors + np.arange(n), np.full((n, 4096), c, np.uint8))
    bad = 0
    for _ in range(300):
        c = rng.choice([0, 1, 2, 5, 7, 9], int(rng.integers(1, 4)))
        start = rng.integers(0, g.sectors, c.size)
        n = rng.integers(1, 9, c.size)
        ppas = np.concatenate([cc * g.sectors + (s + np.arange(k)) % g.sectors for cc, s, k in zip(c, start, n)])
        if rng.random() < 0.03:
            ppas[-1] = g.total_sectors
        qd = None if rng.random() < 0.3 else int(rng.integers(1, 9))
        words = bool(rng.random() < 0.5)
        out = []
        for dev in (a, b):
            try:
                d, t = dev.read_timed(ppas, qd, words=words)
                out.append((d.dtype, d.tobytes(), t.tobytes()))
            except Exception as e:      # noqa: BLE001
                out.append((type(e), str(e), getattr(e, "zone", None), getattr(e, "offset", None)))
        assert out[0] == out[1]
        bad += not isinstance(out[1][0], np.dtype)
        assert a.stats() == b.stats() and a.model.counters() == b.model.counters()
    assert 30 < bad < 270
    assert calls["ocv_read_check"] == 300


def test_submit_reads_charges_as_submit():
    """``OcssdSSD.submit_reads`` (the C read path's model call) is ``submit`` of READ requests."""
    from zswap_host.ssdsim import READ, OcssdSSD, get_preset

    a, b = (OcssdSSD(get_preset("thesis-ssd"), chunks=4, sectors=48) for _ in range(2))
    for m in (a, b):
        m.submit_writes(np.array([0, 48], np.int64), np.array([48, 24], np.int64), np.array([2], np.int64))
    ppas = np.array([0, 5, 48, 60, 12, 50], np.int64)
    lens = np.array([3, 1, 2, 4, 7, 1], np.int64)
    for qd in (1, 3, 6):
        got, want = a.submit_reads(ppas, lens, qd), b.submit(READ, ppas, lens, qd=qd)
        assert np.array_equal(got, want) and a.now == b.now and a.counters() == b.counters()


@pytest.mark.parametrize("payload", [True, False])
def test_view_reads_without_timing_in_c_equal_numpy(payload, calls):
    """A device with timing off (no model): the same data and (zero) times."""
    from ocssd_oracle import OracleDevice
    from zswap_host.devices.ocssd import EmulatedOcssdDevice

    g = open_device(f"ocssd://?{GEOMETRIES['ws_opt']}").geometry
    a, b = OcssdZonedView(EmulatedOcssdDevice(g, payload=payload)), OracleView(OracleDevice(g, payload=payload))
    rng = np.random.default_rng(3)
    d0, d1 = rng.integers(0, 256, 100 * 4096, dtype=np.uint8), rng.integers(0, 256, 50 * 4096, dtype=np.uint8)
    for v in (a, b):
        v.append(0, d0)
        v.append(1, d1)
    zs = a.geometry.zone_size // 4096
    for i in range(40):
        first = rng.integers(0, 3 * zs, 20)
        n = np.minimum(rng.integers(1, 30, 20), a.geometry.nr_zones * zs - first)
        _same_read(*(_read_outcome(v, first * 4096, n * 4096, 8, bool(i % 2)) for v in (a, b)))
    assert a.stats() == b.stats()
    assert calls["ocr_plan"] >= 40
