"""``sweep.table.format_sweep`` and ``text_table.aligned`` on rows built here: the axes in the order
given (not sorted), the labels not repeated, a missing point shown as such, the deltas against the
first victim (a difference when its value is 0), and the note on a write amplification below 1."""

import pytest

from zswap_host.sweep.table import MISSING, WAF_BELOW_1, format_sweep
from zswap_host.text_table import aligned


def _row(placement, victim, u, iface, waf, gc=0.0):
    return {"placement": placement, "victim": victim, "utilisation": u, "interface": iface, "stall_s": 0.5,
            "write_amplification": waf, "store_gc_mib": gc, "device_gc_mib": 0.0, "swap_in_p99_us": 100.0}


def _block(text: str, title_start: str) -> list[str]:
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith(title_start))
    end = next((n for n in range(i, len(lines)) if lines[n] == ""), len(lines))
    return lines[i + 1:end]


def test_given_order_labels_missing_points_and_deltas():
    rows = [_row(p, v, u, "zns", waf, gc)
            for p in ("temporal", "hotness") for v, waf, gc in (("greedy", 1.2, 0.0), ("fifo", 1.5, 2.0))
            for u in (0.75, 0.9) if not (p == "hotness" and v == "fifo" and u == 0.9)]
    text = format_sweep(rows, ["temporal", "hotness"], ["fifo", "greedy"], [0.9, 0.75], ["zns"],
                        {"temporal.fifo.u0.9.zns": {"wall_s": 1.25, "pages_per_s": 12345}})
    head, _, *body = _block(text, "write amplification")
    assert head.split() == ["interface", "placement", "util", "fifo", "greedy", "vs", "fifo"]
    assert [line.split() for line in body] == [
        ["zns", "temporal", "0.9", "1.500", "1.200", f"{(1.2 - 1.5) / 1.5 * 100:+.1f}%"],
        ["0.75", "1.500", "1.200", f"{(1.2 - 1.5) / 1.5 * 100:+.1f}%"],
        ["hotness", "0.9", MISSING, "1.200", MISSING],
        ["0.75", "1.500", "1.200", f"{(1.2 - 1.5) / 1.5 * 100:+.1f}%"]]
    gc = [line.split() for line in _block(text, "GC MiB")[2:]]
    assert gc[0][-1] == f"{(0.0 - 2.0) / 2.0 * 100:+.1f}%" and WAF_BELOW_1 not in text
    timing = _block(text, "wall time and pages/s")
    assert "1.2 s" in timing[2] and "12,345/s" in timing[2] and timing[3].split()[1:] == [MISSING, MISSING]


def test_a_zero_baseline_gives_a_difference_and_below_one_is_explained():
    rows = [_row("temporal", "greedy", 0.9, "conventional", 0.97), _row("temporal", "cost-benefit", 0.9,
                                                                         "conventional", 0.98, gc=1.5)]
    text = format_sweep(rows, ["temporal"], ["greedy", "cost-benefit"], [0.9], ["conventional"])
    assert WAF_BELOW_1 in text and "wall time" not in text
    assert _block(text, "GC MiB")[2].split()[-1] == "+1.5"


def test_aligned_keeps_column_starts_and_refuses_ragged_rows():
    lines = aligned(["name", "n"], [["a", "1"], ["longer", "12345"]])
    assert lines == ["name        n", "-------------", "a           1", "longer  12345"]
    with pytest.raises(ValueError, match="a row has 1 cells, the header 2"):
        aligned(["name", "n"], [["a"]])
