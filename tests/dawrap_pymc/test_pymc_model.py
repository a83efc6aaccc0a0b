"""dawrap.pymc: parameter and record layout, record and prior draws from PyMC's graphs with the
chain's own generator, constraining maps, and clear errors for models it cannot take."""
import numpy as np
import pytest
from scipy import stats

pm = pytest.importorskip("pymc")

import dawrap.pymc as dwpm  # noqa: E402


def regression(n=20):
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        beta = pm.Normal("beta", 0.0, 1.0, shape=2)
        X = pm.Normal("X", 0.0, 1.0, observed=np.zeros((n, 2)))
        pm.Normal("y", X @ beta, sigma, observed=np.zeros(n))
    return model


@pytest.fixture(scope="module")
def parts():
    return dwpm.compile_model(regression(), records=["y", "X"])


def test_layout_names_parameters_and_record_columns(parts):
    lay = parts.layout
    assert lay.params == {"sigma": (), "beta": (2,)}
    assert lay.columns == {"y": slice(0, 1), "X": slice(1, 3)} and lay.n == 20


def test_record_draws_follow_the_likelihood_and_advance_the_generator(parts):
    # theta = (sigma, beta): y | x ~ N(x . beta, sigma^2), x ~ N(0, I). Residuals are
    # N(0, sigma^2): a Kolmogorov-Smirnov test at a fixed seed, and the generator moves on.
    theta, rng = np.array([0.5, 1.0, -2.0]), np.random.default_rng(3)
    rows = np.empty((4000, 3))
    for row in rows:
        parts.draw_record(rng, theta, row)
    assert not np.array_equal(rows[0], rows[1])
    resid = rows[:, 0] - rows[:, 1:] @ theta[1:]
    assert stats.kstest(resid, stats.norm(0, 0.5).cdf).pvalue > 1e-3
    assert stats.kstest(rows[:, 1], stats.norm().cdf).pvalue > 1e-3
    # the same seed gives the same records
    again, rng2 = np.empty(3), np.random.default_rng(3)
    parts.draw_record(rng2, theta, again)
    assert np.array_equal(again, rows[0])


def test_batched_record_draws_follow_the_likelihood(parts):
    # draw_records: the same likelihood, m independent records per call (the sweep's blocks
    # of 256 and a shorter last one); the same Kolmogorov-Smirnov checks as one per call
    theta, rng = np.array([0.5, 1.0, -2.0]), np.random.default_rng(3)
    rows = np.full((4000, 3), np.nan)
    for start in range(0, 4000, 256):
        parts.draw_records(rng, theta, rows[start:start + 256])
    assert np.all(np.isfinite(rows)) and not np.array_equal(rows[0], rows[1])
    resid = rows[:, 0] - rows[:, 1:] @ theta[1:]
    assert stats.kstest(resid, stats.norm(0, 0.5).cdf).pvalue > 1e-3
    assert stats.kstest(rows[:, 1], stats.norm().cdf).pvalue > 1e-3
    assert stats.kstest(rows[:, 2], stats.norm().cdf).pvalue > 1e-3
    # records are independent: consecutive rows' covariates uncorrelated (|r| < 4 / sqrt(n))
    assert abs(np.corrcoef(rows[:-1, 1], rows[1:, 1])[0, 1]) < 4 / np.sqrt(4000)
    # the chain's generator: the same seed gives the same records, and it moves on
    again = np.empty((256, 3))
    parts.draw_records(np.random.default_rng(3), theta, again)
    assert np.array_equal(again, rows[:256])


def test_from_pymc_batches_the_sweep_unless_told_otherwise():
    import numba

    @numba.njit
    def draw(rng, theta, out):
        out[1], out[2] = rng.standard_normal(), rng.standard_normal()
        out[0] = out[1:] @ theta[1:] + theta[0] * rng.standard_normal()

    assert dwpm.from_pymc(regression(), records=["y", "X"]).draw_records is not None
    assert dwpm.from_pymc(regression(), records=["y", "X"], batched=False).draw_records is None
    # a hand-written draw_record replaces both of PyMC's draws
    assert dwpm.from_pymc(regression(), records=["y", "X"], draw_record=draw).draw_records \
        is None
    with pytest.raises(TypeError, match="batched must be True or False"):
        dwpm.from_pymc(regression(), records=["y", "X"], batched="yes")


def test_constraining_maps_invert_each_other(parts):
    theta = np.array([0.7, 0.3, -1.2])
    u = parts.to_unconstrained(theta)
    assert np.isclose(u[0], np.log(0.7)) and np.allclose(u[1:], theta[1:])
    assert np.allclose(parts.to_constrained(u), theta)


def test_prior_draws_follow_the_prior(parts):
    rng = np.random.default_rng(4)
    draws = np.array([parts.draw_prior(rng) for _ in range(2000)])
    assert draws.shape == (2000, 3) and np.all(draws[:, 0] > 0)
    assert stats.kstest(draws[:, 0], stats.halfnorm().cdf).pvalue > 1e-3
    assert stats.kstest(draws[:, 2], stats.norm().cdf).pvalue > 1e-3


def _no_observed_variable():
    pm.Normal("mu", 0.0, 1.0)


def _different_row_counts():
    mu = pm.Normal("mu", 0.0, 1.0)
    pm.Normal("a", mu, 1.0, observed=np.zeros(10))
    pm.Normal("b", mu, 1.0, observed=np.zeros(12))


def _discrete_parameter():
    k = pm.Poisson("k", 3.0)
    pm.Normal("y", k, 1.0, observed=np.zeros(10))


def _censored_observation():
    mu = pm.Normal("mu", 0.0, 1.0)
    pm.Censored("y", pm.Normal.dist(mu, 1.0), lower=-1.0, upper=1.0, observed=np.zeros(10))


def _unmodelled_covariate():
    x = pm.Data("x", np.ones(10))
    beta = pm.Normal("beta", 0.0, 1.0)
    pm.Normal("y", beta * x, 1.0, observed=np.zeros(10))


def _potential():
    mu = pm.Normal("mu", 0.0, 1.0)
    pm.Normal("y", mu, 1.0, observed=np.zeros(10))
    pm.Potential("shift", -mu * mu)


def _size_changing_transform():
    w = pm.Dirichlet("w", np.ones(3))
    pm.Categorical("g", p=w, observed=np.zeros(10, dtype=int))


UNSUPPORTED = {  # a model from_pymc cannot take (its variables) -> what the error says
    "no observed variable": (_no_observed_variable, "no observed variable"),
    "observed variables of different row counts": (_different_row_counts,
                                                   "different numbers of rows"),
    "a discrete parameter": (_discrete_parameter, "'k' is discrete"),
    "an observed variable not a basic distribution": (_censored_observation,
                                                      "'y' is a .*basic"),
    "unmodelled covariates": (_unmodelled_covariate, "make 'x' an observed variable"),
    "a potential": (_potential, "Potentials \\['shift'\\]"),
    "a size-changing transform": (_size_changing_transform, "'w'.*changes its size"),
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_a_model_it_cannot_take_is_refused_saying_why(name):
    variables, message = UNSUPPORTED[name]
    with pm.Model() as model:
        variables()
    with pytest.raises(dwpm.UnsupportedModel, match=message):
        dwpm.from_pymc(model)


def _with_covariate(likelihood_mean, columns=1, n=20):
    """A model y ~ N(likelihood_mean(X, b), 1) with X ~ N(0, 1) observed, columns wide."""
    import pytensor.tensor as pt

    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 1.0, shape=columns)
        X = pm.Normal("X", 0.0, 1.0, observed=np.zeros((n, columns)))
        pm.Normal("y", likelihood_mean(X, b, pt), 1.0, observed=np.zeros(n))
    return model


COUPLED = {  # a record's likelihood reads other records -> what the error names
    "cumsum": (lambda X, b, pt: pt.cumsum(X[:, 0]), r"Cumsum\{axis=0\}.*along the records"),
    "centred by the mean": (lambda X, b, pt: b[0] * (X[:, 0] - X[:, 0].mean()),
                            r"Sum\{axes=None\}.*sums over the records"),
    "summed over rows": (lambda X, b, pt: X.sum(axis=0)[0] * b[0] + X[:, 0],
                         "sums over the records"),
    "rows shifted": (lambda X, b, pt: X[1:, 0].sum() + X[:, 0], "moves rows"),
    "rows reversed": (lambda X, b, pt: X[::-1, 0] * b[0], "moves rows"),
    "one row for all": (lambda X, b, pt: X[0, 0] + 0 * X[:, 0], "moves rows"),
    "product over records": (lambda X, b, pt: (X.T @ X)[0, 0] + X[:, 0],
                             "matrix product sums over the records"),
    "pairwise": (lambda X, b, pt: (X[:, 0][:, None] - X[:, 0][None, :]).max(axis=1),
                 "pairs values of different records"),
    "sorted": (lambda X, b, pt: pt.sort(X[:, 0]) * b[0], "cannot verify"),
}

ROW_BY_ROW = {  # the forms a record's own likelihood takes in practice
    "linear predictor": lambda X, b, pt: X @ b,
    "sum over columns": lambda X, b, pt: (X * b).sum(axis=1) + pt.exp(X[:, 0]),
    "softmax over columns": lambda X, b, pt: pt.special.softmax(X * b, axis=1)[:, 0],
    "centred by a constant": lambda X, b, pt: b[0] * (X[:, 1] - 0.25),
    "dot": lambda X, b, pt: pt.dot(X, b) + pt.switch(X[:, 0] > 0, 1.0, -1.0),
}


@pytest.mark.parametrize("name", sorted(COUPLED))
def test_a_likelihood_reading_other_records_is_refused_naming_the_operation(name):
    """cumsum(X) or X - X.mean() in a likelihood couple the records: dawrap, which replaces
    one record at a time, would sample another model (issue 29, item 7)."""
    mean, message = COUPLED[name]
    with pytest.raises(dwpm.UnsupportedModel, match="'y': its likelihood reads other "
                                                    "records through .*" + message):
        dwpm.layout(_with_covariate(mean, columns=2), records=["y", "X"])


@pytest.mark.parametrize("name", sorted(ROW_BY_ROW))
def test_likelihoods_reading_their_own_row_are_accepted(name):
    lay = dwpm.layout(_with_covariate(ROW_BY_ROW[name], columns=2), records=["y", "X"])
    assert lay.columns == {"y": slice(0, 1), "X": slice(1, 3)}


def test_records_indexing_a_parameter_by_group_are_accepted(example):
    # a[g]: each record reads the effect of its own group (the hierarchical tutorial)
    lay = dwpm.layout(example("pymc_varying_intercepts").pymc_model(30), records=["g", "y"])
    assert lay.params["a"] == (4,)


def test_missing_observations_are_refused():
    """PyMC imputes NaN observations as a parameter y_unobserved, which dawrap would sample
    as part of theta; the observed values are never used, so NaN is refused."""
    with pm.Model() as model, pytest.warns(UserWarning, match="automatically imputed"):
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=np.array([1.0, np.nan, 2.0]))
    with pytest.raises(dwpm.UnsupportedModel, match="'y' has missing \\(NaN\\) values.*"
                                                    "'y_unobserved'"):
        dwpm.from_pymc(model, records=["y"])


@pytest.mark.slow
@pytest.mark.parametrize("invalid, term", [("sigma", "the likelihood of 'y'"),
                                           ("p", "the likelihood of 'y'"),
                                           ("prior", "the prior of 'mu'")])
def test_a_density_with_an_invalid_parameter_is_refused_naming_the_term(invalid, term):
    """sigma = -1 (or p = 1.5, or a prior's sd of -1): the log density is -inf everywhere
    and every HMC step was rejected, mu stuck at its start without a word."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, -1.0 if invalid == "prior" else 1.0)
        if invalid == "p":
            pm.Bernoulli("y", p=1.5 + 0.0 * mu, observed=np.zeros(20))
        else:
            pm.Normal("y", mu, -1.0 if invalid == "sigma" else 1.0, observed=np.zeros(20))
    with pytest.raises(dwpm.UnsupportedModel, match=f"not finite .*: {term} is -inf"):
        dwpm.from_pymc(model)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="model must be a pymc.Model"):
        dwpm.from_pymc("not a model")
    with pytest.raises(ValueError, match="records must list each observed variable"):
        dwpm.from_pymc(regression(), records=["y"])
    with pytest.raises(ValueError, match="step_size"):
        dwpm.from_pymc(regression(), records=["y", "X"], step_size=-1.0)


def test_a_hand_written_record_draw_replaces_the_compiled_one():
    import numba

    @numba.njit
    def draw(rng, theta, out):
        out[1], out[2] = rng.standard_normal(), rng.standard_normal()
        out[0] = out[1:] @ theta[1:] + theta[0] * rng.standard_normal()

    assert dwpm.from_pymc(regression(), records=["y", "X"], draw_record=draw).draw_record is draw
    with pytest.raises(TypeError, match="draw_record"):
        dwpm.from_pymc(regression(), records=["y", "X"], draw_record=lambda rng, t, out: None)


def test_the_hierarchical_example_density_is_the_hand_computed_one(example):
    # examples/pymc_varying_intercepts.py: theta = (mu, tau, a_0..a_3), records (g, y); the
    # HMC density on u = (mu, log tau, a) includes the Jacobian log tau, and leaves out the
    # groups' log shares, which do not depend on u (a constant given x).
    example = example("pymc_varying_intercepts")
    parts = dwpm.compile_model(example.pymc_model(30), records=["g", "y"])
    assert parts.layout.params == {"mu": (), "tau": (), "a": (example.G,)}
    rng = np.random.default_rng(6)
    x = np.column_stack([rng.integers(0, example.G, 25), rng.normal(1.0, 1.5, 25)])
    u = np.array([0.4, np.log(0.7), -0.5, 0.1, 0.9, -1.3])
    mu, tau, a = u[0], np.exp(u[1]), u[2:]
    expected = (stats.norm(0, 2).logpdf(mu) + stats.halfnorm().logpdf(tau) + u[1]
                + stats.norm().logpdf(a).sum()
                + stats.norm(mu + tau * a[x[:, 0].astype(int)], example.SIGMA).logpdf(x[:, 1]).sum())
    lp, grad = parts.logp_and_grad(u, x)
    assert np.isclose(lp, expected, rtol=1e-12)
    step = 1e-6
    numeric = [(parts.logp_and_grad(u + step * e, x)[0] - parts.logp_and_grad(u - step * e, x)[0])
               / (2 * step) for e in np.eye(u.size)]
    assert np.allclose(grad, numeric, rtol=1e-6, atol=1e-6)
    assert np.allclose(parts.to_constrained(u), [mu, tau, *a])
