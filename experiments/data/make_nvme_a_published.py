"""Build experiments/data/nvme_a_published.csv from the CLUSTER'23 artefact (run once; committed).

Doekemeijer et al. 2023 (IEEE CLUSTER; arXiv 2310.19094), artefact github.com/stonet-research/NVMeBenchmarks
at 01f40f1c9228: the conventional drive the artefact calls ``nvme-a`` (SPDK fio runs at PCIe 0000:86/87:00.0)
and the long GC runs of ``data/custom/zns-a/long3`` ("long heavy load interference runs on NVMe",
PCIe 0000:af:00.0; its idle random-read profile equals nvme-a's within 0.3% at every queue depth, so it is
taken as the same drive model).

Roles are declared here, before any fit, by a fixed rule: within each series (the points sharing an
experiment, op, metric and every setting but the swept one), sorted by the swept value, positions 0, 2, 4, ...
are ``held_out`` and 1, 3, 5, ... ``calibrate``; a measurement that appears in two series keeps the role of
its first row and appears once.  Usage:

    python experiments/data/make_nvme_a_published.py /path/to/NVMeBenchmarks  # bare git dir or checkout
"""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

COMMIT = "01f40f1c9228"
PAPER = "Doekemeijer et al. 2023 (IEEE CLUSTER; arXiv 2310.19094)"
SRC = "github.com/stonet-research/NVMeBenchmarks@" + COMMIT + ":"
OUT = Path(__file__).resolve().parent / "nvme_a_published.csv"
COLS = ["experiment", "op", "bs_kib", "qd", "write_rate_mib_s", "metric", "value", "unit", "role",
        "paper", "figure", "source", "field"]


def main(repo: str) -> None:
    def load(path: str) -> dict:
        t = subprocess.run(["git", "-C", repo, "show", f"{COMMIT}:{path}"], capture_output=True, text=True,
                           check=True).stdout
        return json.loads(t[t.index("{"):])           # some outputs start with a fio warning line

    def bw(d: dict, job: str | None, direction: str) -> float:
        return sum(j[direction]["bw"] for j in d["jobs"] if job is None or j["jobname"] == job) / 1024.0

    def job(d: dict, name: str) -> dict:
        return next(j for j in d["jobs"] if j["jobname"] == name)

    series: list[list[dict]] = []

    def add(points: list[dict]) -> None:
        series.append(points)

    # 1-2: sequential (write) and random (randwrite) writes, SPDK, 4 KiB LBA format, one job
    for exp, op in (("seq_write", "write"), ("rand_write", "writerand")):
        fig = f"nvme-a lbaf3 spdk {op} (data/spdk/nvme-a/lbaf3/{op})"
        for qd in ((1,) if exp == "seq_write" else (1, 32)):
            pts = []
            for bs in (4, 8, 16, 32, 64, 128):
                p = f"data/spdk/nvme-a/lbaf3/{op}/{bs * 1024}bs/1zone/{qd}.json"
                pts.append(dict(experiment=exp, op=op, bs_kib=bs, qd=qd, write_rate_mib_s="", metric="throughput",
                                value=bw(load(p), None, "write"), unit="MiB/s", figure=fig, source=SRC + p,
                                field="fio JSON jobs[*].write.bw KiB/s / 1024 (summed over jobs)"))
            add(pts)
        pts = []
        for qd in (1, 2, 4, 8, 16, 32, 64, 128, 256):
            p = f"data/spdk/nvme-a/lbaf3/{op}/4096bs/1zone/{qd}.json"
            pts.append(dict(experiment=exp, op=op, bs_kib=4, qd=qd, write_rate_mib_s="", metric="throughput",
                            value=bw(load(p), None, "write"), unit="MiB/s", figure=fig, source=SRC + p,
                            field="fio JSON jobs[*].write.bw KiB/s / 1024 (summed over jobs)"))
        add(pts)
    # 3: random 4 KiB reads by queue depth, no writer (rate_inteference/nvme_0_<qd>)
    pts = []
    for qd in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        p = f"data/custom/zns-a/rate_inteference/nvme_0_{qd}"
        pts.append(dict(experiment="read_qd", op="randread", bs_kib=4, qd=qd, write_rate_mib_s=0, metric="iops",
                        value=job(load(p), "read")["read"]["iops"] / 1e3, unit="KIOPS",
                        figure="io_inteference_ratelimit_log.sh, NVMe, no writer", source=SRC + p,
                        field="fio JSON jobs[read].read.iops / 1000"))
    add(pts)
    # 4: 4 KiB random reads while a 128 KiB sequential writer runs rate-limited (rate_inteference/nvme_<rate>_<qd>)
    for qd, metric, unit in ((1, "mean_latency", "us"), (32, "iops", "KIOPS")):
        pts = []
        for rate in (0, 10, 50, 100, 250, 500, 1000):
            p = f"data/custom/zns-a/rate_inteference/nvme_{rate}_{qd}"
            r = job(load(p), "read")["read"]
            v = r["clat_ns"]["mean"] / 1e3 if metric == "mean_latency" else r["iops"] / 1e3
            f = "fio JSON jobs[read].read.clat_ns.mean / 1000" if metric == "mean_latency" else \
                "fio JSON jobs[read].read.iops / 1000"
            pts.append(dict(experiment="read_under_writes", op="randread", bs_kib=4, qd=qd, write_rate_mib_s=rate,
                            metric=metric, value=v, unit=unit,
                            figure="io_inteference_ratelimit_log.sh, NVMe, 128 KiB seq writer at rate", source=SRC + p,
                            field=f))
        add(pts)
    # 5: GC steady state: 4 jobs x QD 32 of 1 MiB random writes over 400 GiB (rate-limited per job), with a
    #    4 KiB random reader at QD q over the first 100 GiB (long3/nvme_<q>_<rate>.json, 20 min each)
    for rate in (250, 750, 1115):
        pts = []
        for q in (1, 4, 16, 64):
            p = f"data/custom/zns-a/long3/nvme_{q}_{rate}.json"
            pts.append(dict(experiment="gc_steady", op="randwrite", bs_kib=1024, qd=q, write_rate_mib_s=rate,
                            metric="throughput", value=job(load(p), "fill")["write"]["bw"] / 1024.0, unit="MiB/s",
                            figure="io_inteference_ratelimit_log.sh long NVMe run (data/custom/zns-a/long3)",
                            source=SRC + p, field="fio JSON jobs[fill].write.bw KiB/s / 1024 (4 jobs, group_reporting)"))
        add(pts)
    pts = []
    for rate in (250, 750, 1115):
        p = f"data/custom/zns-a/long3/nvme_1_{rate}.json"
        pts.append(dict(experiment="gc_steady", op="randread", bs_kib=4, qd=1, write_rate_mib_s=rate,
                        metric="mean_latency", value=job(load(p), "read")["read"]["clat_ns"]["mean"] / 1e3, unit="us",
                        figure="io_inteference_ratelimit_log.sh long NVMe run (data/custom/zns-a/long3)",
                        source=SRC + p, field="fio JSON jobs[read].read.clat_ns.mean / 1000"))
    add(pts)

    rows, seen = [], set()
    for pts in series:
        i = 0
        for pt in pts:
            if pt["source"] + pt["metric"] in seen:
                continue
            seen.add(pt["source"] + pt["metric"])
            pt["role"] = "held_out" if i % 2 == 0 else "calibrate"
            i += 1
            pt["paper"] = PAPER
            pt["value"] = round(pt["value"], 3)
            rows.append(pt)
    with open(OUT, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in COLS})
    held = sum(r["role"] == "held_out" for r in rows)
    print(f"{OUT}: {len(rows)} points, {held} held out, {len(rows) - held} calibrate")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/stonet-research+NVMeBenchmarks/repo")
