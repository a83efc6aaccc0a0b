r"""Noise-aware synthetic data: multiply-imputed datasets from a posterior, and the rules that
combine an analysis run on each.

Two kinds of synthetic dataset come out of a result of :func:`dawrap.sample`:

* ``"imputed"`` (the default): the confidential databases the record sampler imputed, kept
  at thinned draws (``dw.sample(..., databases=k)``). Each is a draw of the confidential
  records given the release, :math:`x^{(j)} \sim p(x \mid s_{dp})`, of the same ``n``
  records: its released tables agree with ``s_dp`` within the noise, and the datasets differ
  only where the noise leaves the records undetermined.
* ``"predictive"``: posterior-predictive databases of a chosen size: for each, a posterior
  draw :math:`\theta^{(j)}` and ``size`` fresh records :math:`x^{(j)}_i \sim f(\cdot \mid
  \theta^{(j)})`. They are new samples from the population the model describes, with its
  sampling variability on top of the posterior's uncertainty (the "fully synthetic" data of
  Rubin 1993 and Raghunathan, Reiter & Rubin 2003, as NAPSU-MQ releases them).

**Privacy.** Both are computed from the release ``s_dp`` (and public ``n``) alone: the
confidential records enter only through ``s_dp``. Publishing them is post-processing of the
release and costs no privacy beyond the release's own guarantee (Dwork & Roth 2014, Prop.
2.1). **They are not samples of the real records**: no row is anyone's record, and any
feature of the data that the release does not determine (an interaction no released table
shows, say) comes from the model, not from the confidential data.

**Analysing them** (:func:`combine`). Run the analysis on each of the ``m`` datasets, giving
estimates :math:`q_j` with variance estimates :math:`u_j` (the squared standard errors the
analysis reports as if the dataset were real); with :math:`\bar q`, the between-dataset
variance :math:`b = \frac{1}{m-1}\sum (q_j - \bar q)^2` and :math:`\bar u = \frac1m \sum
u_j`, the interval is :math:`\bar q \pm t_\nu \sqrt T`. **Which rule answers which
question:**

* **The population parameter** :math:`\theta` behind the confidential data (what the
  analysis, run on the real records, would estimate, with its standard error): imputed
  databases and ``"multiple_imputation"`` (Rubin 1987), **the default**,
  :math:`T = \bar u + (1 + 1/m) b` with :math:`\nu = (m-1)(1 + \bar u / ((1+1/m) b))^2`.
  Every record is "missing" and the release is what was observed: :math:`b` carries the
  uncertainty the noise leaves about the records, :math:`\bar u` the sampling variance of
  the records themselves.
* **The confidential data's own statistic** :math:`q(x)` (the number the analysis would
  have printed on the real records, no sampling variance): imputed databases and
  ``"posterior"``, :math:`T = (1 + 1/m) b` with :math:`\nu = m - 1`. The :math:`q_j =
  q(x^{(j)})` are posterior draws of :math:`q(x)` itself; the :math:`u_j` are not used.
* **The population parameter from predictive datasets**: ``"fully_synthetic"``
  (Raghunathan, Reiter & Rubin 2003), the only rule for them,
  :math:`T_f = (1 + 1/m) b - \bar u` with :math:`\nu_f = (m-1)(1 - \bar u / ((1+1/m)
  b))^2`: :math:`b` holds the fresh records' sampling variance, which the rule subtracts.
  The difference is fragile: with few datasets it can be negative or barely positive, and
  :math:`\nu_f` near 0 (dawrap then uses Reiter's (2002) :math:`T^* = (n_{syn}/n)\,\bar u`,
  :func:`combine`'s Notes, and warns when :math:`\nu_f` is small). It needs ``n`` and
  ``n_syn``.
* ``"as_if_real"``: one dataset analysed as if it were the real data, the naive analysis
  (it ignores the noise and the model's uncertainty), for comparison.

**Why that default.** An analyst handed a release asks what the real data say about the
population (the regression's coefficients with their standard errors), and the variances
:math:`u_j` the analysis reports only matter for that question. Rubin's interval answers it,
and it also covers the confidential data's own statistic (conservatively: it adds
:math:`\bar u`). The ``"posterior"`` interval leaves out the sampling variance: as the noise
vanishes it shrinks to the confidential statistic, a point, while the population parameter
keeps the real data's standard error. The fully synthetic route answers the same question as
Rubin's but less reliably. In dawrap's coverage study of the confidential regression
(``benchmarks/results/smartnoise_coverage.md``: 40 AIM releases, m = 20, 90% / 95%
intervals) imputed databases covered 0.89 / 0.94 with ``"posterior"`` and 0.96 / 0.96 with
``"multiple_imputation"``, predictive datasets with ``"fully_synthetic"`` 0.85 / 0.89.

**How many datasets** (:func:`datasets` without ``m``): :data:`DEFAULT_M` = 51. The
combined standard error varies from one set of ``m`` datasets to another with a coefficient
of variation of about :math:`\gamma / \sqrt{2(m-1)}`, :math:`\gamma = (1+1/m)b / T \le 1` the
fraction of the variance that comes from the between-dataset spread (von Hippel 2020's
quadratic rule, :math:`m = 1 + \frac12 (\gamma / \mathrm{cv})^2`). dawrap asks for at most
10% at :math:`\gamma = 1`, the ``"posterior"`` rule's (for predictive data, whose
:math:`T_f` is a difference, the variation is larger still): :math:`m - 1 = 50`. Then
Rubin's :math:`\nu \ge 50` (a t quantile within 2.5% of the normal's) and, with ``n_syn =
n``, the fully synthetic :math:`\nu_f > 12.5`. The rule assumes the datasets are nearly
independent draws: imputed databases are kept at evenly spaced draws of the chains, so check
the chains' mixing (:func:`dawrap.diagnostics.summary`) first.

References: Rubin (1987), Multiple Imputation for Nonresponse in Surveys; Raghunathan,
Reiter & Rubin (2003), J. Official Statistics 19(1), 1-16; Reiter (2002), J. Official
Statistics 18(4), 531-543; von Hippel (2020), Sociological Methods & Research 49(3), 699-718.
"""
from __future__ import annotations

import inspect
import math
import warnings
from typing import NamedTuple

import numpy as np

from .. import diagnostics
from .._checks import as_choice, as_count, is_real, shown

__all__ = ["datasets", "to_frames", "combine", "Combined", "RULES", "RULES_FOR_KIND",
           "DEFAULT_M"]

#: The combining rules of :func:`combine`.
RULES = ("fully_synthetic", "multiple_imputation", "posterior", "as_if_real")

#: The rules that fit each kind of dataset (module docstring); the first is :func:`combine`'s
#: default for that kind.
RULES_FOR_KIND = {"imputed": ("multiple_imputation", "posterior", "as_if_real"),
                  "predictive": ("fully_synthetic", "as_if_real")}

#: The number of datasets :func:`datasets` makes when not given ``m``: the Monte Carlo
#: coefficient of variation of the standard error combined from imputed databases, at most
#: :math:`1/\sqrt{2(m-1)}`, is then at most 10% (von Hippel 2020; the module docstring).
DEFAULT_M = 51

#: Below these degrees of freedom the fully synthetic rule warns: the t quantile is then more
#: than 1.6 times the normal's at 95% (6.5 times at nu = 1, 10^9 times at nu = 0.13), so the
#: interval says more about the rule's own uncertainty than about the data.
_FEW_DF = 3.0


def _spread(count: int, m: int) -> np.ndarray:
    """``m`` indices evenly spread over ``range(count)``."""
    return np.floor((np.arange(m) + 0.5) * count / m).astype(np.int64)


def _check_model(model, posterior) -> None:
    """Refuse a ``model`` that is not the :class:`dawrap.Model` whose parameters the
    ``posterior`` holds (a module, a PyMC model, or another dawrap model)."""
    from ..model import Model

    need = ("kind='predictive' draws records with the dawrap.Model the result sampled "
            "(its simulate, from each posterior draw of its parameters): pass that model")
    if not isinstance(model, Model):
        what = "a module" if inspect.ismodule(model) else shown(model)
        raise TypeError(f"model must be the dawrap.Model the result sampled, got {what} of "
                        f"type {type(model).__name__}; for a built-in model the model its "
                        f"factory returns (e.g. beta_binomial.model()), for a PyMC model the "
                        f"one dawrap.pymc.from_pymc made")
    held = list(posterior.data_vars)
    for name, shape in model.params.items():
        if name not in posterior:
            raise ValueError(f"model does not match the result: the result's posterior has "
                             f"no parameter {name!r} (it holds {held}); {need}")
        found = tuple(posterior[name].shape[2:])
        if found != tuple(shape):
            raise ValueError(f"model does not match the result: its parameter {name!r} has "
                             f"shape {tuple(shape)} but the result's posterior {name!r} has "
                             f"shape {found}; {need}")


def _field_names(fields, width: int) -> list:
    """The names of a record's ``width`` fields: ``fields``, or ``field0, field1, ...``."""
    names = list(fields) if fields is not None else [f"field{j}" for j in range(width)]
    if len(names) != width:
        raise ValueError(f"fields must name the {width} fields of a record, got {len(names)}")
    return names


def _how_many(m, available: int, what: str, more: str) -> int:
    """The number of datasets: ``m`` checked against the ``available`` databases or draws
    (``what``, e.g. "imputed databases the result holds (2 chains x 5)"; ``more``, how to
    keep more), or for ``m=None`` :data:`DEFAULT_M`, or all when fewer (with a warning)."""
    if m is not None:
        m = as_count(m, "m")        # an integer, as every count of dawrap: 2.0 is refused
        if m > available:
            raise ValueError(f"m = {m} is more than the {available} {what}: {more(m)}, or ask "
                             f"for fewer")
        return m
    if available < 2:
        raise ValueError(f"m=None chooses {DEFAULT_M} datasets, at least 2 to combine, but "
                         f"there is only {available} of the {what}: {more(DEFAULT_M)}, or "
                         f"pass m=1 for a single dataset")
    if available < DEFAULT_M:
        warnings.warn(f"m=None: {available} datasets, all the {what}, fewer than the "
                      f"{DEFAULT_M} of dawrap's rule: a combined standard error then varies "
                      f"by up to {1 / math.sqrt(2 * (available - 1)):.0%} from one set of "
                      f"datasets to another (1/sqrt(2(m-1))); {more(DEFAULT_M)}, or pass m= "
                      f"to choose", RuntimeWarning, stacklevel=3)
        return available
    return DEFAULT_M


def datasets(result, m: int | None = None, *, kind: str = "imputed", model=None,
             size: int | None = None, seed=None, fields=None):
    r"""``m`` synthetic datasets from a result of :func:`dawrap.sample` (module docstring).

    Parameters
    ----------
    result : arviz.InferenceData or xarray.DataTree
        A record-sampler result; for ``kind="imputed"`` run with ``databases=k``, ``k``
        databases per chain kept (``databases=26`` with 2 chains, 13 with 4, hold the
        :data:`DEFAULT_M` = 51 datasets of ``m=None``).
    m : int, optional
        The number of datasets, an integer >= 1: at most the databases kept (``"imputed"``)
        or the draws (``"predictive"``); they are taken evenly spread over chains and draws.
        Default: :data:`DEFAULT_M` = 51, the smallest ``m`` at which the combined standard
        error's Monte Carlo coefficient of variation, at most :math:`1/\sqrt{2(m-1)}`, is
        10% (von Hippel 2020; the module docstring); all the databases (with a warning) when
        the result holds fewer, and an error when it holds fewer than 2, the least
        :func:`combine` needs.
    kind : {"imputed", "predictive"}
        Imputed confidential databases (the default), or posterior-predictive databases;
        :func:`combine` takes the same ``kind`` and chooses its rule by it.
    model : dawrap.Model
        ``"predictive"``: the model the result sampled (records are drawn with its
        :meth:`~dawrap.Model.simulate`; any :class:`dawrap.Model` works, its parameters must be
        the posterior's).
    size : int, optional
        ``"predictive"``: records per dataset (default ``n``, the release's): the ``n_syn``
        of :func:`combine`'s fully synthetic rule.
    seed : int, numpy.random.Generator or None
        ``"predictive"``: the randomness of the records.
    fields : sequence of str, optional
        Names of a record's fields (default ``field0, field1, ...``).

    Returns
    -------
    xarray.DataArray
        Dimensions ``(dataset, record, field)``; coordinates ``chain`` and ``draw`` (the
        posterior draw behind each dataset) along ``dataset``; attribute ``kind``.

    Warns
    -----
    RuntimeWarning
        ``m=None`` and the result holds fewer than :data:`DEFAULT_M` databases or draws: all
        are used, and the warning says how many to keep.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
    >>> result = dw.sample(model, mech, 31.4, 100, draws=200, tune=100, chains=2, seed=0,
    ...                    databases=26, progress=False)
    >>> imputed = dw.synthetic.datasets(result)          # m = DEFAULT_M of the 52 kept
    >>> imputed.dims, imputed.shape, imputed.attrs["kind"]
    (('dataset', 'record', 'field'), (51, 100, 1), 'imputed')
    >>> fresh = dw.synthetic.datasets(result, m=3, kind="predictive", model=model, size=50,
    ...                               seed=1)
    >>> fresh.shape, fresh.attrs["kind"]
    ((3, 50, 1), 'predictive')
    >>> dw.synthetic.datasets(result, m=60)     # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: m = 60 is more than the 52 imputed databases the result holds (2 chains x 26): ...
    """
    import xarray as xr

    try:
        groups = diagnostics.group_names(result)
    except (AttributeError, TypeError):
        raise TypeError(f"result must be a result of dw.sample (arviz.InferenceData or "
                        f"xarray.DataTree), got {type(result).__name__}") from None
    kind = as_choice(kind, "kind", ("imputed", "predictive"))
    if isinstance(fields, (str, bytes)):
        raise TypeError(f"fields must be a sequence of names, got {fields!r}: one name per "
                        f"field, e.g. [{fields!r}]")
    if kind == "imputed":
        if "imputed_databases" not in groups:
            raise ValueError("kind='imputed' needs the imputed databases: run dw.sample with "
                             "databases=k (the record sampler keeps k per chain)")
        group = diagnostics.group(result, "imputed_databases")
        x, draws = group["x"].values, group["draw"].values
        chains, k = x.shape[:2]
        total = chains * k
        m = _how_many(m, total, f"imputed databases the result holds ({chains} chains x {k})",
                      lambda want: f"run dw.sample(..., databases={-(-want // chains)}) to "
                                   f"keep {want} or more")
        # database-major order: consecutive picks come from different chains
        pick = _spread(total, m)
        chain, which = pick % chains, pick // chains
        values, draw = x[chain, which], draws[which]
        names = _field_names(fields, x.shape[-1])
    else:
        if model is None:
            raise ValueError("kind='predictive' needs model=, the model the result sampled")
        post = diagnostics.group(result, "posterior")
        _check_model(model, post)
        first = post[next(iter(model.params))]
        chains, count = first.shape[:2]
        m = _how_many(m, chains * count, f"posterior draws the result holds ({chains} chains "
                                         f"x {count})",
                      lambda want: f"run dw.sample(..., draws={-(-want // chains)}) to keep "
                                   f"{want} or more")
        n = int(diagnostics.group(result, "constant_data")["n"].values) if size is None \
            else as_count(size, "size")
        names = _field_names(fields, model.record_size)     # checked before any record is drawn
        theta = np.concatenate([post[name].values.reshape(chains, count, -1)
                                for name in model.params], axis=-1)
        pick = _spread(chains * count, m)
        chain, draw = pick % chains, pick // chains
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        values = np.stack([model.simulate(theta[c, d], int(n), seed=rng)
                           for c, d in zip(chain, draw)])
    return xr.DataArray(values, dims=("dataset", "record", "field"),
                        coords={"field": names, "chain": ("dataset", chain),
                                "draw": ("dataset", draw)}, attrs={"kind": kind})


def _level_labels(value, name: str) -> list:
    """The labels of field ``name``'s levels from ``labels[name]``: a number of levels ``k``
    (labels ``0, ..., k-1``, the integers) or the labels themselves, as the marginals models
    take ``levels`` (``{"age": 5, "sex": ["F", "M"]}``)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        cats = list(range(int(value)))
    elif isinstance(value, (list, tuple, range)):
        cats = list(value)
    elif getattr(value, "ndim", None) == 1 and hasattr(value, "tolist"):
        cats = value.tolist()       # a NumPy array, a pandas Index (e.g. a column's categories)
    else:
        raise TypeError(f"labels[{name!r}] must be a number of levels or a list of labels, "
                        f"got {shown(value)}")
    if not cats:
        raise ValueError(f"labels[{name!r}] must give at least 1 level, got 0")
    if len(set(cats)) != len(cats):
        raise ValueError(f"labels[{name!r}]: the labels repeat: {shown(cats)}")
    return cats


def to_frames(data, labels: dict | None = None) -> list:
    """The datasets of :func:`datasets` as pandas DataFrames (pandas is optional: needed
    here only).

    Parameters
    ----------
    data : xarray.DataArray
        From :func:`datasets`.
    labels : dict of str -> int or sequence, optional
        For categorical fields, as the marginals models take ``levels``: a number of levels
        ``k`` (the level codes ``0, ..., k-1`` are their own labels) or the label of each
        level code. Such a column becomes a ``pandas.Categorical`` with those categories; its
        values must be level codes.

    Returns
    -------
    list of pandas.DataFrame
        One per dataset, a column per field.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> import dawrap as dw
    >>> data = xr.DataArray(np.array([[[0.0, 1.0, 2.0], [1.0, 1.0, 0.0]]]),
    ...                     dims=("dataset", "record", "field"),
    ...                     coords={"field": ["a", "b", "c"]})
    >>> frame, = dw.synthetic.to_frames(data, labels={"a": ["no", "yes"], "c": 3})
    >>> frame["a"].tolist(), frame["b"].tolist(), frame["c"].tolist()
    (['no', 'yes'], [1.0, 1.0], [2, 0])
    >>> list(frame["c"].cat.categories)
    [0, 1, 2]
    """
    try:
        import pandas as pd
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("to_frames needs pandas (pip install pandas); the datasets "
                          "themselves are an xarray.DataArray") from err
    names = [str(f) for f in data["field"].values]
    if labels is None:
        labels = {}
    if not isinstance(labels, dict):
        raise TypeError(f"labels must be a dict of field name -> number of levels or list of "
                        f"labels, got {shown(labels)}")
    unknown = [key for key in labels if key not in names]
    if unknown:
        raise ValueError(f"labels names fields the data do not have: {unknown} (its fields: "
                         f"{names}; name them with datasets(..., fields=...))")
    categories = {name: _level_labels(value, name) for name, value in labels.items()}
    values = data.values
    for name, cats in categories.items():
        # the codes must index the labels: pandas would read -1 as a missing value and
        # truncate 1.5 to 1
        column = values[:, :, names.index(name)]
        bad = (column != np.floor(column)) | (column < 0) | (column >= len(cats))
        if bad.any():
            raise ValueError(f"field {name!r} holds {column[bad][0]:g}, which is not a level code "
                             f"of labels[{name!r}] (an integer from 0 to {len(cats) - 1})")
    frames = []
    for dataset in values:
        columns = {}
        for j, name in enumerate(names):
            column = dataset[:, j]
            if name in categories:
                column = pd.Categorical.from_codes(column.astype(np.int64),
                                                   categories=categories[name])
            columns[name] = column
        frames.append(pd.DataFrame(columns))
    return frames


class Combined(NamedTuple):
    """A combined estimate (:func:`combine`).

    Attributes
    ----------
    estimate : float
        :math:`\\bar q` (the first estimate for ``"as_if_real"``).
    variance : float
        The total variance :math:`T`.
    df : float
        The degrees of freedom of the t reference distribution (``inf``: normal).
    interval : tuple of float
        The central interval of the requested level.
    rule : str
        The rule applied.
    between, within : float
        :math:`b` and :math:`\\bar u`.

    Examples
    --------
    >>> import dawrap as dw
    >>> out = dw.synthetic.combine([1.0, 1.2, 0.8], [0.01] * 3, "posterior")
    >>> out.rule, round(out.estimate, 6), round(out.between, 6), out.df
    ('posterior', 1.0, 0.04, 2.0)
    """

    estimate: float
    variance: float
    df: float
    interval: tuple
    rule: str
    between: float
    within: float


def _real_values(values, name: str) -> np.ndarray:
    """``values`` as a flat float64 array, or a TypeError naming ``name``."""
    arr = np.asarray(values)
    if arr.dtype.kind == "O":           # e.g. a pandas column of object dtype holding floats
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            pass
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
    return arr.astype(np.float64).ravel()


def _first_bad(values: np.ndarray, good: np.ndarray, name: str, expected: str) -> None:
    """Raise naming ``name`` and its first entry where ``good`` is False."""
    if not good.all():
        i = int(np.argmin(good))
        raise ValueError(f"{name} must be {expected}, got {values[i]} at index {i}")


def _sizes(rule: str, n, n_syn) -> tuple | None:
    """``(n, n_syn)`` as ``rule`` takes them, checked (integers >= 1): both for
    ``"fully_synthetic"``, both or neither for ``"as_if_real"``, neither for the rules of
    imputed databases; None for neither."""
    n = None if n is None else as_count(n, "n")
    n_syn = None if n_syn is None else as_count(n_syn, "n_syn")
    given = [name for name, value in (("n", n), ("n_syn", n_syn)) if value is not None]
    if rule == "fully_synthetic" and len(given) < 2:
        raise ValueError(f"rule 'fully_synthetic' needs n and n_syn on every call, the numbers "
                         f"of confidential and synthetic records (got n={n!r}, n_syn={n_syn!r}):"
                         f" its variance is at least Reiter's adjusted variance (n_syn / n) "
                         f"u_bar (combine's Notes)")
    if rule == "as_if_real" and len(given) == 1:
        raise ValueError(f"give both n and n_syn, or neither: got n={n!r}, n_syn={n_syn!r}")
    if rule in RULES_FOR_KIND["imputed"][:2] and given:
        # imputed databases hold the confidential data's n records: a size given here is
        # a sign the estimates come from predictive datasets, or another rule was meant
        raise ValueError(f"rule {rule!r} does not use n and n_syn (got n={n!r}, "
                         f"n_syn={n_syn!r}): imputed databases hold the confidential data's n "
                         f"records; drop them (only 'fully_synthetic' and 'as_if_real' take "
                         f"them)")
    return (n, n_syn) if len(given) == 2 else None


def _rule_for(rule, kind) -> tuple:
    """``(rule, kind)`` checked: ``rule`` one of :data:`RULES` that fits ``kind`` (None: the
    kind's default, the first of :data:`RULES_FOR_KIND`)."""
    kind = as_choice(kind, "kind", tuple(RULES_FOR_KIND))
    fits = RULES_FOR_KIND[kind]
    if rule is None:
        return fits[0], kind
    rule = as_choice(rule, "rule", RULES)
    if rule in fits:
        return rule, kind
    if kind == "imputed":
        raise ValueError(f"rule {rule!r} does not fit imputed databases (kind='imputed', the "
                         f"default): it subtracts the sampling variance u_bar of freshly drawn "
                         f"records, which imputed databases do not carry, so its variance "
                         f"comes out too small or negative. For estimates from "
                         f"dw.synthetic.datasets(..., kind='predictive') pass kind='predictive'"
                         f"; imputed databases take {fits} (the default {fits[0]!r}: the "
                         f"population parameter)")
    raise ValueError(f"rule {rule!r} does not fit predictive datasets (kind='predictive'): "
                     f"their between-dataset variance b already holds the fresh records' "
                     f"sampling variance, so 'posterior' is no posterior of the confidential "
                     f"data's statistic and 'multiple_imputation' counts that variance twice. "
                     f"Predictive datasets take {fits} (the default {fits[0]!r}); for the "
                     f"confidential data's statistic use the imputed databases (kind='imputed')")


def combine(estimates, variances, rule: str | None = None, *, kind: str = "imputed",
            level: float = 0.95, n: int | None = None, n_syn: int | None = None) -> Combined:
    r"""Combine one quantity's estimates from ``m`` synthetic datasets (module docstring).

    Which rule answers which question (the module docstring has the reasoning):

    ============  =========================  ============================================
    ``kind``      ``rule``                   answers
    ============  =========================  ============================================
    imputed       ``"multiple_imputation"``  the population parameter (**the default**)
    imputed       ``"posterior"``            the confidential data's own statistic
    predictive    ``"fully_synthetic"``      the population parameter (its default)
    either        ``"as_if_real"``           nothing: the naive analysis of one dataset
    ============  =========================  ============================================

    with, for :math:`\bar q`, :math:`b = \frac{1}{m-1}\sum (q_j - \bar q)^2` and
    :math:`\bar u = \frac1m \sum u_j`, the interval :math:`\bar q \pm t_\nu \sqrt T`:

    * ``"multiple_imputation"`` (Rubin 1987): :math:`T = \bar u + (1 + 1/m) b`,
      :math:`\nu = (m-1)(1 + \bar u / ((1+1/m) b))^2` (the normal when :math:`b = 0`);
    * ``"posterior"``: :math:`T = (1 + 1/m) b`, :math:`\nu = m - 1`;
    * ``"fully_synthetic"`` (Raghunathan, Reiter & Rubin 2003): :math:`T_f = (1 + 1/m) b -
      \bar u`, :math:`\nu_f = (m-1)(1 - \bar u / ((1+1/m) b))^2`, or Reiter's
      :math:`T^* = (n_{syn}/n)\,\bar u` with the normal when :math:`T_f \le T^*` (Notes);
    * ``"as_if_real"``: :math:`q_1` with variance :math:`u_1` (times :math:`n_{syn}/n` when
      given) and the normal.

    Parameters
    ----------
    estimates, variances : array_like of shape (m,)
        :math:`q_j` and :math:`u_j`, the analysis of each dataset (its estimate and the
        square of its standard error): finite, the variances >= 0. The rules other than
        ``"as_if_real"`` need ``m >= 2``.
    rule : {"multiple_imputation", "posterior", "fully_synthetic", "as_if_real"}, optional
        The rule; it must fit ``kind`` (a rule that does not is refused). Default: the
        population parameter's rule for ``kind``, ``"multiple_imputation"`` for imputed
        databases, ``"fully_synthetic"`` for predictive datasets.
    kind : {"imputed", "predictive"}
        The kind of datasets the estimates come from, as :func:`datasets` took it (and
        holds it, ``data.attrs["kind"]``); default ``"imputed"``, as there.
    level : float
        The interval's coverage, in (0, 1).
    n, n_syn : int, optional
        The numbers of confidential and synthetic records (integers >= 1).
        ``"fully_synthetic"`` needs both on every call (Reiter's adjusted variance, Notes);
        ``"as_if_real"`` rescales :math:`u_1` by ``n_syn / n`` when both are given;
        ``"multiple_imputation"`` and ``"posterior"`` refuse them: imputed databases hold the
        confidential data's ``n`` records, and a size given there is a sign the estimates
        come from predictive datasets or another rule was meant.

    Returns
    -------
    Combined

    Warns
    -----
    RuntimeWarning
        ``"fully_synthetic"`` with :math:`\nu_f < 3`: the t quantile is then more than 1.6
        times the normal's at 95% (6.5 times at :math:`\nu = 1`), and the interval mostly
        measures the rule's own uncertainty about :math:`T_f`. The interval is returned as
        the rule defines it; the warning names :math:`\nu_f` and ``m`` and says what helps.

    Notes
    -----
    **The fully synthetic rule when** :math:`T_f` **is small.** Raghunathan, Reiter & Rubin
    (2003) estimate the variance of :math:`\bar q` by a difference,
    :math:`T_f = (1 + 1/m) b - \bar u`, with the degrees of freedom
    :math:`\nu_f = (m-1)(1 - \bar u / ((1+1/m) b))^2`; with few datasets :math:`T_f` can be
    0 or negative. Reiter (2002) then uses the adjusted variance
    :math:`T^* = (n_{syn}/n)\,\bar u`: the within-dataset variance rescaled from the
    :math:`n_{syn}` synthetic records to the :math:`n` confidential ones, that is the variance
    of the analysis of the confidential data itself (Reiter & Raghunathan 2007 write the rule
    :math:`T_f^* = \max(0, T_f) + \delta\,(n_{syn}/n)\,\bar u` with :math:`\delta = 1` when
    :math:`T_f < 0`). :math:`T^*` treats the synthetic data as if they were real, so its
    reference distribution is the complete-data analysis's, the normal in the large-sample
    setting in which the rule is derived (it treats :math:`\bar u` as known): ``df`` is
    ``inf``. :math:`\nu_f` measures how uncertain the difference :math:`T_f` is and does not
    belong to :math:`T^*`: kept with it, as NAPSU-MQ's ``rubins_rules`` does (Räisä et al.
    2023), it is 0 at :math:`T_f = 0` (a NaN interval) and about 0 just below (the t quantile
    of :math:`\nu = 10^{-4}` is :math:`7 \cdot 10^{151}`).

    dawrap uses :math:`T^*` whenever :math:`T_f \le T^*`, not only when :math:`T_f \le 0`
    (the adjustment at 0 included: Reiter's :math:`\delta` leaves a variance of 0 there).
    This extension of Reiter's rule is dawrap's own, not the papers': :math:`T_f` estimates
    :math:`(1 + 1/m) V + \bar u / m`, with :math:`V` the posterior variance of the population
    quantity, never below the variance of the confidential data's own analysis, which
    :math:`T^*` estimates (records of ``n_syn / n`` times the information each, the
    large-sample scaling the rule assumes). An estimate below :math:`T^*` is as much an
    artefact of too few datasets as a negative one, and just above 0 :math:`\nu_f` is about
    0 and the interval explodes exactly as it did below 0. So the variance is
    :math:`\max(T_f, T^*)`, continuous in the estimates, and whenever :math:`T_f` is used,
    :math:`\nu_f > (m-1)\,(n_{syn} / (n + n_{syn}))^2`, :math:`(m-1)/4` for
    :math:`n_{syn} = n`. Intervals are still wide with few datasets (:math:`\nu_f < m - 1`
    always), and synthetic datasets much smaller than the confidential data let
    :math:`\nu_f` approach 0 (:math:`\nu_f = 0.13` at ``m = 20`` needs ``n_syn < n / 11``):
    combine warns below :math:`\nu_f = 3`. Use more datasets (:data:`DEFAULT_M` keeps
    :math:`\nu_f > 12.5` at ``n_syn = n``), of ``n_syn >= n`` records, or the imputed
    databases and Rubin's rule, whose :math:`\nu \ge m - 1` and :math:`T > 0` always.

    References: Raghunathan, Reiter & Rubin (2003), J. Official Statistics 19(1), 1-16;
    Reiter (2002), J. Official Statistics 18(4), 531-543; Reiter & Raghunathan (2007),
    JASA 102, 1462-1471; Rubin (1987), Multiple Imputation for Nonresponse in Surveys.

    Examples
    --------
    Five analyses of imputed databases: the default, Rubin's interval for the population
    parameter, and the interval for the confidential data's own statistic:

    >>> import dawrap as dw
    >>> q, u = [1.02, 0.98, 1.05, 0.97, 1.00], [0.01] * 5
    >>> out = dw.synthetic.combine(q, u)
    >>> out.rule, round(out.variance, 6), [round(v, 4) for v in out.interval]
    ('multiple_imputation', 0.011236, [0.7955, 1.2125])
    >>> [round(v, 4) for v in dw.synthetic.combine(q, u, "posterior").interval]
    [0.9064, 1.1016]

    Two predictive datasets whose between-dataset variance does not exceed the within:
    :math:`T_f = 1.5 \cdot 2 - 3 = 0`, so Reiter's :math:`T^* = \bar u` with the normal:

    >>> out = dw.synthetic.combine([0.0, 2.0], [3.0, 3.0], kind="predictive", n=100,
    ...                            n_syn=100)
    >>> out.rule, out.variance, out.df, [round(v, 3) for v in out.interval]
    ('fully_synthetic', 3.0, inf, [-2.395, 4.395])

    A rule that does not fit the datasets, or a size the rule needs and is not given, is
    refused:

    >>> dw.synthetic.combine(q, u, "fully_synthetic")      # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: rule 'fully_synthetic' does not fit imputed databases (kind='imputed', ...
    """
    from scipy import stats

    rule, kind = _rule_for(rule, kind)
    q, u = _real_values(estimates, "estimates"), _real_values(variances, "variances")
    if q.shape != u.shape or q.size < 1:
        raise ValueError(f"estimates and variances must have the same length m >= 1, got "
                         f"{q.size} and {u.size}")
    _first_bad(q, np.isfinite(q), "estimates", "finite")
    _first_bad(u, np.isfinite(u) & (u >= 0), "variances", "finite and >= 0")
    if not is_real(level):
        raise TypeError(f"level must be a real number in (0, 1), got {shown(level)}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    sizes = _sizes(rule, n, n_syn)
    m = q.size
    if rule == "as_if_real":
        scale = 1.0 if sizes is None else sizes[1] / sizes[0]
        estimate, total, df, b, ubar = q[0], u[0] * scale, math.inf, math.nan, u[0]
    else:
        if m < 2:
            raise ValueError(f"rule {rule!r} needs m >= 2 datasets, got {m} (estimates and "
                             f"variances of length {m})")
        estimate, b, ubar = q.mean(), q.var(ddof=1), u.mean()
        inflated = (1.0 + 1.0 / m) * b
        if rule == "fully_synthetic":
            adjusted = sizes[1] / sizes[0] * ubar
            total = inflated - ubar
            if total > adjusted:        # RRR's own T_f, and then inflated > ubar >= 0
                df = (m - 1) * (1.0 - ubar / inflated) ** 2
            else:                       # Reiter's T*, the real data's: normal reference
                total, df = adjusted, math.inf
        elif rule == "multiple_imputation":
            total = ubar + inflated
            df = (m - 1) * (1.0 + ubar / inflated) ** 2 if inflated > 0 else math.inf
        else:
            total, df = inflated, float(m - 1)
    normal = stats.norm.ppf(0.5 + level / 2)
    quantile = normal if not math.isfinite(df) else stats.t.ppf(0.5 + level / 2, df)
    if rule == "fully_synthetic" and df < _FEW_DF:      # nu_f, unlike the others, < m - 1
        warnings.warn(f"rule 'fully_synthetic': nu = {df:.3g} degrees of freedom with m = {m} "
                      f"datasets (n_syn / n = {sizes[1] / sizes[0]:.3g}): the t quantile is "
                      f"{quantile / normal:.3g} times the normal's, so the interval measures "
                      f"the rule's uncertainty about T_f more than the data. Use more datasets "
                      f"(nu > (m - 1) (n_syn / (n + n_syn))^2 whenever T_f is used), of n_syn "
                      f">= n records, or the imputed databases and the default rule "
                      f"(kind='imputed')", RuntimeWarning, stacklevel=2)
    half = quantile * math.sqrt(total)
    return Combined(float(estimate), float(total), float(df),
                    (float(estimate - half), float(estimate + half)), rule, float(b),
                    float(ubar))
