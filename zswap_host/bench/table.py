"""The terminal report of a bench: the runs side by side, the attribution chain, and on real devices the
model twin (each run on a real device beside the same run on an emulated device of its geometry)."""

from __future__ import annotations

import textwrap

from ..units import format_size
from .chain import stall_text

LEGEND = ("train = charged compute + I/O stall; stall: modeled device time (wall on real devices); "
          "step p50/p99: stall per training step; page wait: from the moment the step needed a page to the "
          "moment it was in DRAM; <32K w/r: share of device writes / reads under 32 KiB; WAF: flash writes / "
          "swapped-out bytes; GC: bytes moved by the store's GC + the SSD's own; own: the run's measured "
          "compute (wall, not charged), of which paging bookkeeping")


def _basis(c: dict) -> str:
    if c["kind"] == "pinned":
        return f"pinned at {c['us_per_sample']:g} us/sample ({c['source'] or 'given'})"
    return f"measured: median of {c['repeats']} interleaved DRAM-only replicas"


def _sizing(s: dict) -> str:
    if s["sizing"] == "given":
        return f"as given (conventional {s['baseline']}, zoned {s['zns']})"
    if s["sizing"] == "same-flash":
        return (f"same flash ({format_size(s['conventional_raw_bytes'])} raw; conventional SSD exports "
                f"{format_size(s['conventional_usable_bytes'])} and hides {s['conventional_op']:.0%} as OP, ZNS exposes "
                f"{format_size(s['zns_usable_bytes'])}: tables at {s['tables_over_conventional_usable']:.0%} / "
                f"{s['tables_over_zns_usable']:.0%} of usable)")
    return (f"same capacity ({format_size(s['zns_usable_bytes'])} usable on both, zones of "
            f"{format_size(s['zone_capacity'])}; tables at {s['tables_over_zns_usable']:.0%})")


def _data(d: dict) -> str:
    """One line on the data file the runs trained on."""
    cap = f", tables capped at {d['max_ind_range']} rows" if d.get("max_ind_range") else ""
    passes = f" ({d['passes']} passes over its {d['samples_per_pass']} samples)" if d["passes"] > 1 else ""
    bad = f"; {d['bad_lines_skipped']} malformed lines skipped" if d.get("skip_bad_lines") else ""
    return (f"data: {d['path']} ({d['format']}, categorical values {d['mapping']}-mapped{cap}), "
            f"{d['samples']} samples read{passes}{bad}")


def format_table(report: dict) -> str:
    runs = report["runs"]
    head = (f"{'run':22} {'train s':>8} {'slowdown':>8} {'stall s':>8} {'step p50/p99 ms':>16} "
            f"{'page wait p50/p99/p99.9 us':>27} {'in/out MiB':>13} {'<32K w/r':>9} {'WAF':>5} {'GC MiB':>7} "
            f"{'own/paging s':>13}")
    lines = [f"DLRM bench: preset {report['preset']}, {report['iterations']} iterations of {report['batch_size']}, "
             f"tables {format_size(report['table_bytes'])}, DRAM budget {format_size(report['budget_bytes'])}, "
             f"store {report['placement']}/{report['victim']}",
             f"devices: {_sizing(report['sizing'])}; idle windows to {'both GCs' if report['idle_gc'] else 'neither GC'}; "
             f"program/erase suspend {'on' if report['sizing'].get('suspend') else 'off'}"
             + ("; the store's GC yields to reads" if report.get("gc_yield_to_reads") else "")
             + (f"; background GC steps of {report['gc_step_bytes'] or 'a whole victim'}{' bytes' if report['gc_step_bytes'] else ''}"
                if report.get("gc_step_bytes") is not None else ""),
             f"compute: {_basis(report['compute'])}"]
    if "data" in report:
        lines.append(_data(report["data"]))
    lines += ["", head, "-" * len(head)]
    t0 = runs[0]["train_time_s"]
    for r in runs:
        own = f"{r['measured_compute_s']:6.1f}/{r['paging_bookkeeping_s']:5.1f}"
        if r["name"] == "dram-only":
            lines.append(f"{r['name']:22} {r['train_time_s']:8.2f} {1.0:7.2f}x {'':8} {'':16} {'':27} {'':13} "
                         f"{'':9} {'':5} {'':7} {own:>13}")
            continue
        gc = (r.get("gc_write_bytes", 0) + r.get("device_gc_write_bytes", 0)) / 2**20
        step = f"{r['step_stall_p50_s'] * 1e3:.1f}/{r['step_stall_p99_s'] * 1e3:.1f}"
        wait = (f"{r['page_wait_p50_s'] * 1e6:.0f}/{r['page_wait_p99_s'] * 1e6:.0f}/"
                f"{r['page_wait_p999_s'] * 1e6:.0f}")
        io = f"{r['swap_in_bytes'] / 2**20:.0f}/{r['swap_out_bytes'] / 2**20:.0f}"
        lines.append(
            f"{r['name']:22} {r['train_time_s']:8.2f} {r['train_time_s'] / t0:7.2f}x {r['io_stall_time_s']:8.2f} "
            f"{step:>16} {wait:>27} {io:>13} "
            f"{r['write_requests_under_32k_share']:4.0%}/{r['read_requests_under_32k_share']:4.0%} "
            f"{r['write_amplification']:5.2f} {gc:7.0f} {own:>13}")
    if report["chain"]:
        lines += ["", "attribution chain (before / after; > 1: the step helped):"]
    else:       # no two neighbouring runs ran (e.g. --runs store-on-zns): say so rather than print an empty block
        lines += ["", "attribution chain: no step (a step compares two neighbouring runs, e.g. linux-swap -> "
                  "linux-swap-batched; --runs left out one of each pair)"]
    for s in report["chain"]:
        stall = stall_text(*s["io_stall_time_s"], s["stall_ratio"])
        lines.append(f"  {s['step']:12} {s['from']} -> {s['to']}: stall {stall}, "
                     f"training time {s['train_time_ratio']:.2f}x; WAF {s['write_amplification'][0]:.2f} -> "
                     f"{s['write_amplification'][1]:.2f}; GC {s['gc_write_bytes'][0] / 2**20:.0f} -> "
                     f"{s['gc_write_bytes'][1] / 2**20:.0f} MiB")
    q = report["ratios"]
    by = {r["name"]: r for r in runs}
    if "speedup_store_on_zns_vs_linux_swap" in q:
        stall = stall_text(by["linux-swap"]["io_stall_time_s"], by["store-on-zns"]["io_stall_time_s"],
                           q["stall_ratio_linux_swap_vs_store_on_zns"])
        lines.append(f"  end to end: store-on-zns trains {q['speedup_store_on_zns_vs_linux_swap']:.2f}x faster than "
                     f"linux-swap (stall {stall})")
    lines.append(f"losses {'match' if q['losses_match'] else 'DIFFER'} across runs "
                 f"(max difference {q['max_loss_difference']:.2e})")
    checked = [f"{r['name']} {r['verify']['pages_checked']}" for r in runs if "verify" in r]
    if checked:
        lines.append("pages verified bit-exact at swap-in: " + ", ".join(checked))
    lines.append(LEGEND)
    if "summary" in report:
        lines.append(summary_line(report["summary"]))
    if "model_twin" in report:
        lines += ["", *format_twin(report)]
    return "\n".join(lines)


def summary_line(s: dict) -> str:
    """The report's last line: store-on-zns against the best Linux run, and against linux-swap when
    that is another run; each stall ratio beside both runs' seconds."""
    def versus(v: dict, label: str = "") -> str:
        stall = stall_text(*v["io_stall_time_s"], v["stall_ratio"])
        return f"{v['speedup']:.2f}x faster than {label}{v['run']} (stall {stall})"

    best = s["vs_best_linux"]
    line = f"summary: {s['run']} trains {versus(best, 'the best Linux run, ')}"
    other = s.get("vs_linux_swap")
    if other is not None and other["run"] != best["run"]:
        line += f"; {versus(other)}"
    return line


def _ms(a: float, b: float) -> str:
    return f"{a * 1e3:.1f}/{b * 1e3:.1f}"


def _us(a: float, b: float) -> str:
    return f"{a * 1e6:.0f}/{b * 1e6:.0f}"


def format_twin(report: dict) -> list[str]:
    """The model twin block: each run on a real device beside the same run on an emulated device of
    the same geometry (wall | model)."""
    from .twin import describe_device

    tw = report["model_twin"]
    head = (f"{'run':22} {'stall s wall | model':>23} {'wall/model':>10} {'train s wall | model':>23} "
            f"{'step p50/p99 ms wall | model':>31} {'page wait p50/p99 us wall | model':>35}")
    lines = [f"model twin (modeled, same geometry): the runs on real devices again, on emulated {tw['preset']} "
             f"devices of the same geometry",
             *(f"  {describe_device(role, d)}" for role, d in tw["devices"].items()),
             head, "-" * len(head)]
    for r in report["runs"]:
        t = r.get("model_twin")
        if t is None:
            continue
        stall = f"{r['io_stall_time_s']:.2f} | {t['io_stall_time_s']:.2f}"
        train = f"{r['train_time_s']:.2f} | {t['train_time_s']:.2f}"
        step = (f"{_ms(r['step_stall_p50_s'], r['step_stall_p99_s'])} | "
                f"{_ms(t['step_stall_p50_s'], t['step_stall_p99_s'])}")
        wait = (f"{_us(r['page_wait_p50_s'], r['page_wait_p99_s'])} | "
                f"{_us(t['page_wait_p50_s'], t['page_wait_p99_s'])}")
        ratio = t["stall_wall_over_model"]
        ratio = f"{ratio:9.2f}x" if ratio is not None else f"{'—':>10}"
        lines.append(f"{r['name']:22} {stall:>23} {ratio} {train:>23} {step:>31} "
                     f"{wait:>35}")
    c = report["compute"]
    basis = (f"pinned at {c['us_per_sample']:g} us/sample" if c["kind"] == "pinned"
             else f"measured, median of {c['repeats']} replicas")
    lines += textwrap.wrap(
        f"confounds: wall = the real device's I/O time as this host saw it (the drive, the kernel, the I/O path; "
        f"under QEMU's TCG emulation it says nothing about flash), model = the {tw['preset']} model's device time, "
        f"each twin run on a fresh device; compute is charged the same way in both ({basis}); idle time: the "
        f"charged compute on the twin, the real time between I/Os on the real device; FTL and over-provisioning: "
        f"the preset's on the twin, the drive's own on the real one. Twin losses "
        f"{'match' if tw['ratios']['losses_match'] else 'DIFFER'}.", width=len(head), subsequent_indent="  ")
    return lines
