"""The centred hyper-Dirichlet prior of the marginals model (issue 45, item 1):
``model(centre=)``, ``alpha_C(x_C) = a q_C(x_C)``. Quick: BDeu (None, or a uniform centre)
unchanged bit for bit, every bad centre refused by name, the fingerprint, the exact
posterior's prior is the centre, ``release_centre`` is the max-entropy fit; slow: the sampler
(record sweep, ridge and collapsed moves) against enumeration under a non-uniform centre, and
the triangle study (the centre keeps an unreleased 3-way interaction where the release puts
it, BDeu at alpha 1 invents one)."""
import pickle

import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial, marginals
from dawrap.models.marginals import graphical as _graphical

# a triangle: the three 2-way tables of three binary attributes, one clique of 8 cells
LEVELS, CYCLE = (2, 2, 2), [(0, 1), (1, 2), (0, 2)]
RECORDS = np.array([[0, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 1], [0, 0, 1], [1, 0, 0]], float)

LEVELS3 = (2, 2, 3)


def _chain_centre(rng):
    """A non-uniform decomposable q over 4 binary attributes with cliques (0, 1, 2) and
    (2, 3): q(x0, x1, x2) q(x3 | x2), as the two clique marginals."""
    q012 = rng.dirichlet(np.full(8, 3.0)).reshape(2, 2, 2)
    q3_given_2 = rng.dirichlet([2.0, 2.0], size=2)                       # rows: x2
    q23 = q012.sum((0, 1))[:, None] * q3_given_2
    return q012, q23


# --------------------------------------------------------------------------- BDeu unchanged
def test_a_uniform_centre_is_bdeu_bit_for_bit():
    x = np.array([[0, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 1], [0, 0, 2], [1, 0, 2]])
    mech = marginals.gaussian(LEVELS3, CYCLE, rho=1.0)
    s_dp = mech.release(x, seed=2)
    uniform = np.full((2, 2, 3), 1.0 / 12)
    models = [marginals.model(LEVELS3, CYCLE, alpha=1.0, centre=None),
              marginals.model(LEVELS3, CYCLE, alpha=1.0, centre=[uniform]),
              marginals.model(LEVELS3, CYCLE, alpha=1.0, centre={"p_x0_x1_x2": uniform}),
              marginals.model(LEVELS3, CYCLE, alpha=1.0,   # axes in the key's order
                              centre={(2, 0, 1): uniform.transpose(2, 0, 1)})]
    # (that BDeu itself, centre=None, is the old prior was checked when centres came in,
    # against draws of the code before them; its exactness is the enumeration tests')
    prior, first = [], []
    for model in models:
        assert model.centre is None                       # a uniform centre is BDeu
        prior.append(model.draw_prior(np.random.default_rng(4)).tolist())
        idata = dw.sample(model, mech, s_dp, 6, draws=1, tune=10, chains=1, seed=2,
                          progress=False)
        first.append(diagnostics.group(idata, "posterior")["p_x0_x1_x2"].values.ravel().tolist())
    assert all(p == prior[0] for p in prior) and all(d == first[0] for d in first)


def test_the_fingerprint_tells_centres_apart():
    q012, q23 = _chain_centre(np.random.default_rng(1))
    other = q012.copy()
    other[0, 0, 0] += 1e-12                 # within tolerance, but another prior
    other[0, 0, 1] -= 1e-12
    levels, tables = (2, 2, 2, 2), CYCLE + [(2, 3)]
    a = marginals.model(levels, tables, centre=[q012, q23])
    b = marginals.model(levels, tables, centre=[other, q23])
    c = marginals.model(levels, tables, centre=None)
    assert len({a.fingerprint, b.fingerprint, c.fingerprint}) == 3
    assert a.fingerprint == marginals.model(levels, tables, centre=[q012, q23]).fingerprint
    again = pickle.loads(pickle.dumps(a))          # by recipe: the centre comes along
    assert all(np.array_equal(u, v) for u, v in zip(again.centre, a.centre))


def test_compiled_functions_are_cached_per_centre_value():
    tree = marginals.structure(LEVELS, CYCLE)
    q = np.random.default_rng(6).dirichlet(np.ones(8))
    one = _graphical.functions(tree, 2.0, _graphical.Centre([q]))
    assert _graphical.functions(tree, 2.0, _graphical.Centre([q.copy()])) is one
    assert _graphical.functions(tree, 2.0, _graphical.Centre([q[::-1]])) is not one
    assert np.array_equal(_graphical.layout(tree).concentration(2.0, _graphical.Centre([q])),
                          2.0 * q)


# --------------------------------------------------------------------------- refusals
def test_every_bad_centre_is_refused_naming_centre():
    levels, tables = (2, 2, 2, 2), CYCLE + [(2, 3)]
    q012, q23 = _chain_centre(np.random.default_rng(2))
    model = marginals.model(levels, tables, centre=[q012, q23])
    assert [t.shape for t in model.centre] == [(2, 2, 2), (2, 2)]
    assert np.allclose(model.centre[0], q012) and np.allclose(model.centre[1], q23)
    zero = q012.copy()
    zero[1, 0, 1], zero[0, 0, 0] = 0.0, zero[0, 0, 0] + zero[1, 0, 1]
    skewed = q23 * np.array([[1.1], [0.9]])
    skewed /= skewed.sum()
    bad = {
        r"centre: 1 tables for 2 cliques": [q012],
        r"centre: the table of clique \('x0', 'x1', 'x2'\) has shape \(2, 4\)":
            [q012.reshape(2, 4), q23],
        r"centre: the table of clique \('x2', 'x3'\) sums to": [q012, q23 * 1.01],
        r"centre: the table of clique \('x0', 'x1', 'x2'\) must be finite and non-negative":
            [-q012, q23],
        r"centre: .* must be finite": [np.full((2, 2, 2), np.nan), q23],
        r"centre: the table of clique \('x0', 'x1', 'x2'\) is 0 at the cell "
        r"\{'x0': 1, 'x1': 0, 'x2': 1\}": [zero, q23],
        r"centre: the tables of cliques \('x0', 'x1', 'x2'\) and \('x2', 'x3'\) give "
        r"different margins of their separator \('x2',\)": [q012, skewed],
        r"centre: no table for the cliques \[\('x2', 'x3'\)\]": {(0, 1, 2): q012},
        r"centre: \('x1', 'x3'\) is not a clique": {(0, 1, 2): q012, ("x1", "x3"): q23},
        r"centre: 'p_nope' is neither": {"p_nope": q012, (2, 3): q23},
        r"centre: the clique \('x2', 'x3'\) is given twice":
            {(0, 1, 2): q012, (2, 3): q23, (3, 2): q23.T},
        r"centre must be 'release' \(the default\), None \(BDeu\)": "uniform",
        r"centre must be None \(BDeu\) or one table per clique": 0.5,
        r"centre: the table of clique \('x0', 'x1', 'x2'\) is not an array": [["a"], q23],
    }
    for message, centre in bad.items():
        with pytest.raises(ValueError, match=message):
            marginals.model(levels, tables, centre=centre)
    # keyed by attributes in another order: the table's axes follow the key
    keyed = marginals.model(levels, tables, centre={(3, 2): q23.T, "p_x0_x1_x2": q012})
    assert np.array_equal(keyed.centre[1], model.centre[1])


# --------------------------------------------------------------------------- the oracle
def test_the_exact_prior_of_theta_is_centred_on_q():
    # a release that says nothing (noise sd 10^6): theta's posterior is its prior, whose
    # clique cell means are the centre, and a new record's law is the centre's joint
    levels, tables = (2, 2, 2, 2), CYCLE + [(2, 3)]
    q012, q23 = _chain_centre(np.random.default_rng(3))
    model = marginals.model(levels, tables, alpha=3.0, centre=[q012, q23])
    mech = marginals.gaussian(levels, tables, rho=1e-12)
    exact = marginals.exact_posterior(model, mech, np.zeros(mech.size), 2)
    means = np.array([exact.theta(j).mean() for j in range(12)])
    assert np.allclose(means, np.concatenate([q012.ravel(), q23.ravel()]), atol=1e-9)
    joint = q012[..., None] * (q23 / q23.sum(1, keepdims=True))[None, None]
    assert np.allclose(exact.predictive(), joint.ravel(), atol=1e-9)


def test_the_release_centre_is_the_max_entropy_fit_and_a_valid_centre():
    # product-form records: the fit has the released 2-way margins and no 3-way interaction
    rng = np.random.default_rng(4)
    p = np.einsum("i,j,k->ijk", [0.7, 0.3], [0.6, 0.4], [0.75, 0.25])
    x = np.array(list(np.ndindex(2, 2, 2)), float)[rng.choice(8, 2000, p=p.ravel())]
    mech = marginals.gaussian(LEVELS, CYCLE, rho=1e6)
    model = marginals.model(LEVELS, CYCLE)
    (fit,) = marginals.release_centre(model, mech, mech.release(x, seed=1))
    counts = np.bincount((4 * x[:, 0] + 2 * x[:, 1] + x[:, 2]).astype(int), minlength=8)
    observed = counts.reshape(2, 2, 2) / 2000
    for axis in range(3):
        assert np.allclose(fit.sum(axis), observed.sum(axis), atol=1e-5)
    assert abs(_three_way(fit.ravel())) < 1e-6
    assert fit.min() > 0 and abs(fit.sum() - 1) < 1e-12
    # a noisy release with negative counts: still every cell positive, accepted as a centre
    noisy = marginals.gaussian(LEVELS, CYCLE, rho=0.05)
    centre = marginals.release_centre(model, noisy, noisy.release(x[:20], seed=2))
    assert centre[0].min() > 0
    assert marginals.model(LEVELS, CYCLE, centre=centre).centre is not None
    # a chain (two cliques): the tables agree on their separator
    levels, tables = (2, 3, 2), [(0, 1), (1, 2)]
    chain = marginals.model(levels, tables)
    mech = marginals.laplace(levels, tables, epsilon=0.5)
    y = np.array(list(np.ndindex(*levels)), float)
    centre = marginals.release_centre(chain, mech, mech.release(y, seed=3))
    assert np.allclose(centre[0].sum(0), centre[1].sum(1), atol=1e-12)
    assert marginals.model(levels, tables, centre=centre).centre is not None
    other = marginals.gaussian([2, 2, 2], tables, rho=1.0)  # x1 of 2 levels, not 3
    with pytest.raises(ValueError, match="the mechanism releases tables of the attributes"):
        marginals.release_centre(chain, other, np.zeros(other.size))


def _three_way(theta):
    """The 3-way log interaction of 2 x 2 x 2 tables (rows of ``theta``): 0 in product form
    and in the max-entropy fit of the three 2-way margins."""
    t = np.log(np.asarray(theta).reshape(-1, 2, 2, 2))
    sign = np.array([[[1, -1], [-1, 1]], [[-1, 1], [1, -1]]])
    return (t * sign).sum((1, 2, 3))


# --------------------------------------------------------------------------- slow: sampling
@pytest.mark.slow
def test_the_sampler_is_exact_under_a_non_uniform_centre(check_posterior):
    # a triangle (ridge moves run on it) and a further clique (2, 3) (the collapsed move's
    # non-root urn, separator concentrations a q_S), the root urn drawing from q_root; every
    # theta cell against enumeration within 4 Monte Carlo standard errors (mean, sd and
    # three quantiles; conftest.Z)
    levels, tables = (2, 2, 2, 2), CYCLE + [(2, 3)]
    q012, q23 = _chain_centre(np.random.default_rng(5))
    model = marginals.model(levels, tables, alpha=4.0, centre={(0, 1, 2): q012, (2, 3): q23})
    assert model.structure.cliques == ((0, 1, 2), (2, 3))
    assert model.records_move is not None
    x = np.array([[0, 0, 0, 1], [1, 1, 0, 0], [1, 1, 1, 1], [0, 1, 1, 1], [0, 0, 1, 0],
                  [1, 0, 0, 0]], float)
    mech = marginals.gaussian(levels, tables, rho=1.0)
    s_dp = mech.release(x, seed=6)
    idata = dw.sample(model, mech, s_dp, 6, draws=4000, tune=500, chains=4, seed=7,
                      progress=False)
    stats = diagnostics.group(idata, "sample_stats")
    assert np.nanmean(stats["move_accept"].values) > 0.01        # the moves move
    exact = marginals.exact_posterior(model, mech, s_dp, 6)
    post = diagnostics.group(idata, "posterior")
    theta = np.concatenate([post[k].values.reshape(4, 4000, -1) for k in model.params], -1)
    # the prior matters here: BDeu's posterior is elsewhere, by many Monte Carlo errors
    bdeu = marginals.exact_posterior(marginals.model(levels, tables, alpha=4.0, centre=None),
                                     mech, s_dp, 6)
    assert max(abs(exact.theta(j).mean() - bdeu.theta(j).mean()) for j in range(12)) > 0.05
    for j in range(12):
        check_posterior(theta[..., j], exact.theta(j))


@pytest.mark.slow
def test_a_release_centred_prior_keeps_the_three_way_interaction_the_release_shows():
    # product-form truth (no 3-way interaction), its three 2-way tables released (sd 2) at
    # n = 300: BDeu at alpha 1 (1/8 a cell) pushes the table along the line of fixed
    # margins to a sparse end, a confident invented interaction; centred on the release's
    # max-entropy fit at a = n / 10 the posterior stays near the fit
    rng = np.random.default_rng(0)
    p = np.einsum("i,j,k->ijk", [0.7, 0.3], [0.6, 0.4], [0.75, 0.25])
    n = 300
    x = np.array(list(np.ndindex(2, 2, 2)), float)[rng.choice(8, n, p=p.ravel())]
    mech = marginals.gaussian(LEVELS, CYCLE, rho=0.25)
    s_dp = mech.release(x, seed=1)
    bdeu = marginals.model(LEVELS, CYCLE, alpha=1.0, centre=None)
    centre = marginals.release_centre(bdeu, mech, s_dp)
    fit = centre[0].ravel()
    assert abs(_three_way(fit)[0]) < 1e-6
    runs = {}
    for name, model in (("bdeu", bdeu),
                        ("centred", marginals.model(LEVELS, CYCLE, alpha=n / 10,
                                                    centre=centre))):
        idata = dw.sample(model, mech, s_dp, n, draws=500, tune=200, chains=2, seed=3,
                          progress=False)
        runs[name] = diagnostics.group(idata, "posterior")["p_x0_x1_x2"].values.reshape(-1, 8)
    centred, sparse = runs["centred"], runs["bdeu"]
    # centred: every cell's posterior mean within 0.02 of the fit (measured: 0.0023), the
    # 3-way log interaction's posterior median near the fit's 0 (measured: 0.013)
    assert np.abs(centred.mean(0) - fit).max() < 0.02
    assert abs(np.median(_three_way(centred))) < 0.5
    # BDeu: two cells the fit puts at 0.061 driven to posterior means of 0.008 and 0.007,
    # the median interaction -18.7 (the cells of one sign near zero)
    assert (sparse.mean(0) < fit / 4).sum() >= 2
    assert abs(np.median(_three_way(sparse))) > 5.0


# --------------------------------------------------------------------------- the default
def test_the_default_prior_is_centred_on_the_release_when_sampled():
    # centre="release", alpha="auto" (the defaults): dw.sample and exact_posterior resolve
    # the model to release_centre's fit at auto_alpha's a, and sample that model exactly:
    # the same draws as the model built by hand (whose exactness the enumeration above
    # checks), and the same exact posterior
    levels, tables = (2, 2, 2, 2), CYCLE + [(2, 3)]
    model = marginals.model(levels, tables)
    assert model.centre == "release" and model.alpha == 1.0 and model.for_release is not None
    mech = marginals.gaussian(levels, tables, rho=2.0)
    x = np.array(list(np.ndindex(*levels)), float)[[0, 3, 6, 9, 15, 15]]
    s_dp, n = mech.release(x, seed=5), len(x)
    a = marginals.auto_alpha(n, mech)
    by_hand = marginals.model(levels, tables, alpha=a,
                              centre=marginals.release_centre(model, mech, s_dp))
    resolved = model.resolve(mech, s_dp, n)

    def same_prior(m, other):
        return m.alpha == other.alpha and all(
            np.array_equal(u, v) for u, v in zip(m.centre, other.centre, strict=True))

    assert same_prior(resolved, by_hand) and resolved.alpha == a
    assert resolved.for_release is None
    runs = [diagnostics.group(dw.sample(m, mech, s_dp, n, draws=30, tune=10, chains=1, seed=4,
                                        progress=False), "posterior")
            for m in (model, by_hand)]
    for name in model.params:
        assert np.array_equal(runs[0][name].values, runs[1][name].values)
    exact, exact_by_hand = (marginals.exact_posterior(m, mech, s_dp, n) for m in (model, by_hand))
    assert same_prior(exact.model, by_hand)
    assert np.array_equal(exact.weights, exact_by_hand.weights)
    # given tables with alpha="auto": the tables kept, alpha set from the release
    given = marginals.model(levels, tables, centre=by_hand.centre)
    assert same_prior(given.resolve(mech, s_dp, n), by_hand)
    # BDeu (centre=None) has nothing to resolve: alpha="auto" is 1
    bdeu = marginals.model(levels, tables, centre=None)
    assert bdeu.alpha == 1.0 and bdeu.resolve(mech, s_dp, n) is bdeu


def test_auto_alpha_is_a_tenth_of_the_least_informed_tables_records():
    levels, tables = {"a": 5, "b": 7, "c": 2}, [("a", "b"), ("b", "c")]
    n = 10_000
    for rho in (1e6, 1.0, 0.1, 1e-3):
        mech = marginals.gaussian(levels, tables, rho=rho)
        v = mech.noise_variance()
        # the 35-cell table is the least informed: n_eff = n / (1 + v / (n q (1 - q)))
        q = 1 / 35
        expected = max(1.0, 0.1 * n / (1 + v[0] / (n * q * (1 - q))))
        assert marginals.auto_alpha(n, mech) == pytest.approx(expected, rel=1e-12)
    # noise-free it is a tenth of the records; drowned in noise it is BDeu's 1
    assert marginals.auto_alpha(n, marginals.gaussian(levels, tables, rho=1e12)) \
        == pytest.approx(n / 10, rel=1e-6)
    assert marginals.auto_alpha(50, marginals.gaussian(levels, tables, rho=1e-4)) == 1.0
    assert marginals.auto_alpha(n) == 1.0


def test_bad_prior_settings_are_refused_by_name():
    for bad in ("uniform", "releases"):
        with pytest.raises(ValueError, match="centre must be 'release'"):
            marginals.model(LEVELS, CYCLE, centre=bad)
    for bad in ("automatic", 0.0, -1.0, float("inf"), True):
        with pytest.raises(ValueError, match="alpha must be 'auto' or a finite number"):
            marginals.model(LEVELS, CYCLE, alpha=bad)
    # the prior is set from a release of marginals.mechanism only
    with pytest.raises(TypeError, match="mechanism: centre='release' and alpha='auto'"):
        marginals.model(LEVELS, CYCLE).resolve(beta_binomial.laplace(epsilon=1.0),
                                               np.zeros(1), 5)
    # simulation-based calibration needs one fixed prior: a release-set one is refused
    model = marginals.model(LEVELS, CYCLE)
    with pytest.raises(ValueError, match="sets its prior from each release"):
        dw.calibrate(model, marginals.gaussian(LEVELS, CYCLE, rho=1.0), 10, ["record"],
                     trials=2, seed=0)
