"""dawrap.mechanisms.Means: the likelihood of a ratio of a noisy sum and a noisy count is a
probability (integer sums) or a density (real sums) of the releases it draws."""
import collections

import numpy as np
import pytest
from scipy import integrate

from dawrap.mechanisms import Means


def test_integer_releases_are_drawn_with_the_likelihoods_probabilities(chi_square_p):
    mech = Means([0], [(0.0, 1.0)], sum_scale=[2.0], count_scale=[2.0], integer_sum=[True])
    t = mech.total(np.r_[np.ones(12), np.zeros(18)])
    rng, draws = np.random.default_rng(1), 100_000
    seen = collections.Counter(mech.release_given_total(rng, t)[0] for _ in range(draws))
    values = [v for v, _ in seen.most_common(15)]
    p = np.array([np.exp(mech.log_g([v], t)) for v in values])
    observed = np.r_[[seen[v] for v in values], draws - sum(seen[v] for v in values)]
    assert chi_square_p(observed, np.r_[p, 1.0 - p.sum()]) > 1e-4, (observed, draws * p)


def test_a_real_sum_gives_a_density_of_the_released_mean():
    mech = Means([0], [(0.0, 10.0)], sum_scale=[3.0], count_scale=[1.5], integer_sum=[False])
    t = mech.total(np.linspace(0.0, 10.0, 25))               # S = 125, N = 25: mean 5
    # smooth between its kinks, one at S/m for every noisy count m of the window (1..85):
    # integrated piece by piece; the mass is P(noisy count >= 1), 1 - 3e-8 here
    density = np.vectorize(lambda r: np.exp(mech.log_g([r], t)))
    edges = np.r_[-40.0, np.sort(125.0 / np.arange(1.0, 86.0)), 260.0]
    pieces = [integrate.quad(density, a, b, epsabs=1e-13)[0] for a, b in zip(edges, edges[1:])]
    assert abs(sum(pieces) - 1.0) < 1e-6, sum(pieces)
    # and what the release draws look like: P(r <= 5), by the same pieces
    last = max(e for e in edges if e <= 5.0)
    below = sum(p for p, b in zip(pieces, edges[1:]) if b <= last) + integrate.quad(
        density, last, 5.0, epsabs=1e-13)[0]
    rng = np.random.default_rng(2)
    draws = np.array([mech.release_given_total(rng, t)[0] for _ in range(40_000)])
    assert abs(np.mean(draws <= 5.0) - below) < 5 * np.sqrt(below * (1 - below) / draws.size)


def test_what_is_not_a_mean_release_is_named():
    with pytest.raises(ValueError, match="columns must be non-negative record indices"):
        Means([1.7], [(0, 1)], [1.0], [1.0], [True])
    with pytest.raises(ValueError, match="bounds must hold one"):
        Means([0], [(1, 0)], [1.0], [1.0], [True])
    with pytest.raises(ValueError, match="scale"):
        Means([0], [(0, 1)], [0.0], [1.0], [True])
    with pytest.raises(ValueError, match="integer_sum must hold one flag"):
        Means([0], [(0, 1)], [1.0], [1.0], [True, False])
    with pytest.raises(ValueError, match="s_dp must be finite"):
        Means([0], [(0, 1)], [1.0], [1.0], [True]).check_release([np.inf])
