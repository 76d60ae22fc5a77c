"""``zswap-host schemes``: what the device registry holds, as text and JSON."""

import json

from click.testing import CliRunner

from zswap_host.cli import main
from zswap_host.devices.url import register_scheme, unregister_scheme


def test_lists_the_built_in_schemes_with_their_parameters():
    r = CliRunner().invoke(main, ["schemes", "--json"])
    assert r.exit_code == 0, r.output
    rows = {x["name"]: x for x in json.loads(r.output)}
    assert {"emu", "emu-conv", "file", "block"} <= set(rows)
    assert rows["emu"]["form"] == "emu://" and rows["emu"]["params"]["zone_size"] == "size"
    assert rows["emu-conv"]["params"]["op"] == "fraction" and rows["file"]["form"] == "PATH"


def test_a_scheme_whose_module_is_missing_shows_its_install_hint():
    register_scheme("ocssd-test", "no_such_module_here:Scheme", install_hint="pip install ocssd-thing")
    try:
        r = CliRunner().invoke(main, ["schemes"])
    finally:
        unregister_scheme("ocssd-test")
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("ocssd-test://"))
    assert "unavailable: pip install ocssd-thing" in line
