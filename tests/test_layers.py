"""The package's layers, as the tree shows them, hold in the import graph: each layer imports
only from the layers below it (a module-level or a function-level import alike).

    model, mechanisms  <  samplers  <  runner  <  methods, sampling, pymc  <  studies, cli, demo

(``_checks``, ``_files``, ``random``, ``reference`` and ``diagnostics`` are leaf helpers any
layer may use.)
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dawrap"

#: Layer of each subpackage / top-level module; a module may import from its own layer and
#: lower ones.
LAYERS = {"model": 0, "mechanisms": 0, "samplers": 1, "runner": 2, "methods": 3, "parallel": 3,
          "sampling": 3, "pymc": 3, "studies": 4, "cli": 5, "demo": 5}


def _layer(parts: tuple[str, ...]) -> int | None:
    return LAYERS.get(parts[0].removesuffix(".py")) if parts else None


def _imports(path: Path, source: str | None = None):
    """The dawrap modules ``path`` imports (from ``source`` if given), as tuples of name
    parts below ``dawrap``."""
    here = path.relative_to(PACKAGE).parts[:-1]
    tree = ast.parse(path.read_text() if source is None else source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                names = (node.module.split(".") if node.module else [])
                targets = [(*base, *names)] if names else [(*base, a.name) for a in node.names]
            elif node.module and node.module.split(".")[0] == "dawrap":
                targets = [tuple(node.module.split(".")[1:])]
            else:
                continue
        elif isinstance(node, ast.Import):
            targets = [tuple(a.name.split(".")[1:]) for a in node.names
                       if a.name.split(".")[0] == "dawrap"]
        else:
            continue
        yield from (t for t in targets if t)


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"
                 and _layer(p.relative_to(PACKAGE).parts) is not None)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_from_its_layer_and_below(path):
    own = _layer(path.relative_to(PACKAGE).parts)
    upward = [".".join(t) for t in _imports(path)
              if (_layer(t) or 0) > own]
    assert not upward, f"{path.relative_to(PACKAGE)} (layer {own}) imports {upward}"


@pytest.mark.parametrize("source", ["from ..runner import starts\n",
                                    "def f():\n    from ..runner.starts import noise_variance\n",
                                    "import dawrap.runner.record\n",
                                    "from dawrap.studies import compare\n"])
def test_the_layer_check_sees_an_upward_import(source):
    """The checker itself can fail: a samplers module importing the runner or the studies,
    at module level or inside a function, absolutely or relatively, is caught."""
    path = PACKAGE / "samplers" / "record.py"
    assert any(_layer(t) > LAYERS["samplers"] for t in _imports(path, source))
