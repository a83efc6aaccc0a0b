"""The package's tree for ``docs/architecture.md``, generated from the source at every build
(``conf.py`` writes ``api/package_tree.inc``): every folder and module of ``dawrap/`` and
``models/`` (installed as ``dawrap.models``) with the first line of its docstring, so that the
page cannot leave a module out. ``tests/test_docs.py`` checks that every module has that line.
"""
from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: The packages the tree shows, as folders of the checkout.
PACKAGES = ("dawrap", "models")
#: Width of the name column, and of a whole line.
NAME_WIDTH = 32
LINE_WIDTH = 100
#: Lines of summary per module.
MAX_LINES = 2


def summary(path: Path) -> str:
    """The first sentence of the docstring of the module at ``path`` (a file, or a folder's
    ``__init__.py``), its roles (``:mod:`x```) as plain names; ``""`` when it has none."""
    if path.is_dir():
        path = path / "__init__.py"
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    paragraph = re.sub(r":\w+:`~?\.?([^`]+)`", r"\1", paragraph).replace("``", "")
    sentence = re.split(r"(?<=[.;])\s+(?=[A-Z])", paragraph, maxsplit=1)[0]
    return sentence.rstrip(".:;")


def _entry(name: str, text: str) -> list[str]:
    """``name`` in its column, then ``text`` wrapped under the text column, in at most
    :data:`MAX_LINES` lines (the module's docstring has the rest)."""
    lines = textwrap.wrap(text, LINE_WIDTH - NAME_WIDTH, max_lines=MAX_LINES,
                          placeholder=" ...") or [""]
    return [f"{name:<{NAME_WIDTH}}{lines[0]}".rstrip()] + [" " * NAME_WIDTH + line
                                                          for line in lines[1:]]


def modules(folder: Path) -> list[Path]:
    """The subpackages and modules of ``folder``, subpackages first, each sorted by name
    (``__init__.py`` is the folder's own line)."""
    subpackages = sorted(p for p in folder.iterdir()
                         if p.is_dir() and (p / "__init__.py").exists())
    files = sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")
    return subpackages + files


def tree_lines(folder: Path, depth: int = 0) -> list[str]:
    """One line per folder and module under ``folder``: its name, indented by depth, then
    its summary."""
    lines = []
    for path in modules(folder):
        name = "  " * (depth + 1) + path.name + ("/" if path.is_dir() else "")
        lines += _entry(name, summary(path))
        if path.is_dir():
            lines += tree_lines(path, depth + 1)
    return lines


def package_tree() -> str:
    """The whole tree, one block per package."""
    lines = []
    for package in PACKAGES:
        folder = ROOT / package
        title = package + "/" + ("   (installed as dawrap.models)" if package == "models" else "")
        lines += [*_entry(title, summary(folder)), *tree_lines(folder), ""]
    return "\n".join(lines)


def write_package_tree() -> Path:
    """Write ``api/package_tree.inc`` (not committed) and return its path."""
    path = HERE / "api" / "package_tree.inc"
    path.write_text(package_tree(), encoding="utf-8")
    return path
