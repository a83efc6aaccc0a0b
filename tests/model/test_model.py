"""dw.Model: parameter layout, simulation and registration errors."""
import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap.models import beta_binomial


@numba.njit
def one_arg(a):
    return True


@numba.njit
def two_args(a, b):
    return 0.0


@numba.njit
def three_args(a, b, c):
    return 0.0


@numba.njit
def four_args(a, b, c, d):
    return 0.0


@numba.njit
def five_args(a, b, c, d, e):
    return 0.0


@pytest.fixture
def make(registered):
    """``make(**kw)``: a model of parameters a (a scalar) and b (2 x 3), or as ``kw`` says."""
    return lambda **kw: registered(**{"params": {"a": (), "b": (2, 3)},
                                      "draw_prior": lambda rng: np.zeros(7), **kw})


def test_pack_and_unpack_round_trip(make):
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
def test_pack_rejects_bad_theta(make, theta, error, match):
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
    (dict(model_stat=two_args), ValueError, "stat_size is required"),
    (dict(stat_size=2), ValueError, "stat_size was given without model_stat"),
    (dict(stat_every="sweep"), ValueError,
     r"stat_every must be 'record' .* or 'iteration' .*, got 'sweep'"),
    (dict(stat_every="iteration"), ValueError, "stat_every='iteration' recounts the model's "
                                               "statistic: give model_stat"),
    (dict(propose_record=lambda *a: 0.0), TypeError, "propose_record must be a numba"),
    (dict(draw_records=lambda rng, theta, out: None), TypeError, "draw_records must be a numba"),
    (dict(prepared=(three_args, three_args)), TypeError,
     "prepared must be a dawrap.PreparedDraw, got tuple"),
    (dict(prepared=dw.PreparedDraw(lambda theta: theta, four_args)), TypeError,
     r"prepared.prepare must be a numba.njit-compiled function \(theta\) -> table"),
    (dict(prepared=dw.PreparedDraw(one_arg, lambda *a: None)), TypeError,
     r"prepared.draw_record must be a numba.njit-compiled function \(rng, theta, table, out\)"),
    (dict(prepared=dw.PreparedDraw(one_arg, four_args, four_args), propose_record=four_args),
     TypeError, r"prepared.propose_record must take \(rng, theta, table, x_i, out\)"),
    (dict(prepared=dw.PreparedDraw(one_arg, three_args)), TypeError,
     r"prepared.draw_record must take \(rng, theta, table, out\)"),
    (dict(prepared=dw.PreparedDraw(one_arg, four_args), draw_records=three_args), ValueError,
     "give draw_records or prepared, not both"),
    (dict(prepared=dw.PreparedDraw(one_arg, four_args, five_args)), ValueError,
     "prepared.propose_record was given without propose_record"),
])
def test_registration_errors_name_the_argument(make, kw, error, match):
    with pytest.raises(error, match=match):
        make(**kw)


@pytest.mark.parametrize("kw, match", [
    # Each used to pass Model(...) and fail inside dw.sample as a numba TypeError.
    (dict(draw_record=two_args), r"draw_record must take \(rng, theta, out\)"),
    (dict(model_stat=three_args, stat_size=1), r"model_stat must take \(x_i, out\)"),
    (dict(model_stat=one_arg, stat_size=1), r"model_stat must take \(x_i, out\)"),
    (dict(propose_record=three_args), r"propose_record must take \(rng, theta, x_i, out\)"),
    (dict(draw_records=two_args), r"draw_records must take \(rng, theta, out\)"),
    (dict(theta_support=two_args), r"theta_support must take \(theta\)"),
    (dict(record_support=two_args), r"record_support must take \(x_i\)"),
    (dict(draw_prior=lambda: np.zeros(7)), r"draw_prior must take \(rng\)"),
    (dict(draw_prior=lambda rng, n: np.zeros(7)), r"draw_prior must take \(rng\)"),
])
def test_user_function_arity_is_checked_at_registration(make, kw, match):
    with pytest.raises(TypeError, match=match) as err:
        make(**kw)
    assert "positional argument" in str(err.value)


def test_functions_with_defaults_or_star_args_are_accepted(make):
    @numba.njit
    def stat_with_default(x_i, out, scale=1.0):
        out[0] = scale * x_i[0]

    model = make(model_stat=stat_with_default, stat_size=1,
                 draw_prior=lambda *args: np.zeros(7))
    assert model.model_stat is stat_with_default


@pytest.mark.parametrize("theta", [np.zeros((7, 1)), np.zeros((1, 7)), np.zeros((7, 1, 1))])
def test_pack_does_not_flatten_matrices(make, theta):
    with pytest.raises(ValueError, match=r"theta must have 7 value\(s\).*shape \(7,\)"):
        make().pack(theta)


def test_pack_of_a_one_value_theta():
    model = beta_binomial.model()
    for ok in (0.3, np.float64(0.3), [0.3], np.array([0.3]), {"p": 0.3}):
        assert np.array_equal(model.pack(ok), [0.3])
    with pytest.raises(ValueError, match=r"init must have 1 value\(s\).*or a scalar.*\(1, 1\)"):
        model.pack(np.array([[0.3]]), "init")


def test_a_kernel_returning_a_matrix_stops_the_run():
    """A plain-Python draw_theta (or draw_prior) returning a 1x1 matrix was flattened."""
    base = beta_binomial.model()

    def matrix_kernel(rng, theta, x, stats):
        return np.array([[rng.beta(1 + stats[0], 1 + x.shape[0] - stats[0])]])

    model = dw.Model(params={"p": ()}, record_size=1, draw_record=base.draw_record,
                     draw_theta=matrix_kernel, model_stat=beta_binomial.count, stat_size=1,
                     draw_prior=base.draw_prior, record_support=beta_binomial.is_binary)
    with pytest.raises(ValueError, match="the theta returned by draw_theta must have 1 value"):
        dw.sample(model, beta_binomial.laplace(1.0), 5.0, 10, draws=5, tune=2, chains=1,
                  seed=0, init_theta={"p": 0.5}, interweave=False)
    model = dw.Model(params={"p": ()}, record_size=1, draw_record=base.draw_record,
                     draw_theta=base.draw_theta, model_stat=beta_binomial.count, stat_size=1,
                     draw_prior=lambda rng: np.array([[rng.beta(1, 1)]]))
    with pytest.raises(ValueError, match="the theta returned by draw_prior must have 1 value"):
        dw.sample(model, beta_binomial.laplace(1.0), 5.0, 10, draws=5, tune=2, chains=1,
                  seed=0)


def test_a_prior_set_from_the_release_is_resolved_once_and_checked(make):
    # Model(for_release=): dw.sample resolves the model with the release before anything is
    # drawn; a hook returning something that is not a model of the same parameters, or a
    # model that would resolve again, is refused by name
    calls = []
    target = make()

    def hook(mechanism, s_dp, n):
        calls.append((mechanism, s_dp, n))
        return target

    model = make(for_release=hook)
    assert model.resolve("mech", 3.0, 10) is target and calls == [("mech", 3.0, 10)]
    assert target.resolve("mech", 3.0, 10) is target                 # no hook: itself
    for bad, error, match in ((lambda m, s, n: "model", TypeError, "must return a dawrap.Model"),
                              (lambda m, s, n: model, TypeError, "without a for_release"),
                              (lambda m, s, n: make(params={"a": ()},
                                                    draw_prior=lambda rng: np.zeros(1)),
                               ValueError, "other parameters")):
        with pytest.raises(error, match=match):
            make(for_release=bad).resolve(None, 0.0, 1)
    with pytest.raises(TypeError, match="for_release must be callable"):
        make(for_release=3)
    # dw.sample calls it with the checked release and n
    bb, mech = beta_binomial.model(a=1, b=1), beta_binomial.laplace(epsilon=1.0)
    seen = []
    hooked = beta_binomial.model(a=1, b=1)
    hooked.for_release = lambda m, s, n: seen.append((m, float(s[0]), n)) or bb
    first, second = (dw.diagnostics.group(dw.sample(m, mech, 4.2, 10, draws=20, tune=5, chains=1,
                                                    seed=1, progress=False), "posterior")
                     for m in (hooked, bb))
    assert seen == [(mech, 4.2, 10)]
    assert np.array_equal(first["p"].values, second["p"].values)
