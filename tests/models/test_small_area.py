"""The small-area (census-style) model: exact posterior by enumeration over tables and a grid
over the hyperparameters; the sensitivity brute-forced; bad input named."""
import itertools

import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import small_area


def test_each_level_moves_by_sqrt2_at_most():
    # Every pair of records (area, category) of a 3-area, 2-region, 3-category layout.
    regions, cats = [0, 0, 1], 3
    mech = small_area.discrete_gaussian(regions, cats, rho=(0.5, 0.25))
    recs = [np.array([[a, c]], float) for a in range(3) for c in range(cats)]
    split = 3 * cats
    worst = [0.0, 0.0]
    for u, v in itertools.product(recs, repeat=2):
        d = mech.total(u) - mech.total(v)
        worst[0] = max(worst[0], np.sum(d[:split] ** 2))
        worst[1] = max(worst[1], np.sum(d[split:] ** 2))
    assert worst == [2.0, 2.0] and mech.sensitivity ** 2 == pytest.approx(2.0)
    assert mech.sigmas == pytest.approx([0.5 ** -0.5, 0.25 ** -0.5])  # 1 / sqrt(rho)
    assert mech.privacy["rho"] == pytest.approx(0.75)
    assert mech.sparse is not None and mech.sparse.nnz == 2


def test_record_sampler_is_exact(check_posterior):
    sizes, regions, cats = [2, 3], [0, 0], 2
    model = small_area.model(sizes, cats)
    mech = small_area.discrete_gaussian(regions, cats, rho=(0.5, 0.5))
    x = small_area.records(sizes, [0, 1, 1, 1, 0])
    s_dp = mech.release(x, seed=4)
    exact, eta_mean, eta_sd = small_area.exact_posterior(mech, s_dp, sizes, cats)
    idata = dw.sample(model, mech, s_dp, sum(sizes), init_x=small_area.records(sizes),
                      draws=5000, tune=500, chains=4, seed=2, progress=False)
    p = diagnostics.group(idata, "posterior")["p"].values
    eta = diagnostics.group(idata, "posterior")["log_alpha"].values
    check_posterior(p[..., 0, 0], exact)
    for c in range(cats):
        draws = eta[..., c]
        mcse = diagnostics.mcse(draws, "mean")
        assert abs(draws.mean() - eta_mean[c]) < 4 * mcse, (draws.mean(), eta_mean[c], mcse)
        assert abs(draws.std() - eta_sd[c]) < 4 * diagnostics.mcse(draws, "sd")


def test_bad_sizes_and_budgets_are_named():
    with pytest.raises(ValueError, match="small_area: sizes"):
        small_area.model([2, 0], 3)
    with pytest.raises(ValueError, match="one positive finite rho per level"):
        small_area.discrete_gaussian([0, 1], 3, rho=(0.5,))
