"""Where a fault's time goes in the thread mode (issue 33): cProfile on the resolver thread during
8 s of experiments/pager_serve.py's one-thread loop (256 MiB int64 array under 64 MiB, in-memory
emulated ZNS store, timing off); prints faults/s, CPU µs per fault and the resolver's top 25 functions
by own time. The C calls (pg_wait, pg_fetched) show wall time with the GIL released, including the
wait for the next fault and for the GIL back.

    python experiments/pager_profile.py
"""
import cProfile, pstats, sys, time, threading, io
sys.path.insert(0, "experiments")
import numpy as np
import pager_serve as ps
from zswap_host.pager import resolver as R
prof = cProfile.Profile()
orig = R.Resolver.run
def run(self):
    prof.enable()
    try: orig(self)
    finally: prof.disable()
R.Resolver.run = run
from zswap_host.pager import Pager
p = Pager(ps.make_store(ps.URL), 64 << 20)
a = p.alloc((256 << 20)//8, np.int64); ps.fill(a)
s0 = p.stats(); t0 = time.perf_counter(); c0 = time.process_time()
made = ps.rmw(a, 1, 8.0, 0)
wall = time.perf_counter()-t0; cpu = time.process_time()-c0; s = p.stats()
f = (s.faults_missing - s0.faults_missing) + (s.faults_wp - s0.faults_wp)
print("faults", f, "faults/s", f/wall, "cpu us/fault", cpu/f*1e6, "missing", s.faults_missing-s0.faults_missing, "batches", s.fetch_batches-s0.fetch_batches)
p.close()
st = pstats.Stats(prof); st.sort_stats("tottime").print_stats(25)
