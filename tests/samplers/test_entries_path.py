"""The entries path: exact against enumeration, the same posterior as the dense path,
and clear errors for bad declarations."""
import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import dirichlet_multinomial as dm
from dawrap.samplers import record, entries_path
from dawrap.samplers.status import BAD_ENTRIES, BAD_STATS


@numba.njit
def dense_one_hot(x_i, out):
    """The same statistic as dm.one_hot, without a sparse declaration: the dense path."""
    dm.one_hot(x_i, out)


def _posterior(mech, s_dp, n, alpha, seed, draws=3000):
    idata = dw.sample(dm.model(alpha), mech, s_dp, n, seed=seed, draws=draws, tune=300,
                      chains=4, progress=False)
    return diagnostics.group(idata, "posterior")["p"].values


def test_built_in_count_mechanisms_take_the_sparse_path():
    for mech in (dm.laplace(1.0, 4), dw.Gaussian(dm.one_hot, 2.0, size=4),
                 dw.Geometric(dm.one_hot, 1.0, 2.0, size=4),
                 dw.DiscreteGaussian.from_zcdp(dm.one_hot, 0.5, 2 ** 0.5, size=4)):
        assert mech.sparse is not None and mech.sparse.nnz == 1
        assert mech.coordinate_log_density is not None
    assert dw.Laplace(dense_one_hot, 1.0, 2.0, size=4).sparse is None


@pytest.mark.slow
@pytest.mark.parametrize("which", ["laplace", "discrete_gaussian"])
def test_many_cells_mostly_zero_sparse_and_dense_match_enumeration(which, check_posterior):
    # 8 cells, 5 records: most released cells have a true count of zero.
    alpha, n, k = [0.5] * 8, 5, 8
    if which == "laplace":
        make = lambda stat: dw.Laplace(stat, epsilon=1.0, sensitivity=2.0, size=k)  # noqa
    else:
        make = lambda stat: dw.DiscreteGaussian.from_zcdp(stat, 0.5, 2 ** 0.5, size=k)  # noqa
    sparse, dense = make(dm.one_hot), make(dense_one_hot)
    assert sparse.sparse is not None and dense.sparse is None
    x = np.array([[0.0], [0.0], [3.0], [3.0], [5.0]])
    s_dp = sparse.release(x, seed=11)
    exact = dm.exact_posterior(sparse, s_dp, n, alpha)
    for mech, seed in ((sparse, 1), (dense, 2)):
        p = _posterior(mech, s_dp, n, alpha, seed)
        for j in (0, 3, 7):
            check_posterior(p[..., j], exact[j])


@numba.njit
def entries_out_of_range(x_i, index, value):
    index[0] = int(x_i[0]) + 100
    value[0] = 1.0
    return 1


@numba.njit
def entries_too_many(x_i, index, value):
    return 2


@numba.njit
def entries_wrong(x_i, index, value):
    index[0] = 0
    value[0] = 1.0
    return 1


@numba.njit
def not_separable(s_dp, t, params):
    return -np.sum(np.abs(s_dp - t))


@pytest.mark.parametrize("entries, words", [
    (entries_out_of_range, "index outside the statistic"),
    (entries_too_many, "count outside 0..nnz"),
    (entries_wrong, "disagree with the dense statistic")])
def test_bad_entries_raise_naming_the_function(entries, words):
    mech = dw.Mechanism(dense_one_hot, dm.laplace(1.0, 3).log_density, size=3,
                        params=dm.laplace(1.0, 3).params, entries=entries, nnz=1,
                        coordinate_log_density=dw.mechanisms.separable.laplace_coordinate)
    with pytest.raises(ValueError, match=f"entries.*{words}"):
        dw.sample(dm.model([1, 1, 1]), mech, [3.0, 1.0, 1.0], 5, draws=10, tune=0,
                  chains=1, seed=0, progress=False)


def test_a_sparse_statistic_needs_a_separable_density():
    with pytest.raises(ValueError, match="Mechanism: a sparse statistic .* coordinate_log_density"):
        dw.Mechanism(dense_one_hot, not_separable, size=3, entries=dm.one_hot_entries, nnz=1)
    with pytest.raises(TypeError, match="entries needs nnz"):
        dw.Mechanism(dense_one_hot, not_separable, size=3, entries=dm.one_hot_entries)
    # A declared sparse statistic with a non-separable density keeps the dense path.
    assert dw.Mechanism(dm.one_hot, not_separable, size=3).sparse is None


def test_the_sweep_stops_on_entries_outside_the_statistic():
    mech = dw.Mechanism(dense_one_hot, dm.laplace(1.0, 3).log_density, size=3,
                        params=dm.laplace(1.0, 3).params, entries=entries_out_of_range, nnz=1,
                        coordinate_log_density=dw.mechanisms.separable.laplace_coordinate)
    model = dm.model([1.0, 1.0, 1.0])
    fns = record.RecordFunctions(model.draw_record, model.propose_record, model.model_stat,
                                 mech.sampler_statistic, mech.log_density,
                                 entries=mech.sparse.entries, nnz=1,
                                 coordinate_log_density=mech.coordinate_log_density)
    sweep = record.bind_chain(fns, record.SweepOptions(1, 3, 3)).sweep
    s_dp = np.zeros(3)
    x = np.zeros((4, 1))
    state = record.RecordState(np.full(3, 1 / 3), x, np.zeros(3), np.zeros(3), 0.0,
                               np.empty(0), np.empty(0), np.zeros(2, np.int64))
    _, info = sweep(np.random.default_rng(0), state, s_dp, mech.params)
    assert info.status == BAD_ENTRIES
    assert "entries" in record.STATUS_MESSAGES[BAD_ENTRIES]


@numba.njit
def nan_model_entries(x_i, index, value):
    """A model statistic whose declared entries turn non-finite for category 2."""
    index[0] = int(x_i[0])
    value[0] = np.nan if x_i[0] == 2.0 else 1.0
    return 1


@pytest.mark.parametrize("model_nnz", [1, 0])
def test_the_sparse_sweep_reports_a_non_finite_model_statistic(model_nnz):
    """Without scanning all K cells per sweep, a cell the sweep moved to NaN is still
    reported (BAD_STATS), through the model's entries or its dense statistic."""
    mech = dm.laplace(1.0, 3)
    model = dm.model([1.0, 1.0, 1.0])
    sparse_model = {"model_entries": nan_model_entries, "model_nnz": 1} if model_nnz else {}
    fns = record.RecordFunctions(model.draw_record, model.propose_record, nan_for_two,
                                 mech.sampler_statistic, mech.log_density,
                                 entries=mech.sparse.entries, nnz=1,
                                 coordinate_log_density=mech.coordinate_log_density,
                                 **sparse_model)
    # not shared: the model's own statistic
    sweep = record.bind_chain(fns, record.SweepOptions(1, 3, 3)).sweep
    x = np.zeros((50, 1))
    state = record.RecordState(np.full(3, 1 / 3), x, np.zeros(3), np.zeros(3), 0.0,
                               np.empty(0), np.empty(0), np.zeros(2, np.int64))
    _, info = sweep(np.random.default_rng(0), state, np.full(3, 50 / 3), mech.params)
    assert info.status == BAD_STATS
    assert info.accept_rate > 0


@numba.njit
def nan_for_two(x_i, out):
    out[:] = 0.0
    out[int(x_i[0])] = np.nan if x_i[0] == 2.0 else 1.0


def test_naive_bayes_entries_agree_with_its_counts_on_every_record():
    import itertools

    from dawrap.models import naive_bayes
    from dawrap.samplers import entries_path

    I, J = 3, [2, 4]
    mech = naive_bayes.laplace(1.0, I, J)
    model = naive_bayes.model(I, J)
    assert mech.sparse is not None and mech.sparse.nnz == len(J)
    recs = np.array(list(itertools.product(range(I), *(range(j) for j in J))), float)
    fns = record.RecordFunctions(model.draw_record, model.propose_record, model.model_stat,
                                 mech.sampler_statistic, mech.log_density,
                                 **entries_path.entries_fields(model, mech))
    assert fns.model_nnz == len(J)
    chain = record.bind_chain(fns, record.SweepOptions(model.record_size, mech.size,
                                                       model.stat_size))
    everyone = np.ones(len(recs), dtype=bool)
    assert chain.check_entries(recs, np.zeros(mech.size), everyone) == (-1, 0, 0)
    # A record out of range still contributes NaN (the dense statistic's answer).
    assert np.all(np.isnan(mech.total([[1, 1, 0], [3, 1, 0]])))


# -- lying entries are found wherever the chain meets them (issue 29 item 5) ------------------

K_LIE = 200


@numba.njit
def last_into_first(x_i, index, value):
    """One-hot entries that put the last of 200 categories into cell 0 (the dense statistic
    puts it in cell 199): the sampler would ignore release cell 199."""
    c = int(x_i[0])
    index[0] = 0 if c == K_LIE - 1 else c
    value[0] = 1.0
    return 1


def _lying_mechanism():
    laplace = dm.laplace(1.0, K_LIE)
    return dw.Mechanism(dense_one_hot, laplace.log_density, size=K_LIE, params=laplace.params,
                        entries=last_into_first, nnz=1,
                        coordinate_log_density=dw.mechanisms.separable.laplace_coordinate)


def test_a_lie_beyond_the_first_64_records_stops_the_run():
    """The issue's repro: the lying category is absent from the first 64 records of init_x
    (only those were compared), and the release says half the records are in it."""
    n = 100
    x = np.r_[np.arange(64) % 10, np.full(36, K_LIE - 1)].astype(float)[:, None]
    s_dp = np.zeros(K_LIE)
    s_dp[K_LIE - 1] = 50.0
    with pytest.raises(ValueError, match="disagree with the dense statistic .* on record 64 "
                                         "of init_x"):
        dw.sample(dm.model([1.0] * K_LIE), _lying_mechanism(), s_dp, n, draws=10, tune=0,
                  chains=1, seed=0, progress=False, init_x=x)


@numba.njit
def last_counts_twice(x_i, index, value):
    """One-hot entries that count the last of 200 categories twice, in cell 0."""
    c = int(x_i[0])
    index[0] = 0 if c == K_LIE - 1 else c
    value[0] = 2.0 if c == K_LIE - 1 else 1.0
    return 1


@pytest.mark.slow  # compiles the record chain for a mechanism of its own
def test_a_lie_the_chain_meets_later_stops_the_run():
    """Neither the starting database nor the start's draws hold the lying category (theta
    puts 1e-12 on it); the chain proposes it uniformly and, since the lie makes it count
    twice in cell 0, where the release puts twice the records, imputes it: a later check
    (at a refresh, or the chain's last iteration) finds it."""
    n = 30
    laplace = dm.laplace(1.0, K_LIE)
    mech = dw.Mechanism(dense_one_hot, laplace.log_density, size=K_LIE, params=laplace.params,
                        entries=last_counts_twice, nnz=1,
                        coordinate_log_density=dw.mechanisms.separable.laplace_coordinate)
    theta = np.full(K_LIE, (1.0 - 1e-12) / (K_LIE - 1))
    theta[-1] = 1e-12
    s_dp = np.zeros(K_LIE)
    s_dp[0] = 2.0 * n
    with pytest.raises(ValueError, match="disagrees with the dense statistic on a record of "
                                         "the imputed database"):
        dw.sample(dm.model([1.0] * K_LIE, proposal="uniform"), mech, s_dp, n, draws=300,
                  tune=0, chains=1, seed=0, progress=False, init_theta={"p": theta},
                  init_x=np.ones((n, 1)))


def test_records_compared_before_a_run_are_the_distinct_ones(monkeypatch):
    from dawrap.samplers import entries_path

    x = np.array([[3.0], [1.0], [3.0], [2.0], [1.0], [7.0]])
    assert entries_path.compared_before_a_run(x, 10).tolist() == [True, True, False, True,
                                                                  False, True]
    # Over budget (2 records' worth): two of the four distinct records, the first and last.
    monkeypatch.setattr(entries_path, "DENSE_CHECK_CELLS", 20)
    assert entries_path.compared_before_a_run(x, 10).tolist() == [True, False, False, False,
                                                                  False, True]


def test_refresh_samples_every_record_or_a_spread_of_them():
    from dawrap.samplers import entries_path

    assert entries_path.sampled_records(5, np.uint64(3), 5).all()
    seen = np.zeros(1000, dtype=bool)
    for seed in range(200):  # states differ at every refresh: so do the records compared
        hashed = np.uint64(entries_path.state_seed(np.array([seed / 7.0]), -1.5))
        picked = entries_path.sampled_records(1000, hashed, 10)
        assert 1 <= picked.sum() <= 10
        seen |= picked
    assert seen.mean() > 0.8  # 2000 draws of 1000 positions: 86% expected


@numba.njit
def spills_for_two(x_i, out):
    """One-hot, but category 2 also writes one value past the end of out."""
    out[:] = 0.0
    out[int(x_i[0])] = 1.0
    if x_i[0] == 2.0:
        _spill(out)


@numba.njit
def _spill(out):
    out[out.shape[0]] = 7.0  # numba checks no bounds: one past the end


def test_a_dense_statistic_writing_past_out_is_reported_when_compared():
    """Comparing entries with the dense statistic calls it on more records than before (every
    distinct starting record, and records at refreshes): its writes past out land in a guard
    zone and are reported, never in other memory."""
    laplace = dm.laplace(1.0, 3)
    mech = dw.Mechanism(spills_for_two, laplace.log_density, size=3, params=laplace.params,
                        entries=dm.one_hot_entries, nnz=1,
                        coordinate_log_density=dw.mechanisms.separable.laplace_coordinate)
    x = np.array([[0.0], [1.0], [2.0], [1.0]])
    with pytest.raises(ValueError, match="dense statistic writes past the end of out on "
                                         "record"):
        dw.sample(dm.model([1.0, 1.0, 1.0]), mech, [1.0, 2.0, 1.0], 4, draws=5, tune=0,
                  chains=1, seed=0, progress=False, init_x=x)


def _sparse_chain(k=5, stat=None):
    """A dirichlet_multinomial chain on the entries path (uniform proposals)."""
    model, mech = dm.model(np.ones(k), proposal="uniform"), dm.laplace(1.0, k)
    fns = record.RecordFunctions(model.draw_record, model.propose_record,
                                 stat or model.model_stat, mech.sampler_statistic,
                                 mech.log_density, **entries_path.entries_fields(model, mech))
    chain = record.bind_chain(fns, record.SweepOptions(1, k, k, general=True,
                                                       shared=stat is None))
    return chain, mech


def test_the_sparse_state_keeps_each_cells_values_in_one_row():
    """Issue 27 item 2: release, parameter, running total and count of cell j share row j of
    one block (one cache line per touched cell), total and stats being views of it."""
    chain, mech = _sparse_chain()
    x = np.array([[0.0], [3.0], [3.0], [1.0]])
    s_dp = np.array([0.5, 1.5, -0.2, 2.2, 0.1])
    state = chain.init(np.full(5, 0.2), x.copy(), record.Inputs(s_dp, mech.params, 1),
                       np.empty(0), np.empty(0))
    cells = state.cells
    assert cells.shape == (5, 4)
    assert np.array_equal(cells[:, 0], s_dp) and np.array_equal(cells[:, 1], mech.params[:5])
    for column, view in ((2, state.total), (3, state.stats)):
        assert np.shares_memory(view, cells)
        assert np.array_equal(view, cells[:, column])
        assert np.array_equal(view, [1.0, 1.0, 0.0, 2.0, 0.0])
    state, info = chain.sweep(np.random.default_rng(0), state, s_dp, mech.params)
    assert info.status == record.OK and np.shares_memory(state.total, state.cells)
    assert np.array_equal(state.total, mech.total(state.x))
    assert np.array_equal(state.stats, state.total)


def test_a_sweep_with_the_block_is_the_sweep_without_it():
    """The block only moves values: a state built without it (arrays passed, as by hand)
    gives bit-identical sweeps, and arrange restores a saved state's block exactly."""
    chain, mech = _sparse_chain()
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, (40, 1)).astype(float)
    s_dp = mech.release(x, seed=4)
    theta = rng.dirichlet(np.ones(5))
    fresh = chain.init(theta.copy(), x.copy(), record.Inputs(s_dp, mech.params, 1),
                       np.empty(0), np.empty(0))
    plain = record.RecordState(theta.copy(), x.copy(), fresh.stats.copy(), fresh.total.copy(),
                               fresh.log_g, np.empty(0), np.empty(0), fresh.clock.copy())
    assert plain.cells.shape == (0, 4)
    restored = chain.arrange(plain._replace(x=x.copy()), s_dp, mech.params)
    assert np.array_equal(restored.cells, fresh.cells)
    runs = []
    for state in (fresh, plain, restored):
        rng = np.random.default_rng(5)
        infos = []
        for _ in range(3):
            state, info = chain.sweep(rng, state, s_dp, mech.params)
            infos.append(tuple(info))
        runs.append((state.x.copy(), state.total.copy(), state.stats.copy(), state.log_g,
                     infos))
    for other in runs[1:]:
        assert np.array_equal(other[0], runs[0][0]) and np.array_equal(other[1], runs[0][1])
        assert np.array_equal(other[2], runs[0][2]) and other[3] == runs[0][3]
        # move_accept is NaN (no move): compared as arrays with NaN equal to NaN
        assert np.array_equal(other[4], runs[0][4], equal_nan=True)


def test_the_prefetching_sweep_of_many_cells_is_the_sweep_without_it():
    """From PREFETCH_FROM_CELLS cells the systematic sweep prefetches the block's rows of
    the records ahead (software pipelining, issue 27 item 2): hints only, so its sweeps are
    bit-identical to those of a state without the block (which does not prefetch). (That
    the hint is compiled in at this size was checked on the LLVM IR once; numba offers no
    IR of cached code, so a test cannot.)"""
    k = entries_path.PREFETCH_FROM_CELLS
    chain, mech = _sparse_chain(k)
    rng = np.random.default_rng(6)
    x = rng.integers(0, k, (300, 1)).astype(float)
    x[::3] = x[0]  # records sharing a cell: rows prefetched and moved in the same window
    s_dp = mech.release(x, seed=7)
    theta = rng.dirichlet(np.ones(k))
    fresh = chain.init(theta.copy(), x.copy(), record.Inputs(s_dp, mech.params, 1),
                       np.empty(0), np.empty(0))
    plain = record.RecordState(theta.copy(), x.copy(), fresh.stats.copy(), fresh.total.copy(),
                               fresh.log_g, np.empty(0), np.empty(0), fresh.clock.copy())
    runs = []
    for state in (fresh, plain):
        rng = np.random.default_rng(8)
        infos = []
        for _ in range(3):
            state, info = chain.sweep(rng, state, s_dp, mech.params)
            infos.append(tuple(info))
        runs.append((state.x.copy(), state.total.copy(), state.log_g, infos))
    assert runs[0][3][0][0] > 0.2  # records moved (accept rate)
    assert np.array_equal(runs[0][0], runs[1][0]) and np.array_equal(runs[0][1], runs[1][1])
    assert runs[0][2] == runs[1][2]
    assert np.array_equal(runs[0][3], runs[1][3], equal_nan=True)


def test_refresh_keeps_the_block_and_keep_stats_reads_it():
    """A refresh writes the recomputed sums into the block (total and stats stay views of
    it) and a run with keep_stats stores the running totals of the entries path: each kept
    total is a table of counts of the n records."""
    chain, mech = _sparse_chain()
    x = np.array([[0.0], [3.0], [3.0], [1.0], [4.0]])
    s_dp = np.array([0.5, 1.5, -0.2, 2.2, 0.1])
    state = chain.init(np.full(5, 0.2), x.copy(), record.Inputs(s_dp, mech.params, 1),
                       np.empty(0), np.empty(0))
    state, info = chain.sweep(np.random.default_rng(1), state, s_dp, mech.params)
    state.cells[:, 0] = np.nan  # a stale copy of the release: refresh writes it afresh
    state, status = chain.refresh(state, s_dp, mech.params)
    assert status == record.OK and np.array_equal(state.cells[:, 0], s_dp)
    assert np.shares_memory(state.total, state.cells) and np.shares_memory(state.stats,
                                                                           state.cells)
    assert np.array_equal(state.cells[:, 2], mech.total(state.x))
    assert state.log_g == mech.log_density(s_dp, mech.total(state.x), mech.params)
    model = dm.model(np.ones(5), proposal="uniform")
    idata = dw.sample(model, mech, s_dp, 5, draws=20, tune=5, chains=1, seed=2,
                      progress=False, keep_stats=True)
    kept = diagnostics.group(idata, "imputed_statistic")["t"].values.reshape(20, 5)
    assert np.all(kept.sum(axis=1) == 5) and np.all((kept >= 0) & (kept == np.round(kept)))
