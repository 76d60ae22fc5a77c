"""Instructions a trace replay executes, this checkout against another (``--base``), by callgrind.

Each run (``--runs``, the replay's names) replays the trace in-process (``replay.replay_run``:
payload-free devices sized as the bench sizes them, every swap-in verified) under
``valgrind --tool=callgrind`` with collection switched on just around the replay (a callgrind
client request from a helper compiled with cffi at start: imports and set-up are not counted).
Instruction counts do not move with the machine's load. ``--base DIR``: a checkout of the commit
to compare with, its extension built in place (``python native/build_native.py``), run with the
same interpreter and this script.

    python experiments/replay_callgrind.py --trace DIR [--base CHECKOUT] [--runs store-on-zns,...] [--json]

Needs valgrind and its headers (``valgrind/callgrind.h``) and a C compiler. Bad input: one line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RUNS = "store-on-zns,store-on-ocssd,store-on-conventional,store-on-fdp,linux-swap-batched"


def _marker(build: str):
    """A module with cg_on() / cg_off(): callgrind collects only between them."""
    from cffi import FFI

    ffi = FFI()
    ffi.cdef("void cg_on(void); void cg_off(void);")
    ffi.set_source("_cgmark", """#include <valgrind/callgrind.h>
        void cg_on(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
        void cg_off(void) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_STOP_INSTRUMENTATION; }""")
    ffi.compile(tmpdir=build, verbose=False)
    sys.path.insert(0, build)
    import _cgmark
    return _cgmark.lib


def child(a) -> None:
    from zswap_host.replay.measure import replay_run
    from zswap_host.replay.trace_input import ReplayTrace

    tr = ReplayTrace(a.trace, None, None)
    sizing = tr.sizing()
    cg = _marker(a.build)
    cg.cg_on()
    row = replay_run(a.child, a.trace, tr.preset, sizing)
    cg.cg_off()
    print(json.dumps({k: row[k] for k in ("stall_s", "write_amplification", "store_gc_mib", "device_gc_mib",
                                          "swap_in_p99_ms", "pages")}))


def instructions(tree: str, run: str, trace: str, build: str) -> tuple[int, dict]:
    """(instructions inside the replay, its modeled row) of ``run`` with ``tree`` first on the path."""
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PYTHONPATH=tree, PYTHONHASHSEED="0")
        p = subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no",
                            f"--callgrind-out-file={d}/cg.out", sys.executable, os.path.abspath(__file__),
                            "--trace", trace, "--child", run, "--build", build],
                           capture_output=True, text=True, env=env, cwd=d)
        m = re.search(r"Collected : (\d+)", p.stderr)
        if p.returncode != 0 or m is None:
            sys.exit(f"replay_callgrind: {run} on {tree} failed:\n{p.stderr[-2000:]}")
        return int(m.group(1)), json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", required=True)
    ap.add_argument("--base", default=None, help="a checkout (extension built in place) to compare with")
    ap.add_argument("--runs", default=RUNS)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--build", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a)
        return
    if not os.path.isdir(a.trace):
        print(f"replay_callgrind: {a.trace} is not a trace directory", file=sys.stderr)
        sys.exit(2)
    if a.base is not None and not os.path.isdir(os.path.join(a.base, "zswap_host")):
        print(f"replay_callgrind: {a.base} is not a checkout (no zswap_host/ in it)", file=sys.stderr)
        sys.exit(2)
    trees = {"this": ROOT, **({"base": os.path.abspath(a.base)} if a.base else {})}
    import compileall

    for tree in trees.values():               # no module compiled inside the counted replay
        compileall.compile_dir(os.path.join(tree, "zswap_host"), quiet=1)
    rows = []
    with tempfile.TemporaryDirectory() as build:
        _marker(build)                        # built once, in this process, before the runs
        for run in [r.strip() for r in a.runs.split(",") if r.strip()]:
            row = {"run": run}
            for name, tree in (("base", trees.get("base")), ("this", trees["this"])):
                if tree is None:
                    continue
                row[f"{name}_instructions"], row[f"{name}_modeled"] = instructions(tree, run, a.trace, build)
            if "base_instructions" in row:
                row["this_over_base"] = round(row["this_instructions"] / row["base_instructions"], 4)
                row["modeled_equal"] = row["this_modeled"] == row["base_modeled"]
            rows.append(row)
            print(f"{run}: " + ", ".join(f"{k} {v:,}" if isinstance(v, int) else f"{k} {v}"
                                         for k, v in row.items() if k.endswith(("instructions", "base", "equal"))),
                  file=sys.stderr, flush=True)
    out = {"command": "python experiments/replay_callgrind.py " + " ".join(sys.argv[1:]), "runs": rows}
    print(json.dumps(out, indent=1) if a.json else "\n".join(
        f"{r['run']:24} {r.get('base_instructions', 0):>15,} {r['this_instructions']:>15,} {r.get('this_over_base', '')}"
        for r in rows))


if __name__ == "__main__":
    main()
