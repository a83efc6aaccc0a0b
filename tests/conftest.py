"""RunOptions test helpers: compare MCMC draws with an exact posterior within Monte Carlo error;
simulate Ctrl-C at a chosen point."""
import contextlib

import numpy as np
import pytest

from dawrap import diagnostics

#: Tolerance in Monte Carlo standard errors. Under a correct sampler each comparison fails with
#: probability about 6e-5; seeds are fixed, so a run is deterministic either way.
Z = 4.0
PROBS = (0.05, 0.5, 0.95)


def pytest_collection_modifyitems(config, items):
    """Run the slow tests first (a stable sort: each group keeps its order). pytest-xdist hands
    the tests out in collection order, so a long test collected last keeps one worker busy
    while the other idles; started first, the long tests are shared out and the quick ones
    fill in at the end (the longest-first rule for scheduling on parallel machines)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def discrepancies(draws: np.ndarray, exact, z: float = Z, probs=PROBS, min_ess: float = 400.0):
    """Rows (what, estimate, exact value, mcse) where ``draws`` (chain, draw) disagree with
    ``exact`` (mean/std/ppf) by more than ``z`` Monte Carlo standard errors."""
    draws = np.asarray(draws, dtype=float)
    ess = diagnostics.ess(draws, "bulk")
    assert ess >= min_ess, f"ESS {ess:.0f} is too small for a meaningful comparison"
    rows = [("mean", draws.mean(), exact.mean(), diagnostics.mcse(draws, "mean")),
            ("sd", draws.std(ddof=1), exact.std(), diagnostics.mcse(draws, "sd"))]
    rows += [(f"q{p:g}", np.quantile(draws, p), exact.ppf(p), diagnostics.mcse(draws, "quantile", p))
             for p in probs]
    return [r for r in rows if abs(r[1] - r[2]) > z * r[3]]


def pooled_chi_square_p(observed, probabilities, smallest: float = 5.0) -> float:
    """The chi-square test's p-value of counts ``observed`` against ``probabilities`` (which
    sum to 1 over the categories listed), categories expected fewer than ``smallest`` times
    pooled into one (the chi-square law is no approximation for them: one count of 5 where
    0.7 are expected alone gives p = 1e-5)."""
    from scipy import stats
    observed = np.asarray(observed, dtype=float)
    expected = observed.sum() * np.asarray(probabilities, dtype=float)
    small = expected < smallest
    if small.any():
        observed = np.r_[observed[~small], observed[small].sum()]
        expected = np.r_[expected[~small], expected[small].sum()]
    if observed.size < 2:
        return 1.0
    return float(stats.chi2.sf(np.sum((observed - expected) ** 2 / expected),
                               observed.size - 1))


@pytest.fixture
def chi_square_p():
    """:func:`pooled_chi_square_p`."""
    return pooled_chi_square_p


@pytest.fixture
def check_posterior():
    """Assert that draws agree with an exact posterior within ``Z`` Monte Carlo errors."""

    def check(draws, exact, **kwargs):
        bad = discrepancies(draws, exact, **kwargs)
        assert not bad, "disagreement with the exact posterior (what, draws, exact, mcse): " + \
            "; ".join(f"{w}: {e:.6g} vs {x:.6g} (mcse {m:.2g})" for w, e, x, m in bad)

    return check


@pytest.fixture
def find_discrepancies():
    return discrepancies


def posterior_draws(idata, name: str) -> np.ndarray:
    return diagnostics.group(idata, "posterior")[name].values


@pytest.fixture
def interrupted():
    """``with interrupted(module, "name", on_call=k):``: inside the block, ``module.name``
    raises KeyboardInterrupt on its k-th call (as Ctrl-C would there); restored after."""

    @contextlib.contextmanager
    def patch(module, name: str, on_call: int):
        real, calls = getattr(module, name), [0]

        def interrupting(*args, **kwargs):
            calls[0] += 1
            if calls[0] == on_call:
                raise KeyboardInterrupt
            return real(*args, **kwargs)

        setattr(module, name, interrupting)
        try:
            yield
        finally:
            setattr(module, name, real)

    return patch


@pytest.fixture
def ctrl_c_at(monkeypatch):
    """``with ctrl_c_at(k):``: inside the block, the record runner's chunk that starts at
    iteration ``k`` or later first runs ``action()`` (default: raises KeyboardInterrupt, as
    Ctrl-C would there; the chunks end at checkpoints); restored after."""

    @contextlib.contextmanager
    def patch(iteration: int, action=None):
        from dawrap.runner import record as run_record

        real = run_record._advance

        def advance(setup, rng, state, start, *args):
            if start >= iteration:
                if action is None:
                    raise KeyboardInterrupt
                action()
            return real(setup, rng, state, start, *args)

        with monkeypatch.context() as m:
            m.setattr(run_record, "_advance", advance)
            yield

    return patch


@pytest.fixture
def draws_of():
    """``draws_of(idata, name)``: the posterior draws of one scalar parameter, (chain, draw)."""
    return posterior_draws


@pytest.fixture(autouse=True)
def public_entry_points_restored():
    """After every test (and after its monkeypatch is undone): ``dw.sample`` and
    ``dw.calibrate`` are the real functions. A stand-in patched in the wrong order stays behind
    through dawrap's lazy import and fails a later test in the same process, which one
    depending on how pytest-xdist distributes them (tests/test_cli.py::no_sampling)."""
    yield
    import sys
    dawrap = sys.modules.get("dawrap")
    if dawrap is None:
        return
    for name, module in (("sample", "dawrap.sampling"), ("calibrate", "dawrap.studies.calibration")):
        source = sys.modules.get(module)
        if source is not None and name in vars(dawrap):
            assert vars(dawrap)[name] is getattr(source, name), \
                f"dawrap.{name} is still a stand-in after the test: patch dawrap.{name} " \
                f"before {module}.{name}"
