"""Resident memory of an address range, from /proc/self/smaps (how the tests and experiments
check that a pager keeps its regions within budget)."""

from __future__ import annotations

import re

_HEAD = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) ")


def _mappings(path: str):
    """(start, end, rss bytes) of every mapping in an smaps file."""
    start = end = None
    with open(path) as f:
        for line in f:
            m = _HEAD.match(line)
            if m:
                start, end = int(m.group(1), 16), int(m.group(2), 16)
            elif line.startswith("Rss:") and start is not None:
                yield start, end, int(line.split()[1]) * 1024


def range_rss(addr: int, nbytes: int, path: str = "/proc/self/smaps") -> int | None:
    """Rss in bytes of the mappings overlapping ``[addr, addr + nbytes)``, or None when none does.
    A region is its own mapping unless the kernel merged it with an adjacent one of the same kind
    (another region of the same pager): then the sum covers both, an upper bound."""
    hits = [rss for lo, hi, rss in _mappings(path) if lo < addr + nbytes and addr < hi]
    return sum(hits) if hits else None
