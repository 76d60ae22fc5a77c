"""tests/support/system_packages.py: which Debian packages are missing, how they are installed, what is said and
skipped where they cannot be, and the rebuilds after installing. dpkg-query, apt-get and pip are fakes
here (FakeSystem records every command); one test runs pytest itself with fake dpkg-query and apt-get
first on PATH, to see the session-start hook run them."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import system_packages as sp

ROOT = Path(__file__).resolve().parents[2]


class FakeSystem:
    """dpkg-query answers from ``installed`` (name -> status); apt-get install adds to it; every call is
    recorded with its keyword arguments."""

    def __init__(self, installed=(), statuses=None, fail=None, install_works=True):
        self.status = {p: "install ok installed" for p in installed}
        self.status.update(statuses or {})
        self.fail = fail                   # the command word ("update", "install", "pip") that fails
        self.install_works = install_works
        self.calls: list[tuple[list[str], dict]] = []

    def __call__(self, cmd, **kw):
        self.calls.append((list(cmd), kw))
        if cmd[0] == "dpkg-query":
            lines = [f"{p}:amd64\t{self.status[p]}" for p in cmd[3:] if p in self.status]
            unknown = [p for p in cmd[3:] if p not in self.status]
            return subprocess.CompletedProcess(cmd, 1 if unknown else 0, "\n".join(lines) + "\n",
                                               "".join(f"dpkg-query: no packages found matching {p}\n"
                                                       for p in unknown))
        word = cmd[1] if cmd[0] == "apt-get" else "pip"
        if word == self.fail:
            return subprocess.CompletedProcess(cmd, 100, "", "E: Could not get lock /var/lib/apt/lists/lock\n")
        if cmd[:2] == ["apt-get", "install"] and self.install_works:
            for p in cmd[4:]:
                self.status[p] = "install ok installed"
        return subprocess.CompletedProcess(cmd, 0, "", "")

    def commands(self, first=None):
        return [c for c, _ in self.calls if first is None or c[0] == first]


ROOT_WITH_APT = dict(env={}, euid=0, which=lambda name: f"/usr/bin/{name}", writable=lambda path: True)


def install(fake, packages=sp.PACKAGES, **kw):
    said = []
    out = sp.install_missing(packages, run=fake, say=said.append, **{**ROOT_WITH_APT, **kw})
    return out, said


# ---------------------------------------------------------------- which are missing

def test_missing_is_what_dpkg_does_not_list_installed_in_the_given_order():
    fake = FakeSystem(installed=["gcc", "swig", "busybox-static"],
                      statuses={"fio": "deinstall ok config-files",        # removed, its configuration left
                                "qemu-system-x86": "install ok half-configured"})
    assert sp.missing(["fio", "gcc", "qemu-system-x86", "liburing-dev", "swig", "busybox-static"], run=fake) \
        == ["fio", "qemu-system-x86", "liburing-dev"]
    assert len(fake.calls) == 1                                              # one dpkg-query call for all
    cmd = fake.calls[0][0]
    assert cmd[:3] == ["dpkg-query", "-W", "-f=${Package}\t${Status}\n"]


def test_every_package_the_suite_needs_is_checked():
    fake = FakeSystem()
    assert sp.missing(run=fake) == list(sp.PACKAGES)
    assert set(sp.PACKAGES) == {"gcc", "python3-dev", "swig", "liburing-dev", "fio", "qemu-system-x86",
                                "linux-image-amd64", "busybox-static"}


def test_without_dpkg_query_nothing_is_known_missing():
    def no_dpkg(cmd, **kw):
        raise FileNotFoundError(cmd[0])

    assert sp.missing(["swig"], run=no_dpkg) == []


# ---------------------------------------------------------------- installing

def test_root_with_apt_installs_the_missing_ones_quietly_and_says_so_once():
    fake = FakeSystem(installed=["gcc", "python3-dev", "fio"])
    out, said = install(fake)
    gone = [p for p in sp.PACKAGES if p not in ("gcc", "python3-dev", "fio")]
    assert out.missing == gone and out.installed == gone and out.reason is None
    apt = fake.commands("apt-get")
    assert apt == [["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *gone]]
    for cmd, kw in fake.calls:
        if cmd[0] == "apt-get":
            assert kw["env"]["DEBIAN_FRONTEND"] == "noninteractive"
            assert kw["stdin"] == subprocess.DEVNULL and kw["capture_output"]       # no prompt, no noise
    assert len(said) == 1 and said[0].startswith("installing Debian packages: " + " ".join(gone))
    assert "first run only" in said[0]


def test_nothing_missing_runs_only_dpkg_query_and_says_nothing():
    fake = FakeSystem(installed=sp.PACKAGES)
    out, said = install(fake)
    assert out.missing == [] and out.installed == [] and said == []
    assert [c[0] for c in fake.commands()] == ["dpkg-query"]
    assert sp.skip_reason("swig", "fio", run=fake) is None


def test_not_root_installs_nothing_and_the_skip_reason_names_the_package():
    fake = FakeSystem(installed=[p for p in sp.PACKAGES if p != "swig"])
    out, said = install(fake, euid=1000)
    assert fake.commands("apt-get") == []
    assert out.missing == ["swig"] and out.installed == [] and out.reason == "not root"
    assert len(said) == 1 and "swig" in said[0] and "not root" in said[0] and "apt-get install swig" in said[0]
    reason = sp.skip_reason("swig", "gcc", run=fake)
    assert reason.startswith("needs the Debian package swig (apt-get install swig")
    assert "gcc" not in reason


def test_skip_reason_names_every_missing_package():
    fake = FakeSystem(installed=["gcc"])
    reason = sp.skip_reason("qemu-system-x86", "gcc", "busybox-static", run=fake)
    assert "packages qemu-system-x86, busybox-static" in reason
    assert "apt-get install qemu-system-x86 busybox-static" in reason and "ZSWAP_NO_APT=1" in reason


@pytest.mark.parametrize("value, installs", [("1", False), ("yes", False), ("0", True), ("", True)])
def test_zswap_no_apt_turns_the_install_off(value, installs):
    fake = FakeSystem(installed=["gcc"])
    out, said = install(fake, env={"ZSWAP_NO_APT": value})
    assert bool(fake.commands("apt-get")) == installs
    if not installs:
        assert out.reason == f"ZSWAP_NO_APT={value}" and "ZSWAP_NO_APT" in said[0] and "swig" in said[0]


def test_the_opt_out_wins_over_root_and_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("ZSWAP_NO_APT", "1")
    assert sp.why_not_install(euid=0, which=lambda n: "/usr/bin/apt-get") == "ZSWAP_NO_APT=1"
    monkeypatch.delenv("ZSWAP_NO_APT")
    assert sp.why_not_install(euid=0, which=lambda n: "/usr/bin/apt-get", writable=lambda p: True) is None


def test_no_apt_get_or_a_read_only_root_installs_nothing():
    fake = FakeSystem()
    out, _ = install(fake, which=lambda name: None)
    assert out.reason == "no apt-get" and fake.commands("apt-get") == []
    out, _ = install(fake, writable=lambda path: path != "/var/lib/dpkg")   # the QEMU guest's root
    assert out.reason == "read-only /var/lib/dpkg" and fake.commands("apt-get") == []


def test_a_failed_apt_get_update_stops_there_and_says_why():
    fake = FakeSystem(installed=["gcc"], fail="update")
    out, said = install(fake, packages=["gcc", "swig"])
    assert fake.commands("apt-get") == [["apt-get", "update", "-qq"]]
    assert out.installed == [] and "exited 100" in out.reason and "Could not get lock" in out.reason
    assert said[-1].startswith("could not install swig (apt-get update exited 100")


def test_packages_apt_get_left_out_are_reported():
    fake = FakeSystem(installed=["gcc"], install_works=False)
    out, said = install(fake, packages=["gcc", "fio"])
    assert out.installed == [] and out.reason and said[-1].startswith("still missing after apt-get: fio")


# ---------------------------------------------------------------- after installing

PURELIB_WRITABLE = dict(writable=lambda path: True)


def fix(fake, just_installed=(), swig_missing=False, has_module=False, loads=False, **kw):
    said = []
    ran = sp.fix_libnvme(just_installed, run=fake, say=said.append, python="/venv/bin/python",
                         swig_missing=lambda: swig_missing, has_module=lambda: has_module,
                         loads=lambda: loads, **{**PURELIB_WRITABLE, **kw})
    return ran, said


def test_libnvme_built_without_swig_is_rebuilt_once_swig_is_here():
    fake = FakeSystem()
    ran, said = fix(fake, just_installed=["swig", "fio"], has_module=True, loads=False)
    assert ran and len(said) == 1 and "libnvme==1.16.2" in said[0]
    assert fake.commands() == [
        ["/venv/bin/python", "-m", "pip", "cache", "remove", "libnvme"],
        ["/venv/bin/python", "-m", "pip", "install", "-q", "--no-cache-dir", "--force-reinstall", "--no-deps",
         "libnvme==1.16.2"]]
    ran, _ = fix(FakeSystem(), has_module=False, loads=False)             # swig was already here: same
    assert ran


@pytest.mark.parametrize("case", [
    dict(has_module=True, loads=False),                       # swig not just installed, the module is there
    dict(just_installed=["swig"], loads=True),                # it loads: nothing to do
    dict(just_installed=["swig"], loads=None),                # zswap_host's loader does not import: can't tell
    dict(has_module=False, swig_missing=True),                # no swig: a rebuild would lack the module again
    dict(has_module=False, writable=lambda path: False),      # read-only venv (the QEMU guest)
])
def test_libnvme_is_left_alone(case):
    fake = FakeSystem()
    ran, said = fix(fake, **case)
    assert not ran and said == [] and fake.calls == []


def test_a_failed_libnvme_rebuild_is_one_line_not_an_error():
    fake = FakeSystem(fail="pip")
    ran, said = fix(fake, just_installed=["swig"])
    assert ran and said[-1].startswith("rebuilding libnvme==1.16.2 failed (exit 100")


def uring(fake, tmp_path, script_text='MODULES = {"zswap_host._uring": []}', header=True, found=False,
          writable=True):
    script = tmp_path / "build_native.py"
    script.write_text(script_text)
    h = tmp_path / "liburing.h"
    if header:
        h.write_text("")
    said = []
    ran = sp.build_uring(run=fake, say=said.append, python="/venv/bin/python", header=str(h), script=script,
                         found=lambda module: found, writable=lambda path: writable)
    return ran, said, script


def test_uring_extension_is_built_in_place_once_liburing_h_is_here(tmp_path):
    fake = FakeSystem()
    ran, said, script = uring(fake, tmp_path)
    assert ran and said == ["building zswap_host._uring in place (liburing.h is here now)"]
    (cmd, kw), = fake.calls
    assert cmd == ["/venv/bin/python", str(script), "zswap_host._uring"] and kw["cwd"] == str(ROOT)


@pytest.mark.parametrize("case", [dict(found=True), dict(found=None), dict(header=False),
                                  dict(script_text="MODULES = {}"), dict(writable=False)])
def test_uring_extension_is_left_alone(tmp_path, case):
    fake = FakeSystem()
    ran, said, _ = uring(fake, tmp_path, **case)
    assert not ran and said == [] and fake.calls == []


def test_ensure_never_fails_the_session(monkeypatch):
    def broken(*a, **kw):
        raise PermissionError("dpkg database locked")

    monkeypatch.setattr(sp, "install_missing", broken)
    said = []
    out = sp.ensure(say=said.append)
    assert out.missing == [] and said == ["checking the Debian packages failed: PermissionError: dpkg database locked"]


# ---------------------------------------------------------------- the hook, end to end

def fake_tool(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.mark.skipif(os.geteuid() != 0, reason="the install path runs only as root")
def test_the_test_command_installs_at_session_start(tmp_path):
    """pytest with a dpkg-query that knows nothing and an apt-get that only logs: the session-start hook
    calls apt-get update, then apt-get install of every package, before collecting."""
    bin_dir, log = tmp_path / "bin", tmp_path / "apt.log"
    bin_dir.mkdir()
    fake_tool(bin_dir / "dpkg-query", "exit 1\n")
    fake_tool(bin_dir / "apt-get", f'echo "$DEBIAN_FRONTEND $*" >> {log}\n')
    env = {k: v for k, v in os.environ.items() if k != "ZSWAP_NO_APT"}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
                        "tests/docs/test_readme.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    names = " ".join(sp.PACKAGES)
    assert log.read_text().splitlines() == ["noninteractive update -qq", f"noninteractive install -y -qq {names}"]
    assert f"zswap-host tests: installing Debian packages: {names}" in r.stderr

    log.unlink()
    env["ZSWAP_NO_APT"] = "1"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
                        "tests/docs/test_readme.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300)
    assert r.returncode == 0 and not log.exists()
    assert "not installing them (ZSWAP_NO_APT=1)" in r.stderr
