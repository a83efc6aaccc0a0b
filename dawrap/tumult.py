r"""Releases made with Tumult Analytics, read in one call.

A query built with Tumult Analytics (``tmlt.analytics``: ``QueryBuilder(source)``, then
``groupby(KeySet)`` and an aggregate) and evaluated by a ``Session`` releases a Spark
DataFrame: one row per key of its KeySet (one row without ``groupby``), and the aggregate's
column. :func:`from_query` reads the query, the budget it was evaluated with and its released
DataFrame into what :func:`dawrap.sample` takes, as :func:`dawrap.opendp.from_query` does for
OpenDP: the records' statistic (one cell per row), a mechanism whose noise is the one Tumult
reports for the query, and ``s_dp`` in the statistic's cell order.

Where the noise is read: Tumult 0.21 reports a query's noise through
``Session._noise_info(query, budget)`` (``tmlt/analytics/session.py``; a private method, but
the one Tumult documents with an example): it compiles the query as ``Session.evaluate``
does, with the session's neighbouring relation (``protected_change``) and the budget, and
returns the mechanism of the measurement built (``_NoiseMechanism``, ``tmlt/analytics/
_noise_info.py``) with its parameter. Tumult's query results themselves (the DataFrame) carry
neither. The report is the same before and after the query is evaluated (unless the budget
requested was within Tumult's rounding tolerance above what remained: it then spends what
remained, a difference in the scale below 1e-9 relative).

What is read, and how it maps onto dawrap's model:

* ``count()`` (``GroupByCount``): the count of the group's records, :math:`t = 1` per record;
  ``sum(column, low, high)`` (``GroupByBoundedSum``): the group's clamped sum, :math:`t =
  \min(\max(x_c, \text{low}), \text{high})`, with the bounds of the query (Tumult clamps to
  exactly these; an integer column takes integer bounds only);
* grouping by a ``KeySet`` (public keys: every key has a row, whatever the data), or no
  grouping; records whose keys are not in the KeySet are in no row (Tumult drops them), so
  the model's records are those whose keys are, and ``categories`` must be the KeySet's
  values (every combination of them a key of the KeySet);
* noise, from ``_noise_info``: ``GEOMETRIC`` (two-sided geometric on the integers,
  :math:`P(z) \propto e^{-|z|/\alpha}`, parameter :math:`\alpha`: integer counts and sums
  under pure or approximate DP) is dawrap's ``"geometric"`` family of scale :math:`\alpha`;
  ``LAPLACE`` (float sums: parameter the scale :math:`b`) is ``"laplace"``;
  ``DISCRETE_GAUSSIAN`` (integer counts and sums under zCDP, parameter :math:`\sigma^2`) is
  ``"discrete_gaussian"`` with :math:`\sigma`; ``GAUSSIAN`` (float sums under zCDP,
  parameter :math:`\sigma^2`) is ``"gaussian"``. Tumult's counts are not clamped at zero, so
  nothing is censored;
* Tumult drops the nulls and NaNs of a summed column and replaces its infinities by the
  bounds; dawrap's records have no missing or infinite values, so neither happens to them.

The privacy accounting differs and is stated, not converted: Tumult's guarantee is the one
of its session's ``protected_change`` (``AddOneRow()``: add or remove one row;
``AddMaxRows(k)``: add or remove up to ``k`` rows, the noise then ``k`` times larger) and its
budget, and that is the guarantee of the release. dawrap's model holds the number of records
``n`` fixed, which is a modelling choice about the confidential data, not a privacy claim:
the likelihood of the release given the records is the same under either relation, so the
noise Tumult reports is the noise to condition on.

Refused, each naming the part: ``groupby`` by column names without a KeySet (Tumult then
selects the groups by a noisy threshold, so which groups appear depends on the data),
``suppress`` (a threshold on the noisy counts), aggregates other than a count and a clamped
sum (averages, variances, standard deviations, quantiles, distinct counts, ``get_groups``,
``get_bounds``), any step before the aggregate (a filter, map, join, rename, null handling or
``enforce``: they change which records or values count), tables protected by
``AddRowsWithID`` (Tumult truncates each ID's rows, which this statistic does not
represent), a noise Tumult reports that is not listed above or no noise (an infinite
budget), a Tumult Analytics other than 0.21 (its report was read as 0.21 makes it), and a
DataFrame that is not the query's release (other columns, other keys, missing or non-finite
values). A view (``Session.create_view``) is read as a table: its rows are the records.

Examples
--------
A count of people by sex, released with Tumult, read for a model whose record is
``x_i[0] = 0`` (F) or ``1`` (M) (Tumult's noise is not seeded: the example shows what was
read, not the numbers):

>>> import tempfile
>>> import pandas as pd
>>> from pyspark.sql import SparkSession
>>> from tmlt.analytics import AddOneRow, KeySet, PureDPBudget, QueryBuilder, Session
>>> spark = (SparkSession.builder.config("spark.sql.warehouse.dir", tempfile.mkdtemp())
...          .getOrCreate())
>>> people = spark.createDataFrame(pd.DataFrame({"sex": ["F", "M", "M", "F", "M"],
...                                              "age": [23, 45, 67, 89, 30]}))
>>> session = Session.from_dataframe(PureDPBudget(2.0), "people", people,
...                                  protected_change=AddOneRow())
>>> query = QueryBuilder("people").groupby(KeySet.from_dict({"sex": ["F", "M"]})).count()
>>> released = session.evaluate(query, PureDPBudget(1.0))
>>> read = from_query(session, query, PureDPBudget(1.0), released, columns={"sex": 0},
...                   categories={"sex": ["F", "M"]})
>>> read.mechanism.noise.family, read.mechanism.noise.scale.tolist(), read.keys
('geometric', [1.0, 1.0], [('F',), ('M',)])
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .mechanisms.base import Mechanism
from .mechanisms.discrete_gaussian import discrete_gaussian_log_normaliser
from .mechanisms.families import family_named
from .mechanisms.noise import NoiseLaw, inverse_scale_params
from .opendp import _COUNT, _SUM, Aggregate, _cell_table, _release_drawer, _statistic

__all__ = ["from_query", "TumultRelease", "SUPPORTED_VERSIONS"]

#: The Tumult Analytics versions whose noise report this reader was written against.
SUPPORTED_VERSIONS = "0.21.x"

#: Tumult's noise mechanism (``_noise_info``) -> (dawrap noise family, whether Tumult's
#: parameter is the variance sigma^2 rather than the scale).
NOISES = {"GEOMETRIC": ("geometric", False), "LAPLACE": ("laplace", False),
          "DISCRETE_GAUSSIAN": ("discrete_gaussian", True), "GAUSSIAN": ("gaussian", True)}


class TumultRelease(NamedTuple):
    """What :func:`from_query` read (the fields of :class:`dawrap.opendp.OpenDPRelease`):
    pass ``mechanism`` and ``s_dp`` to :func:`dawrap.sample`.

    Attributes
    ----------
    mechanism : dawrap.Mechanism
        The statistic (``mechanism.statistic``: one cell per released row) with its noise.
    s_dp : ndarray
        The released values in the statistic's cell order.
    keys : list of tuple
        The key values of each row, in cell order (``[()]`` without ``groupby``).
    aggregates : tuple of dawrap.opendp.Aggregate
        The aggregate as read: its output column, kind (``"count"`` or ``"sum"``), summed
        column and bounds, Tumult's noise mechanism and dawrap's scale of it.

    Examples
    --------
    >>> TumultRelease._fields
    ('mechanism', 's_dp', 'keys', 'aggregates')
    """

    mechanism: Mechanism
    s_dp: np.ndarray
    keys: list
    aggregates: tuple


def _tumult():
    """``tmlt.analytics`` and the query expressions read here, at the supported version."""
    try:
        import tmlt.analytics as analytics
        from tmlt.analytics import _query_expr as expressions
    except ImportError as error:
        raise ImportError("reading a Tumult Analytics query needs tmlt.analytics "
                          "(pip install 'dawrap[tumult]'; see .ci/install_tumult)") from error
    if not analytics.__version__.startswith("0.21."):
        raise ImportError(f"Tumult Analytics {analytics.__version__} is installed; this reader "
                          f"knows the noise report of {SUPPORTED_VERSIONS} "
                          "(Session._noise_info) and does not guess another version's")
    return analytics, expressions


def _log_normaliser(family: str, scale: float) -> float:
    """One coordinate's log normaliser of the noise, so that the log density is the noise's
    exact log probability (mass or density), not only up to a constant."""
    if family == "geometric":   # (1 - a) / (1 + a), a = e^(-1/b)
        return math.log(-math.expm1(-1.0 / scale)) - math.log1p(math.exp(-1.0 / scale))
    if family == "laplace":
        return -math.log(2.0 * scale)
    if family == "discrete_gaussian":
        return -discrete_gaussian_log_normaliser(scale)
    return -0.5 * math.log(2.0 * math.pi * scale ** 2)


def _read_expression(session, query, expressions):
    """(aggregate expression, kind, KeySet) of a count or clamped sum over a private table."""
    expr = getattr(query, "_query_expr", None)
    if expr is None or not isinstance(expr, expressions.QueryExpr):
        raise TypeError(f"query must be a Tumult Analytics query (QueryBuilder(...)...count() "
                        f"or .sum(...)), got {type(query).__name__}")
    if isinstance(expr, expressions.SuppressAggregates):
        raise ValueError("query: suppress(...) releases only the groups whose noisy count is "
                         "above a threshold (which were dropped depends on the data); "
                         "release the counts without it")
    kinds = {expressions.GroupByCount: "count", expressions.GroupByBoundedSum: "sum"}
    kind = kinds.get(type(expr))
    if kind is None:
        raise ValueError(f"query: Tumult's {type(expr).__name__} cannot be read (counts and "
                         "clamped sums can)")
    if not isinstance(expr.groupby_keys, expressions.KeySet):
        raise ValueError(f"query: groupby({list(expr.groupby_keys)}) without a KeySet: Tumult "
                         "selects the groups by a noisy threshold, so which groups appear "
                         "depends on the data; group by a public KeySet")
    if not isinstance(expr.child, expressions.PrivateSource):
        raise ValueError(f"query: a {type(expr.child).__name__} step runs before the "
                         f"aggregate (it changes which records or values count); only a "
                         "private table itself can be read")
    try:
        table = session._catalog.tables[expr.child.source_id]
    except (AttributeError, KeyError) as error:
        raise ValueError(f"session: it has no private table {expr.child.source_id!r} (is it "
                         "the session the query was evaluated in?)") from error
    if table.schema.id_column is not None:
        raise ValueError(f"session: the table {expr.child.source_id!r} is protected by "
                         f"AddRowsWithID (ID column {table.schema.id_column!r}): Tumult "
                         "truncates each ID's rows, which cannot be read")
    return expr, kind, expr.groupby_keys


def _read_noise(session, query, budget) -> tuple[str, str, float]:
    """(Tumult's mechanism name, dawrap's family, dawrap's scale) from Tumult's report."""
    report = list(session._noise_info(query, budget))
    if len(report) != 1:
        raise ValueError(f"query: Tumult reports {len(report)} noise mechanisms for it "
                         f"({report}); this reader reads one noisy aggregate")
    mechanism = getattr(report[0].get("noise_mechanism"), "name", None)
    if mechanism not in NOISES:
        raise ValueError(f"query: Tumult reports {report[0].get('noise_mechanism')} noise; "
                         f"readable: {sorted(NOISES)}")
    family, is_variance = NOISES[mechanism]
    parameter = float(report[0]["noise_parameter"])
    if not (math.isfinite(parameter) and parameter > 0.0):
        raise ValueError(f"query: Tumult reports {mechanism} noise of parameter {parameter} "
                         "(no noise: an infinite budget), which is not a DP release dawrap "
                         "conditions on")
    return mechanism, family, math.sqrt(parameter) if is_variance else parameter


def _released_rows(released, keys: list, output: str, key_rows: list) -> tuple[list, list]:
    """The released rows' key tuples and values, checked to be the query's release."""
    frame = released.toPandas() if hasattr(released, "toPandas") else released
    if not hasattr(frame, "columns") or not hasattr(frame, "itertuples"):
        raise TypeError(f"released must be the DataFrame Session.evaluate returned (Spark, or "
                        f"its toPandas()), got {type(released).__name__}")
    expected = set(keys) | {output}
    if set(frame.columns) != expected:
        raise ValueError(f"released: the query releases the columns {sorted(expected)}, the "
                         f"DataFrame has {sorted(map(str, frame.columns))}: is it this query's?")
    rows = [tuple(r) for r in frame[keys].itertuples(index=False)] if keys else \
        [()] * len(frame)
    if len(rows) != len(key_rows) or set(rows) != set(key_rows):
        extra, missing = set(rows) - set(key_rows), set(key_rows) - set(rows)
        raise ValueError(f"released: its {len(rows)} row(s) are not the query's KeySet of "
                         f"{len(key_rows)} (not in it: {sorted(extra)[:3]}, missing: "
                         f"{sorted(missing)[:3]}): is it this query's?")
    values = frame[output].to_numpy(dtype=float, na_value=np.nan)
    if not np.all(np.isfinite(values)):
        raise ValueError(f"released: a value of {output!r} is missing or not finite")
    return rows, values.tolist()


def from_query(session, query, budget, released, *, columns: dict,
               categories: dict | None = None) -> TumultRelease:
    r"""Read a Tumult Analytics query, its budget and its released DataFrame (module
    docstring).

    Parameters
    ----------
    session : tmlt.analytics.Session
        The session that evaluated the query: its ``_noise_info`` report is read.
    query : tmlt.analytics.Query
        The query as passed to ``session.evaluate``: a ``count()`` or a ``sum(column, low,
        high)`` of a private table, grouped by a KeySet or not grouped.
    budget : tmlt.analytics.PrivacyBudget
        The budget the query was evaluated with.
    released : pyspark.sql.DataFrame or pandas.DataFrame
        What ``session.evaluate(query, budget)`` returned (or its ``toPandas()``).
    columns : dict
        The record column (an index into a record ``x_i``) of each table column the query
        reads: its keys and the column it sums.
    categories : dict, optional
        For each key column: its values in code order (a record's key column holds the code
        ``0, 1, ...``); every combination of them must be a key of the query's KeySet.

    Returns
    -------
    TumultRelease
        ``mechanism`` and ``s_dp`` for :func:`dawrap.sample`, the rows' keys and the
        aggregate as read.

    Examples
    --------
    A clamped sum of ages without groups, under zCDP: Tumult adds discrete Gaussian noise to
    the integer sum, with the bounds of the query.

    >>> import tempfile
    >>> import pandas as pd
    >>> from pyspark.sql import SparkSession
    >>> from tmlt.analytics import AddOneRow, QueryBuilder, RhoZCDPBudget, Session
    >>> spark = (SparkSession.builder.config("spark.sql.warehouse.dir", tempfile.mkdtemp())
    ...          .getOrCreate())
    >>> ages = spark.createDataFrame(pd.DataFrame({"age": [23, 45, 67, 89]}))
    >>> session = Session.from_dataframe(RhoZCDPBudget(0.5), "ages", ages,
    ...                                  protected_change=AddOneRow())
    >>> query = QueryBuilder("ages").sum("age", 18, 80)
    >>> released = session.evaluate(query, RhoZCDPBudget(0.5))
    >>> read = from_query(session, query, RhoZCDPBudget(0.5), released, columns={"age": 0})
    >>> read.aggregates[0][:5]
    ('age_sum', 'sum', 'age', 18.0, 80.0)
    >>> read.mechanism.noise.family, read.mechanism.noise.scale.tolist()
    ('discrete_gaussian', [80.0])
    """
    _, expressions = _tumult()
    if not hasattr(session, "_noise_info") or not hasattr(session, "evaluate"):
        raise TypeError(f"session must be a tmlt.analytics.Session, got "
                        f"{type(session).__name__}")
    categories = dict(categories or {})
    expr, kind, keyset = _read_expression(session, query, expressions)
    mechanism_name, family, scale = _read_noise(session, query, budget)
    key_frame = keyset.dataframe()
    keys = list(key_frame.columns)
    key_rows = [tuple(r) for r in key_frame.collect()] if keys else [()]
    column = expr.measure_column if kind == "sum" else None
    needed = set(keys) | ({column} if column else set())
    if needed - set(columns):
        raise ValueError(f"columns: give the record column of {sorted(needed - set(columns))}")
    rows, values = _released_rows(released, keys, expr.output_column, key_rows)
    rows, sizes, row_of = _cell_table(rows, keys, categories)
    lower, upper = (float(expr.low), float(expr.high)) if kind == "sum" else (0.0, 0.0)
    aggregate = Aggregate(expr.output_column, kind, column, lower, upper, mechanism_name,
                          scale, True)
    statistic = _statistic(
        np.array([columns[k] for k in keys], dtype=np.int64), sizes, row_of,
        np.array([_COUNT if kind == "count" else _SUM], dtype=np.int64),
        np.array([columns[column] if column else 0], dtype=np.int64),
        np.array([lower]), np.array([upper]))
    size = len(rows)
    law = family_named(family)
    form = "gaussian" if family.endswith("gaussian") else "laplace"
    mechanism = Mechanism(
        statistic, law.log_density, size=size,
        params=inverse_scale_params(1.0 / scale, size, _log_normaliser(family, scale)),
        coordinate_log_density=law.coordinate_log_density, name="Tumult query",
        noise=NoiseLaw.of(law, scale, size=size),
        # Tumult's own laws, simulated with NumPy's generator (for simulation only)
        draw_release=_release_drawer(form, np.full(size, scale), np.full(size, law.integer),
                                     np.zeros(size, dtype=bool)))
    s_dp = np.asarray(values, dtype=float)
    mechanism.check_release(s_dp)
    return TumultRelease(mechanism, s_dp, [tuple(r) for r in rows], (aggregate,))
