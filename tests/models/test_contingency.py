"""Contingency margins: the record sampler against enumeration of every full table; the
sensitivity brute-forced; the entries path taken."""
import itertools

import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import contingency

LEVELS, MARGINS = (2, 2, 2), [(0, 1), (0, 2), (1, 2)]


def test_each_margin_moves_by_two_at_most():
    levels, margins = (3, 2, 2), [(0,), (0, 1), (1, 2), (0, 1, 2)]
    mech = contingency.laplace(levels, margins, epsilon=1.0)
    recs = [np.array([c], float) for c in itertools.product(*(range(v) for v in levels))]
    bounds = np.cumsum([0] + [int(np.prod([levels[a] for a in m])) for m in margins])
    worst = np.zeros(len(margins))
    for u, v in itertools.product(recs, repeat=2):
        d = np.abs(mech.total(u) - mech.total(v))
        worst = np.maximum(worst, [d[a:b].sum() for a, b in zip(bounds, bounds[1:])])
    assert worst.tolist() == [2.0] * len(margins)
    assert mech.epsilon == pytest.approx(4.0) and mech.sparse.nnz == len(margins)
    # Each record's margins are the margin matrix applied to its one-hot cell.
    m = contingency.margin_matrix(levels, margins)
    assert np.array_equal(m.sum(0), np.full(12, len(margins)))


def test_record_sampler_is_exact_for_all_two_way_margins(check_posterior):
    n = 5
    model = contingency.model(LEVELS, alpha=1.0)
    mech = contingency.laplace(LEVELS, MARGINS, epsilon=[1.0, 0.5, 2.0])
    x = np.array([[0, 0, 0], [0, 1, 1], [1, 1, 1], [1, 1, 0], [0, 0, 1]], float)
    s_dp = mech.release(x, seed=7)
    exact = contingency.exact_posterior(mech, s_dp, n, LEVELS, MARGINS)
    idata = dw.sample(model, mech, s_dp, n, seed=1, draws=3000, tune=300, chains=4,
                      progress=False)
    p = diagnostics.group(idata, "posterior")["p"].values
    for j in (0, 3, 7):
        check_posterior(p[..., j], exact[j])


def test_bad_margins_are_named():
    with pytest.raises(ValueError, match="contingency: margin"):
        contingency.laplace(LEVELS, [(0, 3)], 1.0)
    with pytest.raises(ValueError, match="contingency: levels"):
        contingency.model((2, 1))


@pytest.mark.parametrize("call, message", [
    (lambda: contingency.model((2.7, 2)), "levels must be whole numbers, got 2.7"),
    (lambda: contingency.laplace((2, 2), [(0.7,)], 1.0), "each margin must be whole numbers"),
    (lambda: contingency.margin_matrix((2, 2.5), [(0,)]), "levels must be whole numbers"),
    (lambda: contingency.laplace((2, 2), [(0,), (1,)], [1.0, 1.0, 1.0]),
     r"epsilon must be one number or 2 numbers \(one per margin\), got shape \(3,\)"),
    (lambda: contingency.model((2, 2), alpha=[1.0, 2.0, 3.0]),
     r"alpha must be one number or 4 numbers \(one per joint cell\), got shape \(3,\)"),
    (lambda: contingency.model((10 ** 4, 10 ** 4, 10 ** 4)), "GB of memory"),
])
def test_bad_levels_margins_and_lengths_name_the_argument(call, message):
    """Fractional levels and attributes were truncated (2.7 -> 2, 0.7 -> 0), wrong lengths
    gave numpy's broadcast error, and a huge table ran out of memory."""
    with pytest.raises(ValueError, match=message):
        call()
    # whole numbers given as floats (e.g. read from JSON) are fine
    assert contingency.model((2.0, 3)).params == {"p": (6,)}
