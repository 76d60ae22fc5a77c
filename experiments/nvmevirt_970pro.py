"""Issue 29 part 3, the 970 PRO side by side: NVMeVirt's SAMSUNG_970PRO model (its modeled latencies
from the TCG guest session, ``experiments/results/nvmevirt/nvmevirt_ssd.json``), our conventional model
with the same constants (preset ``nvmevirt-970pro``) on the same fio jobs, and Samsung's published
970 PRO 512 GB specifications (``experiments/data/samsung_970pro_published.csv``)::

    .venv/bin/python experiments/nvmevirt_970pro.py [--out experiments/results/nvmevirt]

Host only, no guest.  Our model (``ConvSSD``, a fresh 1 GiB device per job, as NVMeVirt's namespace;
zones 0-1 filled with 128 KiB writes before the reads, as in the guest) runs each job twice:

* ``unloaded``: each command alone on an idle device, as many commands as NVMeVirt's trace of the job
  holds (under TCG every NVMeVirt latency is an unloaded one: docs/nvmevirt.md, "What TCG distorts" 3);
  throughput by NVMeVirt's rule (in flight / mean latency, capped at PCIe);
* ``loaded``: the fio job at the device's own speed: one writer per 64 MiB "zone" at QD 1 writing it
  whole, or ``max(4000, 40 x QD)`` random reads at QD, closed loop; throughput = in flight / mean
  latency (Little's law, exact for a closed loop: the same rule, now with contention).

Writes ``OUT/nvmevirt_970pro.json`` and ``OUT/nvmevirt_970pro.md`` (the table).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import statistics
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from nvmevirt_guest import PCIE_MB_S, ZONE_MIB, in_flight, jobs, little_throughput, nvmevirt_rate_mib_s  # noqa: E402

from zswap_host.characterize_common import issue_times  # noqa: E402
from zswap_host.ssdsim import ConvSSD, get_preset  # noqa: E402
from zswap_host.ssdsim.model import READ, WRITE  # noqa: E402

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
PRESET = "nvmevirt-970pro"
NAMESPACE = 1 * GiB                  # NVMeVirt's namespace in the guest session
PCIE_MIB_S = nvmevirt_rate_mib_s(PCIE_MB_S["ssd"])
IDLE_S = 0.01                        # between unloaded commands: longer than any program (185 us)
PUBLISHED = os.path.join(REPO, "experiments", "data", "samsung_970pro_published.csv")
NVMEVIRT_JSON = os.path.join(REPO, "experiments", "results", "nvmevirt", "nvmevirt_ssd.json")


def job_requests(j: dict, n: int | None, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(ops, offsets) of job ``j`` as fio issues them: writer k (QD 1) writes "zone" 2 + k sequentially,
    the writers interleaved; reads are uniform over zones 0-1.  ``n`` requests (None: the whole job)."""
    bs = j["bs_kib"] * KiB
    zone = ZONE_MIB * MiB
    if j["op"] == "write":
        per = zone // bs
        k = np.arange(per, dtype=np.int64)[:, None] * bs + (2 + np.arange(j["zones"], dtype=np.int64))[None, :] * zone
        offs = k.reshape(-1)
    else:
        total = n if n is not None else max(4000, 40 * j["qd"])
        offs = rng.integers(0, 2 * zone // bs, total).astype(np.int64) * bs
    if n is not None:
        offs = offs[:n]
    return np.full(offs.size, WRITE if j["op"] == "write" else READ, np.uint8), offs


def _device(preset, reads: bool) -> ConvSSD:
    m = ConvSSD(preset, NAMESPACE)
    if reads:                        # the guest's fill of zones 0-1 (128 KiB, QD 1)
        offs = np.arange(0, 2 * ZONE_MIB * MiB, 128 * KiB, dtype=np.int64)
        m.submit(np.full(offs.size, WRITE, np.uint8), offs, np.full(offs.size, 128 * KiB, np.int64), qd=1)
    m.advance(1.0)
    return m


def latencies(j: dict, preset, n: int | None, unloaded: bool, seed: int = 42) -> np.ndarray:
    """Per-command latency (s) of job ``j`` on our model: each command alone on an idle device
    (``unloaded``) or the job closed-loop with its commands in flight."""
    rng = np.random.default_rng(seed)
    ops, offs = job_requests(j, n, rng)
    bs = np.full(offs.size, j["bs_kib"] * KiB, np.int64)
    m = _device(preset, j["op"] != "write")
    if unloaded:
        out = np.empty(offs.size)
        for i in range(offs.size):   # one command per idle device: a few thousand at most
            m.advance(IDLE_S)
            t0 = m.now
            out[i] = m.submit(ops[i:i + 1], offs[i:i + 1], bs[i:i + 1], qd=1)[0] - t0
        return out
    qd = in_flight(j)
    t0 = m.now
    c = m.submit(ops, offs, bs, qd=qd)
    return c - issue_times(c, qd, t0)


def summarize(j: dict, lat_s: np.ndarray, pcie_mib_s: float = PCIE_MIB_S) -> dict:
    """Latency p50 / mean (µs) and throughput by NVMeVirt's rule (``little_throughput``)."""
    mean_ns = float(lat_s.mean()) * 1e9
    mib_s, kiops, capped = little_throughput(in_flight(j), mean_ns, j["bs_kib"], pcie_mib_s)
    return {"lat_p50_us": float(np.median(lat_s)) * 1e6, "lat_us": mean_ns / 1e3, "mib_s": mib_s, "kiops": kiops,
            "capped_by_pcie": capped, "commands": int(lat_s.size)}


def load_published(path: str = PUBLISHED) -> dict[str, dict]:
    with open(path, newline="") as f:
        return {r["job"]: {**r, "value": float(r["value"])} for r in csv.DictReader(f)}


def unit(j: dict) -> str:
    return "MiB/s" if j["experiment"] in ("size_sweep", "zone_sweep_bw") else "KIOPS"


def table(rows: list[dict]) -> str:
    def n(x, d=1):
        return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{d}f}"

    def thr(r, d, key_cap="capped_by_pcie"):
        if not d:
            return "–"
        v = d["mib_s"] if r["unit"] == "MiB/s" else d["kiops"]
        return n(v, 1) + ("ᵖ" if d.get(key_cap) else "")

    def lat(d):
        return f"{n(d['lat_p50_us'])} / {n(d['lat_us'])}" if d else "–"
    out = ["| job | unit | NVMeVirt latency p50 / mean (µs) | ours unloaded latency (µs) | ours loaded latency (µs) "
           "| NVMeVirt modeled | ours unloaded | ours loaded | published 970 PRO |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        nv = r.get("nvmevirt")
        out.append(f"| {r['name']} | {r['unit']} | {lat(nv)} | {lat(r['unloaded'])} | {lat(r['loaded'])} | "
                   f"{thr(r, nv)} | {thr(r, r['unloaded'])} | {thr(r, r['loaded'])} | "
                   f"{n(r['published']['value']) + '*' if r.get('published') else '–'} |")
    return "\n".join(out)


def nvmevirt_rows(path: str = NVMEVIRT_JSON) -> dict[str, dict]:
    """NVMeVirt's modeled numbers per job from the guest session's analysis, in this script's keys."""
    with open(path) as f:
        data = json.load(f)
    out = {}
    for r in data["jobs"]:
        if r.get("modeled_lat_us") is None:
            continue
        out[r["name"]] = {"lat_p50_us": r["modeled_lat_p50_us"], "lat_us": r["modeled_lat_us"],
                          "mib_s": r["modeled_mib_s"], "kiops": r["modeled_kiops"],
                          "capped_by_pcie": r["modeled_capped_by_pcie"], "commands": r["commands_traced"]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "experiments", "results", "nvmevirt"))
    ap.add_argument("--nvmevirt-json", default=NVMEVIRT_JSON, help="NVMeVirt's analysed 970 PRO session")
    a = ap.parse_args(argv)
    try:
        nv = nvmevirt_rows(a.nvmevirt_json)
    except (OSError, ValueError, KeyError) as e:
        print(f"nvmevirt_970pro: cannot read NVMeVirt's results {a.nvmevirt_json}: {e}", file=sys.stderr)
        return 2
    preset = get_preset(PRESET)
    pub = load_published()
    rows = []
    for j in jobs(zoned=False):
        r = dict(j, unit=unit(j), nvmevirt=nv.get(j["name"]), published=pub.get(j["name"]))
        n_cmds = r["nvmevirt"]["commands"] if r["nvmevirt"] else 1000
        r["unloaded"] = summarize(j, latencies(j, preset, n_cmds, unloaded=True))
        r["loaded"] = summarize(j, latencies(j, preset, None, unloaded=False), pcie_mib_s=math.inf)
        rows.append(r)
        print(f"{j['name']}: NVMeVirt {r['nvmevirt'] and r['nvmevirt']['lat_us']:.2f} us, ours unloaded "
              f"{r['unloaded']['lat_us']:.2f} us, loaded {r['loaded']['lat_us']:.2f} us", file=sys.stderr)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "nvmevirt_970pro.json"), "w") as f:
        json.dump({"preset": PRESET, "namespace_bytes": NAMESPACE, "pcie_mib_s": PCIE_MIB_S, "jobs": rows}, f, indent=1)
    md = ["# The 970 PRO: NVMeVirt's model, ours with its constants, the drive (issue 29 part 3)", "",
          "This file: `experiments/nvmevirt_970pro.py " + " ".join(argv if argv is not None else sys.argv[1:]) + "`.",
          "", "NVMeVirt = its modeled per-command latency in the TCG guest (`nvmevirt_ssd.json`, unloaded: "
          "docs/nvmevirt.md); ours = `ConvSSD` with preset `nvmevirt-970pro`, unloaded (each command alone, as "
          "many as NVMeVirt traced) and loaded (the whole fio job, closed loop). Throughput = in flight / mean "
          "latency; NVMeVirt's and ours unloaded capped at PCIe (ᵖ). `*`: the vendor's peak specification "
          "(conditions in `experiments/data/samsung_970pro_published.csv`), not the same job.", "",
          table(rows), ""]
    with open(os.path.join(a.out, "nvmevirt_970pro.md"), "w") as f:
        f.write("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
