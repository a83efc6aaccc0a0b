"""Synthetic datasets from a result and the combining rules (dawrap.studies.synthetic): the
rules against their formulas (Rubin 1987; Raghunathan, Reiter & Rubin 2003; Reiter 2002),
the default rule for each kind of dataset and the refusal of a rule that does not fit it,
the default m, the default route's coverage over repeated releases, the imputed databases
against the imputed statistic of the draw they were taken at, and bad input named. The
exactness of the datasets' distribution is checked against enumeration in
tests/models/marginals/test_marginals.py."""
import math
import warnings

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
    with pytest.warns(RuntimeWarning, match=r"nu = 1.85 degrees of freedom with m = 6"):
        fs = dw.synthetic.combine(Q, U, "fully_synthetic", kind="predictive", n=100,
                                  n_syn=100)                           # T_f > u_bar
    assert fs.variance == pytest.approx((1 + 1 / m) * b - ubar)
    assert fs.df == pytest.approx((m - 1) * (1 - ubar / ((1 + 1 / m) * b)) ** 2)
    close = Q.mean() + 0.001 * (Q - Q.mean())       # b tiny: T <= 0
    with pytest.raises(ValueError, match=r"'fully_synthetic' needs n and n_syn.*\(n_syn / n\) "
                                         r"u_bar"):
        dw.synthetic.combine(close, U, "fully_synthetic", kind="predictive")
    fallback = dw.synthetic.combine(close, U, "fully_synthetic", kind="predictive", n=1000,
                                    n_syn=500)
    assert fallback.variance == pytest.approx(0.5 * ubar) and fallback.df == math.inf


def test_as_if_real_is_the_first_analysis_alone():
    naive = dw.synthetic.combine(Q, U, "as_if_real", n=100, n_syn=200)
    half = stats.norm.ppf(0.975) * math.sqrt(2 * U[0])
    assert naive.estimate == Q[0] and naive.df == math.inf
    assert naive.interval == pytest.approx((Q[0] - half, Q[0] + half))


def test_the_default_rule_is_the_population_parameters_for_the_kind():
    # imputed databases (the default kind, as datasets'): Rubin's rule
    default = dw.synthetic.combine(Q, U)
    assert default == dw.synthetic.combine(Q, U, "multiple_imputation")
    assert default.rule == "multiple_imputation"
    assert default.variance == pytest.approx(U.mean() + (1 + 1 / len(Q)) * Q.var(ddof=1))
    # predictive datasets: the fully synthetic rule, the only one fitting them
    with pytest.warns(RuntimeWarning, match="nu = 1.85"):
        fresh = dw.synthetic.combine(Q, U, kind="predictive", n=100, n_syn=100)
    assert fresh.rule == "fully_synthetic"
    assert fresh.variance == pytest.approx((1 + 1 / len(Q)) * Q.var(ddof=1) - U.mean())
    assert dw.synthetic.RULES_FOR_KIND == {
        "imputed": ("multiple_imputation", "posterior", "as_if_real"),
        "predictive": ("fully_synthetic", "as_if_real")}


def test_a_rule_that_does_not_fit_the_kind_is_refused():
    # issue 45: fully_synthetic was taken for any estimates (on imputed databases its
    # variance, (1 + 1/m) b - u_bar, comes out too small or negative)
    with pytest.raises(ValueError, match=r"rule 'fully_synthetic' does not fit imputed "
                                         r"databases \(kind='imputed', the default\).*pass "
                                         r"kind='predictive'"):
        dw.synthetic.combine(Q, U, "fully_synthetic", n=100, n_syn=100)
    for rule in ("posterior", "multiple_imputation"):
        with pytest.raises(ValueError, match=rf"rule '{rule}' does not fit predictive datasets "
                                             rf".*take \('fully_synthetic', 'as_if_real'\)"):
            dw.synthetic.combine(Q, U, rule, kind="predictive")
    with pytest.raises(ValueError, match=r"kind must be 'imputed' or 'predictive', got "
                                         r"'synthetic'"):
        dw.synthetic.combine(Q, U, kind="synthetic")
    for kind in ("imputed", "predictive"):       # the naive analysis fits both
        assert dw.synthetic.combine(Q, U, "as_if_real", kind=kind).estimate == Q[0]


@pytest.mark.parametrize("rule", ["posterior", "multiple_imputation"])
def test_the_rules_of_imputed_databases_refuse_sizes(rule):
    # imputed databases hold the confidential n records: a size is a sign of a mix-up
    with pytest.raises(ValueError, match=rf"rule '{rule}' does not use n and n_syn \(got "
                                         rf"n=100, n_syn=50\)"):
        dw.synthetic.combine(Q, U, rule, n=100, n_syn=50)
    with pytest.raises(ValueError, match=r"\(got n=None, n_syn=50\)"):
        dw.synthetic.combine(Q, U, rule, n_syn=50)


def test_fully_synthetic_warns_when_its_degrees_of_freedom_are_few():
    # issue 45 repro: m = 20 predictive datasets of n_syn = n / 20 records; T_f = 0.0827 B
    # (B = (1 + 1/m) b) is above Reiter's floor 0.05 u_bar, so RRR's nu_f = 19 (0.0827)^2 =
    # 0.13, and the 95% t quantile is 10^9 times the normal's
    m = 20
    q = np.random.default_rng(3).normal(size=m)
    inflated = (1 + 1 / m) * q.var(ddof=1)
    ubar = (1 - math.sqrt(0.13 / (m - 1))) * inflated
    with pytest.warns(RuntimeWarning, match=r"rule 'fully_synthetic': nu = 0.13 degrees of "
                                            r"freedom with m = 20 datasets \(n_syn / n = "
                                            r"0.05\).*Use more datasets.*kind='imputed'"):
        out = dw.synthetic.combine(q, [ubar] * m, kind="predictive", n=2000, n_syn=100)
    assert out.df == pytest.approx(0.13) and out.variance == pytest.approx(inflated - ubar)
    half = stats.t.ppf(0.975, 0.13) * math.sqrt(inflated - ubar)
    assert out.interval == pytest.approx((q.mean() - half, q.mean() + half))
    # nu_f just above 3 (T_f = 0.40 B, above the floor 0.5 u_bar = 0.30 B): no warning
    ubar = (1 - math.sqrt(3.01 / (m - 1))) * inflated
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dw.synthetic.combine(q, [ubar] * m, kind="predictive", n=200,
                                    n_syn=100).df == pytest.approx(3.01)
        # the other rules' nu >= m - 1 can be small too (m = 2): no warning
        dw.synthetic.combine(q[:2], [ubar] * 2, "posterior")


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


def test_m_by_default_is_the_documented_rule_or_all_there_are(run):
    model, result = run
    assert dw.synthetic.DEFAULT_M == 1 + math.ceil(0.5 / 0.1 ** 2)   # cv 1/sqrt(2(m-1)) = 10%
    # 400 posterior draws: DEFAULT_M of them, evenly spread, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh = dw.synthetic.datasets(result, kind="predictive", model=model, seed=2)
    assert fresh.shape == (dw.synthetic.DEFAULT_M, 60, 1)
    assert len(set(zip(fresh["chain"].values, fresh["draw"].values))) == dw.synthetic.DEFAULT_M
    # 8 imputed databases: all of them, and the warning says how to keep enough
    with pytest.warns(RuntimeWarning, match=r"m=None: 8 datasets, all the imputed databases the "
                                            r"result holds \(2 chains x 4\), fewer than the 51 "
                                            r".*by up to 27% .*databases=26\) to keep 51"):
        data = dw.synthetic.datasets(result)
    assert data.shape == (8, 60, 1)
    assert np.array_equal(data.values, dw.synthetic.datasets(result, m=8).values)


@pytest.mark.filterwarnings("ignore:R-hat and ESS")
def test_m_by_default_needs_two_databases():
    one = dw.sample(beta_binomial.model(), beta_binomial.laplace(epsilon=0.5), 31.4, 60,
                    draws=50, tune=10, chains=1, seed=1, databases=1, progress=False)
    with pytest.raises(ValueError, match=r"m=None chooses 51 datasets, at least 2 to combine, "
                                         r"but there is only 1 of the imputed databases the "
                                         r"result holds \(1 chains x 1\): run "
                                         r"dw.sample\(\.\.\., databases=51\).*pass m=1"):
        dw.synthetic.datasets(one)
    assert dw.synthetic.datasets(one, m=1).shape == (1, 60, 1)


@pytest.mark.filterwarnings("ignore:R-hat and ESS")
def test_the_default_route_is_calibrated():
    # Releases of a proportion: p from the model's prior Beta(1, 1), n = 400 Bernoulli(p)
    # records, their count with Laplace noise of scale 5 (epsilon = 0.2; noise variance 50
    # against a binomial variance up to 100). dw.sample(databases=26) -> datasets(result)
    # (m = DEFAULT_M) -> combine(q, u), with q the proportion and u = q (1 - q) / n. Averaged
    # over the prior, the exact posterior's interval covers p with probability exactly
    # `level`; Rubin's rule approximates it. The posterior rule's interval covers the
    # confidential proportion, and misses p far more often (it leaves out u_bar), which is
    # why it is not the default.
    model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.2)
    rng = np.random.default_rng(45)
    releases, n = 200, 400
    hits = {"default 90": 0, "default 95": 0, "posterior 95": 0, "posterior 95 of p": 0}
    for _ in range(releases):
        p = rng.uniform()
        x = model.simulate({"p": p}, n=n, seed=rng)
        result = dw.sample(model, mech, mech.release(x, seed=rng), n, draws=260, tune=100,
                           chains=2, seed=int(rng.integers(2 ** 31)), databases=26,
                           progress=False)
        q = dw.synthetic.datasets(result).values[:, :, 0].mean(axis=1)
        u = q * (1 - q) / n
        for level in (0.9, 0.95):
            lo, hi = dw.synthetic.combine(q, u, level=level).interval
            hits[f"default {round(100 * level)}"] += lo <= p <= hi
        lo, hi = dw.synthetic.combine(q, u, "posterior").interval
        hits["posterior 95"] += lo <= x.mean() <= hi
        hits["posterior 95 of p"] += lo <= p <= hi
    # binomial Monte Carlo tolerance: a two-sided p-value above 0.001 (about 3.3 se)
    for key, level in (("default 90", 0.9), ("default 95", 0.95), ("posterior 95", 0.95)):
        assert stats.binomtest(hits[key], releases, level).pvalue > 0.001, (key, hits)
    assert stats.binomtest(hits["posterior 95 of p"], releases, 0.95,
                           alternative="less").pvalue < 0.001, hits
