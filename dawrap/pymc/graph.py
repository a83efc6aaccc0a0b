"""What dawrap reads off a PyMC model: the parameters, the record layout, and the checks that
turn a model dawrap cannot take into an error saying what to change."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.replace import clone_replace
from pytensor.graph.traversal import ancestors
from pytensor.tensor.variable import TensorConstant
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.random.type import RandomType

from .rows import RowCoupling, record_axes

__all__ = ["Layout", "UnsupportedModel", "layout"]


class UnsupportedModel(ValueError):
    """A PyMC model that dawrap cannot turn into a :class:`dawrap.Model` (the message says
    what to change)."""


class Layout(NamedTuple):
    """Where each parameter and record column lives.

    ``params``: name -> shape of each free (constrained) parameter, in the order of the
    sampler's ``theta``; ``free``/``observed``: the PyMC random variables, ``observed`` in
    record order; ``columns``: name -> slice of a record row; ``row_shapes``: the shape of one
    row of each observed variable; ``n``: the number of records in the model's data.
    """
    params: dict
    free: list
    observed: list
    columns: dict
    row_shapes: dict
    n: int


def _data_shape(model: pm.Model, rv) -> tuple:
    value = model.rvs_to_values[rv]
    data = value.get_value() if isinstance(value, SharedVariable) else getattr(value, "data",
                                                                               None)
    if data is None:
        raise UnsupportedModel(f"observed variable {rv.name!r}: its data must be an array or "
                               f"pm.Data, got {type(value).__name__}")
    return np.shape(data)


def _check_free(model: pm.Model, rv) -> tuple:
    if rv.type.dtype.startswith(("int", "uint", "bool")):
        raise UnsupportedModel(
            f"parameter {rv.name!r} is discrete ({rv.owner.op}): dawrap's PyMC kernels move "
            f"continuous parameters only. Marginalise it out, or write the model as a plain "
            f"dawrap.Model with a conjugate step for it")
    shape = tuple(int(d) for d in model.initial_point()[model.rvs_to_values[rv].name].shape)
    transform = model.rvs_to_transforms.get(rv)
    if transform is not None:
        size = math.prod(pm.draw(rv, random_seed=0).shape)
        if size != math.prod(shape):
            raise UnsupportedModel(
                f"parameter {rv.name!r}: its transform {type(transform).__name__} changes its "
                f"size ({size} -> {math.prod(shape)}), which dawrap's kernels do not support "
                f"(e.g. a Dirichlet); use a size-preserving parametrisation")
        shape = tuple(pm.draw(rv, random_seed=0).shape)
    return shape


def _check_observed(rv, free: list) -> None:
    if not isinstance(rv.owner.op, RandomVariable):
        raise UnsupportedModel(
            f"observed variable {rv.name!r} is a {type(rv.owner.op).__name__}, not a basic "
            f"PyMC distribution, so dawrap cannot draw records from it; write it with a "
            f"basic distribution (pm.Normal, pm.Bernoulli, pm.Poisson, ...)")
    for var in ancestors(rv.owner.inputs[2:], blockers=free):
        if isinstance(var, SharedVariable) and not isinstance(var.type, RandomType):
            raise UnsupportedModel(
                f"observed variable {rv.name!r} depends on the data {var.name!r}, which is not "
                f"an observed variable: dawrap imputes whole records, so every column of a "
                f"record must be modelled; make {var.name!r} an observed variable")


def _check_per_record_constants(rv, free: list, observed: list, row_shapes: dict,
                                n: int) -> None:
    """Refuse a likelihood whose parameters vary by record through a constant (a numpy array
    in the model) rather than through an observed variable.

    The parameters are rebuilt with every observed variable standing for one record (shape
    ``(1, *row)``) and every free parameter for itself: a parameter whose record axis is then
    still longer than 1 reads per-record data that dawrap cannot impute.
    """
    stand_ins = {v: pt.tensor(dtype=v.type.dtype, shape=v.type.shape) for v in free}
    stand_ins.update({v: pt.tensor(dtype=v.type.dtype, shape=(1, *row_shapes[v.name]))
                      for v in observed if v is not rv})
    op = rv.owner.op
    batch = op.batch_ndim(rv.owner)
    params = clone_replace(list(rv.owner.inputs[2:]), replace=stand_ins, rebuild_strict=False)
    for param, core in zip(params, op.ndims_params):
        if param.type.ndim - core == batch and batch > 0 and (param.type.shape[0] or 1) > 1:
            arrays = sorted({tuple(c.data.shape) for c in ancestors(rv.owner.inputs[2:],
                                                                    blockers=free + observed)
                             if isinstance(c, TensorConstant) and c.data.ndim >= 1
                             and c.data.shape[0] == n})
            what = (f"a constant array of shape {arrays[0]}" if len(arrays) == 1 else
                    f"constant arrays of shapes {arrays}" if arrays else "constant data")
            raise UnsupportedModel(
                f"observed variable {rv.name!r} reads per-record data given as {what} (a "
                f"numpy array in the model, not an observed variable): dawrap imputes whole "
                f"records, so every column of a record must be modelled. Make it an observed "
                f"variable with a distribution, e.g. X = pm.Normal(\"X\", 0.0, 1.0, "
                f"observed=your_array), and use X in the likelihood")


def _check_records_independent(rv, free: list, observed: list) -> None:
    """Refuse a likelihood in which a record's distribution reads other records' values
    (a mean, a cumulative sum or a product over the records, rows moved by indexing, ...):
    :mod:`dawrap.pymc.rows` walks the graph and accepts only what it proves reads one
    record per row."""
    op = rv.owner.op
    params = list(rv.owner.inputs[2:])
    try:
        axes = record_axes(params, [v for v in observed if v is not rv], free)
        rows = rv.type.ndim - op.ndim_supp  # the variable's batch axes; records along 0
        for param, core, axis in zip(params, op.ndims_params, axes):
            batch = param.type.ndim - core
            if axis is not None and (axis >= batch or rows - batch + axis != 0):
                raise RowCoupling(param.owner or rv.owner, "the records' axis of this "
                                  "parameter is not the variable's rows")
    except RowCoupling as err:
        name = next((v.name for v in err.node.outputs if v.name), None)
        where = f"{err.node.op}" + (f" (computing {name!r})" if name else "")
        raise UnsupportedModel(
            f"observed variable {rv.name!r}: its likelihood reads other records through "
            f"{where}: {err.why}. dawrap imputes the records one at a time, so each record's "
            f"distribution may depend on the parameters and on that record only; compute "
            f"summaries of the data outside the model (e.g. centre a covariate by a fixed, "
            f"public value rather than by its mean in the model)") from None


def _check_no_imputation(model: pm.Model) -> None:
    """Refuse observed data with missing values: PyMC imputes them as a free parameter
    (``y_unobserved``), which dawrap would sample as part of theta."""
    observed = {rv.name for rv in model.observed_RVs}
    imputed = sorted(rv.name[:-len("_unobserved")] for rv in model.free_RVs
                     if rv.name.endswith("_unobserved")
                     and rv.name[:-len("_unobserved")] + "_observed" in observed)
    if imputed:
        raise UnsupportedModel(
            f"observed variable {imputed[0]!r} has missing (NaN) values, which PyMC imputes "
            f"as the parameter {imputed[0] + '_unobserved'!r}. dawrap imputes every record "
            f"itself and reads only the shape of the observed arrays: give arrays without "
            f"NaN (zeros will do)")


def layout(model: pm.Model, records: Sequence[str] | None = None) -> Layout:
    """Read the parameters and record layout of ``model``, or raise :class:`UnsupportedModel`.

    Parameters
    ----------
    model : pymc.Model
        Priors on continuous parameters and one or more observed variables whose first
        dimension indexes the records (the same number of rows in each).
    records : sequence of str, optional
        The observed variables in the order their columns appear in a record (default: the
        order they were defined in). The release statistic reads records in this layout.

    Examples
    --------
    >>> layout(logistic, records=["y", "X"]).columns
    {'y': slice(0, 1), 'X': slice(1, 3)}
    """
    if not isinstance(model, pm.Model):
        raise TypeError(f"model must be a pymc.Model, got {type(model).__name__}")
    _check_no_imputation(model)
    observed = list(model.observed_RVs)
    if not observed:
        raise UnsupportedModel("the model has no observed variable: give the likelihood of the "
                               "confidential records observed=data (one row per record)")
    by_name = {rv.name: rv for rv in observed}
    if records is not None:
        if isinstance(records, str) or sorted(records) != sorted(by_name):
            raise ValueError(f"records must list each observed variable once, in record "
                             f"order: {sorted(by_name)}, got {records!r}")
        observed = [by_name[name] for name in records]
    if model.potentials:
        raise UnsupportedModel(
            f"the model has Potentials {[v.name for v in model.potentials]}: dawrap cannot "
            f"tell whether they read the records; write them as distributions")
    free = list(model.free_RVs)
    if not free:
        raise UnsupportedModel("the model has no free parameter to infer")
    params = {rv.name: _check_free(model, rv) for rv in free}
    rows, columns, row_shapes, start = {}, {}, {}, 0
    for rv in observed:
        _check_observed(rv, free)
        shape = _data_shape(model, rv)
        if len(shape) == 0:
            raise UnsupportedModel(f"observed variable {rv.name!r} is a scalar: its first "
                                   f"dimension must index the records")
        rows[rv.name], row_shapes[rv.name] = shape[0], tuple(shape[1:])
        width = math.prod(shape[1:])
        columns[rv.name] = slice(start, start + width)
        start += width
    if len(set(rows.values())) > 1:
        raise UnsupportedModel(f"the observed variables have different numbers of rows {rows}: "
                               f"each row must be one record, so give them the same first "
                               f"dimension (or model them as separate datasets)")
    n = next(iter(rows.values()))
    for rv in observed:
        _check_per_record_constants(rv, free, observed, row_shapes, n)
        _check_records_independent(rv, free, observed)
    return Layout(params, free, observed, columns, row_shapes, n)
