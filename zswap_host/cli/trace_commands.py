"""The commands that replay a page trace: ``sweep`` (the store over a grid of settings) and ``replay``
(named swap runs)."""

from __future__ import annotations

import json

import click

from ..renamed_options import RenamedOptions
from ..plugins import command_args as plugin_args, plugin_option
from ..store.placement import placements
from .errors import fail, friendly_errors
from .group import main
from .options import (check_finite, check_outputs, note_renamed_runs, parse_gc_step, quiet_option,
                      store_gc_options)


def _names(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))


@main.command(cls=RenamedOptions, renamed={"--placements": "--placement", "--victims": "--victim",
                                            "--utilisations": "--utilisation", "--interfaces": "--interface",
                                            "--preset": "--model"})
@click.option("--trace", "trace_path", required=True, metavar="PATH",
              help="The trace to replay: a bench --trace-out .npz or a chunked trace directory (with --generate: "
              "where the generated trace is written).")
@click.option("--placement", "placements", default="temporal,hotness", show_default=True, metavar="NAME,...",
              help=f"Store placements (bench --placement), in the table's order: {', '.join(placements())}.")
@click.option("--victim", "victims", default="greedy,cost-benefit", show_default=True, metavar="NAME,...",
              help="GC victim policies (bench --victim): greedy, cost-benefit, fifo; the table's columns, "
              "each compared with the first.")
@click.option("--utilisation", "utilisations", default="0.75,0.9", show_default=True, metavar="F,...",
              help="Tables / the conventional SSD's usable bytes (0.05..0.99; 0.9 or 90%; bench --utilisation), "
              "the table's rows; every interface's SSD is built from that SSD's raw flash.")
@click.option("--interface", "interfaces", default="conventional,zns", show_default=True, metavar="NAME,...",
              help="SSD interfaces the store runs on: conventional (its zoned view), fdp, zns, ocssd (replay's "
              "store-on-NAME runs).")
@click.option("--executor", type=click.Choice(["ray", "serial"]), default="ray", show_default=True,
              help="ray: each point a Ray task (local Ray unless --address); serial: one after another here. "
              "Both give the same rows.")
@click.option("--address", default=None, metavar="ADDR", help="A running Ray cluster (ray://HOST:10001, auto) "
              "[default: start a local Ray]; its nodes need zswap-host and the trace at the same path.")
@click.option("--num-cpus", type=click.IntRange(min=1), default=None, metavar="N",
              help="Workers of the local Ray [default: this process's CPUs].")
@click.option("--retries", type=click.IntRange(min=0), default=2, show_default=True,
              help="Extra attempts of a point that fails (a task error or a lost worker).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="The trace's seed (--generate draws its batches from it); recorded in every row.")
@click.option("--generate", "gen_preset", default=None, metavar="MODEL",
              help="First generate the page trace of this training preset (bench --model) into --trace "
              "(torch-free, from --seed).")
@click.option("--iterations", type=click.IntRange(min=1), default=None, help="With --generate: iterations "
              "[default: the preset's].")
@click.option("--budget", default=None, help="With --generate: the DRAM budget (25%, 0.25, 64MiB) [default: the "
              "preset's].")
@click.option("--model", "trace_preset", default=None, metavar="MODEL",
              help="The training preset (bench --model) the trace pages, if its meta does not say (traces "
              "recorded before it did).")
@click.option("--out", "out_dir", default="sweep", show_default=True, type=click.Path(file_okay=False),
              help="Directory for sweep.csv, sweep.json and sweep.png.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary (with every row) as JSON instead of text.")
@quiet_option
@friendly_errors
@plugin_option
def sweep(trace_path, placements, victims, utilisations, interfaces, executor, address, num_cpus, retries, seed,
          gen_preset, iterations, budget, trace_preset, out_dir, as_json, quiet=False) -> None:
    """Replay one trace through the store over a grid of placements x victim policies x utilisations x
    interfaces, each point on a fresh emulated SSD (modeled clock), as Ray tasks or serially: stall,
    write amplification, GC MiB, p99 swap-in wait and flash wear per point, into OUT/sweep.csv, .json
    and .png. The rows do not depend on the executor or the order points finish in. Each replay ends
    with a flush of the pages still buffered, so write amplification counts every page written.

    The table printed is a pivot per metric: victim policies as columns (each beside its change
    against the first given), utilisations as rows under each interface and placement, all in the
    order given here; then each point's wall time and pages/s on this machine (not in the CSV, whose
    rows must not depend on the machine). The old option names (--placements, --victims,
    --utilisations, --interfaces, and --preset for --model) still work, with a line on stderr.

    \b
        zswap-host sweep --generate tiny --trace /tmp/tiny-trace --placement temporal,hotness \\
            --victim greedy,fifo --utilisation 0.75,0.95 --interface zns,conventional
    """
    check_outputs(dirs=(("--out", out_dir),))
    from ..progress import Progress
    from ..sweep import Generate, SweepSpec, check, run_sweep
    from ..sweep.output import write_outputs
    from ..sweep.table import format_sweep

    if gen_preset is None and (iterations is not None or budget is not None):
        fail("--iterations and --budget apply to --generate MODEL")
    from ..sweep import parse_utilisations

    spec = SweepSpec(trace=trace_path, placements=_names(placements), victims=_names(victims),
                     utilisations=tuple(parse_utilisations(utilisations)), interfaces=_names(interfaces),
                     seed=seed, executor=executor, retries=retries, address=address, num_cpus=num_cpus,
                     preset=trace_preset, generate=Generate(gen_preset, iterations, budget) if gen_preset else None)
    npoints = len(check(spec))              # bad input fails here, before any bar or file

    def progress(done: int, total: int, point) -> None:
        if point is not None:
            bars.finish(point.key)

    def generating(done: int, total: int) -> None:     # the trace counts as one more unit
        bars.update("trace", done, total)
        if done == total:
            bars.finish("trace", "generated")

    with Progress("sweep", npoints + bool(gen_preset), "points", quiet=quiet) as bars:   # before any point ends
        summary = run_sweep(spec, progress, on_generate=generating)
    rows = summary.pop("rows")
    gen = f" --generate {gen_preset}" + (f" --iterations {iterations}" if iterations else "") + \
        (f" --budget {budget}" if budget else "") if gen_preset else ""
    summary["command"] = (f"zswap-host sweep{gen} --trace {trace_path} --placement {','.join(spec.placements)} "
                          f"--victim {','.join(spec.victims)} --utilisation {','.join(f'{u:g}' for u in spec.utilisations)} "
                          f"--interface {','.join(spec.interfaces)} --seed {seed} --executor {executor} --out {out_dir}"
                          + (f" --model {trace_preset}" if trace_preset else "") + plugin_args())
    paths = write_outputs(rows, summary, out_dir, title=f"store sweep over the {summary['trace']['preset']} trace "
                          f"(seed {seed}; modeled clock)")
    if as_json:
        click.echo(json.dumps({**summary, "rows": rows, "files": paths}, indent=1))
        return
    click.echo(format_sweep(rows, spec.placements, spec.victims, spec.utilisations, spec.interfaces,
                            summary.get("point_timing")))
    click.echo(f"\n{summary['points']} points on {executor} in {summary['wall_s']} s")
    for p in paths:
        click.echo(f"wrote {p}")


@main.command(cls=RenamedOptions, renamed={"--preset": "--model"})
@click.option("--trace", "trace_path", required=True, metavar="PATH",
              help="The trace to replay: a bench --trace-out .npz or a chunked trace directory (with --generate: "
              "where the generated trace is written, or reused if it is there with the same parameters).")
@click.option("--runs", "runs_csv", default=None, metavar="RUN,...",
              help="Runs to replay, in this order [default: linux-swap-batched, store-on-conventional, store-on-fdp, "
              "store-on-zns, store-on-ocssd; also linux-swap].")
@click.option("--utilisation", type=float, default=None, metavar="FRACTION",
              help="Tables / the conventional SSD's usable bytes (0.05..0.99) [default: the bench's, 1/1.3]; every "
              "run's SSD is built from that SSD's raw flash.")
@click.option("--op", type=float, default=None, metavar="FRACTION",
              help="The conventional SSD's over-provisioning (0..0.5) [default: the bench's, 15%].")
@click.option("--erase-block", default=None, metavar="SIZE",
              help="The conventional SSD's erase block (a multiple of its 48 KiB program unit, e.g. 6MiB, the "
              "drive's real block) [default: scaled down so every die keeps 256 blocks].")
@click.option("--model", "trace_preset", default=None, metavar="MODEL",
              help="The training preset (bench --model) whose tables the trace pages, only if its meta does not say.")
@click.option("--budget", default=None, metavar="BUDGET", help="The DRAM budget (25%, 0.25, 64MiB): with --generate, the trace's; "
              "otherwise only for a trace whose meta does not record it.")
@click.option("--generate", "gen_preset", default=None, metavar="MODEL",
              help="First generate the page trace of this training preset (bench --model) into --trace "
              "(torch-free).")
@click.option("--iterations", type=click.IntRange(min=1), default=None, help="With --generate: iterations "
              "[default: the preset's].")
@click.option("--compute-us-per-sample", type=click.FloatRange(min=0), default=None, metavar="US",
              help="The compute per sample, the trace's idle windows: with --generate the trace's [default: the "
              "preset's calibration; mlperf has none]; otherwise charged instead of the trace's (its windows "
              "scaled; no page moves).")
@click.option("--lookahead", type=click.IntRange(0, 64), default=None, help="With --generate: batches each step "
              "prefetches while it computes, as the bench's lookahead runs [default: 0]; linux-swap-batched "
              "replayed on such a trace is the bench's linux-swap-lookahead.")
@click.option("--seed", type=int, default=None, help="With --generate: the batches' seed [default: 0].")
@click.option("--ssd", default="thesis-ssd", show_default=True, metavar="PRESET",
              help="SSD preset (bench --preset) of every run's devices, same flash and controller: thesis-ssd, "
              "zn540, cluster23-nvme-a.")
@click.option("--geometry", type=click.Choice(["scaled", "real"]), default="scaled", show_default=True,
              help="scaled: erase blocks and zones scaled down to the trace's size; real: the --ssd preset's "
              "own erase block, zone size and capacity, and OP unless --op (needs tables of the drive's "
              "scale, e.g. --generate mlperf).")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Keep OUT/replay.jsonl, a line per finished run: a run already there for this trace and "
              "sizing is not run again.")
@click.option("--restart", is_flag=True, help="With --out: forget the finished runs, run them all again.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, writable=True),
              help="Write the summary (trace, sizing, every run's row) as JSON.")
@click.option("--idle-gc/--no-idle-gc", default=True, show_default=True,
              help="Give the trace's compute windows to both GCs (the store's GC, then the conventional SSD's "
              "background GC), as the bench does; --no-idle-gc: to neither (the device clocks only pass).")
@click.option("--suspend", is_flag=True, help="Every run's emulated SSD suspends programs and erases for reads, "
              "as drives do (the bench's --suspend; docs/ssd-model.md).")
@store_gc_options
@quiet_option
@friendly_errors
@plugin_option
def replay(trace_path, runs_csv, utilisation, op, erase_block, trace_preset, budget, gen_preset, iterations,
           compute_us_per_sample, lookahead, seed, ssd, geometry, out_dir, restart, json_path, idle_gc=True,
           suspend=False, gc_yield_to_reads=False, gc_step=None, quiet=False) -> None:
    """Replay a page trace through named swap runs, each on fresh payload-free emulated SSDs (no page
    bytes kept: a trace of tables far beyond RAM replays in a few GB) sized as the bench sizes them,
    all from the same raw flash, every swap-in verified against its fingerprint. Per run: modeled
    stall, write amplification, store and device GC MiB, swap-in p99 (modeled clock), and the wall
    time, pages/s, CPU time and peak RSS it took here (each run in a process of its own).

    \b
    Runs: linux-swap, linux-swap-batched (the bench's Linux-swap model on the conventional SSD; they
    replay without the trace's discards), and the store on each interface the sweep names:
    store-on-conventional (the conventional SSD's zoned view), store-on-fdp (an NVMe FDP SSD, a
    placement handle per stream), store-on-zns (ZNS; its old name zns-host-gc still works, with a
    line on stderr), store-on-ocssd (Open-Channel). Every run ends with a flush of the pages still buffered, as
    training ends, so write amplification counts every page written. --preset, the old name of
    --model, still works, with a line on stderr.

    \b
        zswap-host replay --generate default --trace /tmp/default-trace --out replay-out
        zswap-host replay --trace run.npz --runs store-on-zns,store-on-fdp --json replay.json
    """
    import os

    from ..progress import Progress
    from ..replay import DEFAULT_RUNS, ReplaySpec, check_runs, ensure_trace, run_replay
    check_outputs(files=(("--json", json_path),), dirs=(("--out", out_dir),))
    check_finite("--compute-us-per-sample", compute_us_per_sample)

    if gen_preset is None:
        given = [o for o, v in (("--iterations", iterations), ("--lookahead", lookahead),
                                ("--seed", seed)) if v is not None]
        if given:
            fail(f"{given[0]} applies to --generate MODEL")
    if restart and not out_dir:
        fail("--restart applies to --out DIR (the runs it keeps)")
    if utilisation is not None and not 0.05 <= utilisation <= 0.99:
        fail(f"utilisation must be within 0.05..0.99 of the usable capacity, not {utilisation}")
    if op is not None and not 0.0 <= op <= 0.5:
        fail(f"--op must be within 0..0.5, not {op}")
    erase_bytes = None
    if erase_block is not None:
        from ..units import parse_size
        try:
            erase_bytes = parse_size(erase_block)
        except ValueError as e:
            fail(f"bad --erase-block {erase_block!r}: {e}")
    gc_step_bytes = parse_gc_step(gc_step)
    note_renamed_runs("replay", runs_csv)
    runs = check_runs(runs_csv.split(",")) if runs_csv is not None else DEFAULT_RUNS
    if gen_preset is not None:
        if trace_preset is not None:
            fail("--model names a recorded trace's training preset; with --generate it is --generate's")
        with Progress("trace", 1, "trace", work="it", quiet=quiet, overall=False) as bars:
            made = ensure_trace(trace_path, gen_preset, budget=budget, iterations=iterations,
                                us_per_sample=compute_us_per_sample, seed=seed or 0, lookahead=lookahead or 0,
                                progress=lambda done, total: bars.update("generating", done, total),
                                sizing={"utilisation": utilisation, "op": op, "erase_block": erase_bytes,
                                        "ssd": ssd, "geometry": geometry})
        if not quiet:
            click.echo(f"{'generated' if made else 'reusing'} the {gen_preset} trace in {trace_path}", err=True)

    def progress(name: str, done: int, total: int, chunk: int, chunks: int, wall: float) -> None:
        bars.update(name, done, total)

    def on_row(row: dict, resumed: bool) -> None:
        if resumed:
            bars.finish(row["run"], f"finished before (in {journal}), not run again")
        else:
            bars.finish(row["run"], f"{row['pages']:,} pages, {row['pages_per_s']:,} pages/s, "
                        f"WAF {row['write_amplification']:.3f}")

    journal = os.path.join(out_dir, "replay.jsonl") if out_dir else None
    spec = ReplaySpec(trace=trace_path, runs=runs, preset=trace_preset,
                      budget=None if gen_preset else budget, utilisation=utilisation, op=op,
                      erase_block=erase_bytes, ssd=ssd, geometry=geometry, idle_gc=idle_gc, suspend=suspend,
                      gc_yield_to_reads=gc_yield_to_reads, gc_step_bytes=gc_step_bytes,
                      us_per_sample=None if gen_preset else compute_us_per_sample, journal=journal, restart=restart)
    with Progress("replay", len(runs), "runs", work="page", quiet=quiet) as bars:
        summary = run_replay(spec, progress, on_row)
    gen = (f" --generate {gen_preset}" + (f" --iterations {iterations}" if iterations else "")
           + (f" --budget {budget}" if budget else "")
           + (f" --compute-us-per-sample {compute_us_per_sample:g}" if compute_us_per_sample is not None else "")
           + (f" --lookahead {lookahead}" if lookahead is not None else "")
           + (f" --seed {seed}" if seed is not None else "")) if gen_preset else ""
    summary = {"command": f"zswap-host replay{gen} --trace {trace_path} --runs {','.join(runs)}" + plugin_args()
               + (f" --utilisation {utilisation:g}" if utilisation is not None else "")
               + (f" --op {op:g}" if op is not None else "")
               + (f" --erase-block {erase_block}" if erase_block is not None else "")
               + (f" --ssd {ssd}" if ssd != "thesis-ssd" else "") + (f" --geometry {geometry}" if geometry != "scaled" else "")
               + (f" --compute-us-per-sample {compute_us_per_sample:g}"
                  if compute_us_per_sample is not None and not gen_preset else "")
               + ("" if idle_gc else " --no-idle-gc") + (" --suspend" if suspend else "")
               + (" --gc-yield-to-reads" if gc_yield_to_reads else "") + (f" --gc-step {gc_step}" if gc_step else "")
               + (f" --model {trace_preset}" if trace_preset else "")
               + (f" --budget {budget}" if budget and not gen_preset else "")
               + (f" --out {out_dir}" if out_dir else "") + (" --restart" if restart else "")
               + (f" --json {json_path}" if json_path else ""),
               **summary}
    click.echo(_format_replay(summary))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(summary, f, indent=1)
        click.echo(f"wrote {json_path}")


def _format_replay(summary: dict) -> str:
    t = summary["trace"]
    head = (f"{t['preset']} trace: {t['swap_in_pages']:,} pages in, {t['swap_out_pages']:,} out, "
            f"{t['idle_s']:.2f} s of compute windows; DRAM budget {t['budget_pages']:,} pages")
    d = summary.get("devices") or {}
    if "conventional_erase_block_bytes" in d:
        head += (f"\nconventional SSD: {d['conventional_usable_bytes'] / (1 << 20):,.0f} MiB usable, OP "
                 f"{d['conventional_op'] * 100:.1f}% (effective), erase block "
                 f"{d['conventional_erase_block_bytes'] / 1024:,.0f} KiB; tables "
                 f"{d['tables_over_conventional_usable'] * 100:.0f}% of its usable bytes")
    cols = ("run", "stall s", "WAF", "store GC MiB", "device GC MiB", "swap-in p99 ms", "wall s", "pages/s",
            "CPU s", "peak RSS MiB")
    rows = [(r["run"], f"{r['stall_s']:.4f}", f"{r['write_amplification']:.4f}", f"{r['store_gc_mib']:.1f}",
             f"{r['device_gc_mib']:.1f}", f"{r['swap_in_p99_ms']:.3f}", f"{r['wall_s']:.1f}",
             f"{r['pages_per_s']:,}", f"{r.get('cpu_s', float('nan')):.1f}", f"{r['peak_rss_mib']:.0f}")
            for r in summary["runs"]]
    w = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    line = lambda cells: "  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(cells))  # noqa: E731
    notes = ["stall, WAF, GC and p99: modeled clock; wall, pages/s, CPU, RSS: this machine; every run ends "
             "with a flush of its buffered pages"]
    if any(r["write_amplification"] < 1 for r in summary["runs"]):
        from ..sweep.table import WAF_BELOW_1

        notes.append(WAF_BELOW_1)
    return "\n".join([head, line(cols), *(line(r) for r in rows), *notes])
