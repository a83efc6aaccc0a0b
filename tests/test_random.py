"""dw.random: conjugate draws that return NaN instead of hanging, exact for tiny shapes, and
bit-identical to the generator's own draws for ordinary arguments."""
import math

import numba
import numpy as np
import pytest

import dawrap as dw


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
