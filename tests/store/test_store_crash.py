"""Crash consistency of a file-backed emulated device under a SwapStore, and thread safety of the
store (issue 10, item 4).

- A subprocess swaps out pages as fast as it can into ``emu://PATH`` and is SIGKILLed mid-run; the
  device then reopens (its ``PATH.zones`` passes the corruption checks), zone states and write
  pointers are consistent, and an index rebuilt from the zone summaries alone
  (``scan_zone_summaries``) finds every page of every sealed zone with the bytes written for it.
- Two writer threads on disjoint ids and a GC thread, every page verified.
"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from zswap_host import StoreConfig, SwapStore, open_device
from zswap_host.devices import ZoneCond
from zswap_host.store import read_zone_summary, scan_zone_summaries

PS = 4096
GEOM = "zones=24&zone_size=1MiB&max_open=8&max_active=8&max_append=128KiB&preset=none"

WRITER = textwrap.dedent("""
    import sys, numpy as np
    from zswap_host import SwapStore, StoreConfig, open_device
    dev = open_device(sys.argv[1])
    st = SwapStore(dev, StoreConfig(write_size=128 << 10))
    rng = np.random.default_rng(int(sys.argv[2]))
    n = int(st.capacity_pages * 0.8)
    v = 0
    while True:
        v += 1
        ids = np.unique(rng.integers(0, n, int(rng.integers(1, 200))))
        words = (ids[:, None] * 1000003 + v) * np.ones((1, 512), np.int64)
        words[:, 1] = ids                      # word 1: the id; word 0: id * 1000003 + version
        st.swap_out(ids, words.view(np.uint8).reshape(ids.size, 4096))
        sealed = sum(z.cond == 0xE for z in dev.report_zones())
        print(v, sealed, flush=True)
""")


@pytest.mark.parametrize("seed", [1, 2])
def test_sigkill_mid_write_leaves_a_consistent_device_and_recoverable_summaries(tmp_path, seed):
    path = tmp_path / "crash.img"
    url = f"emu://{path}?{GEOM}"
    p = subprocess.Popen([sys.executable, "-c", WRITER, url, str(seed)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        for line in p.stdout:                  # kill once GC has been busy a while
            v, sealed = map(int, line.split())
            if v >= 150 + 40 * seed or time.time() > deadline:
                break
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == -signal.SIGKILL, p.stderr.read()[-2000:]

    dev = open_device(f"emu://{path}")        # reopens: PATH.zones passes the corruption checks
    g = dev.geometry
    zones = dev.report_zones()
    assert not any(z.cond.is_open for z in zones)          # a reopen is a power cycle
    for z in zones:
        assert 0 <= z.written <= g.zone_capacity
        assert (z.cond == ZoneCond.FULL) == (z.written == g.zone_capacity)
        assert (z.cond == ZoneCond.EMPTY) == (z.written == 0)
    sealed = [z.index for z in zones if z.cond == ZoneCond.FULL and read_zone_summary(dev, z.index)]
    assert sealed, "no zone was sealed before the kill"
    # every page of every sealed zone is where its summary says, with bytes written for that id
    for zi in sealed:
        _, ids = read_zone_summary(dev, zi)
        data = dev.read(g.zone_start(zi), ids.size * PS).view(np.int64).reshape(ids.size, PS // 8)
        assert np.array_equal(data[:, 1], ids), f"zone {zi}: a slot holds another page than its summary says"
        assert np.array_equal((data[:, 0] - ids * 1000003) >= 1, np.ones(ids.size, bool))
    # an index rebuilt from the summaries alone recovers every page of every sealed zone
    index = scan_zone_summaries(dev)
    in_sealed = set()
    for zi in sealed:
        in_sealed |= set(read_zone_summary(dev, zi)[1].tolist())
    assert in_sealed <= set(index)
    offs = np.array([index[i][0] for i in sorted(in_sealed)], np.int64)
    for i, off in zip(sorted(in_sealed), offs.tolist()):
        page = dev.read(off, PS).view(np.int64)
        assert page[1] == i and (page[0] - i * 1000003) >= 1
    # and the device is usable again: a new store takes it over
    st = SwapStore(dev, StoreConfig(write_size=128 << 10))
    st.swap_out(np.arange(100), np.ones((100, PS), np.uint8))
    assert np.array_equal(st.swap_in([5]), np.ones((1, PS), np.uint8))
    dev.close()


def test_two_writer_threads_on_disjoint_ids_and_a_gc_thread():
    st = SwapStore(open_device(f"emu://?{GEOM}"), StoreConfig(write_size=128 << 10))
    per = int(st.capacity_pages * 0.4)
    errors, stop = [], threading.Event()

    def page(ids, v):
        v = np.broadcast_to(np.asarray(v, np.int64), ids.shape)[:, None]
        w = (ids[:, None] * 1000003 + v) * np.ones((1, PS // 8), np.int64)
        return w.view(np.uint8).reshape(ids.size, PS)

    def writer(t):
        try:
            rng = np.random.default_rng(t)
            ids = np.arange(t * per, (t + 1) * per)
            version = np.zeros(per, np.int64)
            st.swap_out(ids, page(ids, 0))
            for v in range(1, 150):
                sel = np.unique(rng.choice(per, 40))
                st.swap_out(ids[sel], page(ids[sel], v))
                version[sel] = v
                q = np.unique(rng.choice(per, 30))
                assert np.array_equal(st.swap_in(ids[q]), page(ids[q], version[q]))
                if v % 10 == 0:
                    gone = np.unique(rng.choice(per, 5))
                    st.discard(ids[gone])
                    st.swap_out(ids[gone], page(ids[gone], v))
                    version[gone] = v
            assert np.array_equal(st.swap_in(ids), page(ids, version))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def gc():
        while not stop.is_set():
            try:
                st.gc_step(256 << 10)
                st.idle(0.0001)
            except Exception as e:  # pragma: no cover
                errors.append(e)
                return

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(2)]
    g = threading.Thread(target=gc)
    g.start()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    stop.set()
    g.join()
    assert not errors, errors
    st.check()
    assert st.stats().pages_stored == 2 * per
    assert st.stats().as_dict()["gc_runs"] > 0
