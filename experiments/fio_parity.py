"""Issue 12's guest measurement: fio against the store on one QEMU zoned namespace, one guest session.

Boots the Debian kernel under QEMU (TCG, ``emulator.zns_vm``) with the namespace shape of issue 12
(64 zones of 16 MiB, capacity 12 MiB, max open/active 14, 4 KiB blocks, zone append limit 512 KiB),
runs ``tests/qemu/guest_parity.py`` inside it (fio sequential 512 KiB writes with psync QD1 and
io_uring QD4 against ``SwapStore.swap_out`` of the same bytes; fio 4 KiB random reads with io_uring
QD32 and psync QD1 against ``swap_in`` of random pages in batches of 256; fio through
``io_uring_cmd``; the store with the ``uring`` and the ``sync`` engine), and writes
``OUT/runN/parity.json`` (the guest's record) and ``OUT/runN/README.md`` (the table) for each of
``--runs`` guest sessions (default 3), and ``OUT/README.md``: the ratios of every run side by side::

    .venv/bin/python experiments/fio_parity.py [--out experiments/results/fio_parity] [--runs 3]

``tests/qemu/test_fio_parity.py`` runs the same guest command (config and command come from here)
and checks what it recorded; it asserts no timing. The guest's times say nothing about flash; the
ratio store/fio says how much of the device the store's software path can use (goal: >= 0.8).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from emulator.zns_vm import MiB, ZnsVmConfig, missing, run_in_guest  # noqa: E402

GUEST_SCRIPT = os.path.join(REPO, "tests", "qemu", "guest_parity.py")
# The namespace of issue 12. The conventional namespace is unused here: kept small.
CONFIG = dict(zones=64, zone_size=16 * MiB, zone_capacity=12 * MiB, max_open=14, max_active=14,
              max_append=512 << 10, block_size=4096, conv_size=16 * MiB)
# 384 MiB fills 32 of the 64 zones (room for the store's open zones and GC headroom); 8192 random
# pages keep every read phase well under a minute under TCG (about 1,000 pages/s at worst).
WRITE_MIB = 384
READ_PAGES = 8192
GUEST_TIMEOUT = 15 * 60         # watchdog; the whole run is meant to take under ~8 minutes


def config() -> ZnsVmConfig:
    return ZnsVmConfig(**CONFIG)


def guest_command(out: str, write_mib: int = WRITE_MIB, read_pages: int = READ_PAGES, pairs: int | None = None) -> str:
    # the checkout is read-only in the guest: no bytecode, HOME and cwd in the results folder;
    # PYTHONPATH: this checkout's zswap_host (a worktree's), not whichever the interpreter installs
    return (f"cd {out} && PYTHONDONTWRITEBYTECODE=1 PYTHONPATH={REPO} HOME={out} {sys.executable} {GUEST_SCRIPT} --out {out} "
            f"--write-mib {write_mib} --read-pages {read_pages}" + ("" if pairs is None else f" --pairs {pairs}"))


def run(workdir: str, write_mib: int = WRITE_MIB, read_pages: int = READ_PAGES, echo: bool = False,
        pairs: int | None = None):
    """Boot, run the guest script, power off. Returns (GuestResult, parity dict or None). ``pairs``:
    interleaved fio / store pairs (None: the guest script's default)."""
    workdir = os.path.abspath(workdir)
    out = os.path.join(workdir, "results")
    os.makedirs(out, exist_ok=True)
    res = run_in_guest(guest_command(out, write_mib, read_pages, pairs), config(), workdir, timeout=GUEST_TIMEOUT,
                       cwd=REPO, echo=echo)
    with open(os.path.join(workdir, "guest.log"), "w") as f:
        f.write(res.output)
    for img in ("conv.img", "zns.img"):             # 1 GiB sparse images: nothing to keep
        try:
            os.remove(os.path.join(workdir, img))
        except FileNotFoundError:
            pass
    path = os.path.join(out, "parity.json")
    parity = None
    if os.path.exists(path):
        with open(path) as f:
            parity = json.load(f)
        parity["guest_boot_and_run_s"] = round(res.boot_and_run_s, 1)
    return res, parity


def _f(x, fmt="{:.1f}") -> str:
    return "—" if x is None else fmt.format(x)


def _engine(s: dict, eng: str) -> str:
    """The engine asked for, and the one the device reports when it differs (a fallback)."""
    got = s.get("io_engine") or "sync"
    return eng if got == eng else f"{eng} (got {got})"


def table(p: dict) -> str:
    """The side-by-side table (markdown): fio's jobs, then each store run with its ratios against
    fio as the issue asks it (io_uring; psync QD1) and against fio with batched submission."""
    fio, store, r = p["fio"], p["store"], p["ratios"]
    rows = ["| what | engine | bytes | seconds | MiB/s | IOPS | store/fio io_uring | store/fio psync | "
            "store/fio io_uring batched |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|"]

    def fio_row(label, key):
        x = fio.get(key, {})
        if not x:
            rows.append(f"| {label}: not run | fio | — | — | — | — | | | |")
            return
        if "error" in x:
            rows.append(f"| {label}: failed ({x['error'].splitlines()[-1][:80]}) | fio | — | — | — | — | | | |")
            return
        rows.append(f"| {label} | fio | {x['bytes']} | {_f(x['seconds'], '{:.2f}')} | {_f(x['mib_s'])} | "
                    f"{_f(x['iops'], '{:.0f}')} | | | |")

    def store_rows(phase, jobs):
        for eng, s in store.items():
            if phase not in s:
                why = (s.get("why") or s.get("error", "")).replace("|", "/")[:100]
                rows.append(f"| {phase}: {why} | store {eng} | — | — | — | — | | | |")
                continue
            x = s[phase]
            what = (f"swap_out ({x['batch_bytes'] >> 10} KiB calls) + flush" if phase == "swap_out"
                    else f"swap_in (batches of {x['batch_pages']})")
            iops = _f(x.get("iops"), "{:.0f}") if phase == "swap_in" else ""
            ratios = " | ".join(_f(r.get(f"{phase}_store_{eng}_vs_fio_{j}") if j else None, "{:.2f}") for j in jobs)
            label = _engine(s, eng.split("_")[0]) + (" (registered buffers)" if s.get("registered_buffers") else "")
            rows.append(f"| {what} | store {label} | {x['bytes']} | {x['seconds']:.2f} | "
                        f"{x['mib_s']:.1f} | {iops} | {ratios} |")

    fio_row("seq write 512 KiB, psync QD1", "write_psync_qd1")
    fio_row("seq write 512 KiB, io_uring QD4", "write_io_uring_qd4")
    fio_row("seq write 512 KiB, io_uring_cmd QD1 (/dev/ng0n2; not in the ratios)", "write_io_uring_cmd_qd1")
    store_rows("swap_out", ("io_uring_qd4", "psync_qd1", None))      # fio's batched zoned writes: EIO on 6.1
    fio_row("rand read 4 KiB, io_uring QD32", "randread_io_uring_qd32")
    fio_row("rand read 4 KiB, psync QD1", "randread_psync_qd1")
    fio_row("rand read 4 KiB, io_uring QD32, batched submission, fixed buffers", "randread_io_uring_qd32_batched")
    fio_row("rand read 4 KiB, io_uring QD32, lean: no zbd, gtod_reduce, zone 0 (not in the ratios)",
            "randread_io_uring_qd32_lean")
    store_rows("swap_in", ("io_uring_qd32", "psync_qd1", "io_uring_qd32_batched"))
    return "\n".join(rows)


def readme(p: dict, command: str) -> str:
    g, fio = p["geometry"], p["fio"]
    za = p.get("fio_zone_append", {})
    lines = [
        "# fio parity in the QEMU guest (issue 12)", "",
        f"Written by `{command}` (experiments/fio_parity.py); the guest's own record is `parity.json` beside this.",
        "",
        f"One guest session: kernel {p['kernel']}, {p['fio_version']}, scheduler `{p['scheduler']}`, "
        f"Python {p['python']}. Zoned namespace /dev/nvme0n2: {g['nr_zones']} zones of "
        f"{g['zone_size'] >> 20} MiB, capacity {g['zone_capacity'] >> 20} MiB, max open {g['max_open']}, max active "
        f"{g['max_active']}, {g['block_size']} B blocks, zone append limit {g['max_append'] >> 10} KiB. Every phase "
        f"starts from reset zones. Wall clock under QEMU TCG: the times say nothing about flash, the ratios say "
        f"how much of the device the store's software path uses (goal: >= 0.8). The store runs after an "
        f"unmeasured warm-up run (QEMU translates guest code on first use); runs on this 2-core host still "
        f"vary by about ±30% from one to the next, so read each ratio as a range, not a point.", "",
        table(p), "",
        "fio's seconds are its job runtime (I/O only, no start-up); the store's are the calls' wall time "
        "(swap_out: every call plus the final `flush()`). Random reads: fio over what its io_uring writes "
        "left; the store over random ids of its pages, each page read back compared with what was written "
        "(mismatches: " + ", ".join(f"{s['swap_in']['mismatches']} ({e})" for e, s in p["store"].items()
                                     if "swap_in" in s) + ").",
        "",
    ]
    cpu = [f"{k} {v['cpu_usr_pct'] + v['cpu_sys_pct']:.0f} %" for k, v in fio.items()
           if v.get("cpu_usr_pct") is not None]
    if cpu:
        lines += ["fio's own CPU (usr + sys, of one vCPU) per job: " + ", ".join(cpu) + ". Near 100 % fio's "
                  "software sets its pace under TCG, not the emulated device.", ""]
    pr = p.get("pairs")
    if pr:
        lines += ["Interleaved pairs (after the runs above, each side from reset zones: fio psync QD1 writes, then "
                  "the store's uring `swap_out` of the same bytes; every pair kept):", "",
                  "| pair | fio psync QD1, MiB/s | store uring, MiB/s | store/fio |", "|---:|---:|---:|---:|"]
        for k, (f, st, x) in enumerate(zip(pr["fio_psync_qd1"], pr["store_uring"], pr["ratio"])):
            lines.append(f"| {k + 1} | {_f(f, '{:.0f}')} | {_f(st, '{:.0f}')} | {_f(x, '{:.2f}')} |")
        lines += ["", f"Median store/fio over the pairs: {_f(pr.get('median'), '{:.2f}')}.", ""]
    for eng, s in p["store"].items():
        ex = s.get("express")
        if ex:
            lines += [f"Store `{eng}`: {ex['calls']} `swap_out` calls took the express path ({ex['split_at_zone_end']} of "
                      f"them split at a zone's end; device write in the same C call: {ex['in_one_c_call']}); "
                      f"declined by reason: `{json.dumps(ex['declined'])}`.", ""]
        if "error" in s:
            lines += [f"Store `{eng}` run failed: `{s['error']}`", ""]
        st = (s.get("after_swap_in") or s.get("after_swap_out") or {}).get("engine_stats")
        if st:
            lines += [f"Engine stats after the store's `{eng}` run: `{json.dumps(st)}`", ""]
    answer = " ".join(za.get("fio_answer_to_zone_append", []))
    lines += [f"fio zone append: {'not supported' if za.get('supported') is False else za.get('supported')} — "
              f"{za.get('why', '')}; fio's answer to `--zone_append=1`: `{answer}`.", "",
              f"Guest script {p['guest_script_s']:.0f} s; boot and run {p.get('guest_boot_and_run_s', 0):.0f} s.", ""]
    return "\n".join(lines)


RATIOS = (("swap_out", "store uring vs fio io_uring QD4", "swap_out_store_uring_vs_fio_io_uring_qd4"),
          ("swap_out", "store uring vs fio psync QD1", "swap_out_store_uring_vs_fio_psync_qd1"),
          ("swap_out", "store sync vs fio psync QD1", "swap_out_store_sync_vs_fio_psync_qd1"),
          ("swap_out", "store uring, 16 MiB calls, vs fio psync QD1", "swap_out_store_uring_16mib_vs_fio_psync_qd1"),
          ("swap_in", "store uring vs fio io_uring QD32", "swap_in_store_uring_vs_fio_io_uring_qd32"),
          ("swap_in", "store sync vs fio io_uring QD32", "swap_in_store_sync_vs_fio_io_uring_qd32"),
          ("swap_in", "store uring vs fio io_uring QD32, batched submission",
           "swap_in_store_uring_vs_fio_io_uring_qd32_batched"))


def summary(runs: list[dict], command: str) -> str:
    """The ratios of several runs side by side (each run one guest session), with their range."""
    rows = ["| phase | ratio | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " | range |",
            "|---|---|" + "---:|" * (len(runs) + 1)]
    for phase, label, key in RATIOS:
        vals = [p["ratios"].get(key) for p in runs]
        got = [v for v in vals if v is not None]
        rng = f"{min(got):.2f}–{max(got):.2f}" if got else "—"
        rows.append(f"| {phase} | {label} | " + " | ".join(_f(v, "{:.2f}") for v in vals) + f" | {rng} |")
    fio = " | ".join(_f(p["fio"]["write_psync_qd1"].get("mib_s"), "{:.0f}") for p in runs)
    store = " | ".join(_f(p["store"]["uring"]["swap_out"]["mib_s"], "{:.0f}") for p in runs)
    rows.append(f"| swap_out | fio psync QD1, MiB/s | {fio} | |")
    rows.append(f"| swap_out | store uring, MiB/s | {store} | |")
    if any(p.get("pairs") for p in runs):
        every = [x for p in runs for x in (p.get("pairs") or {}).get("ratio", []) if x is not None]
        med = [(p.get("pairs") or {}).get("median") for p in runs]
        rng = f"{min(every):.2f}–{max(every):.2f}" if every else "—"
        rows.append("| swap_out | interleaved pairs, store uring vs fio psync QD1: median of the run's pairs | "
                    + " | ".join(_f(m, "{:.2f}") for m in med) + f" | {rng} (every pair) |")
        rows.append("| swap_out | — each pair | " + " | ".join(
            ", ".join(_f(x, "{:.2f}") for x in (p.get("pairs") or {}).get("ratio", [])) or "—" for p in runs) + " | |")
        if every:
            rows.append(f"| swap_out | — median of all {len(every)} pairs |" + " |" * len(runs)
                        + f" {statistics.median(every):.2f} |")
    return "\n".join([
        "# fio parity in the QEMU guest (issue 12): several runs", "",
        f"Written by `{command}` (experiments/fio_parity.py). Each run is one guest session (boot, fio and the "
        "store one after the other on the same namespace); `runN/` holds its table (README.md) and the guest's "
        "record (parity.json). The ratios move from run to run with the host's state (the guest is TCG: fio's "
        "C and the store's Python are slowed differently), so they are given per run, with their range. The "
        "interleaved pairs come after a session's other phases: fio psync QD1 writes, then the store's uring "
        "`swap_out` (2 MiB calls + `flush()`) of the same bytes, each from reset zones, five times: the two "
        "sides of a pair run seconds apart, so a change of the host's state between fio's phase and the "
        "store's shows in one pair, not in the whole comparison; every pair is kept.", "",
        *rows, ""])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "experiments", "results", "fio_parity"))
    ap.add_argument("--workdir", default=None, help="guest images and raw results [default: a temp folder]")
    ap.add_argument("--write-mib", type=int, default=WRITE_MIB)
    ap.add_argument("--read-pages", type=int, default=READ_PAGES)
    ap.add_argument("--runs", type=int, default=3, help="guest sessions, one after the other (OUT/runN/)")
    a = ap.parse_args(argv)
    gone = missing()
    if gone:
        raise SystemExit("cannot boot the guest, missing: " + "; ".join(gone))
    if a.runs < 1:
        raise SystemExit("--runs must be at least 1")
    import tempfile
    cmd = ".venv/bin/python experiments/fio_parity.py"
    if (a.write_mib, a.read_pages, a.runs) != (WRITE_MIB, READ_PAGES, 3):
        cmd += f" --write-mib {a.write_mib} --read-pages {a.read_pages} --runs {a.runs}"
    done = []
    for i in range(1, a.runs + 1):
        work = a.workdir or tempfile.mkdtemp(prefix="fio-parity-")
        t0 = time.monotonic()
        res, parity = run(work, a.write_mib, a.read_pages, echo=True)
        print(f"[fio_parity] run {i}: guest exit {res.returncode} after {time.monotonic() - t0:.0f} s "
              f"(log: {work}/guest.log)")
        if parity is None:
            print(res.output[-3000:], file=sys.stderr)
            return 1
        out = os.path.join(a.out, f"run{i}")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "parity.json"), "w") as f:
            json.dump(parity, f, indent=1)
        with open(os.path.join(out, "README.md"), "w") as f:
            f.write(readme(parity, f"{cmd} (run {i})"))
        print(table(parity))
        done.append(parity)
        if res.returncode:
            return 1
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write(summary(done, cmd))
    print(summary(done, cmd))
    return 0


if __name__ == "__main__":
    sys.exit(main())
