"""Exact integer noise (Canonne, Kamath & Steinke) and the discrete Gaussian mechanism."""
import math
import random

import numpy as np
import pytest
from scipy import stats

import dawrap as dw
from dawrap import diagnostics
from dawrap.mechanisms.discrete import discrete_gaussian, discrete_laplace
from dawrap.mechanisms.discrete_gaussian import discrete_gaussian_log_normaliser
from dawrap.models import beta_binomial


def _pmf_fit(draws, log_pmf, width):
    """Chi-square p-value of integer draws against a pmf on |z| <= width plus two tails."""
    draws = np.asarray(draws)
    ks = np.arange(-width, width + 1)
    pmf = np.exp([log_pmf(k) for k in ks])
    tail = (1 - pmf.sum()) / 2
    observed = [(draws < -width).sum()] + [(draws == k).sum() for k in ks] + \
        [(draws > width).sum()]
    expected = len(draws) * np.concatenate([[tail], pmf, [tail]])
    keep = expected > 5  # chi-square needs expected counts of a few
    observed, expected = np.array(observed)[keep], expected[keep]
    return stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue


@pytest.mark.slow
@pytest.mark.parametrize("scale", [0.7, 2.0, 3.5])
def test_discrete_laplace_sampler_has_the_right_pmf(scale):
    rng = random.Random(1)  # seeded source for a reproducible test; releases use secrets
    draws = [discrete_laplace(scale, rng) for _ in range(20000)]
    a = math.exp(-1 / scale)
    log_pmf = lambda k: math.log((1 - a) / (1 + a)) - abs(k) / scale  # noqa: E731
    assert _pmf_fit(draws, log_pmf, 12) > 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [0.6, 1.5, 4.0])
def test_discrete_gaussian_sampler_has_the_right_pmf(sigma):
    rng = random.Random(2)
    draws = [discrete_gaussian(sigma, rng) for _ in range(20000)]
    mech = dw.DiscreteGaussian(beta_binomial.count, sigma=sigma)
    assert _pmf_fit(draws, lambda k: mech.log_g([k], [0]), 15) > 1e-3


@pytest.mark.parametrize("sigma", [0.2, 0.7, 1.0, 3.0, 50.0])
def test_discrete_gaussian_pmf_is_normalised_in_log_space(sigma):
    k = np.arange(-int(40 * sigma) - 40, int(40 * sigma) + 41)
    direct = math.log(np.exp(-k * k / (2 * sigma * sigma)).sum())
    assert discrete_gaussian_log_normaliser(sigma) == pytest.approx(direct, abs=1e-13)
    mech = dw.DiscreteGaussian(beta_binomial.count, sigma=sigma)
    # Far in the tail the log pmf is finite and exact (no underflow to -inf).
    far = mech.log_g([100_000], [0])
    assert far == pytest.approx(-1e10 / (2 * sigma * sigma) - direct, rel=1e-12)


@pytest.mark.slow
def test_discrete_gaussian_posterior_is_exact(check_posterior, draws_of):
    n, model = 300, beta_binomial.model(2, 2)
    mech = dw.DiscreteGaussian.from_zcdp(beta_binomial.count, rho=0.02, sensitivity=1.0)
    assert mech.sigma == pytest.approx(5.0)
    s_dp = mech.release(model.simulate({"p": 0.4}, n, seed=1), seed=2)
    idata = dw.sample(model, mech, s_dp.astype(int), n, seed=3, draws=4000, tune=500)
    check_posterior(draws_of(idata, "p"), beta_binomial.exact_posterior(mech, s_dp, n, 2, 2))


@pytest.mark.slow
def test_secure_release_path():
    x = np.ones((25, 1))
    for mech in (beta_binomial.geometric(0.5),
                 dw.DiscreteGaussian(beta_binomial.count, 2.0, contribution=(0, 1))):
        s = mech.release(x, secure=True)
        assert s.shape == (1,) and s[0] == round(s[0])
        with pytest.raises(ValueError, match="a seed would make the noise predictable"):
            mech.release(x, seed=1, secure=True)
    with pytest.raises(ValueError, match="no safe release path.*Mironov"):
        beta_binomial.laplace(1.0).release(x, secure=True)
    # Fractional records are projected (rounded into [0, 1]), not refused: a refusal would
    # depend on the confidential data (tests/test_release_privacy.py has the rest).
    assert beta_binomial.geometric(0.5).bounded_total(np.full((3, 1), 0.5)) == [0]
    with pytest.raises(ValueError, match="contribution domain"):
        dw.DiscreteGaussian(beta_binomial.count, 2.0).release(x, secure=True)
    with pytest.raises(ValueError, match="s_dp must be integer-valued for the DiscreteGaussian"):
        dw.sample(beta_binomial.model(), dw.DiscreteGaussian(beta_binomial.count, 2.0), 3.5, 10)


def test_exact_samplers_take_any_positive_parameter():
    """The samplers' arithmetic is exact on big integers: a sigma whose square float64 cannot
    hold still draws (it raised OverflowError), and a tiny one returns 0 at once."""
    rng = random.Random(3)
    big = discrete_gaussian(1e200, rng)
    assert isinstance(big, int) and abs(big) < 10 ** 203
    assert discrete_gaussian(1e-300, rng) == 0
    assert isinstance(discrete_laplace(1e300, rng), int)
    for bad in (float("nan"), float("inf"), -1.0, 0.0, None, "1/0"):
        with pytest.raises(ValueError, match="positive number"):
            discrete_laplace(bad, rng)
    with pytest.raises(TypeError, match="positive number"):
        discrete_gaussian(True, rng)
    assert isinstance(discrete_laplace("1/3", rng), int)   # exact rationals as strings


@pytest.mark.slow
def test_opendp_releases_are_understood():
    """A count released by OpenDP (discrete Laplace / discrete Gaussian on integers) maps to
    dw.Geometric.from_scale / dw.DiscreteGaussian with the same scale: OpenDP's noise follows
    dawrap's pmf, and dawrap's posterior from an OpenDP release is the exact one."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    domain, metric = dp.atom_domain(T=int), dp.absolute_distance(T=int)
    laplace = dp.m.make_laplace(domain, metric, scale=2.0)
    gauss = dp.m.make_gaussian(domain, metric, scale=3.0)
    ours_l = dw.Geometric.from_scale(beta_binomial.count, scale=2.0)
    ours_g = dw.DiscreteGaussian(beta_binomial.count, sigma=3.0)
    assert laplace.map(1) == pytest.approx(ours_l.epsilon)          # epsilon = 1 / scale
    assert gauss.map(1) == pytest.approx(1 / (2 * 3.0 ** 2))        # rho of sigma = 3
    noise_l = [laplace(0) for _ in range(5000)]
    noise_g = [gauss(0) for _ in range(5000)]
    assert _pmf_fit(noise_l, lambda k: ours_l.log_g([k], [0]), 10) > 1e-3
    assert _pmf_fit(noise_g, lambda k: ours_g.log_g([k], [0]), 12) > 1e-3
    model, n = beta_binomial.model(1, 1), 200
    x = model.simulate({"p": 0.3}, n, seed=5)
    s_dp = laplace(int(x.sum()))
    idata = dw.sample(model, ours_l, s_dp, n, seed=6, draws=4000, tune=500)
    exact = beta_binomial.exact_posterior(ours_l, s_dp, n, 1, 1)
    p = diagnostics.group(idata, "posterior")["p"].values
    assert abs(p.mean() - exact.mean()) < 4 * diagnostics.mcse(p)
