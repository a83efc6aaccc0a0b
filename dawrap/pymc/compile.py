r"""PyMC graphs compiled with PyTensor's numba backend into the functions dawrap's compiled
chain calls: a record draw (one record per call, and a batch of records per call for the
record sweep's blocks), the unconstrained log density and its gradient, and the maps
between the sampler's (constrained) ``theta`` and the unconstrained :math:`u`.

Each PyTensor function's numba dispatcher (``fn.vm.jit_fn``) is wrapped in a small
``numba.njit`` function with dawrap's signature, so the whole chain stays in compiled code. The
record draw's random generator is a *mutable* input: the chain's own
``numpy.random.Generator`` is passed in and advanced in place (an immutable input would be
copied on every call and never advance).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numba
from numba import literal_unroll
import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
from pymc.logprob.utils import replace_rvs_by_values
from pymc.model.transform.optimization import freeze_dims_and_data
from pytensor.graph.replace import clone_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.random.type import RandomGeneratorType, random_generator_type

from ..runner.fingerprint import STATED, Unverifiable
from .draws import row_draw
from .graph import Layout, UnsupportedModel, layout
from .identity import model_digest

__all__ = ["Compiled", "compile_model"]

MODE = "NUMBA"


class Compiled(NamedTuple):
    """The compiled pieces of a PyMC model (see :func:`compile_model`); ``model`` is the copy
    they were compiled from, its dims' lengths and data fixed."""
    model: pm.Model
    layout: Layout
    draw_record: object          # njit (rng, theta, out)
    draw_records: object         # njit (rng, theta, out), out of shape (m, record_size)
    logp_and_grad: object        # njit (u, x) -> (logp, grad)
    to_unconstrained: object     # njit (theta) -> u
    to_constrained: object       # njit (u) -> theta
    draw_prior: Callable         # (rng) -> theta
    identity: str | None         # model_digest of ``model``, or None if it has none


def _pieces(vector, shapes: Sequence[tuple]) -> list:
    out, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        out.append(vector[start:start + size].reshape(shape))
        start += size
    return out


def _flat(parts: list):
    return pt.concatenate([pt.cast(p, "float64").flatten() for p in parts])


def _replace(graphs, replace: dict):
    """``graphs`` with ``replace`` substituted, node types recomputed (a one-row draw stands
    where the model's data had n rows)."""
    return clone_replace(graphs, replace=replace, rebuild_strict=False)


def _rebuild(rv, rng, rows, lay: Layout, memo: dict):
    """``rv``'s node with ``rows`` records, its parameters' random variables replaced by
    ``memo`` and its generator by ``rng``: returns (next generator, draw)."""
    node, op = rv.owner, rv.owner.op
    params = _replace(list(node.inputs[2:]), memo)
    batch = rv.type.ndim - op.ndim_supp
    rest = list(lay.row_shapes[rv.name][:batch - 1])
    # a constant size where the row count is known (one record): no shape work per draw
    size = pt.as_tensor(np.array([rows, *rest], dtype="int64")) if isinstance(rows, int) \
        else pt.stack([pt.as_tensor(rows, dtype="int64"),
                       *[pt.as_tensor(d, dtype="int64") for d in rest]])
    node = op.make_node(rng, size, *params)
    if isinstance(rows, int):  # a record draw: the lean op where it applies (draws.py)
        lean = row_draw(node, (rows, *rest))
        if lean is not None:
            return lean
    return node.outputs


def _jit(inputs: list, outputs: list):
    # PyMC's compile turns parameter checks (0 <= p <= 1, sigma > 0) into -inf rather than
    # an exception, so a wild leapfrog step is rejected instead of stopping the chain.
    fn = pm.pytensorf.compile(inputs, outputs, mode=MODE, on_unused_input="ignore")
    return fn.vm.jit_fn


def _batch_draw(model: pm.Model, lay: Layout, theta, theta_parts: list):
    """The record draw for ``m`` records per call, ``m`` read off ``out``'s shape: what the
    record sweep calls for its blocks of proposals (``dw.Model(draw_records=...)``). Built as
    the one-record draw is, with ``m`` rows: the rows are independent records because every
    parameter of the likelihood varies by record only through observed variables
    (:func:`dawrap.pymc.graph.layout` refuses anything else). The random variables are
    PyTensor's own: a call's fixed cost, which the lean op of ``draws.py`` avoids for one
    record, is spread over a block here."""
    width = lay.columns[lay.observed[-1].name].stop
    rng = random_generator_type("rng")
    out = pt.tensor("out", dtype="float64", shape=(None, width))  # only its row count is read
    memo, current, draws = dict(zip(lay.free, theta_parts)), rng, {}
    for rv in [v for v in model.observed_RVs if v in lay.observed]:
        current, draws[rv.name] = _rebuild(rv, current, out.shape[0], lay, memo)
        memo[rv] = draws[rv.name]
    records_fn = _jit([pytensor.In(rng, mutable=True), theta, out],
                      [draws[rv.name] for rv in lay.observed])

    @numba.njit(nogil=True)
    def draw_records(rng, theta, out):
        m = out.shape[0]
        if m == 0:
            return
        parts, start = records_fn(rng, theta, out), 0
        for part in literal_unroll(parts):  # (m, *row shape) each; dtypes differ
            rows = np.ascontiguousarray(part).reshape((m, part.size // m))
            for i in range(m):
                for k in range(rows.shape[1]):
                    out[i, start + k] = rows[i, k]
            start += rows.shape[1]

    return draw_records


def compile_model(model: pm.Model, records: Sequence[str] | None = None) -> Compiled:
    """Compile ``model``'s record draw, log density, gradient, transforms and prior draw.

    Parameters
    ----------
    model : pymc.Model
        As for :func:`dawrap.pymc.from_pymc`.
    records : sequence of str, optional
        Observed variables in record order.

    Returns
    -------
    Compiled

    Examples
    --------
    >>> parts = compile_model(logistic, records=["y", "X"])
    >>> logp, grad = parts.logp_and_grad(np.zeros(2), x)
    """
    written = layout(model, records)  # the checks, on the model as written (pm.Data named)
    # dims' lengths and pm.Data are shared variables, which the compiled functions would take
    # as extra arguments: fixed here as constants (their values are the model's). The copy
    # may list its parameters in another order: theta keeps the order of the model written.
    model = freeze_dims_and_data(model)
    lay = layout(model, records)
    order = {rv.name: k for k, rv in enumerate(written.free)}
    free = sorted(lay.free, key=lambda rv: order[rv.name])
    lay = lay._replace(free=free, params={rv.name: lay.params[rv.name] for rv in free})
    shapes = list(lay.params.values())
    # Static sizes (theta's, u's, a record's) let PyTensor drop the shape checks and index
    # clipping it would otherwise run at every call: on small problems the number of graph
    # nodes, not the arithmetic, sets the cost (benchmarks/results/pymc_record_draw.md).
    size = sum(math.prod(shape) for shape in shapes)
    theta = pt.tensor("theta", dtype="float64", shape=(size,))
    theta_parts = _pieces(theta, shapes)

    # record draw: observed variables in definition order (a later one may depend on an
    # earlier one, e.g. y on the covariates X), written out in record order
    rng = random_generator_type("rng")
    memo = dict(zip(lay.free, theta_parts))
    current, draws = rng, {}
    for rv in [v for v in model.observed_RVs if v in lay.observed]:
        current, draws[rv.name] = _rebuild(rv, current, 1, lay, memo)
        memo[rv] = draws[rv.name]
    # One output per observed variable, copied into ``out`` by the wrapper: joining them
    # in the graph would add a cast and a concatenation (two allocations) to every draw.
    record_fn = _jit([pytensor.In(rng, mutable=True), theta],
                     [draws[rv.name] for rv in lay.observed])

    @numba.njit(nogil=True)
    def draw_record(rng, theta, out):
        parts, j = record_fn(rng, theta), 0
        for part in literal_unroll(parts):  # one per observed variable; dtypes differ
            for value in part.flat:
                out[j] = value
                j += 1

    draw_records = _batch_draw(model, lay, theta, theta_parts)

    # The log density on u with the records as input x: the priors' terms (Jacobians
    # included) from PyMC, the likelihood from the observed variables rebuilt with x's row
    # count (PyMC's own graph has the model data's row count built in).
    values = [model.rvs_to_values[rv] for rv in lay.free]
    value_shapes = [tuple(int(d) for d in model.initial_point()[v.name].shape) for v in values]
    u = pt.tensor("u", dtype="float64", shape=(sum(math.prod(s) for s in value_shapes),))
    x = pt.tensor("x", dtype="float64", shape=(None, lay.columns[lay.observed[-1].name].stop))
    u_parts = _pieces(u, value_shapes)
    prior_logp = model.logp(vars=lay.free)
    logp = _replace(prior_logp, dict(zip(values, u_parts)))
    # Each term on its own, to say which one is not finite (_check_finite_start)
    terms = [(f"the prior of {rv.name!r}",
              _replace(model.logp(vars=[rv]), dict(zip(values, u_parts)))) for rv in lay.free]
    constrained = replace_rvs_by_values(lay.free, rvs_to_values=dict(zip(lay.free, u_parts)),
                                        rvs_to_transforms=model.rvs_to_transforms)
    memo = dict(zip(lay.free, constrained))
    for rv in [v for v in model.observed_RVs if v in lay.observed]:
        data = x[:, lay.columns[rv.name]].reshape((x.shape[0], *lay.row_shapes[rv.name]))
        data = pt.cast(data, rv.type.dtype)
        rebuilt = _rebuild(rv, random_generator_type("unused"), x.shape[0], lay, memo)[1]
        term = pm.logp(rebuilt, data).sum()
        terms.append((f"the likelihood of {rv.name!r}", term))
        # A term that does not depend on u (e.g. covariates with a fixed distribution) is a
        # constant given x: HMC within Gibbs only compares log densities at the same x, so
        # it is left out rather than computed at every leapfrog step.
        if u in ancestors([term]):
            logp = logp + term
        memo[rv] = data
    logp_fn = _jit([u, x], [logp, pt.grad(logp, u)])

    @numba.njit(nogil=True)
    def logp_and_grad(u, x):
        out = logp_fn(u, x)
        return out[0].item(), out[1]

    # theta <-> u through PyMC's transforms (bounds may depend on other parameters)
    forward = []
    for rv, part in zip(lay.free, theta_parts):
        transform = model.rvs_to_transforms.get(rv)
        forward.append(part if transform is None else
                       transform.forward(part, *rv.owner.inputs))
    forward = _replace(_flat(forward), dict(zip(lay.free, theta_parts)))
    backward = replace_rvs_by_values(
        lay.free, rvs_to_values=dict(zip(lay.free, _pieces(u, value_shapes))),
        rvs_to_transforms=model.rvs_to_transforms)
    fwd_fn, bwd_fn = _jit([theta], [forward]), _jit([u], [_flat(backward)])

    @numba.njit(nogil=True)
    def to_unconstrained(theta):
        return fwd_fn(theta)[0]

    @numba.njit(nogil=True)
    def to_constrained(u):
        return bwd_fn(u)[0]

    prior_fn = pm.pytensorf.compile([], _flat(lay.free), mode=MODE)
    prior_rngs = [v for v in prior_fn.get_shared() if isinstance(v.type, type(rng.type))]

    def draw_prior(rng: np.random.Generator) -> np.ndarray:
        pm.pytensorf.reseed_rngs(prior_rngs, int(rng.integers(2 ** 62)))
        return np.asarray(prior_fn(), dtype=np.float64)

    _check_finite_start(model, lay, terms, u, x, theta, forward,
                        (draw_prior, to_unconstrained, draw_records))
    identity = _identify(model, lay, prior_logp, draw_record=draw_record, draw_records=draw_records,
                         logp_and_grad=logp_and_grad, to_unconstrained=to_unconstrained,
                         to_constrained=to_constrained, draw_prior=draw_prior)
    return Compiled(model, lay, draw_record, draw_records, logp_and_grad, to_unconstrained,
                    to_constrained, draw_prior, identity)


def identify(function, role: str, identity: str | None) -> None:
    """Let ``function``, compiled from the PyMC model whose digest is ``identity``, carry
    that digest (with its ``role``) for checkpoints' fingerprints: its generated code has
    none of its own (:mod:`dawrap.pymc.identity`)."""
    if identity is not None:
        setattr(function, STATED, f"pymc {role}: {identity}")


def _identify(model: pm.Model, lay: Layout, prior_logp, **functions) -> str | None:
    try:
        identity = model_digest(model, lay, prior_logp)
    except Unverifiable:  # a resume then asks for DAWRAP_RESUME_UNVERIFIED=1, as before
        return None
    for role, function in functions.items():
        identify(function, role, identity)
    return identity


#: Prior draws of the parameters (each with records drawn from the model) at which the log
#: density must be finite somewhere, and the records drawn at each.
START_DRAWS, START_RECORDS = 4, 8
#: PyTensor's Python backend: the check costs no compilation (numba's would take seconds).
_PYTHON = pytensor.compile.mode.Mode(linker="py", optimizer="fast_compile")


def _check_finite_start(model: pm.Model, lay: Layout, terms: list, u, x, theta, forward,
                        compiled: tuple) -> None:
    """Refuse a model whose log density is not finite at any of :data:`START_DRAWS` prior
    draws of the parameters with records drawn from the model, naming the terms that are
    not: a parameter outside its distribution's domain (``sigma=-1``) makes every HMC step
    a rejection, and the chain would stay at its start without a word.

    Evaluated in PyTensor's Python backend (no compilation); where its draws refuse the
    parameters (NumPy's do, ``scale < 0``), the draws come from ``compiled``, the sampler's
    own ``(draw_prior, to_unconstrained, draw_records)``, as a run would make them."""
    draw_prior, to_unconstrained, draw_records = compiled
    memo = dict(zip(lay.free, _pieces(theta, list(lay.params.values()))))
    draws = {}
    for rv in [v for v in model.observed_RVs if v in lay.observed]:
        # a symbolic row count: the generic draw, which the Python backend runs
        rng = pytensor.shared(np.random.default_rng(0))
        draws[rv.name] = _rebuild(rv, rng, pt.as_tensor(np.int64(START_RECORDS)), lay, memo)[1]
        memo[rv] = draws[rv.name]
    prior = _flat(lay.free)
    draw_start = pm.pytensorf.compile([], [prior, _replace(forward, {theta: prior})],
                                      mode=_PYTHON)
    draw_rows = pm.pytensorf.compile([theta], _flat_rows([draws[rv.name] for rv in
                                                          lay.observed]), mode=_PYTHON)
    evaluate = pm.pytensorf.compile([u, x], [term for _, term in terms], mode=_PYTHON,
                                    on_unused_input="ignore")
    rngs = [v for f in (draw_start, draw_rows) for v in f.get_shared()
            if isinstance(v.type, RandomGeneratorType)]
    bad = {}
    for seed in range(START_DRAWS):
        pm.pytensorf.reseed_rngs(rngs, 20220601 + seed)
        try:
            theta_start, u_start = draw_start()
        except Exception:  # e.g. NumPy's "scale < 0": the sampler's draws, compiled
            theta_start = draw_prior(np.random.default_rng(seed))
            u_start = to_unconstrained(theta_start)
        try:
            records = draw_rows(theta_start)
        except Exception:
            records = np.zeros((START_RECORDS, x.type.shape[1]))
            draw_records(np.random.default_rng(seed), theta_start, records)
        found = [float(v) for v in evaluate(u_start, records)]
        if np.isfinite(sum(found)):
            return
        for (name, _), value in zip(terms, found):
            if not np.isfinite(value):
                bad.setdefault(name, value)
    if not bad:  # each term finite, their sum not
        bad = {"their sum": float("nan")}
    raise UnsupportedModel(
        f"the model's log density is not finite at any of {START_DRAWS} prior draws of the "
        f"parameters (with records drawn from the model): "
        f"{', '.join(f'{name} is {value}' for name, value in bad.items())}. Every HMC step "
        f"would be rejected; check the parameters of these distributions (a negative or zero "
        f"scale such as sigma=-1, a probability outside [0, 1], ...)")


def _flat_rows(parts: list):
    """Draws of shape (m, *row) each, as the (m, record_size) records they make."""
    return pt.concatenate([pt.cast(p, "float64").reshape((p.shape[0], -1)) for p in parts],
                          axis=1)
