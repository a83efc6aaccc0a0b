"""PyMC models through dawrap.pymc give the exact private posteriors of the built-in models
(beta-binomial, normal mean) and the hand-written logistic regression's posterior on the
same release, within Monte Carlo error."""
import numpy as np
import pytest

pm = pytest.importorskip("pymc")

import dawrap as dw  # noqa: E402
import dawrap.pymc as dwpm  # noqa: E402
from dawrap import diagnostics  # noqa: E402
from dawrap.models import beta_binomial, normal_mean  # noqa: E402

Z = 4.0  # as tests/conftest.py: agreement within 4 Monte Carlo standard errors


@pytest.mark.slow
def test_beta_binomial_matches_the_exact_posterior(check_posterior, draws_of):
    n, a, b = 40, 2.0, 3.0
    with pm.Model() as bb:
        p = pm.Beta("p", a, b)
        pm.Bernoulli("y", p=p, observed=np.zeros(n))
    model = dwpm.from_pymc(bb)
    mech = beta_binomial.laplace(0.5)
    s_dp = np.array([14.0])
    exact = beta_binomial.exact_posterior(mech, s_dp, n, a, b)
    idata = dw.sample(model, mech, s_dp, n, draws=3000, tune=1000, seed=11)
    check_posterior(draws_of(idata, "p"), exact)


@pytest.mark.slow
def test_normal_mean_matches_the_exact_posterior(check_posterior, draws_of):
    n, mu0, sd0, sigma, noise = 30, 0.5, 2.0, 1.5, 4.0
    with pm.Model() as nm:
        mu = pm.Normal("mu", mu0, sd0)
        pm.Normal("y", mu, sigma, observed=np.zeros(n))
    mech = normal_mean.gaussian(noise)
    s_dp = np.array([25.0])
    exact = normal_mean.exact_posterior_gaussian(s_dp, n, noise, mu0, sd0, sigma)
    idata = dw.sample(dwpm.from_pymc(nm), mech, s_dp, n, draws=3000, tune=1000, seed=12)
    check_posterior(draws_of(idata, "mu"), exact)


@pytest.mark.slow
def test_logistic_regression_matches_the_hand_written_model(example):
    # The tutorial's hand-written model (examples/gallery/plot_private_logistic_regression.py: its log
    # density in an adaptive random walk) and its PyMC version
    # (examples/pymc_logistic_regression.py, HMC), on the same release.
    tutorial, pymc_tutorial = example("private_logistic_regression"), \
        example("pymc_logistic_regression")
    n, P = 200, tutorial.P
    # epsilon 4: the random walk mixes well enough for a comparison at a few thousand draws
    mech, hand = tutorial.mechanism(4.0), tutorial.private_model()
    s_dp = mech.release(hand.simulate({"beta": np.array([1.0, -0.5])}, n, seed=1), seed=2)
    ours = pymc_tutorial.private_model(n)
    a = diagnostics.group(dw.sample(ours, mech, s_dp, n, draws=2000, tune=1000, seed=3),
                          "posterior")["beta"].values
    b = diagnostics.group(dw.sample(hand, mech, s_dp, n, draws=4000, tune=1000, seed=4),
                          "posterior")["beta"].values
    for j in range(P):
        x, y = a[..., j], b[..., j]
        assert min(diagnostics.ess(x), diagnostics.ess(y)) >= 400
        for what, fa, fb in [("mean", x.mean(), y.mean()),
                             ("sd", x.std(ddof=1), y.std(ddof=1))]:
            se = np.hypot(diagnostics.mcse(x, what), diagnostics.mcse(y, what))
            assert abs(fa - fb) < Z * se, f"beta[{j}] {what}: {fa:.4f} vs {fb:.4f} (se {se:.3g})"


def test_logp_and_grad_is_the_hand_written_density_up_to_a_constant(example):
    tutorial, pymc_tutorial = example("private_logistic_regression"), \
        example("pymc_logistic_regression")
    P, log_posterior = tutorial.P, tutorial.log_posterior
    parts = dwpm.compile_model(pymc_tutorial.pymc_model(10), records=["y", "X"])
    rng = np.random.default_rng(5)
    x = np.column_stack([rng.integers(0, 2, 37).astype(float), rng.normal(size=(37, P))])
    for beta in rng.normal(size=(3, P)):
        lp, grad = parts.logp_and_grad(beta, x)
        # the prior's normalising constant; the covariates' N(0, 1) terms do not depend on
        # beta, so dawrap.pymc leaves them out
        const = -0.5 * P * np.log(2 * np.pi) - P * np.log(tutorial.PRIOR_SD)
        assert np.isclose(lp, log_posterior(beta, x, np.zeros(0)) + const, rtol=1e-10)
        step = 1e-6
        numeric = [(log_posterior(beta + step * e, x, np.zeros(0))
                    - log_posterior(beta - step * e, x, np.zeros(0))) / (2 * step)
                   for e in np.eye(P)]
        assert np.allclose(grad, numeric, rtol=1e-6, atol=1e-6)
