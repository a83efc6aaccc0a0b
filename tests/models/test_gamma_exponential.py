"""gamma_exponential on the release of issue 30: exponential records, bounds [0, 10],
n = 100, epsilon = 1, a release of 0. Nearly every record beyond the bound (lam near 0) and
few small records inside (lam near 3.5) both explain it: about 31% of the exact posterior's
mass lies below lam = 0.05. Before, the default sampler never went there (mean 3.81 against
2.69) and ``exact_posterior`` returned a third answer (1.83).

The reference is importance sampling from the prior with the exact likelihood: for a release
at or below the lower bound every total T >= s_dp, so with Laplace noise of scale b

    p(s_dp | lam) = exp(s_dp / b) / (2 b) * E[exp(-t(x) / b)]^n,

one record's term in closed form (t(x) = x inside [0, B], 0 beyond). Its tolerances come
from the weights' effective sample size (dawrap.reference.WeightedDraws).
"""
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import gamma_exponential
from dawrap.reference import WeightedDraws

N, EPSILON, UPPER, RELEASE = 100, 1.0, 10.0, 0.0
MODEL = gamma_exponential.model()
MECH = gamma_exponential.laplace(EPSILON, 0.0, UPPER)
SCALE = UPPER / EPSILON
Z = 4.0


def log_likelihood(lam, s_dp=RELEASE):
    """The exact log likelihood of a release at or below 0 (module docstring)."""
    assert s_dp <= 0.0
    lam = np.asarray(lam, dtype=float)
    rate = lam + 1.0 / SCALE
    per_record = np.exp(-lam * UPPER) + lam / rate * -np.expm1(-rate * UPPER)
    return s_dp / SCALE - math.log(2.0 * SCALE) + N * np.log(per_record)


@pytest.fixture(scope="module")
def reference():
    lam = np.random.default_rng(30).gamma(1.0, 1.0, 400_000)
    return WeightedDraws(lam, log_likelihood(lam))


def agree(estimate, reference_value, mcse, what):
    assert abs(estimate - reference_value) < Z * mcse, \
        f"{what}: {estimate:.5g} against {reference_value:.5g} (4 mcse = {Z * mcse:.3g})"


def test_the_reference_is_bimodal(reference):
    """The importance sample itself: mean 2.69, 31% of the mass below 0.05."""
    assert reference.ess > 10_000  # of 400 000: the mode near 0 has little prior mass
    assert 2.6 < reference.mean() < 2.8
    assert 0.29 < float(reference.cdf(0.05)) < 0.33


def test_noncentred_map_gives_every_record_back():
    """x = z / lam with z = lam x ~ Exponential(1): the record comes back (to rounding) and
    z does not depend on lam in law (an Exponential(lam) record times lam is Exponential(1))."""
    nc = MODEL.noncentred
    rng = np.random.default_rng(1)
    z, out = np.empty(1), np.empty(1)
    for lam in (1e-4, 0.3, 7.0):
        x = rng.exponential(1.0 / lam, 2000)
        zs = []
        for v in x:
            nc.noise_from_record(rng, np.array([lam]), np.array([v]), z)
            nc.record_from_noise(np.array([lam]), z, out)
            assert out[0] == pytest.approx(v, rel=1e-14)
            zs.append(z[0])
        assert stats.kstest(zs, "expon").pvalue > 1e-3
    assert nc.log_prior(np.array([-1.0])) == -np.inf


@pytest.mark.slow
def test_exact_posterior_agrees_with_importance_sampling_at_a_release_of_zero(reference):
    """The grid used to put one point on the mode near 0 and doubled its mass: mean 1.83."""
    exact = gamma_exponential.exact_posterior(MECH, RELEASE, N, points=600)
    lam = reference.draws
    agree(exact.mean(), reference.mean(), reference.mcse(lam), "mean")
    agree(exact.std() ** 2 + exact.mean() ** 2, reference.expect(lam ** 2),
          reference.mcse(lam ** 2), "second moment")
    for cut in (0.002, 0.05, 3.0):
        below = (lam <= cut).astype(float)
        agree(float(exact.cdf(cut)), reference.expect(below), reference.mcse(below),
              f"P(lam <= {cut})")


def convolution_log_likelihood(rate, s_dp, step):
    """log p(s_dp | rate) by the n-fold convolution of one record's contribution, on a
    lattice of step / 2: the atom at 0 (every record beyond the bound), the mass of each bin
    [(k - 1) step, k step] of the inside part at its midpoint (midpoint rule: error
    O(step^2)), then the sum over totals of P(T = t) times the Laplace density at s_dp - t."""
    inside = -np.diff(np.exp(-rate * np.arange(0.0, UPPER + step / 2, step)))
    one = np.zeros(2 * inside.size)
    one[0] = np.exp(-rate * UPPER)
    one[1::2] = inside
    size = 1 << int(np.ceil(np.log2(N * one.size + 1)))
    dist = np.fft.irfft(np.fft.rfft(one, size) ** N, size)
    totals = np.arange(size) * step / 2
    return np.log(np.sum(np.maximum(dist, 0.0) * stats.laplace.pdf(s_dp - totals,
                                                                   scale=SCALE)))


@pytest.mark.slow
def test_exact_likelihood_against_a_convolution_at_a_release_inside_the_range():
    """Away from the bound (a release of 20, still two explanations) there is no closed
    form: the Fourier inversion against the convolution above at rates across the posterior
    and the valley between its modes, Richardson-extrapolated from steps 0.01 and 0.005
    (error O(step^4): under 3e-7 nats here, against 1.2e-3 at step 0.01 alone). The grid's
    densities are up to a constant, so the differences of the log likelihood between rates
    must agree."""
    s_dp = 20.0
    exact = gamma_exponential.exact_posterior(MECH, s_dp, N, points=300)
    lam = exact.grid[exact.density > 1e-9 * exact.density.max()]
    lam = lam[np.linspace(0, lam.size - 1, 10).astype(int)]
    got = np.log(np.interp(lam, exact.grid, exact.density)) - stats.gamma.logpdf(lam, 1.0)
    coarse, fine = ([convolution_log_likelihood(rate, s_dp, step) for rate in lam]
                    for step in (0.01, 0.005))
    want = (4.0 * np.array(fine) - np.array(coarse)) / 3.0
    assert np.allclose(got - got[0], want - want[0], rtol=0.0, atol=1e-6)


@pytest.mark.slow
def test_the_default_sampler_matches_importance_sampling(reference, draws_of):
    """Interweaving with jumps between the two modes, chosen by default: every chain visits
    both, and the mean and the mass below 0.05 agree with the reference. Before: 3.81 and
    0.00, with every diagnostic quiet."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning on a run that is right
        idata = dw.sample(MODEL, MECH, RELEASE, N, draws=2000, tune=1000, seed=5,
                          progress=False)
    attrs = diagnostics.attrs(idata)
    assert attrs["interweave"] == 2 and attrs["jumps"] == 1
    lam = draws_of(idata, "lam")
    low = (lam < 0.05).astype(float)
    assert np.all((low.mean(axis=1) > 0.1) & (low.mean(axis=1) < 0.6))  # each chain: both
    for what, draws, ref, ref_mcse in [
            ("mean", lam, reference.mean(), reference.mcse(reference.draws)),
            ("P(lam < 0.05)", low, float(reference.cdf(0.05)),
             reference.mcse((reference.draws < 0.05).astype(float)))]:
        mcse = math.hypot(diagnostics.mcse(draws, "mean"), ref_mcse)
        agree(float(draws.mean()), ref, mcse, what)


@pytest.mark.slow
def test_without_the_moves_the_missed_mode_is_named():
    """Record sweeps alone, every chain started in the upper mode: no chain goes below
    0.05, and the warning names lam and where the missed mode is."""
    with pytest.warns(RuntimeWarning, match=r"a mode may be missing.*lam near 0\.00"):
        dw.sample(MODEL, MECH, RELEASE, N, draws=500, tune=200, seed=5, interweave=False,
                  init_theta={"lam": 3.0}, progress=False)


def test_the_automatic_choice_interweaves_from_the_measured_crossover():
    """On truncated releases with one mode the move breaks even near missing information
    0.5 (benchmarks/results/modes.md): plain sweeps below, interweaving above."""
    model = gamma_exponential.model(20.0, 20.0)
    assert model.noncentred.threshold == 0.5
    for epsilon, on in ((0.3, 0), (0.1, 2)):  # missing information 0.42 and 0.87
        method = dw.Record().prepare(model, gamma_exponential.laplace(epsilon, 0.0, 5.0), 1000)
        assert method.interweave == on
