"""Old run names and what they are called now, one mapping for every command that names runs
(``bench``, ``replay``, the experiments reading committed reports): the store's runs are named
``store-on-INTERFACE`` with the sweep's interface names. An old name still works; the CLI says once
on stderr that it is deprecated."""

from __future__ import annotations

from typing import Iterable

# old name -> its name now
RENAMED_RUNS = {"zns-host-gc": "store-on-zns"}


def current_name(name: str) -> str:
    """``name`` as it is called now (an unknown or current name unchanged)."""
    return RENAMED_RUNS.get(name, name)


def current_names(names: Iterable[str]) -> tuple[str, ...]:
    """Each of ``names`` (stripped, empty ones dropped) as it is called now, in the order given,
    duplicates dropped."""
    return tuple(dict.fromkeys(current_name(n.strip()) for n in names if n.strip()))


def renamed_notes(command: str, names: Iterable[str]) -> list[str]:
    """One deprecation line per distinct old name among ``names``, for ``zswap-host COMMAND``'s
    stderr: ``zswap-host bench: run zns-host-gc is called store-on-zns now``."""
    old = dict.fromkeys(n.strip() for n in names if n.strip() in RENAMED_RUNS)
    return [f"zswap-host {command}: run {n} is called {RENAMED_RUNS[n]} now" for n in old]


def old_keys(d: dict) -> dict:
    """The keys of ``d`` derived from a run's name now (``slowdown_store-on-zns``,
    ``speedup_store_on_zns_vs_linux_swap``), under the old name's key instead, with the same values:
    a report keeps them beside the new ones so its readers from before the rename still work."""
    out = {}
    for key, value in d.items():
        for old, new in RENAMED_RUNS.items():
            for o, n in ((old, new), (old.replace("-", "_"), new.replace("-", "_"))):
                if n in key and key.replace(n, o) not in d:
                    out[key.replace(n, o)] = value
    return out


def current_report(obj):
    """A copy of a JSON report (``bench``'s, ``replay``'s, an experiment's; nested dicts and lists)
    as it reads after the rename: every string value that is an old run name as its name now, and
    every key naming one (``zns-host-gc``, ``slowdown_zns-host-gc``, ``speedup_zns_host_gc_vs_...``,
    ``module zns-host-gc (lookahead 0)``) with the name now in its place. Reports written before the
    rename (the committed ones in experiments/results/) then read as new ones do; other strings (a
    recorded command) stay as they were."""
    if isinstance(obj, dict):
        return {_current_key(k) if isinstance(k, str) else k: current_report(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [current_report(v) for v in obj]
    return current_name(obj) if isinstance(obj, str) else obj


def _current_key(key: str) -> str:
    for old, new in RENAMED_RUNS.items():
        key = key.replace(old, new).replace(old.replace("-", "_"), new.replace("-", "_"))
    return key
