"""Release-informed starts: the CLT moments are right, the resampled prior draws land where
the release puts theta, and on the regression where prior starts got stuck in a mode the
release rules out, the default start does not."""
import warnings

import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.runner import starts
from dawrap.models import dirichlet_multinomial, linear_regression, normal_mean


@pytest.mark.slow
def test_statistic_moments_are_the_records_mean_and_covariance():
    mech = linear_regression.laplace(1.0, p=2, bounds_x=3.0, bound_y=4.0)
    model = linear_regression.model(p=2, sigma2=1.0)
    x = model.simulate({"beta": np.array([0.5, -1.0, 2.0])}, 500, seed=1)
    t = np.array([mech.total(x[i:i + 1]) for i in range(len(x))])
    mean, cov = starts.statistic_moments(x, np.zeros(mech.size), mech.sampler_statistic,
                                        mech.size, True)
    assert np.allclose(mean, t.mean(axis=0))
    assert np.allclose(cov, np.cov(t.T, bias=True))
    mean, cov = starts.statistic_moments(x, np.zeros(mech.size), mech.sampler_statistic,
                                        mech.size, False)
    assert np.allclose(cov, np.var(t, axis=0))


@pytest.mark.slow
@pytest.mark.parametrize("mech", [dw.Laplace(normal_mean.total, 0.5, 2.0),
                                  dw.Geometric(normal_mean.total, 0.3),
                                  dw.Gaussian(normal_mean.total, 3.0)],
                         ids=["laplace", "geometric", "gaussian"])
def test_closed_form_noise_variances_match_the_noise(mech):
    draws = np.array([mech.release(np.zeros((1, 1)), seed=seed)[0] for seed in range(20000)])
    # Standard error of a sample variance: sigma^2 sqrt((kurtosis - 1) / N); kurtosis <= 6.
    expected = mech.noise_variance()[0]
    assert abs(draws.var() - expected) < 4 * expected * np.sqrt(5 / 20000)


@numba.njit
def log_uniform(s_dp, t, params):
    return -np.log(2 * params[0]) if abs(s_dp[0] - t[0]) < params[0] else -np.inf


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_a_scalar_noise_draw_is_estimated_and_used():
    # A custom mechanism without a closed form: variance estimated from draw_release, which
    # may return a scalar (as release() allows). U(-30, 30) has variance 300.
    mech = dw.Mechanism(normal_mean.total, log_uniform, params=[30.0],
                        draw_release=lambda rng, t: float(t[0] + rng.uniform(-30, 30)))
    assert abs(starts.noise_variance(mech)[0] - 300.0) < 4 * 300.0 * np.sqrt(0.8 / 1000)
    model = normal_mean.model(0.0, 1.0, 1.0)
    idata = dw.sample(model, mech, [20.0], 40, draws=50, tune=50, chains=2, seed=1)
    assert diagnostics.group(idata, "posterior")["mu"].shape == (2, 50)


def test_long_releases_are_weighed_by_the_diagonal():
    # 50 categories (above FULL_COVARIANCE_UP_TO). In 49 dimensions 64 prior draws are all far
    # from the truth, so the start can only be the best of a poor lot: the median distance of
    # 10 starts lies below the lower quartile of the prior draws' distances.
    k, n = 50, 20000
    model = dirichlet_multinomial.model(alpha=[1.0] * k)
    mech = dirichlet_multinomial.laplace(epsilon=1.0, categories=k)
    assert mech.size > starts.FULL_COVARIANCE_UP_TO
    truth = np.random.default_rng(0).dirichlet(np.ones(k))
    s_dp = mech.release(model.simulate({"p": truth}, n, seed=1), seed=2)
    rng = np.random.default_rng(3)
    noise = starts.noise_variance(mech)
    distance = lambda p: np.abs(p - truth).sum()  # noqa: E731
    begun = [distance(starts.release_informed_theta(rng, model, mech, s_dp, n, noise))
              for _ in range(10)]
    priors = [distance(rng.dirichlet(np.ones(k))) for _ in range(1000)]
    assert np.median(begun) < np.quantile(priors, 0.25)


def test_starts_are_prior_draws_the_release_supports():
    # mu ~ N(0, 1), n = 100 records N(mu, 1), Gaussian noise of sd 5: the posterior is
    # N(0.79, 0.11^2). Of the prior draws about 1 in 5 lie within 3 posterior sd of m; of the
    # starts nearly all do (SIR over 64 candidates).
    model, mech, n = normal_mean.model(0.0, 1.0, 1.0), normal_mean.gaussian(5.0), 100
    s_dp = np.array([80.0])
    exact = normal_mean.exact_posterior_gaussian(s_dp, n, 5.0, 0.0, 1.0, 1.0)
    noise = starts.noise_variance(mech)
    rng = np.random.default_rng(2)
    begun = np.array([starts.release_informed_theta(rng, model, mech, s_dp, n, noise)[0]
                       for _ in range(50)])
    prior = rng.standard_normal(50)
    near = lambda v: np.mean(np.abs(v - exact.mean()) < 3 * exact.std())  # noqa: E731
    assert near(prior) < 0.4
    assert near(begun) >= 0.9


def test_no_start_without_noise_draws():
    assert starts.release_informed_theta(np.random.default_rng(0), None, None, None, 1,
                                        None) is None


@pytest.mark.slow
def test_default_start_avoids_a_mode_the_release_rules_out():
    # Ju et al.'s regression at n = 10000, epsilon = 1: a start with beta_1 > 0 (prior draws
    # give one with seed 3) stayed there for 6000 iterations, 40 nats of misfit away from the
    # release, because a sign-flipped beta_1 with a shifted intercept fits all released sums
    # but one. Every default start must reach the true beta_1 = -2.89 (posterior sd 0.07).
    settings = linear_regression.published_settings()
    model = linear_regression.model(**settings["model"])
    mech = linear_regression.laplace(1.0, **settings["mechanism"])
    n = 10_000
    s_dp = mech.release(model.simulate({"beta": settings["beta"]}, n, seed=1), seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 200 draws: R-hat may complain
        idata = dw.sample(model, mech, s_dp, n, draws=200, tune=200, chains=4, seed=3)
    beta_1 = diagnostics.group(idata, "posterior")["beta"].values[..., 1]
    assert np.all(np.abs(beta_1.mean(axis=1) - settings["beta"][1]) < 0.5)


@numba.njit
def log_normal_30(s_dp, t, params):
    return -0.5 * ((s_dp[0] - t[0]) / 30.0) ** 2


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_a_draw_release_that_fails_at_zero_only_costs_the_informed_start():
    # Noise that needs a positive total: the variance estimate (at a zero total) fails, and
    # the run must go on from prior draws, with a warning, not stop.
    def draw(rng, t):
        if t[0] <= 0:
            raise ValueError("needs positive totals")
        return float(t[0] + rng.normal(0.0, 30.0))

    mech = dw.Mechanism(normal_mean.total, log_normal_30, draw_release=draw)
    with pytest.warns(RuntimeWarning, match="could not estimate the noise variance"):
        assert starts.noise_variance(mech) is None
    model = normal_mean.model(0.0, 1.0, 1.0)
    with pytest.warns(RuntimeWarning, match="could not estimate the noise variance"):
        idata = dw.sample(model, mech, [20.0], 40, draws=50, tune=50, chains=2, seed=1)
    assert diagnostics.group(idata, "posterior")["mu"].shape == (2, 50)


@numba.njit
def writes_two(rng, theta, out):
    out[0] = 1.0
    out[1] = 1.0  # past the end of a one-float record


@numba.njit
def raises_late(rng, theta, out):
    if rng.random() < 0.1:
        raise ValueError("sometimes")
    out[0] = 1.0


def test_simulated_contributions_are_evidence_only():
    """The plausibility check's simulated contributions: the statistic of records from prior
    draws, reproducible (a generator of their own), and None (never an error, never corrupt
    memory) when a user function misbehaves; the run's own probe names it afterwards."""
    from dawrap.models import beta_binomial

    model, mech = beta_binomial.model(), beta_binomial.laplace(1.0)
    seen = starts.simulated_contributions(model, mech, np.array([3.0]))
    assert seen.shape == (8 * 16, 1) and set(np.unique(seen)) == {0.0, 1.0}
    assert np.array_equal(seen, starts.simulated_contributions(model, mech, np.array([3.0])))
    for draw_record in (writes_two, raises_late):
        bad = dw.Model(params={"p": ()}, record_size=1, draw_record=draw_record,
                       draw_theta=model.draw_theta, draw_prior=model.draw_prior)
        assert starts.simulated_contributions(bad, mech, np.array([3.0])) is None


def test_sparse_moments_match_the_dense_ones():
    k = 40
    model = dirichlet_multinomial.model(alpha=[0.5] * k)
    mech = dirichlet_multinomial.laplace(epsilon=1.0, categories=k)
    x = model.simulate({"p": np.random.default_rng(0).dirichlet(np.ones(k))}, 3000, seed=1)
    dense = starts.statistic_moments(x, np.zeros(k), mech.sampler_statistic, k, False)
    sparse = starts.moments_from_entries(x, np.zeros(k), mech.sparse.entries, 1, k)
    assert np.allclose(dense[0], sparse[0]) and np.allclose(dense[1], sparse[1])


def test_a_release_of_many_cells_starts_and_decides_without_a_square_array():
    # 30 000 cells: a size x size covariance would need 7.2 GB.
    k, n = 30_000, 2000
    model = dirichlet_multinomial.model(alpha=[1.0] * k, proposal="uniform")
    mech = dirichlet_multinomial.laplace(epsilon=1.0, categories=k)
    truth = np.random.default_rng(0).dirichlet(np.ones(k))
    s_dp = mech.release(model.simulate({"p": truth}, n, seed=1), seed=2)
    theta = starts.release_informed_theta(np.random.default_rng(3), model, mech, s_dp, n,
                                          starts.noise_variance(mech), candidates=4, records=50)
    assert theta.shape == (k,) and np.isclose(theta.sum(), 1.0)
    from dawrap.runner.information import missing_information

    fraction = missing_information(model, mech, n, priors=2, records=50)
    assert 0.0 <= fraction <= 1.0


def test_a_long_release_gets_the_extremes_of_its_contributions():
    k = starts.SUMMARISED_ABOVE + 1
    model = dirichlet_multinomial.model(alpha=[1.0] * k, proposal="uniform")
    mech = dirichlet_multinomial.laplace(epsilon=1.0, categories=k)
    seen = starts.simulated_contributions(model, mech, np.zeros(k))
    # 128 one-hot records: each cell's smallest contribution is 0, and at most 128 cells
    # (at least one) saw a 1.
    assert seen.shape == (2, k) and np.all(seen[0] == 0.0)
    assert 1 <= seen[1].sum() <= 128 and set(np.unique(seen[1])) <= {0.0, 1.0}


def test_a_release_with_two_modes_starts_chains_in_each():
    """Issue 30: exponential records, bounds [0, 10], a release of 0. Resampling 64 prior
    draws (Gamma(1, 1)) by their likelihood started every chain in the upper mode (about a
    quarter of the time one candidate of 64 falls below 0.005); given their indices the
    chains alternate between the modes, heaviest first."""
    from dawrap.models import gamma_exponential

    model, mech = gamma_exponential.model(), gamma_exponential.laplace(1.0, 0.0, 10.0)
    s_dp, n = np.array([0.0]), 100
    noise = starts.noise_variance(mech)
    begun = [starts.release_informed_theta(np.random.default_rng(c), model, mech, s_dp, n,
                                           noise, chain=c)[0] for c in range(4)]
    assert begun[0] > 1.0 and begun[1] < 0.05 and begun[2] > 1.0 and begun[3] < 0.05


def test_one_mode_starts_as_before():
    """Where the release has one mode the chain's index changes nothing: the same draws
    from the same generator (the pinned runs of test_reproducibility rely on it)."""
    model, mech, n = normal_mean.model(0.0, 1.0, 1.0), normal_mean.gaussian(5.0), 100
    s_dp, noise = np.array([80.0]), starts.noise_variance(normal_mean.gaussian(5.0))
    for c in range(3):
        a, b = np.random.default_rng(c), np.random.default_rng(c)
        with_index = starts.release_informed_theta(a, model, mech, s_dp, n, noise, chain=c)
        without = starts.release_informed_theta(b, model, mech, s_dp, n, noise)
        assert np.array_equal(with_index, without)
        assert a.bit_generator.state == b.bit_generator.state


#: Run in a child process: before the entries were checked there, an index outside the
#: statistic (or a count above nnz) was used unchecked and the process died with SIGSEGV.
LYING_ENTRIES = """
import numba, numpy as np, dawrap as dw
from dawrap.runner import starts
from dawrap.samplers.entries_path import EntriesError
from dawrap.models import dirichlet_multinomial as dm

K = 40  # above FULL_COVARIANCE_UP_TO: weighed through the sparse entries

def one_hot(x_i, out):
    for j in range(out.shape[0]):
        out[j] = 0.0
    out[int(x_i[0])] = 1.0

@numba.njit
def far(x_i, index, value):          # category 4 is put 10**6 cells away
    c = int(x_i[0])
    index[0] = c if c < 4 else 10 ** 6
    value[0] = 1.0
    return 1

@numba.njit
def many(x_i, index, value):         # category 4 writes 3 pairs of the 1 declared
    c = int(x_i[0])
    if c < 4:
        index[0] = c
        value[0] = 1.0
        return 1
    for a in range(3):
        index[a] = c
        value[a] = 1.0 / 3.0
    return 3

@numba.njit
def claims(x_i, index, value):       # category 4 claims 10**6 pairs
    index[0] = int(x_i[0])
    value[0] = 1.0
    return 1 if x_i[0] < 4 else 10 ** 6

model = dm.model(alpha=[1.0] * K)
for entries, message in ((far, "wrote an index outside the statistic"),
                         (many, "returned a count outside 0..nnz"),
                         (claims, "returned a count outside 0..nnz")):
    statistic = dw.declare_sparse(numba.njit(one_hot), entries, nnz=1)
    mech = dw.Laplace(statistic, epsilon=1.0, sensitivity=2.0, size=K)
    try:
        starts.release_informed_theta(np.random.default_rng(0), model, mech, np.full(K, 20.0),
                                      100, starts.noise_variance(mech))
    except EntriesError as err:
        assert message in str(err) and "release-informed start" in str(err), str(err)
        assert isinstance(err, ValueError) and "Laplace mechanism" in str(err), str(err)
    else:
        raise AssertionError(f"{entries.__name__}: no error")
print("ok")
"""


def test_entries_outside_the_statistic_stop_the_start_with_the_samplers_error():
    """Issue 29 item 4: an entries function that returns an index outside the statistic, or
    more pairs than nnz, for some records: the ValueError the record sampler's own check
    gives, not a crash, and not a warning that starts at a prior draw instead."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", LYING_ENTRIES], capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-3000:]}"
    assert run.stdout.strip() == "ok"


def test_a_misspelt_moments_slot_is_named():
    """Issue 28, item 1: the moments templates read declared slots (STATISTIC, ENTRIES,
    SIZE, NNZ: ``None`` and zeros once, so a misspelt ``SIZ`` compiled moments of size 0).
    A misspelt name is refused naming the slot meant, a missing one naming what it holds,
    before anything compiles."""
    from dawrap.compile import templates as _templates
    mech = dw.Laplace(normal_mean.total, 0.5, 2.0)
    with pytest.raises(_templates.SlotError,
                       match="'STATISTICS' is not a slot .*runner.starts; did you mean "
                             "'STATISTIC'"):
        _templates.bind((starts.moments,), {"STATISTICS": mech.sampler_statistic, "SIZE": 1})
    with pytest.raises(_templates.SlotError, match="'SIZ' .*did you mean 'SIZE'"):
        _templates.bind((starts.moments,), {"STATISTIC": mech.sampler_statistic, "SIZ": 1})
    with pytest.raises(_templates.SlotError,
                       match="entry_moments reads the slot 'NNZ' \\(int: most pairs"):
        _templates.bind((starts.entry_moments,), {"ENTRIES": mech.sampler_statistic,
                                                  "SIZE": 1})
