"""One vocabulary for run names: the bench's old ``zns-host-gc`` is ``store-on-zns`` (as in replay and
sweep). A report committed before the rename reads as a new one, and the bench's chain recomputed from
its runs gives the committed ratios under the new keys and, as aliases, under the old ones."""

import json
from pathlib import Path

import pytest

from zswap_host.run_names import RENAMED_RUNS, current_names, current_report, old_keys, renamed_notes

COMMITTED = Path(__file__).resolve().parents[2] / "experiments" / "results" / "bench_default.json"


def test_old_names_map_to_the_new_in_order_with_one_note_each():
    assert RENAMED_RUNS == {"zns-host-gc": "store-on-zns"}
    assert current_names(["linux-swap", " zns-host-gc", "store-on-zns", ""]) == ("linux-swap", "store-on-zns")
    assert renamed_notes("bench", ["zns-host-gc", "linux-swap", "zns-host-gc "]) == \
        ["zswap-host bench: run zns-host-gc is called store-on-zns now"]
    assert renamed_notes("bench", ["store-on-zns", "linux-swap"]) == []


def test_a_committed_report_reads_as_a_new_one():
    pytest.importorskip("torch")
    from zswap_host.bench.chain import chain
    from zswap_host.bench.table import format_table

    old = json.loads(COMMITTED.read_text())
    assert old["runs"][-1]["name"] == "zns-host-gc"             # as recorded: the file is not rewritten
    new = current_report(old)
    assert [r["name"] for r in new["runs"]][-1] == "store-on-zns"
    assert new["chain"][-1]["to"] == "store-on-zns" and new["devices"] == old["devices"]
    assert new["ratios"]["speedup_store_on_zns_vs_linux_swap"] == old["ratios"]["speedup_zns_host_gc_vs_linux_swap"]
    again = chain(new["runs"])                     # today's chain from the recorded runs
    assert again["chain"] == new["chain"]
    assert {k: again["ratios"][k] for k in new["ratios"]} == new["ratios"]
    assert {k: again["ratios"][k] for k in old["ratios"]} == old["ratios"]        # the old keys, as aliases
    assert again["summary"]["run"] == "store-on-zns"
    table = format_table(new)
    assert "store-on-zns trains 4.70x faster than linux-swap" in table and "zns-host-gc" not in table


def test_old_keys_are_aliases_of_the_name_derived_keys():
    d = {"slowdown_store-on-zns": 1.5, "speedup_store_on_zns_vs_linux_swap": 2.0, "losses_match": True}
    assert old_keys(d) == {"slowdown_zns-host-gc": 1.5, "speedup_zns_host_gc_vs_linux_swap": 2.0}
    assert old_keys({**d, "slowdown_zns-host-gc": 9.0}) == {"speedup_zns_host_gc_vs_linux_swap": 2.0}
