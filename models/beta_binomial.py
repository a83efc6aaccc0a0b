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
>>> s_dp = mech.release(x, seed=2)
>>> idata = dw.sample(model, mech, s_dp, n=1000, draws=500, tune=200, chains=1, seed=3,
...                   progress=False)              # reduced size: the defaults are larger
>>> p = dw.diagnostics.group(idata, "posterior")["p"]
>>> exact = beta_binomial.exact_posterior(mech, s_dp, n=1000)
>>> bool(abs(float(p.mean()) - exact.mean()) < 4 * dw.diagnostics.mcse(p.values))
True
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np

import dawrap as dw

from ._shared import positive

__all__ = ["model", "count", "draw_record", "laplace", "geometric", "exact_posterior"]


@numba.njit(nogil=True, cache=True)
def draw_record(rng, theta, out):
    """One Bernoulli(p) record.

    Parameters
    ----------
    rng : numpy.random.Generator
    theta : ndarray of shape (1,)
        ``[p]``.
    out : ndarray of shape (1,)
        Receives the record, 0.0 or 1.0.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import beta_binomial
    >>> out = np.empty(1)
    >>> beta_binomial.draw_record(np.random.default_rng(0), np.array([1.0]), out)   # p = 1
    >>> out
    array([1.])
    """
    out[0] = 1.0 if rng.random() < theta[0] else 0.0


@numba.njit(nogil=True, cache=True)
def count(x_i, out):
    """The record's contribution to the released count (and the model's sufficient statistic).

    Parameters
    ----------
    x_i : ndarray of shape (1,)
        A record.
    out : ndarray of shape (1,)
        Receives its contribution, the record itself.

    Examples
    --------
    >>> import numpy as np
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> out = np.empty(1)
    >>> beta_binomial.count(np.array([1.0]), out)
    >>> out
    array([1.])
    >>> dw.Laplace(beta_binomial.count, epsilon=1.0).total([1.0, 0.0, 1.0])   # summed
    array([2.])
    """
    out[0] = x_i[0]


@numba.njit(nogil=True, cache=True)
def conjugate_draw(rng, a, b, count, n):
    """p | x ~ Beta(a + count, b + n - count): an exact draw, i.e. a Gibbs step."""
    return np.array([dw.random.beta(rng, a + count, b + n - count)])


@functools.lru_cache(maxsize=64)
def _conjugate_kernel(a: float, b: float):
    # The closure only binds the hyperparameters; the work is in the disk-cached
    # conjugate_draw, so a new (a, b) compiles in a fraction of a second.
    @numba.njit(nogil=True, cache=True)
    def draw_theta(rng, theta, x, stats):
        return conjugate_draw(rng, a, b, stats[0], x.shape[0])

    return draw_theta


@numba.njit(nogil=True, cache=True)
def in_unit_interval(theta):
    """The parameter space: 0 < p < 1."""
    return 0.0 < theta[0] < 1.0


@numba.njit(nogil=True, cache=True)
def is_binary(x_i):
    """A record is 0 or 1."""
    return x_i[0] == 0.0 or x_i[0] == 1.0


@numba.njit(nogil=True, cache=True)
def mean_cov(theta):
    """Mean and variance of one Bernoulli record."""
    p = theta[0]
    return np.array([p]), np.array([[p * (1.0 - p)]])


@numba.njit(nogil=True, cache=True)
def natural(theta):
    """The natural parameter log(p / (1 - p))."""
    p = theta[0]
    return math.log(p) - math.log1p(-p)


@numba.njit(nogil=True, cache=True)
def log_partition(eta):
    """A(eta) = log(1 + e^eta), without overflow."""
    e = eta[0]
    return e + math.log1p(math.exp(-e)) if e > 0.0 else math.log1p(math.exp(e))


@numba.njit(nogil=True, cache=True)
def valid(s, n):
    """A count of n records lies in [0, n]."""
    return 0.0 <= s[0] <= n


@numba.njit(nogil=True, cache=True)
def project(s, n):
    """The nearest valid count."""
    return np.array([min(max(s[0], 0.0), n)])


@numba.njit(nogil=True, cache=True)
def tempered_truncated_beta(rng, alpha, beta, lower, upper):
    """A draw from Beta(alpha, beta) restricted to [lower, upper] (alpha, beta >= 1 here).

    Rejection from the Beta first; when the interval holds little mass, inversion of the CDF
    tabulated on a fine grid of the interval (log-density differences, so no underflow).
    """
    for _ in range(1000):
        p = rng.beta(alpha, beta)
        if lower <= p <= upper:
            return p
    grid = np.linspace(lower, upper, 4001)
    log_d = (alpha - 1.0) * np.log(grid) + (beta - 1.0) * np.log1p(-grid)
    d = np.exp(log_d - log_d.max())
    cdf = np.concatenate((np.zeros(1), np.cumsum(0.5 * (d[1:] + d[:-1]))))
    return np.interp(rng.random() * cdf[-1], cdf, grid)


@numba.njit(nogil=True, cache=True)
def bernoulli_from_uniform(theta, z_i, out):
    """The non-centred record: x_i = 1[u_i < p] with u_i ~ U(0, 1) independent of p."""
    out[0] = 1.0 if z_i[0] < theta[0] else 0.0


@numba.njit(nogil=True, cache=True)
def uniform_given_bernoulli(rng, theta, x_i, z_out):
    """u_i | x_i, p: uniform on [0, p) for a 1, on [p, 1) for a 0."""
    p = theta[0]
    z_out[0] = p * rng.random() if x_i[0] == 1.0 else p + (1.0 - p) * rng.random()


@functools.lru_cache(maxsize=64)
def _noncentred(a: float, b: float) -> dw.NonCentred:
    @numba.njit(nogil=True, cache=True)
    def log_prior(theta):
        p = theta[0]
        if not 0.0 < p < 1.0:
            return -np.inf
        return (a - 1.0) * np.log(p) + (b - 1.0) * np.log1p(-p)

    return dw.NonCentred(bernoulli_from_uniform, uniform_given_bernoulli, log_prior,
                         noise_size=1, initial_scale=0.02)


@functools.lru_cache(maxsize=64)
def _family(a: float, b: float, a0: float):
    # One-posterior-sample (Foulds et al. 2016): the exponential mechanism with utility the log
    # joint density on p in [a0, 1 - a0], where one record moves the log likelihood by at most
    # log((1 - a0) / a0). Budget epsilon: sample the posterior at temperature 2 log((1-a0)/a0)
    # / epsilon, i.e. Beta((a - 1 + s)/T + 1, (b - 1 + n - s)/T + 1) restricted to the interval.
    log_ratio = np.log((1.0 - a0) / a0)

    @numba.njit(nogil=True, cache=True)
    def posterior_draw(rng, s, n):
        return conjugate_draw(rng, a, b, s[0], n)

    @numba.njit(nogil=True, cache=True)
    def ops_draw(rng, s, n, epsilon):
        temperature = 2.0 * log_ratio / epsilon
        alpha = (a - 1.0 + s[0]) / temperature + 1.0
        beta = (b - 1.0 + n - s[0]) / temperature + 1.0
        return np.array([tempered_truncated_beta(rng, alpha, beta, a0, 1.0 - a0)])

    return dw.ExponentialFamily(count, 1, mean_cov, posterior_draw, valid, bounded=True,
                                natural=natural, log_partition=log_partition,
                                project=project, ops_draw=ops_draw)


@dw.recipe
def model(a: float = 1.0, b: float = 1.0, ops_bound: float = 0.1) -> dw.Model:
    """The beta-binomial model with prior ``Beta(a, b)`` on the parameter ``p``.

    ``ops_bound`` is the truncation ``a0`` of the parameter space, ``p in [a0, 1 - a0]``,
    used only by the one-posterior-sample baseline (``method="ops"``).

    Parameters
    ----------
    a, b : float
        The Beta prior's shapes (positive).
    ops_bound : float
        In (0, 0.5).

    Returns
    -------
    dawrap.Model
        One parameter ``p``, one float per record; a conjugate ``draw_theta``, the family
        (``method="suffstat"`` and the baselines) and a non-centred map (``interweave``).

    Examples
    --------
    >>> from dawrap.models import beta_binomial
    >>> model = beta_binomial.model(a=2, b=3)
    >>> model
    Model(beta_binomial(a=2, b=3); params {p: ()}, record_size=1)
    >>> model.simulate({"p": 0.5}, n=4, seed=0).shape
    (4, 1)
    """
    a, b = positive("a", a), positive("b", b)
    if not 0 < positive("ops_bound", ops_bound) < 0.5:
        raise ValueError(f"ops_bound must be in (0, 0.5), got {ops_bound!r}")
    return dw.Model(params={"p": ()}, record_size=1, draw_record=draw_record,
                    draw_theta=_conjugate_kernel(a, b), model_stat=count, stat_size=1,
                    draw_prior=lambda rng: np.array([rng.beta(a, b)]),
                    family=_family(a, b, float(ops_bound)), theta_support=in_unit_interval,
                    record_support=is_binary, noncentred=_noncentred(a, b),
                    name=f"beta_binomial(a={a:g}, b={b:g})")


@dw.recipe
def laplace(epsilon: float) -> dw.Laplace:
    """The count with Laplace noise of scale ``1 / epsilon`` (epsilon-DP).

    Parameters
    ----------
    epsilon : float
        The privacy budget.

    Returns
    -------
    dawrap.Laplace
        Of the statistic :func:`count`, sensitivity 1.

    Examples
    --------
    >>> from dawrap.models import beta_binomial
    >>> beta_binomial.laplace(epsilon=0.5)
    Laplace(count, epsilon=0.5, sensitivity=1, scale=2, size=1)
    """
    return dw.Laplace(count, epsilon=epsilon, sensitivity=1.0)


@dw.recipe
def geometric(epsilon: float) -> dw.Geometric:
    """The count with two-sided geometric noise (epsilon-DP, integer release).

    Parameters
    ----------
    epsilon
        As for :func:`laplace`.

    Returns
    -------
    dawrap.Geometric
        Each record contributes 0 or 1 (``contribution=(0, 1)``): ``release(x,
        secure=True)`` rounds and clamps every record's contribution into [0, 1] before
        adding noise.

    Examples
    --------
    >>> from dawrap.models import beta_binomial
    >>> mech = beta_binomial.geometric(epsilon=0.5)
    >>> x = beta_binomial.model().simulate({"p": 0.3}, n=100, seed=1)
    >>> s_dp = mech.release(x, secure=True)        # exact integer noise, for publication
    >>> bool(s_dp[0] == round(s_dp[0]))
    True
    """
    return dw.Geometric(count, epsilon=epsilon, sensitivity=1.0, contribution=(0, 1))


def exact_posterior(mechanism: dw.Mechanism, s_dp, n: int, a: float = 1.0, b: float = 1.0):
    r"""The exact private posterior of ``p`` when ``mechanism`` releases the count.

    Summing out the count :math:`T \sim \mathrm{BetaBinomial}(n, a, b)`,

    .. math:: p(p \mid s_{dp}) = \sum_{k=0}^n w_k\, \mathrm{Beta}(p; a + k, b + n - k),\quad
              w_k \propto \mathrm{BetaBinomial}(k; n, a, b)\, g(s_{dp}, k),

    a mixture of Betas with no grid error (:class:`dawrap.reference.BetaMixture`). The weights
    are computed in log space from the differences of :math:`\log g` between counts
    (:func:`dawrap.reference.relative_log_g`), so a release far outside ``[0, n]`` gets its exact
    answer (with Laplace noise: :math:`w_k \propto \mathrm{BetaBinomial}(k)\, e^{\epsilon
    k}` for any release above ``n``), not the prior.

    Parameters
    ----------
    mechanism : dawrap.Mechanism
        The mechanism that released the count (its noise density ``g`` is used).
    s_dp : float
        The release.
    n : int
        Number of records.
    a, b : float
        The Beta prior's shapes.

    Returns
    -------
    dawrap.reference.BetaMixture
        A mixture of ``n + 1`` Betas, exact (no grid).

    Examples
    --------
    The README's demonstration: 100 records, epsilon 0.1, release 17.633.

    >>> from dawrap.models import beta_binomial
    >>> exact = beta_binomial.exact_posterior(beta_binomial.laplace(0.1), 17.633, n=100)
    >>> round(exact.mean(), 4), round(exact.std(), 4)
    (0.2071, 0.1187)
    """
    from scipy import stats

    from dawrap.reference import BetaMixture, normalise_log_weights, relative_log_g

    k = np.arange(n + 1)
    log_w = stats.betabinom.logpmf(k, n, a, b) + relative_log_g(mechanism, s_dp, k[:, None])
    return BetaMixture(normalise_log_weights(log_w), a + k, b + n - k)
