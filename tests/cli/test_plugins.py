"""User plugins (``zswap_host/plugins.py``, docs/plugins.md): a victim policy in a file outside the
package, loaded with ``--plugin`` by ``sweep`` (in every Ray worker), ``replay`` and ``bench`` (in
their spawned processes); an installed entry point and a module name; the recorded command rerun
as recorded; a failure that cannot change on retry not retried on Ray; bad plugins and unknown
names as one line, exit 2. The commands run as a user runs them: ``zswap-host`` in a subprocess,
from a directory outside the repository."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest
from click.testing import CliRunner

from zswap_host import plugins
from zswap_host.cli import main
from zswap_host.workloads import generate_dlrm_trace

ZSWAP_HOST = os.path.join(os.path.dirname(sys.executable), "zswap-host")

# A policy as a researcher writes it; it leaves a mark per process that imports it (IMPORTS_DIR) and
# per process that calls it (CALLS_DIR), and raises what RAISE names at its first call.
POLICY = '''
import os

import numpy as np

from zswap_host.gc import register_victim_policy


def _mark(env):
    where = os.environ.get(env)
    if where:
        with open(os.path.join(where, str(os.getpid())), "a") as f:
            f.write("x\\n")


_mark("IMPORTS_DIR")


@register_victim_policy("lrw-half")
def lrw_half(table):
    """The least recently written of the zones at most half valid, else the emptiest."""
    _mark("CALLS_DIR")
    if os.environ.get("RAISE"):
        raise {"ValueError": ValueError, "RuntimeError": RuntimeError}[os.environ["RAISE"]]("lrw-half: bad knob")
    if not len(table):
        return None
    half = table.utilization <= 0.5
    pick = np.flatnonzero(half)[np.argmin(table.last_write[half])] if half.any() else np.argmin(table.valid_bytes)
    return int(table.zone[pick])
'''
GRID = ["--placement", "temporal", "--utilisation", "0.95", "--interface", "conventional"]   # GC runs there


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return generate_dlrm_trace(str(tmp_path_factory.mktemp("trace") / "tiny"), "tiny").path


@pytest.fixture
def user(tmp_path):
    """A user's directory outside the repository with the policy file and mark directories."""
    (tmp_path / "lrw.py").write_text(POLICY)
    for d in ("imports", "calls"):
        (tmp_path / d).mkdir()
    return tmp_path


@pytest.fixture(autouse=True)
def clean_plugins(monkeypatch):
    """In-process invocations load plugins into this process: forget them afterwards."""
    monkeypatch.setattr(plugins, "_given", {})
    monkeypatch.delenv(plugins.ENV, raising=False)


def run(args, cwd, **env):
    p = subprocess.Popen([ZSWAP_HOST, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, **{k: str(v) for k, v in env.items()}})
    out, err = p.communicate(timeout=900)
    return p.pid, p.returncode, out, err


def marks(d) -> dict[int, int]:
    return {int(f.name): len(f.read_text().splitlines()) for f in d.iterdir()}


def test_a_policy_file_is_swept_on_ray_in_the_workers_and_the_recorded_command_reruns(trace, user):
    out = user / "out"
    pid, code, stdout, err = run(["sweep", "--plugin", "lrw.py", "--trace", trace, "--victim", "greedy,lrw-half",
                                  *GRID, "--executor", "ray", "--num-cpus", "2", "--out", str(out)], user,
                                 CALLS_DIR=user / "calls", IMPORTS_DIR=user / "imports")
    assert code == 0, err
    assert "lrw-half" in (out / "sweep.csv").read_text()
    called = marks(user / "calls")
    assert called and pid not in called            # the policy ran, in Ray's workers only
    assert pid in marks(user / "imports")           # and the sweep's own process loaded it first
    command = json.loads((out / "sweep.json").read_text())["command"]
    assert f"--plugin {user / 'lrw.py'}" in command   # absolute: it reruns from any directory
    first = (out / "sweep.csv").read_bytes()
    argv = shlex.split(command)
    assert argv[0] == "zswap-host"
    elsewhere = user / "imports"                     # another working directory
    _, code, _, err = run(argv[1:], elsewhere)
    assert code == 0, err
    assert (out / "sweep.csv").read_bytes() == first


def test_an_unknown_victim_without_the_plugin_is_one_line_naming_plugin(trace, tmp_path):
    r = CliRunner().invoke(main, ["sweep", "--trace", trace, "--victim", "greedy,lrw-half", *GRID,
                                  "--executor", "serial", "--out", str(tmp_path / "out")])
    assert r.exit_code == 2
    assert r.output.startswith("zswap-host: error: unknown victim 'lrw-half'; known: cost-benefit, fifo, greedy")
    assert len(r.output.strip().splitlines()) == 1 and "--plugin" in r.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("raised, attempts", [("ValueError", 1), ("RuntimeError", 3)])
def test_on_ray_a_failure_that_cannot_change_is_not_retried(trace, user, raised, attempts):
    _, code, _, err = run(["sweep", "--plugin", str(user / "lrw.py"), "--trace", trace, "--victim", "lrw-half",
                           *GRID, "--executor", "ray", "--num-cpus", "1", "--retries", "2",
                           "--out", str(user / "out")], user, CALLS_DIR=user / "calls", RAISE=raised)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "temporal.lrw-half.u0.95.conventional" in err, err
    assert ("not retried" in err) == (raised == "ValueError") and f"{raised}: lrw-half: bad knob" in err
    assert sum(marks(user / "calls").values()) == attempts   # each attempt ends at the policy's first call


def test_an_entry_point_and_a_module_name_load_without_a_path(trace, tmp_path):
    site = tmp_path / "site"
    (site / "policies_dist-1.0.dist-info").mkdir(parents=True)
    (site / "policies_dist-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: policies-dist\n"
                                                                   "Version: 1.0\n")
    (site / "policies_dist-1.0.dist-info" / "entry_points.txt").write_text(
        "[zswap_host.plugins]\nmine = installed_policies:register\n")
    (site / "installed_policies.py").write_text(
        "from zswap_host.gc import register_victim_policy\nfrom zswap_host.gc.policies import fifo\n\n"
        "def register():\n    register_victim_policy('from-entry-point', fifo)\n")
    (site / "module_policies.py").write_text(POLICY)
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    _, code, stdout, err = run(["sweep", "--plugin", "module_policies", "--trace", trace, "--victim",
                                "from-entry-point,lrw-half,fifo", *GRID, "--executor", "serial",
                                "--out", str(tmp_path / "out")], tmp_path, **env)
    assert code == 0, err
    rows = (tmp_path / "out" / "sweep.csv").read_text().splitlines()
    by_victim = {r.split(",")[1]: r.split(",")[4:] for r in rows[1:]}
    assert set(by_victim) == {"from-entry-point", "lrw-half", "fifo"}
    assert by_victim["from-entry-point"] == by_victim["fifo"]          # the same policy under its new name
    assert "--plugin module_policies" in json.loads((tmp_path / "out" / "sweep.json").read_text())["command"]


def test_replay_and_bench_load_plugins_in_their_spawned_processes(trace, user):
    pid, code, stdout, err = run(["replay", "--plugin", "lrw.py", "--trace", trace, "--runs", "store-on-zns",
                                  "--json", str(user / "replay.json")], user, IMPORTS_DIR=user / "imports")
    assert code == 0, err
    imported = marks(user / "imports")
    assert pid in imported and len(imported) == 2   # the command's process and the run's own
    assert f"--plugin {user / 'lrw.py'}" in json.loads((user / "replay.json").read_text())["command"]
    for f in (user / "imports").iterdir():
        f.unlink()
    pid, code, stdout, err = run(["bench", "--plugin", "lrw.py", "--model", "tiny", "--runs", "store-on-zns",
                                  "--victim", "lrw-half", "--jobs", "2", "--json", str(user / "bench.json")], user,
                                 IMPORTS_DIR=user / "imports", CALLS_DIR=user / "calls")
    assert code == 0, err
    assert json.loads((user / "bench.json").read_text())["victim"] == "lrw-half"
    imported = marks(user / "imports")
    assert pid in imported and len(imported) == 2   # the bench and its worker (the other run's process)


@pytest.mark.parametrize("command", [["bench"], ["sweep", "--trace", "x"], ["replay", "--trace", "x"]])
@pytest.mark.parametrize("plugin, message", [
    ("no_such_plugin_module", "cannot import plugin module 'no_such_plugin_module': no module named"),
    ("missing.py", "missing.py: no such file"),
    ("broken.py", "failed while loading: NameError: name 'undefined_name' is not defined"),
    ("a b", "is neither a module name"),
])
def test_a_plugin_that_does_not_load_is_one_line_exit_2(command, plugin, message, tmp_path, monkeypatch):
    (tmp_path / "broken.py").write_text("x = 1\nundefined_name\n")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, [*command, "--plugin", plugin])
    assert r.exit_code == 2, r.output
    assert len(r.output.strip().splitlines()) == 1 and message in r.output, r.output
    if plugin == "broken.py":
        assert f"({tmp_path / 'broken.py'}:2)" in r.output      # where in the plugin


def test_loading_is_idempotent_and_the_command_line_is_recorded(user, monkeypatch):
    from zswap_host.gc import policies, victim_policies

    monkeypatch.setattr(policies, "_REGISTRY", dict(policies._REGISTRY))     # lrw-half forgotten after
    monkeypatch.setenv("IMPORTS_DIR", str(user / "imports"))
    monkeypatch.chdir(user)
    assert plugins.load_plugins(["lrw.py"]) == [str(user / "lrw.py")]
    assert plugins.load_plugins([str(user / "lrw.py"), "lrw.py"]) == [str(user / "lrw.py")]
    assert sum(marks(user / "imports").values()) == 1           # imported once
    assert os.environ[plugins.ENV] == str(user / "lrw.py")       # for the processes started from here
    assert plugins.command_args() == f" --plugin {user / 'lrw.py'}"
    assert "lrw-half" in victim_policies()
