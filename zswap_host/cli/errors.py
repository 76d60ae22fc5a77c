"""How a command fails: bad input ends in one line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import functools
import sys

import click

from ..errors import ZswapError


def fail(message: str) -> None:
    click.echo(f"zswap-host: error: {message}", err=True)
    sys.exit(2)


def _quiet_broken_pipe() -> None:
    """The reader of our stdout went away (``zswap-host info … | head``): stop without a word, as
    other Unix tools do; stdout goes to /dev/null so the interpreter's last flush cannot complain."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(141)                       # 128 + SIGPIPE, what a shell reports for a tool killed by it


def friendly_errors(fn):
    """Bad input ends in one line on stderr and exit code 2, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:
            _quiet_broken_pipe()
        except (ZswapError, ValueError) as e:
            fail(str(e))
        except OSError as e:
            fail(f"{e.filename or ''}: {e.strerror or e}".lstrip(": "))
        except (MemoryError, OverflowError) as e:   # sizes no check caught: still one line, exit 2
            fail(f"out of memory or range: {e or type(e).__name__}")

    return wrapper
