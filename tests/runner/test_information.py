"""The missing-information estimate behind the automatic interweaving decision."""
import numpy as np
import pytest

from dawrap.models import normal_mean
from dawrap.runner.information import missing_information


@pytest.mark.parametrize("fmi", [0.1, 0.5, 0.9, 0.99])
def test_missing_information_matches_the_closed_form(fmi):
    n, sigma = 1000, 1.0
    tau = np.sqrt(fmi * n * sigma ** 2 / (1 - fmi))  # fmi = tau^2 / (n sigma^2 + tau^2)
    estimate = missing_information(normal_mean.model(0, 10, sigma), normal_mean.gaussian(tau), n)
    # 1000 noise draws and 2000 records: each variance within about 10%, which moves the
    # fraction by at most 0.1 fmi (1 - fmi) < 0.025.
    assert abs(estimate - fmi) < 0.05
