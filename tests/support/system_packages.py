"""The Debian packages the test suite needs, which of them are missing, and installing them.

README's test command is the whole set-up: tests/conftest.py calls :func:`ensure` at session start,
before collection (tests/qemu/conftest.py decides at collection whether the guest can boot). As root
with apt-get, the first run installs what is missing (one line on stderr, ``apt-get update`` and
``apt-get install``, quiet; about 3 minutes once, a single ``dpkg-query`` call afterwards), then

- rebuilds libnvme (the ``dev`` extra's pin) when pip built it while swig was missing, so it has no
  Python module (maybe from a wheel pip cached then);
- builds ``zswap_host._uring`` in place when liburing.h arrived after pip built the package.

Where it cannot install (``ZSWAP_NO_APT=1``, not root, no apt-get, a read-only root such as the QEMU
guest's) it says so in one line and goes on: each test that needs a missing package skips with
:func:`skip_reason`, which names it. Nothing here fails the session.

``python3 tests/support/system_packages.py`` installs the packages only (no pytest, no venv needed).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Callable, Iterable

ROOT = Path(__file__).resolve().parents[2]

#: Debian package -> what in the suite needs it.
PACKAGES: dict[str, str] = {
    "gcc": "the C compiler for the cffi extensions",
    "python3-dev": "Python's headers for the cffi extensions",
    "swig": "pip builds libnvme's Python module (zswap-host devices) only when swig is there",
    "liburing-dev": "liburing.h for the io_uring engine's extension zswap_host._uring",
    "fio": "the fio-parity test inside the QEMU guest (the guest shares the host's root)",
    "qemu-system-x86": "QEMU, for the guest of tests/qemu",
    "linux-image-amd64": "the guest's kernel (/boot/vmlinuz-*)",
    "busybox-static": "the static busybox of virtme-ng's initramfs",
}

#: The libnvme release of the ``dev`` and ``nvme`` extras (zswap_host.devices.nvme_discovery pins it too).
LIBNVME_REQUIREMENT = "libnvme==1.16.2"
LIBURING_HEADER = "/usr/include/liburing.h"
URING_MODULE = "zswap_host._uring"
PREFIX = "zswap-host tests: "
OPT_OUT = "ZSWAP_NO_APT"

Run = Callable[..., subprocess.CompletedProcess]


def _say(line: str) -> None:
    print(PREFIX + line, file=sys.stderr, flush=True)


def missing(packages: Iterable[str] = PACKAGES, run: Run = subprocess.run) -> list[str]:
    """The packages, in the given order, that dpkg does not list as installed (one dpkg-query call).
    Empty where there is no dpkg-query: not a Debian machine, nothing known to install."""
    packages = list(packages)
    if not packages:
        return []
    try:
        r = run(["dpkg-query", "-W", "-f=${Package}\t${Status}\n", *packages],
                capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return []
    present = set()
    for line in r.stdout.splitlines():   # an unknown package is only a complaint on stderr
        name, _, status = line.partition("\t")
        if status.strip() == "install ok installed":
            present.add(name.split(":", 1)[0])
    return [p for p in packages if p not in present]


def why_not_install(env=None, euid: int | None = None, which: Callable[[str], str | None] = shutil.which,
                    writable: Callable[[str], bool] = lambda p: os.access(p, os.W_OK)) -> str | None:
    """Why this process cannot (or must not) run apt-get; None when it can."""
    env = os.environ if env is None else env
    if env.get(OPT_OUT, "") not in ("", "0"):
        return f"{OPT_OUT}={env[OPT_OUT]}"
    if which("apt-get") is None:
        return "no apt-get"
    if (os.geteuid() if euid is None else euid) != 0:
        return "not root"
    if not writable("/var/lib/dpkg"):
        return "read-only /var/lib/dpkg"
    return None


def install_commands(packages: Iterable[str]) -> list[list[str]]:
    """The apt-get calls that install ``packages`` (run with DEBIAN_FRONTEND=noninteractive)."""
    return [["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]]


def install_hint(packages: Iterable[str]) -> str:
    return "apt-get install " + " ".join(packages)


def skip_reason(*packages: str, run: Run = subprocess.run) -> str | None:
    """The skip reason of a test that needs these Debian packages, naming the missing ones; None when
    all are installed."""
    gone = missing(packages, run=run)
    if not gone:
        return None
    s = "s" if len(gone) > 1 else ""
    return (f"needs the Debian package{s} {', '.join(gone)} ({install_hint(gone)}; README's test command "
            f"installs {'them' if s else 'it'} when run as root, unless {OPT_OUT}=1)")


@dataclass
class Outcome:
    """What :func:`ensure` found and did."""

    missing: list[str] = field(default_factory=list)      # not installed at the start
    installed: list[str] = field(default_factory=list)    # installed by this call
    reason: str | None = None                              # why the missing ones were not installed
    actions: list[str] = field(default_factory=list)      # follow-ups run: "libnvme", "uring"


def install_missing(packages: Iterable[str] = PACKAGES, *, run: Run = subprocess.run,
                    say: Callable[[str], None] = _say, env=None, euid: int | None = None,
                    which: Callable[[str], str | None] = shutil.which,
                    writable: Callable[[str], bool] = lambda p: os.access(p, os.W_OK)) -> Outcome:
    """Install the missing packages with apt-get where this process may; one line on stderr when
    something is missing, whichever way it goes."""
    out = Outcome(missing=missing(packages, run=run))
    if not out.missing:
        return out
    names = " ".join(out.missing)
    out.reason = why_not_install(env=env, euid=euid, which=which, writable=writable)
    if out.reason:
        say(f"missing Debian packages: {names}; not installing them ({out.reason}): the tests that need "
            f"them skip ({install_hint(out.missing)} as root installs them)")
        return out
    say(f"installing Debian packages: {names} (first run only, ~3 min)")
    apt_env = {**(os.environ if env is None else env), "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in install_commands(out.missing):
        r = run(cmd, env=apt_env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            tail = ((r.stderr or "") + (r.stdout or "")).strip().splitlines()[-1:] or ["no output"]
            out.reason = f"{' '.join(cmd[:2])} exited {r.returncode}: {tail[0]}"
            say(f"could not install {names} ({out.reason}): the tests that need them skip")
            return out
    out.installed = [p for p in out.missing if p not in missing(out.missing, run=run)]
    left = [p for p in out.missing if p not in out.installed]
    if left:
        out.reason = "apt-get did not install them"
        say(f"still missing after apt-get: {' '.join(left)}: the tests that need them skip")
    return out


# ---------------------------------------------------------------- after installing

def libnvme_has_module() -> bool | None:
    """Whether the installed libnvme has its compiled Python module; None if libnvme is not installed."""
    try:
        files = importlib.metadata.distribution("libnvme").files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    return any(fnmatch(f.name, "_nvme*.so") for f in files)


def libnvme_loads() -> bool | None:
    """Whether ``load_libnvme()`` works; None if zswap_host's loader itself cannot be imported."""
    try:
        from zswap_host.devices.nvme_discovery import load_libnvme
    except Exception:
        return None
    try:
        load_libnvme()
        return True
    except Exception:
        return False


def importable(module: str) -> bool | None:
    """Whether ``module`` can be found; None if its package cannot be imported."""
    try:
        return importlib.util.find_spec(module) is not None
    except Exception:
        return None


def _writable(path: str) -> bool:
    return os.access(path, os.W_OK)


def _fail_line(r: subprocess.CompletedProcess) -> str:
    tail = ((r.stderr or "") + (r.stdout or "")).strip().splitlines()[-1:] or ["no output"]
    return f"exit {r.returncode}: {tail[0]}"


def fix_libnvme(just_installed: Iterable[str], *, run: Run = subprocess.run, say: Callable[[str], None] = _say,
                python: str = sys.executable, swig_missing: Callable[[], bool] = lambda: bool(missing(["swig"])),
                has_module: Callable[[], bool | None] = libnvme_has_module,
                loads: Callable[[], bool | None] = libnvme_loads,
                writable: Callable[[str], bool] = _writable) -> bool:
    """Rebuild libnvme once when pip built it without swig and swig is here now. True if it ran."""
    if not ("swig" in just_installed or has_module() is False):
        return False
    if swig_missing() or not writable(sysconfig.get_paths()["purelib"]) or loads() is not False:
        return False
    say(f"rebuilding {LIBNVME_REQUIREMENT} with its Python module (pip built it while swig was missing)")
    # a wheel pip cached from that build would come back in the next venv: drop it (no cache: no error)
    run([python, "-m", "pip", "cache", "remove", "libnvme"], capture_output=True, text=True,
        stdin=subprocess.DEVNULL)
    r = run([python, "-m", "pip", "install", "-q", "--no-cache-dir", "--force-reinstall", "--no-deps",
             LIBNVME_REQUIREMENT], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        say(f"rebuilding {LIBNVME_REQUIREMENT} failed ({_fail_line(r)}): the libnvme tests skip")
    importlib.invalidate_caches()
    return True


def build_uring(*, run: Run = subprocess.run, say: Callable[[str], None] = _say, python: str = sys.executable,
                header: str = LIBURING_HEADER, script: Path = ROOT / "native" / "build_native.py",
                found: Callable[[str], bool | None] = importable,
                writable: Callable[[str], bool] = _writable) -> bool:
    """Build zswap_host._uring in place when liburing.h is here but the module is not. True if it ran."""
    if found(URING_MODULE) is not False or not os.path.exists(header):
        return False
    try:
        if f'"{URING_MODULE}"' not in script.read_text():   # a build script that does not know the module
            return False
    except OSError:
        return False
    if not writable(str(ROOT / "zswap_host")):
        return False
    say(f"building {URING_MODULE} in place (liburing.h is here now)")
    r = run([python, str(script), URING_MODULE], cwd=str(ROOT), capture_output=True, text=True,
            stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        say(f"building {URING_MODULE} failed ({_fail_line(r)})")
    importlib.invalidate_caches()
    return True


def ensure(packages: Iterable[str] = PACKAGES, *, say: Callable[[str], None] = _say) -> Outcome:
    """Install what is missing, then the follow-ups; never raises (a failure is one line on stderr)."""
    try:
        out = install_missing(packages, say=say)
        if fix_libnvme(out.installed, say=say):
            out.actions.append("libnvme")
        if build_uring(say=say):
            out.actions.append("uring")
        return out
    except Exception as e:   # the suite still runs; what is missing makes its tests skip
        say(f"checking the Debian packages failed: {type(e).__name__}: {e}")
        return Outcome()


if __name__ == "__main__":
    result = install_missing()
    sys.exit(1 if result.installed != result.missing else 0)   # 1: something is still missing
