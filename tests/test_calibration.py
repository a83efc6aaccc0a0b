"""Calibration (posterior quantiles of the true parameter, KS against uniform): exact and
approximately exact samplers pass, the naive baseline at small epsilon fails."""
import numpy as np
import pytest

from dawrap.calibration import ks_uniform, posterior_quantiles
from dawrap.models import beta_binomial, dirichlet_multinomial, gamma_exponential

#: With M = 100 trials, a calibrated sampler's KS p-value is uniform: p < 1e-3 would be a
#: 1-in-1000 event, while the naive baseline below gives p ~ 1e-10.
TRIALS, LEVEL = 100, 1e-3
SMALL = {"draws": 500, "tune": 200, "chains": 2}


def _check(results, calibrated, miscalibrated=()):
    for method in calibrated:
        assert ks_uniform(results[method])[1] > LEVEL, method
    for method in miscalibrated:
        assert ks_uniform(results[method])[1] < LEVEL, method


def test_binomial():
    res = posterior_quantiles(beta_binomial.model(1, 1), beta_binomial.laplace(0.1), 100,
                              ["record", "suffstat", "nonprivate", "naive"], trials=TRIALS,
                              seed=1, sample_kwargs=SMALL)
    _check(res, ["record", "suffstat", "nonprivate"], ["naive"])


def test_multinomial():
    res = posterior_quantiles(dirichlet_multinomial.model([1, 1, 1]),
                              dirichlet_multinomial.laplace(0.1, 3), 100,
                              ["record", "suffstat", "naive"], trials=TRIALS, seed=2,
                              sample_kwargs=SMALL)
    _check(res, ["record", "suffstat"], ["naive"])


def test_exponential_truncated():
    # Prior Gamma(20, 20): lam near 1; bounds from the prior predictive, not from lam.
    res = posterior_quantiles(gamma_exponential.model(20, 20),
                              gamma_exponential.laplace(0.1, 0.0, 3.0), 200,
                              ["record", "suffstat", "nonprivate"], trials=TRIALS, seed=3,
                              sample_kwargs=SMALL)
    _check(res, ["record", "suffstat", "nonprivate"])


def test_reproducible():
    kw = dict(trials=5, seed=9, sample_kwargs={"draws": 50, "tune": 10, "chains": 1})
    a = posterior_quantiles(beta_binomial.model(), beta_binomial.laplace(1.0), 30,
                            ["suffstat"], **kw)
    b = posterior_quantiles(beta_binomial.model(), beta_binomial.laplace(1.0), 30,
                            ["suffstat"], **kw)
    assert np.array_equal(a["suffstat"], b["suffstat"]) and np.array_equal(a["theta"],
                                                                           b["theta"])
