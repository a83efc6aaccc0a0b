"""dawrap.opendp: a release made with OpenDP's Context API, read in one call, is the release
OpenDP made (its cells, its noise, its bounds), and its posterior is the exact one."""
import warnings

import numpy as np
import pytest
from scipy import special

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial
from dawrap.reference import BetaMixture, relative_log_g

dp = pytest.importorskip("opendp.prelude")
if tuple(int(v) for v in dp.__version__.split(".")[:2]) < (0, 16):
    pytest.skip(f"dawrap.opendp reads OpenDP >= 0.16's Context API, this is {dp.__version__}",
                allow_module_level=True)
pl = pytest.importorskip("polars")
from dawrap.opendp import from_query  # noqa: E402  (after the skips)

dp.enable_features("contrib")
pytestmark = pytest.mark.filterwarnings("ignore:The default value is currently signed=False")


def _context(data, epsilon=1.0, queries=1, keys=("sex",), invariant="keys", unit=None):
    margins = [dp.polars.Margin(by=[], max_length=10_000)]
    if keys:
        margins.append(dp.polars.Margin(by=list(keys), invariant=invariant, max_length=10_000,
                                           max_groups=10))
    return dp.Context.compositor(
        data=data.lazy(), privacy_unit=unit or dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=epsilon), split_evenly_over=queries, margins=margins)


def _people(n=60, seed=3):
    rng = np.random.default_rng(seed)
    return pl.DataFrame({"sex": rng.choice(["F", "M"], n), "age": rng.integers(0, 100, n),
                         "income": rng.normal(40.0, 30.0, n)})


def test_a_grouped_count_and_clamped_sums_are_the_query_opendp_ran():
    data = _people()
    query = (_context(data, queries=1).query().group_by("sex")
             .agg(dp.len(), pl.col("age").fill_null(0).dp.sum((10, 80)),
                  pl.col("income").fill_null(0.0).dp.sum((0.0, 50.0))))
    released = query.release().collect()
    read = from_query(query, released, columns={"sex": 0, "age": 1, "income": 2},
                      categories={"sex": ["F", "M"]})
    # the cells in the released rows' order, every aggregate of a row together
    assert [k for (k,) in read.keys] == released["sex"].to_list()
    assert [a.kind for a in read.aggregates] == ["count", "sum", "sum"]
    assert [(a.lower, a.upper) for a in read.aggregates[1:]] == [(10.0, 80.0), (0.0, 50.0)]
    assert np.array_equal(read.s_dp, released.select("len", "age", "income").to_numpy()
                          .astype(float).ravel())
    # the noise OpenDP reports, cell by cell
    report = query.summarize().to_dicts()
    assert read.mechanism.noise.family == "laplace"
    assert read.mechanism.noise.scale.tolist() == [r["scale"] for r in report] * 2
    # the statistic of the confidential records is the non-private answer of the query
    codes = (data["sex"] == "M").cast(int).to_numpy()
    x = np.column_stack([codes, data["age"].to_numpy(), data["income"].to_numpy()]
                        ).astype(float)
    truth = (data.group_by("sex").agg(pl.len().cast(float).alias("len"),
                                      pl.col("age").clip(10, 80).sum().cast(float),
                                      pl.col("income").clip(0.0, 50.0).sum()))
    truth = {row[0]: row[1:] for row in truth.rows()}
    expected = np.concatenate([truth[k] for (k,) in read.keys])
    assert np.allclose(read.mechanism.total(x), expected, rtol=1e-12)


@pytest.mark.slow   # compiles the record chain of beta_binomial with the read statistic
def test_the_posterior_of_a_count_released_by_sex_is_the_exact_one(check_posterior):
    """beta_binomial's records: x_i = 1 (M) with probability p; OpenDP releases the count of
    each sex with integer Laplace noise (clamped at zero: the same posterior, module
    docstring). The exact posterior sums over the number k of M records."""
    n, a, b = 12, 1.0, 1.0
    data = pl.DataFrame({"sex": ["M"] * 4 + ["F"] * (n - 4)})
    query = _context(data, epsilon=0.5).query().group_by("sex").agg(dp.len())
    released = query.release().collect()
    read = from_query(query, released, columns={"sex": 0}, categories={"sex": ["F", "M"]})
    k = np.arange(n + 1)
    rows = {key: r for r, (key,) in enumerate(read.keys)}
    totals = np.zeros((n + 1, 2))
    totals[:, rows["F"]], totals[:, rows["M"]] = n - k, k
    log_w = (special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
             + special.betaln(a + k, b + n - k) + relative_log_g(read.mechanism, read.s_dp,
                                                                 totals))
    exact = BetaMixture(np.exp(log_w - log_w.max()), a + k, b + n - k)
    idata = dw.sample(beta_binomial.model(a, b), read.mechanism, read.s_dp, n, draws=2000,
                      tune=500, chains=4, seed=11, progress=False)
    check_posterior(diagnostics.group(idata, "posterior")["p"].values, exact)


def test_a_count_without_groups_and_replace_one_accounting_are_read():
    data = _people(40)
    unit = dp.unit_of(changes=1)
    context = dp.Context.compositor(
        data=data.lazy(), privacy_unit=unit, privacy_loss=dp.loss_of(rho=0.5),
        split_evenly_over=1, margins=[dp.polars.Margin(by=[], max_length=1000,
                                                       invariant="lengths")])
    query = context.query().select(pl.col("age").fill_null(0).dp.sum((0, 100)))
    released = query.release().collect()
    read = from_query(query, released, columns={"age": 0})
    assert read.keys == [()] and read.mechanism.noise.family == "gaussian"
    assert read.mechanism.noise.scale.tolist() == [query.summarize()["scale"][0]]
    assert read.s_dp.tolist() == [float(released["age"][0])]


def test_what_cannot_be_read_is_named():
    data = _people()
    context = _context(data, queries=6)
    with pytest.raises(ValueError, match="only pl.col"):
        from_query(q := context.query().select(
            (pl.col("age") * 2).fill_null(0).dp.sum((0, 200))), q.release().collect(),
            columns={"age": 0})
    with pytest.raises(ValueError, match="means by group cannot be read yet"):
        q = context.query().group_by("sex").agg(pl.col("age").fill_null(0).dp.mean((0, 100)))
        from_query(q, q.release().collect(), columns={"sex": 0, "age": 1},
                   categories={"sex": ["F", "M"]})
    q = context.query().group_by("sex").agg(dp.len())
    released = q.release().collect()
    with pytest.raises(ValueError, match="categories: give the codes"):
        from_query(q, released, columns={"sex": 0})
    with pytest.raises(ValueError, match="columns: give the record column of \\['sex'\\]"):
        from_query(q, released, columns={}, categories={"sex": ["F", "M"]})
    with pytest.raises(ValueError, match="no row for \\{'sex': 'X'\\}"):
        from_query(q, released, columns={"sex": 0}, categories={"sex": ["F", "M", "X"]})
    with pytest.raises(ValueError, match="'M' is not among"):
        from_query(q, released, columns={"sex": 0}, categories={"sex": ["F"]})
    with pytest.raises(ValueError, match="is it this query's"):
        from_query(q, released.with_columns(pl.lit(1).alias("extra")), columns={"sex": 0},
                   categories={"sex": ["F", "M"]})
    with pytest.raises(TypeError, match="OpenDP Context query"):
        from_query(released, released, columns={"sex": 0})
    # keys that were not public: OpenDP thresholds the groups
    private = dp.Context.compositor(
        data=data.lazy(), privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=1.0, delta=1e-7), split_evenly_over=1,
        margins=[dp.polars.Margin(by=[], max_length=10_000)])
    q = private.query().group_by("sex").agg(dp.len())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        released = q.release().collect()
    with pytest.raises(ValueError, match="keys are not public"):
        from_query(q, released, columns={"sex": 0}, categories={"sex": ["F", "M"]})


def test_a_record_outside_the_categories_stops_the_run():
    data = pl.DataFrame({"sex": ["F", "M", "M"]})
    q = _context(data).query().group_by("sex").agg(dp.len())
    read = from_query(q, q.release().collect(), columns={"sex": 0},
                      categories={"sex": ["F", "M"]})
    out = np.zeros(read.mechanism.size)
    read.mechanism.statistic(np.array([2.0]), out)
    assert np.all(np.isnan(out))


def test_simulated_releases_have_opendps_noise_and_clamp_unsigned_counts():
    data = _people(30)
    q = (_context(data).query().group_by("sex")
         .agg(dp.len().alias("n"), pl.col("income").fill_null(0.0).dp.sum((0.0, 50.0))))
    read = from_query(q, q.release().collect(), columns={"sex": 0, "income": 1},
                      categories={"sex": ["F", "M"]})
    assert [a.name for a in read.aggregates] == ["n", "income"]
    assert [a.signed for a in read.aggregates] == [False, True]
    rng, t, draws = np.random.default_rng(7), np.array([0.0, 10.5, 40.0, 20.25]), 20_000
    releases = np.array([read.mechanism.release_given_total(rng, t) for _ in range(draws)])
    counts, sums = releases[:, [0, 2]], releases[:, [1, 3]]
    assert np.all(counts == np.round(counts)) and np.all(counts >= 0)
    assert np.any(counts[:, 0] == 0) and np.any(sums != np.round(sums))
    # the other coordinates (a count of 40: clamped with probability e^-20): mean t, variance
    # the law's, within 4 standard errors
    # (Laplace-form noise has kurtosis 6, so the sample variance's sd is var sqrt(5 / N))
    variance = read.mechanism.noise.variance
    for j in (1, 2, 3):
        z = releases[:, j] - t[j]
        assert abs(z.mean()) < 4 * np.sqrt(variance[j] / draws)
        assert abs(z.var() - variance[j]) < 4 * variance[j] * np.sqrt(5 / draws)


def test_quantile_scores_are_opendps_on_random_data():
    """dawrap's scores of every candidate equal OpenDP's own transformation's, with ties at
    the candidates, for exact and rounded levels, with and without a known size."""
    from dawrap.mechanisms import Quantiles
    rng = np.random.default_rng(9)
    candidates = [3.0, 7.0, 10.0, 12.0, 19.0]
    for trial, alpha in enumerate([0.5, 0.25, 0.1, 0.3, 0.77, 0.9]):
        x = rng.integers(0, 22, 57).astype(float).tolist()
        for size in (None, 57):
            domain = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=size)
            theirs = dp.t.make_quantile_score_candidates(domain, dp.symmetric_distance(),
                                                         candidates, alpha)(x)
            mech = Quantiles([alpha], candidates, scale=1.0, size_limit=size)
            assert mech.scores(mech.total(np.array(x))) == [list(theirs)], (alpha, size)


@pytest.mark.parametrize("loss", ["epsilon", "rho"])
def test_quantiles_read_from_a_query_are_selected_as_opendp_selects(loss, chi_square_p):
    """The median and first quartile of a Context query, read by from_query: OpenDP's own
    measurement, run 600 times on the data, selects each candidate as often as the read
    mechanism's probabilities say (chi-square; OpenDP's noise is not seeded, so the test
    fails by chance with probability 2e-4)."""
    data = pl.DataFrame({"age": np.repeat([1.0, 4.0, 6.0, 9.0, 13.0, 20.0], [4, 3, 6, 2, 5, 3])})
    context = dp.Context.compositor(
        data=data.lazy(), privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(**{loss: 2.0}), split_evenly_over=1,
        margins=[dp.polars.Margin(by=[], max_length=100)])
    query = context.query().select(
        pl.col("age").dp.median([2.0, 5.0, 6.0, 10.0, 15.0]).alias("median"),
        pl.col("age").dp.quantile(0.25, [2.0, 5.0, 6.0, 10.0]).alias("q1"))
    measurement = query.resolve()
    read = from_query(query, measurement(data.lazy()).collect(), columns={"age": 0})
    mech = read.mechanism
    assert mech.noise_kind == {"epsilon": "exponential", "rho": "gumbel"}[loss]
    assert [a.alpha for a in read.aggregates] == [0.5, 0.25]
    assert list(mech.scale) == query.summarize()["scale"].to_list()
    t = mech.total(data["age"].to_numpy())
    runs = np.array([measurement(data.lazy()).collect().row(0) for _ in range(600)])
    for q, (other, both) in enumerate([(1, lambda a, b: [a, b]), (0, lambda a, b: [b, a])]):
        p = np.array([sum(np.exp(mech.log_g(both(c, d), t)) for d in mech.candidates[other])
                      for c in mech.candidates[q]])
        observed = np.array([np.sum(runs[:, q] == c) for c in mech.candidates[q]])
        assert chi_square_p(observed, p) > 1e-4, (q, observed, 600 * p)


def test_quantile_queries_that_cannot_be_read_are_named():
    data = _people()
    context = _context(data, queries=8)
    q = context.query().group_by("sex").agg(pl.col("age").fill_null(0).dp.median([20, 50, 80]))
    with pytest.raises(ValueError, match="quantiles by group"):
        from_query(q, q.release().collect(), columns={"sex": 0, "age": 1},
                   categories={"sex": ["F", "M"]})
    q = context.query().select(dp.len(), pl.col("age").fill_null(0).dp.median([20, 50, 80]))
    with pytest.raises(ValueError, match="together with counts or sums"):
        from_query(q, q.release().collect(), columns={"age": 0})
    q = context.query().select(pl.col("age").fill_null(0).dp.median([20, 50, 80]),
                               pl.col("income").fill_null(0.0).dp.median([0.0, 40.0]))
    with pytest.raises(ValueError, match="quantiles of one column per query"):
        from_query(q, q.release().collect(), columns={"age": 0, "income": 1})
    q = context.query().select(pl.col("age").fill_null(0).dp.median([20, 50, 80]))
    released = q.release().collect()
    with pytest.raises(ValueError, match="columns: give the record column"):
        from_query(q, released, columns={})
    with pytest.raises(ValueError, match="not one of quantile 0's candidates"):
        from_query(q, released.with_columns(pl.lit(51).alias("age")), columns={"age": 0})


def test_means_read_from_a_query_are_released_as_opendp_releases_them(chi_square_p):
    """An integer column's mean (a noisy integer sum over a noisy count, as a ratio): OpenDP's
    own measurement, run 1500 times, releases each of the commonest values as often as the
    read mechanism's probabilities say (chi-square over them and the rest; OpenDP is not
    seeded: the test fails by chance with probability 1e-4)."""
    data = pl.DataFrame({"visits": [0, 1, 1, 2, 0, 1, 3, 1, 0, 2, 1, 1]})
    context = dp.Context.compositor(
        data=data.lazy(), privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=4.0), split_evenly_over=1,
        margins=[dp.polars.Margin(by=[], max_length=100)])
    query = context.query().select(pl.col("visits").fill_null(0).dp.mean((0, 3)))
    measurement = query.resolve()
    read = from_query(query, measurement(data.lazy()).collect(), columns={"visits": 0})
    mech = read.mechanism
    report = query.summarize()
    assert mech.sum_scale == (report["scale"][0],) and mech.count_scale == (report["scale"][1],)
    assert mech.integer_sum == (True,) and mech.bounds == ((0.0, 3.0),)
    t = mech.total(data["visits"].to_numpy().astype(float))
    runs = np.array([measurement(data.lazy()).collect().item() for _ in range(1500)])
    values, seen = np.unique(runs[np.isfinite(runs)], return_counts=True)
    common = np.argsort(seen)[::-1][:12]
    p = np.array([np.exp(mech.log_g([v], t)) for v in values[common]])
    observed = np.r_[seen[common], len(runs) - seen[common].sum()]
    assert chi_square_p(observed, np.r_[p, 1.0 - p.sum()]) > 1e-4, (values[common], observed)


@pytest.mark.slow   # compiles the record chain of beta_binomial with the means' statistic
def test_the_posterior_from_a_released_mean_is_the_exact_one(check_posterior):
    """beta_binomial's 0/1 records; a mean released as OpenDP's Means mechanism releases it
    (integer noise on the count of ones and on n). The exact posterior sums over the number
    k of ones."""
    from dawrap.mechanisms import Means
    n, a, b = 15, 1.0, 1.0
    mech = Means([0], [(0.0, 1.0)], sum_scale=[2.0], count_scale=[2.0], integer_sum=[True])
    x = beta_binomial.model(a, b).simulate({"p": 0.3}, n=n, seed=5)
    s_dp = mech.release(x, seed=6)
    k = np.arange(n + 1)
    log_w = (special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
             + special.betaln(a + k, b + n - k)
             + relative_log_g(mech, s_dp, np.column_stack([k, np.full(n + 1, n)])))
    exact = BetaMixture(np.exp(log_w - log_w.max()), a + k, b + n - k)
    idata = dw.sample(beta_binomial.model(a, b), mech, s_dp, n, draws=2000, tune=500,
                      chains=4, seed=13, progress=False)
    check_posterior(diagnostics.group(idata, "posterior")["p"].values, exact)
