"""Compare two `zswap-host replay --json` summaries field by field: print the fields that differ.
The machine's own measures (wall, CPU, pages/s, RSS) and the command line are expected to; every
modeled field (stall, WAF, GC, p99, counts, sizing) must not.

    python experiments/results/ocssd_c_only/compare.py BEFORE.json AFTER.json
"""
import json
import sys

MACHINE = {"command", "wall_s_this_invocation", "wall_s", "cpu_s", "pages_per_s", "pages_per_cpu_s", "peak_rss_mib"}


def flat(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from flat(v, f"{path}/{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from flat(v, f"{path}[{i}]")
    else:
        yield path, x


def main(before: str, after: str) -> int:
    a, b = (dict(flat(json.load(open(p)))) for p in (before, after))
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    modeled = [k for k in differ if k.rsplit("/", 1)[-1] not in MACHINE]
    print(f"{before} vs {after}: {len(a)} fields, {len(differ)} differ, {len(modeled)} of them modeled")
    for k in differ:
        print(f"  {k}: {a.get(k)!r} -> {b.get(k)!r}{'   MODELED' if k in modeled else ''}")
    return 1 if modeled else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
