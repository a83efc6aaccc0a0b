r"""Poisson counts with a Gamma prior; the clamped total is released.

.. math:: \lambda \sim \mathrm{Gamma}(\alpha, \text{rate } \beta), \quad
          x_i \mid \lambda \sim \mathrm{Poisson}(\lambda), \quad
          s_{dp} = \textstyle\sum_i \min(x_i, c) + \text{noise}\ (\text{sensitivity } c).

The theta kernel uses the unclamped sum :math:`\sum_i x_i` (the model statistic) while the
mechanism sees the clamped sum: the engine keeps both current.

Examples
--------
>>> model = poisson_gamma.model(alpha=2, beta=1)
>>> mech = poisson_gamma.laplace(epsilon=1.0, c=5)
"""
from __future__ import annotations

import functools

import numba
import numpy as np

import dawrap as dw

__all__ = ["model", "count", "clamped_count", "draw_record", "laplace", "geometric"]


@numba.njit(nogil=True, cache=True)
def draw_record(rng, theta, out):
    """One Poisson(lam) record."""
    out[0] = float(rng.poisson(theta[0]))


@numba.njit(nogil=True, cache=True)
def count(x_i, out):
    """The model's sufficient statistic: the unclamped count."""
    out[0] = x_i[0]


@functools.lru_cache(maxsize=64)
def clamped_count(c: float):
    """The released statistic ``min(x_i, c)`` (a compiled function, cached per ``c``)."""
    c = _check_clamp(c)

    @numba.njit(nogil=True)
    def clamped(x_i, out):
        out[0] = min(x_i[0], c)

    return clamped


def _check_clamp(c) -> float:
    if not isinstance(c, (int, float, np.integer, np.floating)) or not c > 0 or c != int(c):
        raise ValueError(f"c must be a positive whole number, got {c!r}")
    return float(c)


@functools.lru_cache(maxsize=64)
def _conjugate_kernel(alpha: float, beta: float):
    @numba.njit(nogil=True)
    def draw_theta(rng, theta, x, stats):
        # lam | x ~ Gamma(alpha + sum x, rate beta + n).
        return np.array([rng.gamma(alpha + stats[0], 1.0 / (beta + x.shape[0]))])

    return draw_theta


def model(alpha: float = 1.0, beta: float = 1.0) -> dw.Model:
    """The Poisson-gamma model, prior ``Gamma(alpha, rate=beta)`` on the parameter ``lam``."""
    for name, value in (("alpha", alpha), ("beta", beta)):
        if not isinstance(value, (int, float, np.integer, np.floating)) or not value > 0:
            raise ValueError(f"{name} must be a number > 0, got {value!r}")
    alpha, beta = float(alpha), float(beta)
    return dw.Model(params={"lam": ()}, record_size=1, draw_record=draw_record,
                    draw_theta=_conjugate_kernel(alpha, beta), model_stat=count, stat_size=1,
                    draw_prior=lambda rng: np.array([rng.gamma(alpha, 1.0 / beta)]),
                    name=f"poisson_gamma(alpha={alpha:g}, beta={beta:g})")


def laplace(epsilon: float, c: float) -> dw.Laplace:
    """The total of counts clamped at ``c`` with Laplace noise of scale ``c / epsilon``."""
    c = _check_clamp(c)
    return dw.Laplace(clamped_count(c), epsilon=epsilon, sensitivity=c)


def geometric(epsilon: float, c: float) -> dw.Geometric:
    """The clamped total with two-sided geometric noise (integer release, epsilon-DP)."""
    c = _check_clamp(c)
    return dw.Geometric(clamped_count(c), epsilon=epsilon, sensitivity=c)
