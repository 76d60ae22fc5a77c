"""Build NVMeVirt (github.com/snu-csl/nvmevirt, GPL-2.0) for the guest kernel, boot the TCG guest of
``emulator/zns_vm.py`` with reserved memory, load it, and run a command against its namespace.

NVMeVirt is a virtual NVMe device implemented as a Linux kernel module, with its own timing models:
a WD ZN540 zoned device (``--device zns``) and a Samsung 970 PRO conventional SSD (``--device ssd``).
The project never holds its code: it takes the path of a checkout (``NVMEVIRT_SRC``), copies it into a
throw-away build folder outside the repository (``NVMEVIRT_BUILD``, default ``$TMPDIR/nvmevirt-build``)
and builds there with make variables:

* the device type: ``CONFIG_NVMEVIRT_NVM= CONFIG_NVMEVIRT_ZNS=y`` (or ``..._SSD=y``) on the make
  command line, which overrides the ``CONFIG_NVMEVIRT_NVM := y`` default of its ``Kbuild``;

Two choices are not reachable by a make variable; for them one line of the *copy* is rewritten:

* ``PERF_DEBUG``: io.c ``#undef``s it (so ``-DPERF_DEBUG`` cannot reach it); the copy's line becomes
  ``#define PERF_DEBUG``. NVMeVirt then ``trace_printk``s, for every completed command, its start
  time and the *modeled* completion time (``nsecs_target``) relative to it (see ``parse_trace``);
* the ZN540 zone size (upstream 2 GiB, so 2 zones need 4 GiB of reserved memory): with
  ``--zone-size`` the ``#define ZONE_SIZE`` line of the WD_ZN540 block of ``ssd_config.h`` is
  rewritten. Its timing model does not depend on the zone size (every zone is striped over all 32
  dies), only the number of zones does.

One opt-in edit fixes a bug instead (``--fix-zone-buffer-leak``, off by default): the zone reset
also refills the zone's write buffer (``refill_zone_buffer_on_reset``).

By hand (from the repository root)::

    NVMEVIRT_SRC=/path/to/nvmevirt python -m emulator.nvmevirt --check
    NVMEVIRT_SRC=/path/to/nvmevirt python -m emulator.nvmevirt --device zns -- 'blkzone report $NVMEVIRT_DEV | head'
    NVMEVIRT_SRC=/path/to/nvmevirt python -m emulator.nvmevirt --device ssd -- 'fio --filename=$NVMEVIRT_DEV ...'

In the guest the command sees ``NVMEVIRT_DEV`` (the namespace's block device) and, for a
``PERF_DEBUG`` build, ``NVMEVIRT_TRACE`` (the ftrace buffer holding the per-command timings).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from emulator.zns_vm import MiB, GuestResult, ZnsVmConfig, _size, find_kernel, missing, run_in_guest

# q35 keeps guest RAM below 4 GiB only up to 2.75 GiB (above it, low RAM stops at 2 GiB and the rest
# moves above 4 GiB); we keep everything low so one physical range [start, start + size) is RAM.
Q35_LOW_RAM_MIB = 2816


@dataclass(frozen=True)
class DeviceType:
    """One NVMeVirt build target: its Kbuild variable and its ``BASE_SSD`` preset in ssd_config.h."""

    kbuild_var: str
    base_ssd: str
    zoned: bool


DEVICES = {
    "zns": DeviceType("CONFIG_NVMEVIRT_ZNS", "WD_ZN540", True),
    "ssd": DeviceType("CONFIG_NVMEVIRT_SSD", "SAMSUNG_970PRO", False),
}
KBUILD_VARS = ("CONFIG_NVMEVIRT_NVM", "CONFIG_NVMEVIRT_SSD", "CONFIG_NVMEVIRT_ZNS", "CONFIG_NVMEVIRT_KV")


class NvmevirtError(Exception):
    """A one-line reason the build or the run cannot go on (the CLI prints it and exits 2)."""


@dataclass
class NvmevirtConfig:
    """The device and the guest. Sizes in MiB. NVMeVirt stores data in the guest's physical range
    [memmap_start, memmap_start + memmap_size), reserved with ``memmap=`` on the kernel command line;
    its namespace gets ``memmap_size - 1 MiB`` (one MiB holds its queues). ``cpus`` is the guest's vCPU
    count; ``nvmev_cpus`` the guest CPUs of NVMeVirt's dispatcher (first) and I/O workers (the rest)."""

    device: str = "zns"
    storage_mib: int = 1024
    memmap_start_mib: int = 1024
    memory_mib: int = 2560
    cpus: int = 3
    nvmev_cpus: tuple[int, ...] = (1, 2)
    zone_size_mib: int | None = 64       # ZNS only; None: upstream's 2 GiB
    perf_debug: bool = True
    fix_zone_buffer_leak: bool = False   # ZNS only: see refill_zone_buffer_on_reset
    cpu_model: str = "Nehalem"
    kernel: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def memmap_size_mib(self) -> int:
        return self.storage_mib + 1

    def validate(self) -> None:
        if self.device not in DEVICES:
            raise NvmevirtError(f"unknown device {self.device!r} (one of {', '.join(DEVICES)})")
        if DEVICES[self.device].zoned:
            zone = self.zone_size_mib or 2048
            if zone & (zone - 1):
                raise NvmevirtError(f"zone size {zone} MiB: Linux needs a power of two")
            if zone % 32:
                raise NvmevirtError(f"zone size {zone} MiB: the ZN540 stripes a zone over 32 dies; use a multiple of 32 MiB")
            if self.storage_mib % zone or self.storage_mib < zone:
                raise NvmevirtError(f"storage {self.storage_mib} MiB is not a whole number of {zone} MiB zones "
                                    "(NVMeVirt BUG_ON()s on a remainder)")
        end = self.memmap_start_mib + self.memmap_size_mib
        if end > self.memory_mib:
            raise NvmevirtError(f"memmap {self.memmap_size_mib}M at {self.memmap_start_mib}M ends past guest RAM "
                                f"({self.memory_mib} MiB)")
        if self.memory_mib > Q35_LOW_RAM_MIB:
            raise NvmevirtError(f"guest RAM {self.memory_mib} MiB > {Q35_LOW_RAM_MIB} MiB: q35 splits it around the "
                                "4 GiB hole; keep it below")
        if self.memory_mib - self.memmap_size_mib < 768:
            raise NvmevirtError(f"guest keeps {self.memory_mib - self.memmap_size_mib} MiB after the reservation; "
                                "give it at least 768 MiB")
        if len(self.nvmev_cpus) < 2:
            raise NvmevirtError("NVMeVirt needs at least two CPUs (dispatcher, I/O worker)")
        if max(self.nvmev_cpus) >= self.cpus:
            raise NvmevirtError(f"nvmev cpus {self.nvmev_cpus} not all below the guest's {self.cpus} vCPUs")

    def kernel_args(self) -> list[str]:
        """The guest kernel command line: reserve the device's memory (``$`` is literal: vng hands
        QEMU an argv, no shell in between)."""
        return [f"memmap={self.memmap_size_mib}M${self.memmap_start_mib}M"]

    def insmod_args(self) -> list[str]:
        return [f"memmap_start={self.memmap_start_mib}M", f"memmap_size={self.memmap_size_mib}M",
                "cpus=" + ",".join(str(c) for c in self.nvmev_cpus)]

    def vm_config(self) -> ZnsVmConfig:
        return ZnsVmConfig(memory=f"{self.memory_mib}M", cpus=self.cpus, cpu_model=self.cpu_model, kernel=self.kernel,
                           qemu_nvme=False, kernel_args=self.kernel_args())


def kernel_release(kernel: str | None = None) -> str:
    """``6.1.0-57-amd64`` from ``/boot/vmlinuz-6.1.0-57-amd64``."""
    kernel = kernel or find_kernel()
    if not kernel:
        raise NvmevirtError("no kernel in /boot: apt-get install linux-image-amd64")
    name = os.path.basename(kernel)
    if not name.startswith("vmlinuz-"):
        raise NvmevirtError(f"{kernel}: cannot tell its release (expected /boot/vmlinuz-<release>)")
    return name[len("vmlinuz-"):]


def headers_dir(release: str) -> str:
    return f"/lib/modules/{release}/build"


def source_dir(src: str | None = None) -> str:
    src = src or os.environ.get("NVMEVIRT_SRC")
    if not src:
        raise NvmevirtError("NVMEVIRT_SRC is not set: clone github.com/snu-csl/nvmevirt and point it there")
    for f in ("Kbuild", "ssd_config.h", "main.c"):
        if not os.path.isfile(os.path.join(src, f)):
            raise NvmevirtError(f"NVMEVIRT_SRC={src}: not an NVMeVirt checkout (no {f})")
    return os.path.abspath(src)


def make_args(cfg: NvmevirtConfig, release: str, build: str) -> list[str]:
    """``make`` argv building the module of ``cfg.device`` out of tree in ``build``."""
    chosen = DEVICES[cfg.device].kbuild_var
    argv = ["make", "-C", headers_dir(release), f"M={build}"]
    argv += [f"{v}=y" if v == chosen else f"{v}=" for v in KBUILD_VARS]
    return argv + ["modules"]


def enable_perf_debug(io_c: str) -> str:
    """io.c with its ``#undef PERF_DEBUG`` turned into ``#define PERF_DEBUG``."""
    if io_c.count("\n#undef PERF_DEBUG\n") != 1:
        raise NvmevirtError("io.c: no single '#undef PERF_DEBUG' line: this NVMeVirt version is not supported")
    return io_c.replace("\n#undef PERF_DEBUG\n", "\n#define PERF_DEBUG\n")


def set_zone_size(config_h: str, zone_size_mib: int) -> str:
    """ssd_config.h with the WD_ZN540 block's ``#define ZONE_SIZE`` set to ``zone_size_mib``."""
    m = re.search(r"#elif \(BASE_SSD == WD_ZN540\)(.*?)(?=\n#elif|\n#endif)", config_h, re.S)
    if not m:
        raise NvmevirtError("ssd_config.h has no WD_ZN540 block: this NVMeVirt version is not supported")
    block, n = re.subn(r"\n#define ZONE_SIZE [^\n]*", f"\n#define ZONE_SIZE MB({zone_size_mib}ULL)", m.group(1))
    if n != 1:
        raise NvmevirtError(f"ssd_config.h: {n} ZONE_SIZE defines in the WD_ZN540 block (expected 1)")
    return config_h[:m.start(1)] + block + config_h[m.end(1):]


ZRWA_REFILL = "\tif (zns_ftl->zp.zrwa_buffer_size)\n\t\tbuffer_refill(&zns_ftl->zrwa_buffer[zid]);\n"
ZONE_WB_REFILL = "\tif (zns_ftl->zp.zone_wb_size)\n\t\tbuffer_refill(&zns_ftl->zone_write_buffer[zid]);\n"


def refill_zone_buffer_on_reset(mgmt_send_c: str) -> str:
    """zns_mgmt_send.c whose zone reset also refills the zone's write buffer (opt-in work-around).

    Upstream's reset refills only the ZRWA buffer. A zone's write buffer (ZN540: 10 one-shot pages of
    96 KiB) gets its bytes back only when a whole one-shot page (or the zone's end) is programmed, so
    every reset of a zone written to a length that is not a multiple of 96 KiB loses the remainder for
    good; once less than a write is left, that zone's writes are retried forever by the dispatcher and
    the host's NVMe driver times out (docs/nvmevirt.md)."""
    if mgmt_send_c.count(ZRWA_REFILL) != 1:
        raise NvmevirtError("zns_mgmt_send.c: no single ZRWA buffer refill in the zone reset: version not supported")
    return mgmt_send_c.replace(ZRWA_REFILL, ZRWA_REFILL + ZONE_WB_REFILL)


def _src_rev(src: str) -> str:
    try:
        return subprocess.run(["git", "-C", src, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "norev"


def build_key(cfg: NvmevirtConfig, release: str, rev: str) -> str:
    zone = f"-z{cfg.zone_size_mib}M" if DEVICES[cfg.device].zoned and cfg.zone_size_mib else ""
    fix = "-wbfix" if DEVICES[cfg.device].zoned and cfg.fix_zone_buffer_leak else ""
    return f"{rev}-{release}-{cfg.device}{zone}{'-perf' if cfg.perf_debug else ''}{fix}"


def build(cfg: NvmevirtConfig, src: str | None = None, out: str | None = None, quiet: bool = True) -> str:
    """Build ``nvmev.ko`` for the guest kernel; returns its path. Reuses a finished build of the same
    source revision and configuration."""
    cfg.validate()
    src = source_dir(src)
    release = kernel_release(cfg.kernel)
    if not os.path.isdir(headers_dir(release)):
        raise NvmevirtError(f"no headers for {release}: apt-get install linux-headers-{release}")
    root = out or os.environ.get("NVMEVIRT_BUILD") or os.path.join(tempfile.gettempdir(), "nvmevirt-build")
    dest = os.path.join(os.path.abspath(root), build_key(cfg, release, _src_rev(src)))
    ko = os.path.join(dest, "nvmev.ko")
    if os.path.exists(ko):
        return ko
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".git", "*.o", "*.ko", "*.mod*", "*.cmd"))
    edits = []
    if DEVICES[cfg.device].zoned and cfg.zone_size_mib:
        edits.append(("ssd_config.h", lambda t: set_zone_size(t, cfg.zone_size_mib)))
    if cfg.perf_debug:
        edits.append(("io.c", enable_perf_debug))
    if DEVICES[cfg.device].zoned and cfg.fix_zone_buffer_leak:
        edits.append(("zns_mgmt_send.c", refill_zone_buffer_on_reset))
    for name, edit in edits:
        path = os.path.join(dest, name)
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(edit(text))
    res = subprocess.run(make_args(cfg, release, dest) + ["-j2"], capture_output=True, text=True)
    if res.returncode or not os.path.exists(ko):
        tail = (res.stdout + res.stderr).strip().splitlines()[-15:]
        raise NvmevirtError("make failed: " + " | ".join(tail))
    if not quiet:
        print(f"[nvmevirt] built {ko}", file=sys.stderr)
    return ko


def guest_script(ko: str, cfg: NvmevirtConfig, command: str) -> str:
    """The guest shell command: load the module, wait for its namespace, run ``command`` with
    ``NVMEVIRT_DEV`` (and ``NVMEVIRT_TRACE``) set, and print the module's kernel messages on failure."""
    lines = []
    if cfg.perf_debug:
        lines += ["mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing",
                  "echo 16384 > /sys/kernel/tracing/buffer_size_kb",
                  "export NVMEVIRT_TRACE=/sys/kernel/tracing/trace"]
    lines += [f"insmod {shlex.quote(ko)} {' '.join(cfg.insmod_args())} || {{ echo 'nvmevirt: insmod failed'; "
              "dmesg | tail -40; exit 3; }",
              "for i in $(seq 120); do [ -b /dev/nvme0n1 ] && break; sleep 0.5; done",
              "[ -b /dev/nvme0n1 ] || { echo 'nvmevirt: no /dev/nvme0n1 after insmod'; dmesg | grep -i -E 'nvme' | tail -40; exit 4; }",
              "export NVMEVIRT_DEV=/dev/nvme0n1",
              "dmesg | grep -E 'NVMeVirt: (Version|Storage|Total|zone_size|ns )' ",
              command]
    return "\n".join(lines)


def run(command: str, cfg: NvmevirtConfig | None = None, src: str | None = None, workdir: str | None = None,
        timeout: float = 1800, echo: bool = False, cwd: str | None = None) -> GuestResult:
    """Build (or reuse) the module, boot the guest with the reservation, load it, run ``command``."""
    cfg = cfg or NvmevirtConfig()
    ko = build(cfg, src)
    workdir = os.path.abspath(workdir or tempfile.mkdtemp(prefix="nvmevirt-vm-"))
    os.makedirs(workdir, exist_ok=True)
    script = os.path.join(workdir, "nvmevirt-guest.sh")
    with open(script, "w") as f:
        f.write(guest_script(ko, cfg, command) + "\n")
    return run_in_guest(f"bash {shlex.quote(script)}", cfg.vm_config(), workdir, timeout=timeout,
                        fresh_images=False, cwd=cwd, echo=echo)


def parse_trace(text: str, internal: bool = False) -> list[tuple[int, int, int]]:
    """Per completed host command, from NVMeVirt's ``PERF_DEBUG`` trace lines (``trace_printk`` in its
    I/O worker): (start, modeled latency, completion-queue fill latency) in guest nanoseconds.

    The line carries ``nsecs_start`` (the guest clock when the dispatcher fetched the command) and,
    relative to it: enqueue, copy start, copy done, CQ filled, and ``nsecs_target`` (the modeled
    completion). The modeled latency is ``nsecs_target - nsecs_start``; the CQ-fill latency is when
    the worker really posted the completion (never before the target; later when TCG is late).
    The worker also traces its internal operations (a write buffer's release when the NAND program
    behind an early-completed write ends): their enqueue offset is exactly 0 (start and enqueue are
    one clock read); they are left out unless ``internal``."""
    out = []
    for m in re.finditer(r"nvmev_io_worker.*?:\s+(\d+) (\d+) (\d+) (\d+) (\d+) (\d+)\s*$", text, re.M):
        start, enq, _cs, _cd, filled, target = (int(g) for g in m.groups())
        if (enq == 0) == internal:
            out.append((start, target, filled))
    return out


def check(src: str | None = None, kernel: str | None = None) -> list[str]:
    """What is missing to build and run (empty when nothing)."""
    gone = missing()
    try:
        source_dir(src)
    except NvmevirtError as e:
        gone.append(str(e))
    try:
        release = kernel_release(kernel)
        if not os.path.isdir(headers_dir(release)):
            gone.append(f"headers for {release} (apt-get install linux-headers-{release})")
    except NvmevirtError as e:
        gone.append(str(e))
    if not shutil.which("make") or not shutil.which("gcc"):
        gone.append("make and gcc (apt-get install build-essential)")
    return gone


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulator.nvmevirt", description=__doc__.split("\n\n")[0])
    d = NvmevirtConfig()
    ap.add_argument("--src", default=None, help="NVMeVirt checkout [default: $NVMEVIRT_SRC]")
    ap.add_argument("--device", choices=sorted(DEVICES), default=d.device)
    ap.add_argument("--storage", type=_size, default=d.storage_mib * MiB, help="namespace size [default: 1GiB]")
    ap.add_argument("--zone-size", type=_size, default=d.zone_size_mib * MiB,
                    help="ZN540 zone size (power of two, multiple of 32 MiB; 0 = upstream 2 GiB) [default: 64MiB]")
    ap.add_argument("--memmap-start", type=_size, default=d.memmap_start_mib * MiB)
    ap.add_argument("--memory", type=_size, default=d.memory_mib * MiB, help="guest RAM [default: 2560MiB]")
    ap.add_argument("--cpus", type=int, default=d.cpus, help="guest vCPUs")
    ap.add_argument("--nvmev-cpus", default=",".join(map(str, d.nvmev_cpus)),
                    help="guest CPUs of NVMeVirt's dispatcher and I/O workers [default: %(default)s]")
    ap.add_argument("--no-perf-debug", action="store_true", help="build without PERF_DEBUG (no per-command timing trace)")
    ap.add_argument("--fix-zone-buffer-leak", action="store_true",
                    help="ZNS: the copy's zone reset also refills the zone's write buffer (upstream leaks it)")
    ap.add_argument("--kernel", default=None)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--check", action="store_true", help="only say what is missing")
    ap.add_argument("--build-only", action="store_true", help="build the module, print its path")
    ap.add_argument("command", nargs="*", help="shell command in the guest [default: identify the namespace]")
    a = ap.parse_args(argv)
    if a.check:
        gone = check(a.src, a.kernel)
        for m in gone:
            print(f"missing: {m}", file=sys.stderr)
        return 1 if gone else 0
    cfg = NvmevirtConfig(device=a.device, storage_mib=a.storage // MiB, memmap_start_mib=a.memmap_start // MiB,
                         memory_mib=a.memory // MiB, cpus=a.cpus,
                         nvmev_cpus=tuple(int(c) for c in a.nvmev_cpus.split(",")),
                         zone_size_mib=(a.zone_size // MiB) or None, perf_debug=not a.no_perf_debug, kernel=a.kernel,
                         fix_zone_buffer_leak=a.fix_zone_buffer_leak)
    try:
        if a.build_only:
            print(build(cfg, a.src, quiet=False))
            return 0
        zoned = DEVICES[cfg.device].zoned
        default = "blkzone report $NVMEVIRT_DEV | head -3; nvme zns id-ns $NVMEVIRT_DEV" if zoned else "nvme id-ns $NVMEVIRT_DEV | head"
        res = run(" ".join(a.command) or default, cfg, a.src, a.workdir, timeout=a.timeout, echo=True)
    except NvmevirtError as e:
        print(f"nvmevirt: {e}", file=sys.stderr)
        return 2
    print(f"[nvmevirt] exit {res.returncode} after {res.boot_and_run_s:.0f} s (workdir {res.workdir})", file=sys.stderr)
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
