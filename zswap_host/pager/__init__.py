"""Transparent swap for unmodified code: memory whose pages fault in from, and evict to, any
``SwapBackend``, through userfaultfd (issue 15). ``Pager`` is the entry point (``Pager.process``:
the backend in a process of its own, no Python on the fault path, issue 33); docs/design.md, "The
pager", has the protocol and its limits."""

from .pager import Pager
from .process import BackendGone
from .smaps import range_rss
from .stats import PagerStats

__all__ = ["BackendGone", "Pager", "PagerStats", "range_rss"]
