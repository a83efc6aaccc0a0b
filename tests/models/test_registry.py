"""The registry of built-in models (issue 28 item 5): every public module of models/ is in
it, and dawrap.models, the command line, the API reference and the catalogue all list every
registered model, in its order."""
import importlib.util
from pathlib import Path

import pytest

import dawrap.models
from dawrap.cli import main
from dawrap.models import REGISTRY, builtin_models

ROOT = Path(__file__).resolve().parents[2]


def _public_model_modules() -> list[str]:
    """The public models: modules of models/, and the model families' subpackages."""
    modules = [p.stem for p in (ROOT / "models").glob("*.py")]
    packages = [p.parent.name for p in (ROOT / "models").glob("*/__init__.py")]
    return sorted(name for name in modules + packages if not name.startswith("_"))


def test_every_public_module_of_models_is_registered():
    assert sorted(REGISTRY) == _public_model_modules()
    assert len(set(REGISTRY)) == len(REGISTRY)


def test_every_registered_model_has_a_factory_and_a_mechanism():
    models = builtin_models()
    assert list(models) == list(REGISTRY)
    for name, entry in models.items():
        assert getattr(dawrap.models, name) is entry.module
        assert entry.model is entry.module.model and getattr(entry.model, "is_recipe", False)
        assert entry.mechanisms, f"{name} has no mechanism factory"
        assert entry.summary and "\n" not in entry.summary


def test_the_command_line_lists_every_registered_model(capsys):
    assert main(["models"]) == 0
    text = capsys.readouterr().out
    listed = [line.split("(")[0].strip() for line in text.splitlines()
              if line.startswith("  ") and not line.startswith("   ")]
    assert listed == list(REGISTRY)


def _model_pages():
    spec = importlib.util.spec_from_file_location("model_pages",
                                                  ROOT / "docs" / "model_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {path.name: text for path, text in module.model_pages().items()}


def test_the_api_reference_and_the_catalogue_list_every_registered_model():
    pages = _model_pages()
    api = [line.strip() for line in pages["models.rst"].split(".. autosummary::")[1]
           .splitlines() if line.startswith("   ") and not line.strip().startswith(":")]
    assert api == list(REGISTRY)
    table = pages["models_table.inc"]
    assert [line.split("<dawrap.models.")[1].split(">")[0] for line in table.splitlines()
            if "<dawrap.models." in line] == list(REGISTRY)
    assert "(no example yet)" not in table   # every model has its executed catalogue page


@pytest.mark.parametrize("name", REGISTRY)
def test_every_registered_model_has_a_catalogue_example(name):
    assert (ROOT / "examples" / "models" / f"plot_{name}.py").is_file()
