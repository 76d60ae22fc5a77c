"""Which failures of a point a retry can change. A point is a pure function of its inputs
(``point.py``), so an error that says the inputs are wrong — an unknown name, a bad argument, a
plugin that does not load (``ValueError``, ``LookupError``, ``TypeError``) — comes back on every
attempt: it is reported at once, not retried. What is left is luck (a lost worker, memory, I/O of
the machine, an injected fault): that is what ``retries`` are for."""

from __future__ import annotations

PERMANENT = (ValueError, LookupError, TypeError)


def permanent(e: BaseException) -> bool:
    """Whether ``e`` would be raised again by the same point (not worth a retry)."""
    return isinstance(e, PERMANENT)


def describe(e: BaseException) -> str:
    """``Type: last line of the message`` (one line)."""
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[-1]}" if text else type(e).__name__
