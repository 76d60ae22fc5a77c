"""The checks of a request before a device does anything with it: aligned and inside the device
(one range or a batch), a zone write inside its zone, a zone append's size, and the arguments of
``append_batch``, ``write_batch`` and grouped calls. A bad request raises ``InvalidIOError`` (or
``ZoneStateError`` for a write across a zone's end) naming the first bad range."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidIOError, ZoneStateError
from .buffers import Buffer, as_bytes_view
from .zone import ZoneGeometry


def check_aligned(offset: int, length: int, block_size: int, limit: int, what: str = "I/O") -> None:
    """Raise InvalidIOError unless [offset, offset+length) is block aligned and inside [0, limit)."""
    if offset < 0 or length <= 0 or offset + length > limit:
        raise InvalidIOError(f"{what} [{offset}, {offset + length}) is outside the device (size {limit})")
    if offset % block_size or length % block_size:
        raise InvalidIOError(f"{what} at {offset} of {length} bytes is not aligned to the {block_size}-byte block size")


def check_batch(offsets: np.ndarray, lengths: np.ndarray, block_size: int, limit: int, what: str) -> None:
    """check_aligned for many ranges at once (the per-range check only runs to name the bad one)."""
    if offsets.shape != lengths.shape:
        raise InvalidIOError(f"{what} batch: {offsets.size} offsets but {lengths.size} lengths")
    if offsets.size <= 4:
        for o, n in zip(offsets.tolist(), lengths.tolist()):
            check_aligned(o, n, block_size, limit, what)
        return
    # three reductions (the OR of all offsets and lengths: with a power-of-two block a misaligned one
    # leaves a low bit, a negative one the sign); the per-range mask only when one may be bad
    either = int(np.bitwise_or.reduce(offsets | lengths))
    if either % block_size or either < 0 or block_size & (block_size - 1) or int(lengths.min()) <= 0 \
            or int((offsets + lengths).max()) > limit:
        bad = (offsets < 0) | (lengths <= 0) | (offsets + lengths > limit) | (offsets % block_size != 0) \
            | (lengths % block_size != 0)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            check_aligned(int(offsets[k]), int(lengths[k]), block_size, limit, what)


def check_write_batch(offsets, data: Buffer, lengths, block_size: int, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A ``write_batch``'s arguments as int64 arrays and a byte view, checked: the lengths add up to
    the data, every range is aligned and inside ``[0, limit)``."""
    offsets = np.asarray(offsets, np.int64)
    lengths = np.asarray(lengths, np.int64)
    view = as_bytes_view(data)
    if int(lengths.sum()) != view.size:
        raise InvalidIOError(f"write batch: lengths add up to {int(lengths.sum())}, data holds {view.size}")
    check_batch(offsets, lengths, block_size, limit, "write")
    return offsets, lengths, view



def check_groups(group_sizes, group_qds, n: int, what: str) -> np.ndarray:
    """``group_sizes`` as int64, checked: as many as ``group_qds``, none negative, adding up to ``n``
    ranges (``InvalidIOError`` otherwise)."""
    group_sizes = np.asarray(group_sizes, np.int64)
    if group_sizes.shape != np.shape(group_qds) or (group_sizes < 0).any() or int(group_sizes.sum()) != n:
        raise InvalidIOError(f"{what} groups: {group_sizes.size} groups of {int(group_sizes.sum())} ranges "
                             f"({np.size(group_qds)} queue depths) for {n} ranges")
    return group_sizes


def check_zone_write(g: ZoneGeometry, offset: int, length: int) -> int:
    """The zone a write lands in: aligned, inside the device, not crossing a zone's end."""
    check_aligned(offset, length, g.block_size, g.size, "write")
    z = g.zone_of(offset)
    if g.zone_of(offset + length - 1) != z:
        raise ZoneStateError(f"write at {offset} of {length} bytes crosses the end of zone {z}", zone=z)
    return z


def check_append(g: ZoneGeometry, length: int) -> None:
    """A zone append's size: whole blocks, at most a zone, within the device's append limit."""
    check_aligned(0, length, g.block_size, g.zone_size, "zone append")
    if g.max_append and length > g.max_append:
        raise InvalidIOError(f"zone append of {length} bytes exceeds the device's append limit {g.max_append}")


def check_append_batch(g: ZoneGeometry, zones, data, lengths, views: bool = True) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """An ``append_batch``'s arguments as int64 arrays and one uint8 view per request (no copy),
    checked: every zone exists, every length is a valid append, the data matches the lengths (one
    buffer: they add up to its size; a sequence: one buffer of each length). ``views=False`` with
    one buffer: the third item is the buffer's flat uint8 view instead of the per-request views."""
    zones = np.asarray(zones, np.int64)
    lengths = np.asarray(lengths, np.int64)
    if zones.ndim != 1:
        zones = zones.reshape(-1)
    if lengths.ndim != 1:
        lengths = lengths.reshape(-1)
    if zones.shape != lengths.shape:
        raise InvalidIOError(f"append batch: {zones.size} zones but {lengths.size} lengths")
    if zones.size > 64:
        zones, lengths, units = _check_append_batch_np(g, zones, data, lengths)
        return zones, lengths, (units if views or isinstance(data, (list, tuple)) else as_bytes_view(data))
    # a batch of write units (the usual size): checked on Python ints, no numpy reduction
    zl, ll = zones.tolist(), lengths.tolist()
    if isinstance(data, (list, tuple)):
        units = _split_segments([as_bytes_view(d) for d in data], ll)
    else:
        view = as_bytes_view(data)
        if sum(ll) != view.size:
            raise InvalidIOError(f"append batch: lengths add up to {sum(ll)}, data holds {view.size}")
        if views:
            units, e = [], 0
            for n in ll:
                units.append(view[e:e + n])
                e += n
        else:
            units = view
    if zl and (min(zl) < 0 or max(zl) >= g.nr_zones):
        z = next(z for z in zl if z < 0 or z >= g.nr_zones)
        raise InvalidIOError(f"zone {z} does not exist (the device has {g.nr_zones} zones)")
    limit, bs = g.max_append or g.zone_size, g.block_size
    for n in ll:
        if n <= 0 or n > limit or n % bs:
            check_append(g, n)                   # raises, naming the first bad one
    return zones, lengths, units


def _split_segments(segs: list[np.ndarray], ll: list[int]) -> list[np.ndarray]:
    """One view per request of an ``append_batch`` given as a sequence of buffers, each holding one
    or more whole requests back to back (one buffer per request: the buffers themselves).
    ``InvalidIOError`` when the buffers do not split into the lengths."""
    sizes = [u.size for u in segs]
    if sizes == ll:
        return segs
    units, k = [], 0
    for seg in segs:
        e = 0
        while e < seg.size and k < len(ll) and ll[k] > 0 and e + ll[k] <= seg.size:
            units.append(seg[e:e + ll[k]])
            e, k = e + ll[k], k + 1
        if e != seg.size:
            break
    else:
        if k == len(ll):
            return units
    raise InvalidIOError(f"append batch: {len(ll)} lengths but buffers of sizes {sizes}")


def _check_append_batch_np(g: ZoneGeometry, zones: np.ndarray, data, lengths: np.ndarray):
    """``check_append_batch`` of a long batch, with numpy reductions."""
    if isinstance(data, (list, tuple)):
        units = _split_segments([as_bytes_view(d) for d in data], lengths.tolist())
    else:
        view = as_bytes_view(data)
        if int(lengths.sum()) != view.size:
            raise InvalidIOError(f"append batch: lengths add up to {int(lengths.sum())}, data holds {view.size}")
        ends = np.cumsum(lengths).tolist()
        units = [view[e - n:e] for e, n in zip(ends, lengths.tolist())]
    if zones.size and (int(zones.min()) < 0 or int(zones.max()) >= g.nr_zones):
        z = int(zones[np.flatnonzero((zones < 0) | (zones >= g.nr_zones))[0]])
        raise InvalidIOError(f"zone {z} does not exist (the device has {g.nr_zones} zones)")
    limit = g.max_append or g.zone_size
    if zones.size and (int(lengths.min()) <= 0 or int(lengths.max()) > limit or (lengths % g.block_size).any()):
        bad = (lengths <= 0) | (lengths > limit) | (lengths % g.block_size != 0)
        check_append(g, int(lengths[np.flatnonzero(bad)[0]]))     # raises, naming the first bad one
    return zones, lengths, units

