r"""Linear regression with Normal predictors; the clamped, rescaled cross-products are released
(Ju, Awan, Gong & Rao 2022, Sec. 5 and supplement S-5).

.. math::
   x_{0i} \sim N_p(m, \Sigma), \qquad
   y_i \mid x_{0i} \sim N(x_i^\top \beta, \sigma^2), \qquad
   x_i = (1, x_{0i}) \ \text{(intercept) or } x_{0i},

   \beta \sim N(\mu_0, \tau^2 I) \ (\sigma^2 \text{ known}) \quad \text{or} \quad
   \beta \mid \sigma^2 \sim N(\mu_0, \sigma^2 \tau^2 I),\
   \sigma^2 \sim \mathrm{InvGamma}(a_0, b_0) \ (\sigma^2 \text{ unknown}),

   m \sim N(m_0, s_0^2 I) \ (\text{when } m \text{ is unknown; } \Sigma \text{ is always known}).

The paper's setting: an intercept, ``sigma2``, ``m`` and :math:`\Sigma = I` known,
:math:`\mu_0 = 0`, :math:`\tau = 2`; :func:`published_settings` has all its numbers.

**Records.** ``record_size = p + 1`` floats ``[x_1, ..., x_p, y]``: the predictors (without
the intercept column), then the response.

**Parameters** (what ArviZ shows): ``beta``, shape ``(p + 1,)`` with the intercept first, or
``(p,)`` without one; ``sigma2`` (scalar) when ``sigma2=None``; ``m``, shape ``(p,)``, when
``m=None``. The flat ``theta`` is their concatenation in that order.

**The release.** Each variable is clamped to its bounds and mapped affinely onto [-1, 1],
:math:`\tilde v = (2[v]_a^b - a - b)/(b - a)` (the paper's
:math:`2([v]_a^b - a)/(b - a) - 1`). With :math:`\tilde u = (1, \tilde x_1, \dots, \tilde x_p,
\tilde y)` (intercept) or :math:`(\tilde x_1, \dots, \tilde x_p, \tilde y)` (none), the released
vector is the sum over records of the upper triangle of :math:`\tilde u \tilde u^\top`, row by
row, without the constant entry ``1 * 1`` (its sum is n, which is public): the paper's
:math:`(\tilde x^\top \tilde y, \tilde y^\top \tilde y, \tilde x^\top \tilde x)` without
duplicates, in another order. For p = 2 with an intercept that is the 9 sums of
:math:`\tilde x_1, \tilde x_2, \tilde y, \tilde x_1^2, \tilde x_1 \tilde x_2, \tilde x_1
\tilde y, \tilde x_2^2, \tilde x_2 \tilde y, \tilde y^2`. Each coordinate gets independent
Laplace noise of scale :math:`\Delta/\epsilon`.

**Sensitivity** (replace-one-record adjacency, as in the paper: n is fixed and public). Let
:math:`q = p + 1` and let one record's clamped variables :math:`a \in [-1, 1]^q` be replaced
by :math:`b`. Write :math:`s_j = |a_j - b_j|` and :math:`c_j = |a_j + b_j|`; then
:math:`s_j + c_j = 2\max(|a_j|, |b_j|) \le 2`. A linear term moves by :math:`s_j`; since
:math:`a_j a_k - b_j b_k = \tfrac12[(a_j - b_j)(a_k + b_k) + (a_j + b_j)(a_k - b_k)]`, a square
moves by exactly :math:`s_j c_j` and a cross-product by at most
:math:`\tfrac12(s_j c_k + c_j s_k)`. Summing, with :math:`S = \sum s_j`, :math:`C = \sum c_j`
and :math:`\lambda = 1` with an intercept (the linear terms are released), 0 without:

.. math::
   \|\Delta t\|_1 \le \lambda S + \tfrac12 \textstyle\sum_j s_j c_j + \tfrac12 S C
   \le \lambda S + \tfrac12 \sum_j s_j (2 - s_j) + \tfrac12 S (2q - S)
   \le (q + 1 + \lambda) S - \frac{q + 1}{2q} S^2,

using :math:`\sum_j s_j^2 \ge S^2/q`. The right side is largest at
:math:`S = q(q + 1 + \lambda)/(q + 1) \le 2q`, so
:math:`\Delta = q (q + 1 + \lambda)^2 / (2(q + 1))`, and every inequality is tight for

* an intercept: :math:`\Delta = (p + 1)(p + 3)^2 / (2(p + 2))` (16/3, 75/8 = 9.375 and 72/5
  for p = 1, 2, 3), attained by :math:`a = (1, \dots, 1)` against
  :math:`b = -(1, \dots, 1)/(p + 2)`: every linear term moves by :math:`1 + 1/(p+2)`, every
  product by :math:`1 - 1/(p+2)^2`;
* no intercept: :math:`\Delta = (p + 1)(p + 2)/2` (6 for p = 2), attained by all ones against
  all zeros: each of the :math:`(p+1)(p+2)/2` products moves by 1.

The published constants are upper bounds, not the sensitivity. Adding up each entry's own
largest change (2 for a linear term or a cross-product, 1 for a square, since squares lie in
[0, 1]) gives :math:`p^2 + 4p + 3` with an intercept, 15 at p = 2, the value of the group's
later paper; :math:`(p + 1)^2` without. That sum is never attained: a linear term or a
cross-product moves by 2 only when a variable jumps from one bound to the other, and then that
variable's square does not move at all. The paper's :math:`p^2 + 3p + 3` (13 at p = 2, the
scale of its experiments) equals that sum with p of its 2s counted as 1, perhaps a counting
slip; it happens to stay a valid bound for every p, exceeding the sensitivity with an intercept
by :math:`(p^3 + 3p^2 + 3p + 3)/(2(p + 2)) > 0`. Both therefore give epsilon-DP, with 39% (13)
or 60% (15) more noise than needed at p = 2.
:func:`laplace` uses the exact value unless given a (larger) ``sensitivity``. Under add/remove
adjacency n would change too, and its entry could not be left out.

**Cost.** The model statistic is the upper triangle of :math:`u u^\top` for the *unclamped*
:math:`u = (1, x_0, y)`: it holds n, the predictor sums, :math:`x^\top x`, :math:`x^\top y`
and :math:`y^\top y`, so the conjugate theta step is O(p^3) per iteration, independent of n.

**Mixing.** With a weak release the paper's sampler crawls: given a full database beta is
known to about :math:`\sigma/\sqrt n`, so one iteration moves it that far while the
posterior is nearly the prior. At the published settings the median bulk ESS of beta_1 per
5000 kept draws is 13 to 24 for epsilon 0.1 to 3, against 386 to 465 with
``interweave=True`` (``benchmarks/results/ju_regression.md``). The model therefore carries
the non-centred parameterisation :math:`x_0 = m + L z_x`, :math:`y = x^\top\beta + \sigma
z_y` (:math:`L L^\top = \Sigma`, :math:`z \sim N(0, I)`), with which
``dw.sample(..., interweave=True)`` adds a move of theta that shifts every record with it
(:mod:`dawrap.samplers.interweave`; ``interweave=None``, the default, decides from the estimated
fraction of missing information).

Examples
--------
>>> import dawrap as dw
>>> from dawrap.models import linear_regression
>>> settings = linear_regression.published_settings()
>>> model = linear_regression.model(**settings["model"])
>>> mech = linear_regression.laplace(1.0, **settings["mechanism"])
>>> x = model.simulate({"beta": settings["beta"]}, n=settings["n"], seed=1)
>>> s_dp = mech.release(x, seed=2)
>>> s_dp.shape                                   # 9 clamped, rescaled sums for p = 2
(9,)
>>> idata = dw.sample(model, mech, s_dp, n=100, seed=3)  # doctest: +SKIP
"""
from __future__ import annotations

import functools
import math
import numbers
from typing import NamedTuple

import numba
import numpy as np

import dawrap as dw

from ._shared import check_memory, positive

__all__ = ["model", "laplace", "sensitivity", "clamped_products", "products",
           "nonprivate_posterior", "published_settings"]


# -- compiled leaf functions (disk-cached) -----------------------------------------------------

@numba.njit(nogil=True, cache=True)
def products(x_i, out):
    """The model statistic: the upper triangle of ``u u^T``, row by row, for the unclamped
    ``u = (1, x_1, ..., x_p, y)``; length ``(p + 2)(p + 3) / 2``. Row 0 is ``u`` itself.

    Parameters
    ----------
    x_i : ndarray of shape (p + 1,)
        A record ``[x_1, ..., x_p, y]``.
    out : ndarray of shape ((p + 2)(p + 3) / 2,)
        Receives the products.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import linear_regression
    >>> out = np.empty(10)
    >>> linear_regression.products(np.array([2.0, 3.0, 5.0]), out)    # u = (1, 2, 3, 5)
    >>> out                       # u, then 2*2, 2*3, 2*5, 3*3, 3*5, 5*5
    array([ 1.,  2.,  3.,  5.,  4.,  6., 10.,  9., 15., 25.])
    """
    d = x_i.shape[0] + 1
    out[0] = 1.0
    for a in range(1, d):
        out[a] = x_i[a - 1]
    k = d
    for a in range(1, d):
        for b in range(a, d):
            out[k] = out[a] * out[b]
            k += 1


@numba.njit(nogil=True, cache=True)
def _unit(v, lower, upper):
    """``v`` clamped to ``[lower, upper]`` and mapped affinely onto ``[-1, 1]``."""
    return (2.0 * min(max(v, lower), upper) - lower - upper) / (upper - lower)


@numba.njit(nogil=True, cache=True)
def _release_products(x_i, lower, upper, intercept, out):
    """Upper triangle of ``u~ u~^T`` without the constant ``1 * 1`` (see the module doc).

    Index ``-1`` stands for the intercept's 1. The clamped values are recomputed rather than
    stored: a scratch array would cost an allocation per record update.
    """
    d = x_i.shape[0]
    k = 0
    for a in range(-1 if intercept else 0, d):
        ua = 1.0 if a < 0 else _unit(x_i[a], lower[a], upper[a])
        for b in range(max(a, 0), d):
            out[k] = ua * _unit(x_i[b], lower[b], upper[b])
            k += 1


@numba.njit(nogil=True, cache=True)
def _index(a, b, d):
    """Position of entry ``(a, b)``, ``a <= b``, in a row-major upper triangle of size d."""
    return a * d - a * (a - 1) // 2 + (b - a)


class _Gram(NamedTuple):
    """The data's part of the conjugate updates: ``x^T x``, ``x^T y``, ``y^T y`` and n."""
    xtx: np.ndarray
    xty: np.ndarray
    yty: float
    n: float


@numba.njit(nogil=True, cache=True)
def _gram(stats, p, intercept):
    """The :class:`_Gram` of the summed :func:`products`, for the design ``x = (1, x_0)``
    (intercept) or ``x_0``."""
    d = p + 2
    first = 0 if intercept else 1  # column of u where the design starts
    q = d - 1 - first
    xtx = np.empty((q, q))
    xty = np.empty(q)
    for a in range(q):
        for b in range(a, q):
            xtx[a, b] = xtx[b, a] = stats[_index(first + a, first + b, d)]
        xty[a] = stats[_index(first + a, d - 1, d)]
    return _Gram(xtx, xty, stats[_index(d - 1, d - 1, d)], stats[0])


@numba.njit(nogil=True, cache=True)
def _normal_update(precision, shift, prior_mean, prior_precision):
    """Cholesky factor ``L`` of ``P = precision + prior_precision I`` and the mean
    ``P^{-1} (shift + prior_precision prior_mean)``: the conjugate normal update."""
    k = shift.shape[0]
    lam = precision.copy()
    rhs = shift + prior_precision * prior_mean
    for j in range(k):
        lam[j, j] += prior_precision
    chol = np.linalg.cholesky(lam)
    mean = np.empty(k)
    for j in range(k):  # L w = rhs
        v = rhs[j]
        for i in range(j):
            v -= chol[j, i] * mean[i]
        mean[j] = v / chol[j, j]
    for j in range(k - 1, -1, -1):  # L^T mean = w
        v = mean[j]
        for i in range(j + 1, k):
            v -= chol[i, j] * mean[i]
        mean[j] = v / chol[j, j]
    return chol, mean


@numba.njit(nogil=True, cache=True)
def _draw_normal_into(rng, chol, mean, scale, out, start):
    """``out[start:start + k] ~ N(mean, scale^2 P^{-1})`` with ``P = L L^T``: solving
    ``L^T v = z`` gives ``cov(v) = (L L^T)^{-1}``."""
    k = mean.shape[0]
    v = np.empty(k)
    for j in range(k):
        v[j] = rng.standard_normal()
    for j in range(k - 1, -1, -1):
        w = v[j]
        for i in range(j + 1, k):
            w -= chol[i, j] * v[i]
        v[j] = w / chol[j, j]
    for j in range(k):
        out[start + j] = mean[j] + scale * v[j]


@numba.njit(nogil=True, cache=True)
def _draw_beta(rng, gram, sigma2, prior_mean, prior_precision, out):
    """beta | x, y, sigma2 ~ N(P^{-1} (x^T y / sigma2 + mu0 / tau^2), P^{-1}),
    ``P = x^T x / sigma2 + I / tau^2`` (``gram``: a :class:`_Gram`)."""
    chol, mean = _normal_update(gram.xtx / sigma2, gram.xty / sigma2, prior_mean,
                                prior_precision)
    _draw_normal_into(rng, chol, mean, 1.0, out, 0)


@numba.njit(nogil=True, cache=True)
def _draw_beta_sigma2(rng, gram, prior_mean, prior_precision, shape, scale, out):
    """(beta, sigma2) | x, y from the normal-inverse-gamma posterior: ``P = x^T x + I/tau^2``,
    ``mu = P^{-1} (x^T y + mu0 / tau^2)``, ``sigma2 ~ InvGamma(a0 + n/2, b0 + (y^T y +
    mu0^T mu0 / tau^2 - mu^T P mu) / 2)``, then ``beta ~ N(mu, sigma2 P^{-1})`` (``gram``: a
    :class:`_Gram`; ``shape``, ``scale``: a0, b0)."""
    xtx, xty, yty, n = gram
    chol, mean = _normal_update(xtx, xty, prior_mean, prior_precision)
    q = mean.shape[0]
    # mu^T P mu = mu^T (x^T y + mu0 / tau^2), as P mu is that right-hand side.
    quad = yty
    for j in range(q):
        quad += prior_precision * prior_mean[j] * prior_mean[j]
        quad -= mean[j] * (xty[j] + prior_precision * prior_mean[j])
    sigma2 = (scale + 0.5 * quad) / dw.random.gamma(rng, shape + 0.5 * n, 1.0)
    _draw_normal_into(rng, chol, mean, math.sqrt(sigma2), out, 0)
    out[q] = sigma2


@numba.njit(nogil=True, cache=True)
def _draw_predictor_mean(rng, stats, n, cov_inv, prior_mean, prior_precision, out, start):
    """m | x_0 ~ N(P^{-1} (Sigma^{-1} sum_i x_0i + m0 / s0^2), P^{-1}),
    ``P = n Sigma^{-1} + I / s0^2``; the predictor sums are ``stats[1..p]``."""
    p = cov_inv.shape[0]
    total = stats[1:p + 1].copy()
    chol, mean = _normal_update(n * cov_inv, cov_inv @ total, prior_mean, prior_precision)
    _draw_normal_into(rng, chol, mean, 1.0, out, start)


# -- hyperparameters, validated once (hashable, so the compiled closures below are cached) -----

class _Spec(NamedTuple):
    p: int
    intercept: bool
    sigma2: float | None          # None: unknown, normal-inverse-gamma prior
    m: tuple | None               # None: unknown, normal prior
    cov: tuple                    # Sigma, row by row
    prior_mean: tuple             # mu0
    prior_sd: float               # tau
    sigma2_prior: tuple           # (a0, b0)
    m_prior_mean: tuple           # m0
    m_prior_sd: float             # s0

    @property
    def q(self) -> int:
        return self.p + int(self.intercept)

    @property
    def params(self) -> dict:
        out = {"beta": (self.q,)}
        if self.sigma2 is None:
            out["sigma2"] = ()
        if self.m is None:
            out["m"] = (self.p,)
        return out


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _check_p(p) -> int:
    if not _is_int(p):
        raise TypeError(f"p (the number of predictors) must be an integer, got {p!r}")
    if p < 1:
        raise ValueError(f"p (the number of predictors) must be >= 1, got {p}")
    # p x p matrices (the predictors' covariance, its Cholesky factor and inverse, x^T x)
    # and a release of (p + 1)(p + 2) / 2 sums
    check_memory(int(p) ** 2, f"p = {p} predictors need p x p matrices")
    return int(p)


def _check_flag(value, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _vector(value, name: str, size: int) -> tuple:
    """A number (repeated) or ``size`` finite numbers, as a tuple of floats."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number or {size} numbers, got {value!r}") from None
    if arr.ndim == 0:
        arr = np.full(size, float(arr))
    if arr.shape != (size,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a finite number or {size} finite numbers, "
                         f"got {value!r}")
    return tuple(float(v) for v in arr)


def _check_cov(cov, p: int) -> tuple:
    if cov is None:
        return tuple(tuple(float(i == j) for j in range(p)) for i in range(p))
    try:
        arr = np.asarray(cov, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"cov must be a {p} x {p} matrix of numbers, got {cov!r}") from None
    if arr.shape != (p, p) or not np.all(np.isfinite(arr)) or not np.allclose(arr, arr.T):
        raise ValueError(f"cov must be a finite symmetric {p} x {p} matrix, got {cov!r}")
    try:
        np.linalg.cholesky(arr)
    except np.linalg.LinAlgError:
        raise ValueError(f"cov must be positive definite, got {cov!r}") from None
    return tuple(tuple(float(v) for v in row) for row in arr)


def _pair(value, name: str, what: str) -> tuple:
    try:
        first, second = value
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair ({what}), got {value!r}") from None
    return first, second


def _spec(p=2, intercept=True, sigma2=2.0, m=0.0, cov=None, prior_mean=0.0, prior_sd=2.0,
          sigma2_prior=(2.0, 2.0), m_prior=(0.0, 1.0)) -> _Spec:
    p = _check_p(p)
    intercept = _check_flag(intercept, "intercept")
    q = p + int(intercept)
    a0, b0 = _pair(sigma2_prior, "sigma2_prior", "shape a0, scale b0")
    m0, s0 = _pair(m_prior, "m_prior", "mean m0, sd s0")
    return _Spec(p=p, intercept=intercept,
                 sigma2=None if sigma2 is None else positive("sigma2", sigma2),
                 m=None if m is None else _vector(m, "m", p), cov=_check_cov(cov, p),
                 prior_mean=_vector(prior_mean, "prior_mean", q),
                 prior_sd=positive("prior_sd", prior_sd),
                 sigma2_prior=(positive("sigma2_prior[0] (a0)", a0),
                               positive("sigma2_prior[1] (b0)", b0)),
                 m_prior_mean=_vector(m0, "m_prior[0] (m0)", p),
                 m_prior_sd=positive("m_prior[1] (s0)", s0))


# -- closures over the hyperparameters (cached: the same arguments give the same compiled
#    functions, so the engine reuses its compiled chain) ---------------------------------------

@functools.lru_cache(maxsize=64)
def _record_functions(spec: _Spec):
    """The record sampler, the parameter space and the non-centred parameterisation
    ``x_0 = m + L z_x``, ``y = x beta + sigma z_y`` with ``z ~ N(0, I_{p+1})``, ``L L^T =
    Sigma``, through which the interweaving move of :mod:`dawrap.samplers.interweave` shifts every
    record with theta."""
    p, q = spec.p, spec.q
    ones = int(spec.intercept)  # offset of the slopes in beta
    unknown_sigma2, unknown_m = spec.sigma2 is None, spec.m is None
    sd = 1.0 if unknown_sigma2 else math.sqrt(spec.sigma2)  # unused when unknown
    m_fixed = np.zeros(p) if unknown_m else np.array(spec.m)
    m_start = q + int(unknown_sigma2)
    chol = np.linalg.cholesky(np.array(spec.cov))
    mu0, tau2 = np.array(spec.prior_mean), spec.prior_sd ** 2
    a0, b0 = spec.sigma2_prior
    m0, s0_2 = np.array(spec.m_prior_mean), spec.m_prior_sd ** 2

    @numba.njit(nogil=True, cache=True)
    def record_from_noise(theta, z_i, out):
        # z_i may be out itself: row j of L z reads z_0..z_j only, so going from the last row
        # up never reads an entry already overwritten.
        for j in range(p - 1, -1, -1):
            v = theta[m_start + j] if unknown_m else m_fixed[j]
            for k in range(j + 1):
                v += chol[j, k] * z_i[k]
            out[j] = v
        mean = theta[0] if ones else 0.0
        for j in range(p):
            mean += theta[ones + j] * out[j]
        out[p] = mean + (math.sqrt(theta[q]) if unknown_sigma2 else sd) * z_i[p]

    @numba.njit(nogil=True, cache=True)
    def noise_from_record(rng, theta, x_i, z_out):
        for j in range(p):  # L z_x = x_0 - m, forward substitution
            v = x_i[j] - (theta[m_start + j] if unknown_m else m_fixed[j])
            for k in range(j):
                v -= chol[j, k] * z_out[k]
            z_out[j] = v / chol[j, j]
        mean = theta[0] if ones else 0.0
        for j in range(p):
            mean += theta[ones + j] * x_i[j]
        z_out[p] = (x_i[p] - mean) / (math.sqrt(theta[q]) if unknown_sigma2 else sd)

    @numba.njit(nogil=True)
    def draw_record(rng, theta, out):
        for j in range(p + 1):
            out[j] = rng.standard_normal()
        record_from_noise(theta, out, out)

    @numba.njit(nogil=True, cache=True)
    def log_prior(theta):
        scale2 = tau2  # prior variance of each beta_j
        out = 0.0
        if unknown_sigma2:
            sigma2 = theta[q]
            if not sigma2 > 0.0:
                return -np.inf
            scale2 *= sigma2
            out -= (a0 + 1.0 + 0.5 * q) * math.log(sigma2) + b0 / sigma2
        for j in range(q):
            out -= 0.5 * (theta[j] - mu0[j]) ** 2 / scale2
        if unknown_m:
            for j in range(p):
                out -= 0.5 * (theta[m_start + j] - m0[j]) ** 2 / s0_2
        return out

    @numba.njit(nogil=True)
    def positive_sigma2(theta):
        return theta[q] > 0.0

    # Random-walk scales before warm-up adapts them: a tenth of each prior sd (sigma2's prior
    # has no sd for a0 <= 2; its scale b0 stands in).
    initial = [0.1 * spec.prior_sd * (math.sqrt(b0) if unknown_sigma2 else 1.0)] * q
    initial += [0.1 * b0] * int(unknown_sigma2) + [0.1 * spec.m_prior_sd] * (p * unknown_m)
    noncentred = dw.NonCentred(record_from_noise, noise_from_record, log_prior,
                               noise_size=p + 1, initial_scale=initial)
    return draw_record, (positive_sigma2 if unknown_sigma2 else None), noncentred


@functools.lru_cache(maxsize=64)
def _kernel(spec: _Spec):
    p, intercept = spec.p, spec.intercept
    unknown_sigma2, unknown_m = spec.sigma2 is None, spec.m is None
    size = spec.q + int(unknown_sigma2) + (p if unknown_m else 0)
    sigma2 = 1.0 if unknown_sigma2 else spec.sigma2  # unused when unknown
    mu0, beta_precision = np.array(spec.prior_mean), 1.0 / spec.prior_sd ** 2
    a0, b0 = spec.sigma2_prior
    m0, m_precision = np.array(spec.m_prior_mean), 1.0 / spec.m_prior_sd ** 2
    cov_inv = np.linalg.inv(np.array(spec.cov))
    m_start = size - p

    @numba.njit(nogil=True, cache=True)
    def draw_theta(rng, theta, x, stats):
        out = np.empty(size)
        gram = _gram(stats, p, intercept)
        if unknown_sigma2:
            _draw_beta_sigma2(rng, gram, mu0, beta_precision, a0, b0, out)
        else:
            _draw_beta(rng, gram, sigma2, mu0, beta_precision, out)
        if unknown_m:
            _draw_predictor_mean(rng, stats, gram.n, cov_inv, m0, m_precision, out, m_start)
        return out

    return draw_theta


@functools.lru_cache(maxsize=64)
def _release_statistic(lower: tuple, upper: tuple, intercept: bool):
    lower_arr, upper_arr = np.array(lower), np.array(upper)

    @numba.njit(nogil=True)
    def clamped(x_i, out):
        _release_products(x_i, lower_arr, upper_arr, intercept, out)

    return clamped


def _prior_sampler(spec: _Spec):
    mu0, tau = np.array(spec.prior_mean), spec.prior_sd
    a0, b0 = spec.sigma2_prior
    m0, s0 = np.array(spec.m_prior_mean), spec.m_prior_sd

    def draw_prior(rng):
        parts = []
        if spec.sigma2 is None:
            sigma2 = b0 / rng.gamma(a0)
            parts += [rng.normal(mu0, tau * math.sqrt(sigma2)), [sigma2]]
        else:
            parts.append(rng.normal(mu0, tau))
        if spec.m is None:
            parts.append(rng.normal(m0, s0))
        return np.concatenate(parts)

    return draw_prior


def _bounds(bounds_x, bound_y, p: int) -> tuple[tuple, tuple]:
    """Lower and upper bounds of ``[x_1, ..., x_p, y]``: a number D means ``[-D, D]``."""
    try:
        bx = np.asarray(bounds_x, dtype=float)
        by = np.asarray(bound_y, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"bounds_x and bound_y must be numbers, got {bounds_x!r}, "
                        f"{bound_y!r}") from None
    if bx.ndim == 0 or bx.shape == (p,):
        bx = np.stack([-np.broadcast_to(bx, (p,)), np.broadcast_to(bx, (p,))], axis=1)
    if bx.shape != (p, 2):
        raise ValueError(f"bounds_x must be a number D (every predictor in [-D, D]), {p} "
                         f"numbers D_j, or {p} pairs (lower_j, upper_j); got shape "
                         f"{np.shape(bounds_x)}")
    if by.ndim == 0:
        by = np.array([-by, by])
    if by.shape != (2,):
        raise ValueError(f"bound_y must be a number D (y in [-D, D]) or a pair (lower, "
                         f"upper), got {bound_y!r}")
    for name, (lo, hi) in [*((f"bounds_x[{j}]", b) for j, b in enumerate(bx)), ("bound_y", by)]:
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"{name} must be finite with lower < upper, got ({lo:g}, {hi:g})")
    return (tuple(float(v) for v in bx[:, 0]) + (float(by[0]),),
            tuple(float(v) for v in bx[:, 1]) + (float(by[1]),))


def _exact_sensitivity(p: int, intercept: bool) -> float:
    """``q (q + 1 + lambda)^2 / (2 (q + 1))`` with ``q = p + 1``, ``lambda = intercept``."""
    q, lam = p + 1, int(intercept)
    return q * (q + 1 + lam) ** 2 / (2.0 * (q + 1))


def _release_size(p: int, intercept: bool) -> int:
    d = p + 1 + int(intercept)
    return d * (d + 1) // 2 - int(intercept)


# -- public API --------------------------------------------------------------------------------

def sensitivity(p: int, intercept: bool = True) -> float:
    r"""The L1 sensitivity of the released vector under replacement of one record:
    :math:`(p+1)(p+3)^2 / (2(p+2))` with an intercept (9.375 for p = 2), :math:`(p+1)(p+2)/2`
    without. Derivation, and why the published 13 and 15 are loose, in the module doc.

    Parameters
    ----------
    p : int
        Number of predictors.
    intercept : bool
        Whether the linear sums are released.

    Returns
    -------
    float
        :func:`laplace`'s default sensitivity.

    Examples
    --------
    >>> from dawrap.models import linear_regression
    >>> linear_regression.sensitivity(2), linear_regression.sensitivity(2, intercept=False)
    (9.375, 6.0)
    """
    return _exact_sensitivity(_check_p(p), _check_flag(intercept, "intercept"))


def clamped_products(p: int, bounds_x, bound_y, intercept: bool = True):
    """The released statistic: a compiled ``(x_i, out)`` writing one record's clamped, rescaled
    products (layout in the module doc; length ``(p+2)(p+3)/2 - 1`` with an intercept,
    ``(p+1)(p+2)/2`` without). The same function object is returned for the same bounds.

    Parameters
    ----------
    p : int
        Number of predictors.
    bounds_x, bound_y
        Clamping bounds, as for :func:`laplace`.
    intercept : bool
        Whether the linear sums are released.

    Returns
    -------
    numba.njit function
        ``(x_i, out)``: :func:`laplace` releases its sum over the records.

    Examples
    --------
    A record ``x_1 = 20, x_2 = 0, y = -5`` with every variable clamped to [-10, 10] and
    rescaled: ``(1, 0, -0.5)``, then its products:

    >>> import numpy as np
    >>> from dawrap.models import linear_regression
    >>> statistic = linear_regression.clamped_products(2, bounds_x=10.0, bound_y=10.0)
    >>> out = np.empty(9)
    >>> statistic(np.array([20.0, 0.0, -5.0]), out)
    >>> out + 0.0                 # (+ 0.0 shows -0.0 as 0.0)
    array([ 1.  ,  0.  , -0.5 ,  1.  ,  0.  , -0.5 ,  0.  ,  0.  ,  0.25])
    """
    p = _check_p(p)
    lower, upper = _bounds(bounds_x, bound_y, p)
    return _release_statistic(lower, upper, _check_flag(intercept, "intercept"))


@dw.recipe
def model(p: int = 2, *, intercept: bool = True, sigma2=2.0, m=0.0, cov=None,
          prior_mean=0.0, prior_sd: float = 2.0, sigma2_prior=(2.0, 2.0),
          m_prior=(0.0, 1.0)) -> dw.Model:
    r"""The regression model with ``p`` Normal predictors.

    Parameters
    ----------
    p : int
        Number of predictors (without the intercept).
    intercept : bool
        Include an intercept, the first entry of ``beta``.
    sigma2 : float or None
        The known residual variance, or ``None`` to infer it (parameter ``sigma2``) with the
        conjugate prior ``beta | sigma2 ~ N(prior_mean, sigma2 prior_sd^2 I)``,
        ``sigma2 ~ InvGamma(sigma2_prior)``.
    m : float, array_like of shape (p,), or None
        The known predictor mean, or ``None`` to infer it (parameter ``m``) with the prior
        ``N(m_prior[0], m_prior[1]^2 I)``.
    cov : array_like of shape (p, p), optional
        The known predictor covariance :math:`\Sigma`; default the identity (the paper's).
    prior_mean : float or array_like
        Prior mean of ``beta`` (a number is repeated). Default 0, the paper's.
    prior_sd : float
        Prior standard deviation of each ``beta_j`` (with known ``sigma2``; otherwise it is
        scaled by ``sigma``). Default 2, the paper's.
    sigma2_prior : (float, float)
        Shape ``a0`` and scale ``b0`` of the inverse-gamma prior of ``sigma2`` (prior mean
        ``b0 / (a0 - 1)``); used only when ``sigma2=None``.
    m_prior : (float or array_like, float)
        Mean ``m0`` and standard deviation ``s0`` of the prior of each ``m_j``; used only when
        ``m=None``. Default ``(0, 1)``, the distribution the paper drew its ``m`` from.

    Returns
    -------
    dawrap.Model
        Records ``[x_1, ..., x_p, y]``; parameters ``beta`` and, if unknown, ``sigma2``, ``m``;
        with the non-centred parameterisation that enables ``interweave=True``.

    Examples
    --------
    >>> from dawrap.models import linear_regression
    >>> linear_regression.model(p=2).params
    {'beta': (3,)}
    >>> linear_regression.model(p=2, sigma2=None, m=None).params
    {'beta': (3,), 'sigma2': (), 'm': (2,)}
    """
    spec = _spec(p, intercept, sigma2, m, cov, prior_mean, prior_sd, sigma2_prior, m_prior)
    draw_record, theta_support, noncentred = _record_functions(spec)
    unknown = [name for name in ("sigma2", "m") if getattr(spec, name) is None]
    return dw.Model(params=spec.params, record_size=spec.p + 1, draw_record=draw_record,
                    draw_theta=_kernel(spec), draw_prior=_prior_sampler(spec),
                    model_stat=products, stat_size=(spec.p + 2) * (spec.p + 3) // 2,
                    theta_support=theta_support, noncentred=noncentred,
                    name=f"linear_regression(p={spec.p}, intercept={spec.intercept}, "
                         f"sigma2={spec.sigma2}, m={spec.m}; unknown: "
                         f"{', '.join(['beta', *unknown])})")


@dw.recipe
def laplace(epsilon: float, p: int, bounds_x, bound_y, *, intercept: bool = True,
            sensitivity: float | None = None) -> dw.Laplace:
    """The clamped, rescaled cross-products with Laplace noise (epsilon-DP).

    Parameters
    ----------
    epsilon : float
        The privacy budget.
    p : int
        Number of predictors.
    bounds_x : float, array_like of shape (p,) or (p, 2)
        Clamping bounds of the predictors: ``D`` (all in ``[-D, D]``), one ``D_j`` per
        predictor, or one ``(lower_j, upper_j)`` pair per predictor.
    bound_y : float or (float, float)
        Clamping bounds of the response: ``D`` or ``(lower, upper)``.
    intercept : bool
        Release the linear sums (the intercept row of ``x~^T x~`` and ``sum y~``), as the paper.
    sensitivity : float, optional
        The noise is Laplace(``sensitivity / epsilon``) per coordinate. Default the exact L1
        sensitivity (:func:`sensitivity`); a larger value, e.g. the paper's 13, reproduces a
        release made with it. A smaller one is refused: the release would not be epsilon-DP.

    Returns
    -------
    dawrap.Laplace
        Of the statistic :func:`clamped_products`, one noisy sum per product.

    Examples
    --------
    >>> from dawrap.models import linear_regression
    >>> linear_regression.laplace(1.0, p=2, bounds_x=10.0, bound_y=10.0)
    Laplace(clamped, epsilon=1, sensitivity=9.375, scale=9.375, size=9)
    """
    p = _check_p(p)
    intercept = _check_flag(intercept, "intercept")
    exact = _exact_sensitivity(p, intercept)
    if sensitivity is None:
        sensitivity = exact
    elif positive("sensitivity", sensitivity) < exact * (1 - 1e-12):
        raise ValueError(f"sensitivity must be at least the L1 sensitivity {exact:g} of the "
                         f"release (p={p}, intercept={intercept}), got {sensitivity:g}: the "
                         f"release would not be epsilon-DP")
    return dw.Laplace(clamped_products(p, bounds_x, bound_y, intercept), epsilon=epsilon,
                      sensitivity=sensitivity, size=_release_size(p, intercept))


def nonprivate_posterior(records, **settings) -> dict:
    r"""The conjugate posterior given the confidential records, as frozen ``scipy.stats``
    marginals keyed like the model's parameters.

    ``settings`` are :func:`model`'s keyword arguments; ``p``, if given, must be the records'
    width less one.
    With :math:`P` the posterior precision and :math:`\mu` the mean of the module doc:

    * ``"beta"``: a list of ``norm(mu_j, sqrt(P^{-1}_jj))`` (known ``sigma2``), or of
      Student-t ``t(2 a_n, mu_j, sqrt(b_n / a_n P^{-1}_jj))`` (unknown ``sigma2``, the
      normal-inverse-gamma marginal);
    * ``"sigma2"`` (unknown ``sigma2``): ``invgamma(a_n, scale=b_n)``,
      :math:`a_n = a_0 + n/2`, :math:`b_n = b_0 + \tfrac12(y^\top y + \mu_0^\top\mu_0/\tau^2 -
      \mu^\top P \mu)`;
    * ``"m"`` (unknown ``m``): a list of normals, precision :math:`n\Sigma^{-1} + I/s_0^2`.

    Parameters
    ----------
    records : array_like of shape (n, p + 1)
        Rows ``[x_1, ..., x_p, y]``.
    **settings
        :func:`model`'s keyword arguments.

    Returns
    -------
    dict of str -> list or scipy.stats distribution
        Keyed like the model's parameters (above).

    Examples
    --------
    200 records from ``y = 1 + 2 x_1 - x_2 + N(0, 2)``:

    >>> import numpy as np
    >>> from dawrap.models import linear_regression
    >>> rng = np.random.default_rng(0)
    >>> x0 = rng.normal(size=(200, 2))
    >>> y = 1.0 + x0 @ [2.0, -1.0] + rng.normal(0.0, np.sqrt(2.0), 200)
    >>> posterior = linear_regression.nonprivate_posterior(np.column_stack([x0, y]), sigma2=2.0)
    >>> [bool(abs(b.mean() - truth) < 4 * b.std())
    ...  for b, truth in zip(posterior["beta"], [1.0, 2.0, -1.0])]
    [True, True, True]
    """
    from scipy import stats

    arr = np.asarray(records)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"records must be an array of numbers, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 2:
        raise ValueError(f"records must have shape (n, p + 1) with rows [x_1..x_p, y], "
                         f"got shape {arr.shape}")
    arr = arr.astype(float)
    if not np.all(np.isfinite(arr)):
        raise ValueError("records must be finite")
    p = _check_p(settings.pop("p", arr.shape[1] - 1))
    if p != arr.shape[1] - 1:
        raise ValueError(f"records must have p + 1 = {p + 1} columns [x_1..x_{p}, y], got "
                         f"{arr.shape[1]}")
    spec = _spec(p=p, **settings)
    n, x0, y = arr.shape[0], arr[:, :-1], arr[:, -1]
    x = np.column_stack([np.ones(n), x0]) if spec.intercept else x0
    mu0, tau2 = np.array(spec.prior_mean), spec.prior_sd ** 2
    out = {}
    if spec.sigma2 is None:
        precision = x.T @ x + np.eye(spec.q) / tau2
        cov = np.linalg.inv(precision)
        mean = cov @ (x.T @ y + mu0 / tau2)
        a_n = spec.sigma2_prior[0] + n / 2
        b_n = spec.sigma2_prior[1] + (y @ y + mu0 @ mu0 / tau2 - mean @ precision @ mean) / 2
        out["beta"] = [stats.t(2 * a_n, mean[j], math.sqrt(b_n / a_n * cov[j, j]))
                       for j in range(spec.q)]
        out["sigma2"] = stats.invgamma(a_n, scale=b_n)
    else:
        cov = np.linalg.inv(x.T @ x / spec.sigma2 + np.eye(spec.q) / tau2)
        mean = cov @ (x.T @ y / spec.sigma2 + mu0 / tau2)
        out["beta"] = [stats.norm(mean[j], math.sqrt(cov[j, j])) for j in range(spec.q)]
    if spec.m is None:
        sigma_inv = np.linalg.inv(np.array(spec.cov))
        s0_2 = spec.m_prior_sd ** 2
        cov_m = np.linalg.inv(n * sigma_inv + np.eye(spec.p) / s0_2)
        mean_m = cov_m @ (sigma_inv @ x0.sum(0) + np.array(spec.m_prior_mean) / s0_2)
        out["m"] = [stats.norm(mean_m[j], math.sqrt(cov_m[j, j])) for j in range(spec.p)]
    return out


def published_settings() -> dict:
    r"""The simulation settings of Ju et al. (2022), Sec. 5 and supplement S-5.

    ``"model"`` and ``"mechanism"`` are keyword arguments for :func:`model` and
    :func:`laplace` (add ``epsilon``): p = 2 predictors with an intercept,
    :math:`x_0 \sim N((0.9, -1.17), I)`, ``sigma2 = 2`` known, ``beta ~ N(0, 2^2 I)``,
    everything clamped to [-10, 10], and the authors' sensitivity 13 (the exact value is
    9.375, see the module doc). ``"beta"`` is the true coefficient vector of their coverage
    study (drawn once from the prior; printed to two decimals in the
    supplement's Table 1), and the rest is
    the study's design: n, the epsilon grid, replicates per epsilon, iterations, burn-in and
    the credible level.

    Returns
    -------
    dict
        With keys ``model``, ``mechanism``, ``beta``, ``n``, ``epsilons``, ``replicates``,
        ``iterations``, ``burn_in`` and ``interval``.

    Examples
    --------
    >>> from dawrap.models import linear_regression
    >>> settings = linear_regression.published_settings()
    >>> settings["n"], settings["beta"], settings["mechanism"]["sensitivity"]
    (100, array([-1.79, -2.89, -0.66]), 13.0)
    """
    return {
        "model": {"p": 2, "intercept": True, "sigma2": 2.0, "m": (0.9, -1.17),
                  "cov": ((1.0, 0.0), (0.0, 1.0)), "prior_mean": 0.0, "prior_sd": 2.0},
        "mechanism": {"p": 2, "bounds_x": 10.0, "bound_y": 10.0, "intercept": True,
                      "sensitivity": 13.0},
        "beta": np.array([-1.79, -2.89, -0.66]),
        "n": 100, "epsilons": (0.1, 0.3, 1.0, 3.0, 10.0), "replicates": 100,
        "iterations": 10000, "burn_in": 5000, "interval": 0.90,
    }
