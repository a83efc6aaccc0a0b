r"""A PyMC model's ``dims``, ``coords`` and Deterministics, for the result's posterior.

The parameters keep the dimension names and coordinate labels given in PyMC (``dims="group"``
with ``pm.Model(coords={"group": [...]})``); each ``pm.Deterministic`` that is a function of
the parameters is computed from the kept draws after sampling (one vectorised PyTensor call
over all draws), with its dims. A Deterministic that reads the records (an observed variable,
e.g. a per-record linear predictor) cannot be computed from the draws, since dawrap keeps no
imputed database: it is left out with a warning.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.graph.replace import clone_replace, vectorize_graph
from pytensor.graph.traversal import ancestors

from .graph import Layout

__all__ = ["labels"]


def _dims_of(model: pm.Model, name: str, ndim: int) -> tuple | None:
    dims = model.named_vars_to_dims.get(name)
    if not dims:
        return None
    # PyMC allows an unnamed axis (None) among named ones; ArviZ needs a name for it
    return tuple(d if d is not None else f"{name}_dim_{i}" for i, d in enumerate(dims))[:ndim]


def _deterministics(model: pm.Model, lay: Layout) -> tuple[list, Callable | None]:
    """The Deterministics computable from the parameters, and ``(params) -> dict`` computing
    them for draws of any leading shape."""
    kept, dropped = [], []
    for det in model.deterministics:
        reads = [v.name for v in ancestors([det], blockers=lay.free)
                 if v in model.observed_RVs or v in model.rvs_to_values.values()]
        (dropped if reads else kept).append((det, reads))
    for det, reads in dropped:
        warnings.warn(f"Deterministic {det.name!r} reads the records ({sorted(set(reads))}), "
                      f"which dawrap imputes and does not keep: it is left out of the "
                      f"posterior. Compute it from the posterior and your own data instead",
                      UserWarning, stacklevel=4)
    if not kept:
        return [], None
    dets = [det for det, _ in kept]
    # One PyTensor call for all draws: the graph of one draw, vectorised over a batch axis.
    inputs = [pt.tensor(name=rv.name, dtype="float64", shape=(None, *lay.params[rv.name]))
              for rv in lay.free]
    single = [rv.type() for rv in lay.free]
    graphs = clone_replace(dets, replace=dict(zip(lay.free, single)))
    batched = vectorize_graph(graphs, replace=dict(zip(single, inputs)))
    fn = pm.pytensorf.compile(inputs, batched, mode="FAST_COMPILE", on_unused_input="ignore")
    names = [det.name for det in dets]

    def compute(params: dict) -> dict:
        first = params[lay.free[0].name]
        lead = first.shape[:first.ndim - len(lay.params[lay.free[0].name])]
        flat = [np.asarray(params[rv.name], dtype=np.float64).reshape(
            (math.prod(lead), *lay.params[rv.name])) for rv in lay.free]
        out = fn(*flat)
        return {name: np.asarray(v, dtype=np.float64).reshape((*lead, *np.shape(v)[1:]))
                for name, v in zip(names, out)}

    return names, compute


def labels(model: pm.Model, lay: Layout) -> dict:
    """``dims``, ``coords`` and ``deterministics`` for :class:`dawrap.Model`, read off
    ``model``.

    Examples
    --------
    >>> with pm.Model(coords={"group": ["a", "b"]}) as m:
    ...     mu = pm.Normal("mu", 0.0, 1.0, dims="group")
    ...     pm.Deterministic("top", mu.max())
    ...     ...
    >>> labels(m, layout(m))["dims"]
    {'mu': ('group',)}
    """
    names, deterministics = _deterministics(model, lay)
    dims = {}
    for name in [*lay.params, *names]:
        ndim = len(lay.params[name]) if name in lay.params else model[name].ndim
        found = _dims_of(model, name, ndim)
        if found:
            dims[name] = found
    used = {d for v in dims.values() for d in v}
    coords = {d: np.asarray(v) for d, v in model.coords.items()
              if d in used and v is not None}
    return {"dims": dims, "coords": coords, "deterministics": deterministics}
