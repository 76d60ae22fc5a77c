"""Zone summary: the footer the store writes at the end of each zone's data, listing the page id of
every slot written there, so a zone's contents can be identified from the device alone.

Layout (little endian), ``blocks(n)`` whole pages: ``n`` int64 page ids, zero padding, then a
32-byte trailer at the very end of the last page: magic ``ZSWPSUM1``, zone sequence number (u64),
n (u64), page size (u64). Reading starts from the last page before the write pointer.
"""

from __future__ import annotations

import numpy as np

MAGIC = b"ZSWPSUM1"
TRAILER = 32


def footer_pages(n: int, page_size: int) -> int:
    return -(-(8 * n + TRAILER) // page_size)


def data_slots(zone_capacity: int, page_size: int) -> int:
    """Most data pages a zone holds with its footer."""
    d = zone_capacity // page_size
    while d > 0 and (d + footer_pages(d, page_size)) * page_size > zone_capacity:
        d -= 1
    return d


def encode(seq: int, ids: np.ndarray, page_size: int) -> np.ndarray:
    n = int(ids.size)
    buf = np.zeros(footer_pages(n, page_size) * page_size, np.uint8)
    buf[:8 * n] = np.ascontiguousarray(ids, dtype="<i8").view(np.uint8)
    buf[-TRAILER:-TRAILER + 8] = np.frombuffer(MAGIC, np.uint8)
    buf[-24:] = np.array([seq, n, page_size], dtype="<u8").view(np.uint8)
    return buf


def read_zone_summary(device, zone: int, page_size: int = 4096) -> tuple[int, np.ndarray] | None:
    """(zone sequence number, page ids in slot order) from the footer ending at the zone's write
    pointer, or None when the zone holds no summary there (empty, or written by someone else)."""
    z = device.report_zones()[zone]
    end = z.start + z.written
    if end - z.start < page_size:
        return None
    last = device.read(end - page_size, page_size)
    if bytes(last[-TRAILER:-TRAILER + 8]) != MAGIC:
        return None
    seq, n, ps = (int(x) for x in last[-24:].view("<u8"))
    if ps != page_size:
        return None
    pages = footer_pages(n, page_size)
    if pages * page_size > end - z.start:
        return None
    buf = device.read(end - pages * page_size, pages * page_size)
    return seq, buf[:8 * n].view("<i8").copy()
