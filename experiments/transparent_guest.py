"""Issue 15 in the guest: the transparent DLRM through the pager on the real zoned namespace, next to the
real kernel's swap under a cgroup ``memory.max`` of the same budget, one guest session.

Boots the Debian 6.1 kernel under QEMU (TCG, ``emulator.zns_vm``) with a 1 GiB conventional namespace
(the kernel's swap area) and a zoned one (64 zones of 16 MiB, capacity 12 MiB, limits 14/14, the
store's), and runs ``tests/qemu/guest_transparent.py`` inside it: the plain-``nn.EmbeddingBag`` DLRM
of the ``quick`` preset (103 MiB of tables, the bench's 25% budget) four times — in DRAM, under the
kernel's swap, through ``Pager`` over the store, in DRAM again (the host's load may change during a
session: the second DRAM run shows by how much) — same seed, same batches. Writes ``OUT/RUN.json``
(the guest's records) and ``OUT/README.md`` (the table)::

    .venv/bin/python experiments/transparent_guest.py [--out experiments/results/transparent_guest]
        [--preset quick --iterations 150 --warm 10]

What is compared, after the warm-up steps: the step times (wall clock in the guest, TCG: they say
nothing about flash or a real CPU, only how the two swap paths compare on the same emulated machine;
stall = a run's step time minus the DRAM run's), the pages moved, and the requests each path sent to
its namespace (the kernel's from the block layer's counters of the swap namespace, the store's from
its device counters). Correctness: losses and final tables equal to the DRAM run bit for bit, and
every page the store returned checked against its fingerprint (``VerifyingBackend``).
``tests/qemu/test_transparent_guest.py`` runs the same guest command, smaller, and checks what it
recorded, with no timing thresholds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from emulator.zns_vm import MiB, ZnsVmConfig, missing, run_in_guest  # noqa: E402

GUEST_SCRIPT = os.path.join(REPO, "tests", "qemu", "guest_transparent.py")
CONFIG = dict(zones=64, zone_size=16 * MiB, zone_capacity=12 * MiB, max_open=14, max_active=14,
              max_append=512 << 10, block_size=4096, conv_size=1 << 30, memory="2G")
PRESET, ITERATIONS, WARM = "quick", 150, 10
GUEST_TIMEOUT = 60 * 60
RUNS = ("dram", "kernel", "pager", "dram-after")
LABEL = {"dram": "DRAM (no limit)", "kernel": "kernel 6.1 swap, memory.max",
         "pager": "pager -> store on ZNS", "dram-after": "DRAM again, last (load check)"}


def config() -> ZnsVmConfig:
    return ZnsVmConfig(**CONFIG)


def guest_command(out: str, iterations: int = ITERATIONS, warm: int = WARM, preset: str = PRESET) -> str:
    # the checkout is read-only in the guest: no bytecode, HOME in the results folder
    return (f"cd {out} && PYTHONDONTWRITEBYTECODE=1 PYTHONPATH={REPO} HOME={out} {sys.executable} {GUEST_SCRIPT} "
            f"--out {out} --preset {preset} --iterations {iterations} --warm {warm}")


def run(workdir: str, iterations: int = ITERATIONS, warm: int = WARM, preset: str = PRESET, echo: bool = False):
    """Boot, run the four trainings, power off. Returns (GuestResult, {run: record}); a run that
    wrote no record is missing from the dict."""
    workdir = os.path.abspath(workdir)
    out = os.path.join(workdir, "results")
    os.makedirs(out, exist_ok=True)
    res = run_in_guest(guest_command(out, iterations, warm, preset), config(), workdir, timeout=GUEST_TIMEOUT, cwd=REPO,
                       echo=echo)
    with open(os.path.join(workdir, "guest.log"), "w") as f:
        f.write(res.output)
    for img in ("conv.img", "zns.img"):
        try:
            os.unlink(os.path.join(workdir, img))
        except FileNotFoundError:
            pass
    recs = {}
    for r in RUNS:
        p = os.path.join(out, f"{r}.json")
        if os.path.exists(p):
            with open(p) as f:
                recs[r] = json.load(f)
    return res, recs


def hist_delta(end: dict, start: dict) -> dict[int, int]:
    h = {int(k): v - start.get(k, 0) for k, v in end.items()}
    return {k: v for k, v in h.items() if v}


def requests(hist: dict[int, int]) -> tuple[int, float, float]:
    """(count, mean KiB, share under 32 KiB) of a request-size histogram."""
    n = sum(hist.values())
    if not n:
        return 0, 0.0, 0.0
    return n, sum(k * v for k, v in hist.items()) / n / 1024, sum(v for k, v in hist.items() if k < 32 << 10) / n


def summarize(recs: dict) -> dict:
    """Per run, after the warm-up: step times, stall against DRAM, pages and requests moved, checks."""
    ref = recs.get("dram")
    rows = {}
    for name, r in recs.items():
        w = r["warm"]
        wall = np.asarray(r["step_wall_s"])[w:]
        a, b = r["marks"]["warm"], r["marks"]["end"]
        row = {"steps": int(wall.size), "step_s_total": float(wall.sum()),
               "step_ms_p50": float(np.percentile(wall, 50) * 1e3), "step_ms_p99": float(np.percentile(wall, 99) * 1e3),
               "peak_rss_mib": r["peak_rss_kib"] / 1024, "build_s": r["build_s"]}
        res = np.asarray(r.get("table_resident_pages") or [0] * len(r["step_wall_s"]))[w:] * 4096 / MiB
        row["table_resident_mib_mean"], row["table_resident_mib_max"] = float(res.mean()), float(res.max())
        if ref is not None:
            row["stall_s"] = row["step_s_total"] - float(np.asarray(ref["step_wall_s"])[w:].sum())
            row["losses_equal_dram"] = r["loss"] == ref["loss"]
            row["tables_equal_dram"] = r["tables_sha256"] == ref["tables_sha256"]
        if name == "kernel":
            bs, be, vs, ve = a["blk_swap"], b["blk_swap"], a["vmstat"], b["vmstat"]
            wq, rq = be["writes"] - bs["writes"], be["reads"] - bs["reads"]
            row.update(pages_out=ve["pswpout"] - vs["pswpout"], pages_in=ve["pswpin"] - vs["pswpin"],
                       write_requests=wq, write_kib_mean=(be["write_sectors"] - bs["write_sectors"]) / 2 / max(wq, 1),
                       read_requests=rq, read_kib_mean=(be["read_sectors"] - bs["read_sectors"]) / 2 / max(rq, 1),
                       limit=r.get("limit"), memory_events=r.get("memory_events"))
        if name == "pager":
            ba, bb, pa, pb = a["backend"], b["backend"], a["pager"], b["pager"]
            wq, wk, ws = requests(hist_delta(bb["write_size_histogram"], ba["write_size_histogram"]))
            rq, rk, rs = requests(hist_delta(bb["read_size_histogram"], ba["read_size_histogram"]))
            row.update(pages_out=pb["pages_out"] - pa["pages_out"], pages_in=pb["pages_in"] - pa["pages_in"],
                       write_requests=wq, write_kib_mean=wk, write_under_32k=ws,
                       read_requests=rq, read_kib_mean=rk, read_under_32k=rs,
                       gc_write_mib=(bb["gc_write_bytes"] - ba["gc_write_bytes"]) / MiB,
                       faults=(pb["faults_missing"] + pb["faults_wp"]) - (pa["faults_missing"] + pa["faults_wp"]),
                       pages_checked=b["pages_checked"], pages_checked_in_training=b["pages_checked"] - a["pages_checked"],
                       engine=r.get("engine"), pager_errors=r.get("pager_errors"))
        rows[name] = row
    return rows


def _f(x, fmt="{:,.1f}") -> str:
    return "—" if x is None else fmt.format(x)


def table(rows: dict) -> str:
    names = [n for n in RUNS if n in rows]
    lines = ["| | " + " | ".join(LABEL[n] for n in names) + " |", "|---|" + "---|" * len(names)]

    def row(label, fn):
        lines.append(f"| {label} | " + " | ".join(fn(rows[n]) for n in names) + " |")

    row("steps timed (after the warm-up)", lambda r: str(r["steps"]))
    row("step time total, s (wall, TCG)", lambda r: _f(r["step_s_total"]))
    row("step p50 / p99, ms", lambda r: f"{r['step_ms_p50']:,.0f} / {r['step_ms_p99']:,.0f}")
    row("stall vs DRAM, s", lambda r: _f(r.get("stall_s")))
    row("losses = DRAM bit for bit", lambda r: str(r.get("losses_equal_dram", "—")))
    row("final tables = DRAM bit for bit", lambda r: str(r.get("tables_equal_dram", "—")))
    row("tables resident after a step, MiB mean / max", lambda r: f"{r['table_resident_mib_mean']:.1f} / "
        f"{r['table_resident_mib_max']:.1f}")
    row("pages out / in", lambda r: f"{r['pages_out']:,} / {r['pages_in']:,}" if "pages_out" in r else "—")
    row("write requests, mean KiB", lambda r: f"{r['write_requests']:,}, {r['write_kib_mean']:.1f}"
        if "write_requests" in r else "—")
    row("read requests, mean KiB", lambda r: f"{r['read_requests']:,}, {r['read_kib_mean']:.1f}"
        if "read_requests" in r else "—")
    row("pages verified (fingerprint)", lambda r: f"{r['pages_checked']:,}" if "pages_checked" in r else "—")
    row("peak RSS of the job, MiB", lambda r: _f(r["peak_rss_mib"]))
    return "\n".join(lines)


def readme(rows: dict, recs: dict, command: str, wall_s: float) -> str:
    r0 = next(iter(recs.values()))
    k, p = rows.get("kernel", {}), rows.get("pager", {})
    out = [f"# Transparent DLRM in the 6.1 guest: the pager on ZNS vs the kernel's swap (issue 15)\n",
           f"`{command}` ({wall_s:.0f} s with the boot). Preset `{r0['preset']}`: {r0['iterations']} iterations of "
           f"{r0['batch']}, {r0['table_bytes'] / MiB:.1f} MiB of tables, budget {r0['budget_bytes'] / MiB:.1f} MiB; "
           f"figures over the steps after the first {r0['warm']}. Definitions: the script's docstring.\n",
           table(rows), ""]
    if k.get("limit"):
        lim = k["limit"]
        out.append(f"Kernel run: `memory.max` = {lim['memory_max'] / MiB:.1f} MiB = non-table "
                   f"{lim['nontable_bytes'] / MiB:.1f} MiB + the budget; memory.events at the end: "
                   f"`{' '.join((k.get('memory_events') or '').split())}`.")
    if p:
        out.append(f"Pager run: the store's engine {p.get('engine')}; {p['faults']:,} faults (missing + "
                   f"write-protect); store GC wrote {p['gc_write_mib']:.1f} MiB; write requests under 32 KiB "
                   f"{p['write_under_32k']:.0%}, read {p['read_under_32k']:.0%}; pager errors: {p['pager_errors'] or 'none'}.")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "experiments", "results", "transparent_guest"))
    ap.add_argument("--workdir", default=None, help="guest images and raw results [default: a temp folder]")
    ap.add_argument("--preset", default=PRESET, help="training preset (zswap-host bench --preset) [default: %(default)s]")
    ap.add_argument("--iterations", type=int, default=ITERATIONS)
    ap.add_argument("--warm", type=int, default=WARM)
    a = ap.parse_args(argv)
    from zswap_host.workloads import PRESETS

    if a.preset not in PRESETS:
        print(f"error: unknown preset {a.preset!r}; known: {', '.join(PRESETS)}", file=sys.stderr)
        return 2
    gone = missing()
    if gone:
        print("cannot boot the guest, missing: " + "; ".join(gone), file=sys.stderr)
        return 2
    if not 2 < a.warm < a.iterations:
        print("error: need 2 < --warm < --iterations", file=sys.stderr)
        return 2
    cmd = ".venv/bin/python experiments/transparent_guest.py"
    if (a.preset, a.iterations, a.warm) != (PRESET, ITERATIONS, WARM):
        cmd += f" --preset {a.preset} --iterations {a.iterations} --warm {a.warm}"
    work = a.workdir or tempfile.mkdtemp(prefix="transparent-guest-")
    t0 = time.monotonic()
    res, recs = run(work, a.iterations, a.warm, a.preset, echo=True)
    wall = time.monotonic() - t0
    if res.returncode or set(recs) != set(RUNS):
        print(f"guest failed (exit {res.returncode}, records {sorted(recs)}); log: {work}/guest.log", file=sys.stderr)
        return 1
    rows = summarize(recs)
    os.makedirs(a.out, exist_ok=True)
    for name, r in recs.items():
        with open(os.path.join(a.out, f"{name}.json"), "w") as f:
            json.dump(r, f)
    commit = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump({"command": cmd, "commit": commit, "guest_boot_and_run_s": wall, "rows": rows}, f, indent=1)
    with open(os.path.join(a.out, "README.md"), "w") as f:
        f.write(readme(rows, recs, cmd, wall) + f"\nRun at commit {commit}.\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
