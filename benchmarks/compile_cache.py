"""Prototype for issue 15 item 1 ("compile once, ever"): can a built-in model's compiled
record chain load from numba's disk cache in a fresh process?

Today ``dawrap.samplers.record.run`` takes the model's functions as first-class arguments
(a ``RecordFunctions`` NamedTuple of dispatchers, the theta kernel, the sweep, the move), so
its signature holds ``types.Dispatcher`` types. numba's cache index key is ``(signature,
target, (hash of the bytecode, hash of the pickled closure cells))``
(``numba.core.caching.Cache._index_key``): a dispatcher type pickles by a weak reference to
its dispatcher, which is why ``run`` is not ``cache=True`` (see record.py's docstring).

The prototype: an *entry* function whose arguments are plain arrays and numbers, and which
reaches the model's functions through its **globals**, not through arguments or closure
cells. numba freezes globals as compile-time constants and leaves them out of the index key,
so the entry's key is stable across processes. One template's bytecode serves every model:
``_bind`` copies it with its own globals dict and a ``__qualname__`` naming the model and the
kernel options, which names the cache's index file (so two bindings never share an index).

Run ``python benchmarks/compile_cache.py`` : each case runs in a fresh subprocess with its
own ``NUMBA_CACHE_DIR``, first cold (empty cache) then warm; the figures are the seconds
from the start of the subprocess to the end of its first chain of 1000 iterations.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
import types as pytypes

import numpy as np

from dawrap.samplers import record

CASES = ("today", "entry", "bound")


def _bind(template, qualname: str, **bound):
    """A copy of ``template`` whose globals are its module's plus ``bound``."""
    namespace = dict(template.__globals__, **bound)
    func = pytypes.FunctionType(template.__code__, namespace, template.__name__,
                                template.__defaults__, template.__closure__)
    func.__qualname__ = qualname
    func.__module__ = template.__module__
    return func


def _run_template(rng, state, s_dp, params, start, stop, tune, trace, sweeps):
    # FNS, KERNEL, SWEEP, MOVE and RUN are bound by _bind: globals, frozen at compile time
    return RUN(rng, state, s_dp, params, FNS, KERNEL, SWEEP,  # noqa: F821
               start, stop, tune, trace, MOVE, sweeps)  # noqa: F821


# --- case "bound": the chain's own functions are templates calling the model's functions
# by global name; _bind gives each model its copies. Calls to a global dispatcher are
# resolved at typing and never lower the dispatcher as a value, so no dynamic global.
# Copied from dawrap.samplers.record (sweep, step, run), with fns.X -> X and the sweep's
# closure constants (general, shared, random_scan) -> globals GENERAL, SHARED, RANDOM_SCAN.

def _sweep_t(rng, state, s_dp, params):
    theta, x, stats, total = state.theta, state.x, state.stats, state.total
    n = x.shape[0]
    proposal = np.empty(RECORD_SIZE)  # noqa: F821 (bound)
    t_old, t_new, total_new = np.empty(M), np.empty(M), np.empty(M)  # noqa: F821
    s_old, s_new = np.empty(K), np.empty(K)  # noqa: F821
    log_g = state.log_g
    accepted = 0
    min_log_alpha = 0.0
    nan_seen = False
    for visit in range(n):
        i = rng.integers(0, n) if RANDOM_SCAN else visit  # noqa: F821
        x_i = x[i]
        DRAW_RECORD(rng, theta, proposal)  # noqa: F821
        log_alpha = 0.0
        MECH_STAT(x_i, s_dp, t_old)  # noqa: F821
        MECH_STAT(proposal, s_dp, t_new)  # noqa: F821
        unchanged = True
        for j in range(M):  # noqa: F821
            total_new[j] = total[j] + (t_new[j] - t_old[j])
            unchanged = unchanged and t_new[j] == t_old[j]
        if unchanged:
            for j in range(RECORD_SIZE):  # noqa: F821
                x_i[j] = proposal[j]
            accepted += 1
            continue
        log_g_new = LOG_DENSITY(s_dp, total_new, params)  # noqa: F821
        log_alpha += log_g_new - log_g
        nan_seen |= log_alpha != log_alpha
        if log_alpha < min_log_alpha:
            min_log_alpha = log_alpha
        if log_alpha >= 0.0 or rng.random() < math.exp(log_alpha):
            for j in range(K):  # noqa: F821
                stats[j] += t_new[j] - t_old[j]
            for j in range(M):  # noqa: F821
                total[j] = total_new[j]
            for j in range(RECORD_SIZE):  # noqa: F821
                x_i[j] = proposal[j]
            log_g = log_g_new
            accepted += 1
    status = record.OK
    if nan_seen:
        status = record.BAD_RATIO
    info = record.StepInfo(accepted / n, math.exp(min_log_alpha), status, math.nan)
    return record.RecordState(theta, x, stats, total, log_g, state.kernel_state,
                              state.move_state), info


def _step_t(rng, state, s_dp, params, tuning):
    theta_new, theta_accept = KERNEL(rng, state.theta, state.x, state.stats.copy(),  # noqa: F821
                                     state.kernel_state, tuning)
    status = record.set_theta(state, theta_new)
    if status == record.OK and not THETA_SUPPORT(state.theta):  # noqa: F821
        status = record.BAD_SUPPORT
    if status != record.OK:
        return state, record.StepInfo(0.0, 0.0, status, math.nan), theta_accept
    state, info = SWEEP(rng, state, s_dp, params)  # noqa: F821
    return state, info, theta_accept


def _run_t(rng, state, s_dp, params, start, stop, tune, trace):
    for it in range(start, stop):
        state, info, theta_accept = STEP(rng, state, s_dp, params, it < tune)  # noqa: F821
        if info.status != record.OK:
            return state, it, info.status
        if it >= tune:
            record.store_draw(trace, it - tune, state, info, theta_accept)
    return state, stop, record.OK


def _bound_chain(name: str, fns, kernel, record_size: int, m: int, k: int):
    """The three templates bound to one model, each cached under its own qualname."""
    import numba

    common = dict(DRAW_RECORD=fns.draw_record, MECH_STAT=fns.mech_stat,
                  LOG_DENSITY=fns.log_density, THETA_SUPPORT=fns.theta_support,
                  KERNEL=kernel, RECORD_SIZE=record_size, M=m, K=k, RANDOM_SCAN=False)
    jit = numba.njit(nogil=True, cache=True)
    sweep = jit(_bind(_sweep_t, f"sweep__{name}", **common))
    step = jit(_bind(_step_t, f"step__{name}", SWEEP=sweep, **common))
    return jit(_bind(_run_t, f"run__{name}", STEP=step, **common))


def _child(case: str) -> dict:
    began = time.perf_counter()
    import numba
    import numpy as np

    from dawrap.models import beta_binomial
    from dawrap.runner import record as runner
    from dawrap.samplers import record

    model, mech = beta_binomial.model(a=1, b=1), beta_binomial.laplace(epsilon=0.5)
    setup = runner._Setup(model, mech, np.array([312.4]), 1000)
    rng = np.random.default_rng(0)
    theta = np.array([0.3])
    x = record.draw_database(rng, theta, 1000, 1, model.draw_record)
    setup.probe_theta(theta, x)
    state = setup.fresh_state(theta, x)
    trace = runner._new_trace(1000, 1, 1, False)
    imported = time.perf_counter()
    if case == "today":
        out = record.run(rng, state, setup.s_dp, setup.params, setup.fns, setup.theta_kernel,
                         setup.sweep, 0, 1000, 0, trace, setup.move, setup.sweeps)
    elif case == "bound":
        entry = _bound_chain("beta_binomial_a1_b1__laplace", setup.fns, setup.theta_kernel, 1,
                             1, 1)
        out = entry(rng, state, setup.s_dp, setup.params, 0, 1000, 0, trace)
        print("cache hits/misses", dict(entry.stats.cache_hits), dict(entry.stats.cache_misses),
              file=sys.stderr)
    else:
        entry = numba.njit(nogil=True, cache=True)(_bind(
            _run_template, "run__beta_binomial_a1_b1__laplace__systematic",
            RUN=record.run, FNS=setup.fns, KERNEL=setup.theta_kernel, SWEEP=setup.sweep,
            MOVE=setup.move))
        out = entry(rng, state, setup.s_dp, setup.params, 0, 1000, 0, trace, setup.sweeps)
        print("cache hits/misses", dict(entry.stats.cache_hits), dict(entry.stats.cache_misses),
              file=sys.stderr)
    done = time.perf_counter()
    return {"setup": imported - began, "run": done - imported, "status": int(out[2]),
            "mean_p": float(trace.theta.mean())}


def main() -> None:
    results = {}
    began = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    for case in CASES:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            for temperature in ("cold", "warm"):
                out = subprocess.run([sys.executable, __file__, "--child", case], env=env,
                                     capture_output=True, text=True, check=True)
                results[case, temperature] = json.loads(out.stdout.splitlines()[-1])
                print(case, temperature, results[case, temperature], flush=True)
    _write(results, began)
    return results


DESCRIPTION = {
    "today": "`record.run` with the model's functions as arguments (today's code)",
    "entry": "a cache=True entry passing global dispatchers on to `record.run`",
    "bound": "the chain's functions as templates calling the model's functions by global "
             "name, bound per model (`_bind`), cache=True",
}


def _write(results: dict, began: str) -> None:
    import numba

    lines = ["# Compile cache prototype (issue 15 item 1)", "",
             f"`python benchmarks/compile_cache.py`, {began}, numba {numba.__version__}, "
             f"{os.cpu_count()} cores shared with other work (absolute times inflated; compare "
             "within a row). beta_binomial(a=1, b=1), Laplace(epsilon=0.5), n=1000, one "
             "chain of 1000 iterations. Each cell is a fresh process; 'cold' has an empty "
             "NUMBA_CACHE_DIR, 'warm' the cache the cold run left. 'setup' is import and "
             "everything before the chain (probes, starts: not cached by any case here); "
             "'chain' is the first call of the compiled chain, compilation included.", "",
             "| case | cold setup s | cold chain s | warm setup s | warm chain s | "
             "mean p (same draws?) |", "|---|---|---|---|---|---|"]
    for case in CASES:
        cold, warm = results[case, "cold"], results[case, "warm"]
        lines.append(f"| {case}: {DESCRIPTION[case]} | {cold['setup']:.1f} | "
                     f"{cold['run']:.2f} | {warm['setup']:.1f} | {warm['run']:.2f} | "
                     f"{cold['mean_p']!r} |")
    lines.append("")
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    with open(os.path.join(folder, "compile_cache.md"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(_child(sys.argv[2])))
    else:
        main()
