"""Send models and mechanisms to other processes by the recipe that built them.

A :class:`~dawrap.Model` holds compiled numba functions, closures over hyperparameters and
lambdas: it cannot be pickled by value, yet a process pool or a dask cluster must rebuild it in
every worker. A factory decorated with :func:`recipe` stamps what it returns with its own
import path and arguments; pickling such an object stores only that recipe, and unpickling
calls the factory again (once per process: rebuilt objects are cached, so a worker compiles a
model once however many tasks it runs).

>>> import pickle
>>> from dawrap.models import beta_binomial
>>> model = beta_binomial.model(a=2.0)             # every built-in factory is a recipe
>>> again = pickle.loads(pickle.dumps(model))      # calls beta_binomial.model(a=2.0) again
>>> again.name
'beta_binomial(a=2, b=1)'

Your own factory is decorated the same way, ``@dw.recipe`` above ``def my_model(a=1.0):``,
in a module the workers can import.

Every factory in :mod:`dawrap.models` is a recipe. A factory defined in a script's
``__main__`` works with the local process pool (workers re-import the script) but not on a
remote cluster, which cannot import it: put it in a module the workers can import.
"""
from __future__ import annotations

import functools
import importlib
import pickle

__all__ = ["recipe", "rebuild", "reduce_by_recipe"]

_REBUILT: dict = {}


def recipe(factory):
    """Decorate a factory so that the objects it returns pickle by reference to the call.

    Parameters
    ----------
    factory : callable
        A module-level function returning a :class:`~dawrap.Model` or a mechanism; its
        arguments must pickle.

    Returns
    -------
    callable
        The factory, which now stamps what it builds with ``(module, name, args, kwargs)``:
        pickling the object stores only that, unpickling calls the factory again, and a
        model's ``fingerprint`` (what checkpoints and stored studies are checked against)
        is the call.

    Examples
    --------
    >>> import pickle
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> @dw.recipe
    ... def flat_prior_model(name="coin"):
    ...     return beta_binomial.model(a=1, b=1)
    >>> model = flat_prior_model(name="coin")
    >>> model.fingerprint                               # doctest: +ELLIPSIS
    "...flat_prior_model(*(), **{'name': 'coin'})"
    >>> len(pickle.dumps(model)) < 500                  # the recipe, not compiled code
    True
    """

    @functools.wraps(factory)
    def build(*args, **kwargs):
        obj = factory(*args, **kwargs)
        obj._recipe = (factory.__module__, factory.__qualname__, args, kwargs)
        return obj

    build.is_recipe = True  # how the command line finds a model's mechanism factories
    return build


def rebuild(module: str, qualname: str, args: tuple, kwargs: dict):
    """Call the factory ``module.qualname(*args, **kwargs)``, once per process per recipe."""
    key = (module, qualname, pickle.dumps((args, sorted(kwargs.items()))))
    if key not in _REBUILT:
        target = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        _REBUILT[key] = target(*args, **kwargs)
    return _REBUILT[key]


def reduce_by_recipe(obj):
    """``__reduce__`` for objects a :func:`recipe` may have built."""
    stamp = getattr(obj, "_recipe", None)
    if stamp is None:
        raise TypeError(
            f"{obj!r} cannot be sent to another process: it holds compiled functions and "
            f"closures. Build it with a factory decorated by @dw.recipe (import dawrap as "
            f"dw; every dawrap.models factory is one), or run in this process "
            f"(executor='threads').")
    return rebuild, stamp
