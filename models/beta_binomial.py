r"""Bernoulli records with a Beta prior; the count is released.

.. math:: p \sim \mathrm{Beta}(a, b), \quad x_i \mid p \sim \mathrm{Bernoulli}(p), \quad
          s_{dp} = \textstyle\sum_i x_i + \text{noise}\ (\text{sensitivity } 1).

Examples
--------
>>> import dawrap as dw
>>> from dawrap.models import beta_binomial
>>> model = beta_binomial.model(a=1, b=1)
>>> mech = beta_binomial.laplace(epsilon=0.5)
>>> x = model.simulate({"p": 0.3}, n=1000, seed=1)
>>> idata = dw.sample(model, mech, mech.release(x, seed=2), n=1000, seed=3)  # doctest: +SKIP
"""
from __future__ import annotations

import functools

import numba
import numpy as np

import dawrap as dw

__all__ = ["model", "count", "draw_record", "laplace", "geometric", "exact_posterior"]


@numba.njit(nogil=True, cache=True)
def draw_record(rng, theta, out):
    """One Bernoulli(p) record."""
    out[0] = 1.0 if rng.random() < theta[0] else 0.0


@numba.njit(nogil=True, cache=True)
def count(x_i, out):
    """The record's contribution to the released count (and the model's sufficient statistic)."""
    out[0] = x_i[0]


@numba.njit(nogil=True, cache=True)
def conjugate_draw(rng, a, b, count, n):
    """p | x ~ Beta(a + count, b + n - count): an exact draw, i.e. a Gibbs step."""
    return np.array([rng.beta(a + count, b + n - count)])


@functools.lru_cache(maxsize=64)
def _conjugate_kernel(a: float, b: float):
    # The closure only binds the hyperparameters; the work is in the disk-cached
    # conjugate_draw, so a new (a, b) compiles in a fraction of a second.
    @numba.njit(nogil=True)
    def draw_theta(rng, theta, x, stats):
        return conjugate_draw(rng, a, b, stats[0], x.shape[0])

    return draw_theta


def model(a: float = 1.0, b: float = 1.0) -> dw.Model:
    """The beta-binomial model with prior ``Beta(a, b)`` on the parameter ``p``."""
    for name, value in (("a", a), ("b", b)):
        if not isinstance(value, (int, float, np.integer, np.floating)) or not value > 0:
            raise ValueError(f"{name} must be a number > 0, got {value!r}")
    a, b = float(a), float(b)
    return dw.Model(params={"p": ()}, record_size=1, draw_record=draw_record,
                    draw_theta=_conjugate_kernel(a, b), model_stat=count, stat_size=1,
                    draw_prior=lambda rng: np.array([rng.beta(a, b)]),
                    name=f"beta_binomial(a={a:g}, b={b:g})")


def laplace(epsilon: float) -> dw.Laplace:
    """The count with Laplace noise of scale ``1 / epsilon`` (epsilon-DP)."""
    return dw.Laplace(count, epsilon=epsilon, sensitivity=1.0)


def geometric(epsilon: float) -> dw.Geometric:
    """The count with two-sided geometric noise (epsilon-DP, integer release)."""
    return dw.Geometric(count, epsilon=epsilon, sensitivity=1.0)


def exact_posterior(mechanism: dw.Mechanism, s_dp, n: int, a: float = 1.0, b: float = 1.0):
    r"""The exact private posterior of ``p`` when ``mechanism`` releases the count.

    Summing out the count :math:`T \sim \mathrm{BetaBinomial}(n, a, b)`,

    .. math:: p(p \mid s_{dp}) = \sum_{k=0}^n w_k\, \mathrm{Beta}(p; a + k, b + n - k),\quad
              w_k \propto \mathrm{BetaBinomial}(k; n, a, b)\, g(s_{dp}, k),

    a mixture of Betas with no grid error (:class:`dawrap.exact.Mixture`).
    """
    from scipy import stats

    from dawrap.exact import Mixture, normalise_log_weights

    k = np.arange(n + 1)
    log_w = stats.betabinom.logpmf(k, n, a, b) + np.array(
        [mechanism.log_g(s_dp, [kk]) for kk in k])
    return Mixture(normalise_log_weights(log_w), [stats.beta(a + kk, b + n - kk) for kk in k])
