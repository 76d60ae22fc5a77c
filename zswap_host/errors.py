"""Typed errors. Every error zswap-host raises on purpose is a `ZswapError`."""

from __future__ import annotations


class ZswapError(Exception):
    """Base class of every error zswap-host raises on purpose."""


class SwapFullError(ZswapError):
    """Live data does not fit in the swap store. ``page_ids`` (when the backend says) names exactly
    the pages of the call that were *not* stored: the whole batch when the call was refused before
    anything changed, none when the batch was accepted and only its write to the device is pending."""

    def __init__(self, message: str, page_ids=None) -> None:
        super().__init__(message)
        self.page_ids = page_ids


class StoreClosedError(ZswapError):
    """A swap backend was used after ``close()`` (a second ``close()`` is a no-op)."""


class StoreInvariantError(ZswapError):
    """The swap store found its own bookkeeping inconsistent (a bug, or a device that wrote
    somewhere else than it said). The store refuses the step that would have damaged data."""


class ZoneStateError(ZswapError):
    """A zone operation broke the zone rules: a write away from the write pointer, past capacity,
    an illegal state change, or the open/active limits.  `errno_name` names the error a Linux
    zoned block device returns for the same mistake (EIO, EOVERFLOW, ETOOMANYREFS, EINVAL).
    Open-Channel SSDs raise it for their chunk rules (write pointer, ws_min, chunk state, a read
    not yet readable); `zone` is then the chunk's linear index."""

    def __init__(self, message: str, zone: int | None = None, errno_name: str = "EIO") -> None:
        super().__init__(message)
        self.zone = zone
        self.errno_name = errno_name


class DeviceIOError(ZswapError):
    """The device failed an I/O (injected failure, a read-only or offline zone, a kernel EIO)."""

    def __init__(self, message: str, offset: int | None = None, errno: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset      # byte offset of the failed request, when one is known
        self.errno = errno        # the kernel's errno, when the failure came from a syscall


class NotZonedError(ZswapError):
    """ZNS mode was asked of a device that is not zoned."""


class UnsafeDeviceError(ZswapError):
    """The device is in use or holds data (mounted, partitioned, a file system or swap signature)."""


class DeviceSpecError(ZswapError, ValueError):
    """A device URL or path cannot be opened as given: unknown scheme, missing path, sizes that do
    not fit together."""


class InvalidIOError(ZswapError, ValueError):
    """An I/O that no device accepts: not block aligned, or outside the device (Linux: EINVAL)."""


class DependencyMissingError(ZswapError):
    """An optional dependency a command needs is not installed (or was built without a part it
    needs); the message names what to install."""


class PageLostError(ZswapError):
    """Pages whose only copy lived in a zone that went offline. ``page_ids`` names exactly them;
    a later ``swap_in`` of one of them raises this again until it is swapped out anew or discarded."""

    def __init__(self, message: str, page_ids) -> None:
        super().__init__(message)
        self.page_ids = page_ids


class PageCorruptError(ZswapError):
    """A page came back from swap with other bytes than were swapped out (caught by
    ``VerifyingBackend``). ``page_ids`` names the pages that differ."""

    def __init__(self, message: str, page_ids) -> None:
        super().__init__(message)
        self.page_ids = page_ids
