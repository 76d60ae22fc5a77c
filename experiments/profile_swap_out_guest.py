"""Where a 2 MiB ``swap_out`` spends its time on the real zoned namespace in the QEMU guest (issue 12).

Boots the 6.1 guest on the fio-parity namespace (experiments/fio_parity.py's geometry), fills half of
128 MiB with 2 MiB ``swap_out`` calls timed plainly (and the time inside the device's
``append_batch`` / ``append_run``), then the other half under cProfile, and writes the guest's output
to experiments/results/fio_parity/swap_out_profile.txt. Wall clock under TCG: the split between waiting
for appends and host work is what it shows, not flash.

    .venv/bin/python experiments/profile_swap_out_guest.py            # on the host
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = 128 * 256               # 128 MiB of 4 KiB pages
CALL_PAGES = 512                # 2 MiB per swap_out call


def guest() -> None:
    import cProfile
    import io
    import pstats
    import time

    import numpy as np

    sys.path.insert(0, os.path.join(REPO, "tests", "qemu"))
    import guest_parity as gp
    from zswap_host import StoreConfig, SwapStore

    gp.reset_all()
    pages = gp.make_pages(PAGES)
    dev = gp.open_zoned(None)
    store = SwapStore(dev, StoreConfig(placement="temporal", victim="greedy"))
    ids = np.arange(PAGES, dtype=np.int64)
    acc = {"s": 0.0, "n": 0}

    def timed(inner):
        def call(*a, **k):
            t = time.perf_counter()
            try:
                return inner(*a, **k)
            finally:
                acc["s"] += time.perf_counter() - t
                acc["n"] += 1
        return call

    dev.append_batch = timed(dev.append_batch)
    w = store._writer                               # the committer (store/commit.py)
    if w._append_run is not None:                   # the one-batch call's device write
        w._append_run = timed(w._append_run)
    ex = store._express
    if ex is not None and ex._port is not None:     # the express call: bookkeeping and device write in C
        port = ex._port
        ex._port = timed(port)
        ex._port.results = port.results
    half, calls = PAGES // 2, PAGES // 2 // CALL_PAGES
    t0 = time.perf_counter()
    for i in range(0, half, CALL_PAGES):
        store.swap_out(ids[i:i + CALL_PAGES], pages[i:i + CALL_PAGES])
    t = time.perf_counter() - t0
    print(f"plain: {calls} calls of {CALL_PAGES * 4} KiB in {t:.3f} s = {t / calls * 1e3:.2f} ms per call; "
          f"inside append_batch/append_run/st_out_call {acc['s']:.3f} s ({acc['n']} batches) = "
          f"{acc['s'] / calls * 1e3:.2f} ms per call")
    if ex is not None:
        print(f"express calls: {ex.taken} of {2 * calls} (device write in the same C call: {ex.in_one_call}); "
              f"declined by reason: {ex.declined}")
    prof = cProfile.Profile()
    prof.enable()
    for i in range(half, PAGES, CALL_PAGES):
        store.swap_out(ids[i:i + CALL_PAGES], pages[i:i + CALL_PAGES])
    prof.disable()
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(key).print_stats(30)
        print(f"--- cProfile of the other {calls} calls, by {key}\n" + out.getvalue())
    store.flush()
    if ex is not None:
        print(f"express calls: {ex.taken} of {2 * calls}; declined by reason: {ex.declined}")
    want = np.arange(0, PAGES, 37, dtype=np.int64)
    bad = int((store.swap_in(want) != pages[want]).any(axis=1).sum())
    print(f"read back: {bad} of {want.size} pages differ")
    store.close()
    dev.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--guest", action="store_true", help=argparse.SUPPRESS)     # the part run in the guest
    ap.add_argument("--out", default=os.path.join(REPO, "experiments", "results", "fio_parity",
                                                  "swap_out_profile.txt"))
    a = ap.parse_args()
    if a.guest:
        guest()
        return 0
    sys.path.insert(0, REPO)
    sys.path.insert(0, os.path.join(REPO, "experiments"))
    from emulator.zns_vm import run_in_guest
    from fio_parity import config

    work = tempfile.mkdtemp(prefix="swap-out-profile-")
    cmd = (f"cd {work} && PYTHONDONTWRITEBYTECODE=1 PYTHONPATH={REPO} HOME={work} {sys.executable} "
           f"{os.path.abspath(__file__)} --guest")
    res = run_in_guest(cmd, config(), work, timeout=900, cwd=REPO)
    if res.returncode != 0:
        print(res.output[-3000:], file=sys.stderr)
        return 1
    text = res.output[res.output.index("plain:"):]
    with open(a.out, "w") as f:
        f.write(f"# {os.path.relpath(__file__, REPO)}: guest output\n{text}")
    print(text.splitlines()[0])
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
