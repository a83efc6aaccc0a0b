"""Baselines of Foulds et al.: non-private, naive and one-posterior-sample."""
import math

import numpy as np
import pytest
from scipy import stats

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial, dirichlet_multinomial

MODEL = beta_binomial.model(2, 3)


def _p(idata):
    return diagnostics.group(idata, "posterior")["p"].values


def test_nonprivate_is_the_conjugate_posterior():
    x = MODEL.simulate({"p": 0.3}, 500, seed=1)
    k = x.sum()
    p = _p(dw.sample(MODEL, beta_binomial.laplace(1.0), None, 500, method="nonprivate",
                     confidential=x, seed=2, draws=5000))
    exact = stats.beta(2 + k, 3 + 500 - k)
    assert stats.kstest(p.ravel(), exact.cdf).pvalue > 1e-3  # independent draws: KS is valid


def test_naive_projects_the_release_and_ignores_the_noise():
    for s_dp, k in [(-7.3, 0.0), (612.0, 500.0), (151.5, 151.5)]:
        p = _p(dw.sample(MODEL, beta_binomial.laplace(0.1), s_dp, 500, method="naive", seed=0,
                         draws=5000))
        assert stats.kstest(p.ravel(), stats.beta(2 + k, 3 + 500 - k).cdf).pvalue > 1e-3


def test_naive_multinomial_projection_sums_to_n():
    model = dirichlet_multinomial.model([1, 1, 1])
    s = dirichlet_multinomial.project(np.array([-5.0, 30.0, 10.0]), 50.0)
    assert np.allclose(s, [0.0, 37.5, 12.5])
    p = diagnostics.group(dw.sample(model, dirichlet_multinomial.laplace(1.0, 3), [-5, 30, 10], 50,
                               method="naive", seed=0, draws=2000), "posterior")["p"].values
    assert np.allclose(p.sum(-1), 1.0) and p[..., 0].mean() < 0.05


@pytest.mark.slow
def test_ops_draws_from_the_tempered_truncated_posterior():
    """k = chains * draws samples at epsilon / k each: temperature 2 log((1-a0)/a0) k / eps."""
    n, eps, a0 = 200, 50.0, 0.1
    x = MODEL.simulate({"p": 0.3}, n, seed=3)
    k = x.sum()
    idata = dw.sample(MODEL, beta_binomial.laplace(eps), None, n, method="ops", confidential=x,
                      seed=4, chains=2, draws=1000)
    p = _p(idata).ravel()
    temperature = 2 * math.log((1 - a0) / a0) * 2000 / eps
    alpha, beta = (2 - 1 + k) / temperature + 1, (3 - 1 + n - k) / temperature + 1
    target = stats.beta(alpha, beta)
    lo, hi = target.cdf(a0), target.cdf(1 - a0)
    assert np.all((p >= a0) & (p <= 1 - a0))
    assert stats.kstest(p, lambda q: (target.cdf(q) - lo) / (hi - lo)).pvalue > 1e-3
    assert float(diagnostics.group(idata, "sample_stats")["ops_epsilon_each"].values[0, 0]) == \
        pytest.approx(eps / 2000)


def test_ops_at_large_budget_concentrates_near_the_data():
    n = 400
    x = MODEL.simulate({"p": 0.4}, n, seed=5)
    p = _p(dw.sample(MODEL, beta_binomial.laplace(1e5), None, n, method="ops", confidential=x,
                     seed=6, chains=1, draws=10))
    assert abs(p.mean() - x.mean()) < 0.05


def test_baseline_errors():
    with pytest.raises(ValueError, match="needs confidential="):
        dw.sample(MODEL, beta_binomial.laplace(1.0), None, 10, method="nonprivate")
    with pytest.raises(ValueError, match="confidential has 3 records but n = 10"):
        dw.sample(MODEL, beta_binomial.laplace(1.0), None, 10, method="ops",
                  confidential=np.ones(3))
    with pytest.raises(ValueError, match="does not support one-posterior"):
        dw.sample(dirichlet_multinomial.model([1, 1]), dirichlet_multinomial.laplace(1.0, 2),
                  None, 3, method="ops", confidential=np.array([0, 1, 1]))
    with pytest.raises(ValueError, match="method must be one of"):
        dw.sample(MODEL, beta_binomial.laplace(1.0), 3, 10, method="exact")
    with pytest.raises(ValueError, match="s_dp .the release. is required"):
        dw.sample(MODEL, beta_binomial.laplace(1.0), None, 10, method="naive")
    with pytest.raises(ValueError, match="init_theta applies to method='record' and"):
        dw.sample(MODEL, beta_binomial.laplace(1.0), 3, 10, method="naive", init_theta=[0.5])
