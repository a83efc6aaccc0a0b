"""One chain's record sweep on 1 and 2 threads (issue 25, item 4): the census model at 10^6
records, grouped by state, the nation's cells shared (split into pieces each sweep).

The geography: one nation of ``--states`` states of ``--blocks`` blocks each (block sizes
public), persons by voting age x ``--races`` races; released (discrete Gaussian noise) the
blocks' detailed histograms (rho 0.5), the states' (rho 1) and the nation's (rho 2). The
model's partition (``census.model``) groups the records by state: every block and state cell
is one group's, the nation's cells are shared by all groups.

Measured, in one process, rounds interleaved (the machine is shared: each round times the
three one after the other, and the medians are reported):

* seconds per record sweep of the serial sweep (``dw.Record()``'s), and of the grouped
  sweep (:mod:`dawrap.samplers.parallel`) on 1 and 2 threads; the speed-up of 2 threads
  over 1, and over the serial sweep; the census moves' seconds (the pair move, then the
  collapsed move unless ``--collapsed-moves 0``, before each iteration's sweeps) on the
  whole database, as the serial chain runs them, and in the groups on 1 and 2 threads
  (:mod:`dawrap.samplers.group_moves`, as a threaded chain runs them), and the speed-ups of
  an iteration (moves and sweep);
* a control: the same ratio for a loop that is perfectly parallel (independent uniform
  draws in a ``nogil`` function, on 1 thread then split over 2), timed in the same rounds:
  what this machine gave two threads at that moment;
* the mixing cost of the pieces: ``dw.sample`` serial and on ``dw.parallel.Threads(2)``, one chain of
  ``--tune`` + ``--draws`` iterations each from the same seed, bulk ESS per iteration (one
  sweep each) of the worst parameter entry and of the nation's probabilities and
  ``log_alpha``; and ESS per wall-second of the worst entry.

The ESS runs use ``--ess-records`` records (default ``--records``): at 10^6 records a run
long enough for a stable ESS takes hours on a shared 2-core machine.

Run: python benchmarks/parallel_sweep.py [--records 1000000 --states 8 --blocks 250
     --races 3 --rounds 15 --tune 100 --draws 300 --ess-records 100000
     --collapsed-moves auto --pair-moves auto --nation-rho 2] [--no-ess]
"""
from __future__ import annotations

import os
import statistics
import time

import numba
import numpy as np
from concurrent.futures import ThreadPoolExecutor

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import census
from dawrap.runner.grouped import GroupedChain
from dawrap.runner.record import _Setup

from _common import parser


def synthetic(records: int, states: int, blocks: int, races: int, seed: int = 25):
    """The geography, public block sizes and the confidential counts (state shares around
    the nation's, blocks around their state's)."""
    rng = np.random.default_rng(seed)
    units = states * blocks
    geo = census.Geography({"nation": np.zeros(units, int),
                            "state": np.repeat(np.arange(states), blocks),
                            "block": np.arange(units)}, {"voting_age": 2, "race": races})
    top = rng.dirichlet(np.full(geo.cells, 2.0))
    p_state = rng.dirichlet(100.0 * top, states)
    p_block = np.array([rng.dirichlet(30.0 * p_state[s]) for s in np.repeat(np.arange(states),
                                                                            blocks)])
    sizes = 1 + rng.multinomial(records - units, np.full(units, 1.0 / units))
    return geo, sizes, rng.multinomial(sizes, p_block)


@numba.njit(nogil=True)
def _uniforms(rng, count):
    total = 0.0
    for _ in range(count):
        total += rng.random()
    return total


def control(pool, count: int, threads: int) -> float:
    """Seconds for ``count`` uniform draws split over ``threads`` threads (nogil)."""
    rngs = [np.random.default_rng(t) for t in range(threads)]
    began = time.perf_counter()
    if threads == 1:
        _uniforms(rngs[0], count)
    else:
        list(pool.map(lambda r: _uniforms(r, count // threads), rngs))
    return time.perf_counter() - began


def sweep_times(model, mech, s_dp, n: int, rounds: int) -> dict:
    """Median seconds per sweep: serial, grouped on 1 and on 2 threads (rounds interleaved)."""
    setup = _Setup(model, mech, s_dp, n)
    rng = np.random.default_rng(0)
    theta, x = setup.initial_state(rng, None, None, probe=True)
    states = {name: setup.fresh_state(theta.copy(), x.copy()) for name in ("serial", 1, 2)}
    groups = {t: GroupedChain(setup, dw.parallel.Threads(t), np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(1))), states[t], chain=0) for t in (1, 2)}
    for t, g in groups.items():
        g.recount(states[t])
    chain_rng = {name: np.random.default_rng(2) for name in states}

    def once(name):
        began = time.perf_counter()
        if name == "move":  # the census moves on the whole database, as the serial chain
            states["serial"] = setup.move.step(chain_rng[name], states["serial"], s_dp,
                                          setup.params, False)[0]
        elif isinstance(name, tuple):  # the same moves in the groups, as a threaded chain
            t = name[1]
            states[t] = groups[t].move(chain_rng[name], states[t], False)[0]
        elif name == "serial":
            states[name] = setup.chain.sweep(chain_rng[name], states[name], s_dp,
                                             setup.params)[0]
        else:
            groups[name].sweep(chain_rng[name], states[name])
        return time.perf_counter() - began

    timed = (*states, "move", ("move", 1), ("move", 2))
    for name in timed[3:]:
        chain_rng[name] = np.random.default_rng(3)
    for name in timed:  # compile, and a first sweep from the start
        once(name)
        once(name)
    times = {name: [] for name in (*timed, "control 1", "control 2")}
    count = 10 * n  # about a sweep's time on one thread
    pool = ThreadPoolExecutor(2)
    control(pool, 10, 1)
    for _ in range(rounds):
        for name in timed:
            times[name].append(once(name))
        times["control 1"].append(control(pool, count, 1))
        times["control 2"].append(control(pool, count, 2))
    pool.shutdown()
    for g in groups.values():
        g.close()
    return {name: statistics.median(v) for name, v in times.items()} | {
        "groups": partition.groups, "shared": int(partition.shared_cells.shape[0]),
        "parts": groups[1].moves}


def mixing(model, mech, s_dp, n: int, tune: int, draws: int, threads) -> dict:
    """Bulk ESS per iteration of the worst entry, the nation's p and log_alpha; ESS/s."""
    began = time.perf_counter()
    idata = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=1, seed=5,
                      progress=False, method=dw.Record(groups=dw.parallel.Threads(threads) if threads else None))
    seconds = time.perf_counter() - began
    post = diagnostics.group(idata, "posterior")
    ess = {}
    for name in post.data_vars:
        values = post[name].values
        flat = values.reshape(values.shape[0], values.shape[1], -1)
        ess[name] = np.array([diagnostics.ess(flat[..., j], "bulk")
                              for j in range(flat.shape[2])])
    worst = min(v.min() for v in ess.values())
    return {"worst": worst / draws, "nation": ess["p_nation"].min() / draws,
            "alpha": ess["log_alpha"].min() / draws, "per_second": worst / seconds,
            "seconds": seconds}


def problem(records: int, args):
    """The model, mechanism, release, n and geography at ``records`` records."""
    geo, sizes, counts = synthetic(records, args.states, args.blocks, args.races)
    number = lambda value: value if value == "auto" else float(value)
    model = census.model(geo, totals=sizes, collapsed_moves=number(args.collapsed_moves),
                         pair_moves=number(args.pair_moves))
    mech = census.discrete_gaussian(geo, [census.query("block", rho=0.5),
                                          census.query("state", rho=1.0),
                                          census.query("nation", rho=args.nation_rho)])
    return model, mech, mech.release(census.records(counts), seed=1), int(sizes.sum()), geo


def main():
    ap = parser(__doc__, records=1_000_000, states=8, blocks=250, races=3, rounds=15, tune=100,
                draws=300)
    ap.add_argument("--ess-records", type=int, default=None)
    ap.add_argument("--collapsed-moves", default="auto",
                    help="census.model's collapsed_moves: 'auto' (default) or a number")
    ap.add_argument("--pair-moves", default="auto",
                    help="census.model's pair_moves: 'auto' (default) or a number")
    ap.add_argument("--nation-rho", type=float, default=2.0,
                    help="the nation's rho (default 2: sigma 0.71, its 8 pieces pinned, "
                         "so the pair move runs on the whole database)")
    ap.add_argument("--no-ess", action="store_true")
    args = ap.parse_args()
    model, mech, s_dp, n, geo = problem(args.records, args)
    print(f"n = {n}, {geo.units[-1]} blocks in {args.states} states, {geo.cells} cells, "
          f"release size {mech.size}; cpus {os.cpu_count()}, load {os.getloadavg()}")
    t = sweep_times(model, mech, s_dp, n, args.rounds)
    print(f"groups {t['groups']}, shared cells {t['shared']}")
    print(f"seconds per sweep (median of {args.rounds}): serial {t['serial']:.4f}, grouped "
          f"1 thread {t[1]:.4f}, 2 threads {t[2]:.4f}")
    print(f"speed-up 2 threads / 1 thread: {t[1] / t[2]:.2f}x; over the serial sweep: "
          f"{t['serial'] / t[2]:.2f}x; grouped 1 thread / serial: {t[1] / t['serial']:.2f}")
    print(f"control (a perfectly parallel nogil loop, same rounds): 2 threads / 1 thread "
          f"{t['control 1'] / t['control 2']:.2f}x")
    move, m1, m2 = t["move"], t[("move", 1)], t[("move", 2)]
    print(f"moves: {model.records_move.name if model.records_move else None}; in the groups "
          f"(threads): {[layout is not None for _, layout in t['parts']]}")
    print(f"the census moves (pair, then collapsed, before each iteration's sweep): on the "
          f"whole database {move:.4f} s; in the groups 1 thread {m1:.4f} s, 2 threads "
          f"{m2:.4f} s ({m1 / m2:.2f}x)")
    print(f"per iteration (moves and sweep), 2 threads / 1 thread: "
          f"{(t[1] + m1) / (t[2] + m2):.2f}x, over the serial chain: "
          f"{(t['serial'] + move) / (t[2] + m2):.2f}x (with the moves serial between threaded "
          f"sweeps, as before: {(t['serial'] + move) / (t[2] + move):.2f}x)")
    print(f"ns per record update: serial {1e9 * t['serial'] / n:.1f}, grouped 1 thread "
          f"{1e9 * t[1] / n:.1f}, 2 threads {1e9 * t[2] / n:.1f} (wall)")
    if not args.no_ess:
        if args.ess_records is not None and args.ess_records != args.records:
            model, mech, s_dp, n, _ = problem(args.ess_records, args)
        print(f"ESS runs: n = {n}, {args.tune} + {args.draws} iterations, one chain each")
        for label, threads in (("serial", None), ("2 threads", 2)):
            m = mixing(model, mech, s_dp, n, args.tune, args.draws, threads)
            print(f"{label}: bulk ESS per iteration worst {m['worst']:.3f}, p_nation min "
                  f"{m['nation']:.3f}, log_alpha min {m['alpha']:.3f}; worst ESS per second "
                  f"{m['per_second']:.3f} ({m['seconds']:.0f} s for {args.tune + args.draws} "
                  f"iterations incl. start)")
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
