"""Clamped linear regression: the sensitivity by brute force, the release layout against a NumPy
reference, the near-noiseless limit against the conjugate posterior, and the record sampler
against importance sampling of the exact posterior at moderate epsilon."""
import itertools

import numba
import numpy as np
import pytest
from scipy import optimize, stats

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import linear_regression as lr

PUBLISHED_BETA = np.array([-1.79, -2.89, -0.66])


# -- an independent NumPy reference of the release ----------------------------------------------

def release_reference(x, lower, upper, intercept=True, clamp=True):
    """Sum over records (axis -2) of the upper triangle of u~ u~^T without its constant entry,
    for records x[..., n, p + 1]; written from the module doc, sharing no code with it.
    ``clamp=False`` applies the affine map to the raw values (a sampler's plausible bug)."""
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    u = (2 * (np.clip(x, lower, upper) if clamp else x) - lower - upper) / (upper - lower)
    if intercept:
        u = np.concatenate([np.ones(u.shape[:-1] + (1,)), u], axis=-1)
    rows, cols = np.triu_indices(u.shape[-1])
    gram = np.einsum("...na,...nb->...ab", u, u)[..., rows, cols]
    return gram[..., 1:] if intercept else gram


def contributions(p, intercept, records):
    """One record's released vector per row, from the compiled statistic (bounds [-1, 1])."""
    statistic = lr.clamped_products(p, 1.0, 1.0, intercept)
    out = np.empty((len(records), lr.laplace(1.0, p, 1.0, 1.0, intercept=intercept).size))
    for row, record in zip(out, records):
        statistic(record, row)
    return out


@numba.njit
def max_pairwise_l1(rows):
    """Largest L1 distance between two rows (all pairs)."""
    best = 0.0
    for i in range(rows.shape[0]):
        for j in range(i + 1, rows.shape[0]):
            d = 0.0
            for k in range(rows.shape[1]):
                d += abs(rows[i, k] - rows[j, k])
            best = max(best, d)
    return best


# -- (a) sensitivity ---------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("intercept", [True, False])
@pytest.mark.parametrize("p", [1, 2, 3])
def test_sensitivity_is_attained_and_never_exceeded(p, intercept):
    delta = lr.sensitivity(p, intercept)
    expected = ((p + 1) * (p + 3) ** 2 / (2 * (p + 2)) if intercept else (p + 1) * (p + 2) / 2)
    assert delta == pytest.approx(expected, rel=1e-15)
    # Every record on the lattice of step 1/(p + 2) in the clamped box [-1, 1]^(p + 1): it
    # holds the corners, the centre and the maximising pair of the derivation.
    steps = np.arange(-(p + 2), p + 3) / (p + 2)
    lattice = np.array(list(itertools.product(steps, repeat=p + 1)))
    rows = contributions(p, intercept, lattice)
    assert max_pairwise_l1(rows) == pytest.approx(delta, rel=1e-12)  # attained
    # Random records (some outside the box, so clamped) never do better, nor does a local
    # maximiser started from random pairs.
    rng = np.random.default_rng(p)
    random_rows = contributions(p, intercept, rng.uniform(-1.3, 1.3, (3000, p + 1)))
    assert max_pairwise_l1(np.vstack([random_rows, rows[::7]])) <= delta * (1 + 1e-12)

    def minus_l1(pair):
        a, b = contributions(p, intercept, pair.reshape(2, p + 1))
        return -np.abs(a - b).sum()

    for _ in range(8):
        found = optimize.minimize(minus_l1, rng.uniform(-1, 1, 2 * (p + 1)), method="Powell",
                                  bounds=[(-1, 1)] * (2 * (p + 1)))
        assert -found.fun <= delta * (1 + 1e-12)
    # The published constants: adding each entry's own largest change gives p^2 + 4p + 3
    # (15 at p = 2) with an intercept and (p + 1)^2 without, never attained; the paper's
    # p^2 + 3p + 3 (13 at p = 2) is a valid but loose bound.
    per_entry = (rows.max(0) - rows.min(0)).sum()
    assert per_entry == pytest.approx(p * p + 4 * p + 3 if intercept else (p + 1) ** 2)
    assert per_entry > delta and p * p + 3 * p + 3 > delta


def test_laplace_scale_and_sensitivity_override():
    mech = lr.laplace(0.5, 2, 10.0, 10.0)
    assert mech.sensitivity == 75 / 8 and mech.scale == 75 / 8 / 0.5 and mech.size == 9
    assert lr.laplace(0.5, 2, 10.0, 10.0, intercept=False).size == 6
    assert lr.laplace(2.0, 2, 10.0, 10.0, sensitivity=13.0).scale == 6.5
    with pytest.raises(ValueError, match="sensitivity must be at least the L1 sensitivity 9.375"):
        lr.laplace(1.0, 2, 10.0, 10.0, sensitivity=9.0)


# -- layout, records, model statistic ---------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("intercept", [True, False])
def test_release_matches_the_reference_with_clamping(intercept):
    p, bounds_x, bound_y = 3, [(-1.0, 2.0), (0.0, 0.5), (-4.0, -1.0)], (-3.0, 6.0)
    lower, upper = [-1.0, 0.0, -4.0, -3.0], [2.0, 0.5, -1.0, 6.0]
    x = np.random.default_rng(0).normal(0.0, 3.0, (500, p + 1))  # most records get clamped
    mech = lr.laplace(1.0, p, bounds_x, bound_y, intercept=intercept)
    assert np.allclose(mech.total(x), release_reference(x, lower, upper, intercept),
                       rtol=1e-12, atol=1e-10)
    clamped = np.clip(x, lower, upper)
    assert np.allclose(mech.total(x), mech.total(clamped), rtol=1e-12, atol=1e-10)
    # Per-predictor D_j means [-D_j, D_j].
    assert np.allclose(lr.laplace(1.0, 2, [1.0, 3.0], 2.0).total(x[:, [0, 1, 3]]),
                       release_reference(x[:, [0, 1, 3]], [-1, -3, -2], [1, 3, 2]))


@pytest.mark.slow
def test_records_follow_the_model():
    cov = np.array([[1.0, 0.6], [0.6, 2.0]])
    model = lr.model(2, sigma2=None, m=None, cov=cov)
    theta = {"beta": np.array([0.5, -1.0, 2.0]), "sigma2": 0.7, "m": np.array([1.0, -2.0])}
    n = 40000
    x = model.simulate(theta, n, seed=1)
    design = np.column_stack([np.ones(n), x[:, :2]])
    beta_hat, residuals, *_ = np.linalg.lstsq(design, x[:, 2], rcond=None)
    # Standard errors at this n: beta 0.004, sigma2 0.005, m 0.007, cov at most 0.014; every
    # tolerance is 4 of them or more.
    assert np.allclose(beta_hat, theta["beta"], atol=0.03)
    assert residuals[0] / (n - 3) == pytest.approx(0.7, abs=0.03)
    assert np.allclose(x[:, :2].mean(0), theta["m"], atol=0.05)
    assert np.allclose(np.cov(x[:, :2].T), cov, atol=0.06)
    # The model statistic is the upper triangle of u u^T, u = (1, x_1, x_2, y).
    stat = np.empty(10)
    lr.products(x[0], stat)
    u = np.r_[1.0, x[0]]
    assert np.allclose(stat, np.outer(u, u)[np.triu_indices(4)])
    # The non-centred map gives every record back from its noise (the interweaving contract),
    # and the noise of the simulated records is standard normal.
    nc, flat, rng = model.noncentred, model.pack(theta), np.random.default_rng(2)
    z, back = np.empty((1000, 3)), np.empty(3)
    for i in range(1000):
        nc.noise_from_record(rng, flat, x[i], z[i])
        nc.record_from_noise(flat, z[i], back)
        assert np.allclose(back, x[i], rtol=1e-12, atol=1e-12)
    assert np.allclose(z.mean(0), 0.0, atol=0.15) and np.allclose(np.cov(z.T), np.eye(3), atol=0.2)


# -- (b) huge epsilon: the conjugate posterior -------------------------------------------------

# The two variants checked against exact posteriors, shared by (b) and (c) so that each
# compiles once: everything known (the paper's setting, with a correlated Sigma and a non-zero
# prior mean so that a mix-up shows), and sigma2 and m unknown.
M_TRUE, COV = np.array([0.9, -1.17]), np.array([[1.0, 0.3], [0.3, 0.8]])
PRIOR_MEAN = np.array([0.5, 0.0, -0.5])
VARIANTS = {
    "known": ({"sigma2": 2.0, "m": M_TRUE, "cov": COV, "prior_mean": PRIOR_MEAN,
               "prior_sd": 2.0}, {"beta": PUBLISHED_BETA}),
    "unknown": ({"sigma2": None, "m": None, "cov": COV, "prior_mean": PRIOR_MEAN,
                 "prior_sd": 1.5, "sigma2_prior": (3.0, 4.0), "m_prior": ([0.0, -1.0], 1.0)},
                {"beta": PUBLISHED_BETA, "sigma2": 2.0, "m": M_TRUE}),
}


def marginal_draws(post, name):
    """(chain, draw) arrays of each scalar component of a parameter."""
    draws = post[name].values
    return [draws] if draws.ndim == 2 else [draws[..., j] for j in range(draws.shape[2])]


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_huge_epsilon_recovers_the_nonprivate_conjugate_posterior(variant, check_posterior):
    """At epsilon = 1e6 with bounds far outside the data the release is the sufficient
    statistic itself, so the private posterior is the conjugate one. No record proposal is
    ever accepted at this epsilon, so the chain starts from the confidential data."""
    settings, truth = VARIANTS[variant]
    n, model = 100, lr.model(2, **settings)
    x = model.simulate(truth, n, seed=10)
    assert np.abs(x).max() < 30.0  # well inside the bounds
    mech = lr.laplace(1e6, 2, 100.0, 100.0)
    idata = dw.sample(model, mech, mech.release(x, seed=11), n, draws=4000, tune=200,
                      seed=12, init_x=x)
    post = diagnostics.group(idata, "posterior")
    exact = lr.nonprivate_posterior(x, **settings)
    assert list(exact) == list(post.data_vars) == list(model.params)
    for name, marginal in exact.items():
        dists = marginal if isinstance(marginal, list) else [marginal]
        for draws, dist in zip(marginal_draws(post, name), dists, strict=True):
            check_posterior(draws, dist)


# -- (c) moderate epsilon: importance sampling of the exact posterior --------------------------

PROBS = (0.05, 0.5, 0.95)


def summaries(values, weights):
    """Weighted mean, sd and the 5/50/95% quantiles, one row per weight vector."""
    order = np.argsort(values)
    out = []
    for w in weights:
        w = w / w.sum()
        mean = w @ values
        cdf = np.cumsum(w[order])
        out.append([mean, np.sqrt(w @ (values - mean) ** 2),
                    *values[order][np.searchsorted(cdf, PROBS)]])
    return np.array(out)


def importance_summaries(draw_prior, draw_database, log_likelihoods, batches=10,
                         size=100_000, seed=0):
    """Posterior summaries of every parameter by self-normalised importance sampling from the
    prior predictive with weights g(s_dp | T(x)), for each log-likelihood (all from the same
    draws). Each independent batch gives one row of summaries, so their spread gives the
    Monte Carlo error. Returns (likelihoods, batches, parameters, 5) summaries and the
    smallest effective sample size of a batch under the first likelihood."""
    rng = np.random.default_rng(seed)
    rows, smallest = [], np.inf
    for _ in range(batches):
        theta = draw_prior(rng, size)
        records = draw_database(rng, theta)
        weights = []
        for log_likelihood in log_likelihoods:
            log_w = log_likelihood(records)
            weights.append(np.exp(log_w - log_w.max()))
        smallest = min(smallest, weights[0].sum() ** 2 / (weights[0] @ weights[0]))
        rows.append([summaries(theta[:, j], weights) for j in range(theta.shape[1])])
    return np.array(rows).transpose(2, 0, 1, 3), smallest


def disagreements(draws, batches, z=4.0):
    """Summaries where MCMC and importance sampling differ by more than z combined errors."""
    est = summaries(draws.ravel(), [np.ones(draws.size)])[0]
    mcse = np.array([diagnostics.mcse(draws, "mean"), diagnostics.mcse(draws, "sd"),
                     *(diagnostics.mcse(draws, "quantile", q) for q in PROBS)])
    names = ("mean", "sd", *(f"q{q:g}" for q in PROBS))
    out = []
    for reference in batches:
        ref, se = reference.mean(0), reference.std(0, ddof=1) / np.sqrt(len(reference))
        tol = z * np.sqrt(mcse ** 2 + se ** 2)
        out.append([f"{names[k]}: {est[k]:.4g} vs {ref[k]:.4g} (tol {tol[k]:.2g})"
                    for k in range(5) if abs(est[k] - ref[k]) > tol[k]])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_record_sampler_matches_importance_sampling(variant):
    """n = 8 records, epsilon = 6, bounds that clamp about a third of the responses and a
    tenth of the predictors: every posterior summary of every parameter agrees with an
    importance-sampling computation of the exact posterior (1e6 prior-predictive draws,
    exact Laplace likelihood of the release). The same draws disagree with the posterior a
    sampler would target if it forgot the clamping, so the test has power."""
    settings, truth = VARIANTS[variant]
    unknown = variant == "unknown"
    n, lower, upper = 8, np.array([-2.0, -2.0, -5.0]), np.array([2.0, 2.0, 5.0])
    model = lr.model(2, **settings)
    mech = lr.laplace(6.0, 2, [(-2.0, 2.0)] * 2, 5.0)
    x = model.simulate(truth, n, seed=20)
    s_dp = mech.release(x, seed=21)
    chol = np.linalg.cholesky(COV)

    def draw_prior(rng, size):
        if not unknown:
            return rng.normal(PRIOR_MEAN, 2.0, (size, 3))
        sigma2 = 4.0 / rng.gamma(3.0, size=size)
        beta = PRIOR_MEAN + rng.normal(0.0, 1.5, (size, 3)) * np.sqrt(sigma2)[:, None]
        return np.column_stack([beta, sigma2, rng.normal([0.0, -1.0], 1.0, (size, 2))])

    def draw_database(rng, theta):
        m = theta[:, None, 4:6] if unknown else M_TRUE
        sigma = np.sqrt(theta[:, None, 3]) if unknown else np.sqrt(2.0)
        x0 = m + rng.standard_normal((len(theta), n, 2)) @ chol.T
        y = theta[:, None, 0] + np.einsum("snj,sj->sn", x0, theta[:, 1:3])
        y += sigma * rng.standard_normal((len(theta), n))
        return np.concatenate([x0, y[..., None]], axis=-1)

    def log_g(records, clamp=True):
        t = release_reference(records, lower, upper, clamp=clamp)
        return -np.abs(s_dp - t).sum(-1) / mech.scale

    reference, size = importance_summaries(
        draw_prior, draw_database, [log_g, lambda records: log_g(records, False)])
    # Self-normalised importance sampling is biased by O(1 / effective size): keep it small.
    assert size > 400
    # The paper's sampler for the known variant; with the interweaving move (the model's
    # non-centred parameterisation, which shifts every record with theta) for the other.
    idata = dw.sample(model, mech, s_dp, n, draws=15000, tune=1000, seed=22,
                      interweave=unknown)
    post = diagnostics.group(idata, "posterior")
    columns = [d for name in model.params for d in marginal_draws(post, name)]
    caught = 0
    for k, draws in enumerate(columns):
        exact, no_clamp = disagreements(draws, reference[:, :, k])
        assert not exact, f"parameter {k} of theta: " + "; ".join(exact)
        caught += bool(no_clamp)
    assert caught >= len(columns) // 2


# -- (d) argument checks and the published settings -------------------------------------------

def test_published_settings():
    s = lr.published_settings()
    assert s["n"] == 100 and s["epsilons"] == (0.1, 0.3, 1.0, 3.0, 10.0)
    assert np.array_equal(s["beta"], PUBLISHED_BETA)
    model = lr.model(**s["model"])
    mech = lr.laplace(1.0, **s["mechanism"])
    assert model.params == {"beta": (3,)} and model.record_size == 3
    assert mech.scale == 13.0 and mech.size == 9
    assert lr.published_settings()["beta"] is not s["beta"]  # a fresh copy each call


def test_model_and_mechanism_pickle_by_recipe():
    """Process pools and clusters rebuild them from the factory call (dawrap.recipe)."""
    import pickle

    model = lr.model(2, sigma2=None, m=None, cov=COV)
    mech = lr.laplace(2.0, 2, [(-1.0, 1.0), (-2.0, 2.0)], 3.0, sensitivity=13.0)
    assert pickle.loads(pickle.dumps(model)).params == model.params
    assert pickle.loads(pickle.dumps(mech)).fingerprint == mech.fingerprint


def test_parameters_of_each_variant():
    assert lr.model(3, intercept=False).params == {"beta": (3,)}
    assert lr.model(2, sigma2=None).params == {"beta": (3,), "sigma2": ()}
    assert lr.model(2, m=None).params == {"beta": (3,), "m": (2,)}
    unknown = lr.model(1, sigma2=None, m=None)
    assert unknown.theta_size == 4
    with pytest.raises(ValueError, match="outside the model's parameter space"):
        unknown.pack({"beta": [0.0, 1.0], "sigma2": -1.0, "m": [0.0]})
    prior = np.array([unknown.draw_prior(np.random.default_rng(s)) for s in range(4000)])
    # sigma2 ~ InvGamma(2, 2): median 2 / gamma.median(2) = 1.19; m ~ N(0, 1).
    assert np.median(prior[:, 2]) == pytest.approx(2 / stats.gamma(2).median(), rel=0.06)
    assert abs(prior[:, 3].mean()) < 0.1 and prior[:, 3].std() == pytest.approx(1, rel=0.06)


@pytest.mark.parametrize("call, error, message", [
    (lambda: lr.model(0), ValueError, r"p \(the number of predictors\) must be >= 1"),
    (lambda: lr.model(2.0), TypeError, r"p \(the number of predictors\) must be an integer"),
    (lambda: lr.model(2, intercept=1), TypeError, "intercept must be True or False"),
    (lambda: lr.model(2, sigma2=-1.0), ValueError, "sigma2 must be a finite number > 0"),
    (lambda: lr.model(2, m=[1.0, 2.0, 3.0]), ValueError, "m must be a finite number or 2"),
    (lambda: lr.model(2, m="a"), TypeError, "m must be a number or 2 numbers"),
    (lambda: lr.model(2, cov=[[1.0, 2.0], [2.0, 1.0]]), ValueError, "cov must be positive"),
    (lambda: lr.model(2, cov=np.eye(3)), ValueError, "cov must be a finite symmetric 2 x 2"),
    (lambda: lr.model(2, prior_mean=[0, 1]), ValueError, "prior_mean must be .* 3 finite"),
    (lambda: lr.model(2, prior_sd=0.0), ValueError, "prior_sd must be a finite number > 0"),
    (lambda: lr.model(2, sigma2=None, sigma2_prior=3.0), TypeError, "sigma2_prior must be a pair"),
    (lambda: lr.model(2, sigma2_prior=(0.0, 1.0)), ValueError, r"sigma2_prior\[0\] \(a0\)"),
    (lambda: lr.model(2, m_prior=(0.0, -1.0)), ValueError, r"m_prior\[1\] \(s0\)"),
    (lambda: lr.sensitivity(True), TypeError, r"p \(the number of predictors\)"),
    (lambda: lr.laplace(0.0, 2, 10.0, 10.0), ValueError, "epsilon must be a finite number > 0"),
    (lambda: lr.laplace(1.0, 2, [1.0, 2.0, 3.0], 10.0), ValueError, "bounds_x must be a number"),
    (lambda: lr.laplace(1.0, 2, [(1.0, -1.0), (0.0, 1.0)], 10.0), ValueError,
     r"bounds_x\[0\] must be finite with lower < upper"),
    (lambda: lr.laplace(1.0, 2, 10.0, (1.0, 2.0, 3.0)), ValueError, "bound_y must be a number"),
    (lambda: lr.laplace(1.0, 2, 10.0, -1.0), ValueError, "bound_y must be finite with lower"),
    (lambda: lr.laplace(1.0, 2, "wide", 10.0), TypeError, "bounds_x and bound_y must be numbers"),
    (lambda: lr.laplace(1.0, 2, 10.0, 10.0, sensitivity=-1.0), ValueError,
     "sensitivity must be a finite number > 0"),
    (lambda: lr.nonprivate_posterior(np.zeros((5, 1))), ValueError, r"records must have shape"),
    (lambda: lr.nonprivate_posterior(np.full((5, 3), "a")), TypeError, "records must be an array"),
    (lambda: lr.nonprivate_posterior(np.zeros((5, 3)), sigma2=0.0), ValueError, "sigma2 must"),
])
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_p_too_large_for_memory_is_refused_at_once():
    """p = 10^6 built a p x p tuple for 40 s until the process was killed; now the memory
    the p x p matrices need is estimated first."""
    for call in (lambda: lr.model(p=10 ** 6),
                 lambda: lr.laplace(1.0, p=10 ** 6, bounds_x=1, bound_y=1),
                 lambda: lr.sensitivity(10 ** 6)):
        with pytest.raises(ValueError, match=r"p = 1000000 predictors need p x p matrices: "
                                             r"about .* GB of memory, more than this"):
            call()
