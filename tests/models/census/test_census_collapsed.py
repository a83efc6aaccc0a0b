"""The census model's collapsed move (models/census/collapsed.py) on its own: the law it
leaves invariant, by enumeration, with its fresh draw of the probabilities; its
bookkeeping of the running statistic; and its composition with the pair move."""
import itertools
import math

import numpy as np
import pytest
from scipy import special

from dawrap import diagnostics
from dawrap.models import census
from dawrap.models.census.collapsed import RowBase, collapsed_move
from dawrap.model.protocols import MoveBuilder
from dawrap.models.census.pairs import pair_move
from dawrap.reference import normalise_log_weights, relative_log_g
from dawrap.samplers import parallel
from dawrap.samplers.record import RecordState

# nation > 2 states > 3 blocks; the prior's rows are the states (block 2 alone in state 1,
# with one person: the urn then has only its base), their parent the nation; three cells.
GEO = census.Geography({"nation": [0, 0, 0], "state": [0, 0, 1], "block": [0, 1, 2]}, 3)
SIZES = np.array([2, 2, 1])
ROW = GEO.ancestors[1]                    # each block's prior row (its state)
P_NATION = np.array([0.6, 0.3, 0.1])
KAPPA = 1.5
CELLS = 3
# The move's rows in theta (_state's layout): the states' p based on the nation's (at 6) and
# log kappa (at 9); or, one level under alpha, the states' p based on log alpha (at 6)
UNDER_NATION = RowBase(ROW, 2, CELLS, np.zeros(2, np.int64), 6, 9, 0, None)
UNDER_ALPHA = RowBase(ROW, 2, CELLS, None, 0, 0, 6, None)


def _tables():
    """Every table of counts (blocks x cells) with the blocks' sizes."""
    per_block = [[k for k in itertools.product(range(n + 1), repeat=CELLS) if sum(k) == n]
                 for n in SIZES]
    return np.array([np.array(t) for t in itertools.product(*per_block)], float)


def _exact(mech, s_dp):
    """The weights of the tables under p(x | theta without p, s_dp): the release's density,
    each state's Dirichlet-multinomial (Pólya urn) law of its persons' cells, and the number
    of ways to give each block's persons its counts."""
    tables = _tables()
    totals = np.array([mech.total(census.records(t)) for t in tables])
    b = KAPPA * P_NATION
    log_w = relative_log_g(mech, s_dp, totals)
    for r in range(2):
        n_r = tables[:, ROW == r].sum(axis=1)                       # (tables, cells)
        log_w += (special.gammaln(b + n_r) - special.gammaln(b)).sum(1) \
            + special.gammaln(b.sum()) - special.gammaln(b.sum() + n_r.sum(1))
    log_w += (special.gammaln(SIZES + 1) - special.gammaln(tables + 1).sum(2)).sum(1)
    return tables, normalise_log_weights(log_w)


def _state(mech, s_dp, x):
    # theta: p (2 states x 3 cells, to be drawn), p_nation, log kappa
    theta = np.concatenate([np.full(6, 1 / 3), P_NATION, [math.log(KAPPA)]])
    total = mech.total(x)
    return RecordState(theta, x, np.zeros(6), total, mech.log_density(s_dp, total, mech.params),
                       np.zeros(0), np.zeros(0), np.zeros(2, np.int64))


def _counts(x):
    """The database's table of counts (blocks x cells), as :func:`_tables` lists them."""
    counts = np.zeros((3, CELLS))
    np.add.at(counts, (x[:, 0].astype(int), x[:, 1].astype(int)), 1.0)
    return counts


def _run(move, mech, s_dp, state, iterations, seed):
    rng = np.random.default_rng(seed)
    tables = _tables()
    key = {t.tobytes(): k for k, t in enumerate(tables)}
    visits, p_drawn, accepted = np.empty(iterations, np.int64), np.empty((iterations, 6)), []
    for it in range(iterations):
        state, accept, status = move.step(rng, state, s_dp, mech.params, False)
        assert status == 0
        accepted.append(accept)
        visits[it] = key[_counts(state.x).tobytes()]
        p_drawn[it] = state.theta[:6]
    return state, visits, p_drawn, np.array(accepted)


def _close(draws, expected, what, sd=None, ess=None):
    """The mean of ``draws`` within 4 Monte Carlo errors of ``expected``: its sd (or ``sd``)
    over the square root of its bulk ESS (or ``ess``, for a statistic that never moved)."""
    sd = draws.std() if sd is None else sd
    ess = diagnostics.ess(draws[None, :], "bulk") if ess is None else ess
    tolerance = 4 * max(sd, 1e-2) / math.sqrt(ess)
    assert abs(draws.mean() - expected) < tolerance, (what, draws.mean(), expected, tolerance)


def _check_tables(visits, tables, exact):
    """Each table's share of the visits against its exact probability; a table never (or
    always) visited is checked with its exact sd and the median ESS of the others."""
    hits = [(visits == t).astype(float) for t in range(len(tables))]
    moving = [h for h in hits if 0 < h.sum() < h.size]
    typical = float(np.median([diagnostics.ess(h[None, :], "bulk") for h in moving]))
    for t, p in enumerate(exact):
        still = not 0 < hits[t].sum() < hits[t].size
        _close(hits[t], p, f"table {tables[t].tolist()}", sd=math.sqrt(p * (1 - p)),
               ess=typical if still else None)


def test_the_move_leaves_the_records_and_fresh_probabilities_posterior_invariant():
    # The records' law with the states' probabilities integrated out, over every table of
    # the blocks' counts, then p given the records: each state's probability of each cell
    # has the mean of (b + n_r) / (W + n_r) over the tables.
    mech = census.discrete_gaussian(GEO, [census.query("block", rho=0.3),
                                          census.query("state", rho=0.3)])
    start = census.records(np.array([[2, 0, 0], [0, 1, 1], [1, 0, 0]]))
    s_dp = mech.release(start, seed=3)
    move = collapsed_move(UNDER_NATION, rate=1.0).build(mech)
    state, visits, p_drawn, accepted = _run(move, mech, s_dp, _state(mech, s_dp, start.copy()),
                                            20_000, seed=7)
    # the running statistic and log g follow the records
    assert np.array_equal(state.total, mech.total(state.x))
    assert state.log_g == pytest.approx(mech.log_density(s_dp, state.total, mech.params),
                                        abs=1e-9)
    assert 0.05 < np.nanmean(accepted) < 0.95
    tables, exact = _exact(mech, s_dp)
    _check_tables(visits, tables, exact)
    # p given the records it was drawn with: the joint law, through the means of p and of
    # p times its row's count (a p drawn before the steps would have the right means alone)
    b = KAPPA * P_NATION
    for r in range(2):
        n_r = tables[:, ROW == r].sum(axis=1)                  # (tables, cells)
        conditional = (b + n_r) / (b.sum() + n_r.sum(1))[:, None]
        seen = n_r[visits]                                     # (iterations, cells)
        for c in range(CELLS):
            _close(p_drawn[:, r * CELLS + c], exact @ conditional[:, c], f"p[{r}, {c}]")
            _close(p_drawn[:, r * CELLS + c] * seen[:, c],
                   exact @ (conditional[:, c] * n_r[:, c]), f"p[{r}, {c}] n[{r}, {c}]")


def test_in_two_groups_with_the_nation_shared_the_law_is_the_same():
    # The move's group form (dawrap.samplers.group_moves) as a threaded chain runs it: the
    # two states are the groups, each draws its own row of p, and the nation's cells are
    # split into Gaussian pieces (the chain's generator) that each group weighs its persons'
    # moves against. The same exact law as the whole database's move, and the same fresh p.
    mech = census.discrete_gaussian(GEO, [census.query("block", rho=0.3),
                                          census.query("nation", rho=0.5)])
    start = census.records(np.array([[2, 0, 0], [0, 1, 1], [1, 0, 0]]))
    s_dp = mech.release(start, seed=3)
    group = collapsed_move(UNDER_NATION, rate=1.0).build(mech).group
    state = _state(mech, s_dp, start.copy())
    records = ROW[state.x[:, 0].astype(int)]             # each person's group: their state
    owner = np.r_[np.repeat(ROW, CELLS), -np.ones(CELLS, int)]   # block cells; nation shared
    # each state's row of p (the model statistic's counts) is its group's
    by_state = parallel.Partition(records=records, cells=owner, stats=np.repeat([0, 1], CELLS))
    layout = group.assign(state.x, by_state)
    assert layout.tolist() == [0, 1]
    assert group.theta_of(layout, 1).tolist() == [3, 4, 5]
    # a partition that gives a state's row to the other group's persons, or says nothing of
    # the rows, cannot run the move in its groups
    swapped = parallel.Partition(records=records, cells=owner, stats=np.repeat([1, 0], CELLS))
    assert group.assign(state.x, swapped) is None
    assert group.assign(state.x, parallel.Partition(records=records, cells=owner)) is None
    shared = np.flatnonzero(owner < 0)
    slot_of = np.full(mech.size, -1)
    slot_of[shared] = np.arange(len(shared))
    members = [np.flatnonzero(records == g) for g in range(2)]
    scale = np.sqrt(2) * mech.params[shared]
    local_total = np.array([mech.total(state.x[m])[shared] for m in members])
    local_release = np.empty_like(local_total)
    rng, rngs = np.random.default_rng(7), [np.random.default_rng(8 + g) for g in range(2)]
    tables = _tables()
    key = {t.tobytes(): k for k, t in enumerate(tables)}
    iterations = 20_000
    visits, p_drawn = np.empty(iterations, np.int64), np.empty((iterations, 6))
    for it in range(iterations):
        table = group.prepare(state.theta)
        parallel.draw_pieces(rng, s_dp, state.total, shared, scale, local_total,
                             local_release)
        inputs = parallel.GroupInputs(s_dp, mech.params, owner, slot_of,
                                      np.zeros(0, np.int64), scale)
        for g in range(2):
            part = parallel.GroupState(g, members[g], local_total[g], local_release[g],
                                       np.zeros(0), np.zeros(0, np.int64))
            status = group.run(rngs[g], state.theta, table, state.x, state.total, layout,
                               inputs, part)[2]
            assert status == 0
        state.total[shared] = local_total.sum(axis=0)
        visits[it] = key[_counts(state.x).tobytes()]
        p_drawn[it] = state.theta[:6]
    assert np.array_equal(state.total, mech.total(state.x))
    tables, exact = _exact(mech, s_dp)
    _check_tables(visits, tables, exact)
    b = KAPPA * P_NATION
    for r in range(2):
        n_r = tables[:, ROW == r].sum(axis=1)
        conditional = (b + n_r) / (b.sum() + n_r.sum(1))[:, None]
        for c in range(CELLS):
            _close(p_drawn[:, r * CELLS + c], exact @ conditional[:, c], f"p[{r}, {c}]")


def test_at_the_top_the_base_is_alpha_learned_or_fixed():
    # one prior level (the states) under alpha: the same law with b = alpha, read from
    # log_alpha in theta or fixed; checked through the fresh probabilities' means
    mech = census.discrete_gaussian(GEO, [census.query("block", rho=0.3)])
    start = census.records(np.array([[1, 1, 0], [0, 1, 1], [0, 1, 0]]))
    s_dp = mech.release(start, seed=4)
    alpha = KAPPA * P_NATION
    tables, exact = _exact(mech, s_dp)
    n_r = [tables[:, ROW == r].sum(axis=1) for r in range(2)]
    for fixed in (None, alpha):
        move = collapsed_move(UNDER_ALPHA._replace(fixed_alpha=fixed), rate=1.0).build(mech)
        state = _state(mech, s_dp, start.copy())
        if fixed is None:  # log alpha where the theta step keeps it, right after p
            state.theta[6:9] = np.log(alpha)
        else:  # a decoy: a fixed alpha is not read from theta
            state.theta[6:9] = 5.0
        _, visits, p_drawn, _ = _run(move, mech, s_dp, state, 12_000, seed=8)
        for r in range(2):
            mean = exact @ ((alpha + n_r[r]) / (alpha.sum() + n_r[r].sum(1))[:, None])
            for c in range(CELLS):
                _close(p_drawn[:, r * CELLS + c], mean[c], f"alpha {fixed}: p[{r}, {c}]")


def test_after_the_pair_move_the_records_law_is_the_same():
    # the pair move (given p) then the collapsed move (p integrated out, then drawn): the
    # sequence keeps the collapsed law of the records
    mech = census.discrete_gaussian(GEO, [census.query("block", rho=0.3),
                                          census.query("nation", rho=2.0)])
    start = census.records(np.array([[2, 0, 0], [0, 1, 1], [0, 0, 1]]))
    s_dp = mech.release(start, seed=5)
    builder = MoveBuilder.in_turn(pair_move(GEO.ancestors, ROW, CELLS, rate=1.0),
                                  collapsed_move(UNDER_NATION))
    built = builder.build(mech)
    assert built.frees_shared_cells
    assert ["pair" in part.name for part in built.parts] == [True, False]
    _, visits, _, _ = _run(built, mech, s_dp,
                           _state(mech, s_dp, start.copy()), 15_000, seed=9)
    tables, exact = _exact(mech, s_dp)
    _check_tables(visits, tables, exact)
    # where the pair move builds nothing for a release, only the collapsed move runs, and it
    # does not keep coarse totals: the built move says so (the runner reads it)
    plain = census.discrete_gaussian(GEO, [census.query("block", rho=0.3)])
    alone = MoveBuilder.in_turn(pair_move(GEO.ancestors, ROW, CELLS, rate="auto"),
                                collapsed_move(UNDER_ALPHA)).build(plain)
    assert not alone.frees_shared_cells and "pair" not in alone.name
    assert builder.build(mech).frees_shared_cells


def test_auto_runs_it_under_two_prior_levels_and_a_bad_rate_is_named():
    assert collapsed_move(UNDER_ALPHA, rate=0) is None
    two = census.model(GEO, SIZES, levels=("nation", "state")).records_move
    assert "collapsed" in two.name
    built = two.build(census.discrete_gaussian(GEO, [census.query("block", rho=0.3)]))
    assert "collapsed" in built.parts[-1].name
    one = census.model(GEO, SIZES, levels=("state",)).records_move
    assert one is None or "collapsed" not in one.name
    assert "collapsed" in census.model(GEO, SIZES, levels=("state",),
                                       collapsed_moves=0.5).records_move.name
    with pytest.raises(ValueError, match="collapsed_moves must be 'auto' or a number in"):
        census.model(GEO, SIZES, collapsed_moves=-1)
    with pytest.raises(ValueError, match="collapsed_moves"):
        census.model(GEO, SIZES, collapsed_moves=float("nan"))


@pytest.mark.parametrize("levels, invariant, alpha", [
    (("nation", "state"), None, None),                      # kappa and p_nation, alpha learned
    (("nation", "state", "block"), "state", [1.0, 2.0, 0.5]),  # three levels, shares, fixed
    (("state",), None, None)])                              # the top: alpha from log_alpha
def test_census_model_gives_the_move_the_layout_of_its_theta(levels, invariant, alpha):
    # With no steps (a rate below one person), the move only draws p given the records:
    # each row from Dir(b + n) with b read where census.model lays theta out. Averaged over
    # independent draws against (b + n) / (W + n).
    totals = SIZES if invariant is None else [4, 1]
    model = census.model(GEO, totals, levels=levels, invariant=invariant, alpha=alpha,
                         pair_moves=0, collapsed_moves=1e-6)
    mech = census.discrete_gaussian(GEO, [census.query("block", rho=0.3)])
    x = census.records(np.array([[2, 0, 0], [0, 1, 1], [1, 0, 0]]))
    s_dp = mech.release(x, seed=1)
    theta = np.concatenate([0.3 + 0.8 * np.arange(shape[0]) if name == "log_kappa"
                            else np.log(np.arange(1.0, 1 + np.prod(shape))) if name ==
                            "log_alpha" else np.full(int(np.prod(shape)), 1.0 / shape[-1])
                            if name == "share" else np.random.default_rng(0).dirichlet(
                                np.ones(CELLS), shape[0]).ravel()
                            for name, shape in model.params.items()])
    names = list(model.params)
    at = dict(zip(names, np.cumsum([0] + [int(np.prod(model.params[k])) for k in names])))
    rows = model.params["p"][0]
    level = GEO.level(levels[-1])
    row_of = GEO.ancestors[level]                             # each block's row
    counts = np.zeros((rows, CELLS))
    np.add.at(counts, (row_of[x[:, 0].astype(int)], x[:, 1].astype(int)), 1.0)
    if len(levels) > 1:
        parent_level = GEO.level(levels[-2])
        parent_name = f"p_{levels[-2]}"
        parent_p = theta[at[parent_name]:at[parent_name] + np.prod(
            model.params[parent_name])].reshape(-1, CELLS)
        parent_of = np.array([GEO.ancestors[parent_level][np.flatnonzero(row_of == r)[0]]
                              for r in range(rows)])
        kappa = math.exp(theta[at["log_kappa"] + len(levels) - 2])
        base = kappa * parent_p[parent_of]
    else:
        base = np.tile(np.exp(theta[at["log_alpha"]:at["log_alpha"] + CELLS]), (rows, 1))
    if alpha is not None:
        assert len(levels) > 1  # (a fixed alpha is the top's base only)
    mean = (base + counts) / (base + counts).sum(1, keepdims=True)
    move = model.records_move.build(mech)
    state = _state(mech, s_dp, x.copy())._replace(theta=theta.copy())
    rng = np.random.default_rng(3)
    draws = np.empty((3000, rows * CELLS))
    for k in range(draws.shape[0]):
        state, _, status = move.step(rng, state, s_dp, mech.params, False)
        assert status == 0 and np.array_equal(state.x, x)
        draws[k] = state.theta[:rows * CELLS]
    assert np.array_equal(state.theta[rows * CELLS:], theta[rows * CELLS:])
    for j in range(rows * CELLS):
        _close(draws[:, j], mean.ravel()[j], f"{levels}: p[{j // CELLS}, {j % CELLS}]",
               ess=draws.shape[0])
