"""dw.Model(dims=, coords=, deterministics=): the result's posterior carries dimension names,
coordinate labels and variables derived from the draws; mistakes are reported when the model
is built, before any chain runs."""
import numpy as np
import pytest

from dawrap import diagnostics


GROUPS = ["north", "centre", "south"]


def scaled(params):
    return {"scaled": params["tau"][..., None] * params["a"]}


@pytest.fixture
def make(registered):
    """``make(**kw)``: a model of parameters a (one per group) and tau, labelled (dims,
    coords, deterministics) unless ``kw`` says otherwise."""
    return lambda **kw: registered(**{
        "params": {"a": (3,), "tau": ()},
        "draw_prior": lambda rng: np.r_[rng.normal(size=3), 1.0],
        "dims": {"a": ("group",), "scaled": "group"}, "coords": {"group": GROUPS},
        "deterministics": scaled, **kw})


def test_dims_coords_and_deterministics_label_the_posterior(make):
    model = make()
    draws = np.random.default_rng(0).normal(size=(2, 5, 4))
    posterior = model.posterior_variables(draws)
    assert set(posterior) == {"a", "tau", "scaled"}
    assert np.array_equal(posterior["scaled"], draws[..., 3:4] * draws[..., :3])
    idata = diagnostics.to_arviz({"posterior": posterior, "constant_data": {"n": np.asarray(5)}},
                                 {"method": "test"}, model.dims, model.coords)
    post = diagnostics.group(idata, "posterior")
    assert post["a"].dims == ("chain", "draw", "group")
    assert post["scaled"].dims == ("chain", "draw", "group")
    assert list(post["group"].values) == GROUPS
    assert post["tau"].dims == ("chain", "draw")
    assert np.array_equal(post["a"].sel(group="south").values, draws[..., 2])


def test_without_labels_the_posterior_is_the_parameters(make):
    model = make(dims=None, coords=None, deterministics=None)
    assert model.dims == {} and model.coords == {}
    assert set(model.posterior_variables(np.zeros((1, 2, 4)))) == {"a", "tau"}


@pytest.mark.parametrize("kwargs, error, match", [
    ({"dims": {"a": ("group", "extra")}}, ValueError, r"dims\['a'\].*2 dimension\(s\).*\(3,\)"),
    ({"coords": {"group": ["north", "south"]}}, ValueError, "'group' has length 3 in 'a' but 2"),
    ({"dims": {"a": ("group",), "b": ("group",)}}, ValueError, r"dims names \['b'\]"),
    ({"dims": {"a": 3}}, TypeError, r"dims\['a'\] must be a dimension name"),
    ({"coords": ["north"]}, TypeError, "coords must be a dict"),
    ({"deterministics": "scaled"}, TypeError, "deterministics must be callable"),
    ({"deterministics": lambda p: {"a": p["a"]}}, ValueError, "other than the parameters"),
    ({"deterministics": lambda p: {"s": p["tau"][0]}}, ValueError, "leading axes"),
    ({"deterministics": lambda p: [p["a"]]}, TypeError, "must return a dict"),
])
def test_label_mistakes_are_reported_when_the_model_is_built(make, kwargs, error, match):
    with pytest.raises(error, match=match):
        make(**kwargs)
