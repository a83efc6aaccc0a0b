"""The HMC theta kernel: it recovers exact posteriors inside the record sampler (on R^d and
through a constraining map), adapts during warm-up only, and rejects bad settings by name."""
import math

import numba
import numpy as np
import pytest
from scipy import stats

import dawrap as dw
from dawrap.samplers.arrays import flatten_state
from dawrap import diagnostics
from dawrap.models import normal_mean

MU0, SD0, SIGMA, NOISE, N = 0.5, 2.0, 1.0, 3.0, 50


@numba.njit
def logp_and_grad(theta, x):
    # N(MU0, SD0^2) prior on mu and N(mu, SIGMA^2) records, read from x itself (O(n)).
    mu = theta[0]
    total = np.sum(x[:, 0])
    n = x.shape[0]
    logp = -0.5 * (mu - MU0) ** 2 / SD0 ** 2 + (mu * total - 0.5 * n * mu * mu) / SIGMA ** 2
    grad = np.array([-(mu - MU0) / SD0 ** 2 + (total - n * mu) / SIGMA ** 2])
    return logp, grad


@pytest.mark.slow
def test_hmc_recovers_the_exact_normal_mean_posterior(check_posterior, draws_of):
    base = normal_mean.model(MU0, SD0, SIGMA)
    model = dw.Model(params={"mu": ()}, record_size=1, draw_record=base.draw_record,
                     draw_theta=dw.kernels.hmc(logp_and_grad, step_size=1.0),
                     draw_prior=base.draw_prior)
    mech = normal_mean.gaussian(NOISE)
    s_dp = mech.release(base.simulate({"mu": 1.2}, N, seed=1), seed=2)
    exact = normal_mean.exact_posterior_gaussian(s_dp, N, NOISE, MU0, SD0, SIGMA)
    idata = dw.sample(model, mech, s_dp, N, draws=4000, tune=1000, seed=3)
    check_posterior(draws_of(idata, "mu"), exact)
    stats = diagnostics.group(idata, "sample_stats")
    accept = stats["theta_accept"].values
    # dual averaging aimed at 0.8 from a step size far too large for this posterior
    assert 0.6 < accept.mean() < 0.95
    # the kernel's info is the result's sample stats: the step size each chain froze
    # (jittered by [0.8, 1.2]), the leapfrog steps (ceil(2 / step)), no divergence once tuned
    step, steps = stats["step_size"].values, stats["n_steps"].values
    assert np.all(step.max(axis=1) / step.min(axis=1) <= 1.2 / 0.8 + 1e-12)
    assert np.array_equal(steps, np.minimum(64, np.ceil(2.0 / step)))
    assert np.all(stats["diverging"].values == 0.0)


def test_a_divergent_trajectory_is_reported():
    # one step of size 50 on a posterior of sd about 0.14 (50 records N(mu, 1)): the energy
    # error is far above 1000 (and the log density may overflow): diverging, rejected
    kernel = dw.kernels.hmc(logp_and_grad, step_size=50.0, path_length=50.0)
    x = np.random.default_rng(0).normal(1.0, 1.0, (50, 1))
    theta = np.array([1.0])
    state = kernel.init_state(theta)
    moved, info = kernel.step(np.random.default_rng(1), theta, x, np.zeros(0), state, False)
    assert info.diverging == 1.0 and info.theta_accept < 1e-100 and moved[0] == theta[0]
    assert kernel.stats == ("theta_accept", "diverging", "step_size", "n_steps")
    # a step that fits the posterior does not diverge
    kernel = dw.kernels.hmc(logp_and_grad, step_size=0.05, path_length=0.2)
    state = kernel.init_state(theta)
    _, info = kernel.step(np.random.default_rng(1), theta, x, np.zeros(0), state, False)
    assert info.diverging == 0.0 and info.n_steps == math.ceil(0.2 / info.step_size)


D = 2


@numba.njit
def draw_scaled(rng, theta, out):
    # records N(0, sigma_j^2), sigma = exp(u) stored as theta = sigma > 0
    for j in range(D):
        out[j] = theta[j] * rng.standard_normal()


@numba.njit
def square(x_i, out):
    for j in range(D):
        out[j] = x_i[j] * x_i[j]


@numba.njit
def to_log(theta):
    return np.log(theta)


@numba.njit
def to_exp(u):
    return np.exp(u)


@numba.njit
def logp_log_scale(u, x):
    # tau_j = sigma_j^-2 ~ Gamma(A, B): on u = log sigma, log p = -2A u - B e^{-2u} + c
    # (the Jacobian included); the records add -n u - e^{-2u} S / 2.
    a, b = 3.0, 2.0
    n = x.shape[0]
    logp = 0.0
    grad = np.empty(D)
    for j in range(D):
        s = np.sum(x[:, j] * x[:, j])
        e = math.exp(-2.0 * u[j])
        logp += -(2.0 * a + n) * u[j] - (b + 0.5 * s) * e
        grad[j] = -(2.0 * a + n) + 2.0 * (b + 0.5 * s) * e
    return logp, grad


@pytest.mark.slow
def test_hmc_through_a_constraining_map_on_the_exact_non_private_posterior(check_posterior,
                                                                           draws_of):
    # With noise so small that it pins the sums of squares, p(sigma_j | s_dp) is the
    # non-private conjugate posterior tau_j | S_j ~ Gamma(A + n/2, B + S_j/2), exactly up to a
    # noise of sd 1e-3 on S_j that moves its sd by far less than the Monte Carlo error.
    n, a, b = 30, 3.0, 2.0
    mech = dw.Gaussian(square, sigma=1e-3, size=D)
    s_dp = np.array([25.0, 60.0])
    model = dw.Model(params={"sigma": (D,)}, record_size=D, draw_record=draw_scaled,
                     draw_theta=dw.kernels.hmc(logp_log_scale, to_unconstrained=to_log,
                                               to_constrained=to_exp),
                     model_stat=square, stat_size=D,
                     draw_prior=lambda rng: 1.0 / np.sqrt(rng.gamma(a, 1.0 / b, D)))
    init = np.sqrt(s_dp / n) * np.ones((n, D))
    idata = dw.sample(model, mech, s_dp, n, draws=3000, tune=1000, chains=1, seed=5,
                      init_x=init)
    sigma = draws_of(idata, "sigma")
    for j in range(D):
        tau = stats.gamma(a + n / 2, scale=1.0 / (b + s_dp[j] / 2))
        check_posterior(sigma[..., j] ** -2.0, tau)


def test_adaptation_happens_only_while_tuning():
    kernel = dw.kernels.hmc(logp_and_grad, step_size=0.05)
    theta, x = np.array([0.3]), np.random.default_rng(0).normal(1.0, 1.0, (N, 1))
    state = kernel.init_state(theta)
    rng = np.random.default_rng(1)
    for _ in range(120):
        theta, _ = kernel.step(rng, theta, x, np.zeros(0), state, True)
    frozen = flatten_state(state)  # every field, copied
    # the first mass-matrix window (50 iterations) ended: the inverse mass is the estimated
    # conditional variance, near the posterior variance 1 / (1/SD0^2 + N/SIGMA^2) (x is
    # fixed here), not the initial 1
    assert 0.2 / N < state.inv_mass[0] < 5.0 / N
    for _ in range(50):
        theta, _ = kernel.step(rng, theta, x, np.zeros(0), state, False)
    assert np.array_equal(flatten_state(state), frozen)


def test_the_metric_is_the_conditional_scale_inside_a_gibbs_sampler():
    # A Gibbs sampler of the joint p(mu, x) (no release): records x | mu ~ N(mu, SIGMA^2),
    # then one HMC step of mu | x. The chain's mu wanders over the prior (variance SD0^2 = 4)
    # while each HMC step targets mu | x, of variance 1 / (1/SD0^2 + N/SIGMA^2) ~ 0.02: the
    # learned inverse mass must be the latter (the mean squared gradient's inverse), not the
    # draws' variance. Started from the prior, the chain is stationary from the start.
    kernel = dw.kernels.hmc(logp_and_grad, step_size=0.05)
    rng = np.random.default_rng(2)
    theta = np.array([rng.normal(MU0, SD0)])
    state = kernel.init_state(theta)
    draws = []
    for _ in range(50):  # the first mass-matrix window
        x = rng.normal(theta[0], SIGMA, (N, 1))
        theta, _ = kernel.step(rng, theta, x, np.zeros(0), state, True)
        draws.append(theta[0])
    conditional = 1.0 / (1.0 / SD0 ** 2 + N / SIGMA ** 2)
    # 50 squared gradients estimate the Fisher information to about 20% (sd sqrt(2/50))
    assert 0.5 * conditional < state.inv_mass[0] < 2.0 * conditional
    assert np.var(draws) > 5.0 * conditional  # what the draws' variance would have given


@numba.njit
def two_arguments_wrong(u):
    return 0.0, u


@pytest.mark.parametrize("kwargs, message", [
    ({"step_size": -1.0}, "step_size"), ({"path_length": 0.0}, "path_length"),
    ({"max_steps": 0}, "max_steps"), ({"target": 1.5}, "target"),
    ({"to_unconstrained": to_log}, "to_constrained"),
])
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):
        dw.kernels.hmc(logp_and_grad, **kwargs)


def test_logp_and_grad_must_be_compiled_with_two_arguments():
    with pytest.raises(TypeError, match="logp_and_grad"):
        dw.kernels.hmc(lambda u, x: (0.0, u))
    with pytest.raises(TypeError, match="logp_and_grad"):
        dw.kernels.hmc(two_arguments_wrong)
