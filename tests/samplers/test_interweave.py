"""The interweaving move: its default (from the missing-information estimate) and a NaN
density reported (exactness of the move is tested in test_sampling.py)."""
import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.samplers import record
from dawrap.runner.information import missing_information
from dawrap.samplers.interweave import AUTO_THRESHOLD, DEFAULT_STEPS, make_move
from dawrap.models import beta_binomial, normal_mean


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_the_default_turns_the_move_on_only_where_it_pays():
    model, n = beta_binomial.model(), 1000
    for eps, expect in ((0.01, True), (1.0, False)):
        mech = beta_binomial.laplace(eps)
        assert (missing_information(model, mech, n) >= AUTO_THRESHOLD) is expect
        idata = dw.sample(model, mech, 300.0, n, draws=20, tune=5, chains=1, seed=0)
        assert diagnostics.attrs(idata)["interweave"] == (DEFAULT_STEPS if expect else 0)
    # A model without a non-centred parameterisation never interweaves.
    plain = dw.Model(params={"p": ()}, record_size=1, draw_record=beta_binomial.draw_record,
                     draw_theta=model.draw_theta, model_stat=beta_binomial.count, stat_size=1,
                     draw_prior=model.draw_prior)
    mech = beta_binomial.laplace(0.01)
    assert dw.Record().prepare(plain, mech, n, np.array([300.0])).interweave == 0


@numba.njit
def nan_off_the_start(s_dp, t, params):
    """log g that is NaN for every total but the starting one (params[0])."""
    return 0.0 if abs(t[0] - params[0]) < 1e-6 else np.nan


@pytest.mark.slow
def test_a_nan_density_in_the_move_is_reported_not_rejected():
    model, n = normal_mean.model(0.0, 1.0, 1.0), 50
    theta = model.pack({"mu": 0.0})
    x = model.simulate(theta, n, seed=1)
    s_dp = np.array([float(x.sum())])
    params = s_dp.copy()
    fns = record.RecordFunctions(model.draw_record, model.propose_record, model.model_stat,
                                 normal_mean.gaussian(1.0).sampler_statistic, nan_off_the_start)
    chain = record.bind_chain(fns, record.SweepOptions(model.record_size, 1, model.stat_size))
    state = chain.init(theta, x.copy(), record.Inputs(s_dp, params, 1), np.empty(0),
                       np.empty(0))
    move, init_move_state = make_move(model.noncentred, fns, 1, 1)
    state = state._replace(move_state=init_move_state(theta))
    after, accept, status = move(np.random.default_rng(0), state, s_dp, params, False)
    assert status == record.BAD_RATIO
    assert np.array_equal(after.x, x) and after.theta[0] == 0.0  # nothing moved


@pytest.mark.slow
def test_jumps_leave_the_posterior_invariant(check_posterior, draws_of):
    """The jumps' independence proposal (a Gaussian per mode, fixed before sampling) enters
    the acceptance ratio through q(theta) / q(theta'): forced on a release with one mode,
    where it proposes most steps, the draws still match the closed-form posterior."""
    model, mech, n, tau = normal_mean.model(0.0, 1.0, 1.0), normal_mean.gaussian(30.0), 100, 30.0
    s_dp = np.array([40.0])
    idata = dw.sample(model, mech, s_dp, n, method=dw.Record(interweave=True, jumps=True),
                      draws=4000, tune=500, seed=3, progress=False)
    assert diagnostics.attrs(idata)["jumps"] == 1
    check_posterior(draws_of(idata, "mu"),
                    normal_mean.exact_posterior_gaussian(s_dp, n, tau, 0.0, 1.0, 1.0))


def test_jumps_need_the_move_and_the_landscape():
    model, mech = normal_mean.model(0.0, 1.0, 1.0), normal_mean.gaussian(30.0)
    with pytest.raises(ValueError, match="jumps=True needs the non-centred move"):
        dw.Record(interweave=False, jumps=True).prepare(model, mech, 100, np.array([40.0]))
    with pytest.raises(ValueError, match="jumps=True needs the release-weighted prior draws"):
        dw.Record(interweave=True, jumps=True).prepare(model, mech, 100)  # no release
    with pytest.raises(TypeError, match="jumps must be None, True or False"):
        dw.Record(jumps="yes")


def test_the_jump_mixture_state_draws_and_weighs_the_mixture():
    """The jumps' typed mixture (interweave.MixtureState) against scipy: its log density is
    the mixture's, up to the constant -d log(2 pi) / 2, and its draws have the mixture's
    mean and covariance (tolerance: 5 standard errors of 20 000 independent draws)."""
    from scipy import stats
    from dawrap.samplers.interweave import JumpMixture, mixture_draw, mixture_log_density
    means = np.array([[0.0, 1.0], [3.0, -2.0]])
    factors = np.array([[[1.0, 0.0], [0.5, 0.8]], [[0.3, 0.0], [-0.2, 1.5]]])
    weights = np.array([1.0, 3.0])
    state = JumpMixture(weights, means, factors).state()
    w = weights / weights.sum()
    for theta in (np.array([0.2, 0.4]), np.array([2.5, -1.0]), np.array([-4.0, 6.0])):
        want = np.log(sum(w[c] * stats.multivariate_normal(means[c], factors[c] @ factors[c].T)
                          .pdf(theta) for c in range(2)))
        assert mixture_log_density(state, theta) - np.log(2 * np.pi) == pytest.approx(want)
    rng = np.random.default_rng(4)
    draws = np.array([mixture_draw(rng, state, 2) for _ in range(20_000)])
    mean = w @ means
    second = sum(w[c] * (factors[c] @ factors[c].T + np.outer(means[c], means[c]))
                 for c in range(2))
    cov = second - np.outer(mean, mean)
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 5 * np.sqrt(np.diag(cov) / 20_000))
    # the sample variance's standard error: sd^2 sqrt((kurtosis - 1) / N), kurtosis < 6 here
    assert np.all(np.abs(draws.var(axis=0) - np.diag(cov))
                  < 5 * np.diag(cov) * np.sqrt(5 / 20_000))
