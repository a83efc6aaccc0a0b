"""The noise law a mechanism declares (``mech.noise``, dawrap.mechanisms.noise): what the
sufficient-statistic sampler, the exact posteriors and the plausibility check ask of a
mechanism instead of testing its type or its density function's identity (issue 28 item 3)."""
import math

import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap.mechanisms import NoiseLaw
from dawrap.mechanisms.discrete_gaussian import discrete_gaussian_variance
from dawrap.mechanisms.laplace import laplace_log_density
from dawrap.models import beta_binomial, contingency
from dawrap.runner.suffstat import noise_model

count = beta_binomial.count


@numba.njit
def pair(x_i, out):
    out[0] = x_i[0]
    out[1] = x_i[1]


def laplace_pair(scale, law_scale=None, family="laplace"):
    """A user's mechanism adding Laplace noise of ``scale`` to two counts, declaring the law
    ``family`` of ``law_scale`` (by default the true one)."""
    scale = np.asarray(scale, dtype=float)
    return dw.Mechanism(pair, laplace_log_density, size=2,
                        params=np.r_[1.0 / scale, -np.log(2.0 * scale).sum()],
                        noise=NoiseLaw.of(family, scale if law_scale is None else law_scale),
                        draw_release=lambda rng, t: t + rng.laplace(0.0, scale))


# -- the built-in mechanisms declare the law they implement ------------------------------------

def test_each_built_in_family_declares_its_law_and_variance():
    laplace = dw.Laplace(count, epsilon=0.5, sensitivity=2.0, size=3)
    assert laplace.noise.family == "laplace" and laplace.noise.form == "laplace"
    assert laplace.noise.scale.tolist() == [4.0] * 3
    assert laplace.noise_variance().tolist() == [2.0 * 4.0 ** 2] * 3
    geometric = dw.Geometric(count, epsilon=0.5)
    alpha = math.exp(-0.5)
    assert (geometric.noise.family, geometric.noise.form, geometric.noise.integer) == (
        "geometric", "laplace", True)
    assert geometric.noise.scale[0] == 2.0
    assert geometric.noise_variance()[0] == 2.0 * alpha / (1.0 - alpha) ** 2
    gaussian = dw.Gaussian.from_zcdp(count, rho=0.5, sensitivity=3.0)
    assert (gaussian.noise.family, gaussian.noise.integer) == ("gaussian", False)
    assert gaussian.noise.scale[0] == 3.0 and gaussian.noise_variance()[0] == 9.0
    discrete = dw.DiscreteGaussian(count, sigma=0.3)
    assert (discrete.noise.family, discrete.noise.form) == ("discrete_gaussian", "gaussian")
    assert discrete.noise_variance()[0] == discrete_gaussian_variance(0.3) < 0.3 ** 2


def test_the_declared_law_is_the_density_of_every_built_in():
    for mech in (dw.Laplace(count, 0.5, size=3), dw.Geometric(count, 0.7, sensitivity=3.0),
                 dw.Gaussian(count, 2.5, size=2), dw.DiscreteGaussian(count, 0.4),
                 dw.Geometric.from_scale(count, 1e12), dw.DiscreteGaussian(count, 9e12)):
        assert mech.noise.disagreement(mech.log_density, mech.params) is None, mech


def test_the_law_is_read_only():
    law = dw.Laplace(count, 0.5).noise
    with pytest.raises(ValueError, match="read-only"):
        law.scale[0] = 1e-9
    with pytest.raises(AttributeError):
        law.family = "gaussian"


# -- a user's mechanism declares its law, checked against its density ---------------------------

def test_a_custom_mechanism_with_a_declared_law():
    mech = laplace_pair([1.0, 4.0])
    assert mech.noise_variance().tolist() == [2.0, 32.0]
    assert not mech.integer_statistic
    assert mech.noise.disagreement(mech.log_density, mech.params) is None


@pytest.mark.parametrize("law_scale, family, said", [
    ([1.0, 16.0], "laplace", "coordinate 1 .* changes by -4, the laplace law says -1"),
    ([1.0, 4.0], "gaussian", "changes by -1, the gaussian law says -0.5"),
    ([2.0, 4.0], "geometric", "coordinate 0 .* changes by -2, the geometric law says -1"),
])
def test_a_law_that_is_not_the_density_is_refused(law_scale, family, said):
    """A wrong family, or a variance given as the scale, would make the sufficient-statistic
    sampler and the exact posteriors model noise the release does not have."""
    with pytest.raises(ValueError, match=f"not the log density's: at t - s_dp = .*{said}"):
        laplace_pair([1.0, 4.0], law_scale=law_scale, family=family)


def test_an_integer_law_makes_the_releases_integers():
    @numba.njit
    def log_geometric(s_dp, t, params):
        return params[1] - abs(s_dp[0] - t[0]) * params[0]

    alpha = math.exp(-0.5)
    mech = dw.Mechanism(count, log_geometric, params=[0.5, math.log((1 - alpha) / (1 + alpha))],
                        noise=NoiseLaw.of("geometric", 2.0))
    assert mech.integer_statistic
    with pytest.raises(ValueError, match="integer-valued"):
        mech.check_release(3.5)


@pytest.mark.parametrize("kwargs, error, said", [
    (dict(noise=("laplace", 2.0)), TypeError, "noise must be a dawrap.mechanisms.NoiseLaw"),
    (dict(noise=NoiseLaw.of("laplace", 2.0), noise_variance=8.0), TypeError,
     "give noise or noise_variance, not both"),
    (dict(noise=NoiseLaw.of("laplace", [2.0, 2.0, 2.0])), ValueError,
     r"noise scale must be one value or one per coordinate \(1\)"),
])
def test_a_malformed_noise_argument_is_refused(kwargs, error, said):
    with pytest.raises(error, match=said):
        dw.Mechanism(count, laplace_log_density, params=[0.5, -math.log(4.0)], **kwargs)


@pytest.mark.parametrize("args, said", [
    (("cauchy", 1.0), "noise family must be one of"),
    (("laplace", 0.0), "noise scale must be finite and > 0"),
    (("gaussian", [1.0, np.nan]), "noise scale must be finite and > 0"),
    (("gaussian", 1.0, -1.0), "noise variance must be finite and >= 0"),
    (("gaussian", [[1.0]]), "one value or one per coordinate"),
])
def test_noise_law_of_checks_its_arguments(args, said):
    with pytest.raises(ValueError, match=said):
        NoiseLaw.of(*args)


def test_noise_law_of_default_variances_are_the_families():
    b = np.array([0.5, 3.0])
    assert np.allclose(NoiseLaw.of("laplace", b).variance, 2 * b ** 2, rtol=1e-15)
    assert np.allclose(NoiseLaw.of("gaussian", b).variance, b ** 2, rtol=1e-15)
    # Two-sided geometric: the variance of a difference of two geometric counts, summed out.
    z = np.arange(-4000, 4001)
    for scale in b:
        p = np.exp(-np.abs(z) / scale)
        assert NoiseLaw.of("geometric", scale).variance[0] == pytest.approx(
            (z ** 2 * p).sum() / p.sum(), rel=1e-12)
        q = np.exp(-z ** 2 / (2 * scale ** 2))
        assert NoiseLaw.of("discrete_gaussian", scale).variance[0] == pytest.approx(
            (z ** 2 * q).sum() / q.sum(), rel=1e-12)


# -- what the callers ask of it -----------------------------------------------------------------

def test_relative_log_density_is_the_log_density_up_to_a_constant():
    t = np.stack([np.arange(40.0), np.arange(40.0)[::-1] * 0.5], axis=1)
    for mech in (laplace_pair([1.0, 4.0]), dw.Gaussian(pair, 3.0, size=2),
                 dw.Geometric(pair, 0.5, sensitivity=2.0, size=2),
                 dw.DiscreteGaussian(pair, 2.0, size=2)):
        for s in ([3.0, 7.0], [-5.0, 60.0], [25.0, 2.0]):
            s = np.array(s)
            direct = np.array([mech.log_density(s, row, mech.params) for row in t])
            rel = mech.noise.relative_log_density(s, t)
            assert np.allclose(rel - rel.max(), direct - direct.max(), rtol=0, atol=1e-9)


def test_suffstat_reads_the_noise_law_as_before():
    """The continuous law the sufficient-statistic sampler assumes, for each family, is the
    one it assumed when it tested the mechanism's class (so seeded runs repeat)."""
    laplace = dw.Laplace(count, epsilon=0.3, sensitivity=1.5)
    assert noise_model(laplace) == (laplace.scale, 0.0)
    geometric = dw.Geometric(count, epsilon=0.3)
    assert noise_model(geometric) == (math.sqrt(float(geometric.noise_variance()[0]) / 2), 0.0)
    assert noise_model(dw.Gaussian(count, 1.7)) == (0.0, 1.7 ** 2)
    assert noise_model(dw.DiscreteGaussian(count, 1.7)) == (0.0, 1.7 ** 2)
    small = dw.DiscreteGaussian(count, 0.4)
    assert noise_model(small) == (0.0, float(small.noise_variance()[0]))


def test_suffstat_takes_a_custom_mechanism_by_its_law_and_refuses_the_rest():
    """Before, a user's mechanism with Laplace noise was refused for not being dw.Laplace."""
    assert noise_model(laplace_pair([2.5, 2.5])) == (2.5, 0.0)
    with pytest.raises(ValueError, match="the same noise on every coordinate"):
        noise_model(laplace_pair([1.0, 4.0]))
    with pytest.raises(ValueError, match="needs the law of the noise .* got Mechanism"):
        noise_model(dw.Mechanism(count, laplace_log_density, params=[0.5, -math.log(4.0)]))


def test_the_contingency_release_declares_its_laplace_law():
    mech = contingency.laplace((2, 3), [(0,), (1,)], epsilon=[1.0, 0.5])
    assert mech.noise.family == "laplace"
    assert mech.noise.scale.tolist() == [2.0] * 2 + [4.0] * 3
    assert mech.noise_variance().tolist() == [8.0] * 2 + [32.0] * 3
