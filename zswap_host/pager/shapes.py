"""The size of a paged array, checked before anything is mapped (issue 34: ``np.prod`` wraps in
int64, so a huge shape became a small or zero size, and a negative one a positive size)."""

from __future__ import annotations

MAX_REGION_BYTES = 1 << 47       # the x86-64 user address space: a larger mapping cannot succeed
MAX_PAGE_ID = (1 << 63) - 1      # backend page ids are int64 (SwapBackend)


def as_shape(shape) -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple; ``ValueError`` for a negative dimension."""
    dims = (shape,) if isinstance(shape, int) or not hasattr(shape, "__iter__") else tuple(shape)
    dims = tuple(int(s) for s in dims)
    if any(s < 0 for s in dims):
        raise ValueError(f"shape {dims}: negative dimension")
    return dims


def region_bytes(shape: tuple[int, ...], itemsize: int) -> int:
    """Bytes of an array of ``shape`` (exact: Python ints); ``ValueError`` if 0 or above
    ``MAX_REGION_BYTES``."""
    n = int(itemsize)
    for s in shape:
        n *= s
    if n <= 0:
        raise ValueError("a paged region needs at least one byte")
    if n > MAX_REGION_BYTES:
        raise ValueError(f"shape {shape}: {n} bytes is beyond the address space ({MAX_REGION_BYTES} bytes)")
    return n
