"""Loop devices standing in for disks in host tests (losetup; needs root): ``needs_loop`` skips a
test with the reason when they are unavailable; the ``loopdev`` fixture gives a fresh 32 MiB one."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def _loop_reason() -> str | None:
    if os.geteuid() != 0:
        return "loop devices need root"
    if not shutil.which("losetup"):
        return "losetup is not installed"
    if not os.path.exists("/dev/loop-control"):
        return "no /dev/loop-control (loop driver unavailable)"
    return None


LOOP_REASON = _loop_reason()
needs_loop = pytest.mark.skipif(LOOP_REASON is not None, reason=LOOP_REASON or "")


@pytest.fixture
def loopdev(tmp_path):
    """A fresh 32 MiB loop device (zeros); yields (device path, backing file)."""
    img = tmp_path / "disk.img"
    img.write_bytes(b"")
    os.truncate(img, 32 << 20)
    r = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"losetup failed: {r.stderr.strip()}")
    dev = r.stdout.strip()
    try:
        yield dev, img
    finally:
        subprocess.run(["umount", dev], capture_output=True)
        subprocess.run(["losetup", "-d", dev], capture_output=True)
