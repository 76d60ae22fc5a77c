"""``DeviceScheme``: what a device URL scheme implements, and the query-string parser it shares.

A scheme declares its parameters in ``params`` (key -> kind); :meth:`DeviceScheme.parse` checks a
URL against them and returns its path and typed values. Every refusal is a one-line
``DeviceSpecError`` naming the URL. Kinds:

- ``size``: bytes, with units (``16MiB``, ``1G``), at most :data:`MAX_EMULATED_BYTES`;
- ``count``: a whole number below 2**32;
- ``fraction``: a float in [0, 1);
- ``flag``: ``0`` or ``1`` (a bool);
- ``name``: any text (e.g. a preset name).
"""

from __future__ import annotations

from typing import ClassVar
from urllib.parse import parse_qsl, urlsplit

from ...errors import DeviceSpecError
from ...units import parse_size

MAX_EMULATED_BYTES = 1 << 50      # 1 PiB: sizes beyond are refused before anything is allocated
_MAX_COUNT = 1 << 32
KINDS = ("size", "count", "fraction", "flag", "name")


class DeviceScheme:
    """One kind of device URL. Subclasses set ``name`` (the URL scheme, or the registry name of a
    path kind), ``summary`` (one line for ``--help``/``info``), ``params`` and implement :meth:`open`.
    Instances hold no state: the registry makes one per ``open_device`` call."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    params: ClassVar[dict[str, str]] = {}

    def parse(self, url: str) -> tuple[str | None, dict]:
        """``url``'s path (netloc + path; None when empty) and its query parameters, typed by
        ``params``. Raises ``DeviceSpecError`` for a malformed URL, a #fragment, a NUL byte in the
        path, an unknown or repeated key, or a value its kind does not allow."""
        return parse_query(url, self.params)

    def open(self, url: str, *, zoned: bool | None, force: bool | None, readonly: bool):
        """Open the device ``url`` names (a ``ZonedDevice`` or a ``BlockDevice``). ``zoned``,
        ``force`` and ``readonly`` are ``open_device``'s; a scheme that can only give one kind may
        ignore ``zoned`` (``open_device`` checks the result). Raises ``DeviceSpecError`` for a bad
        URL or a device that cannot be opened."""
        raise NotImplementedError


def parse_query(url: str, allowed: dict[str, str]) -> tuple[str | None, dict]:
    """See :meth:`DeviceScheme.parse`."""
    try:
        parts = urlsplit(url)
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError as e:
        raise DeviceSpecError(f"malformed device URL {url!r}: {e}") from None
    if parts.fragment or url.endswith("#"):
        raise DeviceSpecError(f"a device URL has no #fragment: {url!r}")
    path = (parts.netloc + parts.path) or None
    if path is not None and "\0" in path:
        raise DeviceSpecError(f"a path with a NUL byte in {url!r}")
    params: dict = {}
    for key, value in pairs:
        if key not in allowed:
            raise DeviceSpecError(f"unknown parameter {key!r} in {url!r}; known: {', '.join(sorted(allowed))}")
        if key in params:
            raise DeviceSpecError(f"parameter {key} given twice in {url!r}")
        try:
            params[key] = parse_value(key, value, allowed[key])
        except ValueError as e:
            raise DeviceSpecError(f"bad value for {key} in {url!r}: {e}") from None
    return path, params


def parse_value(key: str, value: str, kind: str):
    """``value`` as ``kind`` (see the module doc); ``ValueError`` saying why not."""
    if kind == "size":
        n = parse_size(value)
        if n > MAX_EMULATED_BYTES:
            raise ValueError(f"{value} is more than an emulated device may have (1 PiB)")
        return n
    if kind == "fraction":
        x = float(value)
        if not 0.0 <= x < 1.0:
            raise ValueError(f"{key} must be in [0, 1)")
        return x
    if kind == "name":
        return value
    if kind == "flag":
        if value not in ("0", "1"):
            raise ValueError("must be 0 or 1")
        return value == "1"
    if kind == "count":
        if not (value.isascii() and value.isdigit()):
            raise ValueError(f"{value!r} is not a whole number (not negative)")
        n = int(value)
        if n >= _MAX_COUNT:
            raise ValueError(f"{value} is too large")
        return n
    raise ValueError(f"parameter kind {kind!r} is not one of {', '.join(KINDS)}")
