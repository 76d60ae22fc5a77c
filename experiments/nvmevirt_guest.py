"""Issue 29 part 3: the fio jobs of ``zswap-host characterize`` (and of the published ZN540
characterisation) on NVMeVirt's devices in the TCG guest, side by side with our ``zn540`` model and
the published numbers::

    NVMEVIRT_SRC=/path/to/nvmevirt .venv/bin/python experiments/nvmevirt_guest.py \
        [--device zns,ssd] [--suite] [--out experiments/results/nvmevirt]

One guest session per device (``emulator.nvmevirt``: NVMeVirt built for the guest kernel, 1 GiB
namespace in reserved memory, ZN540 zones of 64 MiB). Per job the guest leaves fio's JSON and
NVMeVirt's per-command timing trace (its ``PERF_DEBUG`` ``trace_printk``); this script reads both:

* ``wall``: what fio measured in the guest. Under TCG this is the guest CPU's speed, not the device's.
* ``modeled``: from the trace, the latency NVMeVirt's model assigned to each command
  (``nsecs_target - nsecs_start``), turned into throughput as ``zones x bs / mean latency`` (QD 1 per
  zone) or ``QD / mean latency`` (Little's law; an upper bound: see ``docs/nvmevirt.md``).

``--suite`` also runs, on the ZNS namespace, the conformance suite and the store's swap-out/in tests
(``tests/qemu/guest_conformance.py``, ``tests/qemu/guest_store.py``) with the sync engine.

Writes ``OUT/<device>/`` (guest log, fio JSON, traces), ``OUT/nvmevirt_<device>.json`` and
``OUT/README.md`` (the table).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import shutil
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from emulator.nvmevirt import NvmevirtConfig, NvmevirtError, parse_trace, run  # noqa: E402

KiB, MiB = 1 << 10, 1 << 20
ZONE_MIB = 64
PUBLISHED = os.path.join(REPO, "experiments", "data", "zn540_published.csv")
# PCIE_BANDWIDTH of NVMeVirt's presets in its ssd_config.h (WD_ZN540, SAMSUNG_970PRO), in its units
PCIE_MB_S = {"zns": 3050, "ssd": 3360}


def nvmevirt_rate_mib_s(bandwidth: int) -> float:
    """The rate NVMeVirt's channel model (PCIe, NAND channels) really gives a ``*_BANDWIDTH`` of its
    ``ssd_config.h``: its "MB/s" are MiB/s (``MB(m) = m << 20``, nvmev.h) and a 128-byte unit takes
    a whole number of ns (``BANDWIDTH_TO_TX_TIME``, channel_model.h: 128e9 / (MB_S << 20), truncated)."""
    ns = (128 * 10**9) // (bandwidth << 20)
    return 128 / ns * 1e9 / MiB
RUNTIME_S = 6            # per fio job (wall, in the guest); each job also stops at its size


def jobs(zoned: bool) -> list[dict]:
    """The jobs, in run order. ``zones`` writers at QD 1 each (one zone each) or one reader at ``qd``.
    Fields match the published CSV's (experiment, op, bs_kib, qd, zones, occupancy_pct)."""
    out = []
    for bs in (4, 8, 16, 32, 64, 128):
        out.append(dict(name=f"write_{bs}k_qd1_1z", experiment="size_sweep", op="write", bs_kib=bs, qd=1, zones=1))
    for n in (2, 4, 8, 14):
        out.append(dict(name=f"write_4k_qd1_{n}z", experiment="zone_sweep", op="write", bs_kib=4, qd=1, zones=n))
    for bs, n in ((16, 2), (16, 8), (128, 8)):
        out.append(dict(name=f"write_{bs}k_qd1_{n}z", experiment="zone_sweep_bw", op="write", bs_kib=bs, qd=1, zones=n))
    for bs, qd in ((4, 1), (4, 8), (4, 32), (4, 128), (4, 256), (16, 32)):
        out.append(dict(name=f"randread_{bs}k_qd{qd}", experiment="read_qd", op="randread", bs_kib=bs, qd=qd, zones=1))
    if zoned:
        for op in ("reset", "finish"):
            for occ in (0.0, 6.25, 12.5, 25.0, 50.0, 100.0):
                out.append(dict(name=f"{op}_{occ:g}pct", experiment=op, op=op, occupancy_pct=occ))
    return out


def _fio(common: str, j: dict, first_zone: int) -> str:
    """fio command line for job ``j``; writer k works in zone ``first_zone + k``."""
    bs = j["bs_kib"]
    if j["op"] == "write":
        parts = [f"fio {common} --rw=write --bs={bs}k --iodepth=1 --ioengine=psync --runtime={RUNTIME_S}"]
        for k in range(j["zones"]):
            parts.append(f"--name=w{k} --offset={(first_zone + k) * ZONE_MIB}M --size={ZONE_MIB}M")
        return " ".join(parts)
    # random reads of the two filled zones 0-1
    return (f"fio {common} --rw=randread --bs={bs}k --iodepth={j['qd']} --ioengine=io_uring --runtime={RUNTIME_S} "
            f"--time_based --name=r --offset=0 --size={2 * ZONE_MIB}M")


def guest_command(out: str, zoned: bool, suite: bool, python: str, only: str | None = None, bench: bool = False) -> str:
    """The guest shell script: device facts, fill zones 0-1, every job (fio JSON + trace per job),
    optionally the conformance and store suites."""
    zmode = "--zonemode=zbd" if zoned else ""
    common = f"--filename=$D --direct=1 {zmode} --group_reporting --output-format=json"
    zone_sectors = ZONE_MIB * MiB // 512
    L = ["set -u", f"OUT={out}", "mkdir -p $OUT", "D=$NVMEVIRT_DEV", "N=$(basename $D)",
         "cd $OUT",
         # udev re-reads the namespace after every close of a written device node (blkid probe): its
         # reads would land in the jobs' traces
         "udevadm control --exit 2>/dev/null; echo \"udevd running: $(pgrep -c udevd)\"",
         "dmesg | grep NVMeVirt > $OUT/dmesg_load.txt",
         "for f in zoned chunk_sectors nr_zones max_open_zones max_active_zones logical_block_size "
         "max_hw_sectors_kb max_segments zone_append_max_bytes scheduler; do "
         "echo \"$f $(cat /sys/block/$N/queue/$f 2>/dev/null)\"; done > $OUT/queue.txt",
         "nvme id-ctrl $D > $OUT/id-ctrl.txt 2>&1; nvme id-ns $D > $OUT/id-ns.txt 2>&1"]
    if zoned:
        L += ["echo mq-deadline > /sys/block/$N/queue/scheduler",
              "blkzone report $D > $OUT/blkzone-report.txt 2>&1; echo STEP blkzone rc=$?",
              "nvme zns id-ns $D > $OUT/zns-id-ns.txt 2>&1; echo STEP zns-id-ns rc=$?",
              "nvme zns id-ctrl $D > $OUT/zns-id-ctrl.txt 2>&1; echo STEP zns-id-ctrl rc=$?",
              "resetz() { blkzone reset -o $(( $1 * %d )) -c $2 $D; }" % zone_sectors]
    else:
        L += ["resetz() { :; }"]
    # the trace marker: commands that start before it (udev probing the namespace after the previous
    # job's writes) are not this job's
    L += ["job() { local name=$1; shift; echo > $NVMEVIRT_TRACE; echo JOBSTART > /sys/kernel/tracing/trace_marker; "
          "local t0=$(date +%s%N); \"$@\" > $OUT/$name.json 2> $OUT/$name.err; "
          "local rc=$?; local t1=$(date +%s%N); echo JOBEND > /sys/kernel/tracing/trace_marker; cp $NVMEVIRT_TRACE $OUT/$name.trace; "
          "echo \"STEP $name rc=$rc ms=$(( (t1 - t0) / 1000000 ))\"; }",
          # fill zones 0-1 for the reads (128 KiB writes)
          f"job fill fio {common} --rw=write --bs=128k --iodepth=1 --ioengine=psync --name=f --offset=0 "
          f"--size={2 * ZONE_MIB}M"]
    selected = [j for j in jobs(zoned) if only is None or re.search(only, j["name"])]
    if not any(j["op"] == "randread" for j in selected):
        L.pop()                                  # the fill is for the reads
    for j in selected:
        if j["op"] == "write":
            L.append(f"resetz 2 14; job {j['name']} " + _fio(common, j, 2))
        elif j["op"] == "randread":
            L.append(f"job {j['name']} " + _fio(common, j, 0))
        else:
            occ_bytes = int(round(j["occupancy_pct"] / 100 * ZONE_MIB * MiB / 4096)) * 4096
            if j["op"] == "finish" and occ_bytes >= ZONE_MIB * MiB:
                occ_bytes = ZONE_MIB * MiB - 4096           # the artefact: one block short of full
            fill = (f"fio --filename=$D --direct=1 --zonemode=zbd --rw=write --bs=128k --ioengine=psync --name=o --offset={2 * ZONE_MIB}M "
                    f"--size={ZONE_MIB}M --io_size={occ_bytes} > /dev/null 2>&1; " if occ_bytes else "")
            L.append(f"resetz 2 1; {fill}job {j['name']} blkzone {j['op']} -o {2 * zone_sectors} -c 1 $D; "
                     f"(echo '== {j['name']}'; dmesg | tail -8) >> $OUT/dmesg_zone_mgmt.txt")
    if suite and zoned:
        pyt = (f"cd {REPO} && PYTHONDONTWRITEBYTECODE=1 HOME=$OUT ZSWAP_ZNS_DEVICE=$D ZSWAP_IO_ENGINES=sync "
               f"{python} -m pytest -q -p no:cacheprovider --rootdir {REPO} -c {REPO}/pyproject.toml")
        L += ["resetz 0 16",
              f"( {pyt} --junitxml $OUT/conformance.xml tests/qemu/guest_conformance.py > $OUT/conformance.log 2>&1 ); "
              "echo STEP conformance rc=$?; tail -15 $OUT/conformance.log",
              "resetz 0 16",
              f"( {pyt} --junitxml $OUT/store.xml tests/qemu/guest_store.py > $OUT/store.log 2>&1 ); "
              "echo STEP store rc=$?; tail -15 $OUT/store.log"]
    if bench and zoned:
        # the bench's store on the NVMeVirt ZNS namespace (its Linux-swap runs on the emulated default
        # baseline: NVMeVirt has one device type per build), every swapped-in page checked
        L += ["resetz 0 16",
              f"( cd $OUT && PYTHONDONTWRITEBYTECODE=1 HOME=$OUT {python} -m zswap_host.cli bench --device $D --quick "
              "--iterations 20 --jobs 1 --verify --json $OUT/bench.json > $OUT/bench.log 2>&1 ); "
              "echo STEP bench rc=$?; tail -25 $OUT/bench.log"]
    L += ["dmesg > $OUT/dmesg_end.txt", "echo GUEST done"]
    return "\n".join(L)


def _fio_summary(path: str) -> dict | None:
    try:
        with open(path) as f:
            text = f.read()
        data = json.loads(text[text.index("{"):])
    except (OSError, ValueError):
        return None
    bw = iops = 0.0
    lat = []
    for jb in data["jobs"]:
        for d in ("read", "write"):
            r = jb[d]
            if r["total_ios"]:
                bw += r["bw"] / 1024
                iops += r["iops"]
                lat.append(r["clat_ns"]["mean"] / 1e3)
    return {"wall_mib_s": bw, "wall_kiops": iops / 1e3, "wall_clat_us": statistics.mean(lat) if lat else None}


def job_commands(text: str, zoned: bool) -> list[tuple[int, int, int]]:
    """The host commands of one job's trace: those that start between the job's ``JOBSTART`` and
    ``JOBEND`` trace markers or, in a trace without one, from the first zero-latency command on (fio's zone report at
    its start-up; earlier commands are udev's probe reads after the previous job)."""
    cmds = parse_trace(text)
    m = re.search(r"\s(\d+\.\d+): tracing_mark_write: JOBSTART", text)
    if m:
        t0 = float(m.group(1)) * 1e9
        e = re.search(r"\s(\d+\.\d+): tracing_mark_write: JOBEND", text)
        t1 = float(e.group(1)) * 1e9 if e else math.inf
        return [c for c in cmds if t0 <= c[0] <= t1]
    if zoned:
        first = next((i for i, c in enumerate(cmds) if c[1] == 0), None)
        if first is not None:
            return cmds[first:]
    return cmds


def summarize_job(j: dict, fio: dict | None, trace: list[tuple[int, int, int]], pcie_mib_s: float = math.inf) -> dict:
    """One job's row: wall (fio) and modeled (trace) numbers."""
    row = dict(j)
    if fio:
        row.update(fio)
    if j["op"] in ("reset", "finish"):
        # the trace of a reset/finish job holds the zone management command(s) only
        lats = [t for _s, t, _f in trace]
        row["modeled_ms"] = statistics.mean(lats) / 1e6 if lats else None
        # when the worker really posted the completion (TCG wall; a reset memsets the whole zone first)
        row["cq_filled_ms"] = statistics.mean(f for _s, _t, f in trace) / 1e6 if trace else None
        row["commands_traced"] = len(lats)
        return row
    lats = [t for _s, t, _f in trace if t > 0]     # zone report/management commands model no delay
    late = [f - t for _s, t, f in trace if t > 0]
    row["commands_traced"] = len(lats)
    if not lats:
        return row
    mean_ns = statistics.mean(lats)
    row["modeled_lat_us"] = mean_ns / 1e3
    row["modeled_lat_p50_us"] = statistics.median(lats) / 1e3
    row["completion_late_us"] = statistics.mean(late) / 1e3      # CQ posted this long after its target
    mib_s, kiops, capped = little_throughput(in_flight(j), mean_ns, j["bs_kib"], pcie_mib_s)
    row.update(modeled_mib_s=mib_s, modeled_kiops=kiops, modeled_capped_by_pcie=capped)
    return row


def in_flight(j: dict) -> int:
    """Commands a job keeps in flight: one per writer (QD 1 each) or the reader's queue depth."""
    return j["zones"] if j["op"] == "write" else j["qd"]


def little_throughput(inflight: int, mean_ns: float, bs_kib: float, pcie_mib_s: float = math.inf) -> tuple[float, float, bool]:
    """(MiB/s, KIOPS, capped): Little's law with every writer / queue slot busy at the device, capped by
    the one resource all commands share in NVMeVirt's model, PCIe (its per-command firmware latencies
    are not shared)."""
    little_mib_s = inflight / mean_ns * 1e9 * bs_kib * KiB / MiB
    mib_s = min(little_mib_s, pcie_mib_s)
    return mib_s, mib_s * MiB / (bs_kib * KiB) / 1e3, little_mib_s > pcie_mib_s


def _key(r: dict) -> tuple:
    def f(x):
        return None if x in (None, "") else float(x)
    return (r["experiment"], r["op"] if r["op"] != "append" else "write", f(r.get("bs_kib")), f(r.get("qd")),
            f(r.get("zones")), f(r.get("occupancy_pct")))


def reference_points() -> tuple[dict, dict]:
    """(published value, our zn540 model value) per published point key (writes only, no appends)."""
    from zswap_host.characterize_zns import run as run_zns
    model = run_zns("zn540", quick=True)
    pub, ours = {}, {}
    for p in model["points"]:
        if p["op"] == "append" or p["experiment"] == "read_under_writes":
            continue
        k = _key(p)
        pub[k], ours[k] = p["paper"], p["model"]
    return pub, ours


def table(rows: list[dict], device: str) -> str:
    ours, pub = ("our zn540 model", "published ZN540") if device == "zns" else \
        ("our nvmevirt-970pro model (loaded)", "published 970 PRO (vendor peak)")
    out = [f"### NVMeVirt {device}", "",
           "| job | unit | NVMeVirt wall (TCG) | NVMeVirt modeled latency p50 / mean (µs) | NVMeVirt modeled | "
           f"{ours} | {pub} |",
           "|---|---|---:|---:|---:|---:|---:|"]

    def n(x, d=1):
        return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{d}f}"
    for r in rows:
        if r["op"] in ("reset", "finish"):
            out.append(f"| {r['name']} | ms | {n(r.get('cq_filled_ms'), 1)} (CQ posted) | – | {n(r.get('modeled_ms'), 3)} | {n(r.get('model'), 3)} | "
                       f"{n(r.get('published'), 3)} |")
            continue
        lat = f"{n(r.get('modeled_lat_p50_us'), 1)} / {n(r.get('modeled_lat_us'), 1)}"
        cap = "ᵖ" if r.get("modeled_capped_by_pcie") else ""
        if r["unit"] == "MiB/s":
            out.append(f"| {r['name']} | MiB/s | {n(r.get('wall_mib_s'))} | {lat} | {n(r.get('modeled_mib_s'))}{cap} | "
                       f"{n(r.get('model'))} | {n(r.get('published'))} |")
        else:
            out.append(f"| {r['name']} | KIOPS | {n(r.get('wall_kiops'), 2)} | {lat} | {n(r.get('modeled_kiops'), 1)}{cap} | "
                       f"{n(r.get('model'), 1)} | {n(r.get('published'), 1)} |")
    return "\n".join(out)


def _read_trace(path: str) -> str:
    """A job's trace, plain or gzipped ("" when there is none)."""
    if os.path.exists(path):
        with open(path) as f:
            return f.read()
    if os.path.exists(path + ".gz"):
        with gzip.open(path + ".gz", "rt") as f:
            return f.read()
    return ""


def compress_traces(outdir: str) -> None:
    """gzip the guest's plain traces (they are most of a session's bytes)."""
    for name in os.listdir(outdir):
        if name.endswith(".trace"):
            path = os.path.join(outdir, name)
            with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            os.remove(path)


def analyse(device: str, outdir: str, pub: dict, ours: dict) -> list[dict]:
    rows = []
    for j in jobs(device == "zns"):
        fio = _fio_summary(os.path.join(outdir, j["name"] + ".json")) if j["op"] not in ("reset", "finish") else None
        trace = job_commands(_read_trace(os.path.join(outdir, j["name"] + ".trace")), device == "zns")
        r = summarize_job(j, fio, trace, nvmevirt_rate_mib_s(PCIE_MB_S[device]))
        r["unit"] = ("ms" if j["op"] in ("reset", "finish") else
                     "MiB/s" if j["experiment"] in ("size_sweep", "zone_sweep_bw") else "KIOPS")
        if device == "zns":
            k = _key({**j, "bs_kib": j.get("bs_kib"), "qd": j.get("qd"), "zones": j.get("zones")})
            r["published"], r["model"] = pub.get(k), ours.get(k)
        else:
            r["published"], r["model"] = ssd_reference(os.path.dirname(outdir)).get(j["name"], (None, None))
        rows.append(r)
    return rows


def ssd_reference(out: str) -> dict[str, tuple]:
    """(published, our model loaded) per 970 PRO job from ``OUT/nvmevirt_970pro.json``
    (``experiments/nvmevirt_970pro.py``); empty without that file."""
    try:
        with open(os.path.join(out, "nvmevirt_970pro.json")) as f:
            rows = json.load(f)["jobs"]
    except (OSError, ValueError, KeyError):
        return {}
    return {r["name"]: ((r["published"] or {}).get("value"),
                        r["loaded"]["mib_s" if r["unit"] == "MiB/s" else "kiops"]) for r in rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="zns,ssd", help="comma list of zns, ssd")
    ap.add_argument("--suite", action="store_true", help="also the conformance and store suites on the ZNS namespace")
    ap.add_argument("--out", default=os.path.join(REPO, "experiments", "results", "nvmevirt"))
    ap.add_argument("--only", default=None, metavar="REGEX",
                    help="run only the jobs whose name matches (the others' earlier results are re-read)")
    ap.add_argument("--bench", action="store_true",
                    help="also zswap-host bench --device <the ZNS namespace> --quick --iterations 20 --verify")
    ap.add_argument("--fix-zone-buffer-leak", action="store_true",
                    help="ZNS: build with the zone reset refilling the zone write buffer (emulator/nvmevirt.py)")
    ap.add_argument("--analyse-only", action="store_true", help="re-read OUT/<device>/ without booting")
    ap.add_argument("--timeout", type=float, default=3600)
    a = ap.parse_args(argv)
    out = os.path.abspath(a.out)
    pub, ours = reference_points()
    md = ["# NVMeVirt in the TCG guest (issue 29 part 3)", "",
          "The committed results come from these sessions (`NVMEVIRT_SRC=<checkout of snu-csl/nvmevirt 61c90f7>`):", "",
          "    .venv/bin/python experiments/nvmevirt_guest.py --device zns,ssd --suite    # zns fio jobs, upstream build "
          "(stopped after its zns finish jobs: the namespace was gone, docs/nvmevirt.md)",
          "    .venv/bin/python experiments/nvmevirt_guest.py --device ssd                # ssd fio jobs",
          "    .venv/bin/python experiments/nvmevirt_guest.py --device zns --only '^(reset|finish)_' --suite --bench "
          "--fix-zone-buffer-leak",
          "    .venv/bin/python experiments/nvmevirt_970pro.py     # host only: our nvmevirt-970pro model, nvmevirt_970pro.{json,md}",
          "    .venv/bin/python experiments/nvmevirt_guest.py --device zns,ssd --analyse-only   # this file", "",
          "This file: `experiments/nvmevirt_guest.py " + " ".join(argv or sys.argv[1:]) + "`.",
          "", "wall = fio in the guest (TCG: the guest CPU's speed); modeled = NVMeVirt's own per-command "
          "completion target from its trace (QD/latency; see docs/nvmevirt.md). Occupancy is of NVMeVirt's "
          "64 MiB zone (published: of the ZN540's 1077 MiB capacity).", ""]
    for device in a.device.split(","):
        ddir = os.path.join(out, device)
        os.makedirs(ddir, exist_ok=True)
        if not a.analyse_only:
            cfg = NvmevirtConfig(device=device, zone_size_mib=ZONE_MIB, fix_zone_buffer_leak=a.fix_zone_buffer_leak)
            cmd = guest_command(ddir, device == "zns", a.suite, sys.executable, only=a.only, bench=a.bench)
            try:
                res = run(cmd, cfg, workdir=ddir, timeout=a.timeout, echo=True, cwd=REPO)
            except NvmevirtError as e:
                print(f"nvmevirt: {e}", file=sys.stderr)
                return 2
            log = "guest.log" if a.only is None else "guest-only.log"
            with open(os.path.join(ddir, log), "w") as f:
                f.write(res.output)
            print(f"[{device}] guest exit {res.returncode} after {res.boot_and_run_s:.0f} s", file=sys.stderr)
        compress_traces(ddir)
        rows = analyse(device, ddir, pub, ours)
        with open(os.path.join(out, f"nvmevirt_{device}.json"), "w") as f:
            json.dump({"device": device, "zone_size_mib": ZONE_MIB, "runtime_s": RUNTIME_S, "jobs": rows}, f, indent=1)
        md += [table(rows, device), ""]
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
