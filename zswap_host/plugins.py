"""User plugins: your own code — a GC victim policy, a placement, a device URL scheme, an interface's
placement units — loaded by ``bench``, ``sweep`` and ``replay`` in their own process and in every
process they start (Ray workers, spawned run processes), so a name it registers works everywhere.

A plugin is one of:

- ``--plugin NAME``: a module name importable here (on ``sys.path``/``PYTHONPATH``, or installed);
- ``--plugin PATH.py``: a Python file anywhere (a spec that ends in ``.py`` or holds a ``/`` is a
  path; it is made absolute, so a spawned process or a recorded command finds it from any
  directory). It is imported as the module ``zswap_host_plugin_<its stem>_<hash of its path>``;
- an installed distribution's entry point in the group ``zswap_host.plugins`` (``pyproject.toml``:
  ``[project.entry-points."zswap_host.plugins"] mine = "my_pkg.zswap"``): loaded by every command
  that loads plugins, without ``--plugin``. An entry point naming a module is imported; one naming a
  function is imported and called with no arguments.

Importing the module is all it takes: it registers its names as a library user would
(``register_victim_policy``, ``register_placement``, ``register_scheme``, ``register_interface``).
Loading is idempotent per process. How it reaches other processes: the specs given are kept in the
environment (:data:`ENV`), which spawned processes inherit and load from (:func:`ensure_loaded`);
Ray tasks get them as an argument (``sweep/ray_executor.py``), so a Ray session started before, or
a cluster (``--address``: the file must be at the same path on its nodes, as the trace must), sees
them too. docs/plugins.md is the user's guide.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
import re
import sys
import traceback
import types
from typing import Sequence

from .errors import ZswapError

ENTRY_POINT_GROUP = "zswap_host.plugins"
ENV = "ZSWAP_HOST_PLUGINS"          # os.pathsep-separated specs, for processes started from this one
FILE_MODULE_PREFIX = "zswap_host_plugin_"

_given: dict[str, str] = {}         # spec (normalised) -> module name, in the order given
_entry_points_loaded = False


class PluginError(ZswapError, ValueError):
    """A plugin that cannot be loaded: no such module or file, or its import raised (the message
    names the plugin, the error and where in the plugin it was raised)."""


def normalise(spec: str) -> str:
    """A module name as it is; a path (``.py`` suffix, or a ``/`` in it) made absolute.
    ``PluginError`` for an empty spec or one that is neither."""
    if not isinstance(spec, str) or not spec.strip():
        raise PluginError("an empty --plugin: give a module name or a path to a .py file")
    spec = spec.strip()
    if _is_path(spec):
        return os.path.abspath(os.path.expanduser(spec))
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", spec):
        raise PluginError(f"plugin {spec!r} is neither a module name (my_pkg.policies) nor a path to a .py file")
    return spec


def _is_path(spec: str) -> bool:
    return spec.endswith(".py") or "/" in spec or os.sep in spec


def _where(e: BaseException, path: str | None) -> str:
    """' (FILE:LINE)': the innermost frame of the traceback inside the plugin (or a SyntaxError's)."""
    if isinstance(e, SyntaxError) and e.filename:
        return f" ({e.filename}:{e.lineno})"
    frames = traceback.extract_tb(e.__traceback__)
    inside = [f for f in frames if path is None or os.path.abspath(f.filename) == path] or frames[-1:]
    return f" ({inside[-1].filename}:{inside[-1].lineno})" if inside else ""


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[-1]}" if text else type(e).__name__


def _load_file(path: str) -> str:
    if not os.path.isfile(path):
        raise PluginError(f"plugin file {path}: no such file")
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    # the same name in every process for the same path (pickles by reference resolve), distinct per path
    name = f"{FILE_MODULE_PREFIX}{stem}_{hashlib.sha1(path.encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"plugin file {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module            # by name, as an import would: pickles of its objects resolve
    try:
        spec.loader.exec_module(module)
    except BaseException as e:
        sys.modules.pop(name, None)
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        raise PluginError(f"plugin {path} failed while loading: {_one_line(e)}{_where(e, path)}") from None
    return name


def _load_module(name: str) -> str:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name is not None and (name == e.name or name.startswith(e.name + ".")):
            raise PluginError(f"cannot import plugin module {name!r}: no module named {e.name!r} (give an "
                              f"importable module name, or a path to a .py file)") from None
        raise PluginError(f"plugin {name} failed while loading: {_one_line(e)}{_where(e, None)}") from None
    except Exception as e:
        raise PluginError(f"plugin {name} failed while loading: {_one_line(e)}{_where(e, None)}") from None
    return name


def load_plugin(spec: str) -> str:
    """Import one plugin (a module name or a path to a .py file, see the module doc) unless this
    process has already; the module's name. ``PluginError`` when it cannot be loaded."""
    spec = normalise(spec)
    if spec not in _given:
        _given[spec] = _load_file(spec) if _is_path(spec) else _load_module(spec)
    return _given[spec]


def load_entry_points() -> list[str]:
    """Load every ``zswap_host.plugins`` entry point of the installed distributions (once per
    process); their names. ``PluginError`` naming the entry point and its distribution when one
    fails."""
    global _entry_points_loaded
    eps = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    if _entry_points_loaded:
        return [ep.name for ep in eps]
    for ep in eps:
        dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
        try:
            obj = ep.load()
            if isinstance(obj, types.FunctionType):
                obj()
        except Exception as e:
            raise PluginError(f"plugin entry point {ep.name} = {ep.value} (from {dist}) failed while loading: "
                              f"{_one_line(e)}{_where(e, None)}") from None
    _entry_points_loaded = True
    return [ep.name for ep in eps]


def load_plugins(specs: Sequence[str] = (), entry_points: bool = True) -> list[str]:
    """Load the entry points (unless ``entry_points`` is False), then ``specs`` in order; keep every
    spec given so far in the environment (:data:`ENV`) for the processes this one starts. Returns
    the specs given so far (normalised). ``PluginError`` for the first that fails (the ones before
    it stay loaded)."""
    if entry_points:
        load_entry_points()
    for s in specs:
        load_plugin(s)
    if _given:
        os.environ[ENV] = os.pathsep.join(_given)
    return list(_given)


def given() -> list[str]:
    """The specs loaded in this process (normalised: paths absolute), in the order given."""
    return list(_given)


def from_env() -> list[str]:
    """The specs the process that started this one passed on (:data:`ENV`)."""
    return [s for s in os.environ.get(ENV, "").split(os.pathsep) if s]


def ensure_loaded(specs: Sequence[str] | None = None) -> list[str]:
    """What a worker process calls first: the entry points, then ``specs`` (None: :func:`from_env`).
    Idempotent; ``PluginError`` as :func:`load_plugins`."""
    return load_plugins(from_env() if specs is None else specs)


def command_args() -> str:
    """`` --plugin SPEC`` for each spec given, for a recorded command line (paths absolute, quoted
    where the shell needs it)."""
    import shlex

    return "".join(f" --plugin {shlex.quote(s)}" for s in _given)


PLUGIN_HELP = ("Load your own code first, here and in every worker: a module name or a path to a .py file "
               "that registers victim policies, placements or device schemes (repeatable; docs/plugins.md). "
               f"Installed '{ENTRY_POINT_GROUP}' entry points are loaded too.")


def plugin_option(fn):
    """Click decorator: ``--plugin MODULE|FILE.py`` (repeatable), loaded (with the entry points)
    before the command runs. Put it under ``friendly_errors`` so a bad plugin is one line, exit 2."""
    import click

    @functools.wraps(fn)
    def wrapper(*args, plugin_specs=(), **kwargs):
        load_plugins(plugin_specs)
        return fn(*args, **kwargs)

    return click.option("--plugin", "plugin_specs", multiple=True, metavar="MODULE|FILE.py",
                        help=PLUGIN_HELP)(wrapper)
