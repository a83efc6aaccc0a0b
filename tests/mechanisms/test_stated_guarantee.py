"""Issue 41 item 1, for every mechanism the package builds: the guarantee a mechanism states
(``privacy``) is the one of the noise it draws, built any way it can be (from a budget, from a
scale, through a model's factory), and stays so (nothing can be changed after construction);
budgets that are summed are shown without float rounding, never moved by more than it."""
import math

import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap.mechanisms.noise import stated_budget
from dawrap.models import census, marginals, small_area


@numba.njit
def identity(x_i, out):
    out[0] = x_i[0]


#: name -> (build, the guarantee of its drawn noise law computed from the law's scale alone).
#: Each law is what the mechanism's simulated releases, its density and (for the integer
#: mechanisms) its secure noise use.
BUILT = {
    "Laplace": (lambda: dw.Laplace(identity, 0.3, sensitivity=2.0),
                lambda m, b: {"epsilon": m.sensitivity / b}),
    "Geometric": (lambda: dw.Geometric(identity, 0.3, sensitivity=2.0, contribution=(0, 2)),
                  lambda m, b: {"epsilon": m.sensitivity / b, "alpha": math.exp(-1.0 / b)}),
    "Geometric.from_scale": (lambda: dw.Geometric.from_scale(identity, 0.001,
                                                             contribution=(0, 1)),
                             lambda m, b: {"epsilon": m.sensitivity / b}),
    "Gaussian": (lambda: dw.Gaussian(identity, 0.001), lambda m, b: {"sigma": b}),
    "Gaussian.from_zcdp": (lambda: dw.Gaussian.from_zcdp(identity, 0.3, 1.5),
                           lambda m, b: {"sigma": b, "rho": 1.5 ** 2 / (2 * b * b)}),
    "Gaussian.from_gdp": (lambda: dw.Gaussian.from_gdp(identity, 0.3, 1.5),
                          lambda m, b: {"sigma": b, "mu": 1.5 / b}),
    "DiscreteGaussian": (lambda: dw.DiscreteGaussian(identity, 0.001, contribution=(0, 1)),
                         lambda m, b: {"sigma": b}),
    "DiscreteGaussian.from_zcdp": (
        lambda: dw.DiscreteGaussian.from_zcdp(identity, 0.3, 1.0, contribution=(0, 1)),
        lambda m, b: {"sigma": b, "rho": 1.0 / (2 * b * b)}),
}


@pytest.mark.parametrize("which", list(BUILT))
def test_a_built_in_mechanism_states_the_guarantee_of_its_noise_law(which):
    build, guarantee = BUILT[which]
    mech = build()
    scale = float(mech.noise.scale[0])
    expected = guarantee(mech, scale)
    assert {k: mech.privacy[k] for k in expected} == pytest.approx(expected, rel=1e-12)


def _per_table(mech) -> list:
    """A marginal release's tables' budgets from their mechanisms' noise laws."""
    return [(2.0 / float(p.noise.scale[0])) if n.pure else 1.0 / float(p.noise.scale[0]) ** 2
            for n, p in zip(mech.noises, mech._parts)]


MODELS = {
    "marginals.mechanism": lambda: marginals.mechanism(
        {"a": 2, "b": 3}, [("a",), ("a", "b"), ("b",)],
        [marginals.Noise("geometric", 0.001), marginals.Noise.laplace(0.05),
         marginals.Noise("discrete_gaussian", 0.001)]),
    "marginals.from_measurements": lambda: marginals.from_measurements(
        {"a": 2, "b": 3}, [(("a", "b"), 10.0), (("b",), 0.5)]),
    "census": lambda: census.discrete_gaussian(
        census.Geography({"tract": [0, 0], "block": [0, 1]}, 2),
        [census.query("block", rho=0.1), census.query("tract", rho=0.2)]),
    "small_area": lambda: small_area.discrete_gaussian([0, 0, 1], categories=2, rho=(1e-3, 7.0)),
}


@pytest.mark.parametrize("which", list(MODELS))
def test_a_model_s_release_states_the_guarantee_of_the_noise_it_draws(which):
    mech = MODELS[which]()
    if which.startswith("marginals"):
        budgets = _per_table(mech)
        pure = [n.pure for n in mech.noises]
        epsilon = [b for b, p in zip(budgets, pure) if p]
        rho = [b for b, p in zip(budgets, pure) if not p]
        assert mech.privacy.get("epsilon", 0.0) == pytest.approx(math.fsum(epsilon), rel=1e-12)
        assert mech.privacy.get("rho", 0.0) == pytest.approx(math.fsum(rho), rel=1e-12)
        return
    layout = census.layout_of(mech)
    sigma = [float(mech.noise.scale[o]) for o in layout.offsets]
    rho = [mech.sensitivity ** 2 / (2 * s * s) for s in sigma]
    assert [mech.privacy[f"rho_{q}"] for q in range(len(rho))] == pytest.approx(rho, rel=1e-12)
    assert mech.privacy["rho"] == pytest.approx(math.fsum(rho), rel=1e-12)


@pytest.mark.parametrize("which", ["Geometric", "DiscreteGaussian.from_zcdp", "marginals"])
def test_the_secure_noise_has_the_spread_the_stated_guarantee_implies(which):
    # the publication path's exact noise (the operating system's source: no seed), against
    # the variance of the noise the stated budget gives; 5 standard errors of the sample
    # variance (its own fourth moment)
    if which == "marginals":
        mech = marginals.mechanism({"a": 2}, [("a",), ("a",)],
                                   [marginals.Noise.geometric(1.0),
                                    marginals.Noise.discrete_gaussian(0.25)])
        # one table of each kind: b = 2 / epsilon, sigma = 1 / sqrt(rho)
        cases = [(mech._parts[0], 2.0 / mech.privacy["epsilon"], "geometric"),
                 (mech._parts[1], 1.0 / math.sqrt(mech.privacy["rho"]), "discrete_gaussian")]
    else:
        mech = BUILT[which][0]()
        family = mech.noise.family
        scale = mech.privacy["sensitivity"] / mech.privacy["epsilon"] if family == "geometric" \
            else mech.privacy["sensitivity"] / math.sqrt(2 * mech.privacy["rho"])
        cases = [(mech, scale, family)]
    for part, scale, family in cases:
        law = dw.NoiseLaw.of(family, scale)            # the noise the statement implies
        z = np.array([part._secure_noise() for _ in range(4000)], float)
        centred = z - z.mean()
        var = centred.var()
        error = math.sqrt(max(np.mean(centred ** 4) - var ** 2, 0.0) / z.size)
        assert abs(var - float(law.variance[0])) < 5 * error, (which, var, law.variance)


def test_stated_budget_removes_float_rounding_only():
    assert stated_budget([0.05, 0.1]) == 0.15          # 0.15000000000000002 summed
    assert stated_budget([0.1, 0.2]) == 0.3
    assert stated_budget([0.1] * 10) == 1.0
    assert stated_budget([1.0 / (1.0 / math.sqrt(0.1)) ** 2]) == 0.1
    for values in ([1 / 3], [2 / 3, 1 / 7], [0.123456789012345], [1e-300, 2e-300]):
        assert stated_budget(values) == math.fsum(values)      # more digits than float noise
    # never moved by more than a few ulps a term
    rng = np.random.default_rng(0)
    for _ in range(1000):
        values = list(rng.choice([0.05, 0.1, 0.2, 0.3, 1 / 3, 0.7, 2.5], size=rng.integers(1, 9)))
        exact = math.fsum(values)
        assert abs(stated_budget(values) - exact) <= 4 * len(values) * math.ulp(exact)
