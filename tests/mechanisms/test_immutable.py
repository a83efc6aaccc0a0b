"""Mechanisms are immutable once built (issue 29 item 2): the sensitivity and domain checks run
in the constructor, so nothing the guarantee or the noise depends on may change afterwards
(``G.sensitivity = 1e-3`` made a secure release the exact confidential total while
``G.privacy`` still reported the original epsilon)."""
import math
import pickle

import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap.mechanisms import Box, Sparse
from dawrap.models import census, contingency, dirichlet_multinomial, marginals, small_area


@numba.njit
def identity(x_i, out):
    out[0] = x_i[0]


@numba.njit
def log_uniform(s_dp, t, params):
    return -math.log(2 * params[0]) if abs(s_dp[0] - t[0]) < params[0] else -math.inf


class Shifted(dw.Mechanism):
    """A user's subclass: its own attributes are frozen with the rest."""

    def __init__(self, half_width):
        self.half_width = float(half_width)
        super().__init__(identity, log_uniform, params=[self.half_width], epsilon=1.0,
                         draw_release=lambda rng, t: t + rng.uniform(-1.0, 1.0, t.shape))


BUILDERS = {
    "Laplace": lambda: dw.Laplace(identity, 0.5, sensitivity=2.0),
    "Geometric": lambda: dw.Geometric(identity, 1.0, sensitivity=2.0, contribution=(0, 2)),
    "Geometric.from_scale": lambda: dw.Geometric.from_scale(identity, 2.0, contribution=(0, 1)),
    "histogram": lambda: dw.Geometric(dirichlet_multinomial.one_hot, 1.0, sensitivity=2.0,
                                      size=5, contribution=Sparse(1)),
    "Gaussian": lambda: dw.Gaussian(identity, 2.0),
    "Gaussian.from_zcdp": lambda: dw.Gaussian.from_zcdp(identity, 0.5, 1.0),
    "Gaussian.from_gdp": lambda: dw.Gaussian.from_gdp(identity, 0.5, 1.0),
    "DiscreteGaussian": lambda: dw.DiscreteGaussian.from_zcdp(identity, 0.5, 1.0,
                                                              contribution=(0, 1)),
    "Mechanism": lambda: dw.Mechanism(identity, log_uniform, params=[5.0], epsilon=1.0),
    "subclass": lambda: Shifted(2.0),
    "small_area": lambda: small_area.discrete_gaussian([0, 0], categories=2, rho=(0.5, 0.5)),
    "contingency": lambda: contingency.laplace((2, 2), [(0,), (1,)], epsilon=[1.0, 1.0]),
    "marginals": lambda: marginals.mechanism({"a": 2, "b": 2}, [("a",), ("a", "b")],
                                             [marginals.Noise.geometric(1.0),
                                              marginals.Noise.discrete_gaussian(0.5)]),
    "census": lambda: census.discrete_gaussian(census.Geography({"block": [0, 1]}, 2),
                                               [census.query("block", rho=0.5)]),
}

#: Everything a guarantee, the noise or the sampler reads, whether or not a class holds it
#: (setting a missing one must not slip through either), and the freeze flag itself.
READ = ("sensitivity", "epsilon", "sigma", "scale", "alpha", "contribution", "size",
        "statistic", "sampler_statistic", "log_density", "params", "truncation",
        "integer_statistic", "sparse", "coordinate_log_density", "depends_on_release", "name",
        "_draw_release", "_guarantee", "_density_params", "_noise_variance", "_secure_noise",
        "noise_variance", "privacy", "rho", "sigmas", "sizes", "half_width", "_frozen",
        "noises", "_parts", "_privacy", "_integer", "levels", "tables", "attributes")


def _description(mech):
    return (mech.privacy, mech.fingerprint, mech.params.tolist(), repr(mech),
            None if mech.noise_variance() is None else mech.noise_variance().tolist())


@pytest.mark.parametrize("which", list(BUILDERS))
def test_no_attribute_can_be_set_or_deleted_once_built(which):
    mech = BUILDERS[which]()
    before = _description(mech)
    # _recipe, the factory call dw.recipe stamps after construction, says how to rebuild the
    # object elsewhere (test_recipes_still_stamp_and_pickle), not what it does.
    for name in sorted((set(vars(mech)) | set(READ)) - {"_recipe"}):
        with pytest.raises(AttributeError, match="immutable once built"):
            setattr(mech, name, 1e-3)
        with pytest.raises(AttributeError, match="immutable once built"):
            delattr(mech, name)
    assert _description(mech) == before


def test_the_issue_s_weakenings_are_refused_and_the_noise_stays():
    geometric = dw.Geometric(dirichlet_multinomial.one_hot, epsilon=1, sensitivity=2, size=5,
                             contribution=Sparse(1))
    discrete = dw.DiscreteGaussian.from_zcdp(identity, rho=0.5, sensitivity=1.0,
                                             contribution=(0, 1))
    for mech, name, value in ((geometric, "sensitivity", 1e-3), (discrete, "sigma", 1e-3),
                              (geometric, "contribution", Box(0, 10 ** 6)),
                              (discrete, "contribution", Box(0, 10 ** 6)),
                              (geometric, "epsilon", 1e9)):
        with pytest.raises(AttributeError, match=f"'{name}' cannot be changed"):
            setattr(mech, name, value)
    assert geometric.privacy == {"epsilon": 1.0, "sensitivity": 2.0, "alpha": math.exp(-0.5)}
    x = np.zeros(50)
    draws = np.array([geometric.release(x, secure=True)[0] for _ in range(50)])
    assert draws.std() > 1.0  # discrete Laplace of scale 2: sd 2.8; none would be 0


def test_what_a_mechanism_holds_cannot_be_changed_in_place():
    geometric = BUILDERS["Geometric"]()
    for bound in ("lower", "upper"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(geometric.contribution, bound)[:] = 10 ** 6
        with pytest.raises(AttributeError, match="immutable once built"):
            setattr(geometric.contribution, bound, np.array([10 ** 6]))
    assert geometric.contribution.diameter_l1() == 2
    params = geometric.params
    params[:] = 0.0  # a copy
    assert np.all(geometric.params != 0.0)
    discrete = BUILDERS["DiscreteGaussian"]()
    with pytest.raises(TypeError):
        discrete._guarantee["rho"] = 1e9
    with pytest.raises(AttributeError, match="stated once"):
        discrete._state_guarantee("rho", 1e9, 1.0)
    with pytest.raises(AttributeError):
        BUILDERS["histogram"]().sparse.nnz = 2
    with pytest.raises(TypeError):
        BUILDERS["small_area"]().sigmas[0] = 1e-3
    table = BUILDERS["contingency"]()
    table.noise_variance()[:] = 0.0
    assert np.all(table.noise_variance() == 2.0 * 2.0 ** 2)
    # a marginal release's noises and guarantee (issue 41)
    release = BUILDERS["marginals"]()
    with pytest.raises(AttributeError, match="immutable"):
        release.noises[0].scale = 1e-3
    with pytest.raises(TypeError):
        release._privacy["epsilon"] = 1e9
    with pytest.raises(ValueError, match="read-only"):
        release._integer[:] = False
    release.privacy["rho"] = 1e9                  # a copy
    assert release.privacy == {"epsilon": 1.0, "rho": 0.5, "rho_total": 1.0}
    with pytest.raises(TypeError):
        BUILDERS["census"]()._privacy["rho"] = 1e9


@dw.recipe
def coarse(epsilon=1.0):
    """A user's recipe around a built-in one: the recipe stamp is set twice."""
    from dawrap.models import beta_binomial

    return beta_binomial.geometric(epsilon)


def test_recipes_still_stamp_and_pickle():
    mech = coarse(epsilon=0.5)
    assert mech._recipe[1] == "coarse"
    again = pickle.loads(pickle.dumps(mech))
    assert again.privacy == mech.privacy


def test_a_noise_variance_is_checked():
    with pytest.raises(ValueError, match="noise_variance must have 1 value"):
        dw.Mechanism(identity, log_uniform, params=[1.0], noise_variance=[1.0, 2.0])
    with pytest.raises(ValueError, match="noise_variance must be >= 0"):
        dw.Mechanism(identity, log_uniform, params=[1.0], noise_variance=-1.0)
