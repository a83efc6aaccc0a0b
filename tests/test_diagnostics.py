"""The ArviZ calls the README shows work on what ``dw.sample`` returns, on both generations.

ArviZ 0.x (Python < 3.12 here) returns ``InferenceData``, ArviZ 1.x an ``xarray.DataTree``;
CI runs this file on both. Each call is checked against an independent computation, not only
for not raising: ``az.mcse(..., method="sd")`` raised a TypeError with ArviZ 0.23.4 under
NumPy >= 2.4 (see ``dawrap.diagnostics._repair_arviz_0_mcse_sd``).
"""
import subprocess
import sys

import arviz as az
import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial

SUMMARY_COLUMNS = ("mean", "sd", "mcse_mean", "mcse_sd", "ess_bulk", "ess_tail", "r_hat")


@pytest.fixture(scope="module")
def posterior():
    """A small posterior of the README's model, and its ``(chain, draw)`` draws of p."""
    model, mech = beta_binomial.model(a=1, b=1), beta_binomial.laplace(epsilon=0.5)
    idata = dw.sample(model, mech, 312.4, 1000, draws=500, tune=200, chains=4, seed=5)
    return idata, diagnostics.group(idata, "posterior")["p"].values


def _value(result, name="p") -> float:
    """A scalar out of an ArviZ answer: an ``xarray.Dataset`` (0.x) or ``DataTree`` (1.x)."""
    return float(result[name])


def test_summary_reports_the_draws(posterior):
    idata, p = posterior
    table = az.summary(idata)
    assert set(SUMMARY_COLUMNS) <= set(table.columns)
    row = table.loc["p"]
    # az.summary rounds (0.x: 3 digits; 1.x: by the MCSE), so compare at that precision
    assert float(row["mean"]) == pytest.approx(p.mean(), abs=6e-4)
    assert float(row["sd"]) == pytest.approx(p.std(ddof=1), abs=6e-4)
    assert float(row["ess_bulk"]) == pytest.approx(diagnostics.ess(p, "bulk"), rel=0.01)
    assert float(row["r_hat"]) == pytest.approx(diagnostics.rhat(p), abs=0.01)


def test_ess_and_rhat(posterior):
    idata, p = posterior
    ess, rhat = az.ess(idata), az.rhat(idata)
    assert _value(ess) == pytest.approx(diagnostics.ess(p, "bulk"))
    assert _value(rhat) == pytest.approx(diagnostics.rhat(p))
    # Conjugate Gibbs with a well-mixing record sweep: thousands of effective draws of 2000
    assert 500 < _value(ess) <= 4 * 2000 and abs(_value(rhat) - 1) < 0.01


def _mcse_sd_by_hand(draws: np.ndarray) -> float:
    """The MCSE of the sd by the delta method on the variance, with the ESS of the squared
    deviations (Vehtari et al. 2021; R's posterior::mcse_sd)."""
    squared = (draws - draws.mean()) ** 2
    var = squared.mean()
    var_of_var = ((squared ** 2).mean() - var ** 2) / diagnostics.ess(squared, "mean")
    return float(np.sqrt(var_of_var / var / 4.0))


def test_mcse_of_every_method(posterior):
    idata, p = posterior
    by_hand = {"mean": p.std(ddof=1) / np.sqrt(diagnostics.ess(p, "mean")),
               "sd": _mcse_sd_by_hand(p)}
    for method, expected in by_hand.items():
        assert _value(az.mcse(idata, method=method)) == pytest.approx(expected, rel=1e-6), \
            method
        assert diagnostics.mcse(p, method) == pytest.approx(expected, rel=1e-6), method
    quantile = _value(az.mcse(idata, method="quantile", prob=0.05))
    assert quantile == pytest.approx(diagnostics.mcse(p, "quantile", 0.05))
    assert 0 < quantile < p.std()


def test_mcse_of_the_sd_matches_theory_for_independent_draws():
    """For independent normal draws the sd's standard error is sigma / sqrt(2 N): checks the
    estimator itself, not only that two routes agree."""
    draws = np.random.default_rng(11).normal(0.0, 2.0, size=(4, 5000))
    idata = az.from_dict({"posterior": {"x": draws}}) if diagnostics.ARVIZ_1 else \
        az.from_dict(posterior={"x": draws})
    assert _value(az.mcse(idata, method="sd"), "x") == pytest.approx(
        2.0 / np.sqrt(2 * draws.size), rel=0.1)


def test_sample_stats_the_readme_reads(posterior):
    idata, _ = posterior
    stats = diagnostics.group(idata, "sample_stats")
    accept = stats["accept_rate"].values
    assert accept.shape == (4, 500) and np.all((accept > 0) & (accept <= 1))
    # Ju et al. Prop. 3.1: under epsilon-DP every acceptance probability is >= exp(-epsilon)
    assert float(stats["min_accept_prob"].min()) >= np.exp(-0.5) - 1e-12


def test_trace_plots_are_written(posterior, tmp_path):
    pytest.importorskip("matplotlib", reason="plots need matplotlib, the optional extra "
                                             "dawrap[plots]")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    idata, _ = posterior
    diagnostics.plot_trace(idata, tmp_path / "trace.png")
    assert (tmp_path / "trace.png").stat().st_size > 5000
    plotted = az.plot_trace(idata)  # ArviZ's own call, as a notebook user types it
    assert plotted is not None and plt.get_fignums()
    plt.close("all")


@pytest.mark.parametrize("shape", [(4, 1000), (2, 7), (3, 51), (5, 4), (1, 100), (2, 3)])
@pytest.mark.parametrize("shift", [0.0, 1.0])
def test_rhat_is_arviz_rhat(shape, shift):
    """dawrap's NumPy R-hat (no numba compile per process) gives ArviZ's numbers, odd draw
    counts, too few chains or draws (NaN) and chains that disagree included."""
    draws = np.random.default_rng(sum(shape)).standard_t(3, size=shape)
    draws = draws + shift * np.arange(shape[0])[:, None]
    if diagnostics.ARVIZ_1:
        expected = float(diagnostics._array_stats().rhat(draws, chain_axis=0, draw_axis=1))
    else:
        expected = float(az.rhat(draws))
    got = diagnostics.rhat(draws)
    assert (np.isnan(got) and np.isnan(expected)) or got == pytest.approx(expected, rel=1e-12)


def _expected_ess_rhat(draws):
    if diagnostics.ARVIZ_1:
        stats = diagnostics._array_stats()
        ess = float(stats.ess(draws, chain_axis=0, draw_axis=1, method="bulk"))
        rhat = float(stats.rhat(draws, chain_axis=0, draw_axis=1))
    else:
        ess, rhat = float(az.ess(draws, method="bulk")), float(az.rhat(draws))
    return ess, (rhat if draws.shape[0] > 1 else np.nan)


@pytest.mark.parametrize("chains, draws", [(4, 1000), (2, 7), (3, 51), (1, 100), (2, 4)])
def test_convergence_is_arviz_bulk_ess_and_rhat_for_every_scalar(chains, draws):
    """The vectorised check behind dw.sample's warning gives ArviZ's bulk ESS and R-hat for
    each scalar: iid, strongly autocorrelated (AR(1) with phi 0.95), anticorrelated,
    Metropolis-like ties, chains that disagree; constant or non-finite scalars give NaN."""
    rng = np.random.default_rng(chains * draws)
    noise = rng.standard_t(4, size=(chains, draws, 4))
    x = np.empty((chains, draws, 7))
    for k, phi in enumerate((0.0, 0.95, -0.6)):
        x[:, 0, k] = noise[:, 0, k]
        for t in range(1, draws):
            x[:, t, k] = phi * x[:, t - 1, k] + noise[:, t, k]
    x[..., 3] = np.round(noise[..., 3])                             # ties
    x[..., 4] = noise[..., 0] + np.arange(chains)[:, None]          # chains disagree
    x[..., 5] = 2.5                                                 # constant
    x[..., 6] = noise[..., 1]
    x[0, 0, 6] = np.nan
    rhat, ess = diagnostics.convergence(x.reshape(chains, draws, 7, 1))
    assert rhat.shape == ess.shape == (7, 1)
    for k in range(5):
        expected_ess, expected_rhat = _expected_ess_rhat(x[..., k])
        assert ess[k, 0] == pytest.approx(expected_ess, rel=1e-10, nan_ok=True), k
        assert rhat[k, 0] == pytest.approx(expected_rhat, rel=1e-10, nan_ok=True), k
    assert np.isnan(ess[5:]).all() and np.isnan(rhat[5:]).all()
    assert diagnostics.rhat(x[..., 4]) == pytest.approx(rhat[4, 0], nan_ok=True)


def test_average_ranks_are_scipys_with_ties():
    from scipy.stats import rankdata
    rng = np.random.default_rng(3)
    for rows in (rng.normal(size=(4, 500)), rng.integers(0, 3, (5, 40)).astype(float),
                 np.array([[1.0, np.inf, -np.inf, 1.0, 0.0]]), np.zeros((2, 7))):
        assert np.array_equal(diagnostics._average_ranks(rows),
                              rankdata(rows, axis=1, method="average"))


@pytest.mark.skipif(not diagnostics.ARVIZ_1, reason="ArviZ 0.x builds its InferenceData in "
                    "the package, which imports everything")
def test_a_run_imports_only_arviz_data_layer():
    """With ArviZ 1.x, ``dw.sample`` builds its result with ``arviz_base`` and checks it with
    numpy: neither ``arviz_stats`` and ``arviz_plots`` (0.7 s) nor ``scipy.stats`` (0.5 s)
    is imported until asked for (issue 27: time to a first result)."""
    code = ("import sys, dawrap as dw\n"
            "from dawrap.models import beta_binomial\n"
            "idata = dw.sample(beta_binomial.model(), beta_binomial.laplace(1.0), 30.0, 100,\n"
            "                  draws=50, tune=10, chains=2, seed=1, progress=False)\n"
            "print(sorted(m for m in ('arviz', 'arviz_stats', 'arviz_plots', 'scipy.stats')\n"
            "             if m in sys.modules), type(idata).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()[-1]
    assert out == "[] DataTree"
