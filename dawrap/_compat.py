"""Import paths of dawrap 0.2 that users may have written, kept working after the modules
moved into subpackages: ``import dawrap.calibration`` gives :mod:`dawrap.studies.calibration`
(the same module object, so patches and pickles agree). Only paths a user would have typed
are kept; internal modules moved without an alias."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from pathlib import Path

__all__ = ["OLD_PATHS", "install"]

#: Old public module path -> where it lives now.
OLD_PATHS = {
    "dawrap.calibration": "dawrap.studies.calibration",
    "dawrap.compare": "dawrap.studies.compare",
    "dawrap.plots": "dawrap.studies.plots",
    "dawrap.kernels": "dawrap.samplers.kernels",
    "dawrap.interweave": "dawrap.samplers.interweave",
    "dawrap.family": "dawrap.model.family",
    "dawrap.discrete": "dawrap.mechanisms.discrete",
    "dawrap.exact": "dawrap.reference",
    # the documented warning class dawrap._cache.CacheWarning (docs/compile_cache.md, 0.2)
    "dawrap._cache": "dawrap.compile.cache",
}


#: The repository's top-level models/ folder, beside this package's folder: present when
#: ``dawrap`` is imported from a source checkout rather than from an installed copy.
CHECKOUT_MODELS = Path(__file__).resolve().parent.parent / "models"


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path and loads it as the module at its new path; and finds
    ``dawrap.models`` in a source checkout."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in OLD_PATHS:
            return importlib.util.spec_from_loader(fullname, self)
        if fullname == "dawrap.models" and (CHECKOUT_MODELS / "__init__.py").is_file():
            # Only reached when no other finder found it: an installed dawrap has models/
            # inside it. Run from the checkout's root after a (non-editable) install, the
            # source dawrap/ shadows the installed one and has no models/; the built-in
            # models are the checkout's top-level models/ (which installs as dawrap.models).
            return importlib.util.spec_from_file_location(
                fullname, CHECKOUT_MODELS / "__init__.py",
                submodule_search_locations=[str(CHECKOUT_MODELS)])
        return None

    def create_module(self, spec):
        module = importlib.import_module(OLD_PATHS[spec.name])
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module):
        # Already executed under its new name; the import system has just stamped the alias's
        # spec on it: give the module its own back.
        module.__spec__ = self._own_spec


def install() -> None:
    """Register the aliases (once)."""
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.append(_Alias())
