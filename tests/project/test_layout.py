"""The package's layout, read from its source with ``ast`` (nothing is imported): no import cycle
between modules, no room importing a room above it, and no reach into another module's private
attributes beyond the counts recorded here (issue 31). And the tests' own layout: test modules in
folders named for what they test, helpers in tests/support/, no test module importing another.

A room is a subpackage of ``zswap_host`` (``store``, ``devices``, ...) or a top-level module
(``errors``, ``cli``, ...); ``zswap_host/__init__.py`` is the room ``zswap_host``. Every import
counts, also one inside a function (a lazy import is still a dependency); the C extensions
(``zswap_host._native`` and the like) are not modules here.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "zswap_host"
TESTS = Path(__file__).resolve().parents[1]
# an import of a test module, also in code a test hands to a child process as a string
TEST_IMPORT = re.compile(r"^\s*(?:from|import)\s+test_\w+", re.M)

# The rooms from the bottom up, as today's graph layers them (a room's layer is one more than the
# highest room it imports). A room may import only rooms of lower layers: a new room, or a new
# import, takes its place here. Read bottom up: what a room knows of is always below it.
LAYERS: list[set[str]] = [
    # foundations: errors, sizes, the swap protocol, the SSD timing model, small CLI helpers
    {"backend", "errors", "neighbours", "output_paths", "progress", "renamed_options", "report",
     "run_names", "ssdsim", "text_table", "units"},
    # devices (know nothing of swap), GC policy, the pager, plugins, verification, model fidelity
    {"characterize", "characterize_common", "devices", "gc", "pager", "plugins", "verify"},
    # the swap store and the workloads (the page cache, traces, DLRM data and presets)
    {"characterize_conv", "characterize_zns", "store", "workloads"},
    # the Linux-swap baseline over the store's rooms; the PyTorch modules over the page cache
    {"baseline", "torch"},
    # the bench and the package's public names
    {"bench", "zswap_host"},
    {"distributed", "sweep"},
    {"replay"},
    {"cli"},
]

# Reaches into another module's private attributes (``x._name``, x not ``self``/``cls``, ``_name``
# defined nowhere in the reaching module), per file: a ceiling that may only go down. A file not
# listed may make none; none is listed: no module reaches into another's private attributes.
REACH_CEILING: dict[str, int] = {}
NAMEDTUPLE_API = {"_asdict", "_field_defaults", "_fields", "_make", "_replace"}   # public despite the "_"


# -- the readers ------------------------------------------------------------------------------------
def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package's ``__init__``) for every module under ``root``."""
    out = {}
    for p in sorted(root.rglob("*.py")):
        parts = list(p.relative_to(root.parent).with_suffix("").parts)
        pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if pkg else parts)] = (p, pkg)
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from pkg import mod`` is an import of
    ``pkg.mod``; a name that is no module is an import of the module that holds it)."""
    mods = modules(root)
    top = root.name

    def extension(name: str) -> bool:          # a C extension (zswap_host._native, ...): no module here
        parts = name.split(".")
        return len(parts) > 1 and parts[1].startswith("_") and ".".join(parts[:2]) not in mods

    def known(name: str) -> str:
        while name not in mods:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, (path, pkg) in mods.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if pkg else mod.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                targets = [f"{src}.{a.name}" if f"{src}.{a.name}" in mods or extension(f"{src}.{a.name}") else src
                           for a in node.names]
            for t in targets:
                if (t == top or t.startswith(top + ".")) and not extension(t):
                    k = known(t)
                    if k != mod:
                        graph[mod].add(k)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: strongly connected sets of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def upward_imports(graph: dict[str, set[str]], layers: list[set[str]]) -> list[str]:
    """Every import of a room from a room not below it, and every room no layer holds."""
    layer = {r: i for i, rooms in enumerate(layers) for r in rooms}
    bad = set()
    for a, bs in graph.items():
        ra = room(a)
        if ra not in layer:
            bad.add(f"room {ra!r} is in no layer of LAYERS")
            continue
        for b in bs:
            rb = room(b)
            if rb != ra and layer.get(rb, len(layers)) >= layer[ra]:
                bad.add(f"{a} imports {b}: room {ra!r} (layer {layer[ra]}) may not import {rb!r} "
                        f"(layer {layer.get(rb)})")
    return sorted(bad)


def private_reaches(path: Path) -> Counter:
    """``x._name`` accesses in one file where ``x`` is not ``self``/``cls`` and ``_name`` is
    defined nowhere in the file (no def, class, module name, class attribute or ``self._name =``)."""
    tree = ast.parse(path.read_text(), str(path))
    defined = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            defined.add(node.attr)
    out = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                and node.attr not in defined and node.attr not in NAMEDTUPLE_API \
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            out[node.attr] += 1
    return out


# -- the package ------------------------------------------------------------------------------------
def test_no_import_cycle_between_modules():
    assert cycles(import_graph(PACKAGE)) == []


def test_no_room_imports_a_room_above_it():
    graph = import_graph(PACKAGE)
    assert upward_imports(graph, LAYERS) == []
    listed = [r for rooms in LAYERS for r in rooms]
    assert len(listed) == len(set(listed)), "a room is in two layers"
    assert set(listed) == {room(m) for m in graph}, "LAYERS names a room that does not exist"


def test_private_reaches_stay_under_their_ceilings():
    over = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        rel = p.relative_to(PACKAGE).as_posix()
        n = sum(private_reaches(p).values())
        if n > REACH_CEILING.get(rel, 0):
            over[rel] = (n, dict(private_reaches(p)))
    assert over == {}
    for rel in ("store/express.py", "store/native.py"):
        assert sum(private_reaches(PACKAGE / rel).values()) == 0


# -- the readers find what they look for ------------------------------------------------------------
def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in files.items():
        f = root / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return root


def test_the_readers_see_a_lazy_cycle_an_upward_import_and_a_reach(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "from .b import B\n",
        "low/b.py": "def f():\n    from .a import x            # lazy: still a cycle\nclass B: pass\n",
        "low/c.py": "from .. import _native\nfrom pkg.high import h\n",   # an extension; an upward import
        "high/__init__.py": "",
        "high/h.py": "from ..low.a import B\nclass H:\n    def __init__(self, o):\n"
                     "        self._mine = o._theirs\n        o._mine = self._mine\n        p._replace()\n",
    })
    graph = import_graph(root)
    assert graph["pkg.low.c"] == {"pkg.high.h"}
    assert cycles(graph) == [["pkg.low.a", "pkg.low.b"]]
    bad = upward_imports(graph, [{"low"}, {"high", "pkg"}])
    assert bad == ["pkg.low.c imports pkg.high.h: room 'low' (layer 0) may not import 'high' (layer 1)"]
    assert upward_imports(graph, [{"high", "pkg"}, {"low"}]) == [      # the other order: high -> low is upward
        "pkg.high.h imports pkg.low.a: room 'high' (layer 0) may not import 'low' (layer 1)"]
    assert "room 'high' is in no layer of LAYERS" in upward_imports(graph, [{"low", "pkg"}])
    assert private_reaches(root / "high/h.py") == Counter({"_theirs": 1})


def test_no_test_module_imports_another():
    """Tests share code through tests/support/ only (tests/conftest.py puts it on sys.path)."""
    assert [str(p.relative_to(TESTS)) for p in sorted(TESTS.rglob("*.py")) if TEST_IMPORT.search(p.read_text())] == []


def test_test_modules_sit_in_folders_and_helpers_in_support():
    """Only conftest.py at the top of tests/; no test module among the helpers."""
    assert sorted(p.name for p in TESTS.glob("*.py")) == ["conftest.py"]
    assert sorted(p.name for p in (TESTS / "support").glob("test_*.py")) == []
