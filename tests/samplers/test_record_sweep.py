"""The compiled sweep against a plain NumPy reference, draw for draw, and the general
proposal (supplement Algorithm 2)."""
import copy
import math

import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap.samplers import record
from dawrap.models import beta_binomial, dirichlet_multinomial, normal_mean, poisson_gamma


def reference_sweep(rng, theta, x, stats, total, log_g, s_dp, model, mech):
    """One sweep of Ju et al. Algorithm 1, written plainly with NumPy (no numba)."""
    x, stats, total = x.copy(), stats.copy(), total.copy()
    stat = mech.sampler_statistic.py_func
    accepted = 0
    for i in range(x.shape[0]):
        proposal = np.empty(x.shape[1])
        model.draw_record.py_func(rng, theta, proposal)
        t_old, t_new = np.empty(mech.size), np.empty(mech.size)
        stat(x[i], s_dp, t_old)
        stat(proposal, s_dp, t_new)
        total_new = total + (t_new - t_old)
        log_g_new = mech.log_density.py_func(s_dp, total_new, mech.params)
        log_alpha = log_g_new - log_g
        if log_alpha >= 0 or rng.random() < math.exp(log_alpha):
            s_old, s_new = np.empty(model.stat_size), np.empty(model.stat_size)
            model.model_stat.py_func(x[i], s_old)
            model.model_stat.py_func(proposal, s_new)
            stats += s_new - s_old
            x[i], total, log_g = proposal, total_new, log_g_new
            accepted += 1
    return x, stats, total, log_g, accepted / x.shape[0]


CASES = [
    (beta_binomial.model(), beta_binomial.laplace(0.3), {"p": 0.4}, 400),
    (poisson_gamma.model(2, 1), poisson_gamma.laplace(0.8, c=3), {"lam": 2.0}, 300),
    (normal_mean.model(0, 2, 1), normal_mean.laplace(1.0, -2, 2), {"mu": 0.3}, 300),
]


@pytest.mark.slow
@pytest.mark.parametrize("model, mech, theta, n", CASES)
def test_compiled_sweep_matches_numpy_reference(model, mech, theta, n):
    theta = model.pack(theta)
    x = model.simulate(theta, n, seed=1)
    s_dp = mech.release(model.simulate(theta, n, seed=2), seed=3)
    fns = record.RecordFunctions(model.draw_record, model.propose_record, model.model_stat,
                                 mech.sampler_statistic, mech.log_density)
    chain = record.bind_chain(fns, record.SweepOptions(model.record_size, mech.size,
                                                       model.stat_size))
    inputs = record.Inputs(s_dp, mech.params, 1)
    state = chain.init(theta, x.copy(), inputs, np.empty(0), np.empty(0))
    expected = reference_sweep(np.random.default_rng(9), theta, x, state.stats, state.total,
                               state.log_g, s_dp, model, mech)
    new, info = chain.sweep(np.random.default_rng(9), state, s_dp, mech.params)
    assert np.array_equal(new.x, expected[0])
    assert np.allclose(new.stats, expected[1], rtol=1e-12, atol=0)
    assert np.allclose(new.total, expected[2], rtol=1e-12, atol=0)
    assert info.accept_rate == expected[4] and 0 < info.accept_rate < 1
    # The running sums equal sums recomputed from scratch.
    fresh = chain.init(theta, new.x, inputs, np.empty(0), np.empty(0))
    assert np.allclose(fresh.stats, new.stats, rtol=1e-12, atol=0)
    assert np.allclose(fresh.total, new.total, rtol=1e-12, atol=0)
    assert fresh.log_g == pytest.approx(new.log_g, rel=1e-12)


@numba.njit
def flip_record(rng, theta, x_i, out):
    """Propose the other value of a Bernoulli record: q is symmetric, so the log ratio is
    log f(x* | p) - log f(x | p)."""
    out[0] = 1.0 - x_i[0]
    p = theta[0]
    return math.log(p) - math.log1p(-p) if out[0] == 1.0 else math.log1p(-p) - math.log(p)


@pytest.mark.slow
def test_general_proposal_is_exact(check_posterior, draws_of):
    base = beta_binomial.model(a=2, b=2)
    model = dw.Model(params={"p": ()}, record_size=1, draw_record=beta_binomial.draw_record,
                     draw_theta=base.draw_theta, model_stat=beta_binomial.count, stat_size=1,
                     draw_prior=base.draw_prior, propose_record=flip_record)
    n, mech = 300, beta_binomial.laplace(0.2)
    s_dp = mech.release(model.simulate({"p": 0.35}, n, seed=4), seed=5)
    idata = dw.sample(model, mech, s_dp, n=n, draws=4000, tune=500, chains=4, seed=6)
    check_posterior(draws_of(idata, "p"), beta_binomial.exact_posterior(mech, s_dp, n, 2, 2))


@numba.njit
def logit_random_walk(rng, theta, x, stats):
    """An MH step on logit(p) for the Beta(2, 3) x Bernoulli posterior, reporting its
    acceptance probability: a stand-in for a user's existing non-conjugate sampler."""
    n, k = x.shape[0], stats[0]
    z = math.log(theta[0] / (1 - theta[0]))
    z_new = z + 0.3 * rng.standard_normal()

    def log_target(z):  # posterior of z = logit p, with the Jacobian p (1 - p)
        log_p, log_q = -math.log1p(math.exp(-z)), -math.log1p(math.exp(z))
        return (2 + k) * log_p + (3 + n - k) * log_q

    prob = min(1.0, math.exp(log_target(z_new) - log_target(z)))
    if rng.random() < prob:
        z = z_new
    return np.array([1.0 / (1.0 + math.exp(-z))]), prob


@pytest.mark.slow
def test_mh_theta_kernel_is_exact_and_reports_acceptance(check_posterior, draws_of):
    from dawrap import diagnostics

    base = beta_binomial.model(a=2, b=3)
    model = dw.Model(params={"p": ()}, record_size=1, draw_record=beta_binomial.draw_record,
                     draw_theta=logit_random_walk, model_stat=beta_binomial.count, stat_size=1,
                     draw_prior=base.draw_prior)
    n, mech = 200, beta_binomial.laplace(0.5)
    s_dp = mech.release(model.simulate({"p": 0.6}, n, seed=7), seed=8)
    idata = dw.sample(model, mech, s_dp, n=n, draws=8000, tune=1000, chains=4, seed=9)
    check_posterior(draws_of(idata, "p"), beta_binomial.exact_posterior(mech, s_dp, n, 2, 3))
    accept = diagnostics.group(idata, "sample_stats")["theta_accept"].values
    assert accept.shape == (4, 8000) and 0.2 < accept.mean() < 0.95


@pytest.mark.slow
def test_refresh_recomputes_running_sums():
    model, mech = normal_mean.model(0, 2, 1), normal_mean.laplace(1.0, -2, 2)
    theta = model.pack({"mu": 0.1})
    fns = record.RecordFunctions(model.draw_record, model.propose_record, model.model_stat,
                                 mech.sampler_statistic, mech.log_density)
    x = model.simulate(theta, 50, seed=0)
    chain = record.bind_chain(fns, record.SweepOptions(1, 1, 1))
    state = chain.init(theta, x, record.Inputs(np.array([1.0]), mech.params, 1), np.empty(0),
                       np.empty(0))
    state.total[0] += 1e-10  # simulate rounding drift (far above what O(1) updates produce)
    fixed, status = chain.refresh(state, np.array([1.0]), mech.params)
    assert status == record.OK
    assert fixed.total[0] == pytest.approx(np.clip(x, -2, 2).sum(), rel=1e-14)
    state.total[0] += 1e-3  # not rounding: something changed x behind the sweep's back
    assert chain.refresh(state, np.array([1.0]), mech.params)[1] == record.BAD_DRIFT


OPT_CHECK = """
import numpy as np
from dawrap.samplers import record
from dawrap.models import poisson_gamma
model, mech = poisson_gamma.model(2, 1), poisson_gamma.laplace(0.8, c=3)
theta = model.pack({"lam": 2.0})
x = model.simulate(theta, 300, seed=1)
s_dp = mech.release(x, seed=3)
fns = record.RecordFunctions(model.draw_record, model.propose_record, model.model_stat,
                             mech.sampler_statistic, mech.log_density)
chain = record.bind_chain(fns, record.SweepOptions(1, 1, 1))
inputs = record.Inputs(s_dp, mech.params, 1)
state = chain.init(theta, x, inputs, np.empty(0), np.empty(0))
for _ in range(5):
    state, info = chain.sweep(np.random.default_rng(0), state, s_dp, mech.params)
fresh = chain.init(theta, state.x, inputs, np.empty(0), np.empty(0))
assert np.array_equal(fresh.stats, state.stats) and np.array_equal(fresh.total, state.total)
print("ok")
"""


@pytest.mark.slow
@pytest.mark.parametrize("opt", ["0", "1"])
def test_sweep_is_correct_at_every_llvm_optimisation_level(opt, tmp_path):
    """The stack buffers must not rely on inlining: at NUMBA_OPT=0 a buffer returned from a
    helper's frame would dangle (a crash), at 1 silently corrupt the running sums."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_OPT": opt, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", OPT_CHECK], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


@numba.njit
def wide_record(rng, theta, out):
    for j in range(out.shape[0]):
        out[j] = theta[0] + rng.standard_normal()


@numba.njit
def first_field(x_i, out):
    out[0] = x_i[0]


@numba.njit
def shift_first_field(rng, theta, x_i, out):
    """Random walk on field 0 only: out starts as x_i, so the other fields stay as they are.
    Target f = N(theta, 1) per field: log ratio is the density ratio of field 0."""
    out[0] = x_i[0] + 0.5 * rng.standard_normal()
    return -0.5 * (out[0] - theta[0]) ** 2 + 0.5 * (x_i[0] - theta[0]) ** 2


@numba.njit
def keep_theta(rng, theta, x, stats):
    return theta.copy()


@pytest.mark.slow
def test_general_proposal_on_heap_buffers_keeps_untouched_fields():
    """record_size 20 > STACK_FLOATS: heap buffers; fields the proposal leaves alone keep the
    record's values (they used to be uninitialised memory)."""
    assert 20 > record.STACK_FLOATS
    model = dw.Model(params={"m": ()}, record_size=20, draw_record=wide_record,
                     draw_theta=keep_theta, draw_prior=lambda rng: np.array([0.0]),
                     propose_record=shift_first_field)
    mech = dw.Laplace(first_field, epsilon=1.0, sensitivity=10.0)
    x0 = model.simulate({"m": 0.0}, 50, seed=0)
    idata = dw.sample(model, mech, 0.0, 50, draws=20, tune=0, chains=1, seed=1,
                      init_theta=[0.0], init_x=x0, keep_stats=True)
    from dawrap import diagnostics
    assert np.all(np.isfinite(diagnostics.group(idata, "imputed_statistic")["t"].values))


def recounted(model, every="iteration"):
    """``model`` with its statistic brought up to date ``every`` record or iteration."""
    twin = copy.copy(model)
    twin.stat_every = every
    return twin


@pytest.mark.parametrize("model, mech, n", [
    # the dense path (beta-binomial's count, no sparse declaration; Laplace noise)
    (beta_binomial.model(), beta_binomial.laplace(0.5), 30),
    # the entries path (the one-hot counts declared sparse; Laplace noise per cell)
    (dirichlet_multinomial.model(np.ones(3)), dirichlet_multinomial.laplace(0.5, 3), 30),
], ids=["dense", "sparse"])
@pytest.mark.filterwarnings("ignore:R-hat and ESS:RuntimeWarning")
def test_a_statistic_recounted_per_iteration_gives_the_running_sums_draws(model, mech, n):
    # stat_every="iteration": the sweep does not move stats, the chain recounts them after
    # the sweeps. The kernel reads them at the next iteration only, so for a count statistic
    # the draws are bit for bit those of the running sums; a recount skipped or at the wrong
    # time hands the kernel stale counts and the draws part.
    x = model.simulate(model.draw_prior(np.random.default_rng(0)), n, seed=1)
    s_dp = mech.release(x, seed=2)
    runs = [dw.sample(recounted(model, every), mech, s_dp, n, draws=200, tune=50, chains=1,
                      seed=4, progress=False, method=dw.Record(sweeps=2))
            for every in ("record", "iteration")]
    first, second = (dw.diagnostics.group(r, "posterior") for r in runs)
    for name in first.data_vars:
        assert np.array_equal(first[name].values, second[name].values), name
    # the records moved: the kept draws are not all the same
    assert np.unique(first[list(first.data_vars)[0]].values).size > 10
