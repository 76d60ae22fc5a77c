"""A swap trace's arrays checked as they are read (issue 34: unknown op codes were skipped, reversed
bounds and negative idle windows replayed, and reports showed negative pages and stalls). A trace
that fails is ``TraceFileError``, one line naming the file, the chunk and the first bad row (event)."""

from __future__ import annotations

import json

import numpy as np

from ..errors import ZswapError

ARRAYS = ("ops", "streams", "idle_s", "bounds", "ids")
N_OPS = 5                          # trace.SWAP_IN .. trace.OVERLAP
INT32_MAX = (1 << 31) - 1


class TraceFileError(ZswapError):
    """A trace file or chunked trace directory that is missing, incomplete, damaged or not one."""


def checked_arrays(f, where: str, id_limit: int | None = None) -> tuple[dict, dict]:
    """The arrays and meta of an opened trace ``.npz`` (``np.load``'s result), as the replay takes
    them (ops uint8, streams int32, idle_s float64, bounds and ids int64). ``where`` names the file
    (and chunk) in the message. ``id_limit``: page ids must be below it (the trace's id space;
    None: the meta's ``total_pages`` or ``pages`` where it has one)."""
    missing = [k for k in (*ARRAYS, "meta") if k not in f]
    if missing:
        raise TraceFileError(f"{where}: not a swap trace (no {', '.join(missing)} array)")
    a = {k: f[k] for k in ARRAYS}
    try:
        meta = json.loads(str(f["meta"]))
    except ValueError as e:
        raise TraceFileError(f"{where}: its meta is not JSON ({e})") from None
    if not isinstance(meta, dict):
        raise TraceFileError(f"{where}: its meta is not a JSON object")
    for k, v in a.items():
        if v.ndim != 1:
            raise TraceFileError(f"{where}: {k} has shape {v.shape}, not one dimension")
        kinds = "iuf" if k == "idle_s" else "iu"
        if v.dtype.kind not in kinds:
            raise TraceFileError(f"{where}: {k} holds {v.dtype}, not {'numbers' if k == 'idle_s' else 'integers'}")
    n = a["ops"].size
    for k in ("streams", "idle_s"):
        if a[k].size != n:
            raise TraceFileError(f"{where}: {k} has {a[k].size} rows for {n} events")
    b = a["bounds"]
    if b.size != n + 1:
        raise TraceFileError(f"{where}: bounds has {b.size} entries for {n} events (want {n + 1})")
    _row(where, a["ops"] >= N_OPS, lambda k: f"unknown op code {int(a['ops'][k])} (known: 0..{N_OPS - 1})")
    _row(where, a["streams"] < 0, lambda k: f"negative stream {int(a['streams'][k])}")
    _row(where, a["streams"] > INT32_MAX, lambda k: f"stream {int(a['streams'][k])} beyond int32")
    idle = a["idle_s"].astype(np.float64)
    _row(where, ~(np.isfinite(idle) & (idle >= 0)), lambda k: f"idle window {float(idle[k])!r} s (want finite, >= 0)")
    if int(b[0]) != 0:
        raise TraceFileError(f"{where}: bounds start at {int(b[0])}, not 0")
    _row(where, np.diff(b.astype(np.int64)) < 0,
         lambda k: f"reversed bounds {int(b[k])} > {int(b[k + 1])}")
    ids = a["ids"]
    if int(b[-1]) != ids.size:
        raise TraceFileError(f"{where}: bounds end at {int(b[-1])}, but it holds {ids.size} ids")
    if ids.dtype.kind == "u" and ids.size and int(ids.max()) > np.iinfo(np.int64).max:
        bad = int(np.argmax(ids > np.iinfo(np.int64).max))
        _id_row(where, b, bad, f"page id {int(ids[bad])} beyond int64")
    ids = ids.astype(np.int64)
    if ids.size and int(ids.min()) < 0:
        bad = int(np.argmax(ids < 0))
        _id_row(where, b, bad, f"negative page id {int(ids[bad])}")
    if id_limit is None:                 # the trace's own id space, where its meta records one
        own = meta.get("total_pages", meta.get("pages"))
        id_limit = own if isinstance(own, int) and not isinstance(own, bool) and own > 0 else None
    if id_limit and ids.size and int(ids.max()) >= id_limit:
        bad = int(np.argmax(ids >= id_limit))
        _id_row(where, b, bad, f"page id {int(ids[bad])} beyond the trace's {id_limit} pages")
    return ({"ops": a["ops"].astype(np.uint8), "streams": a["streams"].astype(np.int32), "idle_s": idle,
             "bounds": b.astype(np.int64), "ids": ids}, meta)


def _row(where: str, bad: np.ndarray, what) -> None:
    if bad.any():
        k = int(np.argmax(bad))
        raise TraceFileError(f"{where}: row {k}: {what(k)}")


def _id_row(where: str, bounds: np.ndarray, i: int, what: str) -> None:
    k = int(np.searchsorted(bounds, i, side="right")) - 1
    raise TraceFileError(f"{where}: row {k}: {what}")
