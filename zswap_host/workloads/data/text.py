"""Criteo's text rows (Kaggle ``train.txt``, Terabyte ``day_N``), parsed a block of lines at a time.

A row is 40 tab-separated fields: the label (``0`` or ``1``), 13 integer features ``I1..I13``
(decimal, optionally negative) and 26 categorical features ``C1..C26`` (hexadecimal: 8 digits in
Criteo's files, 1 to 16 accepted). Any field but the label may be empty: an empty integer reads as 0
and an empty categorical as the value 0, as facebookresearch/dlrm reads them (it replaces empty fields
by ``"0"``). ``\\r\\n`` line ends are accepted; blank lines are ignored (they still count in line
numbers).

Parsing is vectorised over the whole block (no per-line Python): the field boundaries come from the
positions of tabs and newlines, and each field's bytes are gathered into a (rows, fields, width) array
and turned into digits through a lookup table. A line with the wrong number of fields, a label other
than 0/1, a non-integer ``I`` field or a non-hexadecimal ``C`` field is *malformed*: the block either
fails on the first one (``DataFormatError`` naming the file, the 1-based line and the field) or drops
them and counts them.

Files are read through ``gzip`` when they start with gzip's magic bytes (``day_N.gz``), so a
Terabyte day can be read without unpacking it.
"""

from __future__ import annotations

import gzip
import zlib
from typing import BinaryIO, Iterator

import numpy as np

from .errors import DataFormatError
from .rows import NUM_CAT, NUM_DENSE, Rows

NUM_FIELDS = 1 + NUM_DENSE + NUM_CAT
FIELD_NAMES = ("label", *(f"I{i}" for i in range(1, NUM_DENSE + 1)), *(f"C{i}" for i in range(1, NUM_CAT + 1)))
MAX_DECIMAL = 18            # digits of an I field (int64 holds 18 decimal digits)
MAX_HEX = 16                # digits of a C field (uint64)
GZIP_MAGIC = b"\x1f\x8b"
MAX_LINE = 1 << 20          # bytes; Criteo's lines are about 300

_DEC = np.full(256, 255, np.uint8)
_DEC[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10, dtype=np.uint8)
_HEX = _DEC.copy()
_HEX[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16, dtype=np.uint8)
_HEX[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16, dtype=np.uint8)
_POW10 = 10 ** np.arange(MAX_DECIMAL, dtype=np.int64)
_POW10U = _POW10[:9].astype(np.uint64)
_LOW = np.array([(1 << 8 * n) - 1 for n in range(9)], np.uint64)     # the first n bytes of a LE word


def open_text(path: str) -> BinaryIO:
    """The file as a binary stream, through gzip when it starts with gzip's magic bytes."""
    f = open(path, "rb")
    if f.read(2) == GZIP_MAGIC:
        f.close()
        return gzip.open(path, "rb")
    f.seek(0)
    return f


class LineTooLong(Exception):
    """A line longer than ``MAX_LINE``: not Criteo text (the reader would otherwise hold it whole)."""


def line_blocks(f: BinaryIO, chunk_bytes: int) -> Iterator[bytes]:
    """Whole lines, about ``chunk_bytes`` at a time, each block ending in a newline (one is added to a
    last line without it). A line longer than ``chunk_bytes`` comes whole in a larger block; one longer
    than ``MAX_LINE`` raises ``LineTooLong``."""
    carry = b""
    while True:
        data = f.read(chunk_bytes)
        if not data:
            if carry:
                yield carry + b"\n"
            return
        buf = carry + data
        cut = buf.rfind(b"\n")
        if cut < 0:
            if len(buf) > MAX_LINE:
                raise LineTooLong
            carry = buf
            continue
        carry = buf[cut + 1:]
        yield buf[:cut + 1]


def _digits(arr: np.ndarray, start: np.ndarray, length: np.ndarray, lut: np.ndarray, width: int,
            signed: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each field's first ``width`` bytes as digits: (digits uint8 (m, k, width), inside mask,
    negative mask, per-field ok). Bytes past a field's end are masked out; a '-' first byte is a sign when
    ``signed``."""
    pos = np.arange(width, dtype=np.int64)
    idx = np.minimum(start[..., None] + pos, arr.size - 1)
    b = arr[idx]
    inside = pos < length[..., None]
    d = lut[b]
    neg = np.zeros(length.shape, bool)
    if signed:
        neg = (b[..., 0] == ord("-")) & (length >= 2)
        d[..., 0] = np.where(neg, 0, d[..., 0])
    ok = ((d != 255) | ~inside).all(axis=-1)
    d = np.where(inside, d, 0)
    return d, inside, neg, ok


def _bytes8(arr: np.ndarray, start: np.ndarray) -> np.ndarray:
    """The 8 bytes from each ``start`` (uint8 (m, k, 8)) in one gather: ``arr`` seen as overlapping
    8-byte words (``arr`` must have 8 bytes of padding after its last field)."""
    words = np.ndarray(shape=(arr.size - 7,), dtype=">u8", buffer=arr, strides=(1,))
    return words[start].view(np.uint8).reshape(*start.shape, 8)


def _decimal(arr, start, length) -> tuple[np.ndarray, np.ndarray]:
    """Signed decimal fields (empty = 0): (int64 values, ok)."""
    if int(length.max(initial=0)) <= 8:       # Criteo's integers: one 8-byte word per field
        b = _bytes8(arr, start)
        first = _LOW[np.minimum(length, 1)]
        neg = (b[..., 0] == ord("-")) & (length >= 2)
        d = b - np.uint8(ord("0"))
        keep = _LOW[length] & ~np.where(neg, first, 0)            # the digit bytes of each field
        ok = ((d > 9).view("<u8").reshape(length.shape) & keep) == 0
        x = d.view("<u8").reshape(length.shape) & keep
        # eight ASCII digits -> their number in three multiply-shift steps (SWAR; first char most
        # significant); the bytes past the field are 0 digits, divided away after
        x = ((x * np.uint64(2561)) >> np.uint64(8)) & np.uint64(0x00FF00FF00FF00FF)
        x = ((x * np.uint64(6553601)) >> np.uint64(16)) & np.uint64(0x0000FFFF0000FFFF)
        x = (x * np.uint64(42949672960001)) >> np.uint64(32)
        v = (x // _POW10U[8 - length]).astype(np.int64)
        return np.where(neg, -v, v), ok
    width = int(min(int(length.max()), MAX_DECIMAL))
    d, inside, neg, ok = _digits(arr, start, np.minimum(length, width), _DEC, width, True)
    ok &= length <= MAX_DECIMAL
    power = np.where(inside, np.minimum(length, width)[..., None] - 1 - np.arange(width), 0)
    v = (d.astype(np.int64) * _POW10[np.clip(power, 0, MAX_DECIMAL - 1)]).sum(axis=-1)
    return np.where(neg, -v, v), ok


def _hex(arr, start, length) -> tuple[np.ndarray, np.ndarray]:
    """Hexadecimal fields (empty = 0): (uint64 values, ok)."""
    if np.isin(length, (0, 8)).all():           # Criteo's: 8 digits or empty, one word per field
        d = _HEX[_bytes8(arr, start)]
        empty = length == 0
        ok = ((d == 255).view("<u8").reshape(length.shape) == 0) | empty
        d[empty] = 0
        pairs = (d[..., 0::2] << 4) | (d[..., 1::2] & 15)         # 4 bytes, most significant first
        v = np.ascontiguousarray(pairs).view(">u4").reshape(length.shape)
        return v.astype(np.uint64), ok
    width = int(min(max(int(length.max(initial=0)), 1), MAX_HEX))
    d, inside, _, ok = _digits(arr, start, np.minimum(length, width), _HEX, width, False)
    ok &= length <= MAX_HEX
    shift = np.where(inside, np.minimum(length, width)[..., None] - 1 - np.arange(width), 0) * 4
    v = np.bitwise_or.reduce(d.astype(np.uint64) << shift.astype(np.uint64), axis=-1)
    return v, ok


def _show(buf: bytes, a: int, b: int) -> str:
    text = buf[a:b].decode("utf-8", "replace")
    return repr(text if len(text) <= 24 else text[:21] + "...")


def parse_block(buf: bytes, path: str, first_line: int, skip_bad: bool, keep_bad: int = 5) -> Rows:
    """Parse a block of whole lines (ending in a newline) whose first line is line ``first_line`` of
    ``path`` (1-based). Raises ``DataFormatError`` at the first malformed line unless ``skip_bad``."""
    if b"\r" in buf:
        buf = buf.replace(b"\r\n", b"\n")
    arr = np.frombuffer(buf + bytes(8), np.uint8)        # padded for the 8-byte gathers
    body = arr[:-8]
    nl = np.flatnonzero(body == 10)
    starts = np.concatenate(([0], nl[:-1] + 1)).astype(np.int64)
    lineno = first_line + np.arange(nl.size)
    # field ends: the tab or newline after each field
    seps = np.flatnonzero((body == 9) | (body == 10))
    ntabs = np.diff(np.searchsorted(seps, nl), prepend=-1) - 1
    blank = nl == starts
    fields_ok = ntabs == NUM_FIELDS - 1
    if fields_ok.all():
        ends = seps.reshape(-1, NUM_FIELDS)
    else:
        owner = np.repeat(np.arange(nl.size), ntabs + 1)
        ends = seps[fields_ok[owner]].reshape(-1, NUM_FIELDS)
    fstart = np.empty_like(ends)
    fstart[:, 0] = starts[fields_ok]
    fstart[:, 1:] = ends[:, :-1] + 1
    flen = ends - fstart
    label_ok = (flen[:, 0] == 1) & ((arr[fstart[:, 0]] == ord("0")) | (arr[fstart[:, 0]] == ord("1")))
    dense, dense_ok = _decimal(arr, fstart[:, 1:1 + NUM_DENSE], flen[:, 1:1 + NUM_DENSE])
    cat, cat_ok = _hex(arr, fstart[:, 1 + NUM_DENSE:], flen[:, 1 + NUM_DENSE:])
    field_ok = np.concatenate((label_ok[:, None], dense_ok, cat_ok), axis=1)
    row_ok = field_ok.all(axis=1)
    labels = (arr[fstart[:, 0]] == ord("1")).astype(np.float32)
    if row_ok.all() and fields_ok.sum() + blank.sum() == nl.size:
        return Rows(dense, cat, labels)

    # malformed lines: say which and why (the first few), then fail or drop them
    good_line = np.zeros(nl.size, bool)
    good_line[np.flatnonzero(fields_ok)[row_ok]] = True
    bad_lines = np.flatnonzero(~good_line & ~blank)
    reasons = []
    field_rows = np.cumsum(fields_ok) - 1               # line -> row among the 40-field lines
    for i in bad_lines[: 1 if not skip_bad else keep_bad]:
        if not fields_ok[i]:
            why = f"expected {NUM_FIELDS} tab-separated fields, found {ntabs[i] + 1}"
        else:
            r = field_rows[i]
            f = int(np.flatnonzero(~field_ok[r])[0])
            kind = "0 or 1" if f == 0 else ("an integer" if f <= NUM_DENSE else "hexadecimal")
            why = (f"field {f + 1} ({FIELD_NAMES[f]}) is {_show(buf, fstart[r, f], ends[r, f])}, "
                   f"not {kind}")
        reasons.append((int(lineno[i]), why))
    if not skip_bad:
        raise DataFormatError(reasons[0][1], path, reasons[0][0])
    return Rows(dense[row_ok], cat[row_ok], labels[row_ok], int(bad_lines.size), tuple(reasons))


def read_rows(path: str, chunk_bytes: int, skip_bad: bool) -> Iterator[Rows]:
    """Every row of a text file in order, a block of about ``chunk_bytes`` at a time."""
    line = 1
    with open_text(path) as f:
        blocks = line_blocks(f, chunk_bytes)
        while True:
            try:
                block = next(blocks, None)
            except LineTooLong:
                raise DataFormatError(f"a line longer than {MAX_LINE} bytes: not Criteo text",
                                      path, line) from None
            except (OSError, EOFError, zlib.error) as e:       # a truncated or corrupt .gz
                raise DataFormatError(f"cannot read past line {line - 1}: {e}", path) from None
            if block is None:
                return
            rows = parse_block(block, path, line, skip_bad)
            line += block.count(b"\n")
            yield rows
