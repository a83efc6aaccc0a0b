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
     [--sweeps 5] [--rounds 5] [--dense-up-to 1000]
"""
from __future__ import annotations

import time

import numba
import numpy as np

import dawrap as dw
from dawrap.models import dirichlet_multinomial as dm
from dawrap.samplers import record, entries_path
from dawrap.samplers.kernels import as_kernel

from _common import Timed, interleaved, parser


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
                                 mech.sampler_statistic, mech.log_density, model.theta_support,
                                 model.record_support, **entries_path.entries_fields(model, mech))
    shared = model.user_model_stat is mech.statistic
    kernel = as_kernel(model.draw_theta, False).step
    chain = record.bind_chain(fns, record.SweepOptions(1, k, k, general=model.general_proposal,
                                                       shared=shared), kernel_step=kernel)
    inputs = record.Inputs(s_dp, mech.params, 1)
    state = chain.init(p, x, inputs, np.empty(0), np.empty(0))
    return state, s_dp, chain, inputs


class Case(Timed):
    """One variant at one K, ready to time: its state, functions and sweep."""

    def __init__(self, model, mech, k, n, seed):
        self.model, self.mech, self.k, self.n = model, mech, k, n
        self.state, self.s_dp, self.chain, self.inputs = setup(model, mech, k, n, seed)
        self.rng = np.random.default_rng(seed)
        self.run(1)  # compile

    def run(self, sweeps):
        t = time.perf_counter()
        for _ in range(sweeps):
            # inputs.params, read once as the runner does: Mechanism.params returns a
            # copy, O(K) per access (1.2 ms at 10^6 cells, once per sweep before).
            self.state, info = self.chain.sweep(self.rng, self.state, self.s_dp,
                                                self.inputs.params)
        assert info.status == record.OK
        self.accept = info.accept_rate
        return time.perf_counter() - t

    def iteration_ms(self, sweeps):
        """ms per full iteration: the conjugate theta draw (O(K)) and one sweep."""
        k = self.k
        trace = record.Trace(np.empty((sweeps, k)),
                             np.empty((sweeps, len(record.SAMPLE_STATS))), np.empty((0, k)))
        self.chain.run(self.rng, self.state, self.inputs, 0, 1, 0, *trace)  # compile
        t = time.perf_counter()
        self.chain.run(self.rng, self.state, self.inputs, 0, sweeps, 0, *trace)
        return (time.perf_counter() - t) / sweeps * 1e3


def main():
    ap = parser(__doc__, n=20_000, cells=[10, 100, 1000, 10_000, 100_000], sweeps=5, rounds=5,
                dense_up_to=1000)
    args = ap.parse_args()
    cases = {}
    for k in args.cells:
        mech = dm.laplace(epsilon=1.0, categories=k)
        uniform = dm.model(np.ones(k), proposal="uniform")
        cases[k, "sparse"] = Case(uniform, mech, k, args.n, 1)
        if k <= args.dense_up_to:
            dense = dw.Laplace(dense_one_hot, epsilon=1.0, sensitivity=2.0, size=k)
            cases[k, "dense"] = Case(uniform, dense, k, args.n, 1)
            cases[k, "prior"] = Case(dm.model(np.ones(k)), mech, k, args.n, 1)
    interleaved(cases.values(), args.rounds, args.sweeps)
    print(f"n = {args.n:,} records, Laplace(epsilon = 1); ns per record update, best of "
          f"{args.rounds} interleaved rounds of {args.sweeps} sweeps\n")
    print("| K | sparse ns/update | ratio to smallest K | sparse ms/iteration | accept | "
          "dense ns/update | sparse, prior proposal ns/update |")
    print("|---|---|---|---|---|---|---|")
    base = cases[args.cells[0], "sparse"].best
    for k in args.cells:
        sparse_case = cases[k, "sparse"]
        other = {v: f"{cases[k, v].best:,.0f}" if (k, v) in cases else "-"
                 for v in ("dense", "prior")}
        print(f"| {k:,} | {sparse_case.best:,.0f} | {sparse_case.best / base:.2f} | "
              f"{sparse_case.iteration_ms(args.sweeps):.2f} | {sparse_case.accept:.2f} | "
              f"{other['dense']} | {other['prior']} |", flush=True)


if __name__ == "__main__":
    main()
