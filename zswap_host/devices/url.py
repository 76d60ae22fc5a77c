"""``open_device(url_or_path)``: a registry of device URL schemes, in the manner of fsspec's
``registry.py``. A URL ``NAME://PATH?key=value&...`` goes to the scheme registered as ``NAME``; a
bare path goes to the first *path scheme* whose test accepts its file type (a regular file, a block
device). Each scheme is a :class:`~.schemes.base.DeviceScheme` that parses its own URLs and opens the
device; it is imported only when first used, and when that import fails the error carries the
scheme's install hint.

Built in:

- ``emu://PATH?zones=N&zone_size=16MiB&zone_capacity=…&max_open=…&max_active=…&max_append=…&preset=…``
  emulated ZNS device; PATH empty = in memory. ``preset=none`` turns the timing model off.
- ``emu-conv://PATH?size=…&op=0.15&preset=…`` emulated conventional SSD (op: the preset's by default).
- ``fdp://PATH?size=…&ruhs=8&ru_size=…&isolation=persistent|initial&preset=…`` emulated NVMe FDP SSD:
  ``emu-conv://`` with placement handles (``devices/fdp.py``).
- ``ocssd://PATH?groups=&pus=&chunks=&sectors=&ws_min=&ws_opt=&mw_cunits=&preset=…`` emulated
  Open-Channel SSD 2.0 (``devices/ocssd.py``): neither zoned nor a block device, its own protocol
  (``OpenChannelDevice``); asked for either kind (``zoned=True``/``False``) it is refused.
- timing-model options (0/1, default 0, docs/ssd-model.md): ``suspend=1`` on every emulated SSD
  (host reads suspend programs/erases), ``idle_gc=1`` on ``emu-conv://`` (background GC in idle time).
- ``file``: a regular file, a conventional block device with real I/O.
- ``block``: a block device (``/dev/nvme0n2``, ``/dev/sdb``, a loop device): zoned →
  ``LinuxZonedDevice``, not zoned → ``LinuxBlockDevice``, after the safety checks of
  ``devices/safety.py`` (mounted, swap, holders, partitions, signatures, O_EXCL) unless forced.

More (io_uring paths, ...) register with :func:`register_scheme`.
"""

from __future__ import annotations

import importlib
import os
import re
import stat
from typing import Callable
from urllib.parse import urlsplit

from ..errors import DeviceSpecError, NotZonedError
from .base import BlockDevice, OpenChannelDevice, ZonedDevice
from .schemes.base import DeviceScheme

_BUILD_HINT = "run `pip install -e .` (it builds the zswap_host._zoned extension)"

# name -> {"class": a DeviceScheme subclass or "module:Class", "err": install hint,
#          "path_test": None for a URL scheme, else a test of os.stat's st_mode for bare paths}
known_schemes: dict[str, dict] = {
    "emu": {"class": "zswap_host.devices.schemes.emu:EmuScheme", "err": "", "path_test": None},
    "emu-conv": {"class": "zswap_host.devices.schemes.emu:EmuConvScheme", "err": "", "path_test": None},
    "fdp": {"class": "zswap_host.devices.schemes.fdp:FdpScheme", "err": "", "path_test": None},
    "ocssd": {"class": "zswap_host.devices.schemes.ocssd:OcssdScheme", "err": "", "path_test": None},
    "file": {"class": "zswap_host.devices.schemes.file:FileScheme", "err": "", "path_test": stat.S_ISREG},
    "block": {"class": "zswap_host.devices.schemes.block:BlockScheme", "err": _BUILD_HINT,
              "path_test": stat.S_ISBLK},
}
_loaded: dict[str, type[DeviceScheme]] = {}
_NAME = re.compile(r"^[a-z][a-z0-9+.-]*$")     # what urlsplit accepts as a scheme (lower case)


def register_scheme(name: str, cls: type[DeviceScheme] | str, *, install_hint: str = "",
                    path_test: Callable[[int], bool] | None = None, clobber: bool = False) -> None:
    """Make ``name://...`` URLs (or, with ``path_test``, bare paths whose ``st_mode`` it accepts)
    open through ``cls``: a ``DeviceScheme`` subclass, or ``"module:Class"`` to import on first use.
    ``install_hint`` is shown when that import fails. Raises ``ValueError`` for a name that cannot be
    a URL scheme, or one already registered (unless ``clobber``)."""
    if not _NAME.match(name):
        raise ValueError(f"{name!r} cannot be a device URL scheme (lower-case letters, digits, + - .)")
    if name in known_schemes and not clobber:
        raise ValueError(f"device URL scheme {name!r} is already registered")
    if not isinstance(cls, str) and not (isinstance(cls, type) and issubclass(cls, DeviceScheme)):
        raise ValueError(f"{cls!r} is not a DeviceScheme subclass nor a 'module:Class' string")
    known_schemes[name] = {"class": cls, "err": install_hint, "path_test": path_test}
    _loaded.pop(name, None)


def unregister_scheme(name: str) -> None:
    """Forget a scheme (``KeyError`` if it is not registered)."""
    del known_schemes[name]
    _loaded.pop(name, None)


def scheme_class(name: str) -> type[DeviceScheme]:
    """The scheme class registered as ``name``, imported on first use. Raises ``DeviceSpecError``
    for an unknown name, or with the install hint when its import fails."""
    if name in _loaded:
        return _loaded[name]
    entry = known_schemes.get(name)
    if entry is None:
        raise DeviceSpecError(f"no device URL scheme {name!r} is registered")
    cls = entry["class"]
    if isinstance(cls, str):
        module, _, attr = cls.partition(":")
        try:
            cls = getattr(importlib.import_module(module), attr)
        except ImportError as e:
            hint = f"; {entry['err']}" if entry["err"] else ""
            raise DeviceSpecError(f"device URL scheme {name!r} is not available ({e}){hint}") from None
    _loaded[name] = cls
    return cls


def schemes() -> list[dict]:
    """Every registered scheme: ``name``, ``form`` (``name://`` or ``PATH``), ``summary``,
    ``available`` (its import works) and ``install_hint`` (for ``zswap-host info``/``--help``)."""
    out = []
    for name, entry in known_schemes.items():
        try:
            cls, ok = scheme_class(name), True
        except DeviceSpecError:
            cls, ok = None, False
        out.append({"name": name, "form": "PATH" if entry["path_test"] else f"{name}://",
                    "summary": cls.summary if cls else "", "available": ok, "install_hint": entry["err"]})
    return out


def _url_schemes() -> list[str]:
    return [n for n, e in known_schemes.items() if e["path_test"] is None]


def _scheme_for(url: str) -> tuple[str, str]:
    """(registered name, what to hand it): the URL scheme's entry, or the path scheme for a bare path."""
    if "://" in url:
        try:
            scheme = urlsplit(url).scheme
        except ValueError as e:
            raise DeviceSpecError(f"malformed device URL {url!r}: {e}") from None
        if scheme and scheme in _url_schemes():
            return scheme, url
        if scheme:
            listing = ", ".join(f"{n}://" for n in _url_schemes())
            raise DeviceSpecError(f"unknown device URL scheme {scheme!r} in {url!r}; use {listing} or a path")
    try:
        st = os.stat(url)
    except FileNotFoundError:
        raise DeviceSpecError(f"{url}: no such file or device") from None
    except OSError as e:
        raise DeviceSpecError(f"{url}: {e.strerror}") from None
    for name, entry in known_schemes.items():
        if entry["path_test"] is not None and entry["path_test"](st.st_mode):
            return name, url
    raise DeviceSpecError(f"{url} is neither a regular file nor a block device")


def open_device(url: str, zoned: bool | None = None, force: bool | None = None, readonly: bool = False,
                io_engine: str | None = None):
    """Open a device by URL or path: a ``ZonedDevice``, a ``BlockDevice`` or an ``OpenChannelDevice``.
    ``zoned=True`` demands a zoned device (``NotZonedError`` otherwise), ``zoned=False`` a conventional
    one (``DeviceSpecError``); None takes what the URL names. ``force`` skips the safety checks on real
    devices (None: whatever ``safety.forced()`` set, default off). ``readonly`` opens a file or real
    device read-only, without the safety checks and without claiming it (for inspection: geometry,
    zone reports); writes and zone changes then fail. ``io_engine`` (``uring`` or ``sync``; None: the
    ``engine_default`` in force, else uring) is how a real device's batches reach the kernel
    (``devices/io_engine.py``); emulated devices and files have none. Every refusal of the URL itself
    is a one-line ``DeviceSpecError``."""
    from .io_engine import engine_default

    name, target = _scheme_for(url)
    if io_engine is None:
        dev = scheme_class(name)().open(target, zoned=zoned, force=force, readonly=readonly)
    else:
        with engine_default(io_engine):
            dev = scheme_class(name)().open(target, zoned=zoned, force=force, readonly=readonly)
    open_channel = bool(getattr(dev, "open_channel", False))
    proto = OpenChannelDevice if open_channel else ZonedDevice if dev.zoned else BlockDevice
    if not isinstance(dev, proto):
        dev.close()
        raise TypeError(f"device URL scheme {name!r} opened a {type(dev).__name__}, which does not implement "
                        f"the {proto.__name__} protocol")
    if open_channel and zoned is not None:
        dev.close()
        if zoned:
            raise NotZonedError(f"{url} is an Open-Channel SSD, not a zoned device; give a ZNS device "
                                f"(e.g. /dev/nvme0n2 or emu://?zones=64)")
        raise DeviceSpecError(f"{url} is an Open-Channel SSD; a conventional block device is needed here")
    if zoned is True and not dev.zoned:
        dev.close()
        raise NotZonedError(
            f"{url} is not a zoned device; give a ZNS device (e.g. /dev/nvme0n2 or emu://?zones=64) "
            f"or use it as the conventional baseline (--baseline-device)")
    if zoned is False and dev.zoned:
        dev.close()
        raise DeviceSpecError(f"{url} is a zoned device; a conventional block device is needed here")
    return dev
