r"""Closed forms the sufficient-statistic sampler's marginal kernel needs, compiled.

* :func:`log_normal_laplace`: the likelihood of a Laplace release of scale :math:`b` when the
  statistic is :math:`N(m, v)`, the statistic integrated out,

  .. math:: \ell = \frac{1}{2b}\Big[e^{r/b + v/2b^2}\,\Phi\big(\tfrac{-r - v/b}{\sqrt v}\big)
            + e^{-r/b + v/2b^2}\,\Phi\big(\tfrac{r - v/b}{\sqrt v}\big)\Big],
            \qquad r = m - y,

  in log space (:func:`log_ndtr` and the Mills ratio in the far tail);
* :func:`draw_normal_laplace`: an exact draw of the statistic given that release;
* :func:`cholesky`, :func:`log_normal_density` and small matrix products written out: for the
  few coordinates of a statistic a LAPACK or BLAS call costs more than the arithmetic.

Examples
--------
>>> from dawrap.samplers.suffstat_densities import log_normal_laplace
>>> round(log_normal_laplace(0.0, 0.0, 2.0), 6)  # v = 0: the Laplace density at y
-1.386294
"""
from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["LOG_SQRT_2PI", "log_ndtr", "log_normal_laplace", "draw_normal_laplace", "cholesky",
           "log_normal_cholesky", "log_normal_density", "dot", "matvec", "tmatvec",
           "on_support", "cov_on_support", "spd_solve"]

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@numba.njit(nogil=True, cache=True)
def _log_ndtr_asymptotic_tail(x):
    """log(Phi(x)) + x^2/2 for x <= -20, from the asymptotic series of the Mills ratio
    (the next term is below 3e-12 there)."""
    r = 1.0 / (x * x)
    series = 1.0 - r * (1.0 - 3.0 * r * (1.0 - 5.0 * r * (1.0 - 7.0 * r * (1.0 - 9.0 * r))))
    return -math.log(-x) - LOG_SQRT_2PI + math.log(series)


@numba.njit(nogil=True, cache=True)
def log_ndtr(x):
    """:math:`\\log\\Phi(x)`, accurate in both tails."""
    if x > 0.0:
        return math.log1p(-0.5 * math.erfc(x / math.sqrt(2.0)))
    if x > -20.0:
        return math.log(0.5 * math.erfc(-x / math.sqrt(2.0)))
    return _log_ndtr_asymptotic_tail(x) - 0.5 * x * x


@numba.njit(nogil=True, cache=True)
def _log_piece(r, v, b, x, sign):
    r"""log of :math:`\int N(s; m, v)\, e^{-|s - y|/b} ds` over one side of ``y`` (``sign``
    +1: below, -1: above), with ``r = m - y`` and ``x`` the standardised end, i.e.
    ``sign * r / b + v / (2 b^2) + log Phi(x)``. For ``x < 0`` the exponent and
    :math:`x^2/2` are equal up to :math:`-r^2/2v`, which is used instead of the difference of
    two large numbers."""
    if x < 0.0:
        if x > -20.0:
            tail = math.log(0.5 * math.erfc(-x / math.sqrt(2.0))) + 0.5 * x * x
        else:
            tail = _log_ndtr_asymptotic_tail(x)
        return -0.5 * r * r / v + tail
    return sign * r / b + 0.5 * v / (b * b) + log_ndtr(x)


@numba.njit(nogil=True, cache=True)
def log_normal_laplace(r, v, b):
    r""":math:`\log \int N(s; m, v)\, \frac{1}{2b} e^{-|y - s|/b}\, ds` with ``r = m - y``:
    the likelihood of a Laplace release of scale ``b`` when the statistic is ``N(m, v)``."""
    if not v > 0.0:
        return -abs(r) / b - math.log(2.0 * b)
    sd = math.sqrt(v)
    below = _log_piece(r, v, b, (-r - v / b) / sd, 1.0)
    above = _log_piece(r, v, b, (r - v / b) / sd, -1.0)
    top = max(below, above)
    return top + math.log(math.exp(below - top) + math.exp(above - top)) - math.log(2.0 * b)


@numba.njit(nogil=True, cache=True)
def _normal_above(rng, alpha):
    """One draw of Z ~ N(0, 1) given Z > alpha: plain rejection for alpha < 0.5 (acceptance
    above 0.3), else Robert's (1995) translated-exponential rejection (acceptance above
    0.76)."""
    if alpha < 0.5:
        while True:
            z = rng.standard_normal()
            if z > alpha:
                return z
    rate = 0.5 * (alpha + math.sqrt(alpha * alpha + 4.0))
    while True:
        z = alpha + rng.exponential() / rate
        if rng.random() <= math.exp(-0.5 * (z - rate) ** 2):
            return z


@numba.njit(nogil=True, cache=True)
def draw_normal_laplace(rng, m, v, y, b):
    r"""One draw of ``s`` with density :math:`\propto N(s; m, v)\, e^{-|y - s|/b}`: below
    ``y`` it is :math:`N(m + v/b, v)` restricted to :math:`s < y`, above it :math:`N(m - v/b,
    v)` restricted to :math:`s > y`, with the weights of :func:`log_normal_laplace`'s two
    pieces (an exact draw, no augmentation)."""
    if not v > 0.0:
        return m
    r, sd = m - y, math.sqrt(v)
    x_below, x_above = (-r - v / b) / sd, (r - v / b) / sd
    below = _log_piece(r, v, b, x_below, 1.0)
    above = _log_piece(r, v, b, x_above, -1.0)
    if rng.random() * (1.0 + math.exp(above - below)) < 1.0:
        return m + v / b - sd * _normal_above(rng, -x_below)   # Z < x_below
    return m - v / b + sd * _normal_above(rng, -x_above)       # Z > -x_above


@numba.njit(nogil=True, cache=True)
def cholesky(A):
    """``(L, ok)``: the lower Cholesky factor of a small symmetric matrix, and whether it is
    positive definite. Written out because for the few coordinates of a statistic a LAPACK
    call costs more than the arithmetic."""
    d = A.shape[0]
    L = np.zeros((d, d))
    for j in range(d):
        t = A[j, j]
        for k in range(j):
            t -= L[j, k] * L[j, k]
        if not t > 0.0:
            return L, False
        L[j, j] = math.sqrt(t)
        for i in range(j + 1, d):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    return L, True


@numba.njit(nogil=True, cache=True)
def log_normal_cholesky(r, L):
    """log N(r; 0, L L^T) by forward substitution."""
    d = r.shape[0]
    z = np.empty(d)
    out = -d * LOG_SQRT_2PI
    for i in range(d):
        t = r[i]
        for k in range(i):
            t -= L[i, k] * z[k]
        z[i] = t / L[i, i]
        out -= 0.5 * z[i] * z[i] + math.log(L[i, i])
    return out


@numba.njit(nogil=True, cache=True)
def log_normal_density(x, mean, cov):
    """log N(x; mean, cov) for a positive definite ``cov`` (-inf if it is not)."""
    L, ok = cholesky(cov)
    if not ok:
        return -math.inf
    return log_normal_cholesky(x - mean, L)


# Small matrix products written out: numba sends ``@`` to BLAS, whose call costs more than
# the arithmetic for the few coordinates of a statistic.

@numba.njit(nogil=True, cache=True)
def dot(x, y):
    out = 0.0
    for i in range(x.shape[0]):
        out += x[i] * y[i]
    return out


@numba.njit(nogil=True, cache=True)
def matvec(A, x):
    """A x."""
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[i] += A[i, j] * x[j]
    return out


@numba.njit(nogil=True, cache=True)
def tmatvec(A, x):
    """A^T x."""
    out = np.zeros(A.shape[1])
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[j] += A[i, j] * x[i]
    return out


@numba.njit(nogil=True, cache=True)
def on_support(basis, x):
    """Coordinates ``basis^T x`` of ``x`` in the statistic's support."""
    return tmatvec(basis, x)


@numba.njit(nogil=True, cache=True)
def cov_on_support(basis, S):
    """``basis^T S basis``: a covariance restricted to the support (positive definite there
    for the multinomial, whose counts sum to n)."""
    d, r = basis.shape
    SB = np.zeros((d, r))
    for i in range(d):
        for k in range(d):
            for j in range(r):
                SB[i, j] += S[i, k] * basis[k, j]
    out = np.zeros((r, r))
    for a in range(r):
        for b in range(r):
            for i in range(d):
                out[a, b] += basis[i, a] * SB[i, b]
    return out


@numba.njit(nogil=True, cache=True)
def spd_solve(A, B):
    """A^{-1} B for a symmetric positive definite ``A`` (Cholesky; a LAPACK call costs more
    than the arithmetic for a few coordinates)."""
    L, ok = cholesky(A)
    d, k = B.shape
    X = np.empty((d, k))
    for c in range(k):
        z = np.empty(d)
        for i in range(d):
            t = B[i, c]
            for j in range(i):
                t -= L[i, j] * z[j]
            z[i] = t / L[i, i]
        for i in range(d - 1, -1, -1):
            t = z[i]
            for j in range(i + 1, d):
                t -= L[j, i] * X[j, c]
            X[i, c] = t / L[i, i]
    return X
