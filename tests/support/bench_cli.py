"""Shared by the device tests: ``zswap-host bench`` of the store's own run on a given ``--device``
(tiny model, 8 iterations, no lookahead), through the CLI."""

from __future__ import annotations

import json

from click.testing import CliRunner

from zswap_host.cli import main

STORE_RUN = ["bench", "--model", "tiny", "--iterations", "8", "--lookahead", "0", "--runs", "store-on-zns"]


def bench_store_run(url: str, out) -> tuple[dict, dict]:
    """Run it on ``url`` writing JSON to ``out``; (report, the store run's record). Asserts exit 0,
    the device recorded, pages swapped out and losses equal to DRAM-only's."""
    r = CliRunner().invoke(main, [*STORE_RUN, "--device", url, "--json", str(out)])
    assert r.exit_code == 0, r.output
    rep = json.loads(out.read_text())
    assert rep["devices"]["zns"] == url
    (run,) = [x for x in rep["runs"] if x["name"] == "store-on-zns"]
    assert run["swap_out_bytes"] > 0 and run["loss"] == rep["runs"][0]["loss"]
    return rep, run
