"""The one module that knows which ArviZ generation is installed.

ArviZ 0.x (Python < 3.12 here) builds ``arviz.InferenceData``; ArviZ 1.x builds the
``xarray.DataTree`` that replaced it, and moved the array-level diagnostics to
``arviz_stats``. Everything else in dawrap goes through the functions below.

Examples
--------
Four chains of 1000 independent normal draws, and a result holding them, which the examples
of the functions below use:

>>> import numpy as np
>>> from dawrap import diagnostics
>>> draws = np.random.default_rng(0).normal(size=(4, 1000))     # (chain, draw), iid
>>> idata = diagnostics.to_arviz({"posterior": {"mu": draws}}, {"method": "demo"})
"""
from __future__ import annotations

import importlib
import warnings
from importlib import metadata

import numpy as np

__all__ = ["ARVIZ_1", "to_arviz", "group", "group_names", "ess", "mcse", "rhat", "convergence",
           "summary"]

ARVIZ_1 = int(metadata.version("arviz").split(".")[0]) >= 1


class _Lazy:
    """A module imported at the first attribute read. With ArviZ 1.x, ``import arviz`` also
    imports ``arviz_stats`` and ``arviz_plots`` (about 0.7 s), while a result is built by
    ``arviz_base`` alone and dawrap's own checks of it are numpy (:func:`convergence`): so
    ``dw.sample`` imports only the data layer, and the rest comes with the first summary,
    plot or ArviZ diagnostic asked for."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attribute: str):
        return getattr(importlib.import_module(self._name), attribute)


def _import_arviz_0():
    """ArviZ 0.x, imported whole (it builds its InferenceData in the package itself),
    without its import-time notice that 1.x is coming (a FutureWarning every user of
    ``dawrap`` would see on a first ``dawrap demo``: dawrap supports both generations)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*ArviZ is undergoing a major refactor",
                                category=FutureWarning)
        return importlib.import_module("arviz")


az = _Lazy("arviz") if ARVIZ_1 else _import_arviz_0()
_SAMPLED_0X = ("posterior", "sample_stats")


def _mcse_sd_numpy(ary):
    """ArviZ 0.x's ``_mcse_sd`` as its NumPy path computes it: the delta method on the
    variance, with the ESS of the squared deviations (Vehtari et al. 2021; the same estimator
    as ``arviz_stats`` and R's ``posterior``)."""
    from arviz.stats import diagnostics as az_diagnostics

    ary = np.asarray(ary)
    if az_diagnostics._not_valid(ary, shape_kwargs={"min_draws": 4, "min_chains": 1}):
        return np.nan
    squared = (ary - ary.mean()) ** 2
    ess_of_squares = az_diagnostics._ess_mean(squared)
    var = squared.mean()
    var_of_var = ((squared ** 2).mean() - var ** 2) / ess_of_squares
    return np.sqrt(var_of_var / var / 4.0)


def _repair_arviz_0_mcse_sd() -> bool:
    """Make ``az.mcse(..., method="sd")`` work with ArviZ 0.x under NumPy >= 2.4.

    ArviZ 0.x (0.23.4 included) takes the square root on its numba path, which it uses
    whenever numba is installed, as dawrap's users always have it:
    ``float(_sqrt(np.ravel(varsd), np.zeros(1)))`` converts a 1-element array to a Python
    float. NumPy deprecated that conversion in 1.25 and raises ``TypeError: only
    0-dimensional arrays can be converted to Python scalars`` since 2.4; ``az.summary``
    computes its MCSE separately and is unaffected. ArviZ 0.x gets no more feature work, so
    the fix is here: its ``_mcse_sd`` is replaced by the same estimator on the NumPy path
    (:func:`_mcse_sd_numpy`), which ``az.mcse`` looks up at each call. Returns whether it was
    replaced. ArviZ 1.x (``arviz_stats``) has no such path and is left alone.
    """
    if ARVIZ_1 or np.lib.NumpyVersion(np.__version__) < "2.4.0":
        return False
    from arviz.stats import diagnostics as az_diagnostics

    az_diagnostics._mcse_sd = _mcse_sd_numpy
    return True


#: Whether ArviZ 0.x's ``mcse(method="sd")`` was repaired on import (see
#: :func:`_repair_arviz_0_mcse_sd`); ``az.mcse`` then works for every method.
ARVIZ_0_MCSE_SD_REPAIRED = _repair_arviz_0_mcse_sd()


def to_arviz(groups: dict, attrs: dict, dims: dict | None = None, coords: dict | None = None):
    """Build the ArviZ object from ``{group: {variable: array}}``.

    Arrays in groups whose name contains ``data`` have no chain/draw dimensions; all others
    lead with ``(chain, draw)``. ``dims`` (variable -> dimension names) and ``coords``
    (dimension -> labels) name the axes of the posterior's variables.

    Parameters
    ----------
    groups : dict of str -> dict of str -> ndarray
        The groups (``posterior``, ``sample_stats``, ``constant_data``, ...) and their
        variables.
    attrs : dict
        Attributes stored on the result and on every group; ``None`` values are dropped.
    dims, coords : dict, optional
        Dimension names per variable, and labels per dimension.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        What the installed ArviZ builds (0.x and 1.x respectively).

    Examples
    --------
    The draws of the module's example, with the number of records as data:

    >>> with_data = diagnostics.to_arviz({"posterior": {"mu": draws},
    ...                                   "constant_data": {"n": 100}}, {"method": "demo"})
    >>> diagnostics.group(with_data, "constant_data")["n"].shape       # no (chain, draw)
    ()
    """
    attrs = {k: v for k, v in attrs.items() if v is not None}
    # only the posterior's variables: ArviZ applies dims by variable name in every group
    labels = {"dims": {k: list(v) for k, v in (dims or {}).items()
                       if k in groups.get("posterior", {})} or None,
              "coords": dict(coords) if coords else None}
    if ARVIZ_1:  # the data layer alone (see _Lazy)
        from arviz_base import from_dict
        return from_dict(groups, attrs={"/": attrs, **{g: attrs for g in groups}}, **labels)
    with warnings.catch_warnings():
        # ArviZ 0.x warns about group names outside its schema; ours are deliberate.
        warnings.simplefilter("ignore", UserWarning)
        sampled = {g: v for g, v in groups.items() if g in _SAMPLED_0X}
        idata = az.from_dict(**sampled, attrs=attrs, **labels)
        extra = {g: (_data_dataset(v) if "data" in g else az.dict_to_dataset(v, attrs=attrs))
                 for g, v in groups.items() if g not in _SAMPLED_0X}
        if extra:
            idata.add_groups(extra)
    for name in idata.groups():
        idata[name].attrs.update(attrs)
    return idata


def _data_dataset(variables: dict):
    # ArviZ 0.x would turn scalars into length-1 vectors; keep them 0-d as ArviZ 1.x does.
    import xarray as xr

    return xr.Dataset({k: (tuple(f"{k}_dim_{i}" for i in range(np.ndim(v))), np.asarray(v))
                       for k, v in variables.items()})


def group(data, name: str):
    """One group of a result as an ``xarray.Dataset``.

    Parameters
    ----------
    data : arviz.InferenceData or xarray.DataTree
        A result of :func:`dawrap.sample` (or of :func:`to_arviz`).
    name : str
        The group, e.g. ``"posterior"`` or ``"sample_stats"``.

    Returns
    -------
    xarray.Dataset

    Examples
    --------
    >>> diagnostics.group(idata, "posterior")["mu"].shape
    (4, 1000)
    """
    if ARVIZ_1:
        return data[name].to_dataset()
    return getattr(data, name)


def group_names(data) -> list:
    """Names of the groups present in a result.

    Parameters
    ----------
    data : arviz.InferenceData or xarray.DataTree

    Returns
    -------
    list of str

    Examples
    --------
    >>> diagnostics.group_names(idata)
    ['posterior']
    """
    if ARVIZ_1:
        return list(data.children)
    return list(data.groups())


def attrs(data) -> dict:
    """The result's global attributes (method, model, mechanism, seed, ...)."""
    if ARVIZ_1:
        return dict(data.attrs)
    return dict(data.posterior.attrs)


def _array_stats():
    from arviz_stats.base import array_stats
    return array_stats


def ess(draws: np.ndarray, method: str = "bulk") -> float:
    """Effective sample size of a ``(chain, draw)`` array.

    Parameters
    ----------
    draws : array_like of shape (chain, draw)
    method : str
        ``"bulk"``, ``"tail"`` or any other method ArviZ accepts.

    Returns
    -------
    float

    Examples
    --------
    >>> bool(3000 < diagnostics.ess(draws) < 5000)                   # about 4000
    True
    """
    draws = np.asarray(draws, dtype=float)
    if ARVIZ_1:
        # arviz_stats' array layer has no default tail probabilities; these are ArviZ's.
        kwargs = {"prob": (0.05, 0.95)} if method == "tail" else {}
        return float(_array_stats().ess(draws, chain_axis=0, draw_axis=1, method=method,
                                        **kwargs))
    return float(az.ess(draws, method=method))


def mcse(draws: np.ndarray, method: str = "mean", prob: float | None = None) -> float:
    """Monte Carlo standard error of the mean, sd, or a quantile (``prob``) of the draws.

    Parameters
    ----------
    draws : array_like of shape (chain, draw)
    method : {"mean", "sd", "quantile"}
    prob : float, optional
        The quantile's probability (with ``method="quantile"``).

    Returns
    -------
    float

    Examples
    --------
    >>> bool(0.013 < diagnostics.mcse(draws, "mean") < 0.019)      # 1 / sqrt(4000) = 0.016
    True
    >>> bool(diagnostics.mcse(draws, "quantile", prob=0.5) > diagnostics.mcse(draws))
    True
    """
    draws = np.asarray(draws, dtype=float)
    if ARVIZ_1:
        kwargs = {"prob": prob} if method == "quantile" else {}
        return float(_array_stats().mcse(draws, chain_axis=0, draw_axis=1, method=method,
                                         **kwargs))
    # method="sd" too: ArviZ 0.x's is repaired on import (_repair_arviz_0_mcse_sd)
    kwargs = {"prob": prob} if method == "quantile" else {}
    return float(np.asarray(az.mcse(draws, method=method, **kwargs)).squeeze())


def rhat(draws: np.ndarray) -> float:
    r"""Rank-normalised split R-hat of a ``(chain, draw)`` array (Vehtari et al. 2021).

    Each chain is split in half (the middle draw of an odd count left out); the draws are
    replaced by normal scores of their ranks, :math:`z = \Phi^{-1}((r - 3/8) / (S + 1/4))`,
    and :math:`\hat R = \sqrt{(\hat W (N - 1)/N + B/N) / \hat W}` from the within- and
    between-chain variances; the larger of that for the draws (bulk) and for their absolute
    deviations from their median (tail). The same estimator and numbers as ``az.rhat`` on
    both ArviZ generations (tested), in NumPy: ArviZ 0.x compiles it with numba in every
    process, half a second for the convergence check of every :func:`dawrap.sample`.

    Parameters
    ----------
    draws : array_like of shape (chain, draw)

    Returns
    -------
    float
        Near 1 for chains that agree; above 1.01 is a warning sign. NaN for fewer than 2
        chains or 4 draws.

    Examples
    --------
    >>> bool(diagnostics.rhat(draws) < 1.01)
    True
    >>> bool(diagnostics.rhat(draws + np.arange(4)[:, None]) > 1.01)   # chains disagree
    True
    """
    draws = np.asarray(draws, dtype=float)
    if draws.ndim != 2:
        return float("nan")
    return float(convergence(draws)[0])


def _average_ranks(rows: np.ndarray) -> np.ndarray:
    """The ranks (1 to m) of each row's values, ties given the mean of their ranks:
    ``scipy.stats.rankdata(rows, axis=1, method="average")``, without importing
    ``scipy.stats`` (half a second, for this alone, at every first ``dw.sample``)."""
    m = rows.shape[1]
    order = np.argsort(rows, axis=1, kind="stable")
    ordered = np.take_along_axis(rows, order, axis=1)
    position = np.broadcast_to(np.arange(m), rows.shape)
    starts = np.ones(rows.shape, bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ends = np.ones(rows.shape, bool)
    ends[:, :-1] = starts[:, 1:]
    # each position's run of equal values [first, last]: the last start at or before it, the
    # first end at or after it
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends, position, m - 1)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty(rows.shape)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=1)
    return ranks


def convergence(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Rank-normalised split R-hat and bulk effective sample size of every scalar of the
    draws at once (Vehtari et al. 2021).

    The numbers of :func:`rhat` and of ArviZ's ``ess(method="bulk")`` (tested against it):
    the chains split in half and the draws replaced by the normal scores of their ranks;
    the ESS is :math:`S / \hat\tau` with :math:`\hat\tau = -1 + 2 \sum_t \hat\rho_t`,
    the autocorrelations (by FFT, combined over chains with the between-chain variance)
    summed over Geyer's initial positive and monotone sequence. Vectorised over the scalars,
    so that :func:`dawrap.sample` checks hundreds of parameters in milliseconds.

    Parameters
    ----------
    draws : array_like of shape (chain, draw, \*shape)

    Returns
    -------
    rhat, ess_bulk : ndarray of shape ``shape``
        NaN where a scalar is constant or not finite, and R-hat for fewer than 2 chains;
        both NaN for fewer than 4 draws.

    Examples
    --------
    Two scalars: the module example's iid draws, and their running sums, a random walk:

    >>> walks = np.stack([draws, np.cumsum(draws, axis=1)], axis=-1)      # (4, 1000, 2)
    >>> rhat, ess = diagnostics.convergence(walks)
    >>> bool(rhat[0] < 1.01 and ess[0] > 3000), bool(rhat[1] > 1.01 and ess[1] < 100)
    (True, True)
    """
    from scipy.fft import next_fast_len
    from scipy.special import ndtri

    draws = np.asarray(draws, dtype=float)
    shape = draws.shape[2:]
    # (scalar, chain, draw), contiguous: every transform below runs along the last axis
    flat = np.ascontiguousarray(np.moveaxis(draws.reshape(draws.shape[0], draws.shape[1], -1),
                                            2, 0))
    rhat = np.full(flat.shape[0], np.nan)
    ess = np.full(flat.shape[0], np.nan)
    if flat.shape[2] < 4 or flat.shape[1] < 1:
        return rhat.reshape(shape), ess.reshape(shape)
    usable = np.all(np.isfinite(flat), axis=(1, 2)) & (np.ptp(flat, axis=(1, 2)) > 0)
    if not usable.any():
        return rhat.reshape(shape), ess.reshape(shape)
    half = flat.shape[2] // 2
    halves = np.concatenate((flat[usable, :, :half], flat[usable, :, flat.shape[2] - half:]),
                            axis=1)                                # (k, 2 chains, half)

    def normal_scores(ary):  # ranks over all chains and draws, per scalar
        ranks = _average_ranks(ary.reshape(ary.shape[0], -1))
        return ndtri((ranks - 0.375) / (ranks.shape[1] + 0.25)).reshape(ary.shape)

    def basic_rhat(ary):
        n = ary.shape[2]
        between = n * np.var(ary.mean(axis=2), axis=1, ddof=1)
        within = np.mean(np.var(ary, axis=2, ddof=1), axis=1)
        return np.sqrt((between / within + n - 1) / n)

    bulk = normal_scores(halves)
    if draws.shape[0] >= 2:
        median = np.median(halves.reshape(halves.shape[0], -1), axis=1)
        tail = normal_scores(np.abs(halves - median[:, None, None]))
        with np.errstate(invalid="ignore", divide="ignore"):
            rhat[usable] = np.maximum(basic_rhat(bulk), basic_rhat(tail))

    # ESS of the normal scores (ArviZ's _ess): autocovariance by FFT, per scalar and chain
    chains, n = bulk.shape[1], bulk.shape[2]
    centred = bulk - bulk.mean(axis=2, keepdims=True)
    m = next_fast_len(2 * n)
    spectrum = np.fft.rfft(centred, n=m, axis=2)
    acov = np.fft.irfft(spectrum * np.conjugate(spectrum), n=m, axis=2)[:, :, :n] / n
    mean_acov = acov.mean(axis=1)                                   # (k, n)
    mean_var = mean_acov[:, 0] * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if chains > 1:
        var_plus = var_plus + np.var(bulk.mean(axis=2), axis=1, ddof=1)
    rho = 1.0 - (mean_var[:, None] - mean_acov) / var_plus[:, None]
    rho[:, 0] = 1.0
    # Geyer: pairs (rho_2m, rho_2m+1) summed while positive (at most to lag n - 3), made
    # non-increasing; the even term of the first pair left out is added once.
    pairs = n // 2
    sums = rho[:, 0:2 * pairs:2] + rho[:, 1:2 * pairs:2]           # (k, pairs)
    index = np.arange(pairs)
    going = (2 * index + 1 < n - 3) & (sums > 0)
    stop = np.argmin(going, axis=1)                                 # first pair not summed
    kept = np.minimum.accumulate(sums, axis=1) * (index < stop[:, None])
    rows = np.arange(rho.shape[0])
    even, stopped_sum = rho[rows, 2 * stop], sums[rows, stop]
    last = np.where((stop == 0) | (stopped_sum >= 0) | (even > 0), even, 0.0)
    tau = -1.0 + 2.0 * kept.sum(axis=1) + last
    total = chains * n
    tau = np.maximum(tau, 1.0 / np.log10(total))
    values = total / tau
    values[np.any(np.isnan(rho), axis=1)] = np.nan
    ess[usable] = values
    return rhat.reshape(shape), ess.reshape(shape)


def summary(data, **kwargs):
    """``arviz.summary`` of the posterior.

    Parameters
    ----------
    data : arviz.InferenceData or xarray.DataTree
    **kwargs
        Passed to ``arviz.summary`` (whose options differ between ArviZ 0.x and 1.x).

    Returns
    -------
    pandas.DataFrame
        One row per scalar parameter: mean, sd, an interval, MCSE, ESS and R-hat.

    Examples
    --------
    >>> table = diagnostics.summary(idata)
    >>> list(table.index), bool(abs(table.loc["mu", "mean"]) < 0.1)
    (['mu'], True)
    """
    return az.summary(data, **kwargs)


def plot_trace(data, path) -> None:
    """ArviZ's trace plot (draws and marginal densities) of the posterior, saved to ``path``
    (matplotlib must already be on a file backend)."""
    import matplotlib.pyplot as plt

    if ARVIZ_1:
        figure = az.plot_trace_dist(data, backend="matplotlib").viz["figure"].item()
    else:
        figure = np.asarray(az.plot_trace(data)).ravel()[0].figure
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
