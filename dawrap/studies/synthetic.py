r"""Noise-aware synthetic data: multiply-imputed datasets from a posterior, and the rules that
combine an analysis run on each.

Two kinds of synthetic dataset come out of a result of :func:`dawrap.sample`:

* ``"imputed"``: the confidential databases the record sampler imputed, kept at thinned draws
  (``dw.sample(..., databases=k)``). Each is a draw of the confidential records given the
  release, :math:`x^{(j)} \sim p(x \mid s_{dp})`, of the same ``n`` records: its released
  tables agree with ``s_dp`` within the noise, and the datasets differ only where the noise
  leaves the records undetermined.
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
estimates :math:`q_j` with variance estimates :math:`u_j`; with :math:`\bar q`, the
between-dataset variance :math:`b = \frac{1}{m-1}\sum (q_j - \bar q)^2` and
:math:`\bar u = \frac1m \sum u_j`:

* ``"fully_synthetic"`` (Raghunathan, Reiter & Rubin 2003), for predictive data and a
  population parameter: :math:`T_f = (1 + 1/m) b - \bar u` with
  :math:`\nu_f = (m-1)(1 - \bar u / ((1+1/m) b))^2`, as long as :math:`T_f` exceeds
  :math:`T^* = (n_{syn}/n)\,\bar u`, Reiter's (2002) adjusted variance; otherwise :math:`T^*`
  with the normal reference distribution (:func:`combine` says why).
* ``"multiple_imputation"`` (Rubin 1987), for imputed data and a population parameter:
  :math:`T = \bar u + (1 + 1/m) b` with :math:`\nu = (m-1)(1 + \bar u / ((1+1/m) b))^2`.
* ``"posterior"``, for imputed data and the confidential data's own statistic:
  :math:`T = (1 + 1/m) b` with :math:`\nu = m - 1`.

For imputed databases the :math:`q_j = q(x^{(j)})` are posterior draws of the statistic the
analysis would compute on the confidential data, so ``"posterior"`` is the interval for that
statistic, and Rubin's rule adds the sampling variance :math:`\bar u` for the population
parameter behind it (every record is "missing", the release is what was observed). For
predictive data :math:`b` already holds a fresh sampling variance, which
``"fully_synthetic"`` subtracts. Analysing one synthetic dataset as if it were the real data
(``"as_if_real"``) ignores the noise and the model's uncertainty: it is the naive analysis,
shown for comparison.
"""
from __future__ import annotations

import inspect
import math
from typing import NamedTuple

import numpy as np

from .. import diagnostics
from .._checks import as_choice, as_count, is_real, shown

__all__ = ["datasets", "to_frames", "combine", "Combined", "RULES"]

#: The combining rules of :func:`combine`.
RULES = ("fully_synthetic", "multiple_imputation", "posterior", "as_if_real")


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


def datasets(result, m: int, *, kind: str = "imputed", model=None, size: int | None = None,
             seed=None, fields=None):
    """``m`` synthetic datasets from a result of :func:`dawrap.sample` (module docstring).

    Parameters
    ----------
    result : arviz.InferenceData or xarray.DataTree
        A record-sampler result; for ``kind="imputed"`` run with ``databases=k``, ``k``
        databases per chain kept.
    m : int
        The number of datasets, an integer >= 1: at most the databases kept (``"imputed"``)
        or the draws (``"predictive"``); they are taken evenly spread over chains and draws.
    kind : {"imputed", "predictive"}
        Imputed confidential databases, or posterior-predictive databases.
    model : dawrap.Model
        ``"predictive"``: the model the result sampled (records are drawn with its
        :meth:`~dawrap.Model.simulate`; any :class:`dawrap.Model` works, its parameters must be
        the posterior's).
    size : int, optional
        ``"predictive"``: records per dataset (default ``n``, the release's).
    seed : int, numpy.random.Generator or None
        ``"predictive"``: the randomness of the records.
    fields : sequence of str, optional
        Names of a record's fields (default ``field0, field1, ...``).

    Returns
    -------
    xarray.DataArray
        Dimensions ``(dataset, record, field)``; coordinates ``chain`` and ``draw`` (the
        posterior draw behind each dataset) along ``dataset``; attribute ``kind``.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
    >>> result = dw.sample(model, mech, 31.4, 100, draws=200, tune=100, chains=2, seed=0,
    ...                    databases=5, progress=False)
    >>> imputed = dw.synthetic.datasets(result, m=10)
    >>> imputed.dims, imputed.shape
    (('dataset', 'record', 'field'), (10, 100, 1))
    >>> fresh = dw.synthetic.datasets(result, m=3, kind="predictive", model=model, size=50,
    ...                               seed=1)
    >>> fresh.shape, fresh.attrs["kind"]
    ((3, 50, 1), 'predictive')
    >>> dw.synthetic.datasets(result, m=11)     # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: m = 11 is more than the 10 imputed databases the result holds (2 chains x 5): ...
    """
    import xarray as xr

    try:
        groups = diagnostics.group_names(result)
    except (AttributeError, TypeError):
        raise TypeError(f"result must be a result of dw.sample (arviz.InferenceData or "
                        f"xarray.DataTree), got {type(result).__name__}") from None
    kind = as_choice(kind, "kind", ("imputed", "predictive"))
    m = as_count(m, "m")        # an integer, as every count of dawrap: 2.0 is refused
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
        if m > total:
            raise ValueError(f"m = {m} is more than the {total} imputed databases the result "
                             f"holds ({chains} chains x {k}): run dw.sample with "
                             f"databases={-(-m // chains)} or more, or ask for fewer")
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
        if m > chains * count:
            raise ValueError(f"m = {m} is more than the {chains * count} posterior draws "
                             f"({chains} chains x {count}): run dw.sample with more draws, or "
                             f"ask for fewer")
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


def _sizes(n, n_syn) -> tuple | None:
    """``(n, n_syn)`` checked (integers >= 1, both or neither), or None for neither."""
    n = None if n is None else as_count(n, "n")
    n_syn = None if n_syn is None else as_count(n_syn, "n_syn")
    if (n is None) != (n_syn is None):
        raise ValueError(f"give both n and n_syn, or neither: got n={n!r}, n_syn={n_syn!r}")
    return None if n is None else (n, n_syn)


def combine(estimates, variances, rule: str, *, level: float = 0.95, n: int | None = None,
            n_syn: int | None = None) -> Combined:
    r"""Combine one quantity's estimates from ``m`` synthetic datasets (module docstring).

    Parameters
    ----------
    estimates, variances : array_like of shape (m,)
        :math:`q_j` and :math:`u_j`, the analysis of each dataset (its estimate and the
        square of its standard error): finite, the variances >= 0. The rules other than
        ``"as_if_real"`` need ``m >= 2``.
    rule : {"fully_synthetic", "multiple_imputation", "posterior", "as_if_real"}
        See the module docstring.
    level : float
        The interval's coverage, in (0, 1).
    n, n_syn : int, optional
        The numbers of confidential and synthetic records (integers >= 1; both or neither).
        ``"fully_synthetic"`` needs them (Reiter's adjusted variance, below);
        ``"as_if_real"`` rescales :math:`u_1` by ``n_syn / n`` when they are given; the
        other rules do not use them.

    Returns
    -------
    Combined

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
    :math:`\nu_f` approach 0: use more datasets, of ``n_syn >= n`` records.

    References: Raghunathan, Reiter & Rubin (2003), J. Official Statistics 19(1), 1-16;
    Reiter (2002), J. Official Statistics 18(4), 531-543; Reiter & Raghunathan (2007),
    JASA 102, 1462-1471; Rubin (1987), Multiple Imputation for Nonresponse in Surveys.

    Examples
    --------
    Five analyses of imputed databases; the interval for the confidential data's own
    statistic, and Rubin's for the population parameter:

    >>> import dawrap as dw
    >>> q, u = [1.02, 0.98, 1.05, 0.97, 1.00], [0.01] * 5
    >>> [round(v, 4) for v in dw.synthetic.combine(q, u, "posterior").interval]
    [0.9064, 1.1016]
    >>> round(dw.synthetic.combine(q, u, "multiple_imputation").variance, 6)
    0.011236

    Two predictive datasets whose between-dataset variance does not exceed the within:
    :math:`T_f = 1.5 \cdot 2 - 3 = 0`, so Reiter's :math:`T^* = \bar u` with the normal:

    >>> out = dw.synthetic.combine([0.0, 2.0], [3.0, 3.0], "fully_synthetic", n=100,
    ...                            n_syn=100)
    >>> out.variance, out.df, [round(v, 3) for v in out.interval]
    (3.0, inf, [-2.395, 4.395])
    """
    from scipy import stats

    rule = as_choice(rule, "rule", RULES)
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
    sizes = _sizes(n, n_syn)
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
            if sizes is None:
                raise ValueError("rule 'fully_synthetic' needs n and n_syn, the numbers of "
                                 "confidential and synthetic records: its variance is at least "
                                 "Reiter's adjusted variance (n_syn / n) u_bar (combine's Notes)")
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
    quantile = stats.norm.ppf(0.5 + level / 2) if not math.isfinite(df) else \
        stats.t.ppf(0.5 + level / 2, df)
    half = quantile * math.sqrt(total)
    return Combined(float(estimate), float(total), float(df),
                    (float(estimate - half), float(estimate + half)), rule, float(b),
                    float(ubar))
