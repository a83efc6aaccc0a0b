"""poisson_gamma near zero (issue 30): the non-centred map by the inverse CDF, and a
clamped release near zero against importance sampling from the prior with the exact
likelihood (the n-fold convolution of the clamped Poisson pmf, summed against the noise
density), its tolerances from the weights' effective sample size."""
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import poisson_gamma
from dawrap.reference import WeightedDraws

N, C, EPSILON, RELEASE = 100, 5, 1.0, 0.5
MECH = poisson_gamma.laplace(EPSILON, C)
Z = 4.0


def clamped_log_likelihood(lam, s_dp=RELEASE):
    """log p(s_dp | lam): P(sum_i min(x_i, C) = t) by FFT (all totals 0..N C fit in 512
    entries, so nothing wraps around), then summed against the Laplace density
    (:func:`_total_log_likelihood`)."""
    k = np.arange(C)
    log_pmf = np.concatenate([stats.poisson.logpmf(k[None, :], lam[:, None]),
                              stats.poisson.logsf(C - 1, lam)[:, None]], axis=1)
    return _total_log_likelihood(log_pmf, stats.laplace.pdf(s_dp - np.arange(512),
                                                           scale=C / EPSILON))


def reference(alpha):
    lam = np.random.default_rng(31).gamma(alpha, 1.0, 50_000)
    return WeightedDraws(lam, clamped_log_likelihood(lam))


def test_noncentred_map_is_the_poisson_law():
    """For each count the set of z that record_from_noise maps to it has the length (in u)
    of its Poisson probability, to the rounding of the CDF sums (1e-9 relative, or 1e-11 in
    probability: at lam = 2500 the sums of ~900 terms are good to 8e-13); and every z drawn
    by noise_from_record maps back to its count, far tails included."""
    nc = poisson_gamma.model().noncentred
    rng = np.random.default_rng(2)
    z, out = np.empty(1), np.empty(1)
    for lam in (1e-3, 0.3, 4.0, 60.0, 2500.0):
        theta = np.array([lam])
        bottom, top = poisson_gamma._window(lam)
        counts = np.arange(bottom, top + 1)
        length = np.empty(counts.size)
        for i, k in enumerate(counts):
            low_a, low_b = poisson_gamma._below(k, lam, bottom)
            high_a, high_b = poisson_gamma._above(k, lam, top)
            length[i] = max(min(low_b, poisson_gamma.SPLIT) - low_a, 0.0)
            if low_b > poisson_gamma.SPLIT:
                length[i] += max(min(high_b, 1.0 - poisson_gamma.SPLIT) - high_a, 0.0)
        pmf = stats.poisson.pmf(counts, lam)
        assert np.allclose(length, pmf, rtol=1e-9, atol=1e-11)
        assert 1.0 - stats.poisson.cdf(top, lam) < 1e-25 and stats.poisson.cdf(bottom - 1, lam) < 1e-25
        tails = [counts[0], counts[-1], counts[np.argmax(pmf)]]
        for k in [*rng.poisson(lam, 300).astype(float), *tails]:
            nc.noise_from_record(rng, theta, np.array([k]), z)
            assert -(1.0 - poisson_gamma.SPLIT) <= z[0] <= poisson_gamma.SPLIT
            nc.record_from_noise(theta, z, out)
            assert out[0] == k
    # A count the window cannot hold (probability below 1e-25) is reported, not mapped.
    nc.noise_from_record(rng, np.array([2.0]), np.array([500.0]), z)
    assert np.isnan(z[0])


@pytest.mark.parametrize("alpha", [0.5, pytest.param(1.0, marks=pytest.mark.slow)])
def test_exact_posterior_near_zero_agrees_with_importance_sampling(alpha):
    """A release of 0.5: nearly every record is 0, lam is near 0. With a Gamma(0.5, 1) prior
    the density diverges at 0, where the evenly spaced grid started at 1e-9 gave a mean of
    0.0019 against 0.0279."""
    ref = reference(alpha)
    exact = poisson_gamma.exact_posterior(MECH, RELEASE, N, c=C, alpha=alpha, beta=1.0)
    lam = ref.draws
    for what, got, values in [("mean", exact.mean(), lam),
                              ("second moment", exact.std() ** 2 + exact.mean() ** 2, lam ** 2),
                              ("P(lam <= 0.01)", float(exact.cdf(0.01)), lam <= 0.01)]:
        values = np.asarray(values, dtype=float)
        assert abs(got - ref.expect(values)) < Z * ref.mcse(values), \
            f"{what}: {got:.6g} against {ref.expect(values):.6g} (mcse {ref.mcse(values):.2g})"


@pytest.mark.slow
def test_the_default_sampler_near_zero_matches_importance_sampling(draws_of):
    """The default run (interweaving at this missing information, one mode: no jumps)
    against the importance sample, within the Monte Carlo errors of both, and silent."""
    ref = reference(0.5)
    model = poisson_gamma.model(0.5, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        idata = dw.sample(model, MECH, RELEASE, N, draws=2000, tune=1000, seed=7,
                          progress=False)
    assert diagnostics.attrs(idata)["jumps"] == 0
    lam = draws_of(idata, "lam")
    for what, draws, values in [("mean", lam, ref.draws),
                                ("P(lam <= 0.01)", (lam <= 0.01).astype(float),
                                 (ref.draws <= 0.01).astype(float))]:
        mcse = math.hypot(diagnostics.mcse(draws, "mean"), ref.mcse(values))
        assert abs(draws.mean() - ref.expect(values)) < Z * mcse, what


def test_the_automatic_choice_weighs_the_map_cost():
    """The Poisson map sums the CDF: it interweaves for mixing only from missing information
    0.85 (measured crossover), not the 0.3 of the cheap maps."""
    model = poisson_gamma.model(2.0, 1.0)
    assert model.noncentred.threshold == 0.85
    for epsilon, on in ((0.2, 0), (0.02, 2)):  # missing information 0.46 and 0.99
        method = dw.Record().prepare(model, poisson_gamma.laplace(epsilon, 5), 1000)
        assert method.interweave == on


# A truncated release near zero (Bernstein & Sheldon's release: counts outside [0, 10]
# dropped) has two explanations: lam near 0, or so large that nearly every count exceeds
# the bound. With a vague Gamma(1, rate 0.1) prior about 7% of the posterior lies below
# lam = 1, the rest near 28.
LOWER, UPPER, TRUNCATED_PRIOR = 0, 10, (1.0, 0.1)
TRUNCATED = poisson_gamma.laplace_truncated(EPSILON, LOWER, UPPER)


def truncated_log_likelihood(lam, s_dp=0.0):
    """log p(s_dp | lam) for the truncated total: one record contributes x inside [0, 10]
    and 0 beyond (the atom at 0 holds P(x = 0) + P(x > 10)); N-fold convolution by FFT on
    1024 entries (totals up to N * UPPER = 1000 < 1024: nothing wraps around), summed against
    the Laplace density. (2048 entries gave the same importance weights to 1e-15 of the
    largest, in 3.3x the time.)"""
    k = np.arange(UPPER + 1)
    log_pmf = np.where(k[None, :] >= 1, stats.poisson.logpmf(k[None, :], lam[:, None]), -np.inf)
    log_pmf[:, 0] = np.logaddexp(stats.poisson.logpmf(0, lam), stats.poisson.logsf(UPPER, lam))
    size = 1024
    assert N * UPPER < size  # the N-fold sum's support fits: no wrap-around
    return _total_log_likelihood(log_pmf, stats.laplace.pdf(s_dp - np.arange(size),
                                                           scale=UPPER / EPSILON))


def _total_log_likelihood(log_pmf, density):
    """log of sum_t P(total = t) density[t], for each row of one record's log pmf: the
    N-fold convolution by FFT on ``len(density)`` entries. The N-th power by repeated
    squaring (NumPy's ``**`` takes a complex logarithm and exponential for an exponent of
    100), the sum in linear scale (the Laplace densities here are at least e^-103: no
    underflow), the FFT's rounding below zero floored at 1e-300 as in the log-scale sum
    this replaced, whose importance weights it gives to 1e-15 of the largest in an eighth
    of the time."""
    size = density.shape[0]
    assert density.min() > 1e-300
    out = np.empty(log_pmf.shape[0])
    for i in range(0, log_pmf.shape[0], 4000):
        cf = np.fft.rfft(np.exp(log_pmf[i:i + 4000]), size, axis=1)
        dist = np.fft.irfft(_power(cf, N), size, axis=1)
        out[i:i + 4000] = np.log(np.maximum(dist, 1e-300) @ density)
    return out


def _power(z, n: int):
    """``z ** n`` elementwise by repeated squaring (n >= 1)."""
    out, base = None, z.copy()
    while n:
        if n & 1:
            out = base.copy() if out is None else np.multiply(out, base, out=out)
        n >>= 1
        if n:
            np.multiply(base, base, out=base)
    return out


@pytest.fixture(scope="module")
def truncated_reference():
    alpha, beta = TRUNCATED_PRIOR
    lam = np.random.default_rng(5).gamma(alpha, 1.0 / beta, 200_000)
    return WeightedDraws(lam, truncated_log_likelihood(lam))


def test_exact_posterior_needs_the_clamp_only_for_a_clamped_release():
    """A truncated release has no clamp (before, exact_posterior computed the clamped
    likelihood for whatever c it was given); a clamped one needs it."""
    with pytest.raises(ValueError, match="c must be None for a truncated release"):
        poisson_gamma.exact_posterior(TRUNCATED, 0.0, N, c=UPPER)
    with pytest.raises(ValueError, match="c .* is needed"):
        poisson_gamma.exact_posterior(MECH, RELEASE, N)


@pytest.mark.slow
def test_exact_posterior_of_a_truncated_release_near_zero(truncated_reference):
    """Both modes: the mean (near 27.6) and the mass below 1 (about 7%)."""
    ref, lam = truncated_reference, truncated_reference.draws
    exact = poisson_gamma.exact_posterior(TRUNCATED, 0.0, N, alpha=TRUNCATED_PRIOR[0],
                                          beta=TRUNCATED_PRIOR[1])
    assert 0.05 < float(exact.cdf(1.0)) < 0.1 and 25.0 < exact.mean() < 30.0
    for what, got, values in [("mean", exact.mean(), lam),
                              ("P(lam <= 1)", float(exact.cdf(1.0)), lam <= 1.0),
                              ("P(lam <= 0.1)", float(exact.cdf(0.1)), lam <= 0.1)]:
        values = np.asarray(values, dtype=float)
        assert abs(got - ref.expect(values)) < Z * ref.mcse(values), \
            f"{what}: {got:.6g} against {ref.expect(values):.6g} (mcse {ref.mcse(values):.2g})"


@pytest.mark.slow
def test_the_default_sampler_crosses_the_modes_of_a_truncated_release(truncated_reference,
                                                                      draws_of):
    """Interweaving with jumps through the inverse-CDF map, chosen by default: every chain
    visits both modes, the mean and the mass below 1 agree with the reference, no warning.
    Before (no map) every chain stayed in the mode it started in."""
    ref = truncated_reference
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        idata = dw.sample(poisson_gamma.model(*TRUNCATED_PRIOR), TRUNCATED, 0.0, N, seed=1,
                          progress=False)
    assert diagnostics.attrs(idata)["jumps"] == 1
    lam = draws_of(idata, "lam")
    low = (lam < 1.0).astype(float)
    assert np.all(low.mean(axis=1) > 0.02)  # each chain: both modes
    for what, draws, values in [("mean", lam, ref.draws),
                                ("P(lam < 1)", low, (ref.draws < 1.0).astype(float))]:
        mcse = math.hypot(diagnostics.mcse(draws, "mean"), ref.mcse(values))
        assert abs(draws.mean() - ref.expect(values)) < Z * mcse, \
            f"{what}: {draws.mean():.4g} against {ref.expect(values):.4g} (4 mcse {Z * mcse:.2g})"


@pytest.mark.parametrize("c", [float("inf"), float("nan"), -1.0, 0.0, 2.5, "3"])
def test_a_clamp_that_is_not_a_positive_whole_number_is_refused_naming_c(c):
    """Hypothesis found c=inf raising OverflowError inside the check (int(inf))."""
    with pytest.raises(ValueError, match="c must be a positive whole number"):
        poisson_gamma.laplace(1.0, c=c)
    with pytest.raises(ValueError, match="c must be a positive whole number"):
        poisson_gamma.clamped_count(c)
