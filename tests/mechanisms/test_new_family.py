"""A noise family added in one file, editing no module of dawrap (issue 42 item 4): Gaussian
noise given by its width ``w = 2 sigma``, with its own compiled densities and parameter
layout (``params[j] = 1 / w_j``), registered under a new name. Through ``NoiseLaw.of`` and
``dw.Mechanism`` it then runs on every sampler, and since it is the Gaussian of sd ``w / 2``
computed with the same floats, every sampler's draws are bit for bit those of
``dw.Gaussian(sigma=w / 2)``: the record chain (the entries path), a grouped chain whose
shared cells the family splits (the pieces' scale read from its own parameter layout), and
the sufficient-statistic sampler (its continuous noise)."""
import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.mechanisms import NoiseLaw
from dawrap.mechanisms.families import (ContinuousNoise, NoiseFamily, Split, family_named,
                                        of_coordinate, register)
from dawrap.mechanisms.gaussian import GAUSSIAN
from dawrap.models import beta_binomial, small_area
from dawrap.reference import relative_log_g
from dawrap.runner.suffstat import noise_model

NAME = "gaussian_by_width"


@numba.njit
def width_log_density(s_dp, t, params):
    """c - 2 sum_j ((s_j - t_j) / w_j)^2 with params = [1/w_1, ..., 1/w_m, c]."""
    out = params[-1]
    for j in range(s_dp.shape[0]):
        z = (s_dp[j] - t[j]) * params[j]
        out -= 2.0 * z * z
    return out


@numba.njit
def width_coordinate(s_j, t_j, j, params):
    z = (s_j - t_j) * params[j]
    return -2.0 * z * z


class WidthGaussian(NoiseFamily):
    """Gaussian noise of sd w / 2, its scale the width w; params[j] is 1 / w_j."""

    split = Split.PIECES

    def variance(self, scale):
        return (scale / 2.0) ** 2

    def log_shape(self, z):
        return -2.0 * z * z  # z widths are 2 z sds

    def relative_log_density(self, s, t, inverse_scale):
        return GAUSSIAN.relative_log_density(s, t, 2.0 * inverse_scale)  # 1 / sigma

    def continuous_noise(self, scale, variance):
        return ContinuousNoise(0.0, (scale / 2.0) ** 2)

    def cell_inverse_scale(self, params, cells):
        return 2.0 * np.asarray(params)[cells]  # the pieces' 1 / sigma, from 1 / w


WIDTH = register(WidthGaussian(NAME, integer=False, log_density=width_log_density,
                               coordinate_log_density=width_coordinate))


def by_width(statistic, sigma: float, size: int = 1):
    """The new family's mechanism adding N(0, sigma^2) noise, and dw.Gaussian's."""
    gaussian = dw.Gaussian(statistic, sigma=sigma, size=size)
    params = gaussian.params
    params[:-1] *= 0.5  # 1 / w = 1 / (2 sigma), exactly
    mech = dw.Mechanism(statistic, width_log_density, size=size, params=params,
                        coordinate_log_density=width_coordinate,
                        noise=NoiseLaw.of(NAME, 2.0 * sigma, size=size),
                        draw_release=lambda rng, t: t + rng.normal(0.0, sigma, t.shape))
    return mech, gaussian


def test_the_registry_finds_the_new_family_by_name_and_by_density():
    law = NoiseLaw.of(NAME, 4.0, size=2)
    assert law.family == NAME and law.kind is WIDTH and family_named(NAME) is WIDTH
    assert law.variance.tolist() == [4.0, 4.0] and not law.integer and law.form == NAME
    assert repr(law).startswith(f"NoiseLaw(family='{NAME}'")
    assert NoiseLaw.of(WIDTH, 4.0) == NoiseLaw.of(NAME, 4.0)
    assert of_coordinate(width_coordinate) is WIDTH


def test_a_mechanism_declaring_it_is_checked_against_its_density():
    mech, gaussian = by_width(beta_binomial.count, 1.5)
    assert mech.noise.kind is WIDTH and mech.noise_variance().tolist() == [2.25]
    assert mech.noise.disagreement(mech.log_density, mech.params) is None
    # its sd given as the width: the density changes by -0.5 where the law says -2
    with pytest.raises(ValueError, match=f"changes by -0.5, the {NAME} law says -2"):
        dw.Mechanism(beta_binomial.count, width_log_density, params=mech.params,
                     noise=NoiseLaw.of(NAME, 1.5))
    totals = np.arange(40.0)[:, None]
    for s_dp in (17.0, 1e200):
        assert np.array_equal(relative_log_g(mech, s_dp, totals),
                              relative_log_g(gaussian, s_dp, totals))
    assert noise_model(mech) == noise_model(gaussian) == (0.0, 2.25)


def posterior(idata, name="p"):
    return diagnostics.group(idata, "posterior")[name].values


@pytest.mark.slow   # compiles a chain of each of the two mechanisms per sampler
@pytest.mark.filterwarnings("ignore:R-hat and ESS:RuntimeWarning")
@pytest.mark.parametrize("grouped", [False, True], ids=["one group", "two groups"])
def test_the_record_chain_draws_what_the_gaussian_draws(grouped):
    """The records by area: the area cells each area's, the region's two cells shared by
    the two groups, whose pieces the family splits."""
    sizes, cats = [2, 3], 2
    statistic, size = small_area.statistics(len(sizes), cats, (0, 0))
    mech, gaussian = by_width(statistic, 0.75, size)
    model, s_dp = small_area.model(sizes, cats), np.array([2.3, -0.4, 0.2, 3.1, 4.8, 0.3])
    partition = dw.parallel.Partition(records=np.repeat([0, 1], sizes),
                                      cells=[0, 0, 1, 1, -1, -1], stats=[0, 0, 1, 1])
    method = dw.Record(groups=dw.parallel.Threads(2, partition)) if grouped else dw.Record()
    runs = [dw.sample(model, m, s_dp, sum(sizes), draws=20, tune=10, chains=1, seed=5,
                      progress=False, method=method) for m in (mech, gaussian)]
    assert np.array_equal(posterior(runs[0]), posterior(runs[1]))
    assert np.array_equal(posterior(runs[0], "log_alpha"), posterior(runs[1], "log_alpha"))


@pytest.mark.slow   # compiles the summary sampler of each of the two mechanisms
@pytest.mark.filterwarnings("ignore:R-hat and ESS:RuntimeWarning")
def test_the_summary_sampler_draws_what_the_gaussian_draws():
    mech, gaussian = by_width(beta_binomial.count, 3.0)
    runs = [dw.sample(beta_binomial.model(), m, 31.0, 100, draws=20, tune=10, chains=1,
                      seed=5, progress=False, method="suffstat") for m in (mech, gaussian)]
    assert np.array_equal(posterior(runs[0]), posterior(runs[1]))
