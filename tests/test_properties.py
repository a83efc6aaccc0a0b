"""Property-based: malformed input to any entry point is a clean ValueError/TypeError naming
the problem, never a crash inside compiled code or NaN in the output."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial, normal_mean, poisson_gamma

MODEL, MECH = beta_binomial.model(), beta_binomial.laplace(1.0)
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

anything = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 50), st.floats(allow_nan=True),
    st.text(max_size=3), st.lists(st.floats(allow_nan=True, width=32), max_size=3),
    st.just(np.array([[1.0, 2.0]])), st.just(np.array([np.inf])), st.just(object()))


def _clean(call):
    """Run ``call``: it must return or raise ValueError/TypeError; returns the result."""
    try:
        return call()
    except (ValueError, TypeError) as err:
        assert str(err), "an error must say what is wrong"
        return None


def _finite_posterior(idata):
    if idata is not None:
        post = diagnostics.group(idata, "posterior")
        assert all(np.all(np.isfinite(post[v].values)) for v in post.data_vars)


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@SETTINGS
@given(s_dp=anything, n=anything)
def test_sample_release_and_size(s_dp, n):
    _finite_posterior(_clean(lambda: dw.sample(MODEL, MECH, s_dp, n, draws=5, tune=2,
                                               chains=1, seed=0)))


@SETTINGS
@given(draws=anything, tune=anything, chains=anything, seed=anything, cores=anything)
def test_sample_run_settings(draws, tune, chains, seed, cores):
    _finite_posterior(_clean(lambda: dw.sample(MODEL, MECH, 3.0, 10, draws=draws, tune=tune,
                                               chains=chains, seed=seed, cores=cores)))


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
@SETTINGS
@given(init_theta=anything, init_x=anything, method=st.sampled_from(
    ["record", "suffstat", "naive", "nonprivate", "ops", "bogus"]))
def test_sample_starts_and_methods(init_theta, init_x, method):
    _finite_posterior(_clean(lambda: dw.sample(
        MODEL, MECH, 3.0, 2, method=method, init_theta=init_theta, init_x=init_x, draws=5,
        tune=2, chains=1, seed=0, confidential=[0.0, 1.0])))


@SETTINGS
@given(epsilon=anything, sensitivity=anything, size=anything, sigma=anything)
def test_mechanism_constructors(epsilon, sensitivity, size, sigma):
    for build in (lambda: dw.Laplace(beta_binomial.count, epsilon, sensitivity, size=size),
                  lambda: dw.Geometric(beta_binomial.count, epsilon, sensitivity, size=size),
                  lambda: dw.Gaussian(beta_binomial.count, sigma, size=size),
                  lambda: dw.DiscreteGaussian(beta_binomial.count, sigma, size=size),
                  lambda: dw.Gaussian.from_zcdp(beta_binomial.count, epsilon, sensitivity),
                  lambda: dw.Gaussian.from_gdp(beta_binomial.count, epsilon, sensitivity)):
        mech = _clean(build)
        if mech is not None:
            assert np.all(np.isfinite(mech.params))


@SETTINGS
@given(x=anything, seed=st.one_of(st.none(), st.integers(0, 5)))
def test_release(x, seed):
    out = _clean(lambda: MECH.release(x, seed=seed))
    if out is not None:
        assert np.all(np.isfinite(out))


@SETTINGS
@given(a=anything, b=anything, c=anything)
def test_model_constructors(a, b, c):
    _clean(lambda: beta_binomial.model(a, b))
    _clean(lambda: poisson_gamma.model(a, b))
    _clean(lambda: poisson_gamma.laplace(a, c))
    _clean(lambda: normal_mean.model(a, b, c))
    _clean(lambda: normal_mean.laplace(a, b, c))


@SETTINGS
@given(params=anything, record_size=anything)
def test_model_registration(params, record_size):
    _clean(lambda: dw.Model(params=params, record_size=record_size,
                            draw_record=beta_binomial.draw_record, draw_theta=MODEL.draw_theta,
                            draw_prior=MODEL.draw_prior))


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["demo", "--n", "0"], ["demo", "--epsilon", "nan"],
                                  ["demo", "--draws", "-3"], ["demo", "--p", "1.5"]])
def test_cli_rejects_bad_options(argv, capsys, tmp_path):
    from dawrap.cli import main

    try:
        code = main(argv + ["--out", str(tmp_path)])
    except SystemExit as exit_:  # argparse's own checks (counts) exit as the script would
        code = exit_.code
    assert code == 2
    assert "error:" in capsys.readouterr().err


@SETTINGS
@given(n=anything, trials=anything, seed=anything, index=anything,
       methods=st.one_of(anything, st.just(["suffstat", "record:fast"]), st.just([])))
def test_calibration_study_arguments(n, trials, seed, index, methods):
    from dawrap.studies.calibration import calibrate

    out = _clean(lambda: calibrate(
        MODEL, MECH, n, methods, trials=trials, seed=seed, index=index, executor="serial",
        sample_kwargs={"draws": 5, "tune": 1, "chains": 1}))
    if out is not None:
        assert all(np.all((u >= 0) & (u <= 1)) for u in out.pit.values())
