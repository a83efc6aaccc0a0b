"""The marginal kernel's compiled pieces (dawrap.samplers.suffstat_marginal_parts and the
small linear algebra of dawrap.samplers.suffstat_densities), each against its closed form:
the release's likelihood with the statistic integrated out, the statistic's draw given the
release, and the warm-up summaries that size the independence step. The kernel as a whole
is checked against exact posteriors in test_suffstat.py."""
from typing import NamedTuple

import numpy as np
import pytest
from scipy import integrate, stats

from dawrap.samplers import suffstat_densities as sd
from dawrap.samplers import suffstat_marginal_parts as parts

Z = 4.0  # as tests/conftest.py


class Config(NamedTuple):
    """The fields of the kernel's config the pieces read."""
    y: np.ndarray
    laplace_scale: float
    basis: np.ndarray


class State(NamedTuple):
    pseudo: np.ndarray


def spd(d, seed):
    a = np.random.default_rng(seed).normal(size=(d, d))
    return a @ a.T + d * np.eye(d)


# -- the small linear algebra ------------------------------------------------------------------

def test_cholesky_solve_and_density_are_numpys_and_scipys():
    A = spd(4, 0)
    L, ok = sd.cholesky(A)
    assert ok and np.allclose(L, np.linalg.cholesky(A), rtol=1e-13, atol=1e-13)
    _, ok = sd.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]))  # indefinite
    assert not ok
    B = np.random.default_rng(1).normal(size=(4, 3))
    assert np.allclose(sd.spd_solve(A, B), np.linalg.solve(A, B), rtol=1e-12, atol=1e-12)
    x, mean = np.array([0.5, -1.0, 2.0, 0.0]), np.array([0.0, 1.0, 1.0, -1.0])
    assert sd.log_normal_density(x, mean, A) == pytest.approx(
        stats.multivariate_normal(mean, A).logpdf(x), rel=1e-13)
    assert sd.log_normal_density(x[:2], mean[:2], np.array([[1.0, 2.0], [2.0, 1.0]])) == -np.inf


def test_products_and_the_covariance_on_the_support():
    rng = np.random.default_rng(2)
    A, x, y = rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=3)
    assert np.allclose(sd.matvec(A, x), A @ x) and np.allclose(sd.tmatvec(A, y), A.T @ y)
    assert sd.dot(x, x) == pytest.approx(x @ x)
    basis, _ = np.linalg.qr(rng.normal(size=(4, 2)))  # orthonormal columns
    S = spd(4, 3)
    assert np.allclose(sd.cov_on_support(basis, S), basis.T @ S @ basis, rtol=1e-13)
    assert np.allclose(sd.on_support(basis, x), basis.T @ x)
    L, ok = parts.pseudo_factor(basis, 7.0, S)
    assert ok and np.allclose(L @ L.T, 7.0 * basis.T @ S @ basis, rtol=1e-12)


def test_all_finite():
    assert parts.all_finite(np.array([0.0, -1e300]))
    assert not parts.all_finite(np.array([0.0, np.nan]))
    assert not parts.all_finite(np.array([np.inf]))


# -- the release's likelihood, the statistic integrated out ------------------------------------

def test_a_gaussian_release_given_normal_statistics_is_normal():
    V, noise = spd(3, 4), np.array([0.5, 2.0, 1.0])
    m, y = np.array([1.0, 2.0, 3.0]), np.array([0.0, 4.0, 2.5])
    config = Config(y, 0.0, np.eye(3))
    assert parts.release_log_likelihood(m, V, config, noise) == pytest.approx(
        stats.multivariate_normal(m, V + np.diag(noise)).logpdf(y), rel=1e-13)


@pytest.mark.parametrize("m, v, y, b", [(3.0, 4.0, 1.0, 2.0), (0.0, 0.01, 50.0, 1.0),
                                        (10.0, 25.0, 12.0, 0.5)])
def test_a_laplace_release_given_a_normal_statistic_is_their_convolution(m, v, y, b):
    def integrand(s):
        return stats.norm(m, np.sqrt(v)).pdf(s) * np.exp(-abs(y - s) / b) / (2 * b)

    exact, _ = integrate.quad(integrand, -np.inf, np.inf, points=None, epsabs=0,
                              epsrel=1e-12, limit=200)
    config = Config(np.array([y]), b, np.eye(1))
    assert parts.release_log_likelihood(np.array([m]), np.array([[v]]), config,
                                        np.array([2 * b * b])) == pytest.approx(
        np.log(exact), rel=1e-8)


# -- the statistic's draw given theta and the release ------------------------------------------

def moments_within_mc_error(draws, mean, cov):
    """The sample mean and covariance of ``draws`` agree with ``mean`` and ``cov`` within
    Z Monte Carlo standard errors (independent draws)."""
    n = draws.shape[0]
    sd_mean = np.sqrt(np.diag(cov) / n)
    assert np.all(np.abs(draws.mean(axis=0) - mean) < Z * sd_mean)
    # Var of a sample covariance entry of normal draws: (S_ii S_jj + S_ij^2) / n.
    sd_cov = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
    assert np.all(np.abs(np.cov(draws.T).reshape(cov.shape) - cov) < Z * sd_cov)


def test_a_vector_statistic_is_drawn_from_its_gaussian_conditional():
    V, noise = spd(2, 5), np.array([1.5, 0.5])
    m, y = np.array([5.0, -2.0]), np.array([7.0, 0.0])
    config = Config(y, 0.0, np.eye(2))
    rng = np.random.default_rng(6)
    draws = np.array([parts.draw_released_statistic(rng, m, V, config, noise)
                      for _ in range(20000)])
    K = np.linalg.solve(V + np.diag(noise), V)
    moments_within_mc_error(draws, m + K.T @ (y - m), V - V @ K)


def test_a_scalar_gaussian_statistic_is_drawn_from_its_conditional():
    m, v, noise, y = 4.0, 9.0, 1.0, 10.0
    rng = np.random.default_rng(7)
    draws = np.array([parts.draw_released_statistic(rng, np.array([m]), np.array([[v]]),
                                                    Config(np.array([y]), 0.0, np.eye(1)),
                                                    np.array([noise])) for _ in range(20000)])
    moments_within_mc_error(draws, np.array([(m * noise + y * v) / (v + noise)]),
                            np.array([[v * noise / (v + noise)]]))


def test_a_scalar_laplace_statistic_is_drawn_from_normal_times_laplace():
    m, v, y, b = 4.0, 9.0, 10.0, 2.0
    weight = integrate.quad(lambda s: stats.norm(m, 3.0).pdf(s) * np.exp(-abs(y - s) / b),
                            -60, 80, points=[y], epsrel=1e-12)[0]
    mean, second = (integrate.quad(lambda s: s ** k * stats.norm(m, 3.0).pdf(s)
                                   * np.exp(-abs(y - s) / b), -60, 80, points=[y],
                                   epsrel=1e-12)[0] / weight for k in (1, 2))
    rng = np.random.default_rng(8)
    draws = np.array([parts.draw_released_statistic(rng, np.array([m]), np.array([[v]]),
                                                    Config(np.array([y]), b, np.eye(1)),
                                                    np.array([2 * b * b])) for _ in range(20000)])
    moments_within_mc_error(draws, np.array([mean]), np.array([[second - mean ** 2]]))


# -- warm-up summaries and the independence step's pseudo-sample size --------------------------

def test_summaries_are_the_running_mean_variance_and_mean_sigma():
    d = 2
    rng = np.random.default_rng(9)
    mus = rng.normal([1.0, 5.0], [0.1, 2.0], size=(50, d))
    sigmas = rng.uniform(1.0, 3.0, size=(50, d))
    state = State(np.zeros(parts.PSEUDO_STATS + 3 * d))
    for mu, sigma in zip(mus, sigmas):
        parts.summarise(state, mu, np.diag(sigma))
    p = state.pseudo
    assert p[parts.PSEUDO_SUMMARISED] == 50
    at = parts.PSEUDO_STATS
    assert np.allclose(p[at:at + d], mus.mean(axis=0), rtol=1e-13)
    assert np.allclose(p[at + d:at + 2 * d], ((mus - mus.mean(axis=0)) ** 2).sum(axis=0),
                       rtol=1e-12)
    assert np.allclose(p[at + 2 * d:], sigmas.mean(axis=0), rtol=1e-13)
    parts.freeze(state)
    expected = np.mean(sigmas.mean(axis=0) / mus.var(axis=0, ddof=1))
    assert p[parts.PSEUDO_INDEPENDENT] == pytest.approx(expected, rel=1e-12)


def test_the_independence_step_stays_off_with_few_summaries_or_mu_fixed():
    d = 1
    state = State(np.zeros(parts.PSEUDO_STATS + 3 * d))
    for k in range(19):
        parts.summarise(state, np.array([float(k)]), np.eye(1))
    state.pseudo[parts.PSEUDO_INDEPENDENT] = 5.0
    parts.freeze(state)
    assert state.pseudo[parts.PSEUDO_INDEPENDENT] == 0.0  # 19 < 20 summarised
    fixed = State(np.zeros(parts.PSEUDO_STATS + 3 * d))
    for _ in range(30):
        parts.summarise(fixed, np.array([2.0]), np.eye(1))
    parts.freeze(fixed)
    assert fixed.pseudo[parts.PSEUDO_INDEPENDENT] == 0.0  # mu never moved
