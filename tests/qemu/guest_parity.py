"""GUEST side of issue 12's fio parity measurement: fio and the store, one after the other, on the
same zoned namespace in the same guest session, wall clock. Run inside the QEMU guest with the venv's
Python (the checkout is read-only there; everything goes to --out):

    python tests/qemu/guest_parity.py --out RESULTS [--write-mib 384] [--read-pages 8192]

Phases (every one starts from a namespace whose zones were all reset):

- sequential writes of the same bytes: fio ``--zonemode=zbd --rw=write --bs=512k --direct=1`` with
  psync (QD1) and io_uring (QD4), against ``SwapStore.swap_out`` in large batches + ``flush()``;
- 4 KiB random reads of the same number of pages: fio randread (io_uring QD32 and psync QD1) over
  what fio wrote, against ``swap_in`` of random stored page ids in batches of 256, every page
  checked against what was swapped out (after the clock stops);
- fio through ``io_uring_cmd`` on the generic char device, and whether this fio can zone-append;
- each store measurement with the device's ``io_engine="uring"`` and ``"sync"``, once more on uring
  with registered buffers, and once more on uring with larger swap_out calls (the store's per-call
  host cost against the batch size);
- interleaved pairs (``--pairs``, after the runs above): fio psync QD1 writes, then the store's uring
  ``swap_out`` of the same bytes, again and again, each from reset zones: the same comparison as
  above with the two sides minutes apart no more, so each pair's ratio sees one state of the host
  (every pair is kept; the median and the range are reported beside the per-pair ratios);
- fio's random reads also with batched submission and registered buffers (``--iodepth_batch_submit``,
  ``--fixedbufs``): fio as the issue asks enters the kernel once per request, the store once per
  batch, and under TCG a syscall is dear. (fio's zoned writes at QD4 with batched submission failed
  with EIO on 6.1: not measured.)

Writes ``parity.json`` (and each fio run's JSON) into --out and prints ``PARITY DONE rc=N``.
The guest is TCG-slow: its times say nothing about flash, only the ratios mean something.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
import traceback

import numpy as np

from zswap_host.devices.sysfs import read_sysfs

DEV = "/dev/nvme0n2"
CHAR = "/dev/ng0n2"            # the namespace's NVMe generic char device (io_uring passthrough)
PAGE = 4096
MiB = 1 << 20


# -- fio -------------------------------------------------------------------------------------------
def fio_version() -> str:
    return subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()


def run_fio(out: str, name: str, args: list[str]) -> dict:
    """One fio job; its JSON kept beside parity.json. Seconds are fio's own job runtime (what it
    spent doing I/O, without its start-up), wall_s the whole process."""
    path = os.path.join(out, f"fio_{name}.json")
    argv = ["fio", f"--name={name}", "--output-format=json", f"--output={path}"] + args
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    rec = {"argv": " ".join(argv[1:]), "rc": p.returncode, "wall_s": round(wall, 3)}
    try:
        with open(path) as f:
            job = json.load(f)["jobs"][0]
    except (OSError, ValueError, KeyError, IndexError):
        job = None
    if p.returncode or job is None or job.get("error"):
        rec["error"] = (p.stderr.strip() or p.stdout.strip())[-2000:] or f"fio job error {job and job.get('error')}"
        return rec
    ddir = "write" if job["write"]["io_bytes"] else "read"
    d = job[ddir]
    secs = d["runtime"] / 1000.0           # ms
    rec.update(bytes=int(d["io_bytes"]), ios=int(d["total_ios"]), seconds=secs,
               mib_s=d["io_bytes"] / MiB / secs if secs else None, iops=d["total_ios"] / secs if secs else None,
               fio_iops=d["iops"], lat_mean_us=d["lat_ns"]["mean"] / 1000.0,
               # fio's own CPU share: near 100 % means fio, not the device, sets its pace under TCG
               cpu_usr_pct=job.get("usr_cpu"), cpu_sys_pct=job.get("sys_cpu"))
    return rec


def fio_zone_append_probe(out: str) -> dict:
    """Does this fio issue NVMe Zone Append? It has no option for it: look for one in its option and
    io_uring_cmd engine help, then ask for one and keep fio's answer."""
    helps = subprocess.run(["fio", "--cmdhelp=all"], capture_output=True, text=True).stdout
    eng = subprocess.run(["fio", "--enghelp=io_uring_cmd"], capture_output=True, text=True).stdout
    options = sorted({ln.split(":")[0].strip() for ln in (helps + eng).splitlines()
                      if "append" in ln.lower() and ":" in ln})
    p = subprocess.run(["fio", "--name=probe", f"--filename={CHAR}", "--ioengine=io_uring_cmd", "--cmd_type=nvme",
                        "--zonemode=zbd", "--rw=write", "--bs=512k", "--size=1M", "--zone_append=1"],
                       capture_output=True, text=True)
    answer = list(dict.fromkeys((p.stderr.strip() or p.stdout.strip()).splitlines()))[:2]
    return {"supported": False if not any("zone" in o for o in options) else None,
            "max_segments": read_sysfs("/sys/block/nvme0n2/queue/max_segments"),
            "options_mentioning_append": options,
            "fio_answer_to_zone_append": answer,
            "why": "fio's io_uring_cmd engine (cmd_type=nvme) issues only NVMe Read and Write commands and "
                   f"no fio option asks for Zone Append (options mentioning append: {', '.join(options) or 'none'}); "
                   "with --zonemode=zbd it writes at the write pointer"}


# -- the store -------------------------------------------------------------------------------------
def open_zoned(engine: str | None, force: bool = False):
    """The namespace as a LinuxZonedDevice on I/O engine ``engine`` (None: the default)."""
    from zswap_host import open_device

    return open_device(DEV, zoned=True, force=force, io_engine=engine)


def reset_all() -> float:
    """Every zone empty before a phase. Forced: what fio left may look like anything to the
    signature probe, and this namespace is scratch."""
    t0 = time.perf_counter()
    dev = open_zoned(None, force=True)
    try:
        dev.reset_all()
        assert all(z.wp == z.start for z in dev.report_zones())
    finally:
        dev.close()
    return time.perf_counter() - t0


def make_pages(n: int) -> np.ndarray:
    """Page i: 512 words (i << 20) + k, so every page is distinct and any mix-up shows."""
    w = (np.arange(n, dtype=np.uint64)[:, None] << np.uint64(20)) + np.arange(PAGE // 8, dtype=np.uint64)
    return w.view(np.uint8).reshape(n, PAGE)


def engine_info(dev) -> dict:
    return {"io_engine": dev.io_engine, "io_depth": dev.io_depth, "zone_append": dev.append_path,
            "engine_stats": dev.engine_stats()}


def run_store(engine: str | None, pages: np.ndarray, batch_pages: int, read_ids: np.ndarray | None,
              registered: bool = False) -> dict:
    from zswap_host import StoreConfig, SwapStore

    n = pages.shape[0]
    dev = open_zoned(engine)
    dev.registered_buffers = registered
    rec = {"engine_asked": engine, "registered_buffers": dev.registered_buffers}
    rec.update(engine_info(dev))
    store = SwapStore(dev, StoreConfig(placement="temporal", victim="greedy"))
    try:
        ids = np.arange(n, dtype=np.int64)
        base = dev.stats()
        t0 = time.perf_counter()
        for i in range(0, n, batch_pages):
            store.swap_out(ids[i:i + batch_pages], pages[i:i + batch_pages])
        store.flush()                               # the time includes getting the last bytes down
        t_out = time.perf_counter() - t0
        mid = dev.stats()
        rec["swap_out"] = {"bytes": n * PAGE, "pages": n, "batch_bytes": batch_pages * PAGE, "seconds": t_out,
                           "mib_s": n * PAGE / MiB / t_out,
                           "device_write_bytes": mid.device_write_bytes - base.device_write_bytes,
                           "write_size_histogram": {str(k): v for k, v in sorted(mid.write_size_histogram.items())}}
        rec["after_swap_out"] = engine_info(dev)
        ex = store._express
        if ex is not None:
            rec["express"] = {"calls": ex.taken, "split_at_zone_end": ex.split, "in_one_c_call": ex.in_one_call,
                              "declined": {str(k): v for k, v in ex.declined.items()}}
        if read_ids is None:                        # an interleaved pair: the writes only
            store.check()
            return rec
        got = []
        t0 = time.perf_counter()
        for i in range(0, read_ids.size, 256):     # a step's faults: batches of 256 random pages
            got.append(store.swap_in(read_ids[i:i + 256]))
        t_in = time.perf_counter() - t0
        end = dev.stats()
        back = np.concatenate(got)
        mismatches = int(np.count_nonzero((back != pages[read_ids]).any(axis=1)))
        rec["swap_in"] = {"pages": int(read_ids.size), "bytes": int(read_ids.size) * PAGE, "batch_pages": 256,
                          "seconds": t_in, "iops": read_ids.size / t_in, "mib_s": read_ids.size * PAGE / MiB / t_in,
                          "device_read_bytes": end.device_read_bytes - mid.device_read_bytes,
                          "pages_checked": int(back.shape[0]), "mismatches": mismatches}
        rec["after_swap_in"] = engine_info(dev)
        store.check()
        rec["store_stats"] = store.stats().as_dict()
    finally:
        store.close()
        dev.close()
    return rec


# -- the run ---------------------------------------------------------------------------------------
def ratio(a, b):
    return a / b if a and b else None


def ratios(res: dict) -> dict:
    """store/fio: MiB/s for the writes, IOPS for the reads (None where a side is missing)."""
    pairs = {"swap_out": (("mib_s", "write_io_uring_qd4", "fio_io_uring_qd4"),
                          ("mib_s", "write_psync_qd1", "fio_psync_qd1")),
             "swap_in": (("iops", "randread_io_uring_qd32", "fio_io_uring_qd32"),
                         ("iops", "randread_psync_qd1", "fio_psync_qd1"),
                         ("iops", "randread_io_uring_qd32_batched", "fio_io_uring_qd32_batched"))}
    out = {}
    for eng in res["store"]:
        s = res["store"].get(eng) or {}
        for phase, against in pairs.items():
            for key, job, label in against:
                out[f"{phase}_store_{eng}_vs_{label}"] = ratio((s.get(phase) or {}).get(key), res["fio"][job].get(key))
    return out


def geometry() -> dict:
    dev = open_zoned(None, force=True)
    try:
        g = dev.geometry.as_dict()
        g["zone_append_path"] = dev.describe().get("zone_append")
    finally:
        dev.close()
    return g


def set_scheduler() -> str:
    # zoned writes need in-order dispatch; on 6.1 mq-deadline gives zone write locking (fio's QD4 writes)
    path = "/sys/block/nvme0n2/queue/scheduler"
    try:
        with open(path, "w") as f:
            f.write("mq-deadline")
    except OSError as e:
        print(f"PARITY scheduler: {e}", flush=True)
    with open(path) as f:
        return f.read().strip()


def set_hugepages(n: int) -> int:
    try:
        with open("/proc/sys/vm/nr_hugepages", "w") as f:
            f.write(str(n))
        with open("/proc/sys/vm/nr_hugepages") as f:
            return int(f.read())
    except OSError as e:
        print(f"PARITY hugepages: {e}", flush=True)
        return 0


def reordered_write(error: str, zone_size: int) -> bool:
    """Whether fio's error is only EIO on writes inside a zone (not at its start): what a write that
    overtook the one before it in the same zone gets from a zoned namespace."""
    offs = [int(m) for m in re.findall(r"Input/output error: write offset=(\d+)", error)]
    lines = [ln for ln in error.splitlines() if ln.strip()]
    return bool(offs) and len(offs) == len(lines) and all(o % zone_size for o in offs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--write-mib", type=int, default=384, help="bytes of the write phases, in MiB")
    ap.add_argument("--read-pages", type=int, default=8192, help="4 KiB random reads per read phase")
    ap.add_argument("--batch-kib", type=int, default=2048, help="bytes per swap_out call, in KiB")
    ap.add_argument("--big-batch-kib", type=int, default=16384,
                    help="one more uring store run with swap_out calls this large (0: none)")
    ap.add_argument("--pairs", type=int, default=5,
                    help="interleaved fio psync / store uring swap_out pairs after the other phases (0: none)")
    ap.add_argument("--seed", type=int, default=12)
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    t_start = time.perf_counter()
    res = {"fio_version": fio_version(), "kernel": platform.release(), "scheduler": set_scheduler(),
           "python": sys.version.split()[0], "write_bytes": a.write_mib * MiB, "read_pages": a.read_pages,
           "swap_out_batch_bytes": a.batch_kib << 10, "swap_in_batch_pages": 256, "phases_s": {}}
    import zswap_host
    res["zswap_host"] = os.path.dirname(os.path.abspath(zswap_host.__file__))
    print(f"PARITY zswap_host from {res['zswap_host']}", flush=True)
    res["geometry"] = g = geometry()
    print(f"PARITY {res['fio_version']} kernel {res['kernel']} scheduler {res['scheduler']} geometry {g}", flush=True)
    nbytes = a.write_mib * MiB
    # the LBA span fio's sequential writes cover (zones filled to capacity): its reads stay inside
    span = -(-nbytes // g["zone_capacity"]) * g["zone_size"]
    seq = [f"--filename={DEV}", "--zonemode=zbd", "--rw=write", "--bs=512k", "--direct=1", f"--io_size={nbytes}"]
    rnd = [f"--filename={DEV}", "--zonemode=zbd", "--rw=randread", "--bs=4k", "--direct=1", f"--size={span}",
           f"--io_size={a.read_pages * PAGE}", f"--randseed={a.seed}"]
    fio = res["fio"] = {}

    def phase(name, fn, *args):
        t0 = time.perf_counter()
        try:
            r = fn(*args)
        except Exception as e:                   # a failed phase is recorded, the others still run
            r = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}
        res["phases_s"][name] = round(time.perf_counter() - t0, 3)
        print(f"PARITY phase {name} {res['phases_s'][name]:.1f} s: "
              f"{ {k: v for k, v in r.items() if k in ('mib_s', 'iops', 'error', 'bytes')} }", flush=True)
        return r

    def fio_write(name, job, args, attempts=3):
        # fio's zoned io_uring writes at QD4 fail with EIO now and then on 6.1, sometimes on every
        # attempt of a boot (a write reordered past mq-deadline's zone lock reaches the zone ahead
        # of the one before it): retried from reset zones, every failure kept in the record
        errors = []
        for k in range(attempts):
            reset_all()
            r = phase(name if k == 0 else f"{name}_retry{k}", run_fio, a.out, job, args)
            if "error" not in r:
                break
            errors.append(r["error"])
        if errors:
            r["attempt_errors"] = errors
            r["zone_write_reordered"] = all(reordered_write(e, g["zone_size"]) for e in errors)
        return r

    fio["write_psync_qd1"] = fio_write("fio_write_psync", "write_psync_qd1", seq + ["--ioengine=psync"])
    fio["write_io_uring_qd4"] = fio_write("fio_write_uring", "write_io_uring_qd4",
                                          seq + ["--ioengine=io_uring", "--iodepth=4"])
    # reads over what the io_uring writes just left
    fio["randread_io_uring_qd32"] = phase("fio_randread_uring", run_fio, a.out, "randread_io_uring_qd32",
                                          rnd + ["--ioengine=io_uring", "--iodepth=32"])
    # beside it, not in the ratios: the same reads without fio's zone bookkeeping and per-I/O clock
    # reads (zone 0's written 12 MiB, repeats allowed), to show how much of fio's pace is fio
    fio["randread_io_uring_qd32_lean"] = phase(
        "fio_randread_uring_lean", run_fio, a.out, "randread_io_uring_qd32_lean",
        [f"--filename={DEV}", "--rw=randread", "--bs=4k", "--direct=1", f"--size={g['zone_capacity']}",
         f"--io_size={a.read_pages * PAGE}", "--norandommap", "--gtod_reduce=1", f"--randseed={a.seed}",
         "--ioengine=io_uring", "--iodepth=32"])
    # fio as the issue asks submits one request per io_uring_enter; under TCG every syscall is dear,
    # and the store submits a whole batch per call. The same jobs with batched submission and
    # registered buffers/files take that advantage away (ratios against both are reported)
    batched = ["--iodepth_batch_submit=32", "--iodepth_batch_complete_max=32", "--fixedbufs=1",
               "--registerfiles=1"]
    fio["randread_io_uring_qd32_batched"] = phase("fio_randread_uring_batched", run_fio, a.out,
                                                  "randread_io_uring_qd32_batched",
                                                  rnd + ["--ioengine=io_uring", "--iodepth=32"] + batched)
    fio["randread_psync_qd1"] = phase("fio_randread_psync", run_fio, a.out, "randread_psync_qd1",
                                      rnd + ["--ioengine=psync"])
    reset_all()
    # passthrough: fio writes (not appends) through io_uring_cmd; QD1 because nothing orders
    # passthrough writes to one zone (no mq-deadline zone lock on the char device). Its buffers on a
    # huge page: a passthrough command cannot be split, and 512 KiB of scattered 4 KiB pages is 128
    # segments, over the NVMe driver's 127 (queue/max_segments): EINVAL, depending on where malloc's
    # pages happen to land.
    res["hugepages"] = set_hugepages(4)
    fio["write_io_uring_cmd_qd1"] = phase(
        "fio_write_uring_cmd", run_fio, a.out, "write_io_uring_cmd_qd1",
        [f"--filename={CHAR}", "--ioengine=io_uring_cmd", "--cmd_type=nvme", "--zonemode=zbd", "--rw=write",
         "--bs=512k", "--iodepth=1", f"--io_size={nbytes}", "--iomem=mmaphuge"])
    res["fio_zone_append"] = phase("fio_zone_append_probe", fio_zone_append_probe, a.out)

    pages = make_pages(nbytes // PAGE)
    read_ids = np.random.default_rng(a.seed).choice(pages.shape[0], a.read_pages, replace=False).astype(np.int64)
    batch = (a.batch_kib << 10) // PAGE
    # warm-up, not measured: QEMU translates guest code on first use, so the first store run would
    # also pay for translating the store's Python and numpy paths (fio's binary warmed up in its own runs)
    reset_all()
    res["warm_up"] = phase("store_warm_up", run_store, "uring", pages[:8192], batch, read_ids[read_ids < 8192][:512])
    store = res["store"] = {}
    for eng in ("uring", "sync"):
        reset_all()
        store[eng] = phase(f"store_{eng}", run_store, eng, pages, batch, read_ids)
    # registered buffers (READ_FIXED / WRITE_FIXED, the batch's buffer registered per batch) beside
    reset_all()
    store["uring_registered"] = phase("store_uring_registered", run_store, "uring", pages, batch, read_ids, True)
    if a.big_batch_kib:
        # the store's per-call host cost (Python under TCG) against the batch size: larger swap_out calls
        reset_all()
        big = f"uring_{a.big_batch_kib // 1024}mib"
        store[big] = phase(f"store_{big}", run_store, "uring", pages, (a.big_batch_kib << 10) // PAGE, read_ids)
    if a.pairs:
        res["pairs"] = pairs = {"fio_psync_qd1": [], "store_uring": [], "ratio": []}
        for k in range(a.pairs):
            f = fio_write(f"pair{k}_fio_write_psync", f"pair{k}_write_psync_qd1", seq + ["--ioengine=psync"])
            reset_all()
            st = phase(f"pair{k}_store_uring", run_store, "uring", pages, batch, None)
            pairs["fio_psync_qd1"].append(f.get("mib_s"))
            pairs["store_uring"].append((st.get("swap_out") or {}).get("mib_s"))
            pairs["ratio"].append(ratio(pairs["store_uring"][-1], f.get("mib_s")))
            if "error" in f or "error" in st:
                pairs.setdefault("errors", []).append({"pair": k, "fio": f.get("error"), "store": st.get("error")})
        got = [x for x in pairs["ratio"] if x is not None]
        pairs["median"] = float(np.median(got)) if got else None
    res["ratios"] = ratios(res)
    res["guest_script_s"] = round(time.perf_counter() - t_start, 1)
    with open(os.path.join(a.out, "parity.json"), "w") as f:
        json.dump(res, f, indent=1, default=str)
    print("PARITY ratios " + json.dumps(res["ratios"]), flush=True)
    # fio's own io_uring zoned write may be unavailable in a boot (the kernel reordered its writes):
    # a missing reference, recorded, not a failure of the store or of the guest
    bad = [k for k, v in list(fio.items()) + list(store.items()) if "error" in v and k != "write_io_uring_cmd_qd1"
           and not (k == "write_io_uring_qd4" and v.get("zone_write_reordered"))]
    bad += ["pairs"] if res.get("pairs", {}).get("errors") else []
    return 1 if bad else 0


if __name__ == "__main__":
    try:
        rc = main()
    except Exception:
        traceback.print_exc()
        rc = 2
    print(f"PARITY DONE rc={rc}", flush=True)
    sys.exit(rc)
