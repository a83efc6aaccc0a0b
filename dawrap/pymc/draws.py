r"""A lean PyTensor op for the random variables of a one-record draw.

The record sampler draws one record per proposal, millions of times per run, so the fixed cost
of each random-variable node counts. PyTensor's numba implementation of a random variable is
general (any size, broadcasting resolved at run time, gufunc-style core loops); for the tiny
static shapes of one record that machinery costs several times the draws themselves
(``benchmarks/results/pymc_record_draw.md``). :class:`RowDraw` stands in for a random variable
whose parameters and support are scalars: its numba implementation is a plain loop over the
known output shape calling PyTensor's own core sampler (``rng.normal(loc, scale)``, ...), so
the draws, and the order in which they consume the generator, are PyTensor's.

It mutates the generator it is given, as PyTensor's in-place random variables do (the chain's
generator is a mutable input of the compiled function); it declares no ``destroy_map`` because
PyTensor refuses in-place ops in a graph before its own rewrites, which is harmless here: each
generator feeds exactly one draw.
"""
from __future__ import annotations

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch.random import numba_core_rv_funcify
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.type import TensorType

__all__ = ["RowDraw", "row_draw"]


class RowDraw(Op):
    """``rv`` drawn with a fixed output ``shape`` and ``dtype``: ``(rng, *params) -> (rng,
    draw)``; numba backend only."""
    __props__ = ("rv", "shape", "dtype")

    def __init__(self, rv: RandomVariable, shape: tuple, dtype: str):
        self.rv, self.shape, self.dtype = rv, tuple(int(d) for d in shape), str(dtype)

    def make_node(self, rng, *params):
        params = [pt.as_tensor_variable(p) for p in params]
        return Apply(self, [rng, *params],
                     [rng.type(), TensorType(self.dtype, shape=self.shape)()])

    def perform(self, node, inputs, outputs):
        raise NotImplementedError("RowDraw runs in PyTensor's numba backend only")


def row_draw(rv_node: Apply, shape: tuple):
    """``(next rng, draw)`` of ``rv_node``'s random variable as a :class:`RowDraw`, or None
    when it has vector parameters or support (PyTensor's own op is kept then)."""
    op = rv_node.op
    if op.ndim_supp != 0 or any(n != 0 for n in op.ndims_params):
        return None
    try:
        numba_core_rv_funcify(op, rv_node)
    except NotImplementedError:
        return None
    rng, params = rv_node.inputs[0], rv_node.inputs[2:]
    return RowDraw(op, shape, rv_node.outputs[1].type.dtype)(rng, *params)


def _implementation(op: RowDraw, node: Apply):
    rv_node = op.rv.make_node(node.inputs[0], pt.as_tensor(np.array(op.shape, dtype="int64")),
                              *node.inputs[1:])
    core = numba_core_rv_funcify(op.rv, rv_node)
    # Generated for this node's static shapes: a parameter with one value is read once, one
    # of the output's shape is indexed directly, anything else is broadcast first.
    lines, args = [], []
    for i, param in enumerate(node.inputs[1:]):
        static = param.type.shape
        if all(d == 1 for d in static):
            index = ", ".join(["0"] * len(static)) or "()"
            lines.append(f"    a{i} = p{i}[{index}]")
            args.append(f"a{i}")
        else:
            lines.append(f"    a{i} = p{i}" if tuple(static) == op.shape else
                         f"    a{i} = np.broadcast_to(p{i}, shape)")
            args.append(f"a{i}[idx]")
    params = ", ".join(f"p{i}" for i in range(len(args)))
    source = "\n".join([f"def row_draw(rng, {params}):",
                        "    out = np.empty(shape, dtype)", *lines,
                        "    for idx in np.ndindex(shape):",
                        f"        out[idx] = core(rng, {', '.join(args)})",
                        "    return rng, out"])
    namespace = {"np": np, "core": core, "shape": op.shape,
                 "dtype": node.outputs[1].type.numpy_dtype}
    exec(compile(source, f"<dawrap.pymc row_draw {op.rv.name}>", "exec"), namespace)
    return numba.njit(namespace["row_draw"])


try:  # PyTensor >= 2.32 keys its numba cache by op; None: this op is not disk-cached
    from pytensor.link.numba.dispatch.basic import register_funcify_and_cache_key

    @register_funcify_and_cache_key(RowDraw)
    def _funcify(op, node, **kwargs):
        return _implementation(op, node), None
except ImportError:  # pragma: no cover - older PyTensor
    from pytensor.link.numba.dispatch import numba_funcify

    @numba_funcify.register(RowDraw)
    def _funcify(op, node, **kwargs):
        return _implementation(op, node)
