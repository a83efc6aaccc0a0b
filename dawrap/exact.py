r"""Exact posteriors as small distribution objects, for checking samplers and for plots.

The record sampler is exact; these objects are how that claim is tested. Two forms cover the
built-in models:

* :class:`BetaMixture`, as arises when the confidential statistic is discrete and can be
  summed out:
  :math:`p(\theta\mid s_{dp}) = \sum_k w_k\, p(\theta \mid T = k)`,
  :math:`w_k \propto p(T = k)\, g(s_{dp}, k)`;
* :class:`Grid`: a density tabulated on a fine grid (trapezoid rule), for everything else.
"""
from __future__ import annotations

import numpy as np
from scipy import optimize, special

__all__ = ["BetaMixture", "Grid", "normalise_log_weights"]


def normalise_log_weights(log_w: np.ndarray) -> np.ndarray:
    """Weights from log weights, computed stably."""
    log_w = np.asarray(log_w, dtype=float)
    return np.exp(log_w - special.logsumexp(log_w))


class BetaMixture:
    """A mixture of Beta(a_k, b_k) with weights w_k, vectorised (thousands of components).

    Parameters
    ----------
    weights, a, b : array_like
        Component weights (normalised here) and Beta parameters.
    """

    def __init__(self, weights, a, b):
        w = np.asarray(weights, dtype=float)
        keep = w > 1e-300 * w.max()
        self.weights = w[keep] / w[keep].sum()
        self.a = np.asarray(a, dtype=float)[keep]
        self.b = np.asarray(b, dtype=float)[keep]

    def mean(self) -> float:
        return float(self.weights @ (self.a / (self.a + self.b)))

    def var(self) -> float:
        a, b = self.a, self.b
        second = (a * (a + 1)) / ((a + b) * (a + b + 1))
        return float(self.weights @ second - self.mean() ** 2)

    def std(self) -> float:
        return float(np.sqrt(self.var()))

    def pdf(self, x):
        x = np.atleast_1d(np.asarray(x, dtype=float))
        log_pdf = ((self.a - 1)[:, None] * np.log(x) + (self.b - 1)[:, None] * np.log1p(-x)
                   - special.betaln(self.a, self.b)[:, None])
        return self.weights @ np.exp(log_pdf)

    def cdf(self, x):
        x = np.atleast_1d(np.asarray(x, dtype=float))
        return self.weights @ special.betainc(self.a[:, None], self.b[:, None], x[None, :])

    def ppf(self, q: float) -> float:
        return float(optimize.brentq(lambda x: self.cdf(x)[0] - q, 0.0, 1.0, xtol=1e-14))


class Grid:
    """A univariate density known up to a constant on an increasing grid.

    Parameters
    ----------
    grid : array_like
        Increasing points covering (essentially) all the posterior mass.
    log_density : array_like
        Unnormalised log density at ``grid``.
    """

    def __init__(self, grid, log_density):
        self.grid = np.asarray(grid, dtype=float)
        dens = np.exp(np.asarray(log_density, dtype=float) - np.max(log_density))
        self.density = dens / np.trapezoid(dens, self.grid)
        steps = np.diff(self.grid) * 0.5 * (self.density[1:] + self.density[:-1])
        self._cdf = np.concatenate([[0.0], np.cumsum(steps)])

    def mean(self) -> float:
        return float(np.trapezoid(self.grid * self.density, self.grid))

    def var(self) -> float:
        m = self.mean()
        return float(np.trapezoid((self.grid - m) ** 2 * self.density, self.grid))

    def std(self) -> float:
        return float(np.sqrt(self.var()))

    def pdf(self, x):
        return np.interp(x, self.grid, self.density, left=0.0, right=0.0)

    def cdf(self, x):
        return np.interp(x, self.grid, self._cdf, left=0.0, right=1.0)

    def ppf(self, q: float) -> float:
        # Invert the piecewise-quadratic CDF of the piecewise-linear density.
        j = int(np.clip(np.searchsorted(self._cdf, q) - 1, 0, len(self.grid) - 2))
        x0, x1 = self.grid[j], self.grid[j + 1]
        return float(optimize.brentq(lambda x: self._cdf_exact(x, j) - q, x0, x1, xtol=1e-14))

    def _cdf_exact(self, x, j):
        x0, h = self.grid[j], self.grid[j + 1] - self.grid[j]
        d0, d1 = self.density[j], self.density[j + 1]
        u = x - x0
        return self._cdf[j] + d0 * u + 0.5 * (d1 - d0) / h * u * u
