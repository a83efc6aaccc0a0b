"""Extreme but accepted inputs to dw.sample: an implausible release is flagged (a warning, or
an error where no sampler can resolve it), and huge counts, bools and non-strings get an
error naming the argument before anything is allocated or drawn.

Before: s_dp = 1e300 returned the prior and s_dp = 1e18 a posterior 2.4 times too wide with
only an R-hat warning; n = 2**63 raised OverflowError, n = 2**31 was killed by the kernel at
22 GB, chains = 10**9 ran 8 minutes into a MemoryError, seed=True and progress="yes" ran.
"""
import time
import warnings

import numpy as np
import pytest

import dawrap as dw
from dawrap import sampling
from dawrap.runner import memory, plausibility
from dawrap.models import (beta_binomial, dirichlet_multinomial, gamma_exponential,
                           linear_regression, naive_bayes, normal_mean, poisson_gamma)

MODEL = beta_binomial.model()
LAPLACE = beta_binomial.laplace(0.5)  # noise scale b = 2: one nat of log density per 2 counts


def run(model=MODEL, mech=LAPLACE, s_dp=10.0, n=20, **kw):
    kw = {"draws": 20, "tune": 5, "chains": 1, "seed": 0, "progress": False, **kw}
    return dw.sample(model, mech, s_dp, n, **kw)


def judged(model, mech, s_dp, n):
    """The RuntimeWarnings the plausibility check gives for this release (no sampling)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plausibility.check_plausible(model, mech, mech.check_release(s_dp), n)
    return [w for w in caught if issubclass(w.category, RuntimeWarning)]


# -- item 10: releases implausible under every theta --------------------------------------------

@pytest.mark.parametrize("method", ["record", "suffstat", "naive"])
@pytest.mark.parametrize("s_dp", [1e18, 1e300, -1e300])
def test_unresolvable_release_is_refused_naming_s_dp(method, s_dp):
    with pytest.raises(ValueError, match=r"s_dp = .* outside \[0, 1000\].* double precision"):
        run(s_dp=s_dp, n=1000, method=method)


def test_refusal_says_where_the_laplace_posterior_is_exact():
    with pytest.raises(ValueError, match=r"s_dp = 1000 in that coordinate gives it exactly"):
        run(s_dp=1e18, n=1000)


@pytest.mark.slow
def test_implausible_release_warns_and_still_gets_the_exact_posterior(check_posterior,
                                                                      draws_of):
    """1e6 with n = 200 is 5e5 noise scales above every possible count: warned, and the
    posterior (likelihood proportional to exp(epsilon k)) is sampled correctly."""
    with pytest.warns(RuntimeWarning, match=r"implausible under every theta"):
        idata = run(s_dp=1e6, n=200, draws=1500, tune=200, chains=2, seed=3)
    check_posterior(draws_of(idata, "p"), beta_binomial.exact_posterior(LAPLACE, 1e6, 200))


@pytest.mark.parametrize("mech, below, above", [
    # Laplace, b = 2: 39 and 41 nats are 78 and 82 counts beyond the range.
    (beta_binomial.laplace(0.5), 78.0, 82.0),
    # Geometric, epsilon = 10 (noise sd 0.01): one count beyond is 10 nats, five are 50.
    (beta_binomial.geometric(10.0), 3.0, 5.0),
    # Gaussian, sigma = 2: 39 and 41 nats are 2 sqrt(78) = 17.7 and 2 sqrt(82) = 18.1.
    (dw.Gaussian.from_zcdp(beta_binomial.count, 0.125, 1.0), 17.6, 18.2),
], ids=["laplace", "geometric", "gaussian"])
def test_the_margin_is_40_nats_of_noise_density(mech, below, above):
    n = 100
    assert not judged(MODEL, mech, n + below, n) and not judged(MODEL, mech, -below, n)
    assert judged(MODEL, mech, n + above, n) and judged(MODEL, mech, -above, n)


def builtin_cases():
    lr = dict(p=2, bounds_x=3.0, bound_y=4.0)
    cases = [
        ("beta_binomial-laplace", beta_binomial.model(), beta_binomial.laplace(0.5), 200),
        ("beta_binomial-geometric", beta_binomial.model(), beta_binomial.geometric(1.0), 200),
        ("poisson_gamma-laplace", poisson_gamma.model(3.0, 1.0), poisson_gamma.laplace(1.0, 4),
         60),
        ("poisson_gamma-geometric", poisson_gamma.model(3.0, 1.0),
         poisson_gamma.geometric(1.0, 4), 60),
        ("poisson_gamma-truncated", poisson_gamma.model(3.0, 1.0),
         poisson_gamma.laplace_truncated(1.0, 0.0, 6.0), 60),
        ("normal_mean-laplace", normal_mean.model(0.0, 1.0, 1.0),
         normal_mean.laplace(1.0, -3.0, 3.0), 100),
        ("normal_mean-truncated", normal_mean.model(0.0, 1.0, 1.0),
         normal_mean.laplace_truncated(1.0, -3.0, 3.0), 100),
        ("gamma_exponential-laplace", gamma_exponential.model(2.0, 2.0),
         gamma_exponential.laplace(1.0, 0.0, 5.0), 100),
        ("dirichlet-laplace", dirichlet_multinomial.model([1.0] * 4),
         dirichlet_multinomial.laplace(1.0, 4), 50),
        ("linear_regression-laplace", linear_regression.model(p=2),
         linear_regression.laplace(1.0, **lr), 200),
        ("naive_bayes-laplace", naive_bayes.model(2, [2, 3]),
         naive_bayes.laplace(1.0, 2, [2, 3]), 50),
    ]
    return [pytest.param(model, mech, n, id=name) for name, model, mech, n in cases]


@pytest.mark.slow
@pytest.mark.parametrize("model, mech, n", builtin_cases())
def test_releases_of_the_builtin_models_are_quiet(model, mech, n):
    """Releases simulated from prior draws, noise included, never trip the check; and the
    check is not vacuous: it finds a range for every bounded built-in statistic."""
    s_dp = np.zeros(mech.size)
    assert plausibility.statistic_range(model, mech, s_dp, n) is not None
    rng = np.random.default_rng(0)
    for seed in range(10):
        theta = model.pack(model.draw_prior(rng))
        x = model.simulate(theta, n, seed=seed)
        assert not judged(model, mech, mech.release(x, seed=seed), n)


def test_a_long_release_of_small_counts_is_quiet():
    """50 categories, 20 records: most counts are 0, so about half the released coordinates
    are negative, several by a few noise scales. Judged per coordinate, none is implausible."""
    k, n = 50, 20
    model, mech = dirichlet_multinomial.model([1.0] * k), dirichlet_multinomial.laplace(1.0, k)
    x = model.simulate({"p": np.full(k, 1.0 / k)}, n, seed=1)
    for seed in range(20):
        s_dp = mech.release(x, seed=seed)
        assert np.sum(s_dp < 0) > 10
        assert not judged(model, mech, s_dp, n)
    far = mech.release(x, seed=0)
    far[7] = -200.0  # 100 noise scales below 0 in one coordinate
    caught = judged(model, mech, far, n)
    assert caught and "s_dp[7] = -200" in str(caught[0].message)


def test_unbounded_statistics_are_not_judged():
    """The unclamped sum of normal records can be anything for some mu: no range, no claim
    (and a statistic spread wider than the stated sensitivity is not trusted either)."""
    model = normal_mean.model(0.0, 1.0, 1.0)
    assert not judged(model, normal_mean.gaussian(1.0), 1e12, 100)
    assert not judged(model, dw.Laplace(normal_mean.total, 1.0, 0.5), 1e12, 100)


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_check_does_not_touch_the_chains_generators(monkeypatch):
    """The simulated records come from a generator of their own: the same seed gives the same
    draws whether or not the check ran (here: once warned, once skipped by patching)."""
    from dawrap import diagnostics

    with pytest.warns(RuntimeWarning, match="implausible"):
        warned = run(s_dp=1e4, n=20, draws=30)
    monkeypatch.setattr(plausibility, "check_plausible", lambda *args: None)
    plain = run(s_dp=1e4, n=20, draws=30)
    assert np.array_equal(diagnostics.group(warned, "posterior")["p"].values,
                          diagnostics.group(plain, "posterior")["p"].values)


# -- item 11: extreme and mistyped sampling arguments -------------------------------------------

@pytest.mark.parametrize("kw, error, match", [
    (dict(seed=True), TypeError, "seed must be an int >= 0"),
    (dict(seed=False), TypeError, "seed must be an int >= 0"),
    (dict(seed=np.True_), TypeError, "seed must be an int >= 0"),
    (dict(seed=1.0), TypeError, "seed must be"),
    (dict(progress="yes"), TypeError, "progress must be True, False or None"),
    (dict(progress=1), TypeError, "progress must be True, False or None"),
    (dict(n=2 ** 63), ValueError, r"n must be an integer >= 1 and at most 2\*\*53"),
    (dict(n=2 ** 53 + 1), ValueError, r"n must be an integer >= 1 and at most 2\*\*53"),
    (dict(n=True), TypeError, "n must be an integer"),
    (dict(draws=2 ** 64), ValueError, r"draws must be an integer >= 1 and at most 2\*\*53"),
    (dict(draws=np.bool_(True)), TypeError, "draws must be an integer"),
    (dict(tune=2 ** 63), ValueError, r"tune must be an integer >= 0 and at most 2\*\*53"),
    (dict(tune=False), TypeError, "tune must be an integer"),
    (dict(chains=10 ** 9), ValueError, "chains must be an integer >= 1 and at most 100000"),
    (dict(chains=True), TypeError, "chains must be an integer"),
    (dict(cores=True), TypeError, "cores must be an integer"),
    (dict(checkpoint_every=2 ** 63), ValueError, "checkpoint_every must be an integer"),
    (dict(sweeps=2 ** 63), ValueError, r"sweeps must be an integer >= 1 and at most 2\*\*53"),
    (dict(sweeps=True), TypeError, "sweeps must be an integer"),
    (dict(interweave=2 ** 63), ValueError, r"interweave must be at most"),
    (dict(method=np.array("record")), TypeError, "method must be one of"),
    (dict(method=None), TypeError, "method must be one of"),
    (dict(scan=np.array("random")), TypeError, "scan must be 'systematic' or 'random'"),
    (dict(scan=None), TypeError, "scan must be 'systematic' or 'random'"),
    (dict(variant=3), TypeError, "variant must be one of"),
    (dict(variant="printed"), ValueError, "variant applies to method='suffstat' only"),
    (dict(variant="Gibbs"), ValueError, "variant must be one of"),
])
def test_extreme_arguments_are_named(kw, error, match):
    began = time.perf_counter()
    with pytest.raises(error, match=match):
        run(**kw)
    assert time.perf_counter() - began < 5.0  # refused up front, not after minutes


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_numpy_scalars_are_accepted():
    idata = run(n=np.int64(20), draws=np.int32(20), tune=np.uint8(5), chains=np.int16(1),
                seed=np.uint64(4), keep_stats=np.True_, progress=np.False_, sweeps=np.int64(1),
                cores=2 ** 40)
    assert idata is not None


@pytest.fixture
def no_sampling(monkeypatch):
    """Any attempt to spawn generators or start a chain fails the test: the memory check
    must fire before anything is allocated."""
    def forbidden(*args, **kwargs):
        raise AssertionError("sampling started although the run cannot fit in memory")

    from dawrap.runner import record, suffstat
    from dawrap.samplers import baselines

    monkeypatch.setattr(sampling, "_generators", forbidden)
    for module, name in ((record, "run_record"), (suffstat, "run_suffstat"),
                         (baselines, "run_naive")):
        monkeypatch.setattr(module, name, forbidden)


def test_a_run_that_cannot_fit_in_memory_is_refused(monkeypatch, no_sampling):
    monkeypatch.setattr(memory, "available_memory", lambda: 2 * 10 ** 9)
    # n = 2**31 on four chains (plus two running): 6 x 2**31 x 8 bytes = 103 GB.
    with pytest.raises(ValueError, match=r"about 103 GB .*n=2147483648 records.* about 2 GB is "
                                         r"available: reduce n, chains or draws"):
        run(n=2 ** 31, chains=4, cores=2)
    # chains x draws: 10**5 chains of 10**4 draws of 6 values, twice: 96 GB.
    with pytest.raises(ValueError, match=r"chains=100000 x draws=10000"):
        run(chains=10 ** 5, draws=10 ** 4, method="naive")
    # The sufficient-statistic sampler keeps no records: n = 2**31 fits.
    memory.check_memory(dw.Suffstat().memory_needed(MODEL, LAPLACE, 2 ** 31, 1000, 4, 2, False),
                        chains=4)


def test_impossible_memory_is_refused_on_any_machine(no_sampling):
    """4 chains of 2**53 records need 4.6e17 bytes, more than any machine has."""
    with pytest.raises(ValueError, match=r"would need about .* GB of memory"):
        run(n=2 ** 53, chains=4, cores=1)


def test_available_memory_is_read():
    have = memory.available_memory()
    assert have is None or have > 0
