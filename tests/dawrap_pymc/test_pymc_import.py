"""Without the extra, importing dawrap.pymc says which extra to install (runs everywhere)."""
import importlib
import sys

import pytest


def test_import_without_pymc_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m == "dawrap.pymc" or m.startswith("dawrap.pymc.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pymc", None)  # as if not installed: import raises
    with pytest.raises(ImportError, match=r'pip install "dawrap\[pymc\]"'):
        importlib.import_module("dawrap.pymc")
