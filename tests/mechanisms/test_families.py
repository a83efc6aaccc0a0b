"""The noise families as objects (dawrap.mechanisms.families, issue 42 item 4): each built-in
family says once what the callers used to read off its name or its density's identity, and
the registry finds a family by name or by coordinate density, refusing what it cannot hold."""
import pickle

import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap.mechanisms import NoiseLaw, separable
from dawrap.mechanisms.discrete_gaussian import DISCRETE_GAUSSIAN
from dawrap.mechanisms.families import (ContinuousNoise, NoiseFamily, Split, family_named,
                                        of_coordinate, register, registered)
from dawrap.mechanisms.gaussian import GAUSSIAN, gaussian_log_density
from dawrap.mechanisms.geometric import GEOMETRIC
from dawrap.mechanisms.laplace import LAPLACE, laplace_log_density
from dawrap.models import beta_binomial

BUILT_IN = {"laplace": LAPLACE, "geometric": GEOMETRIC, "gaussian": GAUSSIAN,
            "discrete_gaussian": DISCRETE_GAUSSIAN}


def test_the_built_in_families_are_registered_in_order():
    assert [f.name for f in registered()][:4] == list(BUILT_IN)
    for name, family in BUILT_IN.items():
        assert family_named(name) is family and NoiseLaw.of(name, 1.0).kind is family


def test_each_built_in_family_says_what_its_name_used_to():
    """The form, the integer flag, the densities, the split of a shared cell and the
    plausibility tail: what the string and function-identity switches decided."""
    said = {family.name: (family.continuous.name, family.integer, family.log_density,
                          family.coordinate_log_density, family.split,
                          family.flat_beyond_range) for family in BUILT_IN.values()}
    laplace_form = (laplace_log_density, separable.laplace_coordinate, Split.LATENT, True)
    gaussian_form = (gaussian_log_density, separable.gaussian_coordinate, Split.PIECES, False)
    assert said == {"laplace": ("laplace", False, *laplace_form),
                    "geometric": ("laplace", True, *laplace_form),
                    "gaussian": ("gaussian", False, *gaussian_form),
                    "discrete_gaussian": ("gaussian", True, *gaussian_form)}
    # a mechanism of each family uses its family's densities
    count = beta_binomial.count
    for mech in (dw.Laplace(count, 0.5), dw.Geometric(count, 0.5), dw.Gaussian(count, 2.0),
                 dw.DiscreteGaussian(count, 2.0)):
        family = mech.noise.kind
        assert mech.log_density is family.log_density
        assert mech.coordinate_log_density is family.coordinate_log_density


def test_the_continuous_noise_of_each_family():
    assert LAPLACE.continuous_noise(2.0, 8.0) == ContinuousNoise(2.0, 0.0)
    assert GEOMETRIC.continuous_noise(2.0, 7.5) == (np.sqrt(7.5 / 2.0), 0.0)
    assert GAUSSIAN.continuous_noise(3.0, 8.0) == (0.0, 9.0)  # sigma^2, not the variance
    assert DISCRETE_GAUSSIAN.continuous_noise(3.0, 8.0) == (0.0, 9.0)
    assert DISCRETE_GAUSSIAN.continuous_noise(0.3, 0.0077) == (0.0, 0.0077)


def test_the_log_shape_is_the_log_density_of_noise_of_z_scales():
    for family, params in ((LAPLACE, [0.5, 0.0]), (GAUSSIAN, [0.5, 0.0])):
        for z in (0.5, 1.0, 3.0):
            change = family.log_density(np.zeros(1), np.array([2.0 * z]), np.array(params))
            assert change == pytest.approx(family.log_shape(z), rel=1e-15)


def test_only_the_integer_families_draw_exact_noise():
    # exact draws of scale 2 from the cryptographic source (no seed): variances 7.835
    # (2a / (1 - a)^2, a = e^-1/2) and 4.0; the sd of a sample variance of n draws is
    # var sqrt((kurtosis - 1) / n), kurtosis 6 and 3: both within 5 sds
    n = 2000
    geometric = [GEOMETRIC.exact_noise(2) for _ in range(n)]
    discrete = [DISCRETE_GAUSSIAN.exact_noise(2) for _ in range(n)]
    assert all(isinstance(z, int) for z in geometric + discrete)
    assert abs(np.var(geometric) - 7.835) < 5 * 7.835 * np.sqrt(5 / n)
    assert abs(np.var(discrete) - 4.0) < 5 * 4.0 * np.sqrt(2 / n)
    for family in (LAPLACE, GAUSSIAN):
        with pytest.raises(NotImplementedError, match=f"the {family.name} noise family has no "
                                                      f"exact integer sampler"):
            family.exact_noise(2)


def test_of_coordinate_finds_the_first_family_with_that_density():
    assert of_coordinate(separable.laplace_coordinate) is LAPLACE  # not the geometric
    assert of_coordinate(separable.gaussian_coordinate) is GAUSSIAN
    assert of_coordinate(separable.no_coordinate) is None


def test_a_family_pickles_as_the_registered_one():
    for family in BUILT_IN.values():
        assert pickle.loads(pickle.dumps(family)) is family


@numba.njit
def log_density(s_dp, t, params):
    return params[-1]


@numba.njit
def coordinate(s_j, t_j, j, params):
    return 0.0


def test_the_registry_refuses_what_it_cannot_hold():
    with pytest.raises(ValueError, match="a noise family named 'laplace' is registered "
                                         "already"):
        register(NoiseFamily("laplace", integer=False, log_density=log_density,
                             coordinate_log_density=coordinate))
    with pytest.raises(TypeError, match="register takes a NoiseFamily, got str"):
        register("laplace")
    with pytest.raises(ValueError, match="noise family must be one of .*, got 'cauchy'"):
        family_named("cauchy")
    unregistered = NoiseFamily("unregistered", integer=False, log_density=log_density,
                               coordinate_log_density=coordinate)
    with pytest.raises(ValueError, match="noise family must be one of"):
        NoiseLaw.of(unregistered, 1.0)
    with pytest.raises(NotImplementedError, match="NoiseFamily does not define variance"):
        unregistered.variance(np.ones(1))
    assert register(LAPLACE) is LAPLACE  # the same object again: nothing changes


@pytest.mark.parametrize("kwargs, error, said", [
    (dict(name=""), ValueError, "a noise family's name must be a non-empty string"),
    (dict(log_density=lambda s, t, p: 0.0), TypeError, "log_density must be a numba.njit"),
    (dict(coordinate_log_density=log_density), TypeError,
     r"coordinate_log_density must take \(s_j, t_j, j, params\) -> float \(4 positional"),
    (dict(continuous="laplace"), TypeError, "continuous must be a NoiseFamily"),
])
def test_a_family_checks_its_arguments(kwargs, error, said):
    args = {**dict(name="checked", integer=False, log_density=log_density,
                   coordinate_log_density=coordinate), **kwargs}
    with pytest.raises(error, match=said):
        NoiseFamily(**args)


def test_a_family_is_immutable():
    with pytest.raises(AttributeError, match="immutable once built"):
        LAPLACE.name = "gaussian"
    with pytest.raises(AttributeError, match="immutable once built"):
        LAPLACE.split = None  # a class attribute, shadowed by nothing
    assert LAPLACE.split is Split.LATENT
