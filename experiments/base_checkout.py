"""An older commit checked out beside this one for a side-by-side measurement (``bench_quick_ab.py``,
``replay_cpu_ab.py``): a temporary detached git worktree with its C extensions built in place, removed
on exit. Run the older side with ``PYTHONPATH`` set to the path it yields."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextlib.contextmanager
def base_checkout(commit: str) -> Iterator[str]:
    """The path of ``commit``'s checkout, its extensions built (CalledProcessError if either fails)."""
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "-q", base, commit], check=True)
        try:
            subprocess.run([sys.executable, "native/build_native.py"], cwd=base, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            yield base
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", base], check=False)
