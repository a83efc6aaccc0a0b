"""The one module that knows which ArviZ generation is installed.

ArviZ 0.x (Python < 3.12 here) builds ``arviz.InferenceData``; ArviZ 1.x builds the
``xarray.DataTree`` that replaced it, and moved the array-level diagnostics to
``arviz_stats``. Everything else in dawrap goes through the functions below.
"""
from __future__ import annotations

import warnings

import arviz as az
import numpy as np

__all__ = ["ARVIZ_1", "to_arviz", "group", "group_names", "ess", "mcse", "rhat", "summary"]

ARVIZ_1 = int(az.__version__.split(".")[0]) >= 1
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
    """
    attrs = {k: v for k, v in attrs.items() if v is not None}
    # only the posterior's variables: ArviZ applies dims by variable name in every group
    labels = {"dims": {k: list(v) for k, v in (dims or {}).items()
                       if k in groups.get("posterior", {})} or None,
              "coords": dict(coords) if coords else None}
    if ARVIZ_1:
        return az.from_dict(groups, attrs={"/": attrs, **{g: attrs for g in groups}}, **labels)
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
    """One group of a result as an ``xarray.Dataset``."""
    if ARVIZ_1:
        return data[name].to_dataset()
    return getattr(data, name)


def group_names(data) -> list:
    """Names of the groups present in a result."""
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
    """Effective sample size of a ``(chain, draw)`` array."""
    draws = np.asarray(draws, dtype=float)
    if ARVIZ_1:
        # arviz_stats' array layer has no default tail probabilities; these are ArviZ's.
        kwargs = {"prob": (0.05, 0.95)} if method == "tail" else {}
        return float(_array_stats().ess(draws, chain_axis=0, draw_axis=1, method=method,
                                        **kwargs))
    return float(az.ess(draws, method=method))


def mcse(draws: np.ndarray, method: str = "mean", prob: float | None = None) -> float:
    """Monte Carlo standard error of the mean, sd, or a quantile (``prob``) of the draws."""
    draws = np.asarray(draws, dtype=float)
    if ARVIZ_1:
        kwargs = {"prob": prob} if method == "quantile" else {}
        return float(_array_stats().mcse(draws, chain_axis=0, draw_axis=1, method=method,
                                         **kwargs))
    # method="sd" too: ArviZ 0.x's is repaired on import (_repair_arviz_0_mcse_sd)
    kwargs = {"prob": prob} if method == "quantile" else {}
    return float(np.asarray(az.mcse(draws, method=method, **kwargs)).squeeze())


def rhat(draws: np.ndarray) -> float:
    """Rank-normalised split R-hat of a ``(chain, draw)`` array."""
    draws = np.asarray(draws, dtype=float)
    if ARVIZ_1:
        return float(_array_stats().rhat(draws, chain_axis=0, draw_axis=1))
    return float(az.rhat(draws))


def summary(data, **kwargs):
    """``arviz.summary`` of the posterior."""
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
