r"""Releases made with OpenDP's Context API, read in one call.

A query built with OpenDP's Context API (``opendp.prelude``: ``Context.compositor``, then
``context.query()`` with polars expressions) releases a DataFrame: one row per public key of
its ``group_by`` (one row without it), one column per aggregate. :func:`from_query` reads
that query and its released DataFrame into what :func:`dawrap.sample` takes: the records'
statistic (one cell per row and aggregate), a mechanism whose noise is the one OpenDP
reports for each aggregate (``query.summarize()``: its distribution and scale, never a
number copied by hand) and ``s_dp`` in the statistic's cell order.

What is read, and how it maps onto dawrap's model:

* ``dp.len()`` (OpenDP's "Frame Length"): the count of the group's records, :math:`t = 1`
  per record; ``pl.col(c).dp.sum((L, U))``: the group's clamped sum, :math:`t =
  \min(\max(x_c, L), U)`, with the bounds the query declared (read from its plan);
* ``pl.col(c).dp.quantile(alpha, candidates)`` and ``.dp.median(candidates)`` (without
  ``group_by``, of one column, alone in their query): the candidate OpenDP's exponential
  mechanism selected, read as a :class:`~dawrap.mechanisms.Quantiles` mechanism with
  OpenDP's scoring (the level as the fraction OpenDP makes of it, checked against the level
  ``summarize()`` reports; the size limit from the context's margin, ``max_length``) and
  selection noise (``ExponentialMin``: exponential, ``GumbelMin``: Gumbel);
* ``pl.col(c).dp.mean((L, U))`` (without ``group_by``, alone in its query with other means):
  OpenDP releases the noisy clamped sum over the noisy count, the count clamped at zero;
  read as a :class:`~dawrap.mechanisms.Means` mechanism, whose likelihood sums over the
  noisy counts (the two noises' scales from ``summarize()``'s Sum and Length rows);
* noise: OpenDP's "Integer Laplace" and "Float Laplace" are :math:`P(z) \propto
  e^{-|z|/b}` on the integers and (to a grid of spacing :math:`2^{-k}` that the continuous
  density models) on the reals: as a function of the data both are :math:`e^{-|s-t|/b}`,
  so the posterior is the same, and the mechanism is Laplace-form with each cell's own
  :math:`b`. "Integer Gaussian" and "Float Gaussian" likewise give :math:`e^{-(s-t)^2 /
  2\sigma^2}`;
* OpenDP's counts are released clamped at zero unless ``dp.len(signed=True)``. For a
  Laplace-form count this changes no posterior: a count is :math:`T \ge 0`, and
  :math:`P(T + Z \le 0) \propto e^{-T/b}`, the density at :math:`s = 0` (integer and real
  noise alike). For a Gaussian count a released 0 is censored, which is not represented:
  it is refused.

The privacy accounting differs and is stated, not converted: OpenDP's guarantee is the one
of its context's privacy unit (``unit_of(contributions=1)``: add or remove one record;
``unit_of(changes=1)``: replace one), and that is the guarantee of the release. dawrap's
model holds the number of records ``n`` fixed, which is a modelling choice about the
confidential data, not a privacy claim: the likelihood of the release given the records is
the same under either unit.

Refused, each naming the part: keys that were not public (OpenDP then releases only the
groups above a noisy threshold, and which groups were dropped depends on the data),
aggregates other than a count, a clamped sum, a mean or a quantile, means and quantiles by
group or beside other aggregates (not yet),
expressions before the aggregate other than ``fill_null`` (a filter or a derived column
changes which records or values count), a noise OpenDP reports that is not listed above, and
a DataFrame that is not the query's release (other columns, other keys, non-finite values).

Examples
--------
A count of records by sex, released with OpenDP, read for a model whose record is
``x_i[0] = 0`` (F) or ``1`` (M), as :mod:`dawrap.models.beta_binomial`'s records are (OpenDP's
noise is not seeded: the example shows what was read, not the numbers):

>>> import polars as pl
>>> import opendp.prelude as dp
>>> dp.enable_features("contrib")
>>> data = pl.DataFrame({"sex": ["F", "M", "M", "F", "M"]})
>>> context = dp.Context.compositor(
...     data=data.lazy(), privacy_unit=dp.unit_of(contributions=1),
...     privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=1,
...     margins=[dp.polars.Margin(by=["sex"], invariant="keys", max_length=100)])
>>> query = context.query().group_by("sex").agg(dp.len(signed=True))
>>> read = from_query(query, query.release().collect(), columns={"sex": 0},
...                   categories={"sex": ["F", "M"]})
>>> sorted(read.keys), read.mechanism.noise.family, read.mechanism.noise.scale.tolist()
([('F',), ('M',)], 'laplace', [1.0, 1.0])
>>> read.aggregates[0].kind, read.s_dp.shape
('count', (2,))
"""
from __future__ import annotations

import io
import json
import math
import warnings
from typing import NamedTuple

import numba
import numpy as np

from .mechanisms.base import Mechanism
from .mechanisms.discrete import discrete_gaussian
from .mechanisms.discrete_gaussian import NumpyIntegers
from .mechanisms.gaussian import gaussian_log_density
from .mechanisms.laplace import laplace_log_density
from .mechanisms.means import Means
from .mechanisms.noise import NoiseLaw
from .mechanisms.quantiles import Quantiles, alpha_fraction
from .mechanisms.separable import declare_sparse, gaussian_coordinate, laplace_coordinate

__all__ = ["from_query"]

#: OpenDP's noise distribution (``summarize()``) -> (dawrap noise form, integer-valued).
DISTRIBUTIONS = {"Integer Laplace": ("laplace", True), "Float Laplace": ("laplace", False),
                 "Integer Gaussian": ("gaussian", True), "Float Gaussian": ("gaussian", False)}

#: OpenDP's aggregate names (``summarize()``) -> the kind read here.
AGGREGATES = {"Frame Length": "count", "Length": "count", "Sum": "sum"}

#: OpenDP's selection noise for quantiles (``summarize()``) -> :class:`Quantiles`' noise.
SELECTIONS = {"ExponentialMin": "exponential", "GumbelMin": "gumbel"}


_COUNT, _SUM = 0, 1


class Aggregate(NamedTuple):
    """One aggregate of the query, as read: its output column, kind (``"count"``, ``"sum"``
    or ``"quantile"``), the record column and bounds of a sum, the noise OpenDP reports, and
    a quantile's level and candidates."""

    name: str
    kind: str
    column: str | None
    lower: float
    upper: float
    distribution: str
    scale: float
    signed: bool
    alpha: float = math.nan
    candidates: tuple = ()


class OpenDPRelease(NamedTuple):
    """What :func:`from_query` read: pass ``mechanism`` and ``s_dp`` to
    :func:`dawrap.sample`.

    Attributes
    ----------
    mechanism : dawrap.Mechanism
        The statistic (``mechanism.statistic``: cell ``row * len(aggregates) + a``) with each
        cell's noise.
    s_dp : ndarray
        The released values in the statistic's cell order.
    keys : list of tuple
        The key values of each row, in cell order (``[()]`` without ``group_by``).
    aggregates : tuple of Aggregate
        What each aggregate is, with its noise.
    """

    mechanism: Mechanism
    s_dp: np.ndarray
    keys: list
    aggregates: tuple


def _polars():
    try:
        import polars
    except ImportError as error:  # pragma: no cover - opendp[polars] brings it
        raise ImportError("reading an OpenDP Context query needs polars: "
                          "pip install 'opendp[polars]'") from error
    return polars


def _plan(query) -> dict:
    """The query's polars plan as JSON (the only place that reads polars' plan format)."""
    pl = _polars()
    pyldf = getattr(query, "_ldf", None)
    if pyldf is None or not hasattr(query, "summarize"):
        raise TypeError(f"query must be an OpenDP Context query (context.query()...), got "
                        f"{type(query).__name__}")
    try:
        with warnings.catch_warnings():
            # polars 1.x deprecates the JSON form of a plan (its binary form is not
            # readable); when it is gone, the error below names the version
            warnings.simplefilter("ignore", UserWarning)
            return json.loads(pl.LazyFrame._from_pyldf(pyldf).serialize(format="json"))
    except Exception as error:  # a polars whose plan format this reader does not know
        raise ValueError(f"could not read the query's polars plan with polars "
                         f"{pl.__version__}: {error}") from error


def _unwrap(expr: dict, what: str) -> str:
    """The record column under ``fill_null`` (which changes no record of a model without
    missing values); anything else before the aggregate is refused."""
    while True:
        if "Column" in expr:
            return expr["Column"]
        function = expr.get("Function", {})
        if function.get("function") == "FillNull":
            expr = function["input"][0]
            continue
        raise ValueError(f"{what}: only pl.col(name) (with fill_null) can be read before "
                         f"the aggregate; the query computes {json.dumps(expr)[:120]}")


def _literal(expr: dict, what: str) -> float | bool | None:
    scalar = expr.get("Literal", {})
    for form in ("Dyn", "Scalar"):
        if form in scalar:
            value = next(iter(scalar[form].values()))
            if value == "Null":
                return None
            if isinstance(value, dict):
                value = next(iter(value.values()))
            return value
    raise ValueError(f"{what}: expected a literal in the query's plan, got "
                     f"{json.dumps(expr)[:120]}")


def _read_aggregates(plan: dict):
    """(keys, [(kind, column, lower, upper, signed)]) from the plan's top node."""
    if "GroupBy" in plan:
        node = plan["GroupBy"]
        keys = [_unwrap(k, "group_by key") for k in node["keys"]]
        exprs = node["aggs"]
    elif "Select" in plan:
        node, keys = plan["Select"], []
        exprs = node["expr"]
    else:
        raise ValueError(f"query: expected select(...) or group_by(...).agg(...) over the "
                         f"context's data, got a {next(iter(plan))} step")
    if "DataFrameScan" not in node["input"]:
        raise ValueError(f"query: a {next(iter(node['input']))} step runs before the "
                         "aggregates (a filter or derived column changes which records or "
                         "values count); only the context's data itself can be read")
    read = []
    for expr in exprs:
        name = None
        if "Alias" in expr:
            expr, name = expr["Alias"]
        plugin = expr.get("Function", {}).get("function", {}).get("FfiPlugin", {})
        symbol, inputs = plugin.get("symbol"), expr.get("Function", {}).get("input", [])
        if symbol == "dp_frame_len":
            signed = bool(_literal(inputs[1], "dp.len")) if len(inputs) > 1 else False
            read.append((name or "len", "count", None, 0.0, 0.0, signed, math.nan, ()))
        elif symbol in ("dp_sum", "dp_mean"):   # a clamped column and its bounds
            kind = symbol[3:]
            column = _unwrap(inputs[0], f"dp.{kind}")
            lower, upper = (_literal(inputs[1], f"dp.{kind} bounds"),
                            _literal(inputs[2], f"dp.{kind} bounds"))
            read.append((name or column, kind, column, float(lower), float(upper), True,
                         math.nan, ()))
        elif symbol in ("dp_quantile", "dp_median"):
            column = _unwrap(inputs[0], f"dp.{symbol[3:]}")
            alpha = 0.5 if symbol == "dp_median" else float(_literal(inputs[1], "dp.quantile"))
            candidates = _series(inputs[1 if symbol == "dp_median" else 2], "candidates")
            read.append((name or column, "quantile", column, math.nan, math.nan, True, alpha,
                         candidates))
        else:
            raise ValueError(f"query: the aggregate {symbol or json.dumps(expr)[:80]} cannot "
                             "be read (counts, clamped sums, means and quantiles can)")
    return keys, read


def _series(expr: dict, what: str) -> tuple:
    """A literal Series of the plan (polars keeps it as Arrow IPC bytes)."""
    data = expr.get("Literal", {}).get("Series")
    if not isinstance(data, list):
        raise ValueError(f"query: expected the {what} as a literal series in the plan, got "
                         f"{json.dumps(expr)[:120]}")
    return tuple(float(v) for v in _polars().read_ipc_stream(io.BytesIO(bytes(data)))
                 .to_series())


def _read_noise(query, names: list, kinds: list):
    """[(distribution, scale, level, count scale)] per aggregate (``names``, ``kinds``: their
    output columns and kinds, in the plan's order), from OpenDP's own report: a mean's sum
    and count are two rows."""
    report = query.summarize()
    if "threshold" in report.columns:
        raise ValueError("query: its keys are not public (OpenDP releases only the groups "
                         "above a noisy threshold, and which were dropped depends on the "
                         "data); declare the keys invariant in the context's margin")
    rows = report.to_dicts()
    expected = sum(2 if kind == "mean" else 1 for kind in kinds)
    if len(rows) != expected:
        raise ValueError(f"query: OpenDP reports {len(rows)} noisy aggregates for the "
                         f"{expected} this reader expects of its plan (another "
                         "post-processed aggregate cannot be read yet)")
    out, at = [], 0
    for name, kind in zip(names, kinds):
        if kind == "mean":
            total, count = rows[at], rows[at + 1]
            at += 2
            if (total["column"], count["column"]) != (name, name) or \
                    (total["aggregate"], count["aggregate"]) != ("Sum", "Length"):
                raise ValueError(f"query: OpenDP reports the mean {name!r} as "
                                 f"{[(r['column'], r['aggregate']) for r in (total, count)]}, "
                                 f"this reader expects its Sum and its Length")
            for row in (total, count):
                if row["distribution"] not in DISTRIBUTIONS or \
                        DISTRIBUTIONS[row["distribution"]][0] != "laplace":
                    raise ValueError(f"query: OpenDP reports {row['distribution']!r} noise "
                                     f"for the mean {name!r}; readable: Laplace")
                if not (math.isfinite(row["scale"]) and row["scale"] >= 1e-6):
                    raise ValueError(f"query: the mean {name!r} is released with noise of "
                                     f"scale {row['scale']} (an invariant of the context); "
                                     "release it as a clamped sum over the known count")
            if not DISTRIBUTIONS[count["distribution"]][1]:
                raise ValueError(f"query: the count of the mean {name!r} has real noise")
            out.append((total["distribution"], float(total["scale"]), math.nan,
                        float(count["scale"])))
            continue
        row = rows[at]
        at += 1
        if row["column"] != name:
            raise ValueError(f"query: OpenDP reports the aggregates as {[r['column'] for r in rows]}"
                             f", its plan as {names}: this reader does not know that order")
        quantile = row["aggregate"].endswith("-Quantile")
        if AGGREGATES.get(row["aggregate"]) is None and not quantile:
            raise ValueError(f"query: the aggregate {row['aggregate']!r} of column "
                             f"{row['column']!r} cannot be read yet (counts, sums, means and quantiles can)")
        if row["distribution"] not in (SELECTIONS if quantile else DISTRIBUTIONS):
            raise ValueError(f"query: OpenDP reports {row['distribution']!r} noise for "
                             f"{row['column']!r}; readable: "
                             f"{sorted(SELECTIONS if quantile else DISTRIBUTIONS)}")
        if not (math.isfinite(row["scale"]) and row["scale"] > 0):
            raise ValueError(f"query: {row['column']!r} is released without noise (scale "
                             f"{row['scale']}: an invariant of the context); leave it out "
                             "of the query (dawrap's n is the total count)")
        level = float(row["aggregate"][:-len("-Quantile")]) if quantile else math.nan
        out.append((row["distribution"], float(row["scale"]), level, math.nan))
    return out


def _cell_table(rows: list, keys: list, categories: dict
                ) -> tuple[list, np.ndarray, np.ndarray]:
    """The released rows' key values (``rows``: one tuple per row, ``[()]`` without keys),
    the code sizes of the keys, and the row of each code combination (-1 for none); shared
    with :mod:`dawrap.tumult`."""
    if set(keys) - set(categories):
        raise ValueError(f"categories: give the codes of every key of the query; missing "
                         f"{sorted(set(keys) - set(categories))}")
    sizes = np.array([len(categories[k]) for k in keys], dtype=np.int64)
    row_of = np.full(int(np.prod(sizes)) if keys else 1, -1, dtype=np.int64)
    for r, values in enumerate(rows):
        flat = 0
        for k, value in zip(keys, values):
            if value not in categories[k]:
                raise ValueError(f"released: the row {k}={value!r} is not among "
                                 f"categories[{k!r}] = {list(categories[k])}")
            flat = flat * len(categories[k]) + list(categories[k]).index(value)
        if row_of[flat] >= 0:
            raise ValueError(f"released: the key {dict(zip(keys, values))} appears twice")
        row_of[flat] = r
    if np.any(row_of < 0):
        missing = int(np.flatnonzero(row_of < 0)[0])
        codes = np.unravel_index(missing, tuple(sizes))
        raise ValueError(
            f"released: no row for {dict((k, categories[k][c]) for k, c in zip(keys, codes))}:"
            " the query's public keys say no record has it; leave it out of categories (and"
            " of the model's records)")
    return rows, sizes, row_of


def _statistic(key_columns, sizes, row_of, kinds, columns, lower, upper):
    """The compiled statistic and its entries: a record adds to its row's cells only."""
    n_aggregates = kinds.shape[0]

    @numba.njit(nogil=True)
    def entries(x_i, index, value):
        flat = 0
        for k in range(key_columns.shape[0]):
            code = int(x_i[key_columns[k]])
            if code < 0 or code >= sizes[k]:
                return -1  # a code outside the categories: the sweep stops, naming it
            flat = flat * sizes[k] + code
        row = row_of[flat]
        for a in range(n_aggregates):
            index[a] = row * n_aggregates + a
            if kinds[a] == _COUNT:
                value[a] = 1.0
            else:
                value[a] = min(max(x_i[columns[a]], lower[a]), upper[a])
        return n_aggregates

    @numba.njit(nogil=True)
    def statistic(x_i, out):
        out[:] = 0.0
        index = np.empty(n_aggregates, np.int64)
        value = np.empty(n_aggregates)
        if entries(x_i, index, value) < 0:
            out[:] = np.nan  # outside the categories: reported, never counted elsewhere
            return
        for a in range(n_aggregates):
            out[index[a]] += value[a]

    return declare_sparse(statistic, entries, nnz=n_aggregates)


def _release_drawer(form: str, scale: np.ndarray, integer: np.ndarray, clamped: np.ndarray):
    """Simulated releases as OpenDP makes them, drawn with NumPy's generator (for
    simulation, never for publication): integer noise on integer cells (the two-sided
    geometric; the discrete Gaussian by its exact algorithm), real noise on the others,
    unsigned counts clamped at zero."""

    def draw(rng, t):
        t = np.asarray(t, dtype=float)
        if form == "laplace":
            p = -np.expm1(-1.0 / scale)
            noise = np.where(integer, rng.geometric(p) - rng.geometric(p),
                             rng.laplace(0.0, scale))
        else:
            source = NumpyIntegers(rng)
            noise = np.array([discrete_gaussian(sigma, source) if whole else
                              rng.normal(0.0, sigma) for sigma, whole in zip(scale, integer)])
        out = np.where(integer, np.round(t), t) + noise
        return np.where(clamped, np.maximum(out, 0.0), out)

    return draw


def _max_length(query, keys: list) -> int:
    """The margin's ``max_length`` OpenDP scores quantiles with (their size limit)."""
    try:
        domain = object.__getattribute__(query, "_query")._chain[0]
        length = domain.get_margin(list(keys)).max_length
    except Exception as error:  # an OpenDP whose query keeps its domain elsewhere
        raise ValueError(f"query: could not read its margin's max_length (OpenDP's quantile "
                         f"scores depend on it) from this OpenDP version: {error}") from error
    if length is None:
        raise ValueError("query: its margin declares no max_length, which OpenDP's quantile "
                         "scores need")
    return int(length)


def _quantiles(query, keys, aggregates, levels, released, columns) -> OpenDPRelease:
    """A query of quantiles of one column, without groups: a :class:`Quantiles` mechanism."""
    if keys:
        raise ValueError("query: quantiles by group cannot be read yet; release each "
                         "group's quantiles as a query of its own")
    if any(a.kind != "quantile" for a in aggregates):
        raise ValueError("query: quantiles together with counts or sums are two mechanisms, "
                         "which one cannot read; release the quantiles as a query of their "
                         "own")
    names = sorted({a.column for a in aggregates})
    if len(names) > 1:
        raise ValueError(f"query: quantiles of one column per query can be read, this one "
                         f"has quantiles of {names}")
    if names[0] not in columns:
        raise ValueError(f"columns: give the record column of {names}")
    kinds = {SELECTIONS[a.distribution] for a in aggregates}
    if len(kinds) > 1:
        raise ValueError("query: its quantiles have exponential and Gumbel selection noise "
                         "together; release them as two queries")
    expected = {a.name for a in aggregates}
    if set(released.columns) != expected or released.height != 1:
        raise ValueError(f"released: the query releases one row of {sorted(expected)}, the "
                         f"DataFrame has {released.height} row(s) of "
                         f"{sorted(released.columns)}: is it this query's?")
    size_limit = _max_length(query, keys)
    fractions = [alpha_fraction(a.alpha, size_limit) for a in aggregates]
    for a, (num, den), level in zip(aggregates, fractions, levels):
        if not math.isclose(num / den, level, rel_tol=1e-12, abs_tol=1e-300):
            raise ValueError(f"query: OpenDP reports the level of {a.name!r} as {level!r}, "
                             f"this reader scores it as {num}/{den}: this OpenDP version "
                             f"scores quantiles otherwise")
    pl = _polars()
    # OpenDP casts the candidates to the column's type before scoring them
    candidates = [pl.Series(a.candidates).cast(released[a.name].dtype).cast(pl.Float64)
                  .to_list() for a in aggregates]
    mechanism = Quantiles(fractions, candidates, [a.scale for a in aggregates],
                          noise=kinds.pop(), column=columns[names[0]], size_limit=size_limit)
    s_dp = np.array([float(released[a.name][0]) for a in aggregates])
    mechanism.check_release(s_dp)
    return OpenDPRelease(mechanism, s_dp, [()], aggregates)


def _means(keys, aggregates, count_scales, released, columns) -> OpenDPRelease:
    """A query of means without groups: a :class:`~dawrap.mechanisms.Means` mechanism."""
    if keys:
        raise ValueError("query: means by group cannot be read yet; release each group's "
                         "means as a query of its own, or grouped sums and counts")
    if any(a.kind != "mean" for a in aggregates):
        raise ValueError("query: means together with other aggregates are two mechanisms, "
                         "which one cannot read; release the means as a query of their own")
    missing = sorted({a.column for a in aggregates} - set(columns))
    if missing:
        raise ValueError(f"columns: give the record column of {missing}")
    expected = {a.name for a in aggregates}
    if set(released.columns) != expected or released.height != 1:
        raise ValueError(f"released: the query releases one row of {sorted(expected)}, the "
                         f"DataFrame has {released.height} row(s) of "
                         f"{sorted(released.columns)}: is it this query's?")
    s_dp = np.array([float(released[a.name][0]) for a in aggregates])
    if not np.all(np.isfinite(s_dp)):
        raise ValueError("released: a mean is not finite: its noisy count was zero, which "
                         "this reader does not represent")
    mechanism = Means([columns[a.column] for a in aggregates],
                      [(a.lower, a.upper) for a in aggregates],
                      [a.scale for a in aggregates], count_scales,
                      [DISTRIBUTIONS[a.distribution][1] for a in aggregates])
    return OpenDPRelease(mechanism, s_dp, [()], aggregates)


def from_query(query, released, *, columns: dict, categories: dict | None = None
               ) -> OpenDPRelease:
    r"""Read an OpenDP Context query and its released DataFrame (module docstring).

    Parameters
    ----------
    query : OpenDP query
        The query as built with the Context API (``context.query()...``), before or after
        ``release()``; its plan and ``summarize()`` are read.
    released : polars.DataFrame
        What ``query.release().collect()`` returned.
    columns : dict
        The record column (an index into a record ``x_i``) of each DataFrame column the query
        reads: its keys and the columns it sums.
    categories : dict, optional
        For each key of ``group_by``: its values in code order (a record's key column holds
        the code ``0, 1, ...``).

    Returns
    -------
    OpenDPRelease
        ``mechanism`` and ``s_dp`` for :func:`dawrap.sample`, the rows' keys and the
        aggregates as read.

    Examples
    --------
    A clamped sum without groups: its bounds come from the query.

    >>> import polars as pl
    >>> import opendp.prelude as dp
    >>> dp.enable_features("contrib")
    >>> data = pl.DataFrame({"age": [23, 45, 67, 89]})
    >>> context = dp.Context.compositor(
    ...     data=data.lazy(), privacy_unit=dp.unit_of(contributions=1),
    ...     privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=1,
    ...     margins=[dp.polars.Margin(by=[], max_length=100)])
    >>> query = context.query().select(pl.col("age").fill_null(0).dp.sum((18, 80)))
    >>> read = from_query(query, query.release().collect(), columns={"age": 0})
    >>> read.aggregates[0][:5]
    ('age', 'sum', 'age', 18.0, 80.0)
    >>> read.mechanism.noise.scale.tolist()
    [80.0]

    A median and a first quartile among public candidates, selected by OpenDP's exponential
    mechanism: the mechanism has their exact likelihood.

    >>> context = dp.Context.compositor(
    ...     data=data.lazy(), privacy_unit=dp.unit_of(contributions=1),
    ...     privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=2,
    ...     margins=[dp.polars.Margin(by=[], max_length=100)])
    >>> query = context.query().select(
    ...     pl.col("age").fill_null(0).dp.median([20, 40, 60, 80]).alias("median"),
    ...     pl.col("age").fill_null(0).dp.quantile(0.25, [20, 40, 60]).alias("q1"))
    >>> read = from_query(query, query.release().collect(), columns={"age": 0})
    >>> read.mechanism
    Quantiles(alphas=[0.5, 0.25], noise='exponential', scale=[8.0, 24.0], size=9)
    >>> [a.kind for a in read.aggregates], read.s_dp.shape
    (['quantile', 'quantile'], (2,))
    """
    categories = dict(categories or {})
    keys, plan_aggregates = _read_aggregates(_plan(query))
    noise = _read_noise(query, [name for name, *_ in plan_aggregates],
                        [kind for _, kind, *_ in plan_aggregates])
    needed = set(keys) | {c for _, _, c, *_ in plan_aggregates if c is not None}
    if needed - set(columns):
        raise ValueError(f"columns: give the record column of {sorted(needed - set(columns))}")
    aggregates = tuple(Aggregate(name, kind, column, lower, upper, distribution, scale, signed,
                                 alpha, candidates)
                       for (name, kind, column, lower, upper, signed, alpha, candidates),
                       (distribution, scale, *_) in zip(plan_aggregates, noise))
    if any(a.kind == "quantile" for a in aggregates):
        return _quantiles(query, keys, aggregates, [level for _, _, level, _ in noise],
                          released, columns)
    if any(a.kind == "mean" for a in aggregates):
        return _means(keys, aggregates, [count for *_, count in noise], released, columns)
    forms = {DISTRIBUTIONS[a.distribution][0] for a in aggregates}
    if len(forms) > 1:
        raise ValueError("query: its aggregates have Laplace and Gaussian noise together, "
                         "which one mechanism cannot read yet; release them as two queries")
    form = forms.pop()
    expected = set(keys) | {a.name for a in aggregates}
    if set(released.columns) != expected:
        raise ValueError(f"released: the query releases the columns {sorted(expected)}, the "
                         f"DataFrame has {sorted(released.columns)}: is it this query's?")
    rows, sizes, row_of = _cell_table(released.select(keys).rows() if keys else [()], keys,
                                      categories)
    s_dp = np.column_stack([released[a.name].cast(float).to_numpy() for a in aggregates]
                           ).ravel() if rows else np.empty(0)
    if not np.all(np.isfinite(s_dp)):
        raise ValueError("released: a released value is not finite")
    for a in aggregates:
        if a.kind == "count" and not a.signed and form == "gaussian" and \
                np.any(released[a.name].to_numpy() == 0):
            raise ValueError(f"released: {a.name!r} is a count clamped at zero with Gaussian "
                             "noise, and a released 0 is censored (not represented); release "
                             "it with dp.len(signed=True)")
    statistic = _statistic(
        np.array([columns[k] for k in keys], dtype=np.int64), sizes, row_of,
        np.array([_COUNT if a.kind == "count" else _SUM for a in aggregates], dtype=np.int64),
        np.array([columns.get(a.column, 0) if a.column else 0 for a in aggregates],
                 dtype=np.int64),
        np.array([a.lower for a in aggregates]), np.array([a.upper for a in aggregates]))
    size = len(rows) * len(aggregates)
    scale = np.tile([a.scale for a in aggregates], len(rows))
    if form == "laplace":
        params = np.append(1.0 / scale, -np.log(2.0 * scale).sum())
        density, coordinate = laplace_log_density, laplace_coordinate
    else:
        params = np.append(1.0 / scale, -0.5 * np.log(2.0 * np.pi * scale ** 2).sum())
        density, coordinate = gaussian_log_density, gaussian_coordinate
    integer = np.tile([DISTRIBUTIONS[a.distribution][1] for a in aggregates], len(rows))
    clamped = np.tile([a.kind == "count" and not a.signed for a in aggregates], len(rows))
    mechanism = Mechanism(statistic, density, size=size, params=params,
                          coordinate_log_density=coordinate, name="OpenDP query",
                          noise=NoiseLaw.of(form, scale, size=size),
                          draw_release=_release_drawer(form, scale, integer, clamped))
    return OpenDPRelease(mechanism, s_dp, [tuple(r) for r in rows], aggregates)
