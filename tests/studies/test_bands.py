"""The simultaneous ECDF band holds its level for uniform samples and rejects others."""
import numpy as np
import pytest

from dawrap.studies.bands import ecdf_band, ecdf_inside


@pytest.mark.parametrize("m", [50, 200])
def test_uniform_samples_stay_inside_at_the_stated_rate(m):
    rng = np.random.default_rng(m)
    inside = np.mean([ecdf_inside(rng.random(m), alpha=0.05) for _ in range(400)])
    # Binomial sd sqrt(.05 * .95 / 400) = 0.011; 4 sd either side of 0.95.
    assert abs(inside - 0.95) < 0.044


def test_the_band_is_simultaneous_not_pointwise():
    z, lower, upper = ecdf_band(100, alpha=0.05)
    from scipy import stats

    pointwise = stats.binom.ppf(0.975, 100, z) / 100
    assert np.all(upper >= pointwise) and np.any(upper > pointwise)
    assert np.all((lower <= z) & (z <= upper))


def test_non_uniform_samples_fall_outside():
    rng = np.random.default_rng(1)
    assert not ecdf_inside(rng.beta(2, 2, 200))       # too concentrated: overconfident CDF
    assert not ecdf_inside(rng.random(200) ** 0.7)    # shifted


def test_bad_alpha():
    with pytest.raises(ValueError, match="alpha"):
        ecdf_band(10, alpha=1.5)
