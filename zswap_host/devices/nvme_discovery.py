"""NVMe discovery through libnvme's Python bindings: every namespace of every NVMe controller, with
its controller's model, serial and firmware, its size, and for a zoned namespace the zone geometry.

libnvme (the ``nvme`` extra: ``pip install 'zswap-host[nvme]'``) walks the kernel's NVMe topology
(hosts → subsystems → controllers → namespaces). Its Python module has no zone commands, so sizes
and zone geometry come from sysfs through the same reader the zoned backend uses
(:func:`~zswap_host.devices.sysfs.queue_zone_limits`), and the zone capacity from one zone report.
"""

from __future__ import annotations

import ctypes
import fnmatch
import functools
import importlib.metadata
import os
import re
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import Any

from ..errors import DependencyMissingError
from .blkzoned import first_zone_capacity
from .sysfs import SECTOR, queue_zone_limits, read_sysfs

#: The libnvme release the ``nvme`` extra pins (it bundles libnvme.so.1.16.2).
LIBNVME_REQUIREMENT = "libnvme==1.16.2"
INSTALL_HINT = "apt install swig, then pip install 'zswap-host[nvme]'"
REINSTALL_HINT = f"apt install swig, then pip install --no-cache-dir --force-reinstall '{LIBNVME_REQUIREMENT}'"


@dataclass(frozen=True)
class NvmeNamespace:
    """One NVMe namespace and its controller. Sizes in bytes. Zone fields are None when the
    namespace is not zoned; ``max_open``/``max_active`` 0 means no limit (as sysfs says it)."""

    controller: str                     # nvme0
    model: str
    serial: str
    firmware: str
    transport: str                      # pcie, tcp, rdma, fc, loop
    name: str                           # nvme0n2: the block device /dev/<name>
    nsid: int
    size: int
    block_size: int                     # logical block size
    zoned: bool
    zoned_model: str = "none"           # queue/zoned: none, host-managed, host-aware
    zone_size: int | None = None
    zone_capacity: int | None = None    # zone 0's, from the zone report; None if it could not be read
    nr_zones: int | None = None
    max_open: int | None = None
    max_active: int | None = None
    max_append: int | None = None       # zone append limit (zone_append_max_bytes)

    @property
    def path(self) -> str:
        return f"/dev/{self.name}"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "path": self.path}


@functools.cache
def load_libnvme() -> ModuleType:
    """``libnvme.nvme``, with the C library bundled in the libnvme wheel loaded first.

    Raises DependencyMissingError (naming what to install) when libnvme is not installed, was built
    without its Python module (swig was missing when pip built it, maybe a cached wheel), or does not load.
    """
    try:
        files = importlib.metadata.distribution("libnvme").files or []
    except importlib.metadata.PackageNotFoundError:
        raise DependencyMissingError(
            f"NVMe discovery needs libnvme's Python bindings, which are not installed: {INSTALL_HINT}") from None
    names = {f.name: f for f in files}
    if not any(fnmatch.fnmatch(n, "_nvme*.so") for n in names):
        raise DependencyMissingError(
            "libnvme is installed without its Python module (it was built while swig was missing, "
            f"perhaps from pip's wheel cache): {REINSTALL_HINT}")
    # The module needs libnvme.so.1, but the wheel ships only libnvme.so.1.X.Y beside it, so the loader
    # finds nothing or the distribution's older libnvme1 (missing symbols). Loaded globally first, the
    # bundled library answers for its soname.
    for n in sorted(n for n in names if fnmatch.fnmatch(n, "libnvme.so.1*")):
        ctypes.CDLL(str(names[n].locate()), mode=ctypes.RTLD_GLOBAL)
    try:
        from libnvme import nvme
    except ImportError as e:
        raise DependencyMissingError(f"libnvme's Python module does not load ({e}): {REINSTALL_HINT}") from None
    return nvme


def _namespace(ctrl: Any, ns: Any, sys_block: str) -> NvmeNamespace | None:
    """The record for libnvme namespace ``ns`` of controller ``ctrl``; None if it is no block device."""
    name = ns.name
    d = os.path.join(sys_block, name)
    if not os.path.isdir(d):                  # a path of a multipath namespace, or gone meanwhile
        return None
    q = os.path.join(d, "queue")
    lim = queue_zone_limits(q)
    zmodel = read_sysfs(os.path.join(q, "zoned"), "none") or "none"
    common = dict(controller=ctrl.name, model=(ctrl.model or "").strip(), serial=(ctrl.serial or "").strip(),
                  firmware=(ctrl.firmware or "").strip(), transport=ctrl.transport or "", name=name,
                  nsid=int(ns.nsid), size=int(read_sysfs(os.path.join(d, "size"), "0") or 0) * SECTOR,
                  block_size=lim.block_size, zoned_model=zmodel)
    if zmodel == "none":
        return NvmeNamespace(zoned=False, **common)
    zone_size = lim.zone_sectors * SECTOR
    return NvmeNamespace(zoned=True, zone_size=zone_size, nr_zones=lim.nr_zones, max_open=lim.max_open,
                         max_active=lim.max_active, max_append=lim.max_append,
                         zone_capacity=first_zone_capacity(f"/dev/{name}", lim.zone_sectors) if zone_size else None,
                         **common)


def discover(sys_block: str = "/sys/block") -> list[NvmeNamespace]:
    """Every NVMe namespace the kernel shows, sorted by controller and nsid; [] when there is none.
    Raises DependencyMissingError when libnvme's Python module is missing (see :func:`load_libnvme`)."""
    nvme = load_libnvme()
    root = nvme.root()                        # scans /sys/class/nvme*; keep it alive while walking
    found: dict[str, NvmeNamespace] = {}
    for host in root.hosts():
        for subsys in host.subsystems():
            ctrls = list(subsys.controllers())
            pairs = [(c, ns) for c in ctrls for ns in c.namespaces()]
            # native NVMe multipath: the block device hangs off the subsystem, not a controller
            pairs += [(ctrls[0], ns) for ns in subsys.namespaces()] if ctrls else []
            for ctrl, ns in pairs:
                if ns.name not in found and (rec := _namespace(ctrl, ns, sys_block)) is not None:
                    found[rec.name] = rec
    return sorted(found.values(), key=lambda r: (_natural(r.controller), r.nsid))


def _natural(name: str) -> list:
    """nvme2 before nvme10."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
