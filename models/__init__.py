"""Ready-made models, written only against dawrap's public API.

Each module doubles as an example of registering a model: record sampler, conjugate theta
kernel, prior, the statistic(s) it releases, and factories for its canonical DP releases.

:data:`REGISTRY` is the one list of the built-in models. ``dawrap.models.<name>``, the
``dawrap models`` command and the models the other commands accept, the documentation's
model catalogue and its API reference all read it (through :func:`builtin_models`), so a
model added here appears in every one of them.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Callable, NamedTuple

#: The built-in models, in the order in which the command line and the documentation list
#: them: each the name of a module of this package whose ``model`` factory is a
#: ``@dw.recipe`` (``tests/models/test_registry.py`` checks that every public module here is
#: listed).
REGISTRY = ("beta_binomial", "poisson_gamma", "normal_mean", "gamma_exponential",
            "dirichlet_multinomial", "contingency", "small_area", "naive_bayes",
            "linear_regression")

__all__ = [*REGISTRY, "REGISTRY", "BuiltinModel", "builtin_models"]

for _name in REGISTRY:
    globals()[_name] = importlib.import_module(f".{_name}", __name__)
del _name


class BuiltinModel(NamedTuple):
    """One entry of the registry, as the command line and the documentation show it."""

    #: The module's name, e.g. ``"beta_binomial"``.
    name: str
    #: The module itself.
    module: ModuleType
    #: The first paragraph of the module's docstring, on one line.
    summary: str
    #: The model factory, ``module.model``.
    model: Callable
    #: ``{name: factory}`` of the module's mechanism factories: its ``@dw.recipe`` functions
    #: other than ``model``.
    mechanisms: dict


def builtin_models() -> dict[str, BuiltinModel]:
    """Every model of :data:`REGISTRY`, in its order, with its summary and factories.

    Returns
    -------
    dict of str to BuiltinModel

    Examples
    --------
    >>> from dawrap.models import builtin_models
    >>> entry = builtin_models()["beta_binomial"]
    >>> entry.summary
    'Bernoulli records with a Beta prior; the count is released.'
    >>> sorted(entry.mechanisms)
    ['geometric', 'laplace']
    """
    out = {}
    for name in REGISTRY:
        module = globals()[name]
        paragraph = (module.__doc__ or "").strip().split("\n\n")[0]
        mechanisms = {key: value for key, value in vars(module).items()
                      if getattr(value, "is_recipe", False) and key != "model"}
        out[name] = BuiltinModel(name, module, " ".join(paragraph.split()), module.model,
                                 mechanisms)
    return out
