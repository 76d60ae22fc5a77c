"""Zone summary: the footer the store writes at the end of each zone's data, listing the page id of
every slot written there, so a zone's contents can be identified from the device alone.

Layout (little endian), ``footer_pages(n)`` whole pages: ``n`` int64 page ids, zero padding, then a
48-byte trailer at the very end of the last page: magic ``ZSWPSUM2``, zone sequence number (u64),
n (u64), page size (u64), the zone's start offset (u64), and a checksum (u64: BLAKE2b-64 of the ids
and the four fields before it). Reading starts from the last page before the write pointer.

A footer is accepted only where the store puts one: its checksum holds, it names this zone's start
and the reader's page size, its sequence number is positive, and it sits right behind its ``n``
data pages (a zone closed part-way: ``n`` data pages + the footer = the write pointer) or ends a
sealed zone (``n`` = the zone's data slots, the footer ending at zone capacity). A user page that
merely ends in the magic, a copy of another zone's footer, or a footer of a partial zone that has
since been written past are all refused.
"""

from __future__ import annotations

import hashlib

import numpy as np

MAGIC = b"ZSWPSUM2"
TRAILER = 48


def footer_pages(n: int, page_size: int) -> int:
    return -(-(8 * n + TRAILER) // page_size)


def data_slots(zone_capacity: int, page_size: int) -> int:
    """Most data pages a zone holds with its footer."""
    d = zone_capacity // page_size
    while d > 0 and (d + footer_pages(d, page_size)) * page_size > zone_capacity:
        d -= 1
    return d


def _checksum(ids_bytes: bytes, head: np.ndarray) -> int:
    h = hashlib.blake2b(digest_size=8)
    h.update(ids_bytes)
    h.update(head.tobytes())
    return int.from_bytes(h.digest(), "little")


def encode(seq: int, ids: np.ndarray, page_size: int, zone_start: int = 0) -> np.ndarray:
    n = int(ids.size)
    buf = np.zeros(footer_pages(n, page_size) * page_size, np.uint8)
    raw = np.ascontiguousarray(ids, dtype="<i8").view(np.uint8)
    buf[:8 * n] = raw
    head = np.array([seq, n, page_size, zone_start], dtype="<u8")
    buf[-TRAILER:-TRAILER + 8] = np.frombuffer(MAGIC, np.uint8)
    buf[-40:-8] = head.view(np.uint8)
    buf[-8:] = np.array([_checksum(raw.tobytes(), head)], "<u8").view(np.uint8)
    return buf


def read_zone_summary(device, zone: int, page_size: int = 4096) -> tuple[int, np.ndarray] | None:
    """(zone sequence number, page ids in slot order) from the footer ending at the zone's write
    pointer, or None when the zone holds no valid summary there (empty, written by someone else,
    cut short by a crash, or a page that only looks like a footer)."""
    z = device.report_zones()[zone]
    written = z.written
    if written < page_size or written % page_size:
        return None
    end = z.start + written
    last = device.read(end - page_size, page_size)
    if bytes(last[-TRAILER:-TRAILER + 8]) != MAGIC:
        return None
    head = last[-40:-8].view("<u8").copy()
    seq, n, ps, start = (int(x) for x in head)
    if ps != page_size or start != z.start or seq == 0:
        return None
    pages = written // page_size
    if n > pages:
        return None
    fp = footer_pages(n, page_size)
    sealed = written == z.capacity and n == data_slots(z.capacity, page_size)
    if not sealed and n + fp != pages:
        return None
    buf = device.read(end - fp * page_size, fp * page_size)
    raw = buf[:8 * n]
    if _checksum(raw.tobytes(), head) != int(last[-8:].view("<u8")[0]):
        return None
    ids = raw.view("<i8").copy()
    if n and int(ids.min()) < 0:
        return None
    return seq, ids


def scan_zone_summaries(device, page_size: int = 4096) -> dict[int, tuple[int, int]]:
    """Rebuild a page index from the device alone: page id -> (device offset of its newest copy,
    zone sequence number), from every zone holding a valid summary (sealed zones, and zones a
    ``close()`` summarised). Within a zone the later slot wins, across zones the higher sequence.
    Pages of zones without a summary (open when the writer died) are not recovered."""
    best: dict[int, tuple[int, int]] = {}
    g = device.geometry
    for z in range(g.nr_zones):
        found = read_zone_summary(device, z, page_size)
        if found is None:
            continue
        seq, ids = found
        base = g.zone_start(z)
        for k, i in enumerate(ids.tolist()):
            old = best.get(i)
            if old is None or old[1] <= seq:
                best[i] = (base + k * page_size, seq)
    return best
