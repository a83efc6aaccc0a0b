"""Mechanisms: normalised log densities, release distributions, privacy parameters."""
import math

import numba
import numpy as np
import pytest
from scipy import integrate, stats

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial


@numba.njit
def identity(x_i, out):
    out[0] = x_i[0]


def test_laplace_and_gaussian_densities_are_normalised():
    for mech in (dw.Laplace(identity, epsilon=0.7, sensitivity=2.0),
                 dw.Gaussian(identity, sigma=1.3)):
        total, _ = integrate.quad(lambda s: math.exp(mech.log_g([s], [1.5])), -60, 60,
                                  points=[1.5], limit=200)
        assert total == pytest.approx(1.0, abs=1e-8)


def test_laplace_density_is_scipys():
    mech = dw.Laplace(identity, epsilon=0.25, sensitivity=3.0)
    assert mech.scale == 12.0
    for s in (-5.0, 0.0, 7.5):
        assert mech.log_g([s], [2.0]) == pytest.approx(stats.laplace.logpdf(s, 2.0, 12.0))


def test_geometric_pmf_sums_to_one_and_matches_definition():
    mech = dw.Geometric(identity, epsilon=0.5, sensitivity=2.0)
    alpha = math.exp(-0.25)
    assert mech.alpha == pytest.approx(alpha)
    z = np.arange(-400, 401)
    pmf = np.exp([mech.log_g([3 + k], [3]) for k in z])
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert pmf[400 + 5] == pytest.approx((1 - alpha) / (1 + alpha) * alpha ** 5)


def test_gaussian_from_privacy_guarantees():
    assert dw.Gaussian.from_zcdp(identity, rho=0.5, sensitivity=2.0).sigma == pytest.approx(2.0)
    mech = dw.Gaussian.from_gdp(identity, mu=0.5, sensitivity=1.0)
    assert mech.sigma == pytest.approx(2.0)
    assert mech.privacy == {"sigma": 2.0, "mu": 0.5, "sensitivity": 1.0}


def _releases(mech, reps, value=4.0):
    x = np.full((1, 1), value)
    return np.array([mech.release(x, seed=s)[0] for s in range(reps)]) - value


def test_laplace_release_noise_is_laplace():
    noise = _releases(dw.Laplace(identity, epsilon=0.5), 3000)
    assert stats.kstest(noise, stats.laplace(0, 2.0).cdf).pvalue > 1e-3


def test_gaussian_release_noise_is_normal():
    noise = _releases(dw.Gaussian(identity, sigma=3.0), 3000)
    assert stats.kstest(noise, stats.norm(0, 3.0).cdf).pvalue > 1e-3


def test_geometric_release_is_integer_and_two_sided_geometric():
    mech = dw.Geometric(identity, epsilon=0.8)
    noise = _releases(mech, 5000)
    assert np.all(noise == np.round(noise))
    # Chi-square goodness of fit on |z| <= 6 plus the two tails.
    edges = np.arange(-6, 7)
    observed = np.array([(noise < -6).sum()] + [(noise == k).sum() for k in edges]
                        + [(noise > 6).sum()])
    pmf = np.exp([mech.log_g([k], [0]) for k in edges])
    tail = (1 - pmf.sum()) / 2
    expected = 5000 * np.concatenate([[tail], pmf, [tail]])
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    with pytest.raises(ValueError, match="integer"):
        mech.release(np.array([[0.5]]), seed=0)
    with pytest.raises(ValueError, match="s_dp must be integer"):
        mech.check_release(2.5)


def test_release_is_reproducible_and_validates_records():
    mech = beta_binomial.laplace(1.0)
    x = np.array([1, 0, 1, 1])
    assert mech.release(x, seed=3) == mech.release(x, seed=3)
    assert mech.total(x)[0] == 3.0
    with pytest.raises(ValueError, match="x must be finite"):
        mech.release(np.array([1.0, np.nan]), seed=0)
    with pytest.raises(TypeError, match="x must be an array of numbers"):
        mech.release(np.array(["a"]), seed=0)


@numba.njit
def identity_given_release(x_i, s_dp, out):
    out[0] = x_i[0]


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_statistic_may_depend_on_release():
    """A (x_i, s_dp, out) statistic is passed the release; here it ignores it, so the chain
    must equal the ordinary Laplace chain draw for draw."""
    mech = beta_binomial.laplace(0.5)
    custom = dw.Mechanism(identity_given_release, mech.log_density, params=mech.params,
                          epsilon=0.5)
    assert custom.depends_on_release
    with pytest.raises(NotImplementedError):
        custom.release(np.ones(3))
    with pytest.raises(ValueError, match="s_dp is required"):
        custom.total(np.ones(3))
    model = beta_binomial.model()
    # The same start and kernel for both: the default start and the interweaving rule use
    # noise draws, which only the built-in mechanism has.
    kw = dict(n=100, draws=100, tune=10, chains=2, seed=1, init_theta={"p": 0.3},
              interweave=False)
    a = dw.sample(model, mech, 30.0, **kw)
    b = dw.sample(model, custom, 30.0, **kw)
    assert np.array_equal(diagnostics.group(a, "posterior")["p"].values,
                          diagnostics.group(b, "posterior")["p"].values)


@numba.njit
def log_uniform(s_dp, t, params):
    # s_dp = T + U(-h, h): density 1/(2h) inside the window, zero outside.
    h = params[0]
    return -math.log(2.0 * h) if abs(s_dp[0] - t[0]) < h else -math.inf


@pytest.mark.slow
def test_custom_mechanism_with_zero_density_regions(check_posterior, draws_of):
    """Uniform noise: log g is -inf outside a window. Proposals leaving it are rejected, the
    start must lie inside it (condition A3), and the posterior is still exact."""
    mech = dw.Mechanism(identity, log_uniform, params=[3.5], name="Uniform",
                        draw_release=lambda rng, t: t + rng.uniform(-3.5, 3.5, t.shape))
    model, n = beta_binomial.model(a=2, b=2), 150
    x = model.simulate({"p": 0.4}, n, seed=1)
    s_dp = mech.release(x, seed=2)
    with pytest.raises(ValueError, match="A3"):
        dw.sample(model, mech, s_dp, n=n, init_x=np.zeros(n), seed=0, chains=1, draws=10)
    idata = dw.sample(model, mech, s_dp, n=n, init_x=x, draws=4000, tune=500, seed=3)
    check_posterior(draws_of(idata, "p"), beta_binomial.exact_posterior(mech, s_dp, n, 2, 2))


@pytest.mark.parametrize("build, match", [
    (lambda: dw.Laplace(identity, epsilon=0.0), "epsilon"),
    (lambda: dw.Laplace(identity, epsilon=-1), "epsilon"),
    (lambda: dw.Laplace(identity, epsilon=1, sensitivity=0), "sensitivity"),
    (lambda: dw.Laplace(identity, epsilon=float("nan")), "epsilon"),
    (lambda: dw.Gaussian(identity, sigma=0), "sigma"),
    (lambda: dw.Gaussian.from_zcdp(identity, rho=0, sensitivity=1), "rho"),
    (lambda: dw.Gaussian.from_gdp(identity, mu=1, sensitivity=-1), "sensitivity"),
    (lambda: dw.Geometric(identity, epsilon=math.inf), "epsilon"),
    (lambda: dw.Laplace(identity, epsilon=1, size=0), "size"),
])
def test_bad_privacy_parameters(build, match):
    with pytest.raises(ValueError, match=match):
        build()


@pytest.mark.parametrize("build, match", [
    # Accepted by the type checks, but past what float64 holds: each names its arguments and
    # the usable range (they raised ZeroDivisionError, OverflowError or "params must be finite").
    (lambda: dw.Geometric(identity, epsilon=1e-17),
     r"epsilon = 1e-17 with sensitivity = 1.0 gives .* usable range"),
    (lambda: dw.Geometric(identity, epsilon=1e300, sensitivity=1e-10), r"epsilon = 1e\+300"),
    (lambda: dw.Geometric.from_scale(identity, scale=1e300), r"scale = 1e\+300"),
    (lambda: dw.Geometric.from_scale(identity, scale=1e-100, sensitivity=1e300),
     "epsilon = sensitivity / scale"),
    (lambda: dw.Laplace(identity, epsilon=1e-300), r"epsilon = 1e-300 with sensitivity"),
    (lambda: dw.Laplace(identity, epsilon=1e300, sensitivity=1e-10), r"epsilon = 1e\+300"),
    (lambda: dw.Gaussian(identity, sigma=1e300), r"sigma = 1e\+300"),
    (lambda: dw.Gaussian(identity, sigma=1e-300), r"sigma = 1e-300"),
    (lambda: dw.Gaussian.from_zcdp(identity, rho=1e-320, sensitivity=1.0), r"rho = 1e-320"),
    (lambda: dw.Gaussian.from_zcdp(identity, rho=1e308, sensitivity=1.0), r"rho = 1e\+308"),
    (lambda: dw.Gaussian.from_gdp(identity, mu=1e-300, sensitivity=1.0), r"mu = 1e-300"),
    (lambda: dw.DiscreteGaussian(identity, sigma=1e13), r"sigma = 1e\+13"),
    (lambda: dw.DiscreteGaussian(identity, sigma=1e300), r"sigma = 1e\+300"),
    (lambda: dw.DiscreteGaussian(identity, sigma=1e-300), r"sigma = 1e-300"),
    (lambda: dw.DiscreteGaussian.from_zcdp(identity, rho=1e-30, sensitivity=1.0), r"rho = 1e-30"),
])
def test_extreme_parameters_name_the_argument_and_the_range(build, match):
    with pytest.raises(ValueError, match=match) as err:
        build()
    assert "usable range" in str(err.value) or "cannot hold" in str(err.value)


def test_parameters_at_the_ends_of_the_usable_range_compute():
    """Inside the range everything is finite, and the geometric noise variance is accurate
    where 1 - alpha loses digits (2 alpha / (1 - alpha)^2 was off by 1e-6 at rate 1e-10)."""
    rate = 1e-10
    mech = dw.Geometric(identity, epsilon=rate)
    exact = 2.0 * math.exp(-rate) / math.expm1(-rate) ** 2
    assert mech.noise_variance()[0] == pytest.approx(exact, rel=1e-12)
    assert np.isfinite(mech.release(np.ones(3), seed=0)).all()
    for m in (dw.Laplace(identity, epsilon=1e-150), dw.Laplace(identity, epsilon=1e150),
              dw.Gaussian(identity, sigma=1e150), dw.Gaussian(identity, sigma=1e-150),
              dw.Geometric(identity, epsilon=1e150), dw.DiscreteGaussian(identity, sigma=9e12),
              dw.DiscreteGaussian(identity, sigma=1e-150),
              dw.Geometric.from_scale(identity, scale=9e12)):
        assert np.all(np.isfinite(m.params)) and np.all(np.isfinite(m.noise_variance()))
        assert np.isfinite(m.log_g([3.0], [1.0])) or m.log_g([3.0], [1.0]) == -math.inf


def test_bad_mechanism_functions():
    with pytest.raises(TypeError, match="statistic must be a numba.njit"):
        dw.Laplace(lambda x_i, out: None, epsilon=1.0)
    with pytest.raises(TypeError, match="epsilon must be a positive real"):
        dw.Laplace(identity, epsilon="1")

    @numba.njit
    def four(a, b, c, d):
        pass

    with pytest.raises(TypeError, match="statistic must take"):
        dw.Mechanism(four, log_uniform)
    with pytest.raises(TypeError, match="log_density must be a numba.njit"):
        dw.Mechanism(identity, lambda s, t, p: 0.0)


def test_log_density_arity_is_checked_at_construction():
    """It used to pass Mechanism(...) and fail inside dw.sample with a numba TypeError."""
    @numba.njit
    def two(s_dp, t):
        return 0.0

    with pytest.raises(TypeError, match=r"log_density must take \(s_dp, t, params\)"):
        dw.Mechanism(identity, two)

    @numba.njit
    def with_default(s_dp, t, params, extra=1.0):
        return 0.0

    assert dw.Mechanism(identity, with_default).log_density is with_default


@pytest.mark.parametrize("sigma", [0.3, 0.5, 1.0, 2.5, 40.0])
def test_discrete_gaussian_noise_variance_is_the_lattice_variance(sigma):
    k = np.arange(-int(60 * sigma) - 60, int(60 * sigma) + 61)
    w = np.exp(-k * k / (2 * sigma * sigma))
    exact = np.sum(k * k * w) / np.sum(w)          # the direct sum over the lattice
    variance = dw.DiscreteGaussian(beta_binomial.count, sigma=sigma).noise_variance()[0]
    assert variance == pytest.approx(exact, rel=1e-12)
    if sigma < 1:  # well below sigma^2 where the lattice is coarse
        assert variance < 0.9 * sigma ** 2


def test_a_misspelt_statistic_slot_is_named():
    """Issue 28, item 1: the statistic templates of :mod:`dawrap.mechanisms.base` read
    declared slots (STATISTIC, SIZE: ``None`` and ``0`` once, so a misspelt ``SIZ`` compiled
    a statistic of size 0 and summed nothing). A misspelt name is refused naming the slot
    meant; a missing one is named; the names spelt right give the records' sum."""
    from dawrap.compile import templates as _templates
    from dawrap.mechanisms import base
    statistic = base.with_release_argument(identity)
    with pytest.raises(_templates.SlotError,
                       match="'SIZ' is not a slot .*mechanisms.base; did you mean 'SIZE'"):
        _templates.bind((base.total_of,), {"STATISTIC": statistic, "SIZ": 1})
    with pytest.raises(_templates.SlotError,
                       match="total_of reads the slot 'SIZE' \\(int: floats of the statistic"):
        _templates.bind((base.total_of,), {"STATISTIC": statistic})
    with pytest.raises(_templates.SlotError, match="'STATISTICS' .*did you mean 'STATISTIC'"):
        _templates.bind((base.statistic_given_release,), {"STATISTICS": identity})
    x = np.array([[1.5], [2.0], [-0.5]])
    assert base.sum_statistic(x, np.zeros(1), statistic, 1).tolist() == [3.0]
