"""The census model: the release's sensitivities brute-forced, the statistic's sparse form,
the theta step's pieces against exact laws, the exact posterior by enumeration on tiny
geographies (two prior levels; cross-classified marginal queries; unit totals public only
above the blocks), the start, and bad input named."""
import itertools
import math

import numba
import numpy as np
import pytest
from scipy import special

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import census, small_area
from dawrap.models.census import draws as cm
from dawrap.models.census.levelled import discrete_gaussian_noise
from dawrap.runner import grouped as grouped_runner
from dawrap.reference import BetaMixture, normalise_log_weights, relative_log_g

GEO = census.Geography({"county": [0, 0, 0, 1], "tract": [0, 0, 1, 2], "block": [0, 1, 2, 3]},
                       {"age": 2, "race": 3})
QUERIES = [census.query("block", "total", rho=0.5), census.query("block", "age", rho=0.25),
           census.query("tract", ("race", "age"), rho=1.0),
           census.query("county", "detailed", rho=2.0)]


def all_records(geo):
    return [np.array([u, c], float) for u in range(geo.units[-1]) for c in range(geo.cells)]


def test_every_query_moves_by_sqrt2_at_most_when_a_record_is_replaced():
    mech = census.discrete_gaussian(GEO, QUERIES)
    layout = census.layout_of(mech)
    worst = np.zeros(len(QUERIES))
    for u, v in itertools.product(all_records(GEO), repeat=2):
        d = mech.total(u[None]) - mech.total(v[None])
        for q in range(len(QUERIES)):
            worst[q] = max(worst[q], np.sum(layout.table(d, q) ** 2))
    assert worst.tolist() == [2.0] * len(QUERIES)
    assert mech.sensitivity == pytest.approx(math.sqrt(2.0))
    assert mech.sigmas == pytest.approx([1 / math.sqrt(q.rho) for q in QUERIES])
    assert mech.privacy["rho"] == pytest.approx(3.75)
    assert layout.sizes.tolist() == [4, 8, 18, 12]      # units x marginal cells


def test_the_sparse_entries_are_the_dense_statistic_and_count_each_query_once():
    mech = census.discrete_gaussian(GEO, QUERIES)
    assert mech.sparse.nnz == len(QUERIES)
    layout = census.layout_of(mech)
    for x_i in all_records(GEO):
        t = mech.total(x_i[None])
        dense = np.empty(mech.size)
        mech.statistic(x_i, dense)
        assert np.array_equal(t, dense)
        assert [layout.table(t, q).sum() for q in range(len(QUERIES))] == [1.0] * 4
    # the cross-classified cell: block 2 (tract 1, county 0), age 1, race 2 -> cell 5
    t = mech.total(np.array([[2.0, 5.0]]))
    assert layout.table(t, 1)[2].tolist() == [0.0, 1.0]           # block 2 by age
    assert layout.table(t, 2)[1].tolist() == [0, 0, 0, 0, 0, 1.0]  # tract 1, race 2 x age 1
    out = np.empty(mech.size)
    mech.statistic(np.array([4.0, 0.0]), out)                     # no such block
    assert not out.any()


def test_geography_and_queries_name_what_is_wrong():
    with pytest.raises(ValueError, match="not nested: unit 1 of level 'tract' lies in more"):
        census.Geography({"county": [0, 1], "tract": [1, 1], "block": [0, 1]}, 2)
    with pytest.raises(ValueError, match="one code per unit of the finest level"):
        census.Geography({"tract": [0], "block": [0, 1]}, 2)
    with pytest.raises(ValueError, match="attribute 'race' must have a whole number"):
        census.Geography({"block": [0]}, {"race": 0})
    with pytest.raises(ValueError, match="unknown attribute 'sex'"):
        census.discrete_gaussian(GEO, [census.query("tract", ("sex",))])
    with pytest.raises(ValueError, match="unknown geography level 'state'"):
        census.discrete_gaussian(GEO, [census.query("state")])
    for rho in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="rho must be a finite number > 0"):
            census.query("block", rho=rho)
    with pytest.raises(ValueError, match="totals must give one number per unit of level "
                                         "'tract'"):
        census.model(GEO, totals=[3, 4], invariant="tract")
    with pytest.raises(ValueError, match="levels must be distinct geography levels"):
        census.model(GEO, totals=[1, 2, 3, 4], levels=("tract", "county"))


def test_plain_data_and_small_area_name_bad_budgets_attributes_and_nesting():
    plain = {"levels": {"tract": [0, 0, 1], "block": [0, 1, 2]}, "attributes": {"age": 2}}
    for rho in (0, -1, "a"):
        with pytest.raises(ValueError, match=r"query\('block', 'total'\): rho must be a "
                                             r"finite number > 0"):
            census.discrete_gaussian(plain, [["block", "total", rho]])
    with pytest.raises(ValueError, match=r"query\('block', \('sex',\)\): unknown attribute "
                                         r"'sex'; the attributes are \['age'\]"):
        census.discrete_gaussian(plain, [{"level": "block", "marginal": ["sex"]}])
    with pytest.raises(ValueError, match="unknown attribute 'sex'"):
        census.discrete_gaussian(GEO, [census.query("tract", "sex")])
    with pytest.raises(ValueError, match="levels are not nested: unit 1 of level 'tract'"):
        census.as_geography({"levels": {"county": [0, 1], "tract": [1, 1], "block": [0, 1]},
                             "attributes": 2})
    for totals in ([1, -2, 3, 4], [1, 2.5, 3, 4]):
        with pytest.raises(ValueError, match="census.model: totals must be a list of whole "
                                             "numbers >= 0"):
            census.model(GEO, totals=totals)
    for rho in ((0.0, 0.5), (-1.0, 0.5)):
        with pytest.raises(ValueError, match="small_area.discrete_gaussian: one positive "
                                             "finite rho per level"):
            small_area.discrete_gaussian([0, 1], 3, rho=rho)


def test_a_release_of_other_sizes_units_or_attributes_is_named():
    model = census.model(GEO, totals=[3, 4, 5, 1])
    mech = census.discrete_gaussian(GEO, [census.query("block", "age", rho=0.5),
                                          census.query("tract", rho=1.0)])
    counts = np.array([[1, 1, 1, 0, 0, 0], [2, 2, 0, 0, 0, 0], [5, 0, 0, 0, 0, 0],
                       [0, 0, 0, 0, 0, 1]])
    s_dp = mech.release(census.records(counts), seed=0)
    rng = np.random.default_rng(1)
    with pytest.raises(ValueError, match="n = 14 but the model's public totals of level "
                                         "'block' add up to 13"):
        model.start_database(rng, None, 14, mech, s_dp, None)
    with pytest.raises(ValueError, match="init_x puts 4 records in unit 0 of level 'block', "
                                         "whose public total is 3"):
        model.start_database(rng, None, 13, mech, s_dp, census.records(counts[[1, 1, 2, 3]]))
    other_units = census.Geography({"tract": [0, 1, 2], "block": [0, 1, 2]},
                                   {"age": 2, "race": 3})
    mech_units = census.discrete_gaussian(other_units, [census.query("block", rho=0.5)])
    with pytest.raises(ValueError, match="the mechanism releases tables over 3 finest units "
                                         "and 6 cells, but the model's geography has 4"):
        model.start_database(rng, None, 13, mech_units, np.zeros(mech_units.size), None)
    # the same numbers of units and cells, the cells read as other attributes: was accepted,
    # and the release's marginals taken over the wrong cells
    swapped = census.Geography({"county": [0, 0, 0, 1], "tract": [0, 0, 1, 2],
                                "block": [0, 1, 2, 3]}, {"age": 3, "race": 2})
    mech_swapped = census.discrete_gaussian(swapped, [census.query("block", "age", rho=0.5)])
    with pytest.raises(ValueError, match=r"the mechanism cross-classifies persons by "
                                         r"\{'age': 3, 'race': 2\}, but the model by "
                                         r"\{'age': 2, 'race': 3\}"):
        model.start_database(rng, None, 13, mech_swapped, np.zeros(mech_swapped.size), None)
    with pytest.raises(ValueError, match="s_dp must have 26 value"):
        dw.sample(model, mech, s_dp[:-1], 13, draws=2, tune=0, chains=1, progress=False)


def test_small_area_refuses_infinite_sizes_and_steps_and_fractional_steps():
    # issue 29, item 18: these were accepted (a numpy cast warning, garbage shares)
    for sizes in ([5, math.inf], [5, 1e19], [5, 2.5]):
        with pytest.raises(ValueError, match="small_area: sizes must be a list of positive"):
            small_area.model(sizes, 3)
    with pytest.raises(ValueError, match="step must be a finite number > 0"):
        small_area.model([5, 4], 3, hyper_kernel="metropolis", step=math.inf)
    with pytest.raises(ValueError, match="hyper_steps must be a whole number >= 1, got 2.5"):
        small_area.model([5, 4], 3, hyper_steps=2.5)
    with pytest.raises(ValueError, match="one positive finite rho per level"):
        small_area.discrete_gaussian([0, 1], 3, rho=(0.5, math.inf))


@pytest.mark.slow
def test_the_start_holds_the_public_sizes_and_init_x_must_too():
    # issue 29, item 6: init_x of other sizes (or none) silently replaced the public sizes
    sizes = [120, 80, 100]
    model = small_area.model(sizes, 3)
    mech = small_area.discrete_gaussian([0, 0, 1], 3, rho=(0.5, 0.5))
    s_dp = mech.release(small_area.records(sizes, np.repeat([0, 1, 2], sizes)), seed=0)
    theta = model.pack(model.draw_prior(np.random.default_rng(0)))
    with pytest.raises(ValueError, match="init_x puts 100 records in unit 0 of level 'area', "
                                         "whose public total is 120"):
        model.start_database(np.random.default_rng(1), theta, 300, mech, s_dp,
                             small_area.records([100, 100, 100]))
    with pytest.raises(ValueError, match="init_x puts"):
        dw.sample(model, mech, s_dp, 300, init_x=small_area.records([100, 100, 100]),
                  draws=2, tune=0, chains=1, progress=False)
    with pytest.raises(ValueError, match="n = 301 but the model's public totals"):
        model.start_database(np.random.default_rng(1), theta, 301, mech, s_dp, None)
    x = model.start_database(np.random.default_rng(1), theta, 300, mech, s_dp, None)
    assert np.bincount(x[:, 0].astype(int)).tolist() == sizes
    # drawn from the release: area 1's records are all in category 1, as its counts say
    assert np.mean(x[x[:, 0] == 1, 1] == 1) > 0.9


@pytest.mark.slow
def test_a_mechanism_over_other_areas_is_named_not_blamed_on_declare_sparse():
    # issue 29, item 18: a model/mechanism area mismatch blamed declare_sparse
    model = small_area.model([3, 4, 5], 2)
    mech = small_area.discrete_gaussian([0, 0, 1, 1], 2, rho=(0.5, 0.5))
    s_dp = mech.release(small_area.records([3, 4, 5, 1]), seed=0)
    with pytest.raises(ValueError, match="the mechanism releases tables over 4 finest units "
                                         "and 2 cells, but the model's geography has 3"):
        dw.sample(model, mech, s_dp, 12, draws=2, tune=0, chains=1, progress=False)


def test_the_release_informed_start_follows_a_precise_release():
    geo = census.Geography({"tract": [0, 0, 1], "block": [0, 1, 2]}, {"age": 2, "race": 2})
    counts = np.array([[5, 0, 3, 2], [0, 4, 0, 6], [1, 1, 7, 1]])
    mech = census.discrete_gaussian(geo, [census.query("block", "detailed", rho=1e4)])
    s_dp = mech.release(census.records(counts), seed=3)
    model = census.model(geo, counts.sum(axis=1))
    theta = model.pack(model.draw_prior(np.random.default_rng(0)))
    x = model.start_database(np.random.default_rng(2), theta, int(counts.sum()), mech, s_dp,
                             None)
    start = np.zeros((3, 4), int)
    np.add.at(start, (x[:, 0].astype(int), x[:, 1].astype(int)), 1)
    # the noisy counts (sd 0.01), rounded within each block's size: the truth
    assert np.array_equal(start, counts)


def test_simulated_discrete_gaussian_noise_has_the_exact_law():
    rng = np.random.default_rng(7)
    draws = 200_000
    for sigma in (0.4, 1.7, 4.0):
        z = discrete_gaussian_noise(rng, np.full(draws, sigma))
        k = np.arange(-40, 41)
        pmf = np.exp(-k ** 2 / (2 * sigma ** 2))
        pmf /= pmf.sum()
        seen = np.array([(z == v).sum() for v in k]) / draws
        se = np.sqrt(pmf * (1 - pmf) / draws)
        assert np.all(np.abs(seen - pmf) <= 4 * se + 1e-12), sigma


def _stirling_first(n):
    s = np.zeros((n + 1, n + 1))
    s[0, 0] = 1
    for i in range(1, n + 1):
        for m in range(1, i + 1):
            s[i, m] = s[i - 1, m - 1] + (i - 1) * s[i - 1, m]
    return s


@numba.njit
def _table_counts(rng, n, beta, draws):
    return np.array([cm.table_count(rng, n, beta) for _ in range(draws)])


def test_table_counts_follow_the_antoniak_law():
    n, beta, draws = 7, 1.3, 100_000
    seen = np.bincount(_table_counts(np.random.default_rng(3), n, beta, draws),
                       minlength=n + 1)
    law = _stirling_first(n)[n] * beta ** np.arange(n + 1)
    law /= law.sum()
    se = np.sqrt(law * (1 - law) / draws)
    assert np.all(np.abs(seen / draws - law) <= 4 * se + 1e-12)


def test_digamma_and_the_dirichlet_multinomial_likelihood_and_gradient():
    for x in (1e-8, 0.3, 2.5, 7.0, 1e4):
        assert cm.digamma(x) == pytest.approx(special.digamma(x), rel=1e-12)
    counts = np.array([[3, 0, 1], [0, 0, 2], [3, 5, 40], [1, 0, 0]], float)
    rows = cm.compress_counts(counts.ravel(), 4, 3)
    alpha = np.array([0.7, 2.0, 1e-3])
    direct = sum(special.gammaln(alpha + m).sum() - special.gammaln(alpha).sum()
                 - special.gammaln(alpha.sum() + m.sum()) + special.gammaln(alpha.sum())
                 for m in counts)
    assert cm.dm_log_likelihood(alpha, rows) == pytest.approx(direct, rel=1e-12)
    grad = cm.dm_log_likelihood_grad(alpha, rows)
    h = 1e-6
    for c in range(3):
        up, down = np.log(alpha).copy(), np.log(alpha).copy()
        up[c] += h
        down[c] -= h
        numeric = (cm.dm_log_likelihood(np.exp(up), rows)
                   - cm.dm_log_likelihood(np.exp(down), rows)) / (2 * h)
        assert grad[c] == pytest.approx(numeric, rel=1e-6, abs=1e-8)


# -- exactness: the sampler against the posterior by enumeration ---------------------------

def _tables(sizes, cells):
    """Every table of counts (one count vector per unit, summing to its size)."""
    per_unit = [[c + (n - sum(c),) for c in itertools.product(range(n + 1), repeat=cells - 1)
                 if sum(c) <= n] for n in sizes]
    return np.array([np.array(t) for t in itertools.product(*per_unit)], float)


def _log_g(mech, s_dp, tables):
    totals = np.array([mech.total(census.records(t)) for t in tables])
    return relative_log_g(mech, s_dp, totals)


def _sample(model, mech, s_dp, n, seed, draws=3000, **kwargs):
    return dw.sample(model, mech, s_dp, n, draws=draws, tune=1000, chains=4, seed=seed,
                     progress=False, **kwargs)


def _check_moments(draws, mean, sd):
    if sd == 0.0:  # a coordinate the model fixes (a public total): the same in every draw,
        # the exact mean up to the float rounding of its weighted sum (5.000000000000001)
        assert np.all(draws == draws.flat[0]) and draws.flat[0] == pytest.approx(mean, rel=1e-12)
        return
    m = diagnostics.mcse(draws, "mean")
    assert abs(draws.mean() - mean) < 4 * m, (draws.mean(), mean, m)
    assert abs(draws.std() - sd) < 4 * diagnostics.mcse(draws, "sd"), (draws.std(), sd)


@pytest.mark.slow
def test_two_prior_levels_with_learned_alpha_and_kappa_are_exact(monkeypatch):
    # one tract of two blocks, two categories; p_tract ~ Beta(alpha), blocks
    # Dirichlet(kappa p_tract); exact: tables x grid over log alpha (2-D) x Gauss-Jacobi
    # nodes for p_tract x grid over log kappa. Serial, then on two threads: the model's
    # partition groups the records by block, the tract's cells shared (pieces), and the
    # collapsed move runs in the groups, each drawing its block's row of p.
    geo = census.Geography({"tract": [0, 0], "block": [0, 1]}, 2)
    sizes, a0, b0, ka, kb = [2, 3], 2.0, 1.0, 2.0, 0.2
    model = census.model(geo, sizes, kappa=(ka, kb))
    mech = census.discrete_gaussian(geo, [census.query("block", rho=0.5),
                                          census.query("tract", rho=0.5)])
    s_dp = mech.release(census.records([[1, 1], [3, 0]]), seed=5)
    tables = _tables(sizes, 2)                                     # (12, 2 blocks, 2)
    log_g = _log_g(mech, s_dp, tables)
    u1 = np.linspace(-5, 4, 31)
    u1 = 0.5 * (u1[1:] + u1[:-1])
    lk = np.linspace(-6, 7, 101)
    lk = 0.5 * (lk[1:] + lk[:-1])
    kappa = np.exp(lk)
    nodes = 16
    acc = {k: 0.0 for k in ("w", "ua0", "ua0^2", "ua1", "ua1^2", "lk", "lk^2", "pt", "pt^2",
                            "pb", "pb^2")}
    for ua in itertools.product(u1, repeat=2):
        alpha = np.exp(ua)
        x, w = special.roots_jacobi(nodes, alpha[1] - 1, alpha[0] - 1)
        pt = (1 + x) / 2
        w = w / 2 ** (alpha.sum() - 1) / special.beta(*alpha)  # Beta(alpha) weights on pt
        log_prior = (a0 * np.asarray(ua) - b0 * alpha).sum() + ka * lk - kb * kappa
        b1, b2 = kappa[None, :] * pt[:, None], kappa[None, :] * (1 - pt[:, None])
        lw = np.log(w)[:, None, None] + log_prior[None, :, None] + log_g[None, None, :]
        for b, n in enumerate(sizes):
            m0 = tables[:, b, 0]
            lw += (special.gammaln(b1[..., None] + m0) + special.gammaln(b2[..., None] + n - m0)
                   - special.gammaln(b1 + b2 + n)[..., None] - special.betaln(b1, b2)[..., None]
                   + special.gammaln(n + 1) - special.gammaln(m0 + 1)
                   - special.gammaln(n - m0 + 1))
        wt = np.exp(lw)
        acc["w"] += wt.sum()
        for c in (0, 1):
            acc[f"ua{c}"] += ua[c] * wt.sum()
            acc[f"ua{c}^2"] += ua[c] ** 2 * wt.sum()
        acc["lk"] += (wt.sum(axis=(0, 2)) * lk).sum()
        acc["lk^2"] += (wt.sum(axis=(0, 2)) * lk ** 2).sum()
        acc["pt"] += (wt.sum(axis=(1, 2)) * pt).sum()
        acc["pt^2"] += (wt.sum(axis=(1, 2)) * pt ** 2).sum()
        a, bb = b1[..., None] + tables[:, 0, 0], b2[..., None] + sizes[0] - tables[:, 0, 0]
        acc["pb"] += (wt * a / (a + bb)).sum()
        acc["pb^2"] += (wt * a * (a + 1) / ((a + bb) * (a + bb + 1))).sum()
    exact = {k: v / acc["w"] for k, v in acc.items()}
    layouts = []
    real = grouped_runner.move_parts
    monkeypatch.setattr(grouped_runner, "move_parts",
                        lambda *args: layouts.append(real(*args)) or layouts[-1])
    for how in ({}, {"method": dw.Record(groups=dw.parallel.Threads(2))}):
        idata = _sample(model, mech, s_dp, sum(sizes), seed=11, **how)
        post = diagnostics.group(idata, "posterior")
        for name, draws, key in [("p_block", post["p"].values[:, :, 0, 0], "pb"),
                                 ("p_tract", post["p_tract"].values[:, :, 0, 0], "pt"),
                                 ("log_kappa", post["log_kappa"].values[..., 0], "lk"),
                                 ("log_alpha0", post["log_alpha"].values[..., 0], "ua0"),
                                 ("log_alpha1", post["log_alpha"].values[..., 1], "ua1")]:
            mean = exact[key]
            _check_moments(draws, mean, math.sqrt(exact[key + "^2"] - mean ** 2))
    # every chain of the threaded run moved its records in the groups (a layout per part)
    assert len(layouts) == 4 and all(parts for parts in layouts)
    assert all(layout is not None for parts in layouts for _, layout in parts)


@pytest.mark.slow
def test_cross_classified_marginal_queries_and_a_coarser_prior_level_are_exact(
        check_posterior):
    # records in blocks draw their cells from the tract's probabilities (levels=("tract",)),
    # Dirichlet(alpha) fixed; released: the blocks by age, the tract by race, the tract's
    # total; the posterior over every table of the two blocks' 2 x 2 counts, exactly
    geo = census.Geography({"tract": [0, 0], "block": [0, 1]}, {"age": 2, "race": 2})
    sizes, alpha = [2, 3], np.array([1.0, 0.5, 2.0, 1.5])
    model = census.model(geo, sizes, levels=("tract",), alpha=alpha)
    assert list(model.params) == ["p"] and model.params["p"] == (1, 2, 2)
    mech = census.discrete_gaussian(geo, [census.query("block", "age", rho=0.5),
                                          census.query("tract", "race", rho=0.5),
                                          census.query("tract", "total", rho=1.0)])
    s_dp = mech.release(census.records([[1, 0, 0, 1], [0, 2, 1, 0]]), seed=2)
    tables = _tables(sizes, 4)
    tract = tables.sum(axis=1)
    log_w = (_log_g(mech, s_dp, tables)
             + special.gammaln(alpha + tract).sum(1) - special.gammaln(alpha.sum() + 5)
             + sum(special.gammaln(n + 1) - special.gammaln(tables[:, b] + 1).sum(1)
                   for b, n in enumerate(sizes)))
    w = normalise_log_weights(log_w)
    idata = _sample(model, mech, s_dp, 5, seed=4, keep_stats=True, databases=3000)
    p = diagnostics.group(idata, "posterior")["p"].values
    for cell in range(4):
        exact = BetaMixture(w, alpha[cell] + tract[:, cell],
                            alpha.sum() - alpha[cell] + 5 - tract[:, cell])
        check_posterior(p[:, :, 0, cell // 2, cell % 2], exact)
    t = diagnostics.group(idata, "imputed_statistic")["t"].values
    totals = np.array([mech.total(census.records(tb)) for tb in tables])
    for j in range(mech.size):
        _check_moments(t[..., j], w @ totals[:, j],
                       math.sqrt(max(w @ totals[:, j] ** 2 - (w @ totals[:, j]) ** 2, 0)))
    # a district's counts from the kept databases (every draw's): the second block alone,
    # by age, and both blocks by race, against the same enumeration
    for blocks, marginal, exact in (([1], ("age",), tables[:, 1].reshape(-1, 2, 2).sum(2)),
                                    ([0, 1], ("race",), tract.reshape(-1, 2, 2).sum(1))):
        counts = census.district(idata, geo, blocks, marginal)
        assert counts.shape == (4, 3000, 2)
        for k in range(2):
            mean = w @ exact[:, k]
            _check_moments(counts[..., k].astype(float), mean,
                           math.sqrt(max(w @ exact[:, k] ** 2 - mean ** 2, 0)))


@pytest.mark.slow
def test_block_totals_public_only_through_the_tract_are_exact(check_posterior):
    # the tract's total is public, the blocks' are not: each record's block is imputed
    # within its tract (shares ~ Dirichlet(gamma)); released: block totals and histograms
    geo = census.Geography({"tract": [0, 0], "block": [0, 1]}, 2)
    alpha, gamma = np.array([1.0, 1.0]), 1.5
    model = census.model(geo, [4], invariant="tract", levels=("block",), alpha=alpha,
                         share_prior=gamma, pair_moves=0.5)  # (no coarse release: not auto)
    assert list(model.params) == ["p", "share"]
    mech = census.discrete_gaussian(geo, [census.query("block", "total", rho=0.3),
                                          census.query("block", rho=0.3)])
    s_dp = mech.release(census.records([[1, 0], [1, 2]]), seed=9)
    flat = np.array([c for c in itertools.product(range(5), repeat=4) if sum(c) == 4], float)
    tables = flat.reshape(-1, 2, 2)
    n_b = tables.sum(axis=2)
    log_w = (_log_g(mech, s_dp, tables) + special.gammaln(5) - special.gammaln(flat + 1).sum(1)
             + special.gammaln(gamma + n_b).sum(1)
             + sum(special.gammaln(alpha + tables[:, b]).sum(1)
                   - special.gammaln(alpha.sum() + n_b[:, b]) for b in range(2)))
    w = normalise_log_weights(log_w)
    idata = _sample(model, mech, s_dp, 4, seed=6)
    post = diagnostics.group(idata, "posterior")
    check_posterior(post["share"].values[..., 0], BetaMixture(w, gamma + n_b[:, 0],
                                                              gamma + n_b[:, 1]))
    check_posterior(post["p"].values[:, :, 0, 0], BetaMixture(
        w, alpha[0] + tables[:, 0, 0], alpha[1] + tables[:, 0, 1]))


def _beta_nodes(a, b, nodes=16):
    """Gauss-Jacobi nodes and weights on (0, 1) for the Beta(a, b) density (exact for
    polynomials of degree < 2 nodes)."""
    x, w = special.roots_jacobi(nodes, b - 1, a - 1)
    return (1 + x) / 2, w / 2 ** (a + b - 1) / special.beta(a, b)


@pytest.mark.slow
def test_three_prior_levels_pass_table_counts_up_two_levels_exactly():
    # nation > 2 tracts > 2 blocks (one per tract), two categories, alpha fixed: p_nation ~
    # Beta(alpha), p_tract ~ Dir(kappa_1 p_nation), p_block ~ Dir(kappa_2 p_tract). The
    # integrand is a polynomial in every probability (the Dirichlet-multinomial of a few
    # records is), so Gauss-Jacobi nodes integrate them exactly; grids over both log kappa.
    geo = census.Geography({"nation": [0, 0], "tract": [0, 1], "block": [0, 1]}, 2)
    sizes, alpha, ka, kb = [2, 3], np.array([1.5, 1.5]), 3.0, 0.3
    model = census.model(geo, sizes, alpha=alpha, kappa=(ka, kb))
    assert list(model.params) == ["p", "p_tract", "p_nation", "log_kappa"]
    mech = census.discrete_gaussian(geo, [census.query("block", rho=0.5),
                                          census.query("nation", rho=0.5)])
    s_dp = mech.release(census.records([[0, 2], [3, 0]]), seed=8)
    tables = _tables(sizes, 2)
    log_g = _log_g(mech, s_dp, tables)
    lk = np.linspace(-2.5, 5.5, 81)
    lk = 0.5 * (lk[1:] + lk[:-1])
    kappa = np.exp(lk)
    log_prior_k = ka * lk - kb * kappa
    p0, w0 = _beta_nodes(*alpha)
    keys = ("w", "p0", "p0^2", "p1", "p1^2", "pb", "pb^2", "k1", "k1^2", "k2", "k2^2")
    acc = dict.fromkeys(keys, 0.0)
    k2 = kappa[:, None]                                      # (kappa_2, 1)
    for i in range(len(p0)):
        for j, k1 in enumerate(kappa):
            moments = []  # per block: E over p_tract of DM x (1, p1, p1^2, pb, pb^2)
            for b, n in enumerate(sizes):
                p1, w1 = _beta_nodes(k1 * p0[i], k1 * (1 - p0[i]))
                m0 = tables[:, b, 0][None, None, :]          # (1, 1, tables)
                a1 = k2[..., None] * p1[None, :, None]       # (kappa_2, nodes, 1)
                b1 = k2[..., None] * (1 - p1[None, :, None])
                dm = np.exp(special.gammaln(a1 + m0) - special.gammaln(a1)
                            + special.gammaln(b1 + n - m0) - special.gammaln(b1)
                            - special.gammaln(k2 + n)[..., None] + special.gammaln(k2)[..., None]
                            + special.gammaln(n + 1) - special.gammaln(m0 + 1)
                            - special.gammaln(n - m0 + 1))   # (kappa_2, nodes, tables)
                a, bb = a1 + m0, b1 + n - m0
                parts = [dm, dm * p1[None, :, None], dm * p1[None, :, None] ** 2,
                         dm * a / (a + bb), dm * a * (a + 1) / ((a + bb) * (a + bb + 1))]
                moments.append([np.einsum("knt,n->kt", f, w1) for f in parts])
            base = (w0[i] * np.exp(log_prior_k[j] + log_prior_k[:, None] + log_g[None, :])
                    * moments[0][0] * moments[1][0])         # (kappa_2, tables)
            acc["w"] += base.sum()
            acc["p0"] += p0[i] * base.sum()
            acc["p0^2"] += p0[i] ** 2 * base.sum()
            for key, k in (("p1", 1), ("p1^2", 2), ("pb", 3), ("pb^2", 4)):
                acc[key] += (base * moments[0][k] / moments[0][0]).sum()
            acc["k1"] += lk[j] * base.sum()
            acc["k1^2"] += lk[j] ** 2 * base.sum()
            acc["k2"] += (lk[:, None] * base).sum()
            acc["k2^2"] += (lk[:, None] ** 2 * base).sum()
    exact = {k: v / acc["w"] for k, v in acc.items()}
    idata = _sample(model, mech, s_dp, sum(sizes), seed=13)
    post = diagnostics.group(idata, "posterior")
    for draws, key in [(post["p_nation"].values[:, :, 0, 0], "p0"),
                       (post["p_tract"].values[:, :, 0, 0], "p1"),
                       (post["p"].values[:, :, 0, 0], "pb"),
                       (post["log_kappa"].values[..., 0], "k1"),
                       (post["log_kappa"].values[..., 1], "k2")]:
        _check_moments(draws, exact[key], math.sqrt(exact[key + "^2"] - exact[key] ** 2))


def test_controlled_rounding_keeps_each_sum_moves_each_cell_less_than_one_and_is_unbiased():
    rng = np.random.default_rng(5)
    expected = rng.dirichlet(np.full(6, 0.7), 50) * rng.integers(0, 40, 50)[:, None]
    draws = np.array([census.controlled_rounding(rng, expected) for _ in range(2000)])
    assert np.all(draws.sum(axis=2) == np.round(expected.sum(axis=1)))
    assert np.all(np.abs(draws - expected) < 1)
    se = np.sqrt((expected % 1) * (1 - expected % 1) / 2000) + 1e-12
    assert np.all(np.abs(draws.mean(axis=0) - expected) <= 4.5 * se)


def test_plain_data_describes_the_same_release_as_the_objects():
    spec = {"levels": {"tract": [0, 0, 1], "block": [0, 1, 2]}, "attributes": {"age": 2}}
    plain = census.discrete_gaussian(spec, [["block", "total", 0.5], {"level": "tract",
                                                                      "rho": 1.0}])
    objects = census.discrete_gaussian(census.as_geography(spec),
                                       [census.query("block", "total", 0.5),
                                        census.query("tract", rho=1.0)])
    x = np.array([[0.0, 1.0], [2.0, 0.0], [1.0, 1.0]])
    assert np.array_equal(plain.total(x), objects.total(x)) and plain.size == 3 + 2 * 2
    assert plain.privacy == objects.privacy
    with pytest.raises(TypeError, match="geography must be a census.Geography or a dict"):
        census.discrete_gaussian({"levels": {}}, [["block"]])
    with pytest.raises(TypeError, match="a query must be census.query"):
        census.discrete_gaussian(spec, [3.0])
    model = census.model(spec, totals=[2, 0, 1])
    assert model.dims == {"p": ("block", "age"), "p_tract": ("tract", "age"),
                          "log_alpha": ("age",), "log_kappa": ("prior_level",)}
    assert model.coords["prior_level"].tolist() == ["block"]


@pytest.mark.slow
@pytest.mark.parametrize("invariant", ["block", "county"])
def test_the_prepared_proposal_is_the_scans_bit_for_bit(invariant):
    # With unit totals public only at the county, the block moves within it too.
    totals = [3, 0, 5, 2] if invariant == "block" else [8, 2]
    model = census.model(GEO, totals, invariant=invariant)
    theta = model.draw_prior(np.random.default_rng(8))
    assert model.theta_support(theta)
    table = model.prepared.prepare(theta)
    x = model.simulate(theta, 2000, seed=9)
    for k, x_i in enumerate(x):
        plain, prepared = x_i.copy(), x_i.copy()  # the engine's proposal starts as x_i
        ratio = model.propose_record(np.random.default_rng(k), theta, x_i, plain)
        assert model.prepared.propose_record(np.random.default_rng(k), theta, table, x_i,
                                             prepared) == ratio
        assert np.array_equal(plain, prepared)


class _Reached(Exception):
    pass


def test_the_command_line_builds_the_census_model_and_release_from_json(monkeypatch, tmp_path,
                                                                         capsys):
    import dawrap.sampling
    from dawrap.cli import main

    calls = []

    def reached(model, mechanism, s_dp, n, **kwargs):
        calls.append((model, mechanism, np.asarray(s_dp), n))
        raise _Reached

    # dw.sample first (see tests/test_cli.py::no_sampling): patched after dawrap.sampling,
    # the lazy import would keep the stand-in as dw.sample for every later test.
    monkeypatch.setattr(dw, "sample", reached)
    monkeypatch.setattr(dawrap.sampling, "sample", reached)
    geo = '{"levels": {"tract": [0, 0, 1], "block": [0, 1, 2]}, "attributes": {"age": 2}}'
    argv = ["sample", "census", "--model-arg", f"geography={geo}", "--model-arg",
            "totals=[4,3,5]", "--mechanism", "discrete_gaussian", "--mechanism-arg",
            f"geography={geo}", "--mechanism-arg",
            'queries=[["block","detailed",0.5],["tract","total",1.0]]', "--n", "12",
            "--s-dp", "2", "1", "2", "1", "3", "3", "7", "6", "--out", str(tmp_path / "out")]
    with pytest.raises(_Reached):
        main(argv)
    model, mechanism, s_dp, n = calls[0]
    assert model.params["p"] == (3, 2) and n == 12 and s_dp.tolist() == [2, 1, 2, 1, 3, 3, 7, 6]
    assert mechanism.size == 8 and mechanism.privacy["rho"] == pytest.approx(1.5)
