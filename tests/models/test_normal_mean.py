"""normal_mean's clamped release near a bound (issue 30's audit): records clamped to [0, 5],
a release of 1 with Laplace noise of scale 5. Every mu far below 0 clamps every record to 0
and explains the release equally well, so the posterior is the prior's left tail cut off
near mu = -1: no exact posterior in closed form. The reference is importance sampling from
the prior with the exact likelihood, the n-fold convolution of one record's clamped
contribution (atoms at both bounds), Richardson-extrapolated over the step and interpolated
in mu by a cubic spline; its tolerances come from the weights' effective sample size."""
import math

import numpy as np
import pytest
from scipy import interpolate, stats

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import normal_mean
from dawrap.reference import WeightedDraws

N, LOWER, UPPER, EPSILON, RELEASE = 50, 0.0, 5.0, 1.0, 1.0
SCALE = (UPPER - LOWER) / EPSILON


def convolution_log_likelihood(mu, step):
    """log p(s_dp | mu): one record's contribution on a lattice of step / 2 (its atoms at
    the bounds, each bin's mass at its midpoint), convolved N times by FFT, summed against
    the Laplace density. Error O(step^2)."""
    edges = np.arange(LOWER, UPPER + step / 2, step)
    one = np.zeros(2 * edges.size - 1)
    one[0], one[-1] = stats.norm.cdf(LOWER, mu), stats.norm.sf(UPPER, mu)
    one[1:-1:2] = np.diff(stats.norm.cdf(edges, mu))
    size = 1 << int(np.ceil(np.log2(N * (one.size - 1) + 1)))
    dist = np.fft.irfft(np.fft.rfft(one, size) ** N, size)
    totals = N * LOWER + np.arange(size) * step / 2
    return np.log(np.sum(np.maximum(dist, 0.0) * stats.laplace.pdf(RELEASE - totals,
                                                                   scale=SCALE)))


@pytest.mark.slow
def test_the_default_sampler_near_the_lower_bound_matches_importance_sampling(draws_of):
    knots = np.linspace(-25.0, 10.0, 351)

    def log_lik(step):
        return np.array([convolution_log_likelihood(m, step) for m in knots])

    spline = interpolate.CubicSpline(knots, (4.0 * log_lik(0.01) - log_lik(0.02)) / 3.0)
    # The spline between knots against the extrapolated convolution there, where the
    # weight is not negligible: a small fraction of a nat.
    between = knots[100:250:10] + 0.05
    direct = np.array([(4.0 * convolution_log_likelihood(m, 0.01)
                        - convolution_log_likelihood(m, 0.02)) / 3.0 for m in between])
    assert np.max(np.abs(spline(between) - direct)) < 1e-3
    mu = np.random.default_rng(32).normal(0.0, 5.0, 400_000)
    # Beyond the knots: below -25 every record is clamped to 0 (the likelihood is flat),
    # above 10 every record to 5 (a total of 250 against a release of 1: weight e^-50).
    ref = WeightedDraws(mu, spline(np.clip(mu, knots[0], knots[-1])))
    model, mech = normal_mean.model(0.0, 5.0, 1.0), normal_mean.laplace(EPSILON, LOWER, UPPER)
    idata = dw.sample(model, mech, RELEASE, N, draws=2000, tune=1000, seed=3, progress=False)
    draws = draws_of(idata, "mu")
    for what, values, estimate, mcse in [
            ("mean", mu, draws.mean(), diagnostics.mcse(draws, "mean")),
            ("P(mu < -5)", (mu < -5).astype(float), np.mean(draws < -5),
             diagnostics.mcse((draws < -5).astype(float), "mean"))]:
        tolerance = 4.0 * math.hypot(mcse, ref.mcse(values))
        assert abs(estimate - ref.expect(values)) < tolerance, \
            f"{what}: {estimate:.4g} against {ref.expect(values):.4g} (4 mcse {tolerance:.2g})"


def truncated_log_likelihood(mu, s_dp, n, lower, upper, sigma, scale, step=0.1):
    """log p(s_dp | mu) for the total of the records inside [lower, upper] (others dropped)
    with Laplace noise: one record's contribution on a lattice of ``step`` (the mass of
    N(mu, sigma^2) in each bin at its midpoint, the mass outside the bounds at 0), convolved
    n times by FFT, summed against the Laplace density. The lattice's rounding adds a
    variance of n step^2 / 12 (0.25 here) to a total whose noise variance is 2 scale^2."""
    k = np.arange(round(lower / step), round(upper / step) + 1)
    edges = np.concatenate((k - 0.5, [k[-1] + 0.5])) * step
    edges[0], edges[-1] = lower, upper
    size = 1 << int(np.ceil(np.log2(n * (k.size - 1) + 1)))
    totals = (n * k[0] + np.arange(size)) * step
    laplace = stats.laplace.pdf(s_dp - totals, scale=scale)
    out = np.empty(np.size(mu))
    for i, m in enumerate(np.atleast_1d(mu)):
        one = np.diff(stats.norm.cdf(edges, m, sigma))
        one[k == 0] += 1.0 - one.sum()
        dist = np.fft.irfft(np.fft.rfft(one, size) ** n, size)
        out[i] = np.log(np.sum(np.maximum(dist, 0.0) * laplace))
    return out


@pytest.mark.slow
def test_the_second_mode_of_a_truncated_release_is_found(draws_of):
    """Records inside [-4, 6] summed (others dropped), n = 300 drawn at mu = 1, prior
    N(0, 3^2): the release is also explained by mu near 7.6, where most records lie above
    the bound and drop out. A grid over mu (the exact likelihood by convolution) puts 4.3% of
    the mass there (posterior mean 1.04, sd 1.50). The default sampler (jumps between the
    modes) matches it; the record sampler without them never left mu near 0.7 (mean 0.717,
    P(mu > 4) = 0)."""
    n, sigma = 300, 2.0
    model, mech = normal_mean.model(0.0, 3.0, sigma), normal_mean.laplace_truncated(1.0, -4, 6)
    s_dp = mech.release(model.simulate({"mu": 1.0}, n, seed=1), seed=2)
    grid = np.arange(-1.5, 10.5, 0.01)  # both modes, many of their sds wide
    log_post = truncated_log_likelihood(grid, float(s_dp[0]), n, -4.0, 6.0, sigma,
                                        10.0) + stats.norm.logpdf(grid, 0.0, 3.0)
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    assert 0.03 < w[grid > 4].sum() < 0.06  # the second mode is there
    draws = draws_of(dw.sample(model, mech, s_dp, n, seed=3, draws=4000, tune=1000,
                               progress=False), "mu")
    for what, f in [("mean", lambda m: m), ("P(mu > 4)", lambda m: (m > 4).astype(float))]:
        exact, estimate = w @ f(grid), f(draws).mean()
        tolerance = 4.0 * diagnostics.mcse(f(draws), "mean")
        assert abs(estimate - exact) < tolerance, \
            f"{what}: {estimate:.4g} against the grid's {exact:.4g} (4 mcse {tolerance:.2g})"
