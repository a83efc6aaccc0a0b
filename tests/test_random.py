"""dw.random: conjugate draws that return NaN instead of hanging, exact for tiny shapes, and
bit-identical to the generator's own draws for ordinary arguments."""
import math

import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap.random import guide_by_counting, guide_by_merging


@numba.njit
def _betas(rng, a, b, k):
    out = np.empty(k)
    for i in range(k):
        out[i] = dw.random.beta(rng, a, b)
    return out


@numba.njit
def _generator_betas(rng, a, b, k):
    out = np.empty(k)
    for i in range(k):
        out[i] = rng.beta(a, b)
    return out


@pytest.mark.parametrize("a, b", [(math.nan, math.nan), (math.nan, 1.0), (0.0, 1.0),
                                  (-1.0, 2.0), (math.inf, 1.0), (1.0, -math.inf)])
def test_invalid_shapes_give_nan_at_once(a, b):
    rng = np.random.default_rng(0)
    assert np.isnan(dw.random.beta(rng, a, b))
    assert np.isnan(dw.random.beta(rng, b, a))
    bad = a if not 0 < a < math.inf else b
    assert np.isnan(dw.random.gamma(rng, bad, 1.0))
    assert np.isnan(dw.random.gamma(rng, 1.0, bad))


def test_ordinary_shapes_are_the_generators_own_draws():
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    assert np.array_equal(_betas(a, 2.5, 30.5, 500), _generator_betas(b, 2.5, 30.5, 500))


@pytest.mark.parametrize("a", [5e-4, 1e-12, 1e-20])
def test_tiny_shapes_are_drawn_exactly(a):
    """Beta(a, 1) has cdf t^a: the fraction of draws below t matches it within 4.5 binomial
    standard errors at points spanning 300 orders of magnitude (numba's own beta never
    returns below a ~ 1e-10)."""
    x = _betas(np.random.default_rng(1), a, 1.0, 40_000)
    for t in (1e-300, 1e-100, 1e-10, 0.5):
        p = t ** a
        se = math.sqrt(max(p * (1 - p), 1e-12) / x.size) + 1e-12
        assert abs(np.mean(x <= t) - p) <= 4.5 * se + 1.0 / x.size, (t, np.mean(x <= t), p)
    # and symmetric: Beta(a, a) puts half its mass on each side of 1/2
    y = _betas(np.random.default_rng(2), a, a, 40_000)
    assert abs(np.mean(y > 0.5) - 0.5) <= 4.5 * math.sqrt(0.25 / y.size)


# -- categorical tables: the same index as the O(K) scan, for every uniform ------------------

def _scan(u, p):
    """The O(K) scan of the built-in categorical draws (dirichlet_multinomial.draw_record)."""
    cumulative = 0.0
    for j in range(len(p) - 1):
        cumulative += p[j]
        if u < cumulative:
            return j
    return len(p) - 1


def _scan_all(uniforms, p):
    """:func:`_scan` of each uniform, its running sums added in the same order."""
    sums, total = [], 0.0
    for v in p[:-1]:
        total += v
        sums.append(total)
    below = np.asarray(uniforms)[:, None] < np.array(sums)[None, :]
    return [int(row.argmax()) if row.any() else len(p) - 1 for row in below]


def _critical_uniforms(p, size):
    """Uniforms where an off-by-one would show: every running sum and slice end, and the
    floats just below and above each (clipped to [0, 1))."""
    points = np.concatenate([np.cumsum(p), np.arange(size) / size, [0.0, 0.5]])
    points = points[np.isfinite(points)]
    near = np.concatenate([points, np.nextafter(points, -1.0), np.nextafter(points, 2.0)])
    return near[(near >= 0.0) & (near < 1.0)]


TABLE_CASES = {
    "uniform 5": np.full(5, 0.2),
    "power of two": np.full(8, 0.125),
    "one more than a power of two": np.random.default_rng(0).dirichlet(np.ones(9)),
    "one category": np.array([1.0]),
    "two": np.array([0.3, 0.7]),
    "zeros": np.array([0.0, 0.5, 0.0, 0.0, 0.5, 0.0]),
    "one cell": np.array([0.0, 0.0, 1.0, 0.0]),
    "tiny and large": np.array([1e-300, 1e-17, 1.0 - 2e-17, 1e-17]),
    "sums below 1": np.array([0.25, 0.25, 0.25]),
    "sums above 1": np.array([0.5, 0.5, 0.5]),
    "sparse 1000": np.random.default_rng(1).dirichlet(np.full(1000, 0.01)),
    "dense 3000": np.random.default_rng(2).dirichlet(np.ones(3000)),
    # not probabilities: the table must still give the scan's index (the merge-like pass)
    "negative": np.array([0.6, -0.2, 0.3, 0.3]),
    "nan": np.array([0.2, np.nan, 0.8]),
}


@pytest.mark.parametrize("case", sorted(TABLE_CASES))
def test_categorical_table_gives_the_scans_index_for_every_uniform(case):
    p = TABLE_CASES[case]
    cumulative, guide = dw.random.categorical_table(p)
    assert guide.shape == (dw.random.guide_size(len(p)),) and len(p) / 2 < len(guide) <= len(p)
    uniforms = np.concatenate([_critical_uniforms(p, len(guide)),
                               np.random.default_rng(3).random(2000)])
    got = [dw.random.lookup(u, cumulative, guide) for u in uniforms]
    assert got == _scan_all(uniforms, p)


@pytest.mark.parametrize("case", ["zeros", "one cell", "sparse 1000", "dense 3000",
                                  "tiny and large", "sums above 1"])
def test_both_ways_of_filling_the_guide_agree(case):
    # The histogram (p >= 0, non-decreasing sums) and the merge-like pass (any sums, taken
    # for a negative or NaN entry) must build the same guide, at any power-of-two size
    # (slice g of G is slice 2g of 2G).
    cumulative, guide = dw.random.categorical_table(TABLE_CASES[case])
    for size in (len(guide), 2 * len(guide), 4 * len(guide)):
        counted, merged = np.empty(size, np.int32), np.empty(size, np.int32)
        guide_by_counting(cumulative, counted)
        guide_by_merging(cumulative, merged)
        assert np.array_equal(counted, merged)
        assert np.array_equal(counted[::size // len(guide)], guide)


def test_categorical_draws_are_the_scans_draws_and_the_table_rows_work():
    # One uniform per draw, the scan's index: the same stream gives the same draws.
    p = np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])
    cumulative = np.empty(p.shape)
    guide = np.empty((2, dw.random.guide_size(3)), dtype=np.int32)
    for a in range(2):
        dw.random.fill_categorical_table(p[a], cumulative[a], guide[a])
    rng, reference = np.random.default_rng(4), np.random.default_rng(4)
    for a in (0, 1, 1, 0):
        for _ in range(200):
            assert (dw.random.categorical(rng, cumulative[a], guide[a])
                    == _scan(reference.random(), p[a]))
