"""The store's GC CPU, measured (issue 31): a bench preset's page trace replayed on a nearly full SSD
(``--utilisation``, default 0.95) through the store's runs, with the CPU time of its GC entry points
counted around the replay.

Each run replays the trace as ``zswap-host replay`` does (``zswap_host.replay``: payload-free devices
sized as the bench sizes them, every swap-in verified, ended by a flush), in a process of its own
that first wraps, with ``time.process_time``:

- the collector's entry points, ``Collector.step`` (victim choice, relocation of a victim's valid
  pages through the store's planner and committer, the victim's reset) and ``Collector.reclaim_empty``
  (resets of zones that hold nothing valid) — only the outermost call counts (a GC write that needs a
  zone can reach the collector again);
- inside them: ``Collector.pick`` (victim choice), ``ZoneAllocator.reset`` (zone resets), and every
  call into the emulated device (``read_batch``, ``append_batch``, ``reset_zone``, ...: its state and
  its C timing model, which on a real drive would be the drive's work, not the host's).

Per run: pages per CPU second, the GC's CPU seconds (all; the device's part; the rest, the store's
own), relocated GiB (the store's GC writes), GC CPU seconds per relocated GiB, and the share of one
core the GC took over the run's modeled time (stall + compute windows) — the figure ZNSwap reports
for its in-kernel GC (15% of one core at 80% occupancy). Each run is replayed twice, in processes of
their own: without the timers (its ``cpu_s`` and ``pages_per_cpu_s``) and with them (the GC split,
and its own ``timed_cpu_s``: the timers' wrappers cost about 5% of the run's CPU), the two replays'
modeled fields checked equal.

    python experiments/gc_cpu.py --trace DIR [--preset mlperf] [--budget 10%] [--iterations N]
        [--compute-us-per-sample US] [--utilisation 0.95] [--runs store-on-zns,store-on-conventional]
        [--out FILE.json]

The trace is generated into ``--trace`` when it is not there with the same parameters (torch-free;
not committed). Bad input: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

GIB = 1 << 30
MODELED = ("stall_s", "write_amplification", "store_gc_mib", "device_gc_mib", "swap_in_p99_ms", "pages")
DEVICE_CALLS = ("read_batch", "append_batch", "reset_zone", "finish_zone", "append", "read", "write",
                "read_timed", "write_vectors", "reset_chunks")


class GcMeter:
    """CPU seconds spent in the store's GC, split into victim choice, resets and device calls."""

    def __init__(self) -> None:
        self.depth = 0            # > 0 while a GC entry point runs
        self.dev_depth = 0
        self.total = self.pick = self.reset = self.device = 0.0
        self.entries = 0

    def install(self) -> None:
        """Wrap the GC entry points and the emulated devices' calls, for every store made after."""
        from zswap_host.devices.emulated import EmulatedZonedDevice
        from zswap_host.devices.ocssd_view import OcssdZonedView
        from zswap_host.devices.zoned_view import ZonedBlockView
        from zswap_host.gc.collector import Collector
        from zswap_host.store.zones import ZoneAllocator

        Collector.step = self._outer(Collector.step)
        Collector.reclaim_empty = self._outer(Collector.reclaim_empty)
        Collector.pick = self._inner(Collector.pick, "pick")
        ZoneAllocator.reset = self._inner(ZoneAllocator.reset, "reset")
        for cls in (EmulatedZonedDevice, ZonedBlockView, OcssdZonedView):
            for name in DEVICE_CALLS:
                fn = getattr(cls, name, None)
                if fn is not None:
                    setattr(cls, name, self._device(fn))

    def _outer(self, fn):
        clock = time.process_time

        def timed(*a, **kw):
            if self.depth:
                return fn(*a, **kw)
            self.depth = 1
            t = clock()
            try:
                return fn(*a, **kw)
            finally:
                self.total += clock() - t
                self.entries += 1
                self.depth = 0
        return timed

    def _inner(self, fn, field: str):
        clock = time.process_time

        def timed(*a, **kw):
            if not self.depth:
                return fn(*a, **kw)
            t = clock()
            try:
                return fn(*a, **kw)
            finally:
                setattr(self, field, getattr(self, field) + clock() - t)
        return timed

    def _device(self, fn):
        clock = time.process_time

        def timed(*a, **kw):
            if not self.depth or self.dev_depth:          # outside GC, or a view's call to its device
                return fn(*a, **kw)
            self.dev_depth = 1
            t = clock()
            try:
                return fn(*a, **kw)
            finally:
                self.device += clock() - t
                self.dev_depth = 0
        return timed


def child(a) -> None:
    """One run, timers installed (``--plain``: none): its replay row and the GC figures as one JSON
    line on stdout."""
    from zswap_host.replay import ReplaySpec, run_replay

    meter = GcMeter()
    if not a.plain:
        meter.install()
    res = run_replay(ReplaySpec(trace=a.trace, runs=(a.child,), utilisation=a.utilisation, isolate=False))
    row = res["runs"][0]
    if a.plain:
        print(json.dumps(row))
        return
    gib = row["store_gc_mib"] / 1024
    modeled = row["stall_s"] + row["compute_s"]
    row.update({
        "modeled_time_s": round(modeled, 3),
        "gc_entries": meter.entries,
        "gc_cpu_s": round(meter.total, 2),
        "gc_device_cpu_s": round(meter.device, 2),
        "gc_store_cpu_s": round(meter.total - meter.device, 2),
        "gc_pick_cpu_s": round(meter.pick, 2),
        "gc_reset_cpu_s": round(meter.reset, 2),
        "gc_share_of_cpu": round(meter.total / max(row["cpu_s"], 1e-9), 3),
        "relocated_gib": round(gib, 2),
        "gc_cpu_s_per_relocated_gib": round(meter.total / gib, 3) if gib else None,
        "gc_store_cpu_s_per_relocated_gib": round((meter.total - meter.device) / gib, 3) if gib else None,
        "gc_core_share_of_modeled_time": round(meter.total / modeled, 4) if modeled else None,
        "gc_store_core_share_of_modeled_time": round((meter.total - meter.device) / modeled, 4) if modeled else None,
        "devices": res["devices"], "trace": res["trace"]})
    print(json.dumps(row))


def fail(msg: str) -> None:
    print(f"gc_cpu: {msg}", file=sys.stderr)
    sys.exit(2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", required=True, help="chunked trace directory (generated there when absent)")
    ap.add_argument("--preset", default="mlperf")
    ap.add_argument("--budget", default="10%")
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--compute-us-per-sample", type=float, default=None)
    ap.add_argument("--utilisation", type=float, default=0.95)
    ap.add_argument("--runs", default="store-on-zns,store-on-conventional")
    ap.add_argument("--out", default=None, help="write the result JSON here (default: stdout only)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--plain", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a)
        return
    from zswap_host.errors import ZswapError
    from zswap_host.replay import ReplayError, check_runs, ensure_trace

    try:
        runs = check_runs([r.strip() for r in a.runs.split(",") if r.strip()])
        if any(r.startswith("linux") for r in runs):
            raise ReplayError("the Linux-swap runs have no store GC to measure: give store runs")
        t0 = time.monotonic()
        ensure_trace(a.trace, a.preset, budget=a.budget, iterations=a.iterations,
                     us_per_sample=a.compute_us_per_sample, sizing={"utilisation": a.utilisation},
                     progress=lambda d, n: print(f"[trace] {d}/{n} iterations, {time.monotonic() - t0:.0f} s",
                                                 file=sys.stderr, flush=True))
    except (ReplayError, ZswapError) as e:
        fail(str(e))
    rows, text = [], ""
    for name in runs:
        row = {}
        for plain in (True, False):             # the CPU without timers first, then the GC split
            print(f"[{name}] replaying{'' if plain else ' with the GC timers'}", file=sys.stderr, flush=True)
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--trace", a.trace, "--utilisation",
                                str(a.utilisation), "--child", name] + (["--plain"] if plain else []),
                               stdout=subprocess.PIPE, text=True)
            if p.returncode != 0:
                fail(f"run {name} failed (exit {p.returncode})")
            got = json.loads(p.stdout.strip().splitlines()[-1])
            if plain:
                row = got
                continue
            differ = [k for k in MODELED if got[k] != row[k]]
            if differ:
                fail(f"run {name}: the timed replay's modeled {differ} differ from the plain one's")
            for k in ("cpu_s", "wall_s", "pages_per_cpu_s", "peak_rss_mib"):
                got["timed_" + k] = got.pop(k)
            row.update(got)
            row["gc_share_of_cpu"] = round(row["gc_cpu_s"] / max(row["timed_cpu_s"], 1e-9), 3)
        print(f"[{name}] {row['pages_per_cpu_s']:,} pages per CPU s; GC {row['gc_cpu_s']} CPU s "
              f"({row['gc_store_cpu_s']} store, {row['gc_device_cpu_s']} device) for {row['relocated_gib']} GiB "
              f"relocated: {row['gc_cpu_s_per_relocated_gib']} s/GiB, "
              f"{row['gc_core_share_of_modeled_time']} of a core over {row['modeled_time_s']} modeled s",
              file=sys.stderr, flush=True)
        rows.append(row)
        text = report(a, rows)                  # after every run: a later failure keeps the runs done
    print(text)


def report(a, rows: list[dict]) -> str:
    """The result JSON of the runs done so far, written to ``--out`` when given."""
    out = {"command": "python experiments/gc_cpu.py " + " ".join(sys.argv[1:]), "trace": rows[0]["trace"],
           "utilisation": a.utilisation, "devices": rows[0]["devices"],
           "runs": [{k: v for k, v in r.items() if k not in ("trace", "devices")} for r in rows]}
    text = json.dumps(out, indent=1)
    if a.out:
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text + "\n")
    return text


if __name__ == "__main__":
    main()
