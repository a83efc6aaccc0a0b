"""Exact posteriors at extreme releases: each model's ``exact_posterior*`` against an
independent computation (scipy in log space, a closed form, or an analytic limit).

Before, a release far outside the range of the confidential statistic lost the differences
of ``log g`` between totals (``|1e300 - k|`` is the same float for every count ``k``), so
``exact_posterior`` returned the prior (Laplace), or NaN weights and an empty mixture of
mean 0 (Gaussian), and a plain FFT convolution drowned tail likelihoods in its 1e-16 noise.
"""
import itertools

import numba
import numpy as np
import pytest
from scipy import special, stats

import dawrap as dw
from dawrap import reference as exact_module
from dawrap.models import (beta_binomial, dirichlet_multinomial, naive_bayes, normal_mean,
                           poisson_gamma)


def mixture_moments(log_w, a, b):
    """Mean and sd of a Beta mixture with log weights ``log_w``, computed here directly."""
    w = np.exp(log_w - special.logsumexp(log_w))
    mean = w @ (a / (a + b))
    second = w @ (a * (a + 1) / ((a + b) * (a + b + 1)))
    return mean, np.sqrt(second - mean ** 2)


# -- beta-binomial -----------------------------------------------------------------------------

N, EPS = 1000, 0.5


@pytest.mark.parametrize("s_dp", [1e18, 1e300, 2.0 ** 1000])
def test_beta_binomial_release_far_above_n(s_dp):
    """With Laplace noise every count k < s_dp has likelihood exp(-eps (s_dp - k)), which is
    proportional to exp(eps k): the posterior is the same for every release above n."""
    k = np.arange(N + 1)
    log_w = stats.betabinom.logpmf(k, N, 1.0, 1.0) + EPS * k
    mean, sd = mixture_moments(log_w, 1.0 + k, 1.0 + N - k)
    exact = beta_binomial.exact_posterior(beta_binomial.laplace(EPS), s_dp, N)
    assert exact.mean() == pytest.approx(mean, rel=1e-12)
    assert exact.std() == pytest.approx(sd, rel=1e-9)
    assert exact.mean() > 0.99  # not the prior's 0.5


def test_beta_binomial_release_far_below_zero_and_geometric():
    k = np.arange(N + 1)
    for mech, s_dp, slope in [(beta_binomial.laplace(EPS), -1e300, -EPS),
                              (beta_binomial.geometric(EPS), 10.0 ** 17, EPS),
                              (beta_binomial.geometric(EPS), -(10.0 ** 17), -EPS)]:
        log_w = stats.betabinom.logpmf(k, N, 2.0, 3.0) + slope * k
        mean, sd = mixture_moments(log_w, 2.0 + k, 3.0 + N - k)
        exact = beta_binomial.exact_posterior(mech, s_dp, N, 2.0, 3.0)
        assert exact.mean() == pytest.approx(mean, rel=1e-9)
        assert exact.std() == pytest.approx(sd, rel=1e-9)


@pytest.mark.parametrize("s_dp, count", [(1e300, N), (1.7e308, N), (-1e300, 0), (1e20, N)])
def test_beta_binomial_gaussian_release_far_out_is_the_extreme_count(s_dp, count):
    """Gaussian noise: the likelihood ratio of count n to n - 1 is exp((2 s - 2n + 1) / 2
    sigma^2), astronomically large: the posterior is Beta(a + n, b) to double precision."""
    exact = beta_binomial.exact_posterior(dw.Gaussian(beta_binomial.count, 3.0), s_dp, N)
    expected = stats.beta(1.0 + count, 1.0 + N - count)
    assert exact.mean() == pytest.approx(expected.mean(), rel=1e-12)
    assert exact.std() == pytest.approx(expected.std(), rel=1e-9)


def test_ordinary_releases_are_unchanged():
    """Inside the range the weights are the plain normalised ``g``: the direct formula."""
    k = np.arange(201)
    for mech in (beta_binomial.laplace(0.7), dw.Gaussian(beta_binomial.count, 4.0)):
        for s_dp in (-3.2, 57.5, 199.0, 230.0):
            direct = np.array([mech.log_g(s_dp, [v]) for v in k])
            rel = exact_module.relative_log_g(mech, s_dp, k[:, None])
            assert np.allclose(rel, direct - direct.max(), rtol=0, atol=1e-9)


# -- Dirichlet-multinomial and naive Bayes -----------------------------------------------------

def test_dirichlet_multinomial_extreme_coordinates():
    """Coordinates at +-1e300 with Laplace noise (scale 2 / epsilon): exp(+w k_0) and
    exp(-w k_2) by the same argument; the middle coordinate is an ordinary release."""
    n, alpha, epsilon = 6, np.array([1.0, 2.0, 1.5]), 1.0
    mech = dirichlet_multinomial.laplace(epsilon, 3)
    w = epsilon / 2.0
    counts = np.array([c + (n - sum(c),) for c in itertools.product(range(n + 1), repeat=2)
                       if sum(c) <= n], dtype=float)
    k0, k1, k2 = counts.T
    log_w = (special.gammaln(n + 1) - special.gammaln(counts + 1).sum(1)
             + (special.gammaln(alpha + counts) - special.gammaln(alpha)).sum(1)
             + w * k0 - w * np.abs(1.3 - k1) - w * k2)
    marginals = dirichlet_multinomial.exact_posterior(mech, [1e300, 1.3, -1e300], n, alpha)
    for j in range(3):
        mean, sd = mixture_moments(log_w, alpha[j] + counts[:, j],
                                   alpha.sum() + n - alpha[j] - counts[:, j])
        assert marginals[j].mean() == pytest.approx(mean, rel=1e-10)
        assert marginals[j].std() == pytest.approx(sd, rel=1e-8)


def test_naive_bayes_cell_far_above_every_count():
    """Laplace noise, a cell released at 1e300: every count v <= n of that cell has
    likelihood proportional to exp(w v), exactly as for a release at n (the largest count):
    the two posteriors are the same. Before, the cell's information was lost entirely."""
    I, J, n = 2, [2], 3
    mech = naive_bayes.laplace(1.5, I, J)
    s_dp = np.array([2.4, -0.7, 1.2, 0.3])
    far, at_n = s_dp.copy(), s_dp.copy()
    far[0], at_n[0] = 1e300, float(n)
    got = naive_bayes.exact_posterior(mech, far, n, I, J)
    want = naive_bayes.exact_posterior(mech, at_n, n, I, J)
    ordinary = naive_bayes.exact_posterior(mech, s_dp, n, I, J)
    for name in want:
        for g, e in zip(got[name].ravel(), want[name].ravel()):
            assert g.mean() == pytest.approx(e.mean(), rel=1e-10)
            assert g.std() == pytest.approx(e.std(), rel=1e-8)
    assert abs(got["p1"][0, 0].mean() - ordinary["p1"][0, 0].mean()) > 0.01  # it matters


# -- normal mean -------------------------------------------------------------------------------

def test_normal_mean_gaussian_posterior_near_the_largest_float():
    """With mu0 = 0 the posterior mean is linear in s_dp (and the sd does not depend on it);
    n * s_dp overflowed to inf at s_dp = 1e308."""
    at_one = normal_mean.exact_posterior_gaussian(1.0, 1000, 3.0, 0.0, 2.0, 1.5)
    far = normal_mean.exact_posterior_gaussian(1e308, 1000, 3.0, 0.0, 2.0, 1.5)
    assert far.mean() == pytest.approx(1e308 * at_one.mean(), rel=1e-14)
    assert far.std() == pytest.approx(at_one.std(), rel=1e-14)
    with pytest.raises(ValueError, match="s_dp must be finite"):
        normal_mean.exact_posterior_gaussian(np.inf, 1000, 3.0)


# -- Poisson-gamma -----------------------------------------------------------------------------

def grid_moments(lam, log_post):
    d = np.exp(log_post - log_post.max())
    d /= np.trapezoid(d, lam)
    mean = np.trapezoid(lam * d, lam)
    return mean, np.sqrt(np.trapezoid((lam - mean) ** 2 * d, lam))


def clamped_log_pmf(lam, c):
    """log P(min(x, c) = v), v = 0..c, x ~ Poisson(lam), rows per lam (scipy, log space)."""
    v = np.arange(c)
    return np.concatenate([stats.poisson.logpmf(v[None, :], lam[:, None]),
                           stats.poisson.logsf(c - 1, lam)[:, None]], axis=1)


@pytest.mark.parametrize("s_dp, sign", [(1e300, 1.0), (-1e300, -1.0)])
def test_poisson_gamma_release_far_out_with_a_sharp_prior(s_dp, sign):
    """Laplace noise of scale c / eps, release beyond every total: the likelihood is
    E[exp(+-eps min(x, c) / c)]^n, a per-record moment generating function (closed form).
    With n = 200 and a sharp prior its values at the prior's bulk are below 1e-30, where an
    FFT convolution's 1e-16 noise used to decide the answer (mean 2.84 instead of 3.84)."""
    n, c, alpha, beta, epsilon = 200, 3, 60.0, 30.0, 1.0
    lam = np.linspace(1e-6, 30.0, 300_001)
    lp = clamped_log_pmf(lam, c)
    log_like = n * special.logsumexp(lp + sign * epsilon / c * np.arange(c + 1), axis=1)
    mean, sd = grid_moments(lam, stats.gamma.logpdf(lam, alpha, scale=1 / beta) + log_like)
    exact = poisson_gamma.exact_posterior(poisson_gamma.laplace(epsilon, c), s_dp, n, c=c,
                                          alpha=alpha, beta=beta)
    assert exact.mean() == pytest.approx(mean, rel=1e-5)
    assert exact.std() == pytest.approx(sd, rel=1e-4)


def test_poisson_gamma_gaussian_release_far_above_is_every_record_clamped():
    """Gaussian noise, release at 1e300: only the total n c has weight, P(S = n c) =
    P(x >= c)^n."""
    n, c = 30, 2
    lam = np.linspace(1e-6, 40.0, 200_001)
    log_post = stats.gamma.logpdf(lam, 2.0, scale=1.0) + n * stats.poisson.logsf(c - 1, lam)
    mean, sd = grid_moments(lam, log_post)
    exact = poisson_gamma.exact_posterior(dw.Gaussian(poisson_gamma.clamped_count(c), 2.0),
                                          1e300, n, c=c, alpha=2.0, beta=1.0)
    assert exact.mean() == pytest.approx(mean, rel=1e-5)
    assert exact.std() == pytest.approx(sd, rel=1e-4)


def brute_force_log_like(lam, c, n, log_g):
    """log sum_S P(S | lam) g(S) by n convolutions in log space (no FFT)."""
    lp = clamped_log_pmf(lam, c)
    dist = np.full((lam.shape[0], n * c + 1), -np.inf)
    dist[:, 0] = 0.0
    for _ in range(n):
        new = np.full_like(dist, -np.inf)
        for v in range(c + 1):
            shifted = np.full_like(dist, -np.inf)
            shifted[:, v:] = dist[:, :dist.shape[1] - v] + lp[:, v:v + 1]
            new = np.logaddexp(new, shifted)
        dist = new
    return special.logsumexp(dist + log_g[None, :], axis=1)


@pytest.mark.parametrize("mech, s_dp", [
    (poisson_gamma.laplace(1.0, 3), 20.3),   # ordinary
    (poisson_gamma.laplace(1.0, 3), 0.0),    # at the lower edge
    (poisson_gamma.laplace(2.0, 3), 70.0),   # above n c = 36
    (dw.Gaussian(poisson_gamma.clamped_count(3), 2.0), 44.0),
], ids=["ordinary", "edge", "above", "gaussian-above"])
def test_poisson_gamma_against_log_space_convolution(mech, s_dp):
    n, c = 12, 3
    totals = np.arange(n * c + 1)
    log_g = np.array([mech.log_g(s_dp, [t]) for t in totals])  # ordinary releases: direct
    lam = np.linspace(1e-6, 25.0, 20_001)
    log_post = stats.gamma.logpdf(lam, 3.0, scale=1.0) + brute_force_log_like(lam, c, n, log_g)
    mean, sd = grid_moments(lam, log_post)
    exact = poisson_gamma.exact_posterior(mech, s_dp, n, c=c, alpha=3.0, beta=1.0)
    assert exact.mean() == pytest.approx(mean, rel=1e-6)
    assert exact.std() == pytest.approx(sd, rel=1e-5)


# -- the building blocks refuse undefined answers ----------------------------------------------

@numba.njit
def uniform_noise(s_dp, t, params):
    return -np.log(2 * params[0]) if abs(s_dp[0] - t[0]) < params[0] else -np.inf


def test_impossible_release_is_an_error_not_nan():
    mech = dw.Mechanism(beta_binomial.count, uniform_noise, params=[5.0])
    # Any other mechanism goes through log_g: same values, shifted by the maximum.
    k = np.arange(30)
    rel = exact_module.relative_log_g(mech, 12.0, k[:, None])
    assert np.array_equal(np.isfinite(rel), np.abs(12.0 - k) < 5.0) and rel.max() == 0.0
    with pytest.raises(ValueError, match="zero density .* under every confidential total"):
        exact_module.relative_log_g(mech, 100.0, k[:, None])
    with pytest.raises(ValueError, match="zero density"):
        beta_binomial.exact_posterior(mech, 100.0, 29)
    with pytest.raises(ValueError, match="no log weight is finite"):
        exact_module.normalise_log_weights([-np.inf, -np.inf])
    with pytest.raises(ValueError, match="NaN"):
        exact_module.normalise_log_weights([0.0, np.nan])
    with pytest.raises(ValueError, match="weights must be finite"):
        exact_module.BetaMixture([np.nan, np.nan], [1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="log_density must be finite somewhere"):
        exact_module.Grid([0.0, 1.0], [-np.inf, -np.inf])


# -- positive_grid and WeightedDraws (issue 30) -------------------------------------------

def gamma_mixture(weights, shapes, rates):
    def log_density(x):
        return special.logsumexp([np.log(w) + stats.gamma.logpdf(x, a, scale=1.0 / r)
                                  for w, a, r in zip(weights, shapes, rates)], axis=0)
    mean = sum(w * a / r for w, a, r in zip(weights, shapes, rates))
    cdf = lambda v: sum(w * stats.gamma.cdf(v, a, scale=1.0 / r)  # noqa: E731
                        for w, a, r in zip(weights, shapes, rates))
    return log_density, mean, cdf


def test_positive_grid_resolves_a_narrow_mode_near_zero():
    """30% at mean 0.002 (sd 0.002) beside 70% at mean 3: an evenly spaced grid over the
    prior's range (what gamma_exponential used) put one or two points on the first."""
    log_density, mean, cdf = gamma_mixture([0.3, 0.7], [1.0, 30.0], [500.0, 10.0])
    grid = exact_module.positive_grid(log_density, 1e-12, 50.0)
    assert grid.mean() == pytest.approx(mean, rel=1e-4)
    for v in (0.001, 0.05, 3.0):
        assert float(grid.cdf(v)) == pytest.approx(cdf(v), abs=1e-4)
    even = np.linspace(1e-12, 50.0, 1500)
    assert abs(exact_module.Grid(even, log_density(even)).mean() - mean) > 0.1  # the old way


def test_positive_grid_on_a_density_that_diverges_at_zero():
    """Gamma(0.5, 1): mean 0.5, and 11% of the mass below 0.01 where the density diverges.
    Relative accuracy 2e-4: the trapezoid rule over log-spaced points of ratio r = 1.04
    overestimates the integral of x^-1/2 by (sqrt(r) + 2 + 1 / sqrt(r)) / 4 - 1 = 1e-4."""
    grid = exact_module.positive_grid(lambda x: stats.gamma.logpdf(x, 0.5), 1e-12, 40.0)
    assert grid.mean() == pytest.approx(0.5, rel=2e-4)
    assert float(grid.cdf(0.01)) == pytest.approx(special.gammainc(0.5, 0.01), abs=1e-4)


def test_positive_grid_follows_mass_outside_the_range_given():
    """A likelihood that pulls a Gamma(60, 30) prior (1e-12 quantile 0.6) far below it, and
    one that pushes it far above its 1 - 1e-12 quantile (4.5): the range grows."""
    for slope in (-80.0, 20.0):
        log_post = lambda x, s=slope: stats.gamma.logpdf(x, 60.0, scale=1 / 30.0) + s * x  # noqa
        grid = exact_module.positive_grid(log_post, 0.6, 4.5)
        rate = 30.0 - slope  # Gamma(60, rate 30 - slope) exactly: mean 0.55, then 6
        assert grid.mean() == pytest.approx(60.0 / rate, rel=1e-6)
        assert grid.std() == pytest.approx(np.sqrt(60.0) / rate, rel=1e-5)
    with pytest.raises(ValueError, match="is the density integrable"):
        exact_module.positive_grid(lambda x: np.zeros_like(x), 1.0, 2.0)


def test_positive_grid_keeps_an_even_grid_for_a_smooth_density():
    """Gamma(3, 1): its mean to 1e-8 on evenly spaced points (log-spaced points near 0 would
    cost the trapezoid rule its accuracy there: 1e-6)."""
    grid = exact_module.positive_grid(lambda x: stats.gamma.logpdf(x, 3.0), 1e-9, 60.0,
                                      points=3000)
    assert np.allclose(np.diff(grid.grid), grid.grid[1] - grid.grid[0])
    assert grid.mean() == pytest.approx(3.0, rel=1e-8)


def test_weighted_draws():
    post = exact_module.WeightedDraws([1.0, 2.0, 3.0, 4.0], np.log([1.0, 1.0, 1.0, 5.0]))
    assert post.ess == pytest.approx(64.0 / 28.0)
    assert post.mean() == pytest.approx(26.0 / 8.0)
    assert post.ppf(0.3) == 3.0 and float(post.cdf(2.0)) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="differ in length"):
        exact_module.WeightedDraws([1.0, 2.0], [0.0])
    with pytest.raises(ValueError, match="NaN"):
        exact_module.WeightedDraws([1.0, 2.0], [0.0, np.nan])
