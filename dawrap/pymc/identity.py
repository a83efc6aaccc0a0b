r"""What a model built by :func:`dawrap.pymc.from_pymc` computes, as one digest.

A checkpoint resumes only the run that wrote it (:mod:`dawrap.runner.fingerprint`), and a
fingerprint digests a function by its code and the values it reads. The functions compiled
from a PyMC model are PyTensor's generated code around compiled graphs, which have no such
digest: without one, every resume of a PyMC model had to be forced with
``DAWRAP_RESUME_UNVERIFIED=1``, and a resume under another model (a prior Beta(1, 1) where
the checkpoint had Beta(200, 200), another likelihood) was as easy to force as the right one.

The model is known by its graphs instead: :func:`model_digest` walks, in topological order,
the priors' log density (their parameters, the transforms and their Jacobians), the random
variables' own graphs (what the record and prior draws sample, and what the likelihood's
density is built from), the observed data, the Deterministics, and the record layout. Each node is named by its
operation's type and properties, each leaf by its type and value (a constant's or shared
array's bytes; a random generator by its type only, since the chain's own generator drives
the draws), each variable by its position; so two models written alike give one digest in
every process. The compiled functions then carry it (:data:`dawrap.runner.fingerprint.STATED`).

The observed data are part of the digest though dawrap reads only their row shapes (it imputes
the records): a resume with other data is refused rather than guessed about.
"""
from __future__ import annotations

import hashlib
import re

import numpy as np
import pymc as pm
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import toposort
from pytensor.tensor.random.type import RandomType

from ..runner.fingerprint import Unverifiable, digest
from .graph import Layout

__all__ = ["model_digest"]

#: A repr that holds a memory address differs between processes: no digest from it.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def model_digest(model: pm.Model, lay: Layout, prior_logp=None) -> str:
    """The digest (16 hex digits) of what ``model`` computes, with the record layout ``lay``
    (module docstring); :class:`dawrap.runner.fingerprint.Unverifiable` if some operation
    of its graphs cannot be named the same way in every process. ``prior_logp``: the
    graph of ``model.logp(vars=lay.free)`` if the caller has it (building it costs about as
    much as the rest of the digest).

    Examples
    --------
    >>> import numpy as np
    >>> import pymc as pm
    >>> from dawrap.pymc import layout
    >>> def coin(a, data):
    ...     with pm.Model() as model:
    ...         p = pm.Beta("p", a, a)
    ...         pm.Bernoulli("y", p=p, observed=data)
    ...     return model_digest(model, layout(model))
    >>> coin(1.0, np.zeros(100)) == coin(1.0, np.zeros(100))    # written alike: one digest
    True
    >>> coin(1.0, np.zeros(100)) == coin(200.0, np.zeros(100))  # another prior
    False
    >>> coin(1.0, np.zeros(100)) == coin(1.0, np.ones(100))     # other observed data
    False
    """
    # The priors' log density (transforms' Jacobians included); the likelihood's is a
    # function of the observed variables' own graphs, which are digested with their data.
    if prior_logp is None:
        prior_logp = model.logp(vars=lay.free)
    observed = [model.rvs_to_values[rv] for rv in model.observed_RVs]
    outputs = [prior_logp, *model.free_RVs, *model.observed_RVs, *observed,
               *model.deterministics]
    layout_parts = ([rv.name for rv in lay.free], {k: str(v) for k, v in lay.params.items()},
                    [rv.name for rv in lay.observed],
                    {k: (v.start, v.stop) for k, v in lay.columns.items()})
    return digest((_walk(outputs), repr(layout_parts)), "the PyMC model")


def _walk(outputs: list) -> str:
    """The graph of ``outputs`` as one hash: nodes in topological order, each by its
    operation and the positions of its inputs."""
    position, lines = {}, []

    def named(var) -> int:
        if var not in position:
            position[var] = len(lines)
            lines.append(_leaf(var))
        return position[var]

    for node in toposort(outputs):
        inputs = [named(v) for v in node.inputs]
        lines.append(("apply", _op(node.op), inputs, [str(v.type) for v in node.outputs]))
        for k, out in enumerate(node.outputs):
            position[out] = (len(lines) - 1, k)
    lines.append(("outputs", [named(v) for v in outputs]))
    return hashlib.sha256(repr(lines).encode()).hexdigest()


def _leaf(var) -> tuple:
    """A variable no operation computes: a constant or shared value by its bytes, a random
    generator by its type, an input (a value variable) by its type and name."""
    if isinstance(var.type, RandomType):
        return ("generator", str(var.type))
    if isinstance(var, Constant):
        return ("constant", str(var.type), digest(np.asarray(var.data)))
    if isinstance(var, SharedVariable):
        return ("shared", str(var.type), digest(np.asarray(var.get_value(borrow=True))))
    return ("input", str(var.type), var.name)


def _op(op) -> tuple:
    """An operation by its type and its properties (``__props__``, PyTensor's own notion of
    what makes two operations equal), recursively for operations inside operations."""
    kind = f"{type(op).__module__}.{type(op).__qualname__}"
    props = getattr(op, "__props__", None)
    if props is None:
        return (kind, _plain(str(op)))
    return (kind, [(name, _value(getattr(op, name))) for name in props])


def _value(value):
    if hasattr(value, "__props__") or type(value).__module__.startswith("pytensor"):
        return _op(value)
    if isinstance(value, np.ndarray):
        return digest(value)
    if isinstance(value, (tuple, list)):
        return [_value(v) for v in value]
    return _plain(repr(value))


def _plain(text: str) -> str:
    if _ADDRESS.search(text):
        raise Unverifiable(f"the PyMC model's graph holds {text}, which has no digest")
    return text
