"""Transient media errors a test arms on an emulated ZNS device (``EmulatedZonedDevice``'s
``inject_write_failures`` / ``inject_read_failures``): the request fails with DeviceIOError and
changes nothing (no data written, the write pointer stays, no modeled time); the next request of
its kind succeeds. ``after`` lets that many requests through first, so a test can fail the k-th read
or write of an operation (a ``read_batch`` or an ``append_batch``'s unit is one request each)."""

from __future__ import annotations


class InjectedFailures:
    """The failures armed on one device: ``writes`` and ``reads`` still to raise (0: none armed, all
    the device's data path looks at), each after letting a number of requests of its kind through.
    The device holds its lock around every call."""

    def __init__(self) -> None:
        self.writes = 0
        self.reads = 0
        self._pass_writes = 0       # writes / reads let through before the injected failures
        self._pass_reads = 0

    def arm_writes(self, n: int, after: int) -> None:
        """Fail ``n`` writes after letting the next ``after`` succeed (replaces an earlier arming)."""
        self.writes, self._pass_writes = int(n), int(after)

    def arm_reads(self, n: int, after: int) -> None:
        """Fail ``n`` reads after letting the next ``after`` succeed (replaces an earlier arming)."""
        self.reads, self._pass_reads = int(n), int(after)

    def fires(self, kind: str) -> bool:
        """Whether this read (``kind="read"``) or write fails; called while failures of that kind
        are armed."""
        if kind == "read":
            if self._pass_reads:
                self._pass_reads -= 1
                return False
            self.reads -= 1
            return True
        if self._pass_writes:
            self._pass_writes -= 1
            return False
        self.writes -= 1
        return True
