r"""Poisson counts with a Gamma prior; the clamped total is released.

.. math:: \lambda \sim \mathrm{Gamma}(\alpha, \text{rate } \beta), \quad
          x_i \mid \lambda \sim \mathrm{Poisson}(\lambda), \quad
          s_{dp} = \textstyle\sum_i \min(x_i, c) + \text{noise}\ (\text{sensitivity } c).

The theta kernel uses the unclamped sum :math:`\sum_i x_i` (the model statistic) while the
mechanism sees the clamped sum: the engine keeps both current. The model's non-centred map
is the inverse CDF, :math:`x_i = F^{-1}(u_i; \lambda)` with :math:`u_i` uniform (exact to the
rounding of the CDF sums); it costs several record updates, so ``dw.sample`` interweaves for
mixing only from missing information 0.85 on, and wherever the release allows separate modes
(a truncated release near zero: :func:`laplace_truncated`).

Examples
--------
>>> import dawrap as dw
>>> from dawrap.models import poisson_gamma
>>> model = poisson_gamma.model(alpha=2, beta=1)
>>> mech = poisson_gamma.laplace(epsilon=1.0, c=5)
>>> x = model.simulate({"lam": 2.0}, n=100, seed=1)
>>> s_dp = mech.release(x, seed=2)        # dw.sample(model, mech, s_dp, n=100) samples
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np

import dawrap as dw

from ._shared import (gamma_rate_model, gamma_rate_noncentred, nearest_nonnegative_total,
                      nonnegative_total, positive, truncated_laplace)

__all__ = ["model", "count", "clamped_count", "draw_record", "laplace", "geometric",
           "laplace_truncated", "family", "exact_posterior"]


@numba.njit(nogil=True, cache=True)
def draw_record(rng, theta, out):
    """One Poisson(lam) record, the count as a float.

    Parameters
    ----------
    rng, theta, out
        As for :func:`dawrap.models.beta_binomial.draw_record`, with ``theta = [lam]``.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import poisson_gamma
    >>> out = np.empty(1)
    >>> poisson_gamma.draw_record(np.random.default_rng(0), np.array([3.0]), out)
    >>> bool(out[0] >= 0 and out[0] == round(out[0]))
    True
    """
    out[0] = float(rng.poisson(theta[0]))


@numba.njit(nogil=True, cache=True)
def count(x_i, out):
    """The model's sufficient statistic, the unclamped count: writes the record ``x_i``
    (shape (1,)) into ``out`` (shape (1,)), as :func:`dawrap.models.beta_binomial.count` does.
    The releases clamp it (:func:`clamped_count`) or truncate it.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import poisson_gamma
    >>> out = np.empty(1); poisson_gamma.count(np.array([7.0]), out); out
    array([7.])
    """
    out[0] = x_i[0]


@functools.lru_cache(maxsize=64)
def clamped_count(c: float):
    """The released statistic ``min(x_i, c)`` (a compiled function, cached per ``c``).

    Parameters
    ----------
    c : int or float
        The clamp, a positive whole number (the release's sensitivity).

    Returns
    -------
    numba.njit function
        ``(x_i, out)``, the statistic :func:`laplace` and :func:`geometric` release.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import poisson_gamma
    >>> out = np.empty(1)
    >>> poisson_gamma.clamped_count(5)(np.array([7.0]), out)
    >>> out
    array([5.])
    >>> poisson_gamma.clamped_count(5) is poisson_gamma.clamped_count(5)   # compiled once
    True
    """
    c = _check_clamp(c)

    @numba.njit(nogil=True)
    def clamped(x_i, out):
        out[0] = min(x_i[0], c)

    return clamped


def _check_clamp(c) -> float:
    # math.isfinite first: int(inf) raises OverflowError, not the error naming c.
    if (not isinstance(c, (int, float, np.integer, np.floating)) or not math.isfinite(c)
            or not c > 0 or c != int(c)):
        raise ValueError(f"c must be a positive whole number, got {c!r}")
    return float(c)


@numba.njit(nogil=True, cache=True)
def conjugate_draw(rng, alpha, beta, total, n):
    """lam | x ~ Gamma(alpha + sum x, rate beta + n): an exact draw."""
    return np.array([dw.random.gamma(rng, alpha + total, 1.0 / (beta + n))])


@functools.lru_cache(maxsize=64)
def _kernels(alpha: float, beta: float):
    # The closures bind the hyperparameters; the disk-cached conjugate_draw does the work.
    @numba.njit(nogil=True, cache=True)
    def draw_theta(rng, theta, x, stats):
        return conjugate_draw(rng, alpha, beta, stats[0], x.shape[0])

    @numba.njit(nogil=True, cache=True)
    def posterior_draw(rng, s, n):
        return conjugate_draw(rng, alpha, beta, s[0], n)

    return draw_theta, posterior_draw


@numba.njit(nogil=True, cache=True)
def _log_pmf(k, eta):
    return k * eta - math.exp(eta) - math.lgamma(k + 1.0)


@numba.njit(nogil=True, cache=True)
def _sum_below(k_max, eta):
    """P(X <= k_max), summed term by term (accurate when k_max is below the mean)."""
    total = 0.0
    for k in range(int(k_max) + 1):
        total += math.exp(_log_pmf(float(k), eta))
    return total


@numba.njit(nogil=True, cache=True)
def _sum_above(k0, eta):
    """P(X >= k0), summed until the terms (decreasing past the mean) stop counting."""
    total, k = 0.0, float(k0)
    while True:
        term = math.exp(_log_pmf(k, eta))
        total += term
        if term <= 1e-17 * total or k > k0 + 100000:
            return total
        k += 1.0


@numba.njit(nogil=True, cache=True)
def cdf(x, eta):
    """P(X <= x) for X ~ Poisson(exp(eta)); the smaller tail is summed directly, so tail
    probabilities keep their relative accuracy."""
    k_max = math.floor(x)
    if k_max < 0:
        return 0.0
    if k_max >= math.exp(eta):
        return 1.0 - _sum_above(k_max + 1.0, eta)
    return _sum_below(k_max, eta)


@numba.njit(nogil=True, cache=True)
def sf(x, eta):
    """P(X >= x) for X ~ Poisson(exp(eta))."""
    k0 = math.ceil(x)
    if k0 <= 0:
        return 1.0
    if k0 <= math.exp(eta):
        return 1.0 - _sum_below(k0 - 1.0, eta)
    return _sum_above(k0, eta)


# The non-centred map: x = F^-1(u; lam) with u ~ Uniform(0, 1). It is many-to-one (each
# count has an interval of u), so z | x, lam is uniform on that interval (Yu & Meng's
# interweaving for discrete records; beta_binomial's map is the case of one Bernoulli
# trial), and the move is exact to the rounding of the CDF sums. u is stored as z = u up to
# SPLIT and as z = u - 1 (that is, -(1 - u)) above it: the CDF is summed from the bottom of
# the window for the first, P(X > k) from its top for the second, so that the upper tail
# keeps the relative accuracy that 1 - F(k) would lose, while nearly every record needs
# only the short sum from the bottom. The window holds every count whose probability is
# representable (WINDOW_SDS standard deviations and WINDOW_PAD counts on either side of
# lam); the pmf is computed by recursion from the window's end, and both directions of the
# map walk the same terms in the same order, so that record_from_noise(lam,
# noise_from_record(lam, x)) is exactly x.

#: Half-width of the window, in standard deviations of Poisson(lam), plus a pad.
WINDOW_SDS, WINDOW_PAD = 12.0, 40.0
#: u up to SPLIT is located from the bottom of the window, above it from the top.
SPLIT = 0.999


@numba.njit(nogil=True, cache=True)
def _window(lam):
    spread = WINDOW_SDS * math.sqrt(lam) + WINDOW_PAD
    return max(0.0, math.floor(lam - spread)), math.ceil(lam + spread)


@numba.njit(nogil=True, cache=True)
def _log_pmf_at(k, lam):
    return k * math.log(lam) - lam - math.lgamma(k + 1.0)


@numba.njit(nogil=True, cache=True)
def record_from_noise(theta, z_i, out):
    """x = F^-1(u; lam), u given by z (see the comment above); NaN for a NaN z."""
    lam, z = theta[0], z_i[0]
    bottom, top = _window(lam)
    if z >= 0.0:  # u = z: the smallest k with F(k) > u, F summed from the bottom
        p, cumulative, k = math.exp(_log_pmf_at(bottom, lam)), 0.0, bottom
        while k < top:
            cumulative += p
            if cumulative > z:
                break
            k += 1.0
            p *= lam / k
        out[0] = k
    elif z < 0.0:  # 1 - u = -z: the smallest k with P(X > k) < -z, summed from the top
        p, tail, k = math.exp(_log_pmf_at(top, lam)), 0.0, top
        while k > bottom:
            if tail + p >= -z:  # P(X > k - 1) >= -z > P(X > k)
                break
            tail += p
            p *= k / lam
            k -= 1.0
        out[0] = k
    else:
        out[0] = np.nan


@numba.njit(nogil=True, cache=True)
def _below(k, lam, bottom):
    """``(F(k - 1), F(k))``, summed from the bottom of the window as record_from_noise sums
    them."""
    p, cumulative, j = math.exp(_log_pmf_at(bottom, lam)), 0.0, bottom
    while j < k:
        cumulative += p
        j += 1.0
        p *= lam / j
    return cumulative, cumulative + p


@numba.njit(nogil=True, cache=True)
def _above(k, lam, top):
    """``(P(X > k), P(X > k - 1))``, summed from the top of the window as record_from_noise
    sums them."""
    p, tail, j = math.exp(_log_pmf_at(top, lam)), 0.0, top
    while j > k:
        tail += p
        p *= j / lam
        j -= 1.0
    return tail, tail + p


@numba.njit(nogil=True, cache=True)
def noise_from_record(rng, theta, x_i, z_out):
    """z | x, lam: uniform on the set of z that record_from_noise maps to the count x (its
    part in each half, in proportion to their lengths); NaN for a count outside the window
    (probability below about 1e-30 under lam), which the move then reports."""
    lam, k = theta[0], x_i[0]
    bottom, top = _window(lam)
    if not bottom <= k <= top:
        z_out[0] = np.nan
        return
    # The count's interval of u, [F(k - 1), F(k)), in each representation: z in [0, SPLIT]
    # from the bottom's sums; -z in (0, 1 - SPLIT) from the top's, needed only where the
    # interval reaches above SPLIT.
    low_a, low_b = _below(k, lam, bottom)
    high_a = high_b = 0.0
    if low_b > SPLIT:
        high_a, high_b = _above(k, lam, top)
    low_b, high_b = min(low_b, SPLIT), min(high_b, 1.0 - SPLIT)
    lower, upper = max(low_b - low_a, 0.0), max(high_b - high_a, 0.0)
    if not lower + upper > 0.0:
        z_out[0] = np.nan
        return
    r = rng.random() * (lower + upper)
    if r < lower:
        z = low_a + r
        z_out[0] = z if z < low_b or low_b == SPLIT else low_a
    else:
        v = high_b - (r - lower)  # in (high_a, high_b]
        z_out[0] = -(v if v > high_a else high_b)


@numba.njit(nogil=True, cache=True)
def is_count(x_i):
    """A record is a non-negative integer."""
    return x_i[0] >= 0.0 and x_i[0] == math.floor(x_i[0])


@numba.njit(nogil=True, cache=True)
def natural(theta):
    return math.log(theta[0])


@numba.njit(nogil=True, cache=True)
def log_partition(eta):
    """A(eta) = e^eta."""
    return math.exp(eta[0])


@numba.njit(nogil=True, cache=True)
def mean_cov(theta):
    return np.array([theta[0]]), np.array([[theta[0]]])


@functools.lru_cache(maxsize=64)
def family(alpha: float = 1.0, beta: float = 1.0) -> dw.ExponentialFamily:
    """The exponential-family description (natural parameter log lam, integer records).

    Parameters
    ----------
    alpha, beta : float
        The Gamma prior's shape and rate.

    Returns
    -------
    dawrap.ExponentialFamily
        What ``method="suffstat"`` and the baselines need (cached per prior).

    Examples
    --------
    >>> from dawrap.models import poisson_gamma
    >>> fam = poisson_gamma.family(alpha=2.0, beta=1.0)
    >>> fam.discrete, fam.bounded                  # integer records, unbounded counts
    (True, False)
    """
    return dw.ExponentialFamily(count, 1, mean_cov, _kernels(alpha, beta)[1],
                                nonnegative_total, bounded=False, natural=natural, cdf=cdf,
                                sf=sf, discrete=True, log_partition=log_partition,
                                project=nearest_nonnegative_total)


@dw.recipe
def model(alpha: float = 1.0, beta: float = 1.0) -> dw.Model:
    """The Poisson-gamma model, prior ``Gamma(alpha, rate=beta)`` on the parameter ``lam``.

    Parameters
    ----------
    alpha, beta : float
        The Gamma prior's shape and rate (positive).

    Returns
    -------
    dawrap.Model
        A conjugate ``draw_theta`` on the unclamped total, and the family.

    Examples
    --------
    >>> from dawrap.models import poisson_gamma
    >>> poisson_gamma.model(alpha=2, beta=1)
    Model(poisson_gamma(alpha=2, beta=1); params {lam: ()}, record_size=1)
    """
    alpha, beta = positive("alpha", alpha), positive("beta", beta)
    # The map sums the CDF over about 12 sds of counts per record and step, several record
    # updates' worth: the move pays for itself from missing information 0.85 on
    # (benchmarks/results/modes.md), not the 0.3 of the cheap maps.
    noncentred = gamma_rate_noncentred(record_from_noise, noise_from_record, alpha, beta,
                                       threshold=0.85)
    return gamma_rate_model("poisson_gamma", alpha, beta, draw_record=draw_record,
                            draw_theta=_kernels(alpha, beta)[0], model_stat=count,
                            family=family(alpha, beta), record_support=is_count,
                            noncentred=noncentred)


@dw.recipe
def laplace(epsilon: float, c: float) -> dw.Laplace:
    """The total of counts clamped at ``c`` with Laplace noise of scale ``c / epsilon``.

    Parameters
    ----------
    epsilon : float
        The privacy budget.
    c : int or float
        The clamp (a positive whole number), which is the sensitivity.

    Returns
    -------
    dawrap.Laplace
        Of the statistic :func:`clamped_count` (compiled once per ``c``).

    Examples
    --------
    >>> from dawrap.models import poisson_gamma
    >>> mech = poisson_gamma.laplace(epsilon=1.0, c=5)
    >>> mech
    Laplace(clamped, epsilon=1, sensitivity=5, scale=5, size=1)
    >>> mech.total([3.0, 12.0, 5.0])                       # 3 + 5 + 5
    array([13.])
    """
    c = _check_clamp(c)
    return dw.Laplace(clamped_count(c), epsilon=epsilon, sensitivity=c)


@dw.recipe
def laplace_truncated(epsilon: float, lower: float, upper: float) -> dw.Laplace:
    """The total of the counts inside ``[lower, upper]`` (others dropped) with Laplace noise:
    the Bernstein-Sheldon release, which both samplers accept. Sensitivity ``upper``.

    Parameters
    ----------
    epsilon : float
        The privacy budget.
    lower, upper : int or float
        Whole numbers, ``0 <= lower < upper``.

    Returns
    -------
    dawrap.Laplace
        With ``truncation=(lower, upper)``; :func:`exact_posterior` (``c=None``) is its exact
        posterior.

    Examples
    --------
    >>> from dawrap.models import poisson_gamma
    >>> mech = poisson_gamma.laplace_truncated(epsilon=1.0, lower=0, upper=10)
    >>> mech.truncation, mech.total([3.0, 12.0, 10.0])     # 12 is dropped
    ((0.0, 10.0), array([13.]))
    """
    if not (float(lower) == int(lower) and float(upper) == int(upper) and 0 <= lower < upper):
        raise ValueError(f"lower and upper must be whole numbers with 0 <= lower < upper, "
                         f"got {lower!r}, {upper!r}")
    return truncated_laplace(family(), epsilon, float(lower), float(upper))


@dw.recipe
def geometric(epsilon: float, c: float) -> dw.Geometric:
    """The clamped total with two-sided geometric noise (integer release, epsilon-DP).

    Parameters
    ----------
    epsilon, c
        As for :func:`laplace`.

    Returns
    -------
    dawrap.Geometric
        Each record contributes an integer in [0, c] (``contribution=(0, c)``):
        ``release(x, secure=True)`` rounds and clamps every contribution into it before
        adding noise (negative or NaN records count 0).

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import poisson_gamma
    >>> mech = poisson_gamma.geometric(epsilon=1.0, c=5)
    >>> mech.bounded_total([3.0, 12.0, -1.0, np.nan])        # 3 + 5 + 0 + 0
    [8]
    """
    c = _check_clamp(c)
    return dw.Geometric(clamped_count(c), epsilon=epsilon, sensitivity=c, contribution=(0, c))


def _contribution_log_pmf(lam: np.ndarray, c: int, truncation=None) -> np.ndarray:
    """``log P(contribution = k | lam)`` for ``k = 0..c``, one row per rate: ``min(x, c)``
    (clamped at ``c``), or with ``truncation = (lower, upper)`` (``c = upper``) ``x`` where
    ``lower <= x <= upper`` and 0 otherwise (the dropped counts pile up at 0)."""
    from scipy import stats

    k = np.arange(c + 1)
    if truncation is None:
        return np.concatenate([stats.poisson.logpmf(k[None, :c], lam[:, None]),
                               stats.poisson.logsf(c - 1, lam)[:, None]], axis=1)
    lower = int(truncation[0])
    inside = (k >= max(lower, 1))[None, :]
    log_p = np.where(inside, stats.poisson.logpmf(k[None, :], lam[:, None]), -np.inf)
    # 0: a count below the range (0 included) or above it, or a 0 inside it.
    dropped = np.logaddexp(stats.poisson.logcdf(lower - 1, lam) if lower >= 1
                           else np.full(lam.shape, -np.inf), stats.poisson.logsf(c, lam))
    log_p[:, 0] = np.logaddexp(dropped, stats.poisson.logpmf(0, lam)) if lower == 0 \
        else dropped
    return log_p


def _tilted_log_likelihood(lam: np.ndarray, c: int, n: int, rel: np.ndarray,
                           truncation=None) -> np.ndarray:
    r"""``log sum_S P(S | lam) exp(rel[S])`` for ``S = sum_i min(x_i, c)`` (or, with
    ``truncation``, the sum of the counts inside it: :func:`_contribution_log_pmf`), accurate
    in the tails (``exact_posterior``'s likelihood, up to a constant).

    A plain FFT convolution of the clamped Poisson pmf has an absolute error near 1e-16, so
    where the release sits in the far tail of :math:`P(S \mid \lambda)` (an extreme release,
    or a sharp prior far from it) the noise outweighs the likelihood. So each :math:`\lambda`
    is exponentially tilted, :math:`p_\tau(x) \propto p(x) e^{\tau x}`, which gives
    :math:`P(S) = m(\tau)^n e^{-\tau S} P_\tau(S)` exactly, with :math:`\tau` solving
    :math:`\tau = \partial_S\, \mathrm{rel}` at the tilted mean :math:`n\mu_\tau`
    (bisection; unique when ``rel`` is concave, as for Laplace and Gaussian noise). Then
    :math:`P_\tau(S) e^{\mathrm{rel}(S) - \tau S}` peaks inside the bulk of
    :math:`P_\tau`, where the FFT is accurate, and the entries below 1e-13 of its peak (FFT
    noise) are dropped. For a release above ``n c`` with Laplace noise, ``rel`` has slope
    :math:`\epsilon / c` everywhere and the result is the exact :math:`n \log
    E[e^{\epsilon(\min(x, c) - c)/c}]`.
    """
    from scipy import special

    top = n * c
    x = np.arange(c + 1)
    log_p = _contribution_log_pmf(lam, c, truncation)
    # Slopes of rel between neighbouring totals; -inf (an underflowed weight) as very negative.
    slope = np.diff(np.maximum(rel, -1e300)) if top > 0 else np.zeros(1)
    # Beyond |tau| = 1e4 the tilted pmf is a point mass already (log pmf differences over the
    # grid stay far below that), so a steeper slope changes nothing.
    bound = float(min(np.max(np.abs(slope)), 1e4))

    def tilted(tau):
        ref = np.where(tau > 0, c, 0)[:, None]  # exponents tau (x - ref) <= 0: no overflow
        shifted = log_p + tau[:, None] * (x[None, :] - ref)
        log_m = special.logsumexp(shifted, axis=1)
        return shifted - log_m[:, None], log_m, ref[:, 0]

    lo, hi = np.full(lam.shape, -bound), np.full(lam.shape, bound)
    for _ in range(100):
        tau = 0.5 * (lo + hi)
        log_pt, _, _ = tilted(tau)
        mean = n * (np.exp(log_pt) @ x)
        at = slope[np.clip(np.floor(mean).astype(np.int64), 0, slope.shape[0] - 1)]
        above = tau > at  # f(tau) = tau - slope(mean(tau)) is increasing
        hi = np.where(above, tau, hi)
        lo = np.where(above, lo, tau)
    tau = 0.5 * (lo + hi)
    log_pt, log_m, ref = tilted(tau)

    size = 1 << int(np.ceil(np.log2(top + 1)))
    out = np.empty(lam.shape)
    for block in range(0, lam.shape[0], 256):  # bounded memory: 256 x size complex numbers
        rows = slice(block, block + 256)
        dist = np.fft.irfft(np.fft.rfft(np.exp(log_pt[rows]), size, axis=1) ** n, size,
                            axis=1)[:, :top + 1]
        keep = dist > 1e-13 * dist.max(axis=1, keepdims=True)
        with np.errstate(divide="ignore"):
            log_dist = np.where(keep, np.log(np.where(keep, dist, 1.0)), -np.inf)
        exponent = (log_dist + rel[None, :]
                    + tau[rows, None] * (n * ref[rows, None] - np.arange(top + 1)[None, :]))
        out[rows] = n * log_m[rows] + special.logsumexp(exponent, axis=1)
    return out


def exact_posterior(mechanism: dw.Mechanism, s_dp, n: int, c: float | None = None,
                    alpha: float = 1.0, beta: float = 1.0, grid_size: int = 4000):
    r"""The exact private posterior of ``lam`` when ``mechanism`` releases the total clamped
    at ``c`` (:func:`laplace`), or the total of the counts inside its truncation
    (:func:`laplace_truncated`, ``c=None``), on a grid (:class:`dawrap.reference.Grid`).

    For each grid value of :math:`\lambda` the distribution of
    :math:`S = \sum_i \min(x_i, c)` (or of :math:`S = \sum_i x_i 1[l \le x_i \le u]`) is
    the ``n``-fold convolution of one record's contribution's pmf
    (by FFT, exponentially tilted so that its tails keep their relative accuracy:
    :func:`_tilted_log_likelihood`), and :math:`p(s_{dp} \mid \lambda) = \sum_S P(S \mid
    \lambda)\, g(s_{dp}, S)`, with the differences of :math:`\log g` between totals
    computed exactly however extreme the release (:func:`dawrap.reference.relative_log_g`).

    Parameters
    ----------
    mechanism : dawrap.Mechanism
        The mechanism that released the clamped total.
    s_dp : float
        The release.
    n : int
        Number of records.
    c : int or float or None
        The clamp; ``None`` for a truncated release (``mechanism.truncation``), which has
        none. A truncated release near zero has two explanations (lam near 0, or so large
        that nearly every count exceeds the bound): the grid tabulates both modes.
    alpha, beta
        As for :func:`model`.
    grid_size : int
        Points per region of the grid (:func:`dawrap.reference.positive_grid`).

    Returns
    -------
    dawrap.reference.Grid
        The posterior density of ``lam`` tabulated where its mass is.

    Examples
    --------
    With almost no noise (epsilon 100) and a clamp that almost never binds (P(x > 10) is
    8e-6 at lam = 2), the posterior is nearly the non-private Gamma(2 + 105, rate 1 + 50):

    >>> from dawrap.models import poisson_gamma
    >>> mech = poisson_gamma.laplace(epsilon=100.0, c=10)
    >>> exact = poisson_gamma.exact_posterior(mech, 105.0, n=50, c=10, alpha=2, beta=1)
    >>> round(exact.mean(), 4), round(107 / 51, 4)
    (2.0981, 2.098)
    """
    from scipy import stats

    from dawrap.reference import positive_grid, relative_log_g

    truncation = mechanism.truncation
    if truncation is not None:
        if c is not None:
            raise ValueError(f"c must be None for a truncated release (the mechanism drops "
                             f"the counts outside {truncation}; it clamps none), got {c!r}")
        c = int(truncation[1])
    elif c is None:
        raise ValueError("c (the clamp of poisson_gamma.laplace) is needed for a release "
                         "that is not truncated")
    c = int(_check_clamp(c))
    rel = relative_log_g(mechanism, s_dp, np.arange(n * c + 1)[:, None])

    def log_post(lam):
        return stats.gamma.logpdf(lam, alpha, scale=1.0 / beta) + \
            _tilted_log_likelihood(lam, c, n, rel, truncation)

    # positive_grid finds the mass on a log-spaced pass, its range extended while the ends
    # hold mass (an extreme release can put it far in the prior's tail: the likelihood is at
    # most 1, rel <= 0), and tabulates each region: a release near zero puts the mass in a
    # narrow mode near lam = 0, and a prior of shape below 1 makes the density diverge there,
    # which an evenly spaced grid's trapezoid rule misjudged without bound.
    lower, upper = stats.gamma.ppf([1e-12, 1.0 - 1e-12], alpha, scale=1.0 / beta)
    return positive_grid(log_post, lower, upper + 5.0 * c, points=grid_size)
