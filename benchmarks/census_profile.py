"""Where a census iteration's time goes, and whether two chains run on two cores (issue 24).

The setting of ``census_convergence.py`` (``small_area``: ``--records`` records in
``--areas`` areas, 10 per tract, 6 categories, rho 0.5 per level). Measured, in CPU seconds
of the thread that does the work (``time.thread_time``: on a shared machine wall time
depends on the other jobs, a thread's CPU time far less):

* one record sweep (``Chain.sweep``), per sweep and per record;
* one step of the hierarchy kernel (``model.draw_theta``) on the same counts;
* one whole iteration (``Chain.run``: kernel, sweep, the model statistic's recount, the draw
  written to the trace);
* the GIL: a pure-Python loop in the main thread while a chain runs in another; the longest
  pause between two of its iterations says whether the chain's compiled call holds the GIL
  (then the pause is as long as the call, ``CHUNK_SECONDS`` or more) or not;
* one chain alone, then two chains in two threads at once: each chain's CPU seconds and the
  wall time (two free cores: the same CPU per chain and the same wall time);
* the kept draws' memory: chains x draws x theta floats (``dw.sample`` holds them about twice
  while it builds the result).

Run: python benchmarks/census_profile.py [--records 1000000] [--areas 10000] [--iterations 10]
"""
from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np

import dawrap as dw
from dawrap.models import small_area
from dawrap.runner.chains import CHUNK_SECONDS
from dawrap.runner.record import _new_trace, _Setup

sys.path.insert(0, os.path.dirname(__file__))
from _common import parser  # noqa: E402
from census_convergence import simulate  # noqa: E402


def cpu(func, repeat: int) -> float:
    """CPU seconds of this thread per call of ``func``."""
    began = time.thread_time()
    for _ in range(repeat):
        func()
    return (time.thread_time() - began) / repeat


def longest_pause(seconds: float, worker: threading.Thread | None = None) -> float:
    """The longest pause between two iterations of a Python loop over ``seconds``, or while
    ``worker`` runs."""
    began = last = time.perf_counter()
    pause = 0.0
    while (worker.is_alive() if worker is not None else last - began < seconds):
        now = time.perf_counter()
        pause, last = max(pause, now - last), now
    return pause


def main():
    ap = parser(__doc__, records=1_000_000, areas=10_000, iterations=10)
    args = ap.parse_args()
    n, reps = args.records, args.iterations
    sizes, tracts, x = simulate(n, args.areas, 10, 6)
    mech = small_area.discrete_gaussian(tracts, 6, rho=(0.5, 0.5))
    s_dp = mech.release(x, seed=1)
    model = small_area.model(sizes, 6)
    rng = np.random.default_rng(0)
    theta = model.pack(model.draw_prior(rng))
    setup = _Setup(model, mech, s_dp, n)
    setup.probe_theta(theta, x.copy())  # binds the compiled hierarchy kernel
    chain, kernel = setup.chain, model.draw_theta
    state = setup.fresh_state(theta.copy(), x.copy())
    trace = _new_trace(reps + 1, theta.shape[0], mech.size, False)
    began = time.perf_counter()
    chain.sweep(rng, state, setup.s_dp, setup.params)
    chain.run(rng, state, setup.inputs, 0, 1, 0, *trace)
    kernel_state = kernel.init_state(theta)
    kernel.step(rng, theta, state.x, state.stats.copy(), kernel_state, False)
    compile_s = time.perf_counter() - began
    print(f"records {n:,}, areas {args.areas:,}, theta {theta.shape[0]:,} floats; load "
          f"{os.getloadavg()[0]:.1f}; compiling (or loading) the chain: {compile_s:.1f} s "
          f"wall\n")
    sweep = cpu(lambda: chain.sweep(rng, state, setup.s_dp, setup.params), reps)
    step = cpu(lambda: kernel.step(rng, state.theta, state.x, state.stats.copy(),
                                   kernel_state, False), reps)
    done = [1]

    def iterate():
        chain.run(rng, state, setup.inputs, done[0], done[0] + 1, 0, *trace)
        done[0] += 1

    whole = cpu(iterate, reps)
    print("| part | CPU s per iteration | share of the iteration | ns per record |")
    print("|---|---|---|---|")
    for name, s in (("record sweep", sweep), ("hierarchy kernel", step),
                    ("rest (statistic recount, checks, draw stored)",
                     max(0.0, whole - sweep - step)),
                    ("whole iteration", whole)):
        print(f"| {name} | {s:.4f} | {s / whole:.0%} | {s / n * 1e9:.0f} |")

    def chain_run(iterations: int, out: list):
        # a chain of its own (its own state and generator), run as dw.sample's threads do
        own = setup.fresh_state(theta.copy(), x.copy())
        own_rng, own_trace = np.random.default_rng(len(out)), _new_trace(
            iterations, theta.shape[0], mech.size, False)
        began = time.thread_time()
        chain.run(own_rng, own, setup.inputs, 0, iterations, 0, *own_trace)
        out.append(time.thread_time() - began)

    alone = longest_pause(1.0)
    long_call = max(3, int(2.0 / whole))  # one call of at least about 2 CPU s
    worker = threading.Thread(target=chain_run, args=(long_call, []))
    worker.start()
    during = longest_pause(0.0, worker)
    worker.join()
    verdict = "holds" if during > 0.5 * long_call * whole else "does not hold"
    print(f"\nGIL: longest pause of a Python loop alone {alone * 1e3:.0f} ms; while a chain "
          f"runs {long_call} iterations in one compiled call ({long_call * whole:.1f} CPU s) "
          f"{during * 1e3:.0f} ms: the call {verdict} the GIL (holding it, it would pause "
          f"the loop for the whole call; the runner's calls last about {CHUNK_SECONDS} s, "
          f"or one iteration when that is longer)")
    results = {}
    for threads in (1, 2):
        out: list = []
        began = time.perf_counter()
        workers = [threading.Thread(target=chain_run, args=(reps, out)) for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        results[threads] = (time.perf_counter() - began, out)
    (wall1, cpu1), (wall2, cpu2) = results[1], results[2]
    print(f"\nchains in threads ({reps} iterations each; load {os.getloadavg()[0]:.1f}): one "
          f"chain {cpu1[0]:.1f} CPU s in {wall1:.1f} s wall; two at once "
          f"{' + '.join(f'{c:.1f}' for c in cpu2)} CPU s in {wall2:.1f} s wall "
          f"(CPU per chain {np.mean(cpu2) / cpu1[0]:.2f}x one chain's alone)")
    draws = 4 * 1000 * theta.shape[0] * 8 / 1e9
    print(f"\nkept draws with dw.sample's defaults (4 chains x 1000 draws x {theta.shape[0]:,} "
          f"floats): {draws:.2f} GB, held about twice while the result is built")


if __name__ == "__main__":
    main()
