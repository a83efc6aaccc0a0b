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


@pytest.mark.slow
def test_record_sampler_is_exact(check_posterior):
    sizes, regions, cats = [2, 3], [0, 0], 2
    model = small_area.model(sizes, cats)
    mech = small_area.discrete_gaussian(regions, cats, rho=(0.5, 0.5))
    x = small_area.records(sizes, [0, 1, 1, 1, 0])
    s_dp = mech.release(x, seed=4)
    exact, eta_mean, eta_sd = small_area.exact_posterior(mech, s_dp, sizes, cats)
    # no init_x: the model starts from its public sizes (before, n draws of random areas)
    idata = dw.sample(model, mech, s_dp, sum(sizes), draws=5000, tune=500, chains=4, seed=2, progress=False)
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


# -- issue 29 items 6 and 18: the public sizes are the model's own; bad settings by name ------

SIZES, REGIONS = [120, 80, 100], [0, 0, 1]


def test_the_start_holds_the_sizes_and_a_given_one_is_kept():
    model = small_area.model(SIZES, 3)
    mech = small_area.discrete_gaussian(REGIONS, 3, rho=(0.5, 0.5))
    s_dp = mech.release(small_area.records(SIZES, np.repeat([0, 1, 2], SIZES)), seed=0)
    x = model.start_database(np.random.default_rng(0), None, 300, mech, s_dp, None)
    assert np.array_equal(np.bincount(x[:, 0].astype(int), minlength=3), SIZES)
    given = small_area.records(SIZES, np.arange(300) % 3)[::-1].copy()  # any order of rows
    assert np.array_equal(model.start_database(np.random.default_rng(0), None, 300, mech,
                                               s_dp, given), given)


def test_an_init_x_of_other_sizes_is_refused_naming_the_sizes():
    """The issue's repro: init_x=records([100, 100, 100]) for sizes [120, 80, 100] gave area
    1 the probabilities [0.13, 0.83, 0.04] where the truth was [0, 1, 0], silently."""
    model = small_area.model(SIZES, 3)
    mech = small_area.discrete_gaussian(REGIONS, 3, rho=(0.5, 0.5))
    s_dp = mech.release(small_area.records(SIZES, np.repeat([0, 1, 2], SIZES)), seed=0)
    kw = dict(draws=10, tune=0, chains=1, progress=False)
    with pytest.raises(ValueError, match=r"init_x puts 100 records in unit 0 of level 'area', "
                                         r"whose public total is 120"):
        dw.sample(model, mech, s_dp, 300, init_x=small_area.records([100, 100, 100]), **kw)
    with pytest.raises(ValueError, match=r"n = 299|299"):
        dw.sample(model, mech, s_dp, 299, **kw)


def test_a_model_and_mechanism_of_other_areas_are_named_as_such():
    """A model of 4 areas and a mechanism of 3: the sampler crashed (SIGSEGV) or blamed
    declare_sparse; now the mismatch is named (a record outside the mechanism's areas
    contributes nothing to its statistic, never a write out of range; the mechanism's own
    total refuses it, naming it: issue 41)."""
    mech = small_area.discrete_gaussian(REGIONS, 3, rho=(0.5, 0.5))
    out = np.ones(mech.size)
    mech.statistic(np.array([3.0, 0.0]), out)                     # area 3 of 0..2
    assert not out.any()
    with pytest.raises(ValueError, match=r"x\[30, 0\] = 3.0 is not a unit of level 'area' "
                                         r"\(0..2\)"):
        mech.total(small_area.records([10, 10, 10, 10]))
    with pytest.raises(ValueError, match="the mechanism releases tables over 3 finest units"):
        dw.sample(small_area.model([10, 10, 10, 10], 3), mech, np.zeros(mech.size), 40,
                  draws=10, tune=0, chains=1, progress=False)


@pytest.mark.parametrize("sizes", [[float("inf")], [1e19], [10 ** 19], [2.5], [3, float("nan")],
                                   [2 ** 52, 2 ** 52, 2]])
def test_sizes_that_are_not_finite_whole_numbers_are_refused(sizes):
    with pytest.raises(ValueError, match="small_area: sizes must be"):
        small_area.model(sizes, 3)
    with pytest.raises(ValueError, match="small_area: sizes must be"):
        small_area.records(sizes)


@pytest.mark.parametrize("setting, message", [
    ({"step": float("inf"), "hyper_kernel": "metropolis"}, "step"),
    ({"step": 0.0, "hyper_kernel": "metropolis"}, "step"),
    ({"step": 0.5}, "step is the random-walk scale of hyper_kernel='metropolis'"),
    ({"hyper_steps": 2.5}, "hyper_steps must be a whole number >= 1, got 2.5"),
    ({"hyper_steps": 0}, "hyper_steps must be a whole number >= 1"),
    ({"categories": 2.5}, "categories must be a whole number >= 2, got 2.5"),
    ({"a0": float("nan")}, "a0"),
    ({"b0": -1.0}, "b0"),
])
def test_each_bad_setting_is_named(setting, message):
    with pytest.raises(ValueError, match=message):
        small_area.model(SIZES, **{"categories": 3, **setting})
