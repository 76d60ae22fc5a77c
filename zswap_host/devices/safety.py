"""Refuse block devices that hold someone's data before zswap-host destroys it.

``check_device(path)`` raises ``UnsafeDeviceError`` when the device (or one of its partitions) is
mounted, is active swap, has holders (device-mapper, md), holds a partition table or a file-system or
swap signature, or is open exclusively by another program (an ``O_EXCL`` open fails with EBUSY).
``force=True`` skips every check. The CLI's ``--force`` sets ``forced()`` around the command, so code
that opens devices through ``open_device`` needs no extra argument.

A regular file is refused too when it is active swap, holds such a signature, or holds data and
does not carry the mark of a file this project created (``check_unowned``, ``ownership.py``).

Signature probing uses ``blkid -p`` (util-linux) when it is installed, plus our own check of the
common magic numbers (GPT, MBR partition table, Linux swap, ext2/3/4, XFS, btrfs, F2FS) so it also
works without blkid.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import shutil
import stat
import subprocess

from ..errors import UnsafeDeviceError
from .sysfs import devnums, read_sysfs, sysfs_dir_of

_FORCE: contextvars.ContextVar[bool] = contextvars.ContextVar("zswap_host_force", default=False)

_FORCE_HINT = "give --force to use it anyway (its data will be destroyed)"


@contextlib.contextmanager
def forced(force: bool = True):
    """Within this block ``open_device`` skips the safety checks when ``force`` is true."""
    token = _FORCE.set(bool(force))
    try:
        yield
    finally:
        _FORCE.reset(token)


def is_forced() -> bool:
    return _FORCE.get()


def _devnums(path: str) -> tuple[int, int]:
    if not stat.S_ISBLK(os.stat(path).st_mode):
        raise UnsafeDeviceError(f"{path} is not a block device")
    return devnums(path)


def related_devnums(path: str) -> dict[str, str]:
    """``"MAJ:MIN" -> name`` of the device and its partitions."""
    maj, mnr = _devnums(path)
    sysdir = sysfs_dir_of(maj, mnr)
    name = os.path.basename(sysdir)
    out = {f"{maj}:{mnr}": name}
    try:
        entries = os.listdir(sysdir)
    except OSError:
        return out
    for entry in entries:
        if entry.startswith(name) and os.path.exists(os.path.join(sysdir, entry, "partition")):
            dev = read_sysfs(os.path.join(sysdir, entry, "dev"))
            if dev:
                out[dev] = entry
    return out


def mounted_at(path: str) -> list[tuple[str, str]]:
    """(device name, mount point) for every mount of the device or its partitions."""
    devs = related_devnums(path)
    out = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                if len(fields) > 4 and fields[2] in devs:
                    out.append((devs[fields[2]], fields[4].replace("\\040", " ")))
    except OSError:
        pass
    return out


def active_swap(path: str) -> list[str]:
    """Entries of /proc/swaps that are this device or one of its partitions."""
    devs = related_devnums(path)
    return [name for name, st in _swaps()
            if stat.S_ISBLK(st.st_mode) and f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" in devs]


def _swaps():
    """(name, stat) of every active swap area in /proc/swaps that can be stat'ed."""
    try:
        with open("/proc/swaps") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return
    for line in lines:
        name = line.split()[0] if line.split() else ""
        try:
            yield name, os.stat(name)
        except OSError:
            continue


def holders(path: str) -> list[str]:
    """Devices stacked on this one or its partitions (dm, md, bcache...)."""
    out = []
    for name in related_devnums(path).values():
        d = os.path.realpath(f"/sys/class/block/{name}/holders")
        try:
            out += os.listdir(d)
        except OSError:
            pass
    return out


def partitions(path: str) -> list[str]:
    devs = related_devnums(path)
    return sorted(v for k, v in devs.items() if v != os.path.basename(sysfs_dir_of(*_devnums(path))))


# -------------------------------------------------------------------------------- signatures
def _magic_signature(head: bytes) -> str | None:
    """What our own probe recognises in the first 128 KiB of a device, or None."""
    def at(off: int, magic: bytes) -> bool:
        return head[off:off + len(magic)] == magic

    for sector in (512, 4096):
        if at(sector, b"EFI PART"):
            return "partition table (gpt)"
    for page in (4096, 8192, 16384, 65536):
        if at(page - 10, b"SWAPSPACE2") or at(page - 10, b"SWAP-SPACE"):
            return "swap signature"
    if at(0, b"XFSB"):
        return "file system (xfs)"
    if at(65536 + 64, b"_BHRfS_M"):
        return "file system (btrfs)"
    if at(1024, (0xF2F52010).to_bytes(4, "little")):
        return "file system (f2fs)"
    if at(1080, b"\x53\xef") and head[1024 + 0x3A:1024 + 0x3C] in (b"\x01\x00", b"\x02\x00"):
        return "file system (ext2/3/4)"   # magic plus a valid s_state
    if at(510, b"\x55\xaa"):
        entries = [head[446 + 16 * i:446 + 16 * (i + 1)] for i in range(4)]
        types = [e[4] for e in entries]
        boot_ok = all(e[0] in (0x00, 0x80) for e in entries)
        if boot_ok and any(types) and not at(0x52, b"FAT32") and not at(0x36, b"FAT"):
            return "partition table (dos)"
    return None


def _read_head(path: str, n: int = 128 << 10) -> bytes:
    import mmap

    fd = os.open(path, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
    try:
        buf = mmap.mmap(-1, n)       # page aligned, as O_DIRECT wants
        try:
            got = os.preadv(fd, [buf], 0)
        except OSError:
            got = 0
        return bytes(buf[:got])
    finally:
        os.close(fd)


def _blkid_signature(path: str) -> str | None:
    blkid = shutil.which("blkid") or next((p for p in ("/sbin/blkid", "/usr/sbin/blkid") if os.path.exists(p)), None)
    if blkid is None:
        return None
    try:
        r = subprocess.run([blkid, "-p", "-o", "export", "--", path], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    tags = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    if "PTTYPE" in tags:
        return f"partition table ({tags['PTTYPE']})"
    if tags.get("TYPE") == "swap":
        return "swap signature"
    if "TYPE" in tags:
        return f"{'file system' if tags.get('USAGE', 'filesystem') == 'filesystem' else tags.get('USAGE')} ({tags['TYPE']})"
    return None


def signature(path: str) -> str | None:
    """A description of the partition table / file system / swap signature on the device, or None."""
    try:
        found = _magic_signature(_read_head(path))
    except OSError:
        found = None
    return found or _blkid_signature(path)


def open_elsewhere(path: str) -> bool:
    """True when another program holds the device open exclusively (mount, swapon, O_EXCL)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    except OSError as e:
        return e.errno == errno.EBUSY
    os.close(fd)
    return False


def check_device(path: str, force: bool | None = None) -> None:
    """Raise UnsafeDeviceError unless ``path`` looks free to overwrite (or ``force``)."""
    if force is None:
        force = is_forced()
    if force:
        return
    _devnums(path)
    mounts = mounted_at(path)
    if mounts:
        where = ", ".join(f"{d} on {m}" for d, m in mounts[:3])
        raise UnsafeDeviceError(f"{path} is mounted ({where}); unmount it first, or {_FORCE_HINT}")
    swaps = active_swap(path)
    if swaps:
        raise UnsafeDeviceError(f"{path} is in use as swap ({', '.join(swaps)}); swapoff it first, or {_FORCE_HINT}")
    held = holders(path)
    if held:
        raise UnsafeDeviceError(f"{path} is in use by {', '.join(held)} (device-mapper/md holders); {_FORCE_HINT}")
    parts = partitions(path)
    if parts:
        raise UnsafeDeviceError(f"{path} holds partitions ({', '.join(parts)}); {_FORCE_HINT}")
    from .direct_io import held_here

    if not held_here(path) and open_elsewhere(path):
        raise UnsafeDeviceError(f"{path} is open exclusively by another program (O_EXCL open: EBUSY); {_FORCE_HINT}")
    sig = signature(path)
    if sig:
        raise UnsafeDeviceError(f"{path} holds a {sig}; wipe it (wipefs -a {path}) if its data is not needed, "
                                f"or {_FORCE_HINT}")


def check_unowned(path: str, force: bool | None = None) -> None:
    """Refuse to write into an existing regular file that holds data (a byte that is not zero) and
    that this project did not create (no mark beside it: ``ownership.is_ours``). An absent, empty,
    sparse or all-zero file is fine: nothing of anyone's is in it."""
    from .ownership import holds_data, is_ours

    if force is None:
        force = is_forced()
    if force or not os.path.isfile(path) or is_ours(path) or not holds_data(path):
        return
    raise UnsafeDeviceError(f"{path} holds data and was not created by zswap-host (no {path}.json beside it); "
                            f"{_FORCE_HINT}")


def check_file(path: str, force: bool | None = None) -> None:
    """For a regular file used as a device: refuse an active swap file, one with a signature, or one
    that holds data this project did not write (``check_unowned``)."""
    if force is None:
        force = is_forced()
    if force:
        return
    st = os.stat(path)
    for _, other in _swaps():
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            raise UnsafeDeviceError(f"{path} is in use as swap; swapoff it first, or {_FORCE_HINT}")
    with open(path, "rb") as f:
        found = _magic_signature(f.read(128 << 10))
    if found:
        raise UnsafeDeviceError(f"{path} holds a {found}; delete or wipe it (wipefs -a {path}) if its data is "
                                f"not needed, or {_FORCE_HINT}")
    check_unowned(path, force)
