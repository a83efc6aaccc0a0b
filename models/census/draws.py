"""Compiled building blocks of the census model's theta step: log-space Dirichlet draws,
the Chinese-restaurant table counts (Antoniak draws), digamma, and the Dirichlet-multinomial
log likelihood of counts compressed to their distinct values (see
:mod:`dawrap.models.census`)."""
from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["log_gamma_draw", "dirichlet_into", "table_count", "digamma", "compress_counts",
           "dm_log_likelihood", "dm_log_likelihood_grad"]


@numba.njit(nogil=True, cache=True)
def log_gamma_draw(rng, shape):
    """``log G``, ``G ~ Gamma(shape, 1)``, without underflow for tiny shapes: below 1 by
    ``G = G' U^(1/shape)``, ``G' ~ Gamma(shape + 1, 1)`` (Marsaglia & Tsang 2000)."""
    if shape >= 1.0:
        return math.log(rng.gamma(shape, 1.0))
    return math.log(rng.gamma(shape + 1.0, 1.0)) + math.log(rng.random()) / shape


@numba.njit(nogil=True, cache=True)
def dirichlet_into(rng, concentration, out):
    """Write a ``Dirichlet(concentration)`` draw into ``out``, through log-gamma draws (a
    cell whose share underflows gets exactly 0, never NaN)."""
    k = concentration.shape[0]
    top = -math.inf
    for c in range(k):
        out[c] = log_gamma_draw(rng, concentration[c])
        top = max(top, out[c])
    total = 0.0
    for c in range(k):
        out[c] = math.exp(out[c] - top)
        total += out[c]
    for c in range(k):
        out[c] /= total


@numba.njit(nogil=True, cache=True)
def table_count(rng, n, beta):
    r"""The number of tables :math:`m` that ``n`` customers occupy in a Chinese restaurant
    of concentration ``beta``: :math:`m = \sum_{j=0}^{n-1} \mathrm{Bernoulli}(\beta/(\beta +
    j))` (Antoniak 1974), whose law is :math:`P(m) \propto s(n, m)\, \beta^m` (unsigned
    Stirling numbers of the first kind). The first customer always opens one."""
    if n <= 0:
        return 0
    m = 1
    for j in range(1, n):
        if rng.random() * (beta + j) < beta:
            m += 1
    return m


@numba.njit(nogil=True, cache=True)
def digamma(x):
    """The digamma function for ``x > 0``: the recurrence up to 10, then the asymptotic
    series (error below 1e-14)."""
    result = 0.0
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    return result + math.log(x) - 0.5 * inv - inv2 * (1.0 / 12 - inv2 * (
        1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 / 132))))


@numba.njit(nogil=True, cache=True)
def compress_counts(counts, units, cells):
    r"""Rows ``(cell, count, multiplicity)`` of the distinct positive counts of a ``(units
    x cells)`` table (flat), per cell, then rows ``(cells, total, multiplicity)`` of its
    distinct positive row totals: the sufficient statistic of the Dirichlet-multinomial
    likelihood in :math:`\alpha` (:func:`dm_log_likelihood`), O(distinct values) to
    evaluate however many units there are."""
    rows = np.empty((cells * units + units, 3))
    column = np.empty(units)
    used = 0
    for c in range(cells + 1):
        for v in range(units):
            if c < cells:
                column[v] = counts[v * cells + c]
            else:
                s = 0.0
                for d in range(cells):
                    s += counts[v * cells + d]
                column[v] = s
        column.sort()
        v = 0
        while v < units:
            w = v
            while w < units and column[w] == column[v]:
                w += 1
            if column[v] > 0.0:
                rows[used, 0], rows[used, 1], rows[used, 2] = c, column[v], w - v
                used += 1
            v = w
    return rows[:used].copy()


@numba.njit(nogil=True, cache=True)
def dm_log_likelihood(alpha, rows):
    r""":math:`\sum_v \log \mathrm{DM}(M_v; \alpha)` up to a constant, from
    :func:`compress_counts`'s rows: :math:`\sum_{v,c} [\log\Gamma(\alpha_c + M_{vc}) -
    \log\Gamma(\alpha_c)] - \sum_v [\log\Gamma(A + n_v) - \log\Gamma(A)]`,
    :math:`A = \sum_c \alpha_c`."""
    cells = alpha.shape[0]
    total = alpha.sum()
    out = 0.0
    for r in range(rows.shape[0]):
        c, k, mult = int(rows[r, 0]), rows[r, 1], rows[r, 2]
        if c < cells:
            out += mult * (math.lgamma(alpha[c] + k) - math.lgamma(alpha[c]))
        else:
            out -= mult * (math.lgamma(total + k) - math.lgamma(total))
    return out


@numba.njit(nogil=True, cache=True)
def _scaled_digamma_difference(a, k):
    """``a (psi(a + k) - psi(a))`` for ``a > 0`` and whole ``k >= 1``: the sum
    ``sum_{j<k} a / (a + j)`` for small ``k``, else ``1 + a (psi(a + k) - psi(a + 1))``
    (both free of the cancellation of psi(a) ~ -1/a at tiny ``a``)."""
    if k <= 32.0:
        s = 0.0
        for j in range(int(k)):
            s += a / (a + j)
        return s
    return 1.0 + a * (digamma(a + k) - digamma(a + 1.0))


@numba.njit(nogil=True, cache=True)
def dm_log_likelihood_grad(alpha, rows):
    r"""The gradient of :func:`dm_log_likelihood` with respect to :math:`\log\alpha`:
    :math:`\alpha_c \sum_v [\psi(\alpha_c + M_{vc}) - \psi(\alpha_c)] - \alpha_c \sum_v
    [\psi(A + n_v) - \psi(A)]`."""
    cells = alpha.shape[0]
    total = alpha.sum()
    grad = np.zeros(cells)
    shared = 0.0
    for r in range(rows.shape[0]):
        c, k, mult = int(rows[r, 0]), rows[r, 1], rows[r, 2]
        if c < cells:
            grad[c] += mult * _scaled_digamma_difference(alpha[c], k)
        else:
            shared += mult * _scaled_digamma_difference(total, k) / total
    for c in range(cells):
        grad[c] -= alpha[c] * shared
    return grad
