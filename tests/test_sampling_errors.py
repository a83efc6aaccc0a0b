"""dw.sample: every bad input is a ValueError/TypeError naming the argument."""
import math

import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial

MODEL, MECH = beta_binomial.model(), beta_binomial.laplace(1.0)


def run(model=MODEL, mech=MECH, s_dp=10.0, n=20, **kw):
    kw = {"draws": 20, "tune": 5, "chains": 1, "seed": 0, **kw}
    return dw.sample(model, mech, s_dp, n, **kw)


@pytest.mark.parametrize("kw, error, match", [
    (dict(s_dp=[1.0, 2.0]), ValueError, r"s_dp must have 1 value"),
    (dict(s_dp=np.nan), ValueError, "s_dp must be finite"),
    (dict(s_dp=np.inf), ValueError, "s_dp must be finite"),
    (dict(s_dp="3"), TypeError, "s_dp must be a real number"),
    (dict(s_dp=np.zeros((1, 1))), ValueError, "s_dp must be a scalar or a 1-d array"),
    (dict(n=0), ValueError, "n must be an integer >= 1"),
    (dict(n=2.5), TypeError, "n must be an integer"),
    (dict(draws=0), ValueError, "draws must be"),
    (dict(chains=0), ValueError, "chains must be"),
    (dict(tune=-1), ValueError, "tune must be"),
    (dict(cores=0), ValueError, "cores must be"),
    (dict(seed=-3), ValueError, "seed must be >= 0"),
    (dict(seed="a"), TypeError, "seed must be"),
    (dict(keep_stats="yes"), TypeError, "keep_stats"),
    (dict(model="m"), TypeError, "model must be a dawrap.Model"),
    (dict(mech="m"), TypeError, "mechanism must be a dawrap.Mechanism"),
    (dict(init_theta={"q": 0.5}), ValueError, r"init_theta must have exactly the parameters"),
    (dict(init_theta=[0.1, 0.2]), ValueError, "init_theta must have 1 value"),
    (dict(init_x=np.zeros(19)), ValueError, r"init_x must have shape \(n, record_size\)"),
    (dict(init_x=np.full(20, np.nan)), ValueError, "init_x must be finite"),
])
def test_bad_arguments(kw, error, match):
    with pytest.raises(error, match=match):
        run(**kw)


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_integer_release_is_valid():
    assert run(s_dp=np.int64(10)) is not None
    assert run(s_dp=np.array([10], dtype=np.int32)) is not None


def model_with(**kw):
    """The beta-binomial registered by hand, without support checks unless given."""
    base = dict(params={"p": ()}, record_size=1, draw_record=beta_binomial.draw_record,
                draw_theta=MODEL.draw_theta, model_stat=beta_binomial.count, stat_size=1,
                draw_prior=MODEL.draw_prior)
    base.update(kw)
    return dw.Model(**base)


@numba.njit
def nan_theta(rng, theta, x, stats):
    return np.array([np.nan])


@numba.njit
def late_nan_theta(rng, theta, x, stats):
    # Fine on the first call, NaN once the chain has moved: caught inside compiled code.
    return np.array([np.nan if stats[0] > 1e9 or rng.random() < 0.2 else 0.5])


@numba.njit
def two_thetas(rng, theta, x, stats):
    return np.array([0.5, 0.5])


@numba.njit
def wide_record(rng, theta, out):
    out[0] = 1.0
    out[1] = 1.0


@numba.njit
def nan_record(rng, theta, out):
    out[0] = np.nan


@numba.njit
def uncompilable(rng, theta, out):
    out[0] = {"a": 1}["a"] + "b"


@pytest.mark.parametrize("kw, match", [
    (dict(draw_theta=nan_theta), "theta returned by draw_theta must be finite"),
    (dict(draw_theta=two_thetas), "theta returned by draw_theta must have 1 value"),
    (dict(draw_theta=lambda rng, theta, x, stats: np.array([np.inf])),
     "theta returned by draw_theta must be finite"),
    (dict(draw_record=wide_record), "draw_record writes past the end of out"),
    (dict(draw_record=nan_record), "draw_record must write 1 finite value"),
    (dict(draw_prior=lambda rng: np.array([0.1, 0.2])),
     "theta returned by draw_prior must have 1 value"),
])
def test_bad_user_functions_are_named(kw, match):
    with pytest.raises(ValueError, match=match):
        run(model=model_with(**kw))


@pytest.mark.slow
def test_non_finite_theta_midway_is_reported_with_iteration():
    with pytest.raises(ValueError, match=r"non-finite theta at iteration \d+"):
        run(model=model_with(draw_theta=late_nan_theta), draws=200)


@pytest.mark.slow
def test_uncompilable_function_is_named():
    with pytest.raises(TypeError, match="draw_record could not be compiled by numba"):
        run(model=model_with(draw_record=uncompilable))


@numba.njit
def nan_density(s_dp, t, params):
    return math.nan if t[0] > 3 else 0.0


@pytest.mark.slow
def test_nan_mechanism_density_is_reported():
    mech = dw.Mechanism(beta_binomial.count, nan_density)
    with pytest.raises(ValueError, match="acceptance ratio is NaN"):
        run(mech=mech, init_x=np.zeros(20))


@numba.njit
def scalar_theta(rng, theta, x, stats):
    return 0.5


def test_compiled_kernel_returning_a_scalar_is_named():
    with pytest.raises(TypeError, match="a compiled draw_theta must return a float array"):
        run(model=model_with(draw_theta=scalar_theta))


def test_python_kernel_with_bad_accept_prob_is_named():
    with pytest.raises(TypeError, match="accept_prob of type NoneType"):
        run(model=model_with(draw_theta=lambda rng, th, x, st: (np.array([0.5]), None)))


def test_geometric_needs_an_integer_statistic():
    from dawrap.models import normal_mean

    with pytest.raises(ValueError, match="Geometric needs an integer-valued statistic"):
        dw.sample(normal_mean.model(), dw.Geometric(normal_mean.total, 1.0), 3, 20, chains=1,
                  draws=5)


def test_mechanism_params_must_be_finite():
    with pytest.raises(ValueError, match="params must be finite"):
        dw.Mechanism(beta_binomial.count, nan_density, params=[np.nan])


@pytest.mark.filterwarnings("ignore:R-hat")
def test_per_chain_starts():
    idata = run(init_theta=[{"p": 0.2}, {"p": 0.8}], chains=2, draws=1, tune=0)
    assert idata is not None
    with pytest.raises(ValueError, match="init_theta has 3 starts for 2 chains"):
        run(init_theta=np.full((3, 1), 0.5), chains=2)


def test_model_hyperparameters_are_checked():
    for bad in (np.inf, True, -1.0, "1"):
        with pytest.raises(ValueError, match="a must be a finite number > 0"):
            beta_binomial.model(a=bad)


@pytest.mark.slow
def test_stuck_chains_raise_a_warning():
    """A truncated release where a chain started far out never sees the likelihood: with
    the centred sweep alone (interweave=False) it stays there, the chains disagree and the
    user is told (R-hat), rather than handed a wrong posterior. (By default this release,
    which has a second mode, turns the non-centred move on: it moves mu with every record,
    so the prior pulls the chain in; that is checked too.)"""
    from dawrap.models import normal_mean

    model, mech = normal_mean.model(0, 3, 2.0), normal_mean.laplace_truncated(1.0, -4, 6)
    s_dp = mech.release(model.simulate({"mu": 1.0}, 300, seed=1), seed=2)
    kw = dict(init_theta=[{"mu": 1.0}, {"mu": -25.0}], chains=2, draws=300, tune=100, seed=0)
    with pytest.warns(RuntimeWarning, match="R-hat"):
        dw.sample(model, mech, s_dp, 300, interweave=False, **kw)
    mu = diagnostics.group(dw.sample(model, mech, s_dp, 300, **kw), "posterior")["mu"].values
    assert np.all(mu > -4)  # every draw of the far-started chain where records fall inside


@numba.njit
def escape(rng, theta, x, stats):
    return np.array([1.5 if rng.random() < 0.3 else 0.5])


@pytest.mark.slow
def test_theta_outside_the_parameter_space_is_caught():
    with pytest.raises(ValueError, match="outside the parameter space"):
        run(model=model_with(draw_theta=escape, theta_support=beta_binomial.in_unit_interval),
            draws=50)
    with pytest.raises(ValueError, match="init_theta is outside the model's parameter space"):
        run(init_theta=[1.2])
    with pytest.raises(ValueError, match="draw_prior is outside the model's parameter space"):
        run(model=model_with(draw_prior=lambda rng: np.array([-0.1]),
                             theta_support=beta_binomial.in_unit_interval))


def test_records_outside_the_support_are_caught():
    with pytest.raises(ValueError, match=r"init_x\[3\] = \[2.\] is not a possible record"):
        run(init_x=np.array([0, 1, 1, 2] + [0] * 16))
    with pytest.raises(ValueError, match=r"confidential\[1\] = \[0.5\] is not a possible"):
        dw.sample(MODEL, MECH, None, 2, method="nonprivate", confidential=[1.0, 0.5])


def test_record_sweep_options_are_checked():
    with pytest.raises(ValueError, match="interweave needs the model's non-centred"):
        run(model=model_with(), interweave=True)
    with pytest.raises(ValueError, match="interweave needs the model's non-centred"):
        run(model=model_with(), interweave=2)
    for bad in ("yes", -1, 1.5):
        with pytest.raises(TypeError, match="interweave must be None, True, False or a number"):
            run(interweave=bad)
    with pytest.raises(ValueError, match="sweeps must be"):
        run(sweeps=0)
    with pytest.raises(ValueError, match="scan must be 'systematic' or 'random'"):
        run(scan="backwards")
    with pytest.raises(ValueError, match="to method='record' only"):
        run(method="suffstat", sweeps=2)
    with pytest.raises(TypeError, match="noncentred must be a dawrap.NonCentred"):
        model_with(noncentred=(beta_binomial.bernoulli_from_uniform,))
    with pytest.raises(TypeError, match="log_prior must be"):
        model_with(noncentred=dw.NonCentred(beta_binomial.bernoulli_from_uniform,
                                            beta_binomial.uniform_given_bernoulli,
                                            lambda theta: 0.0))
