"""Boot the packaged Debian kernel under QEMU (TCG) with an NVMe controller whose namespace 1 is
conventional and namespace 2 is zoned, run a command in the guest, return its exit status and output.

The guest shares the host's root file system read-only (virtme-ng), so the checkout, its venv and
its built extension are all there; ``workdir`` is shared writable (the backing images live there too,
and the guest can leave results in it).

By hand (from the repository root)::

    python -m emulator.zns_vm -- 'blkzone report /dev/nvme0n2 | head'
    python -m emulator.zns_vm --zones 32 --zone-size 8MiB --zone-capacity 6MiB -- 'nvme zns id-ns /dev/nvme0n2'
    python -m emulator.zns_vm --check          # say what is missing to boot, exit 0 if nothing

From Python::

    from emulator.zns_vm import ZnsVmConfig, run_in_guest
    res = run_in_guest("cat /sys/block/nvme0n2/queue/nr_zones", ZnsVmConfig())
    res.returncode, res.output

Needs ``qemu-system-x86_64`` (Debian qemu-system-x86), a kernel in /boot (linux-image-amd64),
``vng`` (pip install virtme-ng) and a static busybox (busybox-static) for virtme's initramfs.
KVM is not used (TCG): /dev/kvm is absent or hangs on this machine kind.
"""

from __future__ import annotations

import argparse
import glob
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, field

MiB = 1 << 20


def _size(text: str) -> int:
    t = text.strip()
    for suffix, mult in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", 1 << 10), ("G", 1 << 30), ("M", MiB), ("K", 1 << 10)):
        if t.endswith(suffix):
            return int(float(t[: -len(suffix)]) * mult)
    return int(t)


@dataclass
class ZnsVmConfig:
    """The emulated hardware. Sizes in bytes. ``max_append`` is the zone append limit: QEMU derives it
    from the controller's MDTS (``mdts`` = log2 of the limit in 4 KiB pages; 7 = 512 KiB) unless
    ``zasl`` is set; we set ``zoned.zasl`` from it."""

    zones: int = 128
    zone_size: int = 4 * MiB
    zone_capacity: int = 3 * MiB
    max_open: int = 2
    max_active: int = 3
    max_append: int = 512 << 10
    block_size: int = 4096
    conv_size: int = 256 * MiB
    memory: str = "2G"
    cpus: int = 2
    # Not vng's TCG default ``max``: QEMU 7.2's TCG emulation of AVX2 gives wrong results for numpy's
    # vectorised argsort/argselect (np.unique(..., return_inverse=True) and np.argpartition were wrong
    # in most trials; docs/real-devices.md). Nehalem is x86-64-v2 without AVX: what numpy and torch
    # need, emulated correctly.
    cpu_model: str = "Nehalem"
    # Host folders re-shared read-only with 9p cache=loose at the same path in the guest. vng mounts the
    # root uncached, so every file access crosses into QEMU: `import torch` took 3.6 min (1.2 min
    # cached). None = this interpreter's site-packages and standard library. Must not contain workdir.
    cached_dirs: list[str] | None = None
    kernel: str | None = None
    extra_qemu: list[str] = field(default_factory=list)
    # False: no QEMU NVMe controller and no backing images (emulator/nvmevirt.py brings its own device)
    qemu_nvme: bool = True
    # extra guest kernel command-line arguments (vng --append), e.g. ``memmap=1025M$1G``
    kernel_args: list[str] = field(default_factory=list)

    def qemu_opts(self, workdir: str) -> str:
        conv, zns = os.path.join(workdir, "conv.img"), os.path.join(workdir, "zns.img")
        pages = max(1, self.max_append // 4096)
        zasl = pages.bit_length() - 1
        ns2 = (f"nvme-ns,drive=z,bus=nvme0,nsid=2,logical_block_size={self.block_size},"
               f"physical_block_size={self.block_size},zoned=true,zoned.zone_size={self.zone_size // MiB}M,"
               f"zoned.zone_capacity={self.zone_capacity // MiB}M,zoned.max_open={self.max_open},"
               f"zoned.max_active={self.max_active}")
        opts = [f"-device nvme,id=nvme0,serial=zswapzns,mdts=7,zoned.zasl={zasl}",
                f"-drive file={conv},id=c,format=raw,if=none",
                "-device nvme-ns,drive=c,bus=nvme0,nsid=1",
                f"-drive file={zns},id=z,format=raw,if=none",
                f"-device {ns2}"] if self.qemu_nvme else []
        opts.append(f"-cpu {self.cpu_model}")    # QEMU takes the last -cpu given
        for i, d in enumerate(self.cache_dirs()):
            opts.append(f"-fsdev local,id=zc{i},path={d},security_model=none,readonly=on "
                        f"-device virtio-9p-pci,fsdev=zc{i},mount_tag=zc{i}")
        return " ".join(opts + list(self.extra_qemu))

    def cache_dirs(self) -> list[str]:
        if self.cached_dirs is not None:
            return list(self.cached_dirs)
        paths = sysconfig.get_paths()
        return sorted({os.path.realpath(paths[k]) for k in ("purelib", "platlib", "stdlib") if os.path.isdir(paths[k])})

    def mount_prefix(self) -> str:
        """Guest shell commands that mount the cached shares (a failed mount only costs speed)."""
        return "".join(f"mount -t 9p -o ro,trans=virtio,version=9p2000.L,cache=loose,msize=512000 zc{i} "
                       f"{shlex.quote(d)} 2>/dev/null || echo 'zns_vm: {d} stays uncached'; "
                       for i, d in enumerate(self.cache_dirs()))


@dataclass
class GuestResult:
    returncode: int
    output: str
    boot_and_run_s: float
    workdir: str


def find_kernel() -> str | None:
    kernels = sorted(glob.glob("/boot/vmlinuz-*"))
    return kernels[-1] if kernels else None


def _vng() -> str | None:
    found = shutil.which("vng")
    if found:
        return found
    cand = os.path.join(os.path.dirname(sys.executable), "vng")
    return cand if os.path.exists(cand) else None


def missing() -> list[str]:
    """What is missing to boot the guest (empty when everything is there)."""
    out = []
    if not shutil.which("qemu-system-x86_64"):
        out.append("qemu-system-x86_64 (apt-get install qemu-system-x86)")
    if not find_kernel():
        out.append("a kernel in /boot (apt-get install linux-image-amd64)")
    if not _vng():
        out.append("vng (pip install virtme-ng)")
    if not _static_busybox():
        out.append("a static busybox (apt-get install busybox-static)")
    return out


def _static_busybox() -> bool:
    """virtme-ng builds its initramfs around a statically linked busybox."""
    busybox = shutil.which("busybox")
    if not busybox:
        return False
    with open(os.path.realpath(busybox), "rb") as f:
        head = f.read(4096)
    # an ELF with no PT_INTERP program header is static; cheap check: no dynamic loader path inside
    return b"ld-linux" not in head


def make_images(cfg: ZnsVmConfig, workdir: str, fresh: bool = True) -> None:
    """Sparse backing files for both namespaces (zeroed when ``fresh``)."""
    os.makedirs(workdir, exist_ok=True)
    if not cfg.qemu_nvme:
        return
    for name, size in (("conv.img", cfg.conv_size), ("zns.img", cfg.zones * cfg.zone_size)):
        path = os.path.join(workdir, name)
        if fresh and os.path.exists(path):
            os.remove(path)
        with open(path, "ab") as f:
            f.truncate(size)


def vng_command(command: str, cfg: ZnsVmConfig, workdir: str) -> list[str]:
    kernel = cfg.kernel or find_kernel()
    if kernel is None:
        raise RuntimeError("no kernel in /boot: apt-get install linux-image-amd64")
    return [_vng() or "vng", "--disable-kvm", "-r", kernel, "--memory", cfg.memory, "--cpus", str(cfg.cpus),
            f"--rwdir={workdir}", *(f"--append={a}" for a in cfg.kernel_args),
            f"--qemu-opts={cfg.qemu_opts(workdir)}", "--", cfg.mount_prefix() + command]


def run_in_guest(command: str, cfg: ZnsVmConfig | None = None, workdir: str | None = None,
                 timeout: float = 1800, fresh_images: bool = True, cwd: str | None = None,
                 echo: bool = False) -> GuestResult:
    """Create the images, boot, run ``command`` (a shell command line) as root in the guest, power off.
    Returns the guest command's exit status and its combined output."""
    cfg = cfg or ZnsVmConfig()
    workdir = os.path.abspath(workdir or tempfile.mkdtemp(prefix="zns-vm-"))
    make_images(cfg, workdir, fresh=fresh_images)
    argv = vng_command(command, cfg, workdir)
    env = dict(os.environ)
    vng_dir = os.path.dirname(argv[0])          # vng runs virtme-run by name: keep its folder on PATH
    env["PATH"] = vng_dir + os.pathsep + env.get("PATH", "")
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            cwd=cwd or os.getcwd(), text=True, errors="replace", start_new_session=True, env=env)
    lines = []
    expired = threading.Event()

    def _kill() -> None:                    # a watchdog: the guest may be silent for minutes
        expired.set()
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, _kill)
    timer.daemon = True
    timer.start()
    try:
        for line in proc.stdout:
            lines.append(line)
            if echo:
                sys.stdout.write(line)
                sys.stdout.flush()
        rc = proc.wait()
    finally:
        timer.cancel()
    if expired.is_set():
        lines.append(f"\n[zns_vm] guest killed after {timeout:.0f} s\n")
        rc = 124
    return GuestResult(rc, "".join(lines), time.monotonic() - t0, workdir)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emulator.zns_vm", description=__doc__.split("\n\n")[0])
    d = ZnsVmConfig()
    ap.add_argument("--zones", type=int, default=d.zones)
    ap.add_argument("--zone-size", type=_size, default=d.zone_size)
    ap.add_argument("--zone-capacity", type=_size, default=d.zone_capacity)
    ap.add_argument("--max-open", type=int, default=d.max_open)
    ap.add_argument("--max-active", type=int, default=d.max_active)
    ap.add_argument("--max-append", type=_size, default=d.max_append, help="zone append limit (power of two pages)")
    ap.add_argument("--conv-size", type=_size, default=d.conv_size)
    ap.add_argument("--memory", default=d.memory)
    ap.add_argument("--cpu-model", default=d.cpu_model, help="QEMU -cpu model [default: %(default)s; see ZnsVmConfig]")
    ap.add_argument("--kernel", default=None, help="kernel image [default: newest /boot/vmlinuz-*]")
    ap.add_argument("--workdir", default=None, help="where the images go (shared writable with the guest)")
    ap.add_argument("--keep-images", action="store_true", help="reuse existing images instead of zeroing them")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--check", action="store_true", help="only say what is missing to boot")
    ap.add_argument("command", nargs="*", help="shell command to run in the guest [default: a zone report]")
    a = ap.parse_args(argv)
    gone = missing()
    if a.check or gone:
        for m in gone:
            print(f"missing: {m}", file=sys.stderr)
        return 1 if gone else 0
    cfg = ZnsVmConfig(zones=a.zones, zone_size=a.zone_size, zone_capacity=a.zone_capacity, max_open=a.max_open,
                      max_active=a.max_active, max_append=a.max_append, conv_size=a.conv_size, memory=a.memory,
                      kernel=a.kernel, cpu_model=a.cpu_model)
    command = " ".join(a.command) if a.command else "blkzone report /dev/nvme0n2 | head -5"
    res = run_in_guest(command, cfg, a.workdir, timeout=a.timeout, fresh_images=not a.keep_images, echo=True)
    print(f"[zns_vm] exit {res.returncode} after {res.boot_and_run_s:.0f} s (images in {res.workdir})", file=sys.stderr)
    return res.returncode


if __name__ == "__main__":
    sys.exit(main())
