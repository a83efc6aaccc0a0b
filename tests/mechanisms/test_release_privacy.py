"""Releases for publication (``secure=True``): every record's contribution is bounded before
any noise is drawn, the result is DP for every input, and nothing raised or returned besides
the release depends on the confidential values."""
import itertools
import math
import subprocess
import sys

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dawrap as dw
import dawrap.mechanisms.discrete
from dawrap.mechanisms import Box, Sparse
from dawrap.models import beta_binomial, poisson_gamma

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


@numba.njit
def identity(x_i, out):
    out[0] = x_i[0]


@numba.njit
def one_hot(x_i, out):
    # A categorical record's histogram contribution; a careless one for the tests: it writes
    # every coordinate from the record's three floats, whatever they hold.
    for j in range(3):
        out[j] = x_i[j]


@pytest.fixture
def no_noise(monkeypatch):
    """Zero noise on the secure path, so that a release shows the total it was added to."""
    monkeypatch.setattr(dawrap.mechanisms.discrete, "discrete_laplace", lambda scale, rng=None: 0)
    monkeypatch.setattr(dawrap.mechanisms.discrete, "discrete_gaussian", lambda sigma, rng=None: 0)


def _box_total(x, lower, upper, statistic=lambda v: v):
    """The reference bounded total: NaN counts as the box value nearest zero, the rest is
    rounded half to even and clamped. Written independently of dawrap's projection."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    total = 0
    for v in x:
        c = statistic(v)
        if math.isnan(c):
            c = min(max(0, lower), upper)
        elif math.isinf(c):
            c = upper if c > 0 else lower
        else:
            c = min(max(int(np.rint(c)), lower), upper)
        total += c
    return total


# -- the examples -----------------------------------------------------------------------

@pytest.mark.slow
def test_fractional_records_neither_fail_nor_reveal_the_total(no_noise):
    """31 records of 0.5: the old release raised 'the confidential total is [15.5]'."""
    mech = beta_binomial.geometric(1.0)
    x = np.r_[np.full(31, 0.5), np.zeros(69)]
    release = mech.release(x, secure=True)        # no error, whatever the data
    assert release.shape == (1,) and release[0] == 0.0   # 0.5 rounds (half to even) to 0
    assert mech.bounded_total(x) == [0]


def test_records_above_the_sensitivity_are_clamped_before_noise(no_noise):
    """Records of 5 under sensitivity 1: the old release added noise to 500 (not DP)."""
    mech = beta_binomial.geometric(1.0)
    assert mech.release(np.full(100, 5.0), secure=True)[0] == 100.0
    assert mech.release(np.full(100, -7.0), secure=True)[0] == 0.0


def test_secure_release_is_noisy_and_integer():
    """Without the patch: the real exact samplers, integer output around the bounded total."""
    mech = beta_binomial.geometric(2.0)
    draws = np.array([mech.release(np.full(50, 5.0), secure=True)[0] for _ in range(300)])
    assert np.all(draws == np.round(draws))
    assert abs(draws.mean() - 50.0) < 1.0 and draws.std() > 0.2   # noise sd 0.74 around 50
    dg = dw.DiscreteGaussian(identity, sigma=1.5, contribution=(0, 3))
    draws = np.array([dg.release(np.full(10, 9.0), secure=True)[0] for _ in range(300)])
    assert np.all(draws == np.round(draws)) and abs(draws.mean() - 30.0) < 0.6


@pytest.mark.slow
def test_secure_release_depends_only_on_the_projection(no_noise):
    mech = poisson_gamma.geometric(1.0, c=3)
    wild = np.array([np.nan, -5.0, 7.0, 2.0, np.inf, -np.inf, 1e300, 2.5, 1.5, -0.4])
    tame = np.array([0.0, 0.0, 3.0, 2.0, 3.0, 0.0, 3.0, 2.0, 2.0, 0.0])
    assert mech.bounded_total(wild) == mech.bounded_total(tame) == [15]
    assert mech.release(wild, secure=True)[0] == mech.release(tame, secure=True)[0] == 15.0


# -- errors on the secure path depend on nothing but the mechanism, the type and the shape --------

@pytest.mark.parametrize("x", [np.array([1.0, np.nan]), np.array([15.5, 0.0]), np.ones(3)])
def test_errors_come_before_the_data_are_read(x):
    with pytest.raises(ValueError, match="no safe release path") as err:
        beta_binomial.laplace(1.0).release(x, secure=True)
    assert "15.5" not in str(err.value)
    with pytest.raises(ValueError, match=r"contribution domain.*contribution=\(lower, upper\)"):
        dw.Geometric(identity, 1.0).release(x, secure=True)
    with pytest.raises(ValueError, match="contribution domain"):
        dw.DiscreteGaussian(identity, 2.0).release(x, secure=True)
    with pytest.raises(ValueError, match="a seed would make the noise predictable"):
        beta_binomial.geometric(1.0).release(x, seed=1, secure=True)


@pytest.mark.parametrize("x, error", [
    (np.array(["a", "b"]), TypeError),
    (np.zeros((2, 2, 2)), ValueError),
    (np.zeros(0), ValueError),
    ([[1.0], [1.0, 2.0]], ValueError),
    (np.array([1.0, None], dtype=object), TypeError),
])
def test_only_type_and_shape_can_stop_a_secure_release(x, error):
    with pytest.raises(error, match="x must"):
        beta_binomial.geometric(1.0).release(x, secure=True)


@pytest.mark.slow
def test_huge_python_integers_are_projected_not_refused(no_noise):
    x = np.array([10 ** 400, -10 ** 400, 1, 2 ** 70], dtype=object)
    assert beta_binomial.geometric(1.0).release(x, secure=True)[0] == 3.0


# -- the publication path never reads or writes outside the statistic's arrays ----------------

#: Run in a child process: before the statistic was bounds checked, the record of category
#: 10**6 made the secure release write 8 MB past ``out`` and die with SIGSEGV (categories 5
#: and 6 wrote just past it, silently), and so would the helper's and the reader's records.
OUT_OF_RANGE = """
import numba, numpy as np, dawrap as dw
from dawrap.models import dirichlet_multinomial

@numba.njit
def put(out, k):                 # a helper: its writes are checked too
    out[k] = 1.0

@numba.njit
def via_helper(x_i, out):
    put(out, int(x_i[0]))

@numba.njit
def reads_past(x_i, out):        # reads the record (of one value) at an index it holds
    k = int(x_i[0])
    out[k % 5] = 1.0 + 0.0 * x_i[k // 5]

valid = (np.arange(100) % 5).astype(float)
for statistic in (dirichlet_multinomial.one_hot, via_helper, reads_past):
    mech = dw.Geometric(statistic, epsilon=1, sensitivity=2, size=5, contribution=dw.Sparse(1))
    for bad in (1e6, -1e6, 5.0, 6.0, -6.0, 1e300, np.nan, np.inf, 3e9):
        x = np.r_[valid, bad]
        total = mech.bounded_total(x)
        assert total == [20] * 5, (statistic, bad, total)
        release = mech.release(x, secure=True)
        assert release.shape == (5,) and np.all(release == np.round(release))
print("ok")
"""


def test_a_record_beyond_the_statistic_is_projected_not_written():
    """Issue 29 item 1: 100 valid records and one of category 10**6 (or 5, 6, -6, NaN, ...)
    under a one-hot statistic of 5 cells: the bad record contributes the domain's value
    nearest zero (no cell) and the release happens, the same way whatever it holds."""
    run = subprocess.run([sys.executable, "-c", OUT_OF_RANGE], capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-3000:]}"
    assert run.stdout.strip() == "ok"


@numba.njit
def loud(x_i, out):
    if x_i[0] > 3.0:
        raise ValueError("confidential record", x_i[0])
    out[0] = x_i[0]


def test_a_record_on_which_the_statistic_raises_counts_as_nan(no_noise):
    """Issue 29 item 3: the release used to raise (naming the exception) exactly when some
    record made the statistic raise, so whether a release came out depended on the data."""
    mech = dw.Geometric(loud, 1.0, sensitivity=5.0, contribution=(0, 5))
    assert mech.release(np.array([1.0, 15.5, 2.0]), secure=True)[0] == 3.0
    # Two (and more) such records in one release: numba 0.68 let the second exception escape
    # a try inside the record loop.
    assert mech.bounded_total(np.array([1.0, 15.5, 16.0, 2.0, 9.0])) == [3]
    # NaN becomes the domain's value nearest zero: 1 in [1, 5], -1 in [-4, -1]
    assert dw.Geometric(loud, 1.0, sensitivity=4.0, contribution=(1, 5)).bounded_total(
        [1.0, 15.5, 2.0]) == [4]
    assert dw.Geometric(loud, 1.0, sensitivity=3.0, contribution=(-4, -1)).bounded_total(
        [-2.0, 15.5]) == [-3]
    # A simulation refuses such a record, without its value or the exception's message.
    with pytest.raises(ValueError, match="raises or indexes an array out of range") as err:
        mech.release(np.array([1.0, 15.5]), seed=0)
    assert "15.5" not in str(err.value) and "confidential" not in str(err.value)


def test_a_statistic_that_cannot_be_bounds_checked_is_refused_before_the_data():
    """A statistic reaching a function through a module attribute (or numba.carray, a
    cfunc, ...) could touch memory unchecked: refused, with one message for every x."""
    @numba.njit
    def through_a_module(x_i, out):
        beta_binomial.count(x_i, out)

    @numba.njit
    def through_numba(x_i, out):
        out[0] = numba.carray(out.ctypes.data, 1)[0] + x_i[0]

    for statistic, name in ((through_a_module, "'beta_binomial'"), (through_numba, "'numba'")):
        mech = dw.Geometric(statistic, 1.0, contribution=(0, 1))
        messages = set()
        for x in (np.zeros(3), np.array([np.nan, 1e300, 7.0])):
            with pytest.raises(TypeError, match=f"global {name}, a builtins.module") as err:
                mech.release(x, secure=True)
            messages.add(str(err.value))
        assert len(messages) == 1


@pytest.mark.slow
def test_simulated_releases_do_not_print_the_total_either():
    with pytest.raises(ValueError, match="not an integer") as err:
        dw.Geometric(identity, 1.0).release(np.r_[np.full(31, 0.5), np.zeros(69)], seed=0)
    assert "15.5" not in str(err.value)
    # With a declared domain, a simulation refuses out-of-domain records (without counts or
    # values) instead of simulating a release that could never be published.
    with pytest.raises(ValueError, match="outside the declared contribution domain") as err:
        beta_binomial.geometric(1.0).release(np.full(100, 5.0), seed=0)
    assert "500" not in str(err.value) and "100" not in str(err.value)


def test_simulated_releases_are_unchanged_for_valid_data():
    """The seeded path's draws are those of NumPy's generator as before."""
    x = np.r_[np.ones(30), np.zeros(70)]
    mech = beta_binomial.geometric(0.7)
    rng = np.random.default_rng(4)
    p = 1.0 - math.exp(-0.7)
    expected = 30 + rng.geometric(p, 1) - rng.geometric(p, 1)
    assert mech.release(x, seed=4)[0] == expected[0]


# -- the declaration makes the stated sensitivity true ------------------------------------------

@pytest.mark.parametrize("build, match", [
    (lambda: dw.Geometric(identity, 1.0, sensitivity=1.0, contribution=(0, 5)),
     "sensitivity = 1 is below the L1 diameter 5"),
    (lambda: dw.Geometric(identity, 1.0, sensitivity=3.0, size=2, contribution=(0, 2)),
     "below the L1 diameter 4"),
    (lambda: dw.Geometric(identity, 1.0, sensitivity=1.5, size=3, contribution=Sparse()),
     "below the L1 diameter 2"),
    (lambda: dw.Geometric.from_scale(identity, 1.0, sensitivity=1.0, contribution=(-1, 1)),
     "below the L1 diameter 2"),
    (lambda: dw.DiscreteGaussian.from_zcdp(identity, 0.5, sensitivity=1.0, size=2,
                                           contribution=(0, 1)),
     r"below the L2 diameter sqrt\(2\)"),
    (lambda: dw.Geometric(identity, 1.0, contribution=(0.5, 1)), "whole numbers"),
    (lambda: dw.Geometric(identity, 1.0, contribution=(1, 0)), "lower must be <= upper"),
    (lambda: dw.Geometric(identity, 1.0, contribution=(0, 2.0 ** 60)), "2\\*\\*53"),
    (lambda: dw.Geometric(identity, 1.0, contribution=(0, [1, 1])), "2 upper bounds"),
    (lambda: dw.Geometric(identity, 1.0, size=2, contribution=Sparse(cells=3)), "cells"),
    (lambda: Sparse(1, lower=1, upper=2), "lower <= 0 <= upper"),
])
def test_declarations_are_checked_at_construction(build, match):
    with pytest.raises(ValueError, match=match):
        build()


def test_contribution_must_be_a_domain():
    with pytest.raises(TypeError, match="contribution must be a dawrap.mechanisms.Box"):
        dw.Geometric(identity, 1.0, contribution="0..1")


def test_sensitivity_equal_to_the_diameter_is_accepted():
    assert dw.Geometric(identity, 1.0, sensitivity=2.0, size=2, contribution=(0, 1)).contribution
    dg = dw.DiscreteGaussian.from_zcdp(identity, 0.5, sensitivity=math.sqrt(2.0) + 1e-15,
                                       size=2, contribution=(0, 1))
    assert dg.contribution.diameter_l2_squared() == 2
    one_hot_mech = dw.Geometric(one_hot, 1.0, sensitivity=2.0, size=3, contribution=Sparse())
    assert one_hot_mech.contribution.diameter_l1() == 2


@pytest.mark.parametrize("lower, upper", [(0, [1, 3]), ([0, 1], 3), ([0, -2], [1, 3]), (-1, 2)])
def test_box_diameters_broadcast_a_single_bound(lower, upper):
    """A single bound applies to every coordinate of the other, bound to a size or not (an
    unbound Box(0, [1, 3]) used to report an L1 diameter of 1 instead of 4)."""
    width = np.broadcast_arrays(np.asarray(lower), np.asarray(upper))
    widths = width[1] - width[0]
    box = Box(lower, upper)
    assert box.diameter_l1() == widths.sum()
    assert box.diameter_l2_squared() == (widths ** 2).sum()
    bound = box.bind(widths.size)
    assert (bound.diameter_l1(), bound.diameter_l2_squared()) == (box.diameter_l1(),
                                                                  box.diameter_l2_squared())


@pytest.mark.parametrize("cells, lower, upper, size", [
    (1, 0, 1, 3), (1, 0, 1, 1), (2, 0, 1, 3), (2, -1, 1, 3), (1, -2, 1, 2), (2, -1, 3, 4),
    (3, -2, 2, 4), (2, 0, 2, 2)])
def test_sparse_diameters_are_the_brute_force_ones(cells, lower, upper, size):
    values = range(lower, upper + 1)
    points = [np.array(v) for v in itertools.product(values, repeat=size)
              if np.count_nonzero(v) <= cells]
    l1 = max(np.abs(a - b).sum() for a in points for b in points)
    l2 = max(((a - b) ** 2).sum() for a in points for b in points)
    domain = Sparse(cells, lower, upper).bind(size)
    assert domain.diameter_l1() == l1 and domain.diameter_l2_squared() == l2


def test_sparse_projection_keeps_the_largest_cells(no_noise):
    mech = dw.Geometric(one_hot, 1.0, sensitivity=2.0, size=3, contribution=Sparse())
    x = np.array([[3.0, 0.0, 0.2], [1.0, 1.0, 0.0], [np.nan, np.nan, 1.0], [-1.0, 0.4, 0.6],
                  [np.inf, np.nan, -np.inf]])
    # rows project to [1,0,0], [1,0,0] (first wins a tie), [0,0,1], [0,0,1], [1,0,0]
    assert mech.bounded_total(x) == [3, 0, 2]
    assert list(mech.release(x, secure=True)) == [3.0, 0.0, 2.0]


# -- property: every float database gets an integer release, through the projection only --------

records = hnp.arrays(np.float64, st.integers(1, 40), elements=st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-3, 8), st.integers(-3, 8).map(float), st.just(0.5), st.just(1.5)))

MECHANISMS = [
    (lambda: beta_binomial.geometric(0.5), 0, 1, lambda v: v),
    # numba's min(nan, 3.0) is nan, as Python's: the reference agrees with the statistic.
    (lambda: poisson_gamma.geometric(1.0, c=3), 0, 3, lambda v: min(v, 3.0)),
    (lambda: dw.DiscreteGaussian.from_zcdp(identity, 0.1, sensitivity=4.0,
                                           contribution=(-2, 2)), -2, 2, lambda v: v),
    # a statistic that raises on records above 3: they count as NaN (nearest zero, 1)
    (lambda: dw.Geometric(loud, 1.0, sensitivity=3.0, contribution=(1, 4)), 1, 4,
     lambda v: math.nan if v > 3.0 else v),
]


@pytest.mark.slow
@SETTINGS
@given(x=records, which=st.integers(0, len(MECHANISMS) - 1))
def test_every_float_database_gets_an_integer_release(x, which, no_noise):
    build, lower, upper, statistic = MECHANISMS[which]
    mech = build()
    try:
        release = mech.release(x, secure=True)
    except Exception as err:  # noqa: BLE001 - any exception here is a failure
        pytest.fail(f"a secure release raised {type(err).__name__}: {err}")
    assert release.shape == (1,) and release[0] == round(release[0])
    # With the noise switched off the release is the reference bounded total: it depends on
    # values outside the domain only through their projection.
    assert release[0] == _box_total(x, lower, upper, statistic)


@pytest.mark.slow
@SETTINGS
@given(x=records, sensitivity=st.floats(0.5, 3.0))
def test_no_error_reveals_the_total(x, sensitivity):
    """Wherever the secure path refuses (here: no declared domain, a continuous mechanism), its
    message is the same for every database."""
    messages = set()
    for mech in (dw.Geometric(identity, 1.0, sensitivity), beta_binomial.laplace(1.0)):
        with pytest.raises(ValueError) as err:
            mech.release(x, secure=True)
        messages.add(str(err.value))
    assert messages == {str(e) for e in _reference_messages(sensitivity)}


def _reference_messages(sensitivity):
    out = []
    for mech in (dw.Geometric(identity, 1.0, sensitivity), beta_binomial.laplace(1.0)):
        try:
            mech.release(np.zeros(1), secure=True)
        except ValueError as err:
            out.append(err)
    return out


# -- streaming: the contributions of a long histogram are never held as one (n, size) array --

def _one_array_total(mech, x):
    """The bounded total from one (n, size) array of contributions, with the Sparse ranking
    applied to every row (the definition, before the records were streamed in chunks)."""
    from dawrap.mechanisms.additive import record_contributions

    c = record_contributions(np.asarray(x, dtype=np.float64), mech.statistic, mech.size)
    domain = mech.contribution
    lower, upper = domain.lower.astype(float), domain.upper.astype(float)
    with np.errstate(all="ignore"):
        c = np.clip(np.where(np.isnan(c), np.clip(0.0, lower, upper), np.rint(c)), lower,
                    upper)
    if isinstance(domain, Sparse):
        order = np.argsort(-np.abs(c), axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(c.shape[1])[None, :], axis=1)
        c[rank >= domain.cells] = 0.0
    return [sum(int(v) for v in column) for column in c.astype(np.int64).T]


STREAMED = [
    lambda: dw.Geometric(one_hot, 1.0, sensitivity=15.0, size=3, contribution=(-2, 3)),
    lambda: dw.Geometric(one_hot, 1.0, sensitivity=2.0, size=3, contribution=Sparse()),
    lambda: dw.DiscreteGaussian.from_zcdp(one_hot, 0.5, sensitivity=4.5, size=3,
                                          contribution=Sparse(2, -1, 2)),
]
histograms = hnp.arrays(np.float64, st.tuples(st.integers(1, 30), st.just(3)),
                        elements=st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                                           st.integers(-3, 4).map(float), st.just(0.5),
                                           st.just(0.0), st.just(-0.0)))


@SETTINGS
@given(x=histograms, which=st.integers(0, len(STREAMED) - 1), chunk=st.integers(1, 12))
def test_streamed_contributions_give_the_one_array_total(x, which, chunk, no_noise,
                                                         monkeypatch):
    from dawrap.mechanisms import additive

    monkeypatch.setattr(additive, "CONTRIBUTION_CHUNK", chunk)
    mech = STREAMED[which]()
    expected = _one_array_total(mech, x)
    assert mech.bounded_total(x) == expected
    assert list(mech.release(x, secure=True)) == [float(v) for v in expected]


def test_streamed_totals_stay_exact_beyond_int64(no_noise, monkeypatch):
    from dawrap.mechanisms import additive

    monkeypatch.setattr(additive, "CONTRIBUTION_CHUNK", 7)
    mech = dw.Geometric(identity, 9007.0, sensitivity=2.0 ** 53, contribution=(0, 2 ** 53))
    x = np.full((600, 1), np.inf)  # 600 * 2**53 > 2**62: the exact Python-integer sum
    assert mech.bounded_total(x) == [600 * 2 ** 53]


@pytest.mark.slow
def test_a_long_histogram_is_streamed_in_bounded_chunks(no_noise, monkeypatch):
    """A secure release and a simulated one of 10^5 cells from 3000 records: the compiled
    statistic only ever sees chunks of at most CONTRIBUTION_CHUNK contributions (the one
    (n, size) array would be 2.4 GB), and the totals are the counts."""
    from dawrap.mechanisms import additive
    from dawrap.models import dirichlet_multinomial as dm

    k, n = 100_000, 3000
    seen, real = [], additive.record_contributions

    def watched(x, statistic, size):
        seen.append(x.shape[0] * size)
        return real(x, statistic, size)

    monkeypatch.setattr(additive, "record_contributions", watched)
    mech = dw.Geometric(dm.one_hot, 1.0, sensitivity=2.0, size=k, contribution=Sparse())
    x = np.random.default_rng(0).integers(0, k, n).astype(float)[:, None]
    counts = np.bincount(x[:, 0].astype(int), minlength=k)
    assert mech.bounded_total(x) == counts.tolist()
    assert max(seen) <= additive.CONTRIBUTION_CHUNK
    seen.clear()
    mech.release(x, seed=1)  # the simulation path's domain check, streamed too
    assert seen and max(seen) <= additive.CONTRIBUTION_CHUNK
