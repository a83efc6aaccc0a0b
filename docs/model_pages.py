"""The documentation's pages of the built-in models, generated from their registry
(``dawrap.models.REGISTRY``): the API reference's page (an autosummary of every model) and
the model catalogue's table (included by ``examples/models/GALLERY_HEADER.rst``). ``conf.py``
writes them at every build; ``tests/models/test_registry.py`` checks that they list every
registered model."""
from __future__ import annotations

from pathlib import Path

from dawrap.models import builtin_models

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _catalogue_link(name: str) -> str:
    page = ROOT / "examples" / "models" / f"plot_{name}.py"
    return f":doc:`example </catalogue/plot_{name}>`" if page.exists() else "(no example yet)"


def model_pages() -> dict[Path, str]:
    """``{path: text}``: ``api/models.rst`` and ``api/models_table.inc``."""
    models = builtin_models()
    api = ["Built-in models", "===============", "",
           "One module per model in :mod:`dawrap.models`, in the order of its registry "
           "(``dawrap.models.REGISTRY``, which ``dawrap models`` lists too); the",
           ":doc:`model catalogue </catalogue/index>` runs each of them.", "",
           ".. currentmodule:: dawrap.models", "", ".. autosummary::",
           "   :toctree: generated", ""] + [f"   {name}" for name in models] + [""]
    table = [".. list-table::", "   :header-rows: 1", "   :widths: 18 52 18 12", "",
             "   * - model", "     - records and release", "     - mechanisms",
             "     - page"]
    for name, entry in models.items():
        mechanisms = ", ".join(f"``{m}``" for m in entry.mechanisms)
        table += [f"   * - :mod:`{name} <dawrap.models.{name}>`", f"     - {entry.summary}",
                  f"     - {mechanisms}", f"     - {_catalogue_link(name)}"]
    return {HERE / "api" / "models.rst": "\n".join(api),
            HERE / "api" / "models_table.inc": "\n".join(table + [""])}


def write_model_pages() -> None:
    """Write :func:`model_pages`, leaving an unchanged file alone (no needless rebuild)."""
    for path, text in model_pages().items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
