"""Zones over an emulated Open-Channel SSD (``OcssdZonedView``): striping over the parallel units
and what it buys on the modeled clock, chunks chosen by wear, the ``ws_min`` / ``mw_cunits`` tail
held in host memory, failed chunk resets, the PU-isolating layout, the swap store on the view and
``bench --device ocssd://``. The ZNS rules themselves: tests/devices/test_conformance.py. Modeled time only."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from bench_cli import STORE_RUN, bench_store_run
from zswap_host.cli import main
from zswap_host.devices import ChunkState, OcssdZonedView, ZoneCond, open_device
from zswap_host.errors import DeviceIOError, DeviceSpecError, InvalidIOError, ZoneStateError
from zswap_host.store import StoreConfig, SwapStore

# thesis-ssd's 8 groups x 2 PUs; chunks of 48 sectors (4 stripe units of ws_opt=12), ws_min=4
OCSSD = "ocssd://?chunks={chunks}&sectors=48&ws_min=4&ws_opt=12&mw_cunits=8&preset={preset}"


def ocssd(chunks: int = 8, preset: str = "thesis-ssd"):
    return open_device(OCSSD.format(chunks=chunks, preset=preset))


def pages(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n * 4096, dtype=np.uint8)


def test_geometry_of_both_layouts():
    v = OcssdZonedView(ocssd())
    g = v.geometry
    assert (v.width, v.unit, g.nr_zones, g.zone_capacity, g.zone_size) == (16, 12, 8, 16 * 48 * 4096, 16 * 48 * 4096)
    w = OcssdZonedView(ocssd(), layout="isolate")
    assert (w.width, w.geometry.nr_zones, w.geometry.zone_capacity) == (2, 64, 2 * 48 * 4096)
    d = w.describe()
    assert (d["kind"], d["layout"], d["width"], d["bound_zones"]) == ("ocssd-view", "isolate", 2, 0)
    with pytest.raises(DeviceSpecError, match="layout"):
        OcssdZonedView(ocssd(), layout="mirror")
    with pytest.raises(DeviceSpecError, match="zone size"):
        OcssdZonedView(ocssd(), zone_size=4096)


def test_a_large_append_is_striped_over_every_pu_of_its_zone():
    oc = ocssd()
    v = OcssdZonedView(oc)
    data = pages(2 * 16 * 12)                        # two stripe units per chunk
    assert v.geometry.max_append == 16 * 12 * 4096   # one stripe row
    assert v.append(3, data[:data.size // 2]) == v.geometry.zone_start(3)
    v.append(3, data[data.size // 2:])
    chunks = v.zone_chunks(3)
    g = oc.geometry
    assert sorted(g.address(c * g.sectors)[:2] for c in chunks) == [(gr, p) for gr in range(8) for p in range(2)]
    assert [i.wp for i in oc.chunk_info(chunks)] == [24] * 16
    assert np.array_equal(v.read(v.geometry.zone_start(3), data.size), data)


def _time_to_write(layout: str, nbytes: int) -> float:
    v = OcssdZonedView(ocssd(), layout=layout)
    data, cap, step = pages(nbytes // 4096, seed=1), v.geometry.zone_capacity, v.geometry.max_append
    t0, off, z = v.now(), 0, 0
    while off < nbytes:
        for rel in range(0, min(cap, nbytes - off), step):
            v.append(z, data[off + rel:off + min(rel + step, cap)])
        off, z = off + cap, z + 1
    assert v.stats().media_write_bytes == nbytes
    return v.now() - t0


def test_striping_over_all_pus_writes_faster_than_zones_on_one_group():
    nbytes = 16 * 48 * 4096                          # one stripe zone, eight isolate zones
    stripe, isolate = _time_to_write("stripe", nbytes), _time_to_write("isolate", nbytes)
    assert stripe < isolate / 1.4                    # modeled: 1.8 ms and 3.1 ms


def test_zone_opens_take_the_least_worn_free_chunk_of_each_pu():
    oc = ocssd()
    v = OcssdZonedView(oc)
    data = pages(16 * 12)                            # one stripe unit into every chunk
    for _ in range(21):
        v.append(0, data)
        v.reset_zone(0)
    g = oc.geometry
    wear = np.array([i.wear_index for i in oc.chunk_info()]).reshape(g.nr_pus, g.chunks)
    assert (wear.max(axis=1) - wear.min(axis=1) <= 1).all() and wear.sum() == 21 * 16
    assert oc.state_counts()["FREE"] == g.nr_chunks and v.describe()["bound_zones"] == 0


def test_a_free_chunk_retired_behind_the_views_back_is_never_bound():
    oc = ocssd(preset="none")
    v = OcssdZonedView(oc)
    g = oc.geometry
    v.append(0, pages(16 * 12))
    v.reset_zone(0)                                  # chunk 0 of every PU worn once
    oc.set_offline(1)                                # PU 0's next least worn free chunk: the view's pick
    v.append(3, pages(16 * 12))
    assert v.zone_chunks(3) == [2] + [pu * g.chunks + 1 for pu in range(1, g.nr_pus)]
    assert np.array_equal(v.read(v.geometry.zone_start(3), 16 * 12 * 4096), pages(16 * 12))


def test_sectors_the_device_cannot_take_or_give_yet_stay_in_host_memory():
    oc = ocssd(preset="none")
    v = OcssdZonedView(oc)
    data = pages(12 + 3, seed=4)
    v.append(1, data[:3 * 4096])                     # 3 sectors: below ws_min, all held
    first = v.zone_chunks(1)[0]
    assert oc.chunk_info([first])[0].state == ChunkState.FREE
    assert np.array_equal(v.read(v.geometry.zone_start(1), 3 * 4096), data[:3 * 4096])
    v.append(1, data[3 * 4096:])                     # 12 in chunk 0 (committed), 3 in chunk 1 (held)
    assert [i.wp for i in oc.chunk_info(v.zone_chunks(1)[:2])] == [12, 0]
    with pytest.raises(Exception, match="not yet readable"):    # mw_cunits: 4..11 not readable there
        oc.read(first * 48 + np.arange(4, 12))
    assert np.array_equal(v.read(v.geometry.zone_start(1), data.size), data)
    v.finish_zone(1)                                 # padded with zeros: the chunks written close
    assert [i.state for i in oc.chunk_info(v.zone_chunks(1))] == [ChunkState.CLOSED] * 2 + [ChunkState.FREE] * 14
    got = v.read(v.geometry.zone_start(1), 2 * data.size)
    assert np.array_equal(got[:data.size], data) and not got[data.size:].any()


def test_a_failed_chunk_reset_retires_the_chunk_and_takes_the_zone_offline():
    oc = ocssd(preset="none")
    v = OcssdZonedView(oc)
    v.append(0, pages(16 * 12))
    oc.inject_reset_failures(1)
    with pytest.raises(DeviceIOError, match="zone 0"):
        v.reset_zone(0)                              # 16 chunks per zone, 8 zones: no spare chunk
    assert v.zone_condition(0) == ZoneCond.OFFLINE and v.retired_chunks == 1
    assert oc.state_counts() == {"FREE": 127, "OPEN": 0, "CLOSED": 0, "OFFLINE": 1}
    for z in range(1, 8):                            # every other zone still opens and fills
        v.finish_zone(z) if z % 2 else v.append(z, pages(16 * 12))
    for z in range(1, 8):
        v.reset_zone(z)
    assert v.describe()["bound_zones"] == 0 and oc.state_counts()["FREE"] == 127
    # the failure hit PU 0 again (the vector's first chunk): 6 chunks there for 7 zones
    v.append(2, pages(16 * 12))
    oc.inject_reset_failures(1)
    with pytest.raises(DeviceIOError, match="zone 2"):
        v.reset_zone(2)
    assert v.zone_condition(2) == ZoneCond.OFFLINE and v.retired_chunks == 2
    for z in (1, 3, 4, 5, 6, 7):
        v.append(z, pages(16 * 12))


def test_a_write_into_an_offline_chunk_takes_its_zone_offline():
    oc = ocssd(preset="none")
    v = OcssdZonedView(oc)
    v.append(4, pages(16 * 12))
    oc.set_offline(v.zone_chunks(4)[0])
    with pytest.raises(DeviceIOError):
        v.append(4, pages(16 * 12))
    assert v.zone_condition(4) == ZoneCond.OFFLINE


def test_a_chunk_retired_after_the_views_last_look_stops_runs_of_appends():
    """The view reads its zone's chunk states once per binding while the device retires no chunk;
    a retirement makes it look again, so an append into the offline chunk is not deferred."""
    oc = ocssd(preset="none")
    v = OcssdZonedView(oc)
    v.append(4, pages(16 * 12))
    assert v._deferrable(4) and v._deferrable(4)
    oc.set_offline(v.zone_chunks(4)[0])
    assert not v._deferrable(4)
    with pytest.raises(DeviceIOError):
        v.append_batch([4, 4], pages(2 * 16 * 4), [16 * 4 * 4096] * 2)
    assert v.zone_condition(4) == ZoneCond.OFFLINE and oc.retirements == 1


def _churn(store: SwapStore, view: OcssdZonedView, n: int, rounds: int, seen: set | None = None) -> np.ndarray:
    """Stream 0 rewrites half its pages each round (GC must run), stream 1 writes once. ``seen``
    collects (writer, groups) of every zone bound after each swap-out."""
    rng = np.random.default_rng(2)
    ids = np.arange(n)
    g = view.ocssd.geometry
    for r in range(rounds):
        for s, sel in ((0, ids[: n // 2]), (1, ids[n // 2:])):
            if s == 1 and r:
                continue
            part = sel if r == 0 else rng.choice(sel, sel.size // 2, replace=False)
            store.swap_out(part, np.repeat(part.astype(np.uint8)[:, None], 4096, axis=1), stream=s)
            if seen is not None:
                for z, who in view.describe()["zone_writers"].items():
                    cs = view.zone_chunks(z)
                    if cs:
                        seen.add((who, frozenset(g.address(c * g.sectors)[0] for c in cs)))
    return ids


def test_the_store_runs_on_the_view_through_gc():
    view = OcssdZonedView(ocssd(chunks=16))
    store = SwapStore(view, StoreConfig(placement="stream", write_size=128 << 10))
    ids = _churn(store, view, store.capacity_pages * 3 // 4, 8)
    store.flush()
    store.check()
    assert store.gc_write_bytes > 0
    got = store.swap_in(ids[::37])
    assert np.array_equal(got[:, 0], ids[::37].astype(np.uint8))
    assert view.stats().erase_count > 0 and view.stats().clock == "modeled"
    store.close()


def test_the_store_survives_a_failed_chunk_reset():
    oc = ocssd(chunks=16)
    view = OcssdZonedView(oc)
    store = SwapStore(view, StoreConfig(placement="stream", write_size=128 << 10))
    oc.inject_reset_failures(1)
    ids = _churn(store, view, store.capacity_pages * 2 // 3, 8)
    store.flush()
    store.check()
    assert oc.state_counts()["OFFLINE"] == 1
    got = store.swap_in(ids[::53])
    assert np.array_equal(got[:, 0], ids[::53].astype(np.uint8))
    store.close()


def test_isolate_layout_puts_gc_and_user_streams_on_different_groups():
    view = OcssdZonedView(ocssd(), layout="isolate")
    # the hook alone: GC on the last group, user stream s on group s % 7
    for z, (stream, gc, group) in enumerate([(0, True, 7), (1, False, 1), (9, False, 2)]):
        view.place_zone(z, stream, gc)
        view.append(z, pages(24))
        assert {c // (2 * 8) for c in view.zone_chunks(z)} == {group}
    for z in range(3):
        view.reset_zone(z)
    store = SwapStore(view, StoreConfig(placement="stream", write_size=128 << 10))
    seen: set = set()
    _churn(store, view, store.capacity_pages // 2, 8, seen)
    store.flush()
    store.check()
    assert store.gc_write_bytes > 0
    gc = [groups for who, groups in seen if who == "gc"]
    assert gc and all(groups == {7} for groups in gc)
    # user zones go to the GC group only once every user group is full
    assert {g for who, groups in seen if who != "gc" for g in groups} >= {0, 1}
    store.close()


def test_bench_runs_the_store_on_an_ocssd_device(tmp_path):
    bench_store_run(f"ocssd://{tmp_path / 'oc.img'}?chunks=16&sectors=96&preset=thesis-ssd",   # file-backed
                    tmp_path / "b.json")
    r = CliRunner().invoke(main, [*STORE_RUN, "--device", "ocssd://?chunks=16&sectors=96&preset=none"])
    assert r.exit_code == 0, r.output


def _store_churned(runs: bool):
    view = OcssdZonedView(ocssd(chunks=16))
    if not runs:
        view._deferrable = None                 # one device write per append, as appended
    store = SwapStore(view, StoreConfig(placement="stream", write_size=128 << 10))
    ids = _churn(store, view, store.capacity_pages * 3 // 4, 8)
    store.flush()
    state = {k: v for k, v in store.stats().as_dict().items() if "wall" not in k}
    state["clock"] = view.now()
    state["chunks"] = [c.__dict__ for c in view.ocssd.chunk_info()]
    state["hist"] = dict(view.ocssd.stats().as_dict())
    return state, store.swap_in(ids), store, view


def test_appends_written_in_runs_equal_appends_one_at_a_time():
    """A run of appends to one zone goes down as one commit with a device write per append
    (``_media_write_units``, ``write_vectors``): the same chunks, data, statistics and modeled time."""
    calls = []
    a, pa, sa, va = _store_churned(runs=False)
    b, pb, sb, vb = _store_churned(runs=True)
    assert a == b and np.array_equal(pa, pb)
    assert a["gc_write_bytes"] > 0
    wv = vb.ocssd.write_vectors
    vb.ocssd.write_vectors = lambda p, d, c=None: (calls.append(1 if c is None else len(c)), wv(p, d, c))[1]
    sb.swap_out(np.arange(300), np.zeros((300, 4096), np.uint8), stream=0)
    sb.flush()
    assert calls and max(calls) > 1            # runs of several appends were taken together


def test_write_vectors_checks_each_write_before_any():
    oc = ocssd()
    g = oc.geometry
    data = np.zeros((8, 4096), np.uint8)
    with pytest.raises(ZoneStateError, match="write 0 of the vector: 2 sectors to chunk 0"):
        oc.write_vectors(np.arange(8), data, [2, 6])       # 8 in all is fine, 2 then 6 is not
    with pytest.raises(InvalidIOError):
        oc.write_vectors(np.arange(8), data, [4, 3])
    assert oc.chunk_info([0])[0].wp == 0         # nothing written
    t = oc.now()
    oc.write_vectors(np.arange(8), data, [4, 0, 4])
    assert oc.chunk_info([0])[0].wp == 8 and oc.now() >= t
    twin = ocssd()
    twin.write(np.arange(4), data[:4])
    twin.write(np.arange(4, 8), data[4:])
    assert twin.stats() == oc.stats() and g.sectors == twin.geometry.sectors


@pytest.mark.parametrize("payload", ["", "&payload=0"])
def test_write_vectors_of_words_reads_back_each_word_then_zeros(payload):
    oc = open_device(OCSSD.format(chunks=8, preset="thesis-ssd") + payload)
    twin = open_device(OCSSD.format(chunks=8, preset="thesis-ssd") + payload)
    words = np.arange(1, 13, dtype=np.uint64) * np.uint64(0x1001)
    oc.write_vectors(np.arange(12), words, [4, 8], words=True)
    sectors = np.zeros((12, 4096), np.uint8)
    sectors[:, :8] = words.view(np.uint8).reshape(-1, 8)
    twin.write_vectors(np.arange(12), sectors, [4, 8])
    assert oc.stats() == twin.stats() and oc.now() == twin.now()
    assert np.array_equal(oc.read(np.arange(4)), sectors[:4].reshape(-1))    # readable: 8 written after them
    with pytest.raises(InvalidIOError):
        oc.write_vectors(np.arange(12, 16), words[:3], words=True)
