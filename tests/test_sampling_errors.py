"""dw.sample: every bad input is a ValueError/TypeError naming the argument."""
import math

import numba
import numpy as np
import pytest

import dawrap as dw
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


def test_integer_release_is_valid():
    assert run(s_dp=np.int64(10)) is not None
    assert run(s_dp=np.array([10], dtype=np.int32)) is not None


def model_with(**kw):
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


def test_non_finite_theta_midway_is_reported_with_iteration():
    with pytest.raises(ValueError, match=r"non-finite theta at iteration \d+"):
        run(model=model_with(draw_theta=late_nan_theta), draws=200)


def test_uncompilable_function_is_named():
    with pytest.raises(TypeError, match="draw_record could not be compiled by numba"):
        run(model=model_with(draw_record=uncompilable))


@numba.njit
def nan_density(s_dp, t, params):
    return math.nan if t[0] > 3 else 0.0


def test_nan_mechanism_density_is_reported():
    mech = dw.Mechanism(beta_binomial.count, nan_density)
    with pytest.raises(ValueError, match="acceptance ratio is NaN"):
        run(mech=mech, init_x=np.zeros(20))
