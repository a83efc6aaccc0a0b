"""Truncated moments (Lemma 1 by numerical derivatives) against direct numerical integration."""
import math

import numba
import numpy as np
import pytest
from scipy import integrate, stats

import dawrap as dw
from dawrap.model.family import interval_probability, truncated_moments
from dawrap.models import beta_binomial, gamma_exponential, normal_mean, poisson_gamma

INF = math.inf


def _moments(family, theta, v, w):
    mu, cov = family.mean_cov(np.array([theta]))
    eta = family.natural(np.array([theta]))
    return truncated_moments(family.cdf, family.sf, eta, mu[0], cov[0, 0], v, w,
                             family.discrete)


def _continuous_reference(dist, v, w):
    lo, hi = max(v, dist.support()[0]), min(w, dist.support()[1])
    q = dist.cdf(hi) - dist.cdf(lo)
    m1 = integrate.quad(lambda x: x * dist.pdf(x), lo, hi, epsabs=0, epsrel=1e-13)[0] / q
    m2 = integrate.quad(lambda x: (x - m1) ** 2 * dist.pdf(x), lo, hi, epsabs=0,
                        epsrel=1e-13)[0] / q
    return q, m1, m2


# Tolerances: the fourth-order differences have truncation error ~h^4 f^(5) and rounding
# error ~1e-16/h^2 relative in the variance (h = 1e-3 / sd): 1e-9 / 1e-6 relative.
@pytest.mark.parametrize("lam, v, w", [(1.0, 0.5, 3.0), (0.2, -INF, 2.0), (3.0, 2.0, INF),
                                       (0.05, 0.0, 40.0), (8.0, 0.01, 0.2)])
def test_exponential(lam, v, w):
    got = _moments(gamma_exponential.family(), lam, v, w)
    ref = _continuous_reference(stats.expon(scale=1 / lam), v, w)
    assert got[0] == pytest.approx(ref[0], rel=1e-12)
    assert got[1] == pytest.approx(ref[1], rel=1e-9)
    assert got[2] == pytest.approx(ref[2], rel=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("mu, v, w", [(0.0, -1.0, 2.0), (1.0, -INF, -3.0), (-2.0, 4.0, INF),
                                      (50.0, 40.0, 45.0)])
def test_normal(mu, v, w):
    sigma = 2.0
    got = _moments(normal_mean.family(0.0, 1.0, sigma), mu, v, w)
    ref = _continuous_reference(stats.norm(mu, sigma), v, w)
    assert got[0] == pytest.approx(ref[0], rel=1e-10)
    assert got[1] == pytest.approx(ref[1], rel=1e-9)
    assert got[2] == pytest.approx(ref[2], rel=1e-6)


@pytest.mark.parametrize("lam, v, w", [(3.0, 2, 8), (3.0, -INF, 1), (3.0, 9, INF),
                                       (40.0, 10, 30), (0.5, 5, INF), (200.0, 150, 250)])
def test_poisson(lam, v, w):
    got = _moments(poisson_gamma.family(), lam, v, w)
    k = np.arange(0, 5000)
    p = stats.poisson.pmf(k, lam)
    inside = (k >= v) & (k <= w)
    q = p[inside].sum()
    mean = (k[inside] * p[inside]).sum() / q
    var = ((k[inside] - mean) ** 2 * p[inside]).sum() / q
    assert got[0] == pytest.approx(q, rel=1e-10)
    assert got[1] == pytest.approx(mean, rel=1e-9)
    assert got[2] == pytest.approx(var, rel=1e-6)


def test_small_tail_probabilities_keep_relative_accuracy():
    fam = poisson_gamma.family()
    eta = math.log(2.0)
    # P(40 <= X <= 45) for Poisson(2) is ~1e-35: no cancellation against 1.
    got = interval_probability(fam.cdf, fam.sf, eta, 40.0, 45.0, True)
    assert got == pytest.approx(stats.poisson.pmf(np.arange(40, 46), 2.0).sum(), rel=1e-12)


def test_truncated_statistic_and_sensitivity():
    fam = gamma_exponential.family()
    stat = fam.truncated_statistic(0.5, 3.0)
    out = np.empty(1)
    for x, expected in [(0.2, 0.0), (0.5, 0.5), (2.0, 2.0), (3.0, 3.0), (3.5, 0.0)]:
        stat(np.array([x]), out)
        assert out[0] == expected
    assert fam.truncated_sensitivity(0.5, 3.0) == 3.0
    assert normal_mean.family().truncated_sensitivity(-4.0, 6.0) == 10.0
    assert normal_mean.family().truncated_sensitivity(-9.0, -1.0) == 9.0
    with pytest.raises(ValueError, match="lower < upper"):
        fam.truncated_statistic(3.0, 1.0)


def test_family_registration_errors():
    fam = gamma_exponential.family()
    with pytest.raises(ValueError, match="natural is required"):
        dw.ExponentialFamily(fam.statistic, 1, fam.mean_cov, fam.conjugate_draw, fam.valid,
                             bounded=False, cdf=fam.cdf, sf=fam.sf)
    with pytest.raises(ValueError, match="univariate"):
        dw.ExponentialFamily(fam.statistic, 2, fam.mean_cov, fam.conjugate_draw, fam.valid,
                             bounded=False, natural=fam.natural, cdf=fam.cdf, sf=fam.sf)
    with pytest.raises(TypeError, match="mean_cov must be a numba.njit"):
        dw.ExponentialFamily(fam.statistic, 1, lambda t: t, fam.conjugate_draw, fam.valid,
                             bounded=True)
    with pytest.raises(TypeError, match="family must be a dawrap.ExponentialFamily"):
        dw.Model(params={"p": ()}, record_size=1, draw_record=gamma_exponential.draw_record,
                 draw_theta=lambda rng, t, x, s: t, draw_prior=lambda rng: 0.5, family="x")


@numba.njit
def exponential_log_partition(eta):
    return -math.log(-eta[0])


@numba.njit
def bernoulli_log_partition(eta):
    return math.log1p(math.exp(eta[0]))


@numba.njit
def logit(theta):
    return math.log(theta[0] / (1 - theta[0]))


@numba.njit
def categorical_log_partition(eta):
    # K = 3 categories, eta = (log p1/p3, log p2/p3): A = log(1 + e^eta1 + e^eta2).
    return math.log1p(math.exp(eta[0]) + math.exp(eta[1]))


@numba.njit
def categorical_natural(theta):
    return np.array([math.log(theta[0] / theta[2]), math.log(theta[1] / theta[2])])


@pytest.mark.slow
def test_mean_and_covariance_from_the_log_partition():
    """mean_cov=None: gradient and Hessian of A(eta), against the closed forms."""
    ge = gamma_exponential.family()
    derived = dw.ExponentialFamily(ge.statistic, 1, None, ge.conjugate_draw, ge.valid,
                                   bounded=False, natural=ge.natural, cdf=ge.cdf, sf=ge.sf,
                                   log_partition=exponential_log_partition)
    for lam in (0.3, 1.0, 7.0):
        mu, cov = derived.mean_cov(np.array([lam]))
        assert mu[0] == pytest.approx(1 / lam, rel=1e-10)
        assert cov[0, 0] == pytest.approx(1 / lam ** 2, rel=1e-7)
    bb = beta_binomial.model().family
    bern = dw.ExponentialFamily(bb.statistic, 1, None, bb.conjugate_draw, bb.valid,
                                bounded=True, natural=logit,
                                log_partition=bernoulli_log_partition)
    mu, cov = bern.mean_cov(np.array([0.2]))
    assert mu[0] == pytest.approx(0.2, rel=1e-10) and cov[0, 0] == pytest.approx(0.16, rel=1e-7)
    cat = dw.ExponentialFamily(bb.statistic, 2, None, bb.conjugate_draw, bb.valid,
                               bounded=True, natural=categorical_natural,
                               log_partition=categorical_log_partition)
    p = np.array([0.2, 0.5, 0.3])
    mu, cov = cat.mean_cov(p)
    assert np.allclose(mu, p[:2], rtol=1e-10, atol=0)
    expected = np.diag(p[:2]) - np.outer(p[:2], p[:2])
    assert np.allclose(cov, expected, rtol=1e-6, atol=0)
    with pytest.raises(ValueError, match="needs natural and log_partition"):
        dw.ExponentialFamily(bb.statistic, 1, None, bb.conjugate_draw, bb.valid, bounded=True)
