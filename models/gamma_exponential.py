r"""Exponential records with a Gamma prior on the rate; the truncated total is released.

.. math:: \lambda \sim \mathrm{Gamma}(\alpha, \text{rate } \beta),\quad
          x_i \mid \lambda \sim \mathrm{Exponential}(\text{rate } \lambda),\quad
          s_{dp} = \textstyle\sum_i 1_{[a,b]}(x_i)\, x_i + \text{noise}.

The statistic :math:`t(x) = x` is unbounded, so the release drops records outside the bounds
``[a, b]`` chosen by the analyst in advance (never from the data); its L1 sensitivity is
``max(|a|, |b|, b - a) = b``. Both samplers accept this release.

Examples
--------
>>> import dawrap as dw
>>> from dawrap.models import gamma_exponential
>>> model = gamma_exponential.model(alpha=2, beta=1)
>>> mech = gamma_exponential.laplace(epsilon=1.0, lower=0.0, upper=3.0)
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np

import dawrap as dw

from ._shared import nearest_nonnegative_total, nonnegative_total, positive

__all__ = ["model", "value", "draw_record", "laplace", "family"]


@numba.njit(nogil=True, cache=True)
def draw_record(rng, theta, out):
    """One Exponential(rate lam) record."""
    out[0] = rng.exponential(1.0 / theta[0])


@numba.njit(nogil=True, cache=True)
def value(x_i, out):
    """The sufficient statistic t(x) = x."""
    out[0] = x_i[0]


@numba.njit(nogil=True, cache=True)
def conjugate_draw(rng, alpha, beta, total, n):
    """lam | x ~ Gamma(alpha + n, rate beta + sum x)."""
    return np.array([dw.random.gamma(rng, alpha + n, 1.0 / (beta + total))])


@numba.njit(nogil=True, cache=True)
def positive_rate(theta):
    """The parameter space: lam > 0."""
    return theta[0] > 0.0


@numba.njit(nogil=True, cache=True)
def non_negative(x_i):
    """A record is >= 0."""
    return x_i[0] >= 0.0


@numba.njit(nogil=True, cache=True)
def natural(theta):
    return -theta[0]


@numba.njit(nogil=True, cache=True)
def mean_cov(theta):
    lam = theta[0]
    return np.array([1.0 / lam]), np.array([[1.0 / lam ** 2]])


@numba.njit(nogil=True, cache=True)
def cdf(x, eta):
    """P(X <= x) = 1 - exp(eta x) for rate -eta."""
    return -math.expm1(eta * x) if x > 0.0 else 0.0


@numba.njit(nogil=True, cache=True)
def sf(x, eta):
    """P(X >= x) = exp(eta x)."""
    return math.exp(eta * x) if x > 0.0 else 1.0


@functools.lru_cache(maxsize=64)
def _kernels(alpha: float, beta: float):
    @numba.njit(nogil=True)
    def draw_theta(rng, theta, x, stats):
        return conjugate_draw(rng, alpha, beta, stats[0], x.shape[0])

    @numba.njit(nogil=True)
    def posterior_draw(rng, s, n):
        return conjugate_draw(rng, alpha, beta, s[0], n)

    return draw_theta, posterior_draw


@functools.lru_cache(maxsize=64)
def family(alpha: float = 1.0, beta: float = 1.0) -> dw.ExponentialFamily:
    """The exponential family description (natural parameter -lam)."""
    return dw.ExponentialFamily(value, 1, mean_cov, _kernels(alpha, beta)[1],
                                nonnegative_total, bounded=False, natural=natural, cdf=cdf,
                                sf=sf, project=nearest_nonnegative_total)


@dw.recipe
def model(alpha: float = 1.0, beta: float = 1.0) -> dw.Model:
    """Exponential records, prior ``Gamma(alpha, rate=beta)`` on the parameter ``lam``."""
    alpha, beta = positive("alpha", alpha), positive("beta", beta)
    return dw.Model(params={"lam": ()}, record_size=1, draw_record=draw_record,
                    draw_theta=_kernels(alpha, beta)[0], model_stat=value, stat_size=1,
                    draw_prior=lambda rng: np.array([rng.gamma(alpha, 1.0 / beta)]),
                    family=family(alpha, beta), theta_support=positive_rate,
                    record_support=non_negative,
                    name=f"gamma_exponential(alpha={alpha:g}, beta={beta:g})")


@dw.recipe
def laplace(epsilon: float, lower: float, upper: float) -> dw.Laplace:
    """The total of records inside ``[lower, upper]`` with Laplace noise (epsilon-DP)."""
    fam = family()
    return dw.Laplace(fam.truncated_statistic(lower, upper), epsilon=epsilon,
                      sensitivity=fam.truncated_sensitivity(lower, upper),
                      truncation=(lower, upper))
