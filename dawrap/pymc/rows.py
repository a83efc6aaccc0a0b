r"""Whether each record's likelihood reads its own row only: the check that refuses a PyMC
likelihood coupling the records.

The record sampler replaces one record at a time and rebuilds the likelihood one row (or a
block of independent rows) at a time, which is the model only if record :math:`i`'s
distribution depends on the parameters and on row :math:`i` of the observed variables, and
on no other row. ``y ~ N(cumsum(X), 0.01)`` or a covariate centred by its mean inside the
model, ``b * (X - X.mean())``, depend on every row: dawrap would sample another model
(issue 29, item 7).

**How.** The parameters' graph is walked from the observed variables (whose first axis is
the records' axis) to the likelihood's parameters, and each variable is given the axis that
runs along the records, if any. Each operation is accepted only by a rule that proves
element :math:`i` along that axis of its output reads element :math:`i` of its inputs only:
elementwise arithmetic with the records' axes lined up, axis permutations and new axes,
reductions, cumulative sums and softmaxes over *other* axes, full slices of the records'
axis and indexing along others, a matrix product whose contracted axis is not the
records', indexing a parameter vector by a record's own value (``a[group]``), and any
Blockwise operation over the records as a batch axis. Anything else that touches the
records' axis is refused, naming the operation: a reduction or cumulative sum along the
records, a product summing over them, a slice or index that moves rows, an elementwise
operation pairing different records (``X[:, None] - X[None, :]``), or an operation no rule
covers (which could do any of these). A numerical check (perturb one row, see whether
other rows' log densities move) could miss a coupling that vanishes at the points tried;
the walk cannot, because nothing is accepted that a rule does not prove.
"""
from __future__ import annotations

from pytensor.graph.traversal import io_toposort
from pytensor.tensor.basic import Join
from pytensor.tensor.blockwise import Blockwise
from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from pytensor.tensor.extra_ops import CumOp
from pytensor.tensor.math import Argmax, Dot
from pytensor.tensor.shape import Shape, Shape_i, SpecifyShape
from pytensor.tensor.special import LogSoftmax, Softmax
from pytensor.tensor.subtensor import AdvancedSubtensor, AdvancedSubtensor1, Subtensor
from pytensor.tensor.type_other import SliceType
from pytensor.tensor.variable import TensorConstant
from pytensor.compile.ops import DeepCopyOp, ViewOp

__all__ = ["RowCoupling", "record_axes"]


class RowCoupling(Exception):
    """An operation through which a record's likelihood reads other records (``node``, and
    ``why`` in words)."""

    def __init__(self, node, why: str):
        super().__init__(why)
        self.node, self.why = node, why


def record_axes(outputs: list, observed: list, blockers: list) -> list:
    """The records' axis of each of ``outputs`` (None: they do not depend on the records),
    where each of ``observed`` has the records along its first axis and ``blockers`` (the
    free parameters) none; raises :class:`RowCoupling` at the first operation that reads
    across records or that no rule proves reads one record per element.

    Examples
    --------
    >>> import pytensor.tensor as pt
    >>> X, beta = pt.matrix("X"), pt.vector("beta")
    >>> record_axes([pt.sigmoid(X @ beta)], [X], [beta])
    [0]
    >>> record_axes([X - X.mean()], [X], [beta])
    Traceback (most recent call last):
    ...
    dawrap.pymc.rows.RowCoupling: it sums over the records (a sum, mean or other summary of all rows)
    """
    axes = {v: 0 for v in observed}
    axes.update({v: None for v in blockers})
    for node in io_toposort(list(observed) + list(blockers), outputs):
        found = [axes.get(v) for v in node.inputs]
        if all(a is None for a in found):
            result = [None] * len(node.outputs)
        else:
            result = _rule(node, found)
        axes.update(zip(node.outputs, result))
    return [axes.get(v) for v in outputs]


_PASS_THROUGH = (ViewOp, DeepCopyOp, SpecifyShape)
_ACROSS = "it sums over the records (a sum, mean or other summary of all rows)"


def _rule(node, found: list) -> list:
    op, n_out = node.op, len(node.outputs)
    if isinstance(op, (Shape, Shape_i)):  # the number of records, not their values
        return [None] * n_out
    if isinstance(op, _PASS_THROUGH):
        return [found[0]] * n_out
    if isinstance(op, Elemwise):
        return [_same(node, found)] * n_out
    if isinstance(op, DimShuffle):
        if found[0] not in op.new_order:
            raise RowCoupling(node, "it drops the records' axis")
        return [list(op.new_order).index(found[0])]
    if isinstance(op, (CAReduce, Argmax)):
        r = found[0]
        reduced = range(node.inputs[0].type.ndim) if op.axis is None else op.axis
        if r in reduced:
            raise RowCoupling(node, _ACROSS)
        return [r - sum(a < r for a in reduced)] * n_out
    if isinstance(op, (CumOp, Softmax, LogSoftmax)):
        if op.axis is None or op.axis % node.inputs[0].type.ndim == found[0]:
            raise RowCoupling(node, "it runs along the records (a cumulative sum or a "
                                    "normalisation over rows)")
        return [found[0]] * n_out
    if isinstance(op, Subtensor):
        return [_subtensor(node, found)]
    if isinstance(op, (AdvancedSubtensor, AdvancedSubtensor1)):
        return [_advanced(node, found)]
    if isinstance(op, Join):
        return [_join(node, found)]
    if isinstance(op, Blockwise):
        return _blockwise(node, found)
    if isinstance(op, Dot):
        return [_dot(node, found)]
    raise RowCoupling(node, "dawrap cannot verify that it reads one record per row")


def _same(node, found: list):
    """Elementwise: the records' axes of the inputs must line up."""
    axes = {a for a in found if a is not None}
    if len(axes) > 1:
        raise RowCoupling(node, "it pairs values of different records (e.g. "
                                "X[:, None] - X[None, :])")
    return axes.pop()


def _subtensor(node, found: list):
    if any(a is not None for a in found[1:]):
        raise RowCoupling(node, "its index is read from the records")
    r, kept = found[0], 0
    for axis, entry in enumerate(node.op.idx_list):
        if axis == r:
            if not (isinstance(entry, slice) and entry == slice(None)):
                raise RowCoupling(node, "it selects or moves rows along the records' axis "
                                        "(e.g. X[1:] or X[0])")
            return kept
        kept += isinstance(entry, slice)
    return kept + (r - len(node.op.idx_list))


def _advanced(node, found: list):
    """``a[index]`` with ``a`` free of the records and one index read from each record (a
    parameter per group, indexed by a record's group) is that record's own value."""
    indices = node.inputs[1:]
    if found[0] is None and found[1] == 0 and all(
            a is None and isinstance(v.type, SliceType) for v, a in zip(indices[1:],
                                                                        found[2:])):
        return 0
    raise RowCoupling(node, "it indexes the records' axis, or indexes by records in a way "
                            "dawrap cannot verify")


def _join(node, found: list):
    axis = node.inputs[0]
    if not isinstance(axis, TensorConstant):
        raise RowCoupling(node, "it joins along an axis dawrap cannot read")
    r = _same(node, found[1:])
    if int(axis.data) % node.outputs[0].type.ndim == r:
        raise RowCoupling(node, "it concatenates along the records' axis")
    return r


def _dot(node, found: list):
    """A plain matrix product: the contracted axis must not be the records'."""
    a, b = node.inputs
    out = []
    if found[0] is not None:
        if a.type.ndim == 1 or found[0] == a.type.ndim - 1:
            raise RowCoupling(node, "a matrix product sums over the records")
        out.append(0)
    if found[1] is not None:
        if b.type.ndim == 1 or found[1] == 0:
            raise RowCoupling(node, "a matrix product sums over the records")
        out.append(node.outputs[0].type.ndim - 1)
    if len(out) > 1:
        raise RowCoupling(node, "it pairs values of different records")
    return out[0]


def _blockwise(node, found: list):
    """The records as a batch axis of any Blockwise operation; for a matrix product, also as
    a free axis of its core (not the contracted one)."""
    core = node.op.core_op
    out_ndim = node.outputs[0].type.ndim
    out_batch = out_ndim - len(node.op.outputs_sig[0])
    mapped = set()
    for i, (var, r) in enumerate(zip(node.inputs, found)):
        if r is None:
            continue
        batch = var.type.ndim - len(node.op.inputs_sig[i])
        if r < batch:
            mapped.add(out_batch - batch + r)
        elif isinstance(core, Dot):  # (m, n), (n, p) -> (m, p)
            if (i, r - batch) not in ((0, 0), (1, 1)):
                raise RowCoupling(node, "a matrix product sums over the records")
            mapped.add(out_ndim - 2 + (r - batch))
        else:
            raise RowCoupling(node, f"the records are a core axis of {core}, which may mix "
                                    f"them")
    if len(mapped) > 1:
        raise RowCoupling(node, "it pairs values of different records")
    return [mapped.pop()] * len(node.outputs)
