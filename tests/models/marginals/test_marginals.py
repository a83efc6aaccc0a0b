"""The decomposable model for marginal releases: the junction tree's rule, the sensitivities
brute-forced, the compiled pieces against their references and closed forms, the exact
posterior's prior against simulation, bad input named; slow: the record sampler against
enumeration (theta, imputed databases, predictive records), a 10^15-cell domain, and
simulation-based calibration."""
import itertools
import math

import numpy as np
import pytest
from scipy import special

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import contingency, marginals
from dawrap.models.marginals import graphical as _graphical
from dawrap.models.marginals.junction_tree import Structure
from dawrap.models.marginals.start import balanced_records, release_fit, start_database

KINDS = ("laplace", "geometric", "gaussian", "discrete_gaussian")


# --------------------------------------------------------------------------- structure
def test_every_released_table_lies_in_a_clique_and_the_tree_runs_intersections():
    rng = np.random.default_rng(3)
    for _ in range(40):
        d = int(rng.integers(2, 9))
        tables = [tuple(rng.choice(d, size=int(rng.integers(1, min(d, 3) + 1)), replace=False))
                  for _ in range(int(rng.integers(1, 7)))]
        tree = marginals.structure([2] * d, tables)
        assert all(tree.covering(t) >= 0 for t in tables)
        assert sorted(a for c in range(len(tree.cliques)) for a in tree.residual(c)) \
            == list(range(d))                      # each attribute is new in exactly one clique
        for c, q in enumerate(tree.cliques):       # running intersection: shared = separator
            earlier = {a for j in range(c) for a in tree.cliques[j]}
            assert set(q) & earlier == set(tree.separators[c])
            if tree.parents[c] >= 0:
                assert tree.parents[c] < c
                assert set(tree.separators[c]) <= set(tree.cliques[tree.parents[c]])


def test_a_cycle_is_triangulated_by_min_fill():
    # a 4-cycle a-b-c-d-a: one chord, two triangles (min-fill adds one edge, not two)
    tree = marginals.structure([2, 2, 2, 2], [(0, 1), (1, 2), (2, 3), (3, 0)])
    assert sorted(map(sorted, tree.cliques)) in ([[0, 1, 3], [1, 2, 3]], [[0, 1, 2], [0, 2, 3]])


def test_too_large_a_clique_and_an_uncovered_table_are_refused_by_name():
    levels = {"a": 10, "b": 10, "c": 10}
    with pytest.raises(ValueError, match=r"marginals: .*clique \('a', 'b', 'c'\) of 1,000 "
                                         r"cells.*max_clique_cells = 999"):
        marginals.structure(levels, [("a", "b", "c")], max_clique_cells=999)
    with pytest.raises(ValueError, match=r"cliques: no clique contains the released table "
                                         r"\('a', 'c'\)"):
        marginals.model(levels, [("a", "c")], cliques=[("a", "b"), ("b", "c")], centre=None)
    tree = marginals.structure(levels, [("a", "c")], cliques=[("a", "b"), ("b", "c")],
                               allow_uncovered=True)
    assert tree.covering((0, 2)) == -1


def test_bad_attributes_and_levels_are_named():
    levels = {"a": 2, "b": 3}
    with pytest.raises(ValueError, match=r"marginals: unknown attribute 'z'"):
        marginals.model(levels, [("a", "z")], centre=None)
    with pytest.raises(ValueError, match=r"marginals: attribute repeated in \('a', 'a'\)"):
        marginals.laplace(levels, [("a", "a")], epsilon=1.0)
    with pytest.raises(ValueError, match=r"levels: attribute 'b' needs at least 2 levels"):
        marginals.model({"a": 2, "b": 1}, [("a",)], centre=None)
    with pytest.raises(ValueError, match=r"noise must be one Noise or one per table \(2\)"):
        marginals.mechanism(levels, [("a",), ("b",)], [marginals.Noise.laplace(1.0)] * 3)
    with pytest.raises(ValueError, match=r"noise kind must be one of"):
        marginals.mechanism(levels, [("a",)], marginals.Noise("cauchy", 1.0))
    mech = marginals.laplace(levels, [("a", "b")], epsilon=1.0)
    with pytest.raises(ValueError, match=r"x\[1, 0\] = 2.0 is not a level of attribute 'a'"):
        mech.release([[0, 0], [2, 0]], seed=1)
    with pytest.raises(ValueError, match=r"s_dp must be integer-valued"):
        marginals.geometric(levels, [("a",)], epsilon=1.0).check_release([0.5, 1.0])
    mixed = marginals.mechanism(levels, [("b",), ("a",)], [marginals.Noise.laplace(1.0),
                                                          marginals.Noise.geometric(1.0)])
    mixed.check_release([0.5, 0.5, 0.5, 1.0, 2.0])      # the Laplace table takes any value
    with pytest.raises(ValueError, match=r"s_dp\[4\] = 2.5 must be an integer: its table has "
                                         r"integer noise \(geometric\)"):
        mixed.check_release([0.5, 0.5, 0.5, 1.0, 2.5])


# --------------------------------------------------------------------------- the release
def test_each_table_moves_by_two_cells_at_most_and_privacy_composes():
    levels = (3, 2, 2)
    tables = [(0,), (0, 1), (2, 1), (0, 1, 2)]
    noises = [marginals.Noise.laplace(0.5), marginals.Noise.geometric(0.25),
              marginals.Noise.gaussian(0.2), marginals.Noise.discrete_gaussian(0.1)]
    mech = marginals.mechanism(levels, tables, noises)
    records = [np.array([c], float) for c in itertools.product(*(range(v) for v in levels))]
    bounds = np.cumsum([0] + [math.prod(levels[a] for a in t) for t in tables])
    l1, l2 = np.zeros(len(tables)), np.zeros(len(tables))
    for u, v in itertools.product(records, repeat=2):
        diff = mech.total(u) - mech.total(v)
        l1 = np.maximum(l1, [np.abs(diff[a:b]).sum() for a, b in zip(bounds, bounds[1:])])
        l2 = np.maximum(l2, [(diff[a:b] ** 2).sum() for a, b in zip(bounds, bounds[1:])])
    assert l1.tolist() == [2.0] * 4 and l2.tolist() == [2.0] * 4   # replace-one
    # epsilon = 2 / b for the epsilon-DP tables, rho = 2 / (2 sigma^2) for the zCDP ones
    assert [n.scale for n in mech.noises] == pytest.approx([4.0, 8.0, 0.2 ** -0.5, 10 ** 0.5])
    assert mech.privacy == pytest.approx({"epsilon": 0.75, "rho": 0.3,
                                          "rho_total": 0.3 + (0.5 ** 2 + 0.25 ** 2) / 2})
    assert mech.epsilon is None and mech.sparse.nnz == 4
    assert marginals.laplace(levels, tables, epsilon=0.5).epsilon == pytest.approx(2.0)


def test_the_release_density_is_the_product_of_the_tables_own():
    levels, tables = (3, 2), [(0,), (0, 1), (1,), (1, 0)]
    parts = {"laplace": lambda s, size: dw.Laplace(_dummy, epsilon=2 / s, sensitivity=2,
                                                    size=size),
             "geometric": lambda s, size: dw.Geometric.from_scale(_dummy, s, 2.0, size=size),
             "gaussian": lambda s, size: dw.Gaussian(_dummy, sigma=s, size=size),
             "discrete_gaussian": lambda s, size: dw.DiscreteGaussian(_dummy, sigma=s,
                                                                       size=size)}
    noises = [marginals.Noise(k, s) for k, s in zip(KINDS, (1.5, 2.0, 0.7, 1.2))]
    mech = marginals.mechanism(levels, tables, noises)
    rng = np.random.default_rng(1)
    s = np.round(rng.normal(3, 2, mech.size))
    t = np.round(rng.normal(3, 2, mech.size))
    expected = 0.0
    for k, (table, noise) in enumerate(zip(tables, noises)):
        a, b = sum(mech.sizes[:k]), sum(mech.sizes[:k + 1])
        expected += parts[noise.kind](noise.scale, b - a).log_g(s[a:b], t[a:b])
    assert mech.log_g(s, t) == pytest.approx(expected, rel=1e-12)
    variance = mech.noise_variance()
    assert variance[:3] == pytest.approx(2 * 1.5 ** 2) and variance[9:11] == pytest.approx(0.49)


def _make_dummy():
    import numba

    @numba.njit
    def dummy(x_i, out):
        out[:] = 0.0
    return dummy


_dummy = _make_dummy()


@pytest.mark.slow  # compiles the bounds-checked statistics of the secure path
def test_secure_release_needs_integer_noise_and_gives_integers():
    levels, tables = {"a": 2, "b": 3}, [("a",), ("a", "b")]
    x = [[0, 1], [1, 2], [1, 0]]
    mech = marginals.mechanism(levels, tables, [marginals.Noise.geometric(1.0),
                                                marginals.Noise.discrete_gaussian(1.0)])
    s_dp = mech.release(x, secure=True)
    assert s_dp.shape == (8,) and np.all(s_dp == np.round(s_dp))
    with pytest.raises(ValueError, match="secure=True needs integer noise on every table"):
        marginals.laplace(levels, tables, epsilon=1.0).release(x, secure=True)


# --------------------------------------------------------------------------- compiled pieces
LEVELS, TABLES = (2, 3, 2, 2), [(0, 1), (1, 2), (2, 3)]


@pytest.fixture(scope="module")
def chain_model():
    return marginals.model(LEVELS, TABLES, alpha=3.0, centre=None)


def test_the_prepared_draw_is_the_reference_draw_bit_for_bit(chain_model):
    prepared = chain_model.prepared
    theta = chain_model.draw_prior(np.random.default_rng(5))
    table = prepared.prepare(theta)
    a, b = np.empty(4), np.empty(4)
    for seed in range(200):
        prepared.draw_record(np.random.default_rng(seed), theta, table, a)
        chain_model.draw_record(np.random.default_rng(seed), theta, b)
        assert np.array_equal(a, b)


def test_records_follow_the_decomposable_distribution(chain_model):
    # p(x) = p(a, b) p(c | b) p(d | c): frequencies of 40 000 records against it, chi-square
    theta = chain_model.draw_prior(np.random.default_rng(2)) * 0.5 + 0.5 * _uniform(chain_model)
    x = chain_model.simulate(theta, 40_000, seed=3)
    p = _joint(chain_model, theta)
    cells = np.ravel_multi_index(x.T.astype(int), LEVELS)
    observed = np.bincount(cells, minlength=p.size)
    chi2 = ((observed - 40_000 * p.ravel()) ** 2 / (40_000 * p.ravel())).sum()
    assert chi2 < special.chdtri(p.size - 1, 1e-4)  # fails with probability 1e-4 if right


def _uniform(model):
    tables = {k: np.full(s, 1.0 / math.prod(s)) for k, s in model.params.items()}
    return model.pack(tables)


def _joint(model, theta):
    """The joint table of the chain structure by brute force (small domains only)."""
    tree, lay = model.structure, _graphical.layout(model.structure)
    p = np.ones(LEVELS)
    for c, q in enumerate(tree.cliques):
        table = theta[lay.offset[c]:lay.offset[c + 1]].reshape(
            int(lay.sep_size[c]), int(lay.res_size[c]))
        if tree.parents[c] >= 0:  # p(x_R | x_S)
            table = table / table.sum(1, keepdims=True)
        factor = np.transpose(table.reshape([LEVELS[a] for a in q]), np.argsort(q))
        p = p * factor.reshape([LEVELS[a] if a in q else 1 for a in range(len(LEVELS))])
    return p


def test_the_theta_step_is_hyper_dirichlet_in_either_orientation():
    # The same cliques {0,1}, {1,2}, rooted at either end: every clique cell's draws have
    # the Beta(alpha_C + n_C, A + n - alpha_C - n_C) moments of the hyper-Dirichlet.
    levels, alpha = (2, 3, 2), 2.0
    counts_joint = np.random.default_rng(0).integers(0, 5, size=levels).astype(float)
    n = counts_joint.sum()
    for tree in (Structure(levels, ((0, 1), (1, 2)), ((), (1,)), (-1, 0)),
                 Structure(levels, ((1, 2), (1, 0)), ((), (1,)), (-1, 0))):
        fns, lay = _graphical.functions(tree, alpha), _graphical.layout(tree)
        stats = np.zeros(lay.size)
        for cell in itertools.product(*(range(v) for v in levels)):
            x = np.array(cell, float)
            one = np.zeros(lay.size)
            fns.clique_counts(x, one)
            stats += counts_joint[cell] * one
        rng = np.random.default_rng(7)
        draws = np.array([fns.draw_theta(rng, None, np.empty((0, 3)), stats)
                          for _ in range(20_000)])
        assert all(fns.theta_support(d) for d in draws[:100])
        for j in range(lay.size):
            c = int(np.searchsorted(lay.offset, j, side="right") - 1)
            a = alpha / (lay.offset[c + 1] - lay.offset[c]) + stats[j]
            b = alpha + n - a
            mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1))
            se_mean, se_var = math.sqrt(var / 20_000), var * math.sqrt(2 / 20_000) * 1.5
            assert abs(draws[:, j].mean() - mean) < 4 * se_mean
            assert abs(draws[:, j].var() - var) < 4 * se_var


def test_clique_counts_are_sparse_and_agree_with_the_dense_statistic(chain_model):
    form = dw.mechanisms.separable.sparse_form(chain_model.model_stat)
    index, value, dense = np.empty(form.nnz, np.int64), np.empty(form.nnz), \
        np.empty(chain_model.stat_size)
    for cell in itertools.product(*(range(v) for v in LEVELS)):
        x = np.array(cell, float)
        count = form.entries(x, index, value)
        chain_model.model_stat(x, dense)
        sparse = np.zeros_like(dense)
        np.add.at(sparse, index[:count], value[:count])
        assert np.array_equal(sparse, dense) and count == 3


def test_record_and_theta_support(chain_model):
    theta = chain_model.draw_prior(np.random.default_rng(1))
    assert chain_model.theta_support(theta)
    broken = theta.copy()
    broken[0], broken[1] = broken[0] + 0.01, broken[1] - 0.01   # the separator disagrees
    assert not chain_model.theta_support(broken)
    assert chain_model.record_support(np.array([1.0, 2.0, 1.0, 0.0]))
    assert not chain_model.record_support(np.array([1.0, 3.0, 1.0, 0.0]))
    assert not chain_model.record_support(np.array([1.0, 0.5, 1.0, 0.0]))


def test_marginal_tables_agree_with_the_joint(chain_model):
    theta = chain_model.draw_prior(np.random.default_rng(4))
    joint = _joint(chain_model, theta)
    for attrs in [(0,), (3, 0), (0, 2), (1, 3), (2, 1), (0, 1, 3)]:
        others = tuple(a for a in range(4) if a not in attrs)
        expected = np.transpose(joint.sum(axis=others), np.argsort(np.argsort(attrs)))
        assert np.allclose(marginals.marginal(theta, chain_model, attrs), expected,
                           atol=1e-14)
    draws = np.stack([theta, chain_model.draw_prior(np.random.default_rng(5))])
    assert marginals.marginal(draws, chain_model, ("x0", "x3")).shape == (2, 2, 2)


# --------------------------------------------------------------------------- exact posterior
@pytest.mark.slow  # 60 000 simulated databases
def test_exact_prior_of_tables_matches_simulation():
    # Without a release (all weights from p(N)), the enumerated p(N) against prior-predictive
    # tables: theta from draw_prior, 3 records from it.
    levels, tables, n = (2, 2, 3), [(0, 1), (1, 2)], 3
    model = marginals.model(levels, tables, alpha=2.0, centre=None)
    mech = marginals.gaussian(levels, tables, rho=1e-30)    # noise sd 1e15: no information
    exact = marginals.exact_posterior(model, mech, np.zeros(10), n)
    index = {tuple(t): i for i, t in enumerate(exact.tables.astype(int))}
    rng, hits, trials = np.random.default_rng(11), np.zeros(len(index)), 60_000
    for _ in range(trials):
        x = model.simulate(model.draw_prior(rng), n, seed=rng)
        table = np.bincount(np.ravel_multi_index(x.T.astype(int), levels), minlength=12)
        hits[index[tuple(table)]] += 1
    expected = exact.weights * trials
    big = expected > 20
    chi2 = ((hits[big] - expected[big]) ** 2 / expected[big]).sum()
    assert chi2 < special.chdtri(big.sum() - 1, 1e-4)


def test_one_clique_is_the_dirichlet_of_the_contingency_model():
    levels, cycle = (2, 2, 2), [(0, 1), (1, 2), (0, 2)]
    model = marginals.model(levels, cycle, alpha=4.0, centre=None)          # one clique of 8 cells
    mech = marginals.laplace(levels, cycle, epsilon=1.0)
    s_dp = mech.release(np.array([[0, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 1]]), seed=2)
    ours = marginals.exact_posterior(model, mech, s_dp, 4)
    theirs = contingency.exact_posterior(contingency.laplace(levels, cycle, [1.0] * 3),
                                         s_dp, 4, levels, cycle, alpha=0.5)
    assert model.structure.cliques == ((0, 1, 2),)
    for j in range(8):
        assert ours.theta(j).mean() == pytest.approx(theirs[j].mean(), rel=1e-10)
        assert ours.theta(j).std() == pytest.approx(theirs[j].std(), rel=1e-10)


# --------------------------------------------------------------------------- the start
def test_the_release_fit_is_in_the_support_and_fits_the_released_tables():
    # a tree of three cliques (one of three attributes), every noise family, releases with
    # negative cells: theta stays consistent, every cell positive, released margins fitted
    levels, tables = (3, 2, 2, 4, 2), [(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (4,)]
    model = marginals.model(levels, tables, alpha=1.0, centre=None)
    assert len(model.structure.cliques) == 3
    fns = _graphical.functions(model.structure, 1.0)
    rng = np.random.default_rng(7)
    for kind in KINDS:
        mech = marginals.mechanism(levels, tables, marginals.Noise(kind, 3.0))
        x = model.simulate(model.draw_prior(rng), 40, seed=rng)
        s_dp = mech.release(x, seed=rng)
        assert (s_dp < 0).any()
        for _ in range(5):
            theta = release_fit(model, mech, mech.release_given_total(rng, s_dp), rng)
            assert fns.theta_support(theta) and (theta > 0).all()
        # without noise to redraw, IPF reproduces consistent tables (positive, no clipping)
        exact = marginals.mechanism(levels, tables, marginals.Noise("gaussian", 1e-9))
        y = model.simulate(model.draw_prior(rng), 400, seed=rng)
        y[:len(y) // 2] = rng.integers(0, levels, size=(len(y) // 2, 5))  # every cell occupied
        fit = release_fit(model, exact, exact.total(y), rng, sweeps=500)
        for t, observed in zip(tables, exact.split(exact.total(y))):
            assert np.allclose(marginals.marginal(fit, model, t), observed / len(y), atol=1e-5)


def test_balanced_records_are_within_one_of_their_expected_counts():
    model = marginals.model([3, 4, 2], [(0, 1), (1, 2)], centre=None)
    rng = np.random.default_rng(11)
    for _ in range(20):
        theta = model.draw_prior(rng)
        n = int(rng.integers(1, 60))
        x = balanced_records(model, theta, n, rng)
        assert x.shape == (n, 3) and all(_graphical.functions(model.structure, 1.0)
                                         .record_support(r) for r in x)
        root = np.bincount((4 * x[:, 0] + x[:, 1]).astype(int), minlength=12)
        assert np.all(np.abs(root - n * theta[:12]) < 1.0)
        # the child given its separator: within one of (records with that b) p(c | b)
        for b in range(4):
            mine = x[x[:, 1] == b]
            want = len(mine) * theta[12 + 2 * b:14 + 2 * b] / theta[12 + 2 * b:14 + 2 * b].sum()
            assert np.all(np.abs(np.bincount(mine[:, 2].astype(int), minlength=2) - want) < 1)


def test_the_start_keeps_init_x_and_falls_back_to_theta_for_another_mechanism():
    model = marginals.model([2, 3], [(0, 1)], centre=None)
    mech = marginals.laplace([2, 3], [(0, 1)], epsilon=1.0)
    rng = np.random.default_rng(1)
    mine = np.array([[0.0, 2.0], [1.0, 1.0]])
    assert start_database(model, rng, None, 2, mech, np.zeros(6), mine) is mine
    other = dw.Laplace(_dummy, epsilon=1.0)                       # not a MarginalRelease
    theta = model.pack({"p_x0_x1": [[0, 0, 1.0], [0, 0, 0]]})
    x = start_database(model, rng, theta, 5, other, np.zeros(1), None)
    assert (x == [0, 2]).all()                                    # from theta, as start="theta"
    # a MarginalRelease over other attributes is refused, init_x or not (issue 41 item 3)
    for init_x in (None, mine):
        with pytest.raises(ValueError, match=r"attributes \{'x0': 3, 'x1': 2\}, but the "
                                             r"model's records have \{'x0': 2, 'x1': 3\}"):
            start_database(model, rng, theta, 2, marginals.laplace([3, 2], [(0, 1)], 1.0),
                           np.zeros(6), init_x)
    # every start has the hook that checks the mechanism
    assert model.start_database is not None
    assert marginals.model([2, 3], [(0, 1)], start="theta", centre=None).start_database is not None
    with pytest.raises(ValueError, match=r"start must be one of \('release', 'theta'\), "
                                         r"got 'prior'"):
        marginals.model([2, 3], [(0, 1)], start="prior", centre=None)


def test_the_attribute_proposal_draws_one_attribute_from_its_conditional():
    # frequencies of the proposals from one record against the joint's conditionals (each
    # attribute chosen with probability 1/3); a separator attribute (b) divides by p_S
    levels, tables = (2, 3, 2), [(0, 1), (1, 2)]
    model = marginals.model(levels, tables, alpha=2.0, proposal="attribute", centre=None)
    propose = _graphical.functions(model.structure, 2.0).propose_attribute
    rng = np.random.default_rng(0)
    theta = model.draw_prior(rng)
    joint = marginals.marginal(theta, model, (0, 1, 2))
    x, out, draws = np.array([1.0, 2.0, 0.0]), np.empty(3), 60000
    seen = np.zeros(levels)
    for _ in range(draws):
        assert propose(rng, theta, x, out) == 0.0
        assert np.sum(out != x) <= 1
        seen[tuple(out.astype(int))] += 1
    want = np.zeros(levels)
    for a in range(3):
        cells = [tuple(np.where(np.arange(3) == a, v, x).astype(int))
                 for v in range(levels[a])]
        weights = np.array([joint[c] for c in cells])
        for c, w in zip(cells, weights / weights.sum()):
            want[c] += w / 3
    p = want.ravel()
    assert np.all(np.abs(seen.ravel() / draws - p) <= 4 * np.sqrt(p * (1 - p) / draws) + 1e-12)
    assert model.general_proposal
    with pytest.raises(ValueError, match=r"proposal must be one of \('ancestral', "
                                         r"'attribute'\), got 'gibbs'"):
        marginals.model(levels, tables, proposal="gibbs", centre=None)


def test_ridge_moves_apply_to_unreleased_three_way_interactions_only():
    from dawrap.models.marginals.ridge import ridges
    cycle = [(0, 1), (1, 2), (0, 2)]
    tree = marginals.structure((2, 2, 3), cycle)
    assert ridges(tree, cycle).tolist() == [[0, 1, 0, 2], [0, 0, 1, 2], [0, 0, 2, 1]]
    assert ridges(tree, cycle + [(0, 1, 2)]).shape == (0, 4)          # 3-way released
    # no 3-way
    assert marginals.model([2, 3], [(0, 1)], collapsed_moves=0, centre=None).records_move is None
    # Adult's shape: (race, gender, income) with income shared by other cliques
    tables = [(0, 1), (1, 2), (0, 2), (2, 3)]
    tree = marginals.structure((2, 2, 2, 2), tables)
    assert [tree.cliques[r[0]][r[2]] for r in ridges(tree, tables)] == [0, 1]
    model = marginals.model((2, 2, 2, 2), tables, centre=None)
    with pytest.raises(ValueError, match=r"ridge_moves=True needs the release of the "
                                         r"model's own tables"):
        dw.sample(model, marginals.laplace((2, 2, 2, 2), tables[:3], epsilon=1.0),
                  np.zeros(12), 4, draws=2, tune=2, chains=1, progress=False)


@pytest.fixture(scope="module")
def trap():
    """A sparse prior (alpha 0.01: 0.00125 a cell) and a release that pins the table: a
    chain whose records start from a sparse theta is trapped (an empty cell's theta is about
    exp(-800)), one started from the release is not; with the collapsed move one started
    from theta escapes."""
    levels, tables = (2, 4), [(0, 1)]
    x = np.array([[0, 0], [0, 0], [0, 1], [0, 1], [1, 2], [1, 2], [1, 3], [1, 3]], float)
    mech = marginals.gaussian(levels, tables, rho=16.0)                 # sigma 0.25
    s_dp = mech.release(x, seed=1)
    runs = {}
    for start in marginals._STARTS:    # the record sweep alone
        model = marginals.model(levels, tables, alpha=0.01, start=start, collapsed_moves=0,
                                centre=None)
        runs[start] = dw.sample(model, mech, s_dp, 8, draws=2000, tune=500, chains=4, seed=3,
                                progress=False)
    # the trapped start with the collapsed move (the default), which proposes from the
    # records' urn, not from theta
    runs["collapsed"] = dw.sample(marginals.model(levels, tables, alpha=0.01, start="theta",
                                                  centre=None),
                                  mech, s_dp, 8, draws=2000, tune=500, chains=4, seed=3,
                                  progress=False)
    return runs, marginals.exact_posterior(model, mech, s_dp, 8)


@pytest.mark.slow
def test_the_release_start_and_the_collapsed_move_escape_where_a_prior_start_is_trapped(
        trap, check_posterior):
    runs, exact = trap
    occupied = [j for j in range(8) if exact.theta(j).mean() > 0.2]
    assert len(occupied) == 4
    new = diagnostics.group(runs["release"], "posterior")["p_x0_x1"].values.reshape(4, 2000, 8)
    for j in range(8):
        # an empty cell's quantiles are below 1e-14, where the exact ppf has no precision
        check_posterior(new[..., j], exact.theta(j), **({} if j in occupied else {"probs": ()}))
    # from the trapped start, the collapsed move fills the cells in every chain (slowly at
    # this prior: the urn proposes an empty cell with probability 0.01 / 7 / 8 a step)
    collapsed = diagnostics.group(runs["collapsed"], "posterior")["p_x0_x1"].values
    assert (collapsed.reshape(4, 2000, 8)[..., occupied].max(axis=1) > 0.1).all()
    # the old default: chains stuck apart (a cell of posterior mean 1/4 at or near 0 for
    # all 2000 draws of one chain, near 1 in another), which R-hat shows
    old = diagnostics.group(runs["theta"], "posterior")["p_x0_x1"].values.reshape(4, 2000, 8)
    assert max(diagnostics.rhat(old[..., j]) for j in occupied) > 1.2
    assert (old[..., occupied].max(axis=1) < 0.05).any()
    assert (new[..., occupied].max(axis=1) > 0.1).all()


# --------------------------------------------------------------------------- slow: sampling
@pytest.fixture(scope="module")
def small_run():
    # every noise family, one table each; the integer ones last (5 cells)
    levels, tables = (2, 2, 3), [(0, 1), (1, 2), (0,), (2,)]
    noises = [marginals.Noise.laplace(1.0), marginals.Noise.gaussian(0.5),
              marginals.Noise.geometric(1.0), marginals.Noise.discrete_gaussian(1.0)]
    model = marginals.model(levels, tables, alpha=2.0, centre=None)
    mech = marginals.mechanism(levels, tables, noises)
    x = np.array([[0, 0, 0], [0, 1, 2], [1, 1, 1], [1, 0, 0], [0, 1, 1], [1, 1, 2]], float)
    s_dp = mech.release(x, seed=3)
    s_dp[-5:] = np.round(s_dp[-5:])
    idata = dw.sample(model, mech, s_dp, 6, draws=4000, tune=500, chains=4, seed=2,
                      databases=1000, progress=False)
    return model, mech, s_dp, idata, marginals.exact_posterior(model, mech, s_dp, 6)


@pytest.mark.slow
def test_record_sampler_is_exact_for_theta(small_run, check_posterior):
    model, _, _, idata, exact = small_run
    post = diagnostics.group(idata, "posterior")
    theta = np.concatenate([post[k].values.reshape(4, 4000, -1) for k in model.params], -1)
    for j in range(theta.shape[-1]):
        check_posterior(theta[..., j], exact.theta(j))


@pytest.mark.slow
def test_the_attribute_proposal_is_exact_for_theta(small_run, check_posterior):
    model, mech, s_dp, _, exact = small_run
    by_attribute = marginals.model((2, 2, 3), [(0, 1), (1, 2), (0,), (2,)], alpha=2.0,
                                   proposal="attribute", centre=None)
    idata = dw.sample(by_attribute, mech, s_dp, 6, draws=4000, tune=500, chains=4, seed=5,
                      progress=False)
    post = diagnostics.group(idata, "posterior")
    theta = np.concatenate([post[k].values.reshape(4, 4000, -1) for k in model.params], -1)
    for j in range(theta.shape[-1]):
        check_posterior(theta[..., j], exact.theta(j))


@pytest.mark.slow
def test_ridge_moves_are_exact(check_posterior):
    # one clique of three attributes, its three 2-way tables released: the moves run (and
    # move) and the chain agrees with enumeration
    levels, cycle = (2, 2, 3), [(0, 1), (1, 2), (0, 2)]
    x = np.array([[0, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 1], [0, 0, 2], [1, 0, 2]])
    mech = marginals.gaussian(levels, cycle, rho=1.0)
    s_dp = mech.release(x, seed=2)
    model = marginals.model(levels, cycle, alpha=6.0, centre=None)
    assert model.records_move is not None
    idata = dw.sample(model, mech, s_dp, 6, draws=4000, tune=500, chains=4, seed=2,
                      progress=False)
    assert np.nanmean(diagnostics.group(idata, "sample_stats")["move_accept"].values) > 0.01
    exact = marginals.exact_posterior(model, mech, s_dp, 6)
    theta = diagnostics.group(idata, "posterior")["p_x0_x1_x2"].values.reshape(4, 4000, -1)
    for j in range(12):
        check_posterior(theta[..., j], exact.theta(j))


@pytest.mark.slow
def test_imputed_databases_are_exact_posterior_draws_of_the_table(small_run):
    _, _, _, idata, exact = small_run
    data = dw.synthetic.datasets(idata, m=4000)
    cells = np.ravel_multi_index(data.values.astype(int).transpose(2, 0, 1), (2, 2, 3))
    counts = np.stack([(cells == c).sum(1) for c in range(12)], axis=1)     # (m, cells)
    chains = data["chain"].values
    mean = exact.mean_table()
    for c in range(12):
        series = np.stack([counts[chains == k, c] for k in range(4)]).astype(float)
        err = diagnostics.mcse(series)
        assert abs(series.mean() - mean[c]) < 4 * err, (c, series.mean(), mean[c], err)


@pytest.mark.slow
def test_predictive_datasets_follow_the_exact_posterior_predictive(small_run):
    model, _, _, idata, exact = small_run
    data = dw.synthetic.datasets(idata, m=16000, kind="predictive", model=model, size=1,
                                 seed=4)
    cells = np.ravel_multi_index(data.values[:, 0].astype(int).T, (2, 2, 3))
    chains, draws = data["chain"].values, data["draw"].values
    predictive = exact.predictive()
    for c in range(12):
        series = np.zeros((4, 4000))
        series[chains, draws] = cells == c
        err = diagnostics.mcse(series)
        assert abs(series.mean() - predictive[c]) < 4 * err, (c, series.mean(), predictive[c])


@pytest.mark.slow
def test_a_domain_of_10_to_the_15_cells_is_sampled_without_allocating_it():
    # 15 attributes of 10 levels (10^15 joint cells, 8 PB as float64): the chain's
    # tables run through 14 cliques of 100 cells; any array over the domain would fail.
    levels, tables = [10] * 15, [(a, a + 1) for a in range(14)]
    model = marginals.model(levels, tables, centre=None)
    mech = marginals.gaussian(levels, tables, rho=0.05)
    assert math.prod(levels) == 10 ** 15 and model.theta_size == 1400 and mech.size == 1400
    x = model.simulate(model.draw_prior(np.random.default_rng(0)), 200, seed=1)
    idata = dw.sample(model, mech, mech.release(x, seed=2), 200, draws=20, tune=20, chains=1,
                      seed=3, databases=2, progress=False)
    assert diagnostics.group(idata, "imputed_databases")["x"].shape == (1, 2, 200, 15)
    ab = marginals.marginal(idata, model, ("x0", "x14"))       # across all 14 cliques
    assert ab.shape == (1, 20, 10, 10) and np.allclose(ab.sum(axis=(2, 3)), 1.0)
    assert np.isfinite(diagnostics.group(idata, "posterior")["p_x0_x1"].values).all()


@pytest.mark.slow
def test_calibrated_at_moderate_size():
    levels = {"a": 3, "b": 3, "c": 2, "d": 3}
    tables = [("a", "b"), ("b", "c"), ("c", "d"), ("a",)]
    model = marginals.model(levels, tables, alpha=4.0, centre=None)
    mech = marginals.mechanism(levels, tables, [marginals.Noise.gaussian(0.05),
                                                marginals.Noise.laplace(0.3),
                                                marginals.Noise.geometric(0.3),
                                                marginals.Noise.discrete_gaussian(0.1)])
    cal = dw.calibrate(model, mech, n=100, methods=["record"], trials=150, seed=5,
                       parameter="p_b_c", index=3,
                       # 600 warm-up sweeps: chains start from a fit of a redraw of the
                       # release (the default), farther from the posterior here (n = 100,
                       # noise sd 3 to 7 a cell) than the release-weighted prior draw they
                       # started from before; with 200 the 95% intervals cover 0.893
                       sample_kwargs={"draws": 400, "tune": 600, "chains": 2},
                       executor="serial", progress=False)
    assert cal.verdict()["record"], cal
