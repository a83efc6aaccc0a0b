"""Cost of a record update against the number of released cells K (issue 14).

``dirichlet_multinomial`` with the O(1) uniform proposal, Laplace noise (epsilon = 1) on all
K counts, n records fixed. Three variants in one process, on the same data:

* sparse: the built-in declaration (``one_hot`` is declared sparse, the Laplace density is
  separable): a record update touches the old and the new cell only;
* dense: the same statistic without the declaration (every update O(K));
* sparse with the prior proposal (``draw_record`` scans K probabilities: O(K)).

Reported: ns per record update (sweeps only, theta fixed at the truth), the ratio to the
smallest K, and ms per full iteration (conjugate theta draw, O(K), plus one sweep).

Run: python benchmarks/tables_scaling.py [--n 20000] [--cells 10 100 1000 10000 100000]
     [--sweeps 20] [--dense-up-to 10000]
"""
from __future__ import annotations

import argparse
import time

import numba
import numpy as np

import dawrap as dw
from dawrap.models import dirichlet_multinomial as dm
from dawrap.samplers import record, sparse
from dawrap.samplers.kernels import engine_form


@numba.njit(nogil=True)
def dense_one_hot(x_i, out):
    """``one_hot`` without its sparse declaration: the dense path."""
    dm.one_hot(x_i, out)


def setup(model, mech, k, n, seed):
    """A state at the truth, the functions and the sweep, as the driver builds them."""
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(k))
    x = rng.choice(k, size=n, p=p).astype(float)[:, None]
    counts = np.bincount(x[:, 0].astype(int), minlength=k).astype(float)
    s_dp = mech.release_given_total(rng, counts)
    fns = record.RecordFunctions(model.draw_record, model.propose_record, model.model_stat,
                                 mech.engine_statistic, mech.log_density, model.theta_support,
                                 model.record_support, **sparse.sparse_fields(model, mech))
    shared = model.user_model_stat is mech.statistic
    sweep = record.make_sweep(1, k, k, model.general_proposal, shared, False,
                              sparse=fns.nnz > 0)
    state = record.init(p, x, s_dp, mech.params, fns, k)
    return state, s_dp, fns, sweep


def time_sweeps(model, mech, k, n, sweeps, seed):
    """Best of 3 over ``sweeps`` sweeps: ns per record update; and ms per full iteration."""
    state, s_dp, fns, sweep = setup(model, mech, k, n, seed)
    rng = np.random.default_rng(seed)
    sweep(rng, state, s_dp, mech.params, fns)  # compile
    best = np.inf
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(sweeps):
            state, info = sweep(rng, state, s_dp, mech.params, fns)
        best = min(best, time.perf_counter() - t)
        assert info.status == record.OK
    kernel = engine_form(model.draw_theta, False).step
    trace = record.Trace(*(np.empty((sweeps, k)) if f == "theta" else
                           np.empty((0, k)) if f == "total" else np.empty(sweeps)
                           for f in record.Trace._fields))
    args = (s_dp, mech.params, fns, kernel, sweep)
    record.run(rng, state, *args, 0, 1, 0, trace, record.no_move, 1)  # compile
    t = time.perf_counter()
    record.run(rng, state, *args, 0, sweeps, 0, trace, record.no_move, 1)
    iteration = (time.perf_counter() - t) / sweeps
    return best / (sweeps * n) * 1e9, iteration * 1e3, info.accept_rate


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--cells", type=int, nargs="+", default=[10, 100, 1000, 10_000, 100_000])
    ap.add_argument("--sweeps", type=int, default=20)
    ap.add_argument("--dense-up-to", type=int, default=10_000)
    args = ap.parse_args()
    print(f"n = {args.n:,} records, {args.sweeps} sweeps, best of 3; Laplace(epsilon = 1)\n")
    print("| K | sparse ns/update | ratio to smallest K | sparse ms/iteration | accept | "
          "dense ns/update | sparse, prior proposal ns/update |")
    print("|---|---|---|---|---|---|---|")
    base = None
    for k in args.cells:
        mech = dm.laplace(epsilon=1.0, categories=k)
        uniform = dm.model(np.ones(k), proposal="uniform")
        ns, ms, acc = time_sweeps(uniform, mech, k, args.n, args.sweeps, 1)
        base = base or ns
        dense = prior = "-"
        if k <= args.dense_up_to:
            dense_mech = dw.Laplace(dense_one_hot, epsilon=1.0, sensitivity=2.0, size=k)
            dense = f"{time_sweeps(uniform, dense_mech, k, args.n, args.sweeps, 1)[0]:,.0f}"
            prior = f"{time_sweeps(dm.model(np.ones(k)), mech, k, args.n, args.sweeps, 1)[0]:,.0f}"
        print(f"| {k:,} | {ns:,.0f} | {ns / base:.2f} | {ms:.2f} | {acc:.2f} | {dense} | {prior} |",
              flush=True)


if __name__ == "__main__":
    main()
