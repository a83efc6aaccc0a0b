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


def test_study_keeps_completed_trials_and_skips_them_on_restart(tmp_path, monkeypatch):
    from dawrap import calibration

    store = tmp_path / "study.jsonl"
    kw = dict(trials=6, seed=4, sample_kwargs={"draws": 50, "tune": 10, "chains": 1})
    model, mech = beta_binomial.model(), beta_binomial.laplace(1.0)
    whole = posterior_quantiles(model, mech, 30, ["suffstat", "naive"], **kw)

    calls = {"n": 0}
    real = calibration.sample

    def dies_on_the_ninth_call(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 9:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(calibration, "sample", dies_on_the_ninth_call)
    with pytest.raises(KeyboardInterrupt):
        posterior_quantiles(model, mech, 30, ["suffstat", "naive"], store=store, **kw)
    with open(store, "a") as f:
        f.write('{"trial": 5, "the')  # a line cut short by the crash
    monkeypatch.setattr(calibration, "sample", real)
    assert len(store.read_text().splitlines()) == 1 + 4 + 1  # header, 4 trials, torn line
    calls["n"] = 0
    resumed = posterior_quantiles(model, mech, 30, ["suffstat", "naive"], store=store, **kw)
    for key in ("suffstat", "naive", "theta"):
        assert np.array_equal(resumed[key], whole[key])
    again = posterior_quantiles(model, mech, 30, ["suffstat", "naive"], store=store, **kw)
    assert np.array_equal(again["suffstat"], whole["suffstat"])  # all 6 read back, none re-run
    with pytest.raises(ValueError, match="holds a study with other settings"):
        posterior_quantiles(model, mech, 31, ["suffstat", "naive"], store=store, **kw)


def test_store_accepts_numpy_index_and_an_empty_file(tmp_path):
    store = tmp_path / "s.jsonl"
    store.write_text("")  # left empty by a crash before the header
    kw = dict(trials=2, seed=1, index=np.int64(0), store=store,
              sample_kwargs={"draws": 20, "tune": 5, "chains": 1})
    first = posterior_quantiles(beta_binomial.model(), beta_binomial.laplace(1.0), 20,
                                ["naive"], **kw)
    again = posterior_quantiles(beta_binomial.model(), beta_binomial.laplace(1.0), 20,
                                ["naive"], **kw)
    assert np.array_equal(first["naive"], again["naive"])
