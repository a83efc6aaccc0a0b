"""Synthetic datasets from a result and the combining rules (dawrap.studies.synthetic): the
rules against their formulas (Rubin 1987; Raghunathan, Reiter & Rubin 2003; Reiter 2002),
the imputed databases against the imputed statistic of the draw they were taken at, and bad
input named. The exactness of the datasets' distribution is checked against enumeration in
tests/models/marginals/test_marginals.py."""
import math

import numpy as np
import pytest
from scipy import stats

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial

Q = np.array([1.3, 0.9, 1.1, 1.6, 0.7, 1.2])
U = np.array([0.04, 0.05, 0.03, 0.06, 0.05, 0.04])


def test_rubins_rule_and_the_posterior_rule():
    m, b, ubar = len(Q), Q.var(ddof=1), U.mean()
    mi = dw.synthetic.combine(Q, U, "multiple_imputation", level=0.9)
    total = ubar + (1 + 1 / m) * b
    df = (m - 1) * (1 + ubar / ((1 + 1 / m) * b)) ** 2
    half = stats.t.ppf(0.95, df) * math.sqrt(total)
    assert mi.variance == pytest.approx(total) and mi.df == pytest.approx(df)
    assert mi.interval == pytest.approx((Q.mean() - half, Q.mean() + half))
    post = dw.synthetic.combine(Q, U, "posterior")
    half = stats.t.ppf(0.975, m - 1) * math.sqrt((1 + 1 / m) * b)
    assert post.df == m - 1 and post.interval == pytest.approx((Q.mean() - half,
                                                                Q.mean() + half))
    assert (post.between, post.within) == pytest.approx((b, ubar))


def test_fully_synthetic_rule_and_reiters_fallback():
    m, b, ubar = len(Q), Q.var(ddof=1), U.mean()
    fs = dw.synthetic.combine(Q, U, "fully_synthetic", n=100, n_syn=100)   # T_f > u_bar
    assert fs.variance == pytest.approx((1 + 1 / m) * b - ubar)
    assert fs.df == pytest.approx((m - 1) * (1 - ubar / ((1 + 1 / m) * b)) ** 2)
    close = Q.mean() + 0.001 * (Q - Q.mean())       # b tiny: T <= 0
    with pytest.raises(ValueError, match=r"'fully_synthetic' needs n and n_syn.*\(n_syn / n\) "
                                         r"u_bar"):
        dw.synthetic.combine(close, U, "fully_synthetic")
    fallback = dw.synthetic.combine(close, U, "fully_synthetic", n=1000, n_syn=500)
    assert fallback.variance == pytest.approx(0.5 * ubar) and fallback.df == math.inf


def test_as_if_real_is_the_first_analysis_alone():
    naive = dw.synthetic.combine(Q, U, "as_if_real", n=100, n_syn=200)
    half = stats.norm.ppf(0.975) * math.sqrt(2 * U[0])
    assert naive.estimate == Q[0] and naive.df == math.inf
    assert naive.interval == pytest.approx((Q[0] - half, Q[0] + half))


def test_combine_names_bad_input():
    with pytest.raises(ValueError, match="rule must be one of"):
        dw.synthetic.combine(Q, U, "rubin")
    with pytest.raises(ValueError, match="same length m >= 1, got 6 and 5"):
        dw.synthetic.combine(Q, U[:5], "posterior")
    with pytest.raises(ValueError, match="needs m >= 2 datasets, got 1"):
        dw.synthetic.combine(Q[:1], U[:1], "multiple_imputation")
    with pytest.raises(ValueError, match="variances must be finite and >= 0"):
        dw.synthetic.combine(Q, -U, "posterior")
    with pytest.raises(ValueError, match=r"level must be in \(0, 1\)"):
        dw.synthetic.combine(Q, U, "posterior", level=95)


@pytest.fixture(scope="module")
def run():
    model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
    result = dw.sample(model, mech, 31.4, 60, draws=200, tune=50, chains=2, seed=1,
                       databases=4, keep_stats=True, progress=False)
    return model, result


def test_imputed_databases_are_the_chains_databases_at_their_draws(run):
    _, result = run
    data = dw.synthetic.datasets(result, m=8)
    assert data.shape == (8, 60, 1) and data.attrs["kind"] == "imputed"
    stats_ = diagnostics.group(result, "imputed_statistic")["t"].values   # (chain, draw, 1)
    for j in range(8):
        chain, draw = int(data["chain"][j]), int(data["draw"][j])
        assert data.values[j].sum() == stats_[chain, draw, 0]
    # every chain contributes: consecutive picks alternate chains
    assert sorted(set(data["chain"].values.tolist())) == [0, 1]


def test_predictive_datasets_have_the_asked_size_and_distinct_draws(run):
    model, result = run
    data = dw.synthetic.datasets(result, m=10, kind="predictive", model=model, size=30, seed=2)
    assert data.shape == (10, 30, 1)
    assert len(set(zip(data["chain"].values, data["draw"].values))) == 10
    again = dw.synthetic.datasets(result, m=10, kind="predictive", model=model, size=30, seed=2)
    assert np.array_equal(data.values, again.values)
    frames = dw.synthetic.to_frames(data)
    assert len(frames) == 10 and frames[0].shape == (30, 1)


def test_datasets_name_bad_input(run):
    model, result = run
    with pytest.raises(ValueError, match=r"m = 9 is more than the 8 imputed databases the "
                                         r"result holds \(2 chains x 4\).*databases=5"):
        dw.synthetic.datasets(result, m=9)
    with pytest.raises(ValueError, match=r"m = 401 is more than the 400 posterior draws"):
        dw.synthetic.datasets(result, m=401, kind="predictive", model=model)
    with pytest.raises(ValueError, match=r"m must be an integer >= 1, got 0"):
        dw.synthetic.datasets(result, m=0)
    with pytest.raises(ValueError, match="kind='predictive' needs model="):
        dw.synthetic.datasets(result, m=2, kind="predictive")
    with pytest.raises(ValueError, match="kind must be 'imputed' or 'predictive'"):
        dw.synthetic.datasets(result, m=2, kind="posterior")
    with pytest.raises(ValueError, match=r"size must be an integer >= 1, got 0"):
        dw.synthetic.datasets(result, m=2, kind="predictive", model=model, size=0)
    with pytest.raises(ValueError, match="fields must name the 1 fields"):
        dw.synthetic.datasets(result, m=2, fields=["a", "b"])
    plain = dw.sample(beta_binomial.model(), beta_binomial.laplace(epsilon=0.5), 31.4, 60,
                      draws=20, tune=10, chains=1, seed=1, progress=False)
    with pytest.raises(ValueError, match="needs the imputed databases: run dw.sample with "
                                         "databases=k"):
        dw.synthetic.datasets(plain, m=2)
