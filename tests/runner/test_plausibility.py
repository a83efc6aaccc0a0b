"""The plausibility check's refusal of a release no sampler can resolve
(dawrap.runner.plausibility) advises the release at the statistic's range exactly when the
mechanism's noise family says the posterior is the same beyond it (``flat_beyond_range``:
the Laplace form), asking the family, not its name."""
import numpy as np
import pytest

import dawrap as dw
from dawrap.models import beta_binomial
from dawrap.runner.plausibility import check_plausible

MODEL, COUNT, N = beta_binomial.model(), beta_binomial.count, 1000
ADVICE = "the posterior is the same for every release beyond the range, so s_dp = 1000 in " \
         "that coordinate gives it exactly"


def refusal(mech) -> str:
    """The message of the refusal of a release at 1e18 with n = 1000 (range 0..1000)."""
    with pytest.raises(ValueError, match="double precision cannot resolve") as refused:
        check_plausible(MODEL, mech, mech.check_release(1e18), N)
    return str(refused.value)


@pytest.mark.parametrize("mech, family", [
    (dw.Laplace(COUNT, epsilon=0.5), "laplace"),
    (dw.Geometric(COUNT, epsilon=0.5), "geometric"),
])
def test_laplace_form_noise_is_advised_the_release_at_the_range(mech, family):
    assert mech.noise.kind.flat_beyond_range
    assert f"with this mechanism's {family} noise {ADVICE}" in refusal(mech)


@pytest.mark.parametrize("mech", [
    dw.Gaussian.from_zcdp(COUNT, rho=0.5, sensitivity=1.0),
    dw.DiscreteGaussian(COUNT, sigma=1.0, contribution=(0, 1)),
])
def test_gaussian_form_noise_is_not(mech):
    """Its posterior does depend on how far beyond the range the release lies."""
    assert not mech.noise.kind.flat_beyond_range
    assert "the same for every release" not in refusal(mech)


def test_a_release_inside_the_range_passes():
    check_plausible(MODEL, dw.Laplace(COUNT, epsilon=0.5), np.array([400.0]), N)
