"""The landscape of a release (dawrap.runner.modes): separate modes found where two
explanations compete, one mode elsewhere; starts spread over the modes; the jumps' mixture;
the warning when a run misses a mode, and silence when it does not."""
import warnings

import numpy as np
import pytest

import dawrap as dw
from dawrap.runner import modes
from dawrap.models import beta_binomial, gamma_exponential, normal_mean, poisson_gamma

ISSUE = (gamma_exponential.model(), gamma_exponential.laplace(1.0, 0.0, 10.0), np.array([0.0]),
         100)


def test_the_release_of_issue_30_has_two_modes():
    """Exponential records, bounds [0, 10], a release of 0: a mode below lam = 0.05 (every
    record beyond the bound) and one around 3-5 (small records inside). The central-limit
    weights put about a quarter to a third on the first (the exact posterior: 31%)."""
    found = modes.landscape(*ISSUE)
    assert found.multimodal and len(found.modes) == 2
    upper, lower = found.modes
    assert lower.mean[0] < 0.05 < 1.0 < upper.mean[0] < 6.0
    assert 0.15 < lower.weight < 0.45 and upper.weight + lower.weight > 0.99
    assert modes.landscape(*ISSUE) is found  # computed once per problem


@pytest.mark.parametrize("model, mech, s_dp, n", [
    (beta_binomial.model(2, 3), beta_binomial.laplace(0.5), 61.3, 200),       # the pinned runs
    (beta_binomial.model(), beta_binomial.laplace(0.01), 300.0, 1000),        # noise swamps
    (normal_mean.model(0, 10, 1), normal_mean.gaussian(10.0), 50.0, 100),
    (normal_mean.model(0, 10, 1), normal_mean.laplace(1.0, -5, 5), 3.0, 100),  # clamped
    (poisson_gamma.model(), poisson_gamma.laplace(1.0, 5), 0.0, 100),         # clamped at 0
    (gamma_exponential.model(20, 20), gamma_exponential.laplace(0.1, 0.0, 5.0), 950.0, 1000),
], ids=["beta-binomial", "beta-binomial-noisy", "normal-gaussian", "normal-clamped",
        "poisson-clamped-zero", "exponential-monotone"])
def test_ordinary_releases_have_one_mode(model, mech, s_dp, n):
    found = modes.landscape(model, mech, np.atleast_1d(float(s_dp)), n)
    assert found is not None and not found.multimodal


def test_truncated_releases_near_zero_have_two():
    """Poisson counts truncated to [0, 10] (a vague prior: lam near 0 or beyond 17 both
    give a total near 0) and normal records truncated to [-5, 5] (mu near 0, or far on
    either side)."""
    found = modes.landscape(poisson_gamma.model(1.0, 0.1), poisson_gamma.laplace_truncated(
        1.0, 0, 10), np.array([0.0]), 100)
    assert found.multimodal and min(m.mean[0] for m in found.modes) < 1.0 < 15.0 < max(
        m.mean[0] for m in found.modes)
    found = modes.landscape(normal_mean.model(0, 10, 1), normal_mean.laplace_truncated(
        1.0, -5, 5), np.array([0.0]), 100)
    means = sorted(m.mean[0] for m in found.modes)
    assert means[0] < -8.0 and means[-1] > 8.0


def test_a_theta_of_many_entries_is_not_examined():
    from dawrap.models import dirichlet_multinomial

    model = dirichlet_multinomial.model([1.0] * 5)
    assert modes.landscape(model, dirichlet_multinomial.laplace(1.0, 5), np.zeros(5),
                           100) is None


def test_starts_cover_the_modes_and_the_jump_mixture_is_proper():
    found = modes.landscape(*ISSUE)
    rng = np.random.default_rng(0)
    starts = [modes.spread_start(found, rng, c)[0] for c in range(4)]
    assert starts[0] > 1.0 and starts[1] < 0.05 and starts[2] > 1.0 and starts[3] < 0.05
    mixture = modes.jump_mixture(found)
    assert mixture.weights.min() >= 0.1 and mixture.means.shape == (2, 1)
    assert np.all(mixture.factors[:, 0, 0] > 0)
    jumps = mixture.state()
    assert all(np.all(np.isfinite(a)) for a in jumps)
    assert np.exp(jumps.log_weights).sum() == pytest.approx(1.0)
    assert np.all(np.triu(jumps.factors, 1) == 0.0) and jumps.means.shape == (2, 1)


def _draws(*chains):
    """(chains, draws, 1) from per-chain lists of values."""
    return np.array([np.asarray(c, dtype=float) for c in chains])[..., None]


def test_the_warning_names_a_missed_mode_and_the_parameter():
    rng = np.random.default_rng(1)
    upper = [rng.gamma(20, 0.2, 500) for _ in range(4)]  # every chain around 4
    with pytest.warns(RuntimeWarning, match=r"a mode may be missing.*lam near 0\.0.*about "
                                            r"\d+% of the release-weighted"):
        modes.warn_if_missed(*ISSUE[:2], ISSUE[2], ISSUE[3], _draws(*upper))


def test_a_light_mode_the_approximation_underweights_is_still_reported():
    """The truncated normal release of tests/models/test_normal_mean.py (records inside
    [-4, 6] summed, n = 300 at mu = 1, prior N(0, 3^2)): its second mode near mu = 7.6 holds
    4.3% of the exact posterior (a grid by convolution), but the central-limit weights give it
    only about 2%. Chains that never leave mu near 0.7 (the record sampler without jumps, or
    a suffstat run started there) must still be told."""
    model, mech = normal_mean.model(0.0, 3.0, 2.0), normal_mean.laplace_truncated(1.0, -4, 6)
    s_dp = mech.release(model.simulate({"mu": 1.0}, 300, seed=1), seed=2)
    found = modes.landscape(model, mech, s_dp, 300)
    assert found.multimodal
    far = [m for m in found.modes if m.mean[0] > 4]
    assert len(far) == 1 and modes.MIN_WEIGHT <= far[0].weight < 0.05
    rng = np.random.default_rng(4)
    near = [rng.normal(0.7, 0.8, 500) for _ in range(4)]
    with pytest.warns(RuntimeWarning, match=r"a mode may be missing.*mu near [67]\."):
        modes.warn_if_missed(model, mech, s_dp, 300, _draws(*near))


def test_the_warning_says_when_chains_stay_apart():
    rng = np.random.default_rng(2)
    low, high = rng.uniform(0, 0.004, 500), rng.gamma(20, 0.2, 500)
    with pytest.warns(RuntimeWarning, match="stayed in separate modes"):
        modes.warn_if_missed(*ISSUE[:2], ISSUE[2], ISSUE[3], _draws(low, low, high, high))


def test_no_warning_when_every_chain_visits_every_mode():
    rng = np.random.default_rng(3)
    mixed = [np.where(rng.random(500) < 0.3, rng.uniform(0, 0.004, 500),
                      rng.gamma(20, 0.2, 500)) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        modes.warn_if_missed(*ISSUE[:2], ISSUE[2], ISSUE[3], _draws(*mixed))
        # a release with one mode: nothing to miss, whatever the draws
        model, mech = beta_binomial.model(2, 3), beta_binomial.laplace(0.5)
        modes.warn_if_missed(model, mech, np.array([61.3]), 200, _draws([0.3] * 10))


def test_an_ordinary_run_is_silent():
    model, mech = beta_binomial.model(2, 3), beta_binomial.laplace(0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        idata = dw.sample(model, mech, 61.3, 200, draws=1000, tune=500, seed=1, progress=False)
    assert dw.diagnostics.attrs(idata)["jumps"] == 0


def test_a_misspelt_likelihood_slot_is_named():
    """Issue 28, item 1: the central-limit likelihood's template reads declared slots
    (DRAW_RECORD, STATISTIC, RECORD_SIZE, SIZE: ``None`` and zeros once, so a misspelt
    ``RECORDSIZE`` compiled records of size 0). A misspelt name is refused naming the slot
    meant, a missing one naming what it holds, before anything compiles."""
    from dawrap.compile import templates as _templates
    model = beta_binomial.model(1.0, 1.0)
    mech = dw.Laplace(beta_binomial.count, 1.0)
    names = dict(DRAW_RECORD=model.draw_record, STATISTIC=mech.sampler_statistic,
                 SIZE=mech.size)
    with pytest.raises(_templates.SlotError,
                       match="'RECORDSIZE' is not a slot .*runner.modes; did you mean "
                             "'RECORD_SIZE'"):
        _templates.bind((modes.clt_log_likelihood,), dict(names, RECORDSIZE=1))
    with pytest.raises(_templates.SlotError,
                       match="clt_log_likelihood reads the slot 'RECORD_SIZE' \\(int: floats "
                             "per record"):
        _templates.bind((modes.clt_log_likelihood,), names)
