"""One chain on several threads (dawrap.runner.grouped, threads backend): the same draws for 1,
2 or 3 threads, the exact posterior with and without shared cells (discrete Gaussian, Laplace and
geometric noise), bad input named."""
import copy
import warnings

import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial, census, small_area
from dawrap.runner import grouped as grouped_runner

# Two areas in one region, two categories: released the area counts and the region's.
SIZES, REGIONS, CATS = [2, 3], [0, 0], 2
# short runs: their ESS warnings are expected
pytestmark = pytest.mark.filterwarnings("ignore:R-hat and ESS:RuntimeWarning")
FAST = dict(chains=1, seed=3, progress=False)


@pytest.fixture(scope="module")
def problem():
    model = small_area.model(SIZES, CATS)
    mech = small_area.discrete_gaussian(REGIONS, CATS, rho=(0.5, 0.5))
    s_dp = mech.release(small_area.records(SIZES, [0, 1, 1, 1, 0]), seed=4)
    return model, mech, s_dp


# The release's area counts (area 0 all in category 0, area 1 all in category 1), then the
# region's, which disagree with them by 3 in each category: the shared cells' residuals are
# large against the noise scale (1), where Laplace and Gaussian likelihoods part.
LAPLACE_RELEASE = {"laplace": [2.3, -0.4, 0.2, 3.1, 4.8, 0.3],
                   "geometric": [2.0, 0.0, 0.0, 3.0, 5.0, 0.0]}


@pytest.fixture(scope="module", params=["laplace", "geometric"])
def laplace_problem(request):
    """The small-area problem released with Laplace or geometric noise of scale 1 (a record
    moves two area and two region cells by one: L1 sensitivity 4)."""
    statistic, size = small_area.statistics(len(SIZES), CATS, tuple(REGIONS))
    family = dw.Laplace if request.param == "laplace" else dw.Geometric
    mech = family(statistic, epsilon=4.0, sensitivity=4.0, size=size)
    return small_area.model(SIZES, CATS), mech, np.array(LAPLACE_RELEASE[request.param])


def by_area(mech) -> dw.parallel.Partition:
    """Records grouped by area: the area cells are each area's, the region's are shared."""
    records = np.repeat(np.arange(len(SIZES)), SIZES)
    cells = np.r_[np.repeat(np.arange(len(SIZES)), CATS), np.full(CATS, -1)]
    return dw.parallel.Partition(records=records, cells=cells,
                                 stats=np.repeat(np.arange(len(SIZES)),
                                                                      CATS))


def on_threads(threads: int, partition=None, **options) -> dw.Record:
    """The record sampler with each chain's groups on ``threads`` threads."""
    return dw.Record(groups=dw.parallel.Threads(threads, partition), **options)


def draws(idata, name="p"):
    return diagnostics.group(idata, "posterior")[name].values


@pytest.mark.slow
def test_the_draws_do_not_depend_on_the_threads(problem):
    model, mech, s_dp = problem
    runs = [dw.sample(model, mech, s_dp, sum(SIZES), draws=30, tune=10, keep_stats=True,
                      method=on_threads(t, by_area(mech)), **FAST)
            for t in (1, 2)]
    with pytest.warns(UserWarning, match="threads = 3 but the partition has 2 group"):
        runs.append(dw.sample(model, mech, s_dp, sum(SIZES), draws=30, tune=10,
                              keep_stats=True,
                              method=on_threads(3, by_area(mech)), **FAST))
    for run in runs[1:]:
        assert np.array_equal(draws(run), draws(runs[0]))
        assert np.array_equal(draws(run, "log_alpha"), draws(runs[0], "log_alpha"))
    # the records moved: the release's totals differ between draws
    totals = diagnostics.group(runs[0], "sample_stats")
    assert diagnostics.group(runs[0], "posterior").attrs["threads"] == 1
    assert totals is not None


def assert_exact(model, mech, s_dp, method, check_posterior):
    """Two chains of ``method`` on the small-area problem against its enumerated posterior:
    the first area's first probability by ``check_posterior``, and ``log_alpha``'s mean
    and sd within 4 Monte Carlo standard errors."""
    exact, eta_mean, eta_sd = small_area.exact_posterior(mech, s_dp, SIZES, CATS)
    idata = dw.sample(model, mech, s_dp, sum(SIZES), draws=5000, tune=500, chains=2, seed=2,
                      progress=False, method=method)
    p, eta = draws(idata), draws(idata, "log_alpha")
    check_posterior(p[..., 0, 0], exact)
    for c in range(CATS):
        mcse = diagnostics.mcse(eta[..., c], "mean")
        assert abs(eta[..., c].mean() - eta_mean[c]) < 4 * mcse, (eta[..., c].mean(),
                                                                  eta_mean[c], mcse)
        assert abs(eta[..., c].std() - eta_sd[c]) < 4 * diagnostics.mcse(eta[..., c], "sd")


@pytest.mark.parametrize("shared", [True, False], ids=["shared-region-cells", "owned-cells"])
def test_the_parallel_sweep_is_exact(problem, shared, check_posterior):
    # With the partition by area the region's cells are split into pieces each sweep; with
    # the model's own partition (by region: one group) none are. Both against enumeration.
    model, mech, s_dp = problem
    method = dw.Record(groups=dw.parallel.Threads(2, partition=by_area(mech) if shared else None))
    assert_exact(model, mech, s_dp, method, check_posterior)


@pytest.mark.slow
def test_shared_cells_under_laplace_and_geometric_noise_are_exact(laplace_problem,
                                                                  check_posterior):
    # The region's cells shared between the two areas: a latent variance per shared cell,
    # then Gaussian pieces (dawrap.samplers.parallel), against enumeration. Holding the
    # variances at their prior mean 2 b^2 (Gaussian pieces of the Laplace's variance)
    # fails this test.
    model, mech, s_dp = laplace_problem
    assert_exact(model, mech, s_dp, on_threads(2, by_area(mech)),
                 check_posterior)


@pytest.mark.slow
def test_laplace_draws_do_not_depend_on_the_threads(laplace_problem):
    # the latent variances come from the chain's own generator, as the pieces do
    model, mech, s_dp = laplace_problem
    runs = [dw.sample(model, mech, s_dp, sum(SIZES), draws=30, tune=10,
                      method=on_threads(t, by_area(mech)), **FAST)
            for t in (1, 2)]
    for name in ("p", "log_alpha"):
        assert np.array_equal(draws(runs[1], name), draws(runs[0], name)), name


@pytest.mark.slow
def test_census_groups_by_state_and_shares_the_nation():
    geo = census.Geography({"nation": [0] * 6, "state": [0, 0, 1, 1, 2, 2],
                            "block": np.arange(6)}, {"age": 2})
    sizes = np.array([3, 2, 4, 1, 2, 3])
    model = census.model(geo, totals=sizes)
    mech = census.discrete_gaussian(geo, [census.query("block", rho=1.0),
                                          census.query("nation", rho=1.0)])
    x = census.records(np.column_stack([sizes - 1, np.ones(6, int)]))
    part = model.partition(x, mech)
    assert part.groups == 3 and part.records.tolist() == np.repeat([0, 1, 2], [5, 5, 5]).tolist()
    assert part.cells.tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, -1, -1]
    s_dp = mech.release(x, seed=0)
    runs = [dw.sample(model, mech, s_dp, int(sizes.sum()), draws=20, tune=5,
                      method=dw.Record(groups=dw.parallel.Threads(t)), **FAST) for t in (1, 2)]
    assert np.array_equal(draws(runs[0]), draws(runs[1]))


def test_latent_blocks_emptied_at_the_start_refill_in_the_groups():
    # Public state totals, latent blocks: the sweep moves a person between the blocks of
    # their state, into blocks the start left empty (their released counts are negative).
    # The collapsed move runs in the groups (one per state), each drawing the rows of p of
    # its own blocks, whether or not they held anyone at the start; the same draws on 1
    # and 2 threads.
    geo = census.Geography({"state": [0, 0, 1, 1], "block": np.arange(4)}, {"age": 2})
    model = census.model(geo, totals=[6, 6], invariant="state")
    mech = census.discrete_gaussian(geo, [census.query("block", rho=0.05),
                                          census.query("state", rho=1.0)])
    s_dp = np.array([6.0, 2.0, -3.0, -2.0, 1.0, 3.0, -1.0, -4.0, 6.0, 1.0, 4.0, 3.0])
    start = model.start_database(np.random.default_rng(0), None, 12, mech, s_dp, None)
    assert sorted(set(start[:, 0].astype(int))) == [0, 2]   # blocks 1 and 3 start empty
    layouts = []
    real = grouped_runner.move_parts
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grouped_runner, "move_parts",
                      lambda *args: layouts.append(real(*args)) or layouts[-1])
        runs = [dw.sample(model, mech, s_dp, 12, draws=60, tune=10,
                          method=dw.Record(groups=dw.parallel.Threads(t)), **FAST) for t in (1, 2)]
    assert np.array_equal(draws(runs[0]), draws(runs[1]))
    assert all(layout is not None for parts in layouts for part, layout in parts
               if "collapsed" in part.name)
    shares = draws(runs[0], "p")      # the blocks' rows of p moved off their start
    assert shares.std(axis=1).min() > 0


@pytest.mark.slow
@pytest.mark.parametrize("rho, pair_moves, pinned",
                         [(1.0, 0.0, True), (0.01, 0.0, False), (1.0, 0.5, False)])
def test_pieces_more_precise_than_a_record_warn(rho, pair_moves, pinned):
    # The nation's counts shared by 3 state groups: at rho = 1 (sigma = 1) each group's
    # piece has sd 1/sqrt(3) < 1 count, and its records can hardly change their part of the
    # nation's cells (benchmarks/results/parallel_sweep.md: the chain mixes far worse than
    # the serial sweep); at rho = 0.01 (sigma = 10) the pieces leave them free. The census
    # pair move (the default) exchanges cells without changing the nation's counts, and
    # frees the chain (benchmarks/results/census_pairs.md): no warning then.
    geo = census.Geography({"nation": [0] * 6, "state": [0, 0, 1, 1, 2, 2],
                            "block": np.arange(6)}, {"age": 2})
    sizes = np.array([3, 2, 4, 1, 2, 3])
    model = census.model(geo, totals=sizes, pair_moves=pair_moves)
    mech = census.discrete_gaussian(geo, [census.query("block", rho=1.0),
                                          census.query("nation", rho=rho)])
    x = census.records(np.column_stack([sizes - 1, np.ones(6, int)]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dw.sample(model, mech, mech.release(x, seed=0), int(sizes.sum()), draws=2, tune=0,
                  method=dw.Record(groups=dw.parallel.Threads(2)), **FAST)
    said = [str(w.message) for w in caught if "pieces of noise sd" in str(w.message)]
    assert bool(said) == pinned, said
    if pinned:
        assert "3 pieces of noise sd 0.577" in said[0] and "sample without threads" in said[0]


def per_record(model):
    """``model`` (whose statistic is recounted once per iteration, stat_every="iteration")
    with the statistic moved at every accepted record instead."""
    twin = copy.copy(model)
    twin.stat_every = "record"
    return twin


@pytest.mark.slow
@pytest.mark.parametrize("owned", [True, False], ids=["cells-owned", "rows-per-group"])
def test_groups_recounting_the_statistic_give_the_running_sums_draws(problem, owned):
    # The census model recounts its counts once per iteration: each group its own records,
    # into the cells it owns (Partition.stats) or its row (added in group order). The kernel
    # reads them at the next iteration only, so the draws are bit for bit those of the
    # groups moving the counts at every accepted record; a stale or partial recount parts.
    model, mech, s_dp = problem
    part = by_area(mech)
    if not owned:
        part = dw.parallel.Partition(records=part.records, cells=part.cells)
    runs = [dw.sample(m, mech, s_dp, sum(SIZES), draws=30, tune=10,
                      method=on_threads(2, part, sweeps=2), **FAST)
            for m in (per_record(model), model)]
    for name in ("p", "log_alpha"):
        assert np.array_equal(draws(runs[1], name), draws(runs[0], name)), name


@pytest.mark.parametrize("wrong, cell, statistic", [
    # area 1's counts given to area 0
    (lambda part: dict(cells=part.cells, stats=np.zeros_like(part.stats)), "[23]", "model's"),
    # the region's cells given to area 0
    (lambda part: dict(cells=np.r_[part.cells[:4], [0, 0]], stats=part.stats), "[45]",
     "mechanism's"),
], ids=["model-statistic", "mechanism-statistic"])
def test_a_wrong_partition_stops_with_its_cell(problem, wrong, cell, statistic):
    model, mech, s_dp = problem
    part = by_area(mech)
    partition = dw.parallel.Partition(records=part.records, **wrong(part))
    with pytest.raises(ValueError, match=rf"record 2 \(group 1 of the partition\) touched cell "
                                         rf"{cell} of the {statistic} statistic, which the "
                                         r"partition gives to group 0"):
        dw.sample(model, mech, s_dp, sum(SIZES), draws=5, tune=2,
                  method=dw.Record(groups=dw.parallel.Threads(2, partition=partition)), **FAST)


def test_bad_settings_are_named(problem):
    model, mech, s_dp = problem
    with pytest.raises(TypeError, match="partition must be a dawrap.parallel.Partition"):
        dw.parallel.Threads(2, partition=[0, 1])
    with pytest.raises(ValueError, match="threads must be an integer >= 1"):
        dw.Record(groups=dw.parallel.Threads(0))
    with pytest.raises(TypeError, match=r"groups must be dw.parallel.Threads\(...\), .* int lacks"):
        dw.Record(groups=2)
    # dawrap 0.2's options still work, saying what to write instead; a partition alone is
    # refused
    with pytest.warns(FutureWarning, match=r"replaced by groups=dw.parallel.Threads"):
        groups = dw.Record(threads=2, partition=by_area(mech)).groups
    assert groups.threads == 2 and groups.partition is not None
    with pytest.raises(ValueError, match="partition is for a chain's groups"):
        dw.Record(partition=by_area(mech))
    bb_model, bb_mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
    with pytest.raises(ValueError, match=r"Threads\(2\) needs a partition of the records"):
        dw.sample(bb_model, bb_mech, 312.4, 1000, draws=5, tune=2,
                  method=dw.Record(groups=dw.parallel.Threads(2)), **FAST)
    with pytest.raises(ValueError, match="groups need the sparse path"):
        dw.sample(bb_model, bb_mech, 312.4, 1000, draws=5, tune=2,
                  method=dw.Record(groups=dw.parallel.Threads(2, partition=dw.parallel.Partition(
                      np.zeros(1000, int), [-1]))), **FAST)


def test_a_parallel_chain_resumes_bit_identically(problem, tmp_path, ctrl_c_at):
    """The checkpoint holds the groups' generators: the resumed draws are those of an
    unbroken run, with another number of threads too; a serial resume is refused."""

    model, mech, s_dp = problem
    kw = dict(draws=30, tune=10, chains=1, cores=1, seed=7, progress=False)
    on = lambda threads, partition=by_area(mech): dw.parallel.Threads(threads, partition)
    whole = dw.sample(model, mech, s_dp, sum(SIZES), method=dw.Record(
        groups=on(1), checkpoint_every=10), **kw)
    with ctrl_c_at(20), pytest.warns(UserWarning, match="can be resumed"):
        dw.sample(model, mech, s_dp, sum(SIZES), method=dw.Record(
            groups=on(2), checkpoint=tmp_path, checkpoint_every=10), **kw)
    with np.load(tmp_path / "chain0.npz") as saved:
        assert int(saved["done"]) == 20 and "group_rng_states" in saved.files
    with pytest.raises(ValueError, match="written with groups .* resume it with"):
        dw.sample(model, mech, s_dp, sum(SIZES), method=dw.Record(resume=tmp_path), **kw)
    # the same groups numbered the other way round: each group's generator would sweep the
    # other's records, a chain other than the one saved
    mine = by_area(mech)
    swapped = np.where(mine.cells >= 0, len(SIZES) - 1 - mine.cells, -1)
    other = dw.parallel.Partition(records=len(SIZES) - 1 - mine.records, cells=swapped,
                         stats=len(SIZES) - 1 - mine.stats)
    with pytest.raises(ValueError, match="made with partition = "):
        dw.sample(model, mech, s_dp, sum(SIZES), method=dw.Record(
            groups=on(2, other), resume=tmp_path, checkpoint_every=10), **kw)
    resumed = dw.sample(model, mech, s_dp, sum(SIZES), method=dw.Record(
        groups=on(2), resume=tmp_path, checkpoint_every=10), **kw)
    assert np.array_equal(draws(resumed), draws(whole))
