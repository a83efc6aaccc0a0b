r"""Normal records with known standard deviation and a Normal prior on the mean.

.. math:: \mu \sim N(\mu_0, s_0^2), \quad x_i \mid \mu \sim N(\mu, \sigma^2), \quad
          s_{dp} = \textstyle\sum_i \mathrm{clamp}(x_i, l, u) + \text{noise}.

A DP release clamps each record to ``[lower, upper]`` (sensitivity ``upper - lower``);
``gaussian(sigma=...)`` releases the unclamped sum with Gaussian noise, whose posterior has a
closed form (useful for testing and for the fraction-of-missing-information studies).

Examples
--------
>>> import dawrap as dw
>>> from dawrap.models import normal_mean
>>> model = normal_mean.model(mu0=0, sd0=10, sigma=1)
>>> mech = normal_mean.laplace(epsilon=1.0, lower=-5, upper=5)
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np

import dawrap as dw

from ._shared import positive, truncated_laplace

__all__ = ["model", "total", "clamped_total", "draw_record_factory", "laplace", "gaussian",
           "laplace_truncated", "family", "exact_posterior_gaussian"]


@numba.njit(nogil=True, cache=True)
def total(x_i, out):
    """The record itself, the unclamped sum's contribution (and the model statistic): writes
    the record ``x_i`` (shape (1,)) into ``out`` (shape (1,)), as
    :func:`dawrap.models.beta_binomial.count` does; :func:`gaussian`
    releases its sum.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import normal_mean
    >>> out = np.empty(1); normal_mean.total(np.array([-1.5]), out); out
    array([-1.5])
    """
    out[0] = x_i[0]


@functools.lru_cache(maxsize=64)
def clamped_total(lower: float, upper: float):
    """The released statistic ``clamp(x_i, lower, upper)`` (compiled, cached per bounds).

    Parameters
    ----------
    lower, upper : float
        The bounds, ``lower < upper``.

    Returns
    -------
    numba.njit function
        ``(x_i, out)``, the statistic :func:`laplace` releases.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import normal_mean
    >>> out = np.empty(1)
    >>> normal_mean.clamped_total(-5.0, 5.0)(np.array([-7.5]), out)
    >>> out
    array([-5.])
    """
    lower, upper = _check_bounds(lower, upper)

    @numba.njit(nogil=True)
    def clamped(x_i, out):
        out[0] = min(max(x_i[0], lower), upper)

    return clamped


def _check_bounds(lower, upper):
    lower, upper = float(lower), float(upper)
    if not (np.isfinite(lower) and np.isfinite(upper) and lower < upper):
        raise ValueError(f"lower and upper must be finite with lower < upper, "
                         f"got {lower}, {upper}")
    return lower, upper


@functools.lru_cache(maxsize=64)
def draw_record_factory(sigma: float):
    """The record sampler ``x_i ~ N(mu, sigma^2)`` for a known ``sigma`` (cached).

    Parameters
    ----------
    sigma : float
        The records' standard deviation.

    Returns
    -------
    numba.njit function
        ``draw_record(rng, theta, out)`` with ``theta = [mu]``.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import normal_mean
    >>> draw_record = normal_mean.draw_record_factory(2.0)
    >>> rng, out = np.random.default_rng(0), np.empty(1)
    >>> draws = []
    >>> for _ in range(4000):
    ...     draw_record(rng, np.array([1.0]), out)
    ...     draws.append(out[0])
    >>> bool(abs(np.mean(draws) - 1.0) < 4 * 2.0 / np.sqrt(4000))
    True
    """

    @numba.njit(nogil=True, cache=True)
    def draw_record(rng, theta, out):
        out[0] = theta[0] + sigma * rng.standard_normal()

    return draw_record


@numba.njit(nogil=True, cache=True)
def conjugate_draw(rng, mu0, sd0, sigma, total, n):
    """mu | x ~ N(mean, 1 / precision), precision = 1/sd0^2 + n/sigma^2: an exact draw."""
    precision = 1.0 / sd0 ** 2 + n / sigma ** 2
    mean = (mu0 / sd0 ** 2 + total / sigma ** 2) / precision
    return np.array([mean + rng.standard_normal() / np.sqrt(precision)])


@functools.lru_cache(maxsize=64)
def _conjugate_kernel(mu0: float, sd0: float, sigma: float):
    # The closure binds the hyperparameters; the disk-cached conjugate_draw does the work.
    @numba.njit(nogil=True, cache=True)
    def draw_theta(rng, theta, x, stats):
        return conjugate_draw(rng, mu0, sd0, sigma, stats[0], x.shape[0])

    return draw_theta


@functools.lru_cache(maxsize=64)
def _noncentred(mu0: float, sd0: float, sigma: float) -> dw.NonCentred:
    """x_i = mu + sigma z_i with z_i ~ N(0, 1): the record moves with mu."""

    @numba.njit(nogil=True, cache=True)
    def record_from_noise(theta, z_i, out):
        out[0] = theta[0] + sigma * z_i[0]

    @numba.njit(nogil=True, cache=True)
    def noise_from_record(rng, theta, x_i, z_out):
        z_out[0] = (x_i[0] - theta[0]) / sigma

    @numba.njit(nogil=True, cache=True)
    def log_prior(theta):
        return -0.5 * ((theta[0] - mu0) / sd0) ** 2

    return dw.NonCentred(record_from_noise, noise_from_record, log_prior, noise_size=1,
                         initial_scale=0.1 * min(sd0, sigma))


@numba.njit(nogil=True, cache=True)
def valid(s, n):
    return True


@numba.njit(nogil=True, cache=True)
def project(s, n):
    return s.copy()


@functools.lru_cache(maxsize=64)
def family(mu0: float = 0.0, sd0: float = 1.0, sigma: float = 1.0) -> dw.ExponentialFamily:
    """The exponential-family description: natural parameter mu / sigma^2, t(x) = x.

    Parameters
    ----------
    mu0, sd0 : float
        The Normal prior's mean and sd.
    sigma : float
        The records' sd.

    Returns
    -------
    dawrap.ExponentialFamily
        Cached per argument values.

    Examples
    --------
    >>> from dawrap.models import normal_mean
    >>> fam = normal_mean.family(0.0, 10.0, 1.0)
    >>> fam is normal_mean.model(mu0=0, sd0=10, sigma=1).family
    True
    """
    var = sigma * sigma

    @numba.njit(nogil=True, cache=True)
    def natural(theta):
        return theta[0] / var

    @numba.njit(nogil=True, cache=True)
    def log_partition(eta):
        return 0.5 * var * eta[0] * eta[0]

    @numba.njit(nogil=True, cache=True)
    def mean_cov(theta):
        return np.array([theta[0]]), np.array([[var]])

    @numba.njit(nogil=True, cache=True)
    def cdf(x, eta):
        return 0.5 * math.erfc(-(x - eta * var) / (sigma * math.sqrt(2.0)))

    @numba.njit(nogil=True, cache=True)
    def sf(x, eta):
        return 0.5 * math.erfc((x - eta * var) / (sigma * math.sqrt(2.0)))

    @numba.njit(nogil=True, cache=True)
    def posterior_draw(rng, s, n):
        return conjugate_draw(rng, mu0, sd0, sigma, s[0], n)

    return dw.ExponentialFamily(total, 1, mean_cov, posterior_draw, valid, bounded=False,
                                natural=natural, cdf=cdf, sf=sf, log_partition=log_partition,
                                project=project)


@dw.recipe
def model(mu0: float = 0.0, sd0: float = 1.0, sigma: float = 1.0) -> dw.Model:
    """Normal records with known ``sigma``; prior ``N(mu0, sd0^2)`` on the parameter ``mu``.

    Parameters
    ----------
    mu0 : float
        The prior mean.
    sd0, sigma : float
        The prior sd and the records' sd (positive).

    Returns
    -------
    dawrap.Model
        A conjugate ``draw_theta``, the family and a non-centred map (``interweave``).

    Examples
    --------
    >>> from dawrap.models import normal_mean
    >>> normal_mean.model(mu0=0, sd0=10, sigma=1)
    Model(normal_mean(mu0=0, sd0=10, sigma=1); params {mu: ()}, record_size=1)
    """
    mu0 = float(mu0)
    if not np.isfinite(mu0):
        raise ValueError(f"mu0 must be finite, got {mu0}")
    sd0, sigma = positive("sd0", sd0), positive("sigma", sigma)
    return dw.Model(params={"mu": ()}, record_size=1, draw_record=draw_record_factory(sigma),
                    draw_theta=_conjugate_kernel(mu0, sd0, sigma), model_stat=total,
                    stat_size=1, draw_prior=lambda rng: np.array([rng.normal(mu0, sd0)]),
                    family=family(mu0, sd0, sigma), noncentred=_noncentred(mu0, sd0, sigma),
                    name=f"normal_mean(mu0={mu0:g}, sd0={sd0:g}, sigma={sigma:g})")


@dw.recipe
def laplace(epsilon: float, lower: float, upper: float) -> dw.Laplace:
    """The sum of records clamped to ``[lower, upper]`` with Laplace noise (epsilon-DP).

    Parameters
    ----------
    epsilon : float
        The privacy budget.
    lower, upper : float
        The clamp bounds; the sensitivity is ``upper - lower``.

    Returns
    -------
    dawrap.Laplace
        Of the statistic :func:`clamped_total` (compiled once per bounds).

    Examples
    --------
    >>> from dawrap.models import normal_mean
    >>> mech = normal_mean.laplace(epsilon=1.0, lower=-5, upper=5)
    >>> mech
    Laplace(clamped, epsilon=1, sensitivity=10, scale=10, size=1)
    >>> mech.total([1.0, 7.0, -9.0])                       # 1 + 5 - 5
    array([1.])
    """
    lower, upper = _check_bounds(lower, upper)
    return dw.Laplace(clamped_total(lower, upper), epsilon=epsilon, sensitivity=upper - lower)


@dw.recipe
def laplace_truncated(epsilon: float, lower: float, upper: float) -> dw.Laplace:
    """The total of records inside ``[lower, upper]`` (others dropped) with Laplace noise:
    the Bernstein-Sheldon release, which both samplers accept.

    Sensitivity ``max(|lower|, |upper|, upper - lower)``: a record may move from outside the
    bounds (contributing 0) to a bound, or across the interval.

    Parameters
    ----------
    epsilon : float
        The privacy budget.
    lower, upper : float
        The bounds.

    Returns
    -------
    dawrap.Laplace
        With ``truncation=(lower, upper)``, of the family's truncated statistic
        (:meth:`dawrap.ExponentialFamily.truncated_statistic`).

    Examples
    --------
    >>> from dawrap.models import normal_mean
    >>> mech = normal_mean.laplace_truncated(epsilon=1.0, lower=-5, upper=5)
    >>> mech.total([1.0, 7.0, -3.0])                       # 7.0 is dropped
    array([-2.])
    """
    lower, upper = _check_bounds(lower, upper)
    return truncated_laplace(family(), epsilon, lower, upper)


@dw.recipe
def gaussian(sigma: float) -> dw.Gaussian:
    """The unclamped sum with Gaussian noise of standard deviation ``sigma`` (not DP: the
    unclamped sum has unbounded sensitivity; for testing and method studies).

    Parameters
    ----------
    sigma : float
        The noise sd.

    Returns
    -------
    dawrap.Gaussian
        Of the statistic :func:`total`; :func:`exact_posterior_gaussian` is its exact
        posterior.

    Examples
    --------
    >>> from dawrap.models import normal_mean
    >>> normal_mean.gaussian(sigma=10.0)
    Gaussian(total, sigma=10, size=1)
    """
    return dw.Gaussian(total, sigma=sigma)


def exact_posterior_gaussian(s_dp, n: int, noise_sigma: float, mu0: float = 0.0,
                             sd0: float = 1.0, sigma: float = 1.0):
    r"""Closed-form posterior of ``mu`` given the unclamped sum with Gaussian noise.

    :math:`s_{dp} \mid \mu \sim N(n\mu,\ n\sigma^2 + \tau^2)`, so the posterior is normal with
    precision :math:`1/s_0^2 + n^2/(n\sigma^2+\tau^2)`.

    Parameters
    ----------
    s_dp : float
        The release.
    n : int
        Number of records.
    noise_sigma : float
        The noise sd :math:`\tau`.
    mu0, sd0, sigma : float
        As for :func:`model`.

    Returns
    -------
    scipy.stats.norm
        The posterior, a frozen normal distribution.

    Examples
    --------
    Precision :math:`1 + 100^2/(100 + 10^2) = 51`, mean :math:`(100/200)\, 52 / 51`:

    >>> from dawrap.models import normal_mean
    >>> exact = normal_mean.exact_posterior_gaussian(52.0, n=100, noise_sigma=10.0)
    >>> round(float(exact.mean()), 4), round(float(exact.std()), 4)
    (0.5098, 0.14)
    """
    from scipy import stats

    s = float(np.asarray(s_dp).ravel()[0])
    if not np.isfinite(s):
        raise ValueError(f"s_dp must be finite, got {s}")
    v = n * sigma ** 2 + noise_sigma ** 2
    precision = 1.0 / sd0 ** 2 + n ** 2 / v
    # (n / v) * s, not n * s / v: the product n * s overflows for a release near the largest
    # float although the posterior mean (about s / n) is representable.
    mean = (mu0 / sd0 ** 2 + (n / v) * s) / precision
    return stats.norm(mean, 1.0 / np.sqrt(precision))
