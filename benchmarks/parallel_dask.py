"""One chain of small_area on a 2-worker dask LocalCluster against one thread (issue 25,
item 3): seconds per iteration, and the communication time per sweep.

The problem: ``--areas`` areas of public sizes (``--records`` records in all) in
``--regions`` regions, ``--categories`` categories; released the area-by-category and the
region-by-category counts (discrete Gaussian, rho 0.5 each). The model's partition groups
the records by region (every released cell is one group's, no shared cell); with
``--by-area-groups`` the areas are merged into that many groups instead and the regions'
cells are shared (split into pieces each sweep, drawn on the client).

Measured, in one process, rounds interleaved (the machine is shared):

* ``dw.sample`` of one chain with the serial sweep (``dw.Record()``, one thread), with
  ``dw.Record(groups=dw.parallel.Threads(2))``, and with ``dw.Record(groups=dw.parallel.Dask(client))`` on a
  ``LocalCluster(n_workers=2, processes=True, threads_per_worker=1)``; each run twice, with
  ``--short`` and with ``--short + --iterations`` iterations, and the time per iteration is
  the difference of their sampling times over ``--iterations`` (so the fixed costs, the
  starting database, scattering the records, compiling on the workers, cancel);
* the cluster run's communication time per sweep: the client's wall time of a sweep less
  the slowest worker's time inside its sweep (reported by the chain,
  ``dawrap.runner.backends.dask.logger``), and the workers' compute time per sweep;
* the load average before and after (the 2 cores are shared with other jobs).

With ``--census`` the problem is instead ``benchmarks/parallel_sweep.py``'s census model
(8 states of 250 blocks, voting age x 3 races; the blocks', states' and the nation's
histograms released, the nation at ``--nation-rho``; three prior levels, so the collapsed
move is on; the pair move by ``--pair-moves``), grouped by state, the nation's cells
shared: the iteration's census moves run in the groups, on the workers
(:mod:`dawrap.samplers.group_moves`), and are part of the time per iteration. With the
nation's pieces pinned (rho 2) a cluster chain leaves the pair move out, which threads run
on the whole database: compare with ``--nation-rho 0.05 --pair-moves 0.5``.

With ``--memory`` only the cluster run, once (``--short`` iterations of ``--chains``
chains, one after another on the cluster): the peak resident
memory of each worker process and of the client process (sampled every 0.1 s), against
the size of the records (``n x record_size`` float64).

Run: python benchmarks/parallel_dask.py [--records 1000000 --areas 2000 --regions 16
     --categories 4 --short 3 --iterations 20 --rounds 3] [--by-area-groups 8] [--census
     [--nation-rho 0.05 --pair-moves 0.5]]
     [--memory [--chains 4]]
"""
from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
import warnings

import numpy as np

import dawrap as dw
from dawrap.models import small_area
from dawrap.runner.backends.dask import logger

from _common import parser


class _Timings(logging.Handler):
    """Collects the chains' timings (``extra={"timings": ...}``)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.seen = []

    def emit(self, record):
        if hasattr(record, "timings"):
            self.seen.append(record.timings)


def problem(records: int, areas: int, regions: int, categories: int, seed: int = 25):
    rng = np.random.default_rng(seed)
    sizes = 1 + rng.multinomial(records - areas, np.full(areas, 1.0 / areas))
    region_of = np.repeat(np.arange(regions), -(-areas // regions))[:areas]
    p = rng.dirichlet(np.full(categories, 2.0), areas)
    cats = np.concatenate([rng.choice(categories, size=s, p=p[a]) for a, s in enumerate(sizes)])
    model = small_area.model(sizes.tolist(), categories)
    mech = small_area.discrete_gaussian(region_of.tolist(), categories, rho=(0.5, 0.5))
    s_dp = mech.release(small_area.records(sizes.tolist(), cats), seed=seed)
    return model, mech, s_dp, sizes


def by_area(sizes: np.ndarray, categories: int, regions: int, groups: int) -> dw.Partition:
    """Areas merged into ``groups`` groups; the regions' cells shared; each area's cells of
    the model's statistic (its counts) its group's (without ``stats`` every group would
    carry a row of the whole statistic, O(areas x categories) per accepted record)."""
    areas = sizes.shape[0]
    group_of_area = np.minimum(np.arange(areas) * groups // areas, groups - 1)
    return dw.Partition(records=np.repeat(group_of_area, sizes),
                        cells=np.r_[np.repeat(group_of_area, categories),
                                    np.full(regions * categories, -1)],
                        stats=np.repeat(group_of_area, categories))


def seconds(model, mech, s_dp, n, method, iterations: int, chains: int = 1) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = dw.sample(model, mech, s_dp, n, draws=iterations, tune=0, chains=chains,
                          seed=3, progress=False, method=method)
    return float(dw.diagnostics.group(idata, "posterior").attrs["sampling_time"])


def memory(model, mech, s_dp, n: int, client, part, iterations: int, chains: int) -> None:
    """Peak resident memory of the workers and of the client during one cluster run:
    each process's RSS sampled every 0.1 s from a thread of the client (psutil, which
    distributed requires; the workers of a LocalCluster are processes of this machine).
    ``ru_maxrss`` would not do: forked workers inherit the client's."""
    import threading

    import psutil

    pids = client.run(os.getpid)
    procs = {"client": psutil.Process()} | {w: psutil.Process(p) for w, p in pids.items()}
    before = {k: p.memory_info().rss / 2**20 for k, p in procs.items()}
    peak = dict(before)
    done = threading.Event()

    def sample():
        while not done.wait(0.1):
            for k, p in procs.items():
                peak[k] = max(peak[k], p.memory_info().rss / 2**20)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    began = time.perf_counter()
    try:
        seconds(model, mech, s_dp, n, dw.Record(groups=dw.parallel.Dask(client, partition=part)), iterations,
                chains)
    finally:
        done.set()
        watcher.join()
    wall = time.perf_counter() - began
    records_mb = n * model.record_size * 8 / 2**20
    print(f"one cluster run of {chains} chain(s) of {iterations} iterations, {wall:.0f} s; "
          f"the records of a chain: "
          f"{records_mb:.0f} MB in all, {records_mb / len(pids):.0f} MB per worker")
    for k in procs:
        print(f"  {k}: RSS {before[k]:.0f} MB before the run, peak {peak[k]:.0f} MB during it")


def main() -> None:
    from distributed import Client, LocalCluster

    ap = parser(__doc__, records=1_000_000, areas=2000, regions=16, categories=4, short=3,
                iterations=20, rounds=3, by_area_groups=0)
    ap.add_argument("--census", action="store_true")
    ap.add_argument("--pair-moves", default="auto", help="with --census: census.model's")
    ap.add_argument("--nation-rho", type=float, default=2.0,
                    help="with --census: the nation's rho (2: its pieces are pinned, and a "
                         "cluster chain refuses the pair move: give --pair-moves 0; 0.05 with "
                         "--pair-moves 0.5: both moves run in the groups)")
    ap.add_argument("--memory", action="store_true")
    ap.add_argument("--chains", type=int, default=1, help="chains of the --memory run")
    args = ap.parse_args()

    if args.census:  # the census problem of parallel_sweep.py (this folder)
        from parallel_sweep import problem as census_problem

        settings = argparse.Namespace(states=8, blocks=250, races=3, collapsed_moves="auto",
                                      pair_moves=args.pair_moves, nation_rho=args.nation_rho)
        model, mech, s_dp, n, geo = census_problem(args.records, settings)
        part = None
        print(f"n = {n}, census: {geo.units[-1]} blocks in 8 states, {geo.cells} cells, "
              f"release size {mech.size}, moves {model.records_move.name!r}; cpus "
              f"{os.cpu_count()}, load {os.getloadavg()}")
    else:
        model, mech, s_dp, sizes = problem(args.records, args.areas, args.regions,
                                           args.categories)
        n = int(sizes.sum())
        part = (by_area(sizes, args.categories, args.regions, args.by_area_groups)
                if args.by_area_groups else None)
        print(f"n = {n}, {args.areas} areas in {args.regions} regions, {args.categories} "
              f"categories, release size {mech.size}; cpus {os.cpu_count()}, load "
              f"{os.getloadavg()}")
    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                           dashboard_address=":0")
    client = Client(cluster)
    if args.memory:
        try:
            client.run(lambda: __import__("dawrap"))
            memory(model, mech, s_dp, n, client, part, args.short, args.chains)
        finally:
            client.close()
            cluster.close()
        return
    timings = _Timings()
    logger.addHandler(timings)
    logger.setLevel(logging.INFO)
    methods = {"serial": dw.Record(),
               "threads=2": dw.Record(groups=dw.parallel.Threads(2, partition=part)),
               "dask 2 workers": dw.Record(groups=dw.parallel.Dask(client, partition=part))}
    try:
        for name, method in methods.items():  # compile everywhere first (not timed)
            seconds(model, mech, s_dp, n, method, 1)
        per_iteration = {name: [] for name in methods}
        sweeps = []
        for r in range(args.rounds):
            for name, method in methods.items():
                short = seconds(model, mech, s_dp, n, method, args.short)
                timings.seen.clear()
                long = seconds(model, mech, s_dp, n, method, args.short + args.iterations)
                per_iteration[name].append((long - short) / args.iterations)
                if name.startswith("dask"):
                    sweeps.extend(timings.seen)
            print(f"round {r}: " + ", ".join(f"{k} {v[-1]:.4f} s/it"
                                             for k, v in per_iteration.items()), flush=True)
        med = {k: statistics.median(v) for k, v in per_iteration.items()}
        count = sum(t["sweeps"] for t in sweeps)
        comm = sum(t["communication"] for t in sweeps) / count
        comp = sum(t["computation"] for t in sweeps) / count
        groups = (args.by_area_groups
                  or ("model's (by state)" if args.census else "model's (by region)"))
        print(f"groups: {groups}; seconds per iteration (median of {args.rounds}): "
              + ", ".join(f"{k} {v:.4f}" for k, v in med.items()))
        print(f"speed-up over the serial sweep: threads=2 {med['serial'] / med['threads=2']:.2f}x, "
              f"dask 2 workers {med['serial'] / med['dask 2 workers']:.2f}x")
        print(f"dask: per sweep {1e3 * comm:.2f} ms communication (client wall less the slowest "
              f"worker's sweep), {1e3 * comp:.2f} ms the slowest worker's sweep "
              f"({count} sweeps of the long runs)")
    finally:
        client.close()
        cluster.close()
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
