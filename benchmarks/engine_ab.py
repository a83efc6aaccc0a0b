"""This checkout's record sampler against another version of ``dawrap/samplers/record.py``,
in one process, interleaved (issue 27 items 2 and 5).

The other version is loaded from a file as a second module of the package (``git show
REV:dawrap/samplers/record.py > old.py``), so both bind the same model's functions and run
on the same data in the same rounds: machine load affects both alike and the ratios hold
on a shared machine. Two measurements:

* ``update``: ns per record update of the beta-binomial chain (``chain.run``, n records,
  conjugate theta step) against the minimal hand-written loop of
  ``benchmarks/record_update.py`` (the issue's yardstick: within 1.2x);
* ``cells``: ns per record update of the entries sweep (``dirichlet_multinomial``, uniform
  proposal, Laplace on all K counts) at K = 10 and 10^6, as ``benchmarks/tables_scaling.py``
  (the issue's goal: within 2x).

It also checks that every version draws the same theta (update) and records (cells).

    python benchmarks/engine_ab.py update old=old.py [--n 1000000 --sweeps 10 --rounds 5]
    python benchmarks/engine_ab.py cells old=old.py [--n 20000 --cells 10 1000000 --rounds 4]
"""
from __future__ import annotations

import importlib.util
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import parser  # noqa: E402
import record_update  # noqa: E402
import tables_scaling  # noqa: E402
from dawrap.models import beta_binomial, dirichlet_multinomial as dm  # noqa: E402
from dawrap.samplers import record  # noqa: E402
from dawrap.samplers.kernels import as_kernel  # noqa: E402


def load(path: str, label: str):
    """``path`` (a record.py) as the module ``dawrap.samplers.record_<label>``."""
    spec = importlib.util.spec_from_file_location(f"dawrap.samplers.record_{label}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def engine(module, model, mech, theta, x, s_dp):
    """``go(sweeps) -> (seconds, theta draws)`` for ``module``'s chain of ``model``."""
    fns = module.RecordFunctions(model.draw_record, model.propose_record, model.model_stat,
                                 mech.sampler_statistic, mech.log_density)
    sizes = (model.record_size, mech.size, model.stat_size)
    shared, step = model.user_model_stat is mech.statistic, as_kernel(model.draw_theta, False).step
    if hasattr(module, "SweepOptions"):  # (a version of record.py since issue 42)
        chain = module.bind_chain(fns, module.SweepOptions(*sizes, shared=shared),
                                  kernel_step=step)
    else:
        chain = module.bind_chain(fns, *sizes, shared=shared, kernel_step=step)
    inputs = module.Inputs(s_dp, mech.params, 1)

    def go(sweeps):
        looped = "stats" in module.Trace._fields  # issue 28: chain.run is the one run loop
        trace = (module.Trace(np.empty((sweeps, 1)), np.empty((sweeps, 4)), np.empty((0, 1)))
                 if looped else module.Trace(np.empty((sweeps, 1)),
                                             *(np.empty(sweeps) for _ in range(4)),
                                             np.empty((0, 1))))
        state = chain.init(model.pack(theta), x.copy(), inputs, np.empty(0), np.empty(0))
        rng = np.random.default_rng(1)
        started = time.perf_counter()
        chain.run(rng, state, inputs, 0, sweeps, 0, *(trace if looped else (trace,)))
        return time.perf_counter() - started, trace.theta.copy()
    return go


def update(versions, args):
    model, mech, theta = beta_binomial.model(1.0, 1.0), beta_binomial.laplace(0.5), {"p": 0.3}
    x = model.simulate(theta, args.n, seed=1)
    s_dp = mech.release(x, seed=2)
    runners = {label: engine(m, model, mech, theta, x, s_dp) for label, m in versions.items()}

    def minimal(sweeps):
        a = (np.random.default_rng(1), x[:, 0].copy(), float(x.sum()), float(s_dp[0]), 2.0,
             1.0, 1.0, sweeps)
        started = time.perf_counter()
        record_update.minimal_beta_binomial(*a)
        return time.perf_counter() - started, None
    runners["minimal loop"] = minimal
    draws = {label: go(2)[1] for label, go in runners.items()}  # compiles
    best = dict.fromkeys(runners, math.inf)
    for _ in range(args.rounds):
        for label, go in runners.items():
            best[label] = min(best[label], go(args.sweeps)[0])
    print(f"n = {args.n:,}, {args.sweeps} sweeps, best of {args.rounds} interleaved rounds\n")
    print("| version | ns per record update | ratio to the minimal loop |\n|---|---|---|")
    for label, seconds in best.items():
        print(f"| {label} | {seconds / (args.n * args.sweeps) * 1e9:.1f} | "
              f"{seconds / best['minimal loop']:.3f} |")
    print("\nsame theta draws in every version:",
          all(np.array_equal(draws[v], draws["this checkout"]) for v in versions))


def cells(versions, args):
    cases = {}
    for label, module in versions.items():
        tables_scaling.record = module  # Case binds through tables_scaling.record
        for k in args.cells:
            cases[label, k] = tables_scaling.Case(dm.model(np.ones(k), proposal="uniform"),
                                                  dm.laplace(1.0, k), k, args.n, 1)
    tables_scaling.record = record
    for _ in range(args.rounds):
        for case in cases.values():
            case.time(5)
    print(f"n = {args.n:,}, best of {args.rounds} interleaved rounds of 5 sweeps\n")
    print(f"| version | K | ns per record update | ratio to K = {args.cells[0]:,} |\n|---|---|---|---|")
    for (label, k), case in cases.items():
        print(f"| {label} | {k:,} | {case.best:.0f} | "
              f"{case.best / cases[label, args.cells[0]].best:.2f} |")
    last = {label: cases[label, args.cells[-1]].state.x for label in versions}
    print("\nsame records in every version:",
          all(np.array_equal(v, last["this checkout"]) for v in last.values()))


def main():
    ap = parser(__doc__, sweeps=10, rounds=5, cells=[10, 1_000_000])
    ap.add_argument("what", choices=["update", "cells"])
    ap.add_argument("versions", nargs="*", metavar="LABEL=PATH")
    ap.add_argument("--n", type=int)
    args = ap.parse_args()
    args.n = args.n or (1_000_000 if args.what == "update" else 20_000)
    versions = {"this checkout": record}
    for spec in args.versions:
        label, path = spec.split("=", 1)
        versions[label] = load(path, label.replace("-", "_"))
    print(f"# load average at start: {os.getloadavg()}")
    (update if args.what == "update" else cells)(versions, args)
    print(f"# load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
