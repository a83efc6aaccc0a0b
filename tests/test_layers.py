"""The package's layers, as the tree shows them, hold in the import graph: each layer imports
only from the layers below it (a module-level or a function-level import alike).

    compile  <  model, mechanisms  <  samplers  <  runner  <  methods, sampling, pymc
             <  studies, cli, demo

(``_checks``, ``_files``, ``random``, ``reference`` and ``diagnostics`` are leaf helpers any
layer may use. ``compile`` is the bottom layer: any layer may import it, and it imports no
other part of dawrap but those leaf helpers.)

And no two files of the package (``dawrap/`` and ``models/``, which installs as
``dawrap.models``) import each other, directly or through others: the import graph has no
cycle but those on :data:`KNOWN_CYCLES`.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dawrap"
#: Dotted prefix -> the folder of its files (models/ installs as dawrap.models).
FOLDERS = {"dawrap": PACKAGE, "dawrap.models": ROOT / "models"}

#: Layer of each subpackage / top-level module; a module may import from its own layer, lower
#: ones and the leaf helpers (the modules not listed).
LAYERS = {"compile": -1, "model": 0, "mechanisms": 0, "samplers": 1, "runner": 2, "methods": 3,
          "parallel": 3,
          "sampling": 3, "pymc": 3, "opendp": 3, "smartnoise": 3, "tumult": 3, "studies": 4, "cli": 5, "demo": 5}

#: Import cycles between files that are known and being removed, each as the set of modules
#: that may share one (a cycle among some of them is tolerated, one that takes in any other
#: module is not). Remove an entry when its cycle is gone.
KNOWN_CYCLES: list[set[str]] = []


def _module_files() -> dict[str, Path]:
    """Dotted module name -> its file, for every file of the package (``__init__.py`` as its
    package's name)."""
    out = {}
    for prefix, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((prefix, *parts))] = path
    return out


MODULE_FILES = _module_files()
NAMES = {path: name for name, path in MODULE_FILES.items()}


def _existing(dotted: str) -> str | None:
    """``dotted`` or its longest prefix that is a module of the package; None outside it."""
    parts = dotted.split(".")
    while parts and ".".join(parts) not in MODULE_FILES:
        parts.pop()
    return ".".join(parts) or None


def _imports(path: Path, source: str | None = None):
    """The modules of the package that ``path`` imports (from ``source`` if given), anywhere
    in it (in a function too), as dotted names: ``from X import a`` imports the module
    ``X.a`` when there is one, else ``X``."""
    name = NAMES[path]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if isinstance(node, ast.Import):
            found = [_existing(alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                head = ".".join(base + ([node.module] if node.module else []))
            else:
                head = node.module or ""
            found = [_existing(f"{head}.{alias.name}") for alias in node.names]
        else:
            continue
        yield from (target for target in found if target is not None and target != name)


def _layer(name: str) -> int | None:
    """The layer of a module of ``dawrap`` (None: a leaf helper, the package, the models)."""
    parts = name.split(".")[1:]
    return LAYERS.get(parts[0]) if parts else None


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"
                 and _layer(NAMES[p]) is not None)


def _upward(path: Path, source: str | None = None) -> list[str]:
    own = _layer(NAMES[path])
    return sorted({t for t in _imports(path, source)
                   if _layer(t) is not None and _layer(t) > own})


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_from_its_layer_and_below(path):
    upward = _upward(path)
    assert not upward, \
        f"{path.relative_to(PACKAGE)} (layer {_layer(NAMES[path])}) imports {upward}"


@pytest.mark.parametrize("path, source", [
    ("samplers/record.py", "from ..runner import starts\n"),
    ("samplers/record.py", "def f():\n    from ..runner.starts import noise_variance\n"),
    ("samplers/record.py", "import dawrap.runner.record\n"),
    ("samplers/record.py", "from dawrap.studies import compare\n"),
    ("compile/templates.py", "from ..samplers import loop\n"),
    ("compile/cache.py", "def f():\n    from ..model import protocols\n"),
    ("compile/source.py", "from dawrap import sampling\n"),
])
def test_the_layer_check_sees_an_upward_import(path, source):
    """The checker itself can fail: a samplers module importing the runner or the studies, a
    compile module importing any other layer, at module level or inside a function,
    absolutely or relatively, is caught."""
    assert _upward(PACKAGE / path, source)


# -- the models use dawrap's public names and its extension surface only ----------------------
#: What the built-in models (models/, installed as dawrap.models) may import of dawrap: its
#: public package and submodules, and dawrap.extend for what a model or move author needs.
MODELS_MAY_IMPORT = {"dawrap", "dawrap.extend", "dawrap.random", "dawrap.reference",
                     "dawrap.diagnostics"}
MODEL_FILES = sorted(path for name, path in MODULE_FILES.items()
                     if name.startswith("dawrap.models"))


def _beyond_the_surface(path: Path, source: str | None = None) -> list[str]:
    return sorted({t for t in _imports(path, source) if not t.startswith("dawrap.models")
                   and t not in MODELS_MAY_IMPORT})


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_model_imports_only_the_public_api_and_the_extension_surface(path):
    beyond = _beyond_the_surface(path)
    assert not beyond, f"{path.relative_to(ROOT)} imports dawrap internals {beyond}: " \
                       f"export what it needs from dawrap.extend"


@pytest.mark.parametrize("source", ["from dawrap.samplers.record import RecordState\n",
                                    "def f():\n    from dawrap.mechanisms import separable\n",
                                    "import dawrap.runner.record\n"])
def test_the_surface_check_sees_an_internal_import(source):
    assert _beyond_the_surface(ROOT / "models" / "census" / "pairs.py", source)


def test_the_extension_surface_names_exist():
    """Every name dawrap.extend lists imports (a moved name would fail only at use)."""
    import dawrap.extend

    for name in dawrap.extend.__all__:
        assert getattr(dawrap.extend, name) is not None, name


# -- no import cycle between files ---------------------------------------------------------
def import_graph(replaced: dict[Path, str] | None = None) -> dict[str, set[str]]:
    """Module -> the modules it imports, for every file of the package (module-level and
    function-level imports alike), with the sources of ``replaced`` in place of the files'."""
    replaced = replaced or {}
    return {name: set(_imports(path, replaced.get(path))) for name, path in MODULE_FILES.items()}


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The import cycles of ``graph``: its strongly connected components of two modules or
    more (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:  # every target of node seen: close it
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def new_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles of ``graph`` that no entry of :data:`KNOWN_CYCLES` holds."""
    return [sorted(c) for c in cycles(graph)
            if not any(c <= known for known in KNOWN_CYCLES)]


def test_no_import_cycle_between_files():
    found = new_cycles(import_graph())
    assert not found, f"import cycles between files: {found}"


def test_the_known_cycles_are_modules_of_the_package():
    """An entry naming no module (a typo, a module renamed) would allow nothing, silently."""
    assert all(known <= MODULE_FILES.keys() for known in KNOWN_CYCLES)


@pytest.mark.parametrize("path, source", [
    ("dawrap/compile/source.py", "def f():\n    from . import cache\n"),
    ("dawrap/samplers/status.py", "from . import loop\n"),
    ("dawrap/samplers/status.py", "import dawrap.samplers.loop\n"),
    ("dawrap/mechanisms/noise.py", "from . import laplace\n"),  # a family module, from below it
    ("models/_shared.py", "def f():\n    from dawrap.models import beta_binomial\n"),
])
def test_the_cycle_check_sees_a_new_cycle(path, source):
    """The checker itself can fail: an import that closes a loop (at module level or inside a
    function, relatively or absolutely, in dawrap/ or in models/), or one that draws another
    module into a known cycle, is a new cycle."""
    path = ROOT / path
    before = new_cycles(import_graph())
    after = new_cycles(import_graph({path: path.read_text() + source}))
    assert [c for c in after if c not in before and NAMES[path] in c]


def test_the_cycle_finder_on_a_small_graph():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d", "e"}}
    assert cycles(graph) == [{"a", "b", "c"}]
