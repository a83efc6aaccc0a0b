"""dw.Model: parameter layout, simulation and registration errors."""
import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap.models import beta_binomial


@numba.njit
def draw_record(rng, theta, out):
    out[0] = theta[0] + rng.standard_normal()


@numba.njit
def draw_theta(rng, theta, x, stats):
    return theta


def make(**kw):
    args = dict(params={"a": (), "b": (2, 3)}, record_size=1, draw_record=draw_record,
                draw_theta=draw_theta, draw_prior=lambda rng: np.zeros(7))
    args.update(kw)
    return dw.Model(**args)


def test_pack_and_unpack_round_trip():
    model = make()
    assert model.theta_size == 7
    b = np.arange(6.0).reshape(2, 3)
    flat = model.pack({"a": 1.5, "b": b})
    assert np.array_equal(flat, np.r_[1.5, b.ravel()])
    parts = model.unpack(np.stack([flat, flat + 1]))
    assert parts["a"].shape == (2,) and parts["b"].shape == (2, 2, 3)
    assert np.array_equal(parts["b"][1], b + 1)
    assert np.array_equal(model.pack(flat), flat)


@pytest.mark.parametrize("theta, error, match", [
    ({"a": 1.0}, ValueError, r"missing \['b'\]"),
    ({"a": 1.0, "b": np.zeros((2, 3)), "c": 1}, ValueError, r"unexpected \['c'\]"),
    ({"a": 1.0, "b": np.zeros(6)}, ValueError, r"theta\['b'\] must have shape \(2, 3\)"),
    (np.zeros(6), ValueError, "must have 7 value"),
    (np.r_[np.nan, np.zeros(6)], ValueError, "must be finite"),
    (np.array(["x"] * 7), TypeError, "real numbers"),
])
def test_pack_rejects_bad_theta(theta, error, match):
    with pytest.raises(error, match=match):
        make().pack(theta)


def test_simulate_draws_from_the_record_model():
    model = beta_binomial.model()
    x = model.simulate({"p": 0.25}, 20000, seed=0)
    assert x.shape == (20000, 1) and set(np.unique(x)) == {0.0, 1.0}
    # Binomial sd of the mean is 0.003: 5 sd.
    assert abs(x.mean() - 0.25) < 0.015
    assert np.array_equal(x, model.simulate({"p": 0.25}, 20000, seed=0))


@pytest.mark.parametrize("kw, error, match", [
    (dict(params={}), TypeError, "params must be a non-empty dict"),
    (dict(params={"a b": ()}), ValueError, "identifiers"),
    (dict(params={"a": (0,)}), TypeError, r"params\['a'\] must be a shape"),
    (dict(params={"a": "x"}), TypeError, r"params\['a'\] must be a shape"),
    (dict(record_size=0), ValueError, "record_size"),
    (dict(record_size=1.5), TypeError, "record_size"),
    (dict(draw_record=lambda rng, theta, out: None), TypeError, "draw_record must be a numba"),
    (dict(draw_theta=None), TypeError, "draw_theta must be callable"),
    (dict(draw_theta=lambda rng, theta: theta), TypeError, r"draw_theta must take exactly"),
    (dict(draw_prior=3), TypeError, "draw_prior must be callable"),
    (dict(model_stat=draw_record), ValueError, "stat_size is required"),
    (dict(stat_size=2), ValueError, "stat_size was given without model_stat"),
    (dict(propose_record=lambda *a: 0.0), TypeError, "propose_record must be a numba"),
])
def test_registration_errors_name_the_argument(kw, error, match):
    with pytest.raises(error, match=match):
        make(**kw)
