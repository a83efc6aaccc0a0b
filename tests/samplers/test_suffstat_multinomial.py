"""The O(K) sufficient-statistic kernels for one-hot statistics (issue 14, item 4).

The linear algebra is checked exactly against the dense matrices; the kernels against the
dense kernels on one release (the same target), against the exact posterior by enumeration
(the existing tests in test_suffstat.py run this path too: dirichlet_multinomial declares its
cell probabilities) and, where most cells are empty, against importance sampling of the
target they share.
"""
import math
import warnings
from fractions import Fraction

import numba
import numpy as np
import pytest
from scipy import stats

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import dirichlet_multinomial as dm
from dawrap.runner.suffstat import structured
from dawrap.samplers import suffstat, suffstat_multinomial as sm


def _problem(k, seed):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(k, 0.7))
    n = 150.0
    y = rng.multinomial(int(n), p) + rng.normal(0, 3, k)
    noise = rng.uniform(0.5, 20.0, k)
    return p, n, y, noise


def _dense(p, n, noise):
    sigma = n * (np.diag(p) - np.outer(p, p))
    return sigma, sigma + np.diag(noise)


@pytest.mark.parametrize("k", [2, 3, 17])
def test_solve_and_likelihood_agree_with_the_dense_matrices(k):
    p, n, y, noise = _problem(k, k)
    sigma, full = _dense(p, n, noise)
    v = np.random.default_rng(1).normal(size=k)
    assert np.allclose(sm.solve(p, n, noise, v), np.linalg.solve(full, v), rtol=1e-12,
                       atol=1e-14)
    assert np.allclose(sm.cov_times(p, n, v), sigma @ v, rtol=1e-12, atol=1e-12)
    expected = stats.multivariate_normal(n * p, full).logpdf(y)
    assert sm.log_release_likelihood(p, n, y, noise) == pytest.approx(expected, rel=1e-12)


def _exact_solve(p, n, noise, v):
    """(n (diag p - p p^T) + diag noise)^{-1} v in exact rational arithmetic (the floats as
    Fractions, Gauss-Jordan)."""
    k = len(v)
    P = [Fraction(float(x)) for x in p]
    M = [[Fraction(float(n)) * ((P[i] if i == j else 0) - P[i] * P[j])
          + (Fraction(float(noise[i])) if i == j else 0) for j in range(k)]
         + [Fraction(float(v[i]))] for i in range(k)]
    for c in range(k):
        pivot = next(r for r in range(c, k) if M[r][c] != 0)
        M[c], M[pivot] = M[pivot], M[c]
        for r in range(k):
            if r != c:
                f = M[r][c] / M[c][c]
                M[r] = [a - f * b for a, b in zip(M[r], M[c])]
    return np.array([float(M[i][k] / M[i][i]) for i in range(k)])


def test_solve_is_accurate_when_the_noise_is_tiny():
    """Noise variance 1e-8 against counts of 1e5: Sigma + D is nearly singular (condition
    number about 1e13). The Sherman-Morrison denominator is a sum of positive terms, not
    1 - (almost 1), so the solution keeps its relative accuracy against exact arithmetic."""
    p, n = np.array([0.25, 0.5, 0.25]), 1e6
    noise = np.full(3, 1e-8)
    v = np.array([1.0, -2.0, 0.5])
    exact = _exact_solve(p, n, noise, v)
    assert np.allclose(sm.solve(p, n, noise, v), exact, rtol=1e-9, atol=0)


def test_family_declaration_and_its_errors():
    assert structured(dm.model([1.0, 1.0, 1.0]).family)
    family = dm.model([1.0, 1.0]).family
    with pytest.raises(ValueError, match="cell_probabilities.*bounded=True"):
        dw.ExponentialFamily(dm.one_hot, 3, dm.mean_cov, family.conjugate_draw, dm.valid,
                             bounded=False, cell_probabilities=dm.cell_probabilities)
    with pytest.raises(TypeError, match="cell_probabilities"):
        dw.ExponentialFamily(dm.one_hot, 3, dm.mean_cov, family.conjugate_draw, dm.valid,
                             bounded=True, cell_probabilities=lambda theta: theta)


def _dense_model(alpha):
    """dirichlet_multinomial without its one-hot declaration: the dense kernels."""
    model = dm.model(alpha)
    f = model.family
    dense = dw.ExponentialFamily(f.statistic, f.stat_size, f.mean_cov, f.conjugate_draw,
                                 f.valid, bounded=True, natural=f.natural,
                                 log_partition=f.log_partition, project=f.project)
    model.family = dense
    assert not structured(model.family)
    return model


def _agree(a, b, what):
    """Two sets of chains estimate the same mean and sd within 4 combined MCSE."""
    for stat, mcse in (("mean", "mean"), ("std", "sd")):
        ea, eb = getattr(a, stat)(), getattr(b, stat)()
        err = math.hypot(diagnostics.mcse(a, mcse), diagnostics.mcse(b, mcse))
        assert abs(ea - eb) <= 4 * err, f"{what} {stat}: {ea:.5g} vs {eb:.5g} (mcse {err:.2g})"


@pytest.mark.slow
@pytest.mark.parametrize("variant, epsilon", [("gibbs", 1.0), ("marginal", 0.1),
                                              ("marginal", 1.0)])
def test_structured_and_dense_kernels_sample_the_same_posterior(variant, epsilon):
    alpha, n = [1.0, 2.0, 1.5, 1.0], 200
    model, dense = dm.model(alpha), _dense_model(alpha)
    mech = dm.laplace(epsilon, 4)
    s_dp = mech.release(model.simulate({"p": np.array([0.1, 0.4, 0.3, 0.2])}, n, seed=5),
                        seed=6)
    kw = dict(method="suffstat", variant=variant, draws=5000, tune=1000, chains=4)
    fast = diagnostics.group(dw.sample(model, mech, s_dp, n, seed=7, **kw), "posterior")
    slow = diagnostics.group(dw.sample(dense, mech, s_dp, n, seed=8, **kw), "posterior")
    for j in range(4):
        _agree(fast["p"].values[..., j], slow["p"].values[..., j], f"p[{j}]")


@pytest.mark.slow
def test_structured_kernel_matches_the_exact_posterior_with_four_cells(check_posterior):
    """Enumeration (all count vectors of n = 40 records in 4 cells), Laplace noise at
    epsilon = 0.05 (the noise dominates, where the CLT convolved with it is accurate)."""
    alpha, n = [1.0, 1.0, 2.0, 1.0], 40
    model = dm.model(alpha)
    mech = dm.laplace(0.05, 4)
    s_dp = mech.release(model.simulate({"p": np.array([0.1, 0.2, 0.5, 0.2])}, n, seed=2),
                        seed=3)
    idata = dw.sample(model, mech, s_dp, n, method="suffstat", seed=4, draws=5000, tune=1000)
    assert diagnostics.attrs(idata)["variant"] == "marginal"
    p = diagnostics.group(idata, "posterior")["p"].values
    for j, exact in enumerate(dm.exact_posterior(mech, s_dp, n, alpha)):
        check_posterior(p[..., j], exact)


def _clt_log_likelihood(P, y, n, sigma):
    """log N(y; n p, n (diag p - p p^T) + sigma^2 I) for each row of P, by dense Cholesky
    factors (independent of the code under test)."""
    k = y.shape[0]
    out = np.empty(P.shape[0])
    for i in range(0, P.shape[0], 5000):
        p = P[i:i + 5000]
        cov = n * (p[:, :, None] * np.eye(k) - p[:, :, None] * p[:, None, :]) \
            + sigma ** 2 * np.eye(k)
        L = np.linalg.cholesky(cov)
        z = np.linalg.solve(L, (y - n * p)[..., None])[..., 0]
        out[i:i + 5000] = -0.5 * (z ** 2).sum(1) - np.log(np.diagonal(L, axis1=1,
                                                                      axis2=2)).sum(1)
    return out


def _importance_sample(y, n, sigma, alpha, seed):
    """The suffstat target p(p) N(y; n p, n Sigma + sigma^2 I) by importance sampling from
    Dirichlet proposals, each fitted by moments to the previous stage's weighted draws
    (widened by 1/0.7 in precision). Returns the last stage's draws and normalised weights."""
    rng = np.random.default_rng(seed)
    proposal = alpha + 0.7 * np.maximum(y, 0.0)
    for size in (50_000, 50_000, 100_000, 300_000):
        P = rng.dirichlet(proposal, size=size)
        P = np.maximum(P, 1e-300)
        P /= P.sum(1, keepdims=True)
        log_w = (stats.dirichlet.logpdf(P.T, alpha) + _clt_log_likelihood(P, y, n, sigma)
                 - stats.dirichlet.logpdf(P.T, proposal))
        w = np.exp(log_w - log_w.max())
        w /= w.sum()
        m = w @ P
        precision = np.median(m * (1 - m) / (w @ (P - m) ** 2) - 1)
        proposal = 0.7 * precision * m
    return P, w


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_many_cells_most_of_them_empty():
    """30 cells, 3 of them holding the 200 records, Gaussian noise (sd 3) on every count.
    The dense kernels cannot run this release (the Gibbs kernel's draws of the counts are
    never all non-negative; the dense marginal kernel's normal pseudo-totals never are, so
    its chains do not move); the O(K) marginal kernel matches its target, computed by
    importance sampling (effective size above 20 000), in the mean and sd of the three
    occupied cells and two empty ones, within 4 combined Monte Carlo errors."""
    k, n, sigma = 30, 200, 3.0
    alpha = np.full(k, 0.5)
    truth = np.zeros(k)
    truth[:3] = [0.5, 0.3, 0.2]
    model = dm.model(alpha)
    mech = dw.Gaussian(dm.one_hot, sigma, size=k)
    y = mech.release(model.simulate({"p": truth}, n, seed=1), seed=2)
    P, w = _importance_sample(y, n, sigma, alpha, seed=3)
    assert 1.0 / np.sum(w ** 2) > 20_000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # R-hat of the slowest empty cells
        idata = dw.sample(model, mech, y, n, method="suffstat", draws=10_000, tune=2000,
                          chains=4, seed=4)
    assert diagnostics.attrs(idata)["variant"] == "marginal"
    draws = diagnostics.group(idata, "posterior")["p"].values
    for j in (0, 1, 2, 3, 10):
        f = P[:, j]
        mean = w @ f
        sd = math.sqrt(w @ (f - mean) ** 2)
        is_mean_err = math.sqrt(np.sum(w ** 2 * (f - mean) ** 2))
        is_sd_err = math.sqrt(np.sum(w ** 2 * (((f - mean) ** 2 - sd ** 2) / (2 * sd)) ** 2))
        d = draws[..., j]
        assert diagnostics.ess(d) > 400
        assert abs(d.mean() - mean) <= 4 * math.hypot(diagnostics.mcse(d, "mean"),
                                                      is_mean_err), (j, d.mean(), mean)
        assert abs(d.std() - sd) <= 4 * math.hypot(diagnostics.mcse(d, "sd"),
                                                   is_sd_err), (j, d.std(), sd)


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_a_release_above_the_dense_limit_runs():
    """2000 cells (the dense kernels refuse more than 500): draws on the simplex."""
    from dawrap.methods import SUFFSTAT_LARGEST_RELEASE

    k, n = 2000, 10_000
    assert k > SUFFSTAT_LARGEST_RELEASE
    model = dm.model(np.ones(k))
    mech = dm.laplace(1.0, k)
    y = mech.release(model.simulate({"p": np.full(k, 1.0 / k)}, n, seed=1), seed=2)
    idata = dw.sample(model, mech, y, n, method="suffstat", draws=200, tune=200, chains=1,
                      seed=3)
    p = diagnostics.group(idata, "posterior")["p"].values
    assert p.shape == (1, 200, k) and np.allclose(p.sum(-1), 1.0)


def test_a_dense_family_above_the_limit_is_refused_naming_the_record_sampler():
    from dawrap.methods import SUFFSTAT_LARGEST_RELEASE

    k = SUFFSTAT_LARGEST_RELEASE + 1
    mech = dm.laplace(1.0, k)
    with pytest.raises(ValueError, match="suffstat.*O\\(size\\^3\\).*cell_probabilities.*"
                                         "method='record'"):
        dw.sample(_dense_model(np.ones(k)), mech, np.zeros(k), 100, method="suffstat",
                  draws=2, tune=0, chains=1, seed=0, progress=False)


@numba.njit
def _draws(rng, draw, mean, scale, size):
    out = np.empty(size)
    for i in range(size):
        out[i] = draw(rng, mean, scale)
    return out


@numba.njit
def _numba_wald(rng, mean, scale):
    return rng.wald(mean, scale)


@pytest.mark.parametrize("mean, scale", [(1.0, 1.0), (0.05, 0.01), (3.0, 0.25), (100.0, 0.25)])
def test_inverse_gaussian_is_numbas_wald_where_that_is_accurate(mean, scale):
    """Same random draws, same arithmetic: the Gibbs kernels' draws are unchanged there."""
    ours = _draws(np.random.default_rng(1), suffstat.inverse_gaussian, mean, scale, 50_000)
    theirs = _draws(np.random.default_rng(1), _numba_wald, mean, scale, 50_000)
    assert np.array_equal(ours, theirs)


def test_inverse_gaussian_with_a_huge_mean_is_not_zero():
    """The noise precision of a coordinate whose statistic sits on the release has a huge
    mean: numba's wald returns exactly 0 for most draws there (then 1/0 stopped the Gibbs
    kernel at 1000 cells); ours follows the law (Kolmogorov-Smirnov against scipy)."""
    mean, scale = 1e12, 0.25
    ours = _draws(np.random.default_rng(2), suffstat.inverse_gaussian, mean, scale, 50_000)
    theirs = _draws(np.random.default_rng(2), _numba_wald, mean, scale, 50_000)
    assert np.mean(theirs == 0.0) > 0.5
    assert np.all(ours > 0.0)
    law = stats.invgauss(mu=mean / scale, scale=scale)
    assert stats.kstest(ours, law.cdf).pvalue > 1e-3


def test_default_kernel_for_many_cells_follows_the_typical_cell():
    """1000 cells with about 100 records each and noise variance 8: the typical cell keeps
    most of its information (f about 0.1), the default is the Gibbs kernel; by the cell the
    noise hides most (a flat prior over 1000 cells puts one near zero) it would have been the
    marginal kernel, a random walk in 999 dimensions here."""
    from dawrap.runner.information import missing_information
    from dawrap.runner.suffstat import choose_variant

    k = 1000
    model, mech = dm.model(np.ones(k)), dm.laplace(1.0, k)
    n = 100 * k
    assert missing_information(model, mech, n) > 0.5
    assert missing_information(model, mech, n, cells="median") < 0.5
    assert choose_variant(model, mech, n, None) == "gibbs"
