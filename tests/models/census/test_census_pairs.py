"""The census model's pair move (models/census/pairs.py) on its own: the distribution it
leaves invariant, by enumeration, and its bookkeeping of the running statistic."""
import itertools

import numpy as np
import pytest
from scipy import special

from dawrap import diagnostics
from dawrap.models import census
from dawrap.models.census.pairs import pair_move, unit_ranges
from dawrap.reference import normalise_log_weights, relative_log_g
from dawrap.samplers.record import RecordState

# nation > 2 states > 3 blocks; block 2 alone in its state. Persons in cell 1: 2 of 5.
GEO = census.Geography({"nation": [0, 0, 0], "state": [0, 0, 1], "block": [0, 1, 2]}, 2)
SIZES = np.array([2, 1, 2])
P = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])  # each block's cell probabilities


def test_the_ranges_hold_each_units_finest_units_in_nested_order():
    # states' blocks listed out of order: the order puts each unit's blocks together
    ancestors = np.array([[0] * 5, [1, 0, 1, 0, 2], [0, 1, 2, 3, 4]])
    position, lo, hi = unit_ranges(ancestors)
    order = np.argsort(position)
    for level in (0, 1):
        for v in range(ancestors[level].max() + 1):
            inside = order[lo[level, v]:hi[level, v]]
            assert sorted(inside) == sorted(np.flatnonzero(ancestors[level] == v))


def test_the_move_leaves_the_records_posterior_given_theta_invariant():
    # The move alone keeps the number of persons per cell in the nation (every pair lies in
    # it); on those databases its invariant law is p(x | theta, s_dp) ∝ prod_i p[b_i, c_i]
    # g(s_dp | T(x)). Counted over the tables of persons in cell 1 per block, against the
    # enumeration, with a tolerance from each frequency's ESS.
    mech = census.discrete_gaussian(GEO, [census.query("block", rho=0.3),
                                          census.query("state", rho=0.3)])
    start = census.records(np.array([[2, 0], [0, 1], [1, 1]]))
    s_dp = mech.release(start, seed=3)
    move = pair_move(GEO.ancestors, GEO.ancestors[-1], 2, rate=2.0).build(mech)
    tables = np.array([k for k in itertools.product(*(range(n + 1) for n in SIZES))
                       if sum(k) == 2])
    counts = np.stack([np.column_stack([SIZES - k, k]) for k in tables])
    totals = np.array([mech.total(census.records(c)) for c in counts])
    log_w = (relative_log_g(mech, s_dp, totals)
             + (special.gammaln(SIZES + 1) - special.gammaln(tables + 1)
                - special.gammaln(SIZES - tables + 1)).sum(1)
             + (tables * np.log(P[:, 1]) + (SIZES - tables) * np.log(P[:, 0])).sum(1))
    exact = normalise_log_weights(log_w)
    params = mech.params
    theta = np.concatenate([P.ravel(), np.zeros(8)])
    x = start.copy()
    total = mech.total(x)
    state = RecordState(theta, x, np.zeros(6), total, mech.log_density(s_dp, total, params),
                        np.zeros(0), np.zeros(0), np.zeros(2, np.int64))
    rng = np.random.default_rng(7)
    visits = np.empty(20_000, np.int64)
    accepted = []
    for it in range(visits.shape[0]):
        state, accept, status = move.step(rng, state, s_dp, params, False)
        assert status == 0
        accepted.append(accept)
        k = np.bincount(state.x[:, 0].astype(int), weights=state.x[:, 1], minlength=3)
        visits[it] = next(t for t, row in enumerate(tables) if np.array_equal(row, k))
    # the running statistic and log g follow the records
    assert np.array_equal(state.total, mech.total(state.x))
    assert state.log_g == pytest.approx(mech.log_density(s_dp, state.total, params), abs=1e-9)
    assert 0.05 < np.nanmean(accepted) < 0.95
    for t, p in enumerate(exact):
        hits = (visits == t).astype(float)
        ess = diagnostics.ess(hits[None, :], "bulk") if 0 < hits.sum() < hits.size else 1.0
        tolerance = 4 * np.sqrt(max(p * (1 - p), 1e-4) / ess)
        assert abs(hits.mean() - p) < tolerance, (tables[t], hits.mean(), p, tolerance)
