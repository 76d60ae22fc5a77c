"""Where the conventional FTL's GC re-programs a victim's data: on the victim's die, or striped.

    .venv/bin/python experiments/gc_relocation.py [--out experiments/results/gc_relocation]

The model's conventional FTL picks victims per die (greedy).  Until `controller.gc_striped` it
also re-programmed a victim's valid data on that die, one program unit after another, so a 33.7 MiB
ZN540 block held its die for a fraction of a second while reads queued behind it.  Drives clean
superblocks striped over all dies (and NVMeVirt's conventional FTL cleans lines across its LUNs).
This measures both on the same workload, device-level (no swap store): each preset's own erase
block, its own OP, the logical space written once in random order, overwritten twice over in
256 KiB random writes (GC steady state), then a mixed phase of groups of one 256 KiB write and
eight 4 KiB random reads issued together, each group after the previous one completes.  Reported:
write amplification over the whole run, the mixed phase's modeled time, and the reads' wait from
their group's issue to completion.  Modeled, deterministic (seeded); a few seconds of CPU each.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from zswap_host.ssdsim.conv_model import ConvSSD
from zswap_host.ssdsim.presets import get_preset

GiB = 1 << 30
U, BIG, GROUPS = 4096, 256 * 1024, 20000
# (preset, logical GiB): enough erase blocks per die for GC to have a choice at the real block
DEVICES = (("zn540", 24), ("cluster23-nvme-a", 16), ("thesis-ssd", 4))


def run(preset_name: str, logical_gib: int, striped: bool, seed: int = 1) -> dict:
    """One device, one relocation rule; the figures of the module docstring."""
    p = get_preset(preset_name)
    m = ConvSSD(p, logical_gib * GiB, erase_block=p.block_bytes, gc_striped=striped)
    n = m.logical_bytes // U
    rng = np.random.default_rng(seed)
    m.submit(1, rng.permutation(n) * U, np.full(n, U), qd=64)
    k = n // 64 * 2
    m.submit(1, rng.integers(0, n // 64, k) * BIG, np.full(k, BIG), qd=16)
    ops = np.tile(np.array([1] + [0] * 8, np.uint8), GROUPS)
    offs = rng.integers(0, n, ops.size) * U
    offs[ops == 1] = rng.integers(0, n // 64, GROUPS) * BIG
    lens = np.where(ops == 1, BIG, U)
    t0 = m.now
    done = m.submit_groups(ops, offs, lens, np.full(GROUPS, 9), np.full(GROUPS, 9)).reshape(GROUPS, 9)
    starts = np.concatenate([[t0], done.max(axis=1)[:-1]])
    wait_ms = (done[:, 1:] - starts[:, None]).ravel() * 1e3
    m.check_invariants()
    c = m.counters()
    q = np.percentile(wait_ms, [50, 99, 99.9])
    return {"preset": preset_name, "logical_gib": logical_gib, "gc": "striped" if striped else "own-die",
            "erase_block_mib": round(p.block_bytes / (1 << 20), 2), "op": round(m.effective_op, 4),
            "blocks_per_die": m.blocks_per_die,
            "write_amplification": round(c["media_write_bytes"] / c["host_write_bytes"], 4),
            "mixed_phase_s": round(m.now - t0, 3),
            "read_wait_ms": {"p50": round(q[0], 3), "p99": round(q[1], 3), "p99.9": round(q[2], 3),
                             "max": round(float(wait_ms.max()), 3)}}


def table(rows: list[dict]) -> str:
    out = ["| preset (erase block, OP) | GC relocation | WAF | mixed phase | read wait p50 / p99 / p99.9 / max |",
           "|---|---|---|---|---|"]
    for r in rows:
        w = r["read_wait_ms"]
        out.append(f"| {r['preset']} ({r['erase_block_mib']} MiB, {r['op']:.1%}) | {r['gc']} | "
                   f"{r['write_amplification']:.2f} | {r['mixed_phase_s']:.1f} s | "
                   f"{w['p50']:.2f} / {w['p99']:.2f} / {w['p99.9']:.1f} / {w['max']:.0f} ms |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="experiments/results/gc_relocation")
    args = ap.parse_args(argv)
    rows = []
    for name, gib in DEVICES:
        for striped in (False, True):
            rows.append(run(name, gib, striped))
            print(json.dumps(rows[-1]), file=sys.stderr)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cmd = "experiments/gc_relocation.py" + (f" --out {args.out}" if argv else "")
    (out / "summary.json").write_text(json.dumps({"command": cmd, "rows": rows}, indent=1) + "\n")
    (out / "summary.md").write_text(table(rows))
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
