"""dawrap.pymc keeps PyMC's dims and coords and computes its Deterministics from the draws;
likelihoods reading per-record numpy constants are refused with what to change."""
import numpy as np
import pytest

pm = pytest.importorskip("pymc")

import dawrap as dw  # noqa: E402
import dawrap.pymc as dwpm  # noqa: E402
from dawrap import diagnostics  # noqa: E402

GROUPS = ["north", "east", "south"]


def grouped(n=20):
    with pm.Model(coords={"group": GROUPS}) as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        tau = pm.HalfNormal("tau", 1.0)
        a = pm.Normal("a", 0.0, 1.0, dims="group")
        intercept = pm.Deterministic("intercept", mu + tau * a, dims="group")
        pm.Deterministic("spread", 2.0 * tau)
        g = pm.Categorical("g", p=np.full(3, 1 / 3), observed=np.zeros(n, dtype=int))
        pm.Deterministic("eta", intercept[g])   # per record: cannot be kept
        pm.Normal("y", intercept[g], 1.0, observed=np.zeros(n))
    return model


def test_dims_coords_and_deterministics_come_from_the_pymc_model():
    with pytest.warns(UserWarning, match=r"Deterministic 'eta' reads the records \(\['g'\]\)"):
        model = dwpm.from_pymc(grouped(), records=["g", "y"])
    assert list(model.params) == ["mu", "tau", "a"]   # PyMC's order, as written
    assert model.dims == {"a": ("group",), "intercept": ("group",)}
    assert list(model.coords["group"]) == GROUPS
    rng = np.random.default_rng(0)
    draws = np.concatenate([rng.normal(size=(2, 6, 1)), rng.random((2, 6, 1)),
                            rng.normal(size=(2, 6, 3))], axis=-1)
    post = model.posterior_variables(draws)
    assert set(post) == {"mu", "tau", "a", "intercept", "spread"}
    assert np.allclose(post["intercept"], draws[..., :1] + draws[..., 1:2] * draws[..., 2:])
    assert np.allclose(post["spread"], 2.0 * draws[..., 1])


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:R-hat")  # 50 draws: labels are checked, not mixing
def test_the_posterior_of_a_sampled_model_carries_the_labels():
    with pytest.warns(UserWarning, match="'eta'"):
        model = dwpm.from_pymc(grouped(30), records=["g", "y"])

    import numba

    @numba.njit
    def counts(record, out):
        out[:] = 0.0
        out[int(record[0])] = 1.0

    mech = dw.Laplace(counts, epsilon=1.0, sensitivity=2.0, size=3)
    idata = dw.sample(model, mech, np.array([12.0, 9.0, 9.0]), 30, draws=50, tune=50,
                      chains=2, seed=1, progress=False)
    post = diagnostics.group(idata, "posterior")
    assert post["a"].dims == ("chain", "draw", "group")
    assert list(post["group"].values) == GROUPS
    expected = post["mu"] + post["tau"] * post["a"]
    assert np.allclose(post["intercept"].values, expected.values)
    assert "eta" not in post


def test_covariates_given_as_a_numpy_array_are_refused_with_what_to_change():
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, 1.0, shape=2)
        pm.Bernoulli("y", logit_p=X @ beta, observed=np.zeros(50))
    with pytest.raises(dwpm.UnsupportedModel,
                       match=r"'y' reads per-record data given as a constant array of shape "
                             r"\(50, 2\).*Make it an observed variable"):
        dwpm.from_pymc(model)


def test_per_record_constants_in_any_parameter_are_refused():
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, np.linspace(1.0, 2.0, 40), observed=np.zeros(40))
    with pytest.raises(dwpm.UnsupportedModel, match=r"shape \(40,\)"):
        dwpm.from_pymc(model)


def test_constants_that_are_not_per_record_are_fine():
    # a core parameter whose length equals n (the categories' probabilities) is no record data
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1.0, shape=4)
        g = pm.Categorical("g", p=np.full(4, 0.25), observed=np.zeros(4, dtype=int))
        pm.Normal("y", mu[g], np.ones(1), observed=np.zeros(4))
    assert dwpm.layout(model).n == 4
