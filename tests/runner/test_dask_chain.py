"""One chain's groups on the workers of a dask cluster (dawrap.runner.backends.dask): the draws
of the threaded run for the same seed, checkpoints, a lost worker, bad input named."""
import contextlib
import gc
import os
import pickle
import signal
import sys
import time
import types
import warnings

import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial, census, small_area
from dawrap.runner.grouped import kernel_reads_records

distributed = pytest.importorskip("distributed")

# 6 areas in 2 regions, 3 categories: the model's own partition groups by region (no shared
# cell); the partition by area below shares the regions' cells between areas.
SIZES = [40, 55, 35, 60, 45, 50]
REGIONS, CATS = [0, 0, 0, 1, 1, 1], 3
N = sum(SIZES)
# short runs: their ESS warnings are expected
# Every test here starts a LocalCluster or compiles a parallel chain: the slow subset.
pytestmark = [pytest.mark.filterwarnings("ignore:R-hat and ESS:RuntimeWarning"),
              pytest.mark.slow]
FAST = dict(chains=1, seed=5, progress=False, keep_stats=True)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=":0")
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def problem():
    model = small_area.model(SIZES, CATS)
    mech = small_area.discrete_gaussian(REGIONS, CATS, rho=(0.5, 0.5))
    categories = np.random.default_rng(0).integers(0, CATS, size=N)
    s_dp = mech.release(small_area.records(SIZES, categories), seed=4)
    return model, mech, s_dp


def by_area() -> dw.parallel.Partition:
    """Records grouped by area: the area cells are each area's, the regions' are shared."""
    areas = len(SIZES)
    return dw.parallel.Partition(records=np.repeat(np.arange(areas), SIZES),
                        cells=np.r_[np.repeat(np.arange(areas), CATS),
                                    np.full(2 * CATS, -1)],
                        stats=np.repeat(np.arange(areas), CATS))


def values(idata, group="posterior"):
    return {k: v.values for k, v in diagnostics.group(idata, group).items()}


def same(a, b) -> None:
    for group in ("posterior", "imputed_statistic"):
        va, vb = values(a, group), values(b, group)
        assert va.keys() == vb.keys()
        for k in va:
            assert np.array_equal(va[k], vb[k]), (group, k)


@pytest.mark.parametrize("partition", [None, "by_area", "rows"],
                         ids=["model-own", "shared-cells", "statistic-rows-two-sweeps"])
def test_the_draws_are_those_of_the_threads(problem, client, partition):
    # The census model recounts its statistic once per iteration, each group on the worker
    # that holds it (into its cells, or with "rows" into its row, added on the client in
    # group order), in the iteration's last sweep call.
    model, mech, s_dp = problem
    part = by_area() if partition else None
    sweeps = 1
    if partition == "rows":
        part, sweeps = dw.parallel.Partition(records=part.records, cells=part.cells), 2
    threaded = dw.sample(model, mech, s_dp, N, draws=15, tune=5,
                         method=dw.Record(groups=dw.parallel.Threads(2, partition=part),
                                          sweeps=sweeps), **FAST)
    # the option by name (dw.sample's record options), or on the method object
    how = (dict(groups=dw.parallel.Dask(client)) if part is None
           else dict(method=dw.Record(groups=dw.parallel.Dask(client, partition=part),
                                      sweeps=sweeps)))
    cluster = dw.sample(model, mech, s_dp, N, draws=15, tune=5, **how, **FAST)
    same(threaded, cluster)
    assert diagnostics.group(cluster, "posterior").attrs["executor"] == "dask"
    # the records moved: the imputed totals change between draws
    totals = values(cluster, "imputed_statistic")
    assert np.any(np.diff(next(iter(totals.values())), axis=1) != 0)


@dw.recipe
def geometric_release(regions, categories: int, epsilon: float):
    """The small-area counts (areas, then regions) with geometric noise: a recipe the
    workers rebuild by importing this module (on their path, as the test process's)."""
    statistic, size = small_area.statistics(len(regions), categories, tuple(regions))
    return dw.Geometric(statistic, epsilon=epsilon, sensitivity=4.0, size=size)


def test_laplace_shared_cells_draw_the_threads_draws(problem, client):
    # Geometric noise on the regions' shared cells: the latent variances are drawn on the
    # client with the chain's generator and sent with the pieces.
    model, _, _ = problem
    mech = geometric_release(REGIONS, CATS, 2.0)
    categories = np.random.default_rng(1).integers(0, CATS, size=N)
    s_dp = mech.release(small_area.records(SIZES, categories), seed=4)
    runs = [dw.sample(model, mech, s_dp, N, draws=10, tune=3,
                      method=dw.Record(**how, partition=by_area()), **FAST)
            for how in ({"threads": 2}, {"executor": client})]
    same(*runs)


def test_the_refresh_of_the_running_sums_keeps_the_draws(problem, client, monkeypatch):
    """The refresh (every REFRESH_EVERY iterations, here 4) recomputes the sums from the
    workers' partial sums: for counts the threaded run's numbers, so the same draws."""
    from dawrap.samplers import record

    model, mech, s_dp = problem
    monkeypatch.setattr(record, "REFRESH_EVERY", 4)
    runs = [dw.sample(model, mech, s_dp, N, draws=10, tune=3,
                      method=dw.Record(**how, partition=by_area()), **FAST)
            for how in ({"threads": 2}, {"executor": client})]
    same(*runs)


def test_chains_and_kept_databases(problem, client):
    """Two chains, one after another on the cluster, with their databases pulled back."""
    model, mech, s_dp = problem
    runs = [dw.sample(model, mech, s_dp, N, draws=6, tune=2, chains=2, seed=1,
                      progress=False, keep_stats=True, method=dw.Record(**how, databases=2,
                                                                        partition=by_area()))
            for how in ({"threads": 1}, {"executor": client})]
    same(*runs)
    x = [diagnostics.group(r, "imputed_databases")["x"].values for r in runs]
    assert x[0].shape == (2, 2, N, 2) and np.array_equal(x[0], x[1])


def _actors_held(dask_worker) -> int:
    actors = getattr(dask_worker, "actors", None)
    return len(actors if actors is not None else dask_worker.state.actors)


def test_each_chain_starts_after_the_last_left_and_leaves_nothing(problem, client,
                                                                  monkeypatch):
    # On a cluster the chains run one after another: chain 1's start is built only once
    # chain 0 has scattered its records (the client holds one chain's database at a time),
    # and a chain's actors are gone from the workers when the run ends, even with Python's
    # collector off (distributed's actor calls leave reference cycles that held them, and
    # with them a chain's records, until the collector ran).
    from dawrap.runner import record as record_runner
    from dawrap.runner.backends import dask as dask_backend

    model, mech, s_dp = problem
    events = []
    build, scatter = record_runner._Setup.initial_state, dask_backend.DaskBackend.start
    monkeypatch.setattr(record_runner._Setup, "initial_state", lambda self, *a, **k: (
        events.append(f"start {k.get('chain')}"), build(self, *a, **k))[1])
    monkeypatch.setattr(dask_backend.DaskBackend, "start", lambda self, *a, **k: (
        scatter(self, *a, **k), events.append(f"scattered {self.chain}"))[0])
    gc.disable()
    try:
        dw.sample(model, mech, s_dp, N, draws=2, tune=0, chains=3, seed=1, progress=False,
                  method=dw.Record(groups=dw.parallel.Dask(client, partition=by_area())))
        deadline = time.monotonic() + 30
        while sum(client.run(_actors_held).values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sum(client.run(_actors_held).values()) == 0
    finally:
        gc.enable()
    assert events == ["start 0", "scattered 0", "start 1", "scattered 1", "start 2",
                      "scattered 2"]


KW = dict(draws=14, tune=6, chains=1, cores=1, seed=7, progress=False)


@pytest.fixture(scope="module")
def whole(problem):
    """An unbroken threaded run, checkpointed every 5 iterations."""
    model, mech, s_dp = problem
    return dw.sample(model, mech, s_dp, N, method=dw.Record(
        groups=dw.parallel.Threads(1, partition=by_area()), checkpoint_every=5), **KW)


@pytest.mark.parametrize("first,then", [("executor", "threads"), ("threads", "executor")])
def test_a_checkpoint_resumes_across_threads_and_cluster(problem, client, whole, tmp_path,
                                                         ctrl_c_at, first, then):
    """A cluster run's checkpoint is a threaded run's: each resumes the other, and the
    draws are those of the unbroken run."""
    model, mech, s_dp = problem
    how = {"executor": dw.parallel.Dask(client, partition=by_area()),
           "threads": dw.parallel.Threads(2, partition=by_area())}
    with ctrl_c_at(10), pytest.warns(UserWarning, match="can be resumed"):
        dw.sample(model, mech, s_dp, N, method=dw.Record(groups=how[first], checkpoint=tmp_path,
                                                         checkpoint_every=5), **KW)
    with np.load(tmp_path / "chain0.npz") as saved:
        assert int(saved["done"]) == 10 and "group_rng_states" in saved.files
        assert saved["x"].shape == (N, 2)
    resumed = dw.sample(model, mech, s_dp, N, method=dw.Record(groups=how[then],
                                                               resume=tmp_path,
                                                               checkpoint_every=5), **KW)
    assert np.array_equal(values(resumed)["p"], values(whole)["p"])
    assert np.array_equal(values(resumed)["log_alpha"], values(whole)["log_alpha"])


@contextlib.contextmanager
def signalling_a_worker(sig):
    """A private 2-worker ``LocalCluster``'s client and ``action()``, which sends ``sig`` to
    one of its workers (once); on exit a stopped worker is let go on and the cluster closed."""
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=":0")
    own = distributed.Client(cluster)
    sent = []

    def action():
        if not sent:
            sent.append(next(iter(own.run(os.getpid).values())))
            os.kill(sent[0], sig)

    try:
        yield own, action
    finally:
        if sent and sig == signal.SIGSTOP:
            os.kill(sent[0], signal.SIGCONT)
        own.close()
        cluster.close()


def _stop_by_a_signalled_worker(problem, tmp_path, ctrl_c_at, sig, match, **dask_options):
    """A checkpointed chain on a private cluster one of whose workers gets ``sig`` at
    iteration 10 (after the checkpoint of iteration 10): the run stops with an error that
    matches ``match``, and the checkpoint of iteration 10 is kept."""
    model, mech, s_dp = problem
    with signalling_a_worker(sig) as (own, signal_a_worker):
        with ctrl_c_at(10, signal_a_worker):
            with pytest.raises(RuntimeError, match=match):
                dw.sample(model, mech, s_dp, N, method=dw.Record(
                    groups=dw.parallel.Dask(own, partition=by_area(), **dask_options),
                    checkpoint=tmp_path, checkpoint_every=5), **KW)
    with np.load(tmp_path / "chain0.npz") as saved:
        assert int(saved["done"]) == 10


def test_a_lost_worker_stops_the_run_and_keeps_the_checkpoint(problem, whole, tmp_path,
                                                              ctrl_c_at):
    """A worker killed at iteration 10 (after the checkpoint of iteration 10): the run
    stops with an error naming it; the checkpoint resumes to the unbroken run's draws."""
    _stop_by_a_signalled_worker(problem, tmp_path, ctrl_c_at, signal.SIGKILL,
                                r"the dask worker tcp://\S+, which held groups \[.*\] of chain "
                                r"0's records, was lost while sweeping")
    model, mech, s_dp = problem
    resumed = dw.sample(model, mech, s_dp, N, method=dw.Record(
        groups=dw.parallel.Threads(1, partition=by_area()), resume=tmp_path,
        checkpoint_every=5), **KW)
    assert np.array_equal(values(resumed)["p"], values(whole)["p"])


def test_a_hung_worker_stops_the_run_after_the_timeout_and_keeps_the_checkpoint(
        problem, tmp_path, ctrl_c_at):
    """A worker stopped (SIGSTOP: alive to the scheduler, answering nothing) at iteration
    10: the run stops once the timeout has passed, naming the worker, instead of waiting
    for ever; the checkpoint of iteration 10 is kept."""
    _stop_by_a_signalled_worker(problem, tmp_path, ctrl_c_at, signal.SIGSTOP,
                                r"the dask worker tcp://\S+, which holds groups \[.*\] of "
                                r"chain 0's records, did not answer within 2 s while sweeping",
                                timeout=2)


def test_the_census_moves_run_in_the_groups_and_draw_the_threads_draws(client):
    # The census model's pair and collapsed moves (three prior levels: the collapsed move
    # is on by default) have group forms (dawrap.samplers.group_moves): on a cluster each
    # worker moves its groups' persons and draws its states' rows of p, the nation's cells
    # split into pieces on the client; the draws are the threaded run's. When the nation's
    # pieces are pinned (sd sigma/sqrt(3) < 1), only the pair move on the whole database
    # frees them: a cluster chain leaves it out with a warning ("auto") or refuses it (a
    # number), and the collapsed move still runs on the workers.
    # (the geography of test_parallel_runner's pinned-pieces test: the same compiled chain)
    geo = census.Geography({"nation": [0] * 6, "state": [0, 0, 1, 1, 2, 2],
                            "block": np.arange(6)}, {"age": 2})
    sizes = np.array([3, 2, 4, 1, 2, 3])
    n = int(sizes.sum())
    x = census.records(np.column_stack([sizes - 1, np.ones(6, int)]))

    def release(rho):
        mech = census.discrete_gaussian(geo, [census.query("block", rho=1.0),
                                              census.query("nation", rho=rho)])
        return mech, mech.release(x, seed=0)

    mech, s_dp = release(0.25)  # nation sigma 2: pieces of sd 1.15, free
    model = census.model(geo, totals=sizes, pair_moves=0.5)
    assert "pair" in model.records_move.name and "collapsed" in model.records_move.name
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # nothing is left out
        cluster = dw.sample(model, mech, s_dp, n, draws=20, tune=5,
                            groups=dw.parallel.Dask(client), **FAST)
    threaded = dw.sample(model, mech, s_dp, n, draws=20, tune=5,
                         method=dw.Record(groups=dw.parallel.Threads(2)), **FAST)
    same(threaded, cluster)
    assert diagnostics.group(cluster, "posterior").attrs["executor"] == "dask"
    accept = diagnostics.group(cluster, "sample_stats")["move_accept"].values
    assert np.all(np.isfinite(accept)) and accept.mean() > 0
    mech, s_dp = release(1.0)   # nation sigma 1: pieces of sd 0.58, pinned
    with pytest.raises(ValueError, match=r"census pair move.*census.model\(..., pair_moves=0\)"):
        dw.sample(model, mech, s_dp, n, draws=2, tune=0, groups=dw.parallel.Dask(client), **FAST)
    # the model's default chose the pair move: the run is refused all the same (without
    # it the chain would be another chain than on threads), naming what turns it off
    with pytest.raises(ValueError, match=r"census pair move.*Run on threads.*pair_moves=0"):
        dw.sample(census.model(geo, totals=sizes), mech, s_dp, n, draws=5, tune=0,
                  groups=dw.parallel.Dask(client), **FAST)
    idata = dw.sample(census.model(geo, totals=sizes, pair_moves=0), mech, s_dp, n, draws=5,
                      tune=0, groups=dw.parallel.Dask(client), **FAST)
    accept = diagnostics.group(idata, "sample_stats")["move_accept"].values
    assert np.all(np.isfinite(accept))  # the collapsed move ran


def test_bad_input_is_named(problem, client):
    model, mech, s_dp = problem
    with pytest.raises(TypeError, match="client must be a dask.distributed.Client"):
        dw.parallel.Dask("dask")
    with pytest.raises(ValueError, match="executor and threads are two ways"):
        dw.Record(executor=client, threads=2)
    for bad in (0, -1.0, float("nan"), float("inf"), True, "10"):
        with pytest.raises(ValueError, match="timeout must be a number of seconds"):
            dw.parallel.Dask(client, timeout=bad)
    with pytest.raises(ValueError, match="interweave moves every record"):
        dw.Record(groups=dw.parallel.Dask(client), interweave=True)
    # dawrap 0.2's options still work, saying what to write instead
    with pytest.warns(FutureWarning, match=r"replaced by groups=dw.parallel.Dask"):
        assert dw.Record(executor=client, worker_timeout=5).groups.timeout == 5
    bb_model, bb_mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
    with pytest.raises(ValueError, match=r"Dask\(.*\) needs a partition of the records"):
        dw.sample(bb_model, bb_mech, 312.4, 1000, draws=5, tune=2,
                  method=dw.Record(groups=dw.parallel.Dask(client)), chains=1, progress=False)

    # the model's statistic recounted on the workers checks the partition's stats too
    part = by_area()
    wrong = dw.parallel.Partition(records=part.records, cells=part.cells,
                         stats=np.zeros_like(part.stats))  # every area's counts to area 0
    with pytest.raises(ValueError, match=r"record 40 \(group 1 of the partition\) touched "
                                         r"cell [345] of the model's statistic, which the "
                                         r"partition gives to group 0"):
        dw.sample(model, mech, s_dp, N, draws=5, tune=2,
                  method=dw.Record(groups=dw.parallel.Dask(client, partition=wrong)), **FAST)


def test_a_model_the_workers_cannot_import_is_named(problem, client, monkeypatch):
    """A recipe whose module exists on the client only: the workers cannot rebuild it."""
    _, mech, s_dp = problem
    module = types.ModuleType("dawrap_client_only_models")
    exec("import dawrap as dw\nfrom dawrap.models import small_area\n"
         "@dw.recipe\ndef areas(sizes, categories):\n"
         "    return small_area.model(sizes, categories)\n", module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    model = module.areas(SIZES, CATS)
    assert pickle.loads(pickle.dumps(model)).name == model.name  # fine on the client
    with pytest.raises(RuntimeError, match="could not rebuild the model and mechanism from "
                                           "their @dw.recipe factories.*dawrap_client_only"):
        dw.sample(model, mech, s_dp, N, draws=2, tune=0,
                  method=dw.Record(groups=dw.parallel.Dask(client)), **FAST)


def test_a_kernel_that_reads_the_records_is_refused():
    class Model:
        pass

    model = Model()

    def by_stats(rng, theta, x, stats):
        return stats.copy()

    def by_records(rng, theta, records, stats):
        return records.sum(axis=0)

    model.draw_theta = by_stats
    assert kernel_reads_records(model) is None
    model.draw_theta = by_records
    assert kernel_reads_records(model) == "records"
    model.draw_theta = small_area.model(SIZES, CATS).draw_theta  # a Kernel: its step
    assert kernel_reads_records(model) is None
