"""Helpers of the dawrap.pymc tests: the tutorials in examples/ as modules, so that the tests
check the models the tutorials teach rather than copies of them."""
import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(name: str):
    """``examples/<name>.py``, or the gallery page ``examples/gallery/plot_<name>.py``,
    imported as a module (its ``main`` is not run)."""
    path = EXAMPLES / f"{name}.py"
    if not path.exists():
        path = EXAMPLES / "gallery" / f"plot_{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def example():
    """``example(name)``: the module of ``examples/<name>.py``, loaded once per session."""
    loaded = {}

    def get(name: str):
        if name not in loaded:
            loaded[name] = load_example(name)
        return loaded[name]

    return get
