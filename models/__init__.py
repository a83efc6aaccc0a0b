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
            "dirichlet_multinomial", "contingency", "marginals", "census", "small_area",
            "naive_bayes",
            "linear_regression")

__all__ = [*REGISTRY, "REGISTRY", "BuiltinModel", "builtin_model", "builtin_models"]


def __getattr__(name: str) -> ModuleType:
    """``dawrap.models.<name>``: a registered model's module, imported on first access
    (PEP 562). Reading :data:`REGISTRY` imports none of them, so the command line checks a
    model's name without waiting for numba."""
    if name in REGISTRY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


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


def builtin_model(name: str) -> BuiltinModel:
    """The model ``name`` of :data:`REGISTRY`, with its summary and factories; imports that
    model's module only.

    Parameters
    ----------
    name : str
        A name in :data:`REGISTRY`.

    Returns
    -------
    BuiltinModel

    Examples
    --------
    >>> from dawrap.models import builtin_model
    >>> builtin_model("beta_binomial").summary
    'Bernoulli records with a Beta prior; the count is released.'
    >>> builtin_model("beta")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: name must be one of ['beta_binomial', ...], got 'beta'
    """
    if name not in REGISTRY:
        raise ValueError(f"name must be one of {list(REGISTRY)}, got {name!r}")
    module = importlib.import_module(f".{name}", __name__)
    paragraph = (module.__doc__ or "").strip().split("\n\n")[0]
    mechanisms = {key: value for key, value in vars(module).items()
                  if getattr(value, "is_recipe", False) and key != "model"}
    return BuiltinModel(name, module, " ".join(paragraph.split()), module.model, mechanisms)


def builtin_models() -> dict[str, BuiltinModel]:
    """Every model of :data:`REGISTRY` (:func:`builtin_model`), in its order.

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
    return {name: builtin_model(name) for name in REGISTRY}
