"""Doctest set-up of the package (``pytest --doctest-modules dawrap/...``).

Where examples would repeat one set-up (a study run, draws made), it is made once, in the
example of the class or module, and the examples of its methods or functions show what each
gives of it, as the API reference reads them: each such example continues the one
:data:`CONTINUES` names, in the names that example made (run once per session; the
continuing examples read them and do not modify them).
"""
from __future__ import annotations

import doctest
import functools
import importlib

import pytest

#: Doctest name (a prefix: a class's methods, a module's functions) -> the doctest whose
#: example it continues.
CONTINUES = {
    "dawrap.diagnostics.": "dawrap.diagnostics",
    "dawrap.methods.OPS": "dawrap.methods.NonPrivate",
    # the exact posteriors' methods, documented on their private bases
    "dawrap.reference._ScalarPosterior.": "dawrap.reference",
    "dawrap.reference._PosteriorDensity.": "dawrap.reference",
    "dawrap.reference.WeightedDraws.": "dawrap.reference",
    "dawrap.studies.calibration_results.Calibration.":
        "dawrap.studies.calibration_results.Calibration",
    "dawrap.studies.calibration_results.CoverageTest":
        "dawrap.studies.calibration_results.Calibration",
    "dawrap.studies.compare.Comparison.": "dawrap.studies.compare.Comparison",
}


def continued(name: str) -> str | None:
    """The doctest whose example the doctest ``name`` continues, if any.

    >>> continued("dawrap.studies.compare.Comparison.plot")
    'dawrap.studies.compare.Comparison'
    >>> continued("dawrap.studies.compare.Comparison") is None
    True
    """
    return next((shared for prefix, shared in CONTINUES.items()
                 if name.startswith(prefix) and name != shared), None)


@functools.lru_cache(maxsize=None)
def names_made_by(name: str) -> dict:
    """The names the example of the module, class or function ``name`` (a dotted doctest
    name) defines, having run it once; an error if it fails (its own doctest says where)."""
    module_name, qualname = name, []
    while True:  # the longest importable prefix is the module; the rest its attributes
        try:
            module = importlib.import_module(module_name)
            break
        except ModuleNotFoundError:
            module_name, _, outer = module_name.rpartition(".")
            qualname.insert(0, outer)
    obj = module
    for part in qualname:
        obj = getattr(obj, part)
    (test,) = doctest.DocTestFinder(recurse=False).find(obj, name, module=module)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test, out=lambda text: None, clear_globs=False)
    if runner.failures:
        raise RuntimeError(f"the example of {name}, which others continue, failed")
    return {key: value for key, value in test.globs.items() if key not in vars(module)}


@pytest.fixture(autouse=True)
def _continue_the_shared_example(request):
    test = getattr(request.node, "dtest", None)
    shared = continued(test.name) if test is not None else None
    if shared is not None:
        test.globs.update(names_made_by(shared))
