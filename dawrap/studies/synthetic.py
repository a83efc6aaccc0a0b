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
  population parameter: :math:`T = (1 + 1/m) b - \bar u` with
  :math:`\nu = (m-1)(1 - \bar u / ((1+1/m) b))^2`; when :math:`T \le 0`,
  :math:`T = (n_{syn}/n)\,\bar u` (Reiter 2002), as NAPSU-MQ does.
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

import math
from typing import NamedTuple

import numpy as np

from .. import diagnostics

__all__ = ["datasets", "to_frames", "combine", "Combined", "RULES"]

#: The combining rules of :func:`combine`.
RULES = ("fully_synthetic", "multiple_imputation", "posterior", "as_if_real")


def _spread(count: int, m: int) -> np.ndarray:
    """``m`` indices evenly spread over ``range(count)``."""
    return np.floor((np.arange(m) + 0.5) * count / m).astype(np.int64)


def _m(m, available: int, what: str) -> int:
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m must be an integer >= 1, got {m!r}")
    if m > available:
        raise ValueError(f"m = {m} is more than the {available} {what}")
    return int(m)


def datasets(result, m: int, *, kind: str = "imputed", model=None, size: int | None = None,
             seed=None, fields=None):
    """``m`` synthetic datasets from a result of :func:`dawrap.sample` (module docstring).

    Parameters
    ----------
    result : arviz.InferenceData or xarray.DataTree
        A record-sampler result; for ``kind="imputed"`` run with ``databases=k``, ``k``
        databases per chain kept.
    m : int
        The number of datasets: at most the databases kept (``"imputed"``) or the draws
        (``"predictive"``); they are taken evenly spread over chains and draws.
    kind : {"imputed", "predictive"}
        Imputed confidential databases, or posterior-predictive databases.
    model : dawrap.Model
        The model sampled (``"predictive"`` draws records from it).
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

    if kind == "imputed":
        if "imputed_databases" not in diagnostics.group_names(result):
            raise ValueError("kind='imputed' needs the imputed databases: run dw.sample with "
                             "databases=k (the record sampler keeps k per chain)")
        group = diagnostics.group(result, "imputed_databases")
        x, draws = group["x"].values, group["draw"].values
        chains, k = x.shape[:2]
        total = chains * k
        try:
            m = _m(m, total, f"imputed databases the result holds ({chains} chains x {k})")
        except ValueError as err:
            raise ValueError(f"{err}: run dw.sample with databases={-(-m // chains)} or more, "
                             f"or ask for fewer") from None
        # database-major order: consecutive picks come from different chains
        pick = _spread(total, m)
        chain, which = pick % chains, pick // chains
        values, draw = x[chain, which], draws[which]
    elif kind == "predictive":
        if model is None:
            raise ValueError("kind='predictive' needs model=, the model the result sampled")
        post = diagnostics.group(result, "posterior")
        first = post[next(iter(model.params))]
        chains, count = first.shape[:2]
        m = _m(m, chains * count, f"posterior draws ({chains} chains x {count})")
        n = int(diagnostics.group(result, "constant_data")["n"].values) if size is None \
            else size
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"size must be an integer >= 1, got {size!r}")
        theta = np.concatenate([post[name].values.reshape(chains, count, -1)
                                for name in model.params], axis=-1)
        pick = _spread(chains * count, m)
        chain, draw = pick % chains, pick // chains
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        values = np.stack([model.simulate(theta[c, d], int(n), seed=rng)
                           for c, d in zip(chain, draw)])
    else:
        raise ValueError(f"kind must be 'imputed' or 'predictive', got {kind!r}")
    names = list(fields) if fields is not None else \
        [f"field{j}" for j in range(values.shape[2])]
    if len(names) != values.shape[2]:
        raise ValueError(f"fields must name the {values.shape[2]} fields of a record, got "
                         f"{len(names)}")
    return xr.DataArray(values, dims=("dataset", "record", "field"),
                        coords={"field": names, "chain": ("dataset", chain),
                                "draw": ("dataset", draw)}, attrs={"kind": kind})


def to_frames(data, labels: dict | None = None) -> list:
    """The datasets of :func:`datasets` as pandas DataFrames (pandas is optional: needed
    here only).

    Parameters
    ----------
    data : xarray.DataArray
        From :func:`datasets`.
    labels : dict of str -> sequence, optional
        For categorical fields: the label of each level code; such a column becomes a
        ``pandas.Categorical`` with those categories.

    Returns
    -------
    list of pandas.DataFrame
        One per dataset, a column per field.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> import dawrap as dw
    >>> data = xr.DataArray(np.array([[[0.0, 1.0], [1.0, 1.0]]]),
    ...                     dims=("dataset", "record", "field"), coords={"field": ["a", "b"]})
    >>> frame, = dw.synthetic.to_frames(data, labels={"a": ["no", "yes"]})
    >>> frame["a"].tolist(), frame["b"].tolist()
    (['no', 'yes'], [1.0, 1.0])
    """
    try:
        import pandas as pd
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("to_frames needs pandas (pip install pandas); the datasets "
                          "themselves are an xarray.DataArray") from err
    names = [str(f) for f in data["field"].values]
    frames = []
    for values in data.values:
        columns = {}
        for j, name in enumerate(names):
            column = values[:, j]
            if labels and name in labels:
                cats = list(labels[name])
                column = pd.Categorical.from_codes(column.astype(np.int64), categories=cats)
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


def combine(estimates, variances, rule: str, *, level: float = 0.95, n: int | None = None,
            n_syn: int | None = None) -> Combined:
    """Combine one quantity's estimates from ``m`` synthetic datasets (module docstring).

    Parameters
    ----------
    estimates, variances : array_like of shape (m,)
        :math:`q_j` and :math:`u_j`, the analysis of each dataset (its estimate and the
        square of its standard error).
    rule : {"fully_synthetic", "multiple_imputation", "posterior", "as_if_real"}
        See the module docstring.
    level : float
        The interval's coverage.
    n, n_syn : int, optional
        The confidential and synthetic sizes: ``"fully_synthetic"`` needs them when
        :math:`T \\le 0` (Reiter's adjusted variance); ``"as_if_real"`` rescales :math:`u_1`
        by ``n_syn / n`` when given.

    Returns
    -------
    Combined

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
    """
    from scipy import stats

    q = np.asarray(estimates, dtype=np.float64).ravel()
    u = np.asarray(variances, dtype=np.float64).ravel()
    if q.shape != u.shape or q.size < 1:
        raise ValueError(f"estimates and variances must have the same length m >= 1, got "
                         f"{q.size} and {u.size}")
    if not (np.all(np.isfinite(q)) and np.all(np.isfinite(u)) and np.all(u >= 0)):
        raise ValueError("estimates must be finite and variances finite and >= 0")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    m = q.size
    if rule == "as_if_real":
        scale = 1.0 if n is None or n_syn is None else n_syn / n
        estimate, total, df, b, ubar = q[0], u[0] * scale, math.inf, math.nan, u[0]
    elif rule in RULES:
        if m < 2:
            raise ValueError(f"rule {rule!r} needs m >= 2 datasets, got {m}")
        estimate, b, ubar = q.mean(), q.var(ddof=1), u.mean()
        inflated = (1.0 + 1.0 / m) * b
        if rule == "fully_synthetic":
            total = inflated - ubar
            df = (m - 1) * (1.0 - ubar / inflated) ** 2 if inflated > 0 else math.inf
            if total <= 0:
                if n is None or n_syn is None:
                    raise ValueError("fully_synthetic: T = (1 + 1/m) b - u_bar <= 0, and "
                                     "Reiter's adjusted variance (n_syn / n) u_bar needs n and "
                                     "n_syn")
                total = n_syn / n * ubar
        elif rule == "multiple_imputation":
            total = ubar + inflated
            df = (m - 1) * (1.0 + ubar / inflated) ** 2 if inflated > 0 else math.inf
        else:
            total, df = inflated, float(m - 1)
    else:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    quantile = stats.norm.ppf(0.5 + level / 2) if not math.isfinite(df) else \
        stats.t.ppf(0.5 + level / 2, df)
    half = quantile * math.sqrt(total)
    return Combined(float(estimate), float(total), float(df),
                    (float(estimate - half), float(estimate + half)), rule, float(b),
                    float(ubar))
