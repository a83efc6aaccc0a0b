r"""Calibration of posterior samplers by repeated simulation (Cook, Gelman & Rubin 2006).

Draw :math:`\theta_i \sim p(\theta)`, a database :math:`x_i \sim p(x \mid \theta_i)` and a
release :math:`s_i` from the mechanism; run a sampler on :math:`s_i` and record the posterior
quantile :math:`U_i` of :math:`\theta_i` among its draws. For a calibrated sampler the
:math:`U_i` are uniform; the Kolmogorov-Smirnov statistic against the uniform measures the
miscalibration (Bernstein & Sheldon 2018, Figure 1a).

Every trial's randomness is spawned from one ``SeedSequence``, so a study is reproducible and
its trials are independent of the order they run in.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats

from . import _arviz
from .mechanisms import Mechanism
from .model import Model
from .sampling import sample

__all__ = ["posterior_quantiles", "ks_uniform"]


def posterior_quantiles(model: Model, mechanism: Mechanism | Callable, n: int,
                        methods: Sequence[str], *, trials: int, seed: int,
                        parameter: str | None = None, index: int = 0,
                        sample_kwargs: dict | None = None) -> dict:
    """Posterior quantiles of the true parameter over simulated trials, per method.

    Parameters
    ----------
    model, mechanism
        The model and the mechanism releasing each simulated database.
    n : int
        Records per database.
    methods : sequence of str
        ``dw.sample`` methods; ``"suffstat:printed"`` runs the printed Algorithm 2 variant.
    trials, seed : int
        Number of simulated datasets, and the root seed.
    parameter, index
        Which scalar is checked: the parameter name (default the first) and, for a vector
        parameter, the flat index.
    sample_kwargs : dict
        Passed to every ``dw.sample`` call (draws, tune, chains, ...).

    Returns
    -------
    dict of str -> ndarray
        ``U`` (length ``trials``) per method; also ``"theta"``, the true values.
    """
    parameter = parameter or next(iter(model.params))
    kwargs = {"draws": 1000, "tune": 500, "chains": 2, **(sample_kwargs or {})}
    out = {m: np.empty(trials) for m in methods}
    truth = np.empty(trials)
    for t, child in enumerate(np.random.SeedSequence(seed).spawn(trials)):
        data_seed, *method_seeds = child.spawn(1 + len(methods))
        rng = np.random.default_rng(data_seed)
        theta = model.pack(model.draw_prior(rng))
        x = model.simulate(theta, n, seed=rng)
        s_dp = mechanism.release(x, seed=rng)
        true_value = model.unpack(theta[None])[parameter].reshape(-1)[index]
        truth[t] = true_value
        for method, method_seed in zip(methods, method_seeds):
            name, _, variant = method.partition(":")
            with warnings.catch_warnings():
                # Short chains in a study may draw R-hat warnings; the KS statistic is the
                # verdict here.
                warnings.simplefilter("ignore", RuntimeWarning)
                idata = sample(model, mechanism, s_dp, n, method=name, seed=method_seed,
                               confidential=x, variant=variant or "gibbs", **kwargs)
            draws = _arviz.group(idata, "posterior")[parameter].values
            draws = draws.reshape(draws.shape[0] * draws.shape[1], -1)[:, index]
            out[method][t] = np.mean(draws < true_value)
    out["theta"] = truth
    return out


def ks_uniform(u: np.ndarray) -> tuple[float, float]:
    """Kolmogorov-Smirnov statistic and p-value of ``u`` against the uniform on [0, 1]."""
    result = stats.kstest(np.asarray(u, dtype=float), "uniform")
    return float(result.statistic), float(result.pvalue)
