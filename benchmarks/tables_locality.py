"""Why the entries-path record update slows down at 10^5-10^6 cells: a controlled experiment.

The update's operation count does not depend on K (``benchmarks/tables_scaling.py``), yet its
cost grows above 10^4 cells. Hypothesis: the arrays it reads and writes at the record's
cells (theta, the release, the noise scales, the running total and the model's counts: five
float64 arrays of K entries) stop fitting in the caches and the TLB, so its few random
accesses miss. This
script keeps K fixed (the arrays as large as ever) and varies only the *footprint*: records
live in, and the proposal draws from, the first ``m`` cells only. If the cost follows ``m``
and not ``K``, the growth is memory locality, not anything the sweep does per cell.

Per case: ``dirichlet_multinomial`` with an O(1) uniform proposal restricted to cells
``0..m-1`` (Hastings ratio ``log p_new - log p_old``), Laplace noise (epsilon = 1) on all K
counts, n records fixed, ns per record update (sweeps only, theta fixed), best of
``--rounds`` interleaved rounds. The arrays touched at random positions span
``5 * 8 * m`` bytes.

Two further controls: ``--n`` (a per-sweep O(K) cost, if any, shows as a cost per update
that falls as n grows at a fixed footprint) and ``--no-hugepages`` (NumPy then stops asking the
kernel for transparent huge pages for its large arrays, theta and the release here; the
running sums are allocated by numba, which never asks): if the cost at a large footprint rises,
TLB misses are part of it.

Run: python benchmarks/tables_locality.py [--n 20000] [--cells 1000 1000000]
     [--footprints 100 1000 10000 30000 100000 300000 1000000] [--no-hugepages]
"""
from __future__ import annotations

import functools
import math
import os
import time

import numba
import numpy as np

from dawrap.models import dirichlet_multinomial as dm
from dawrap.samplers import record, entries_path
from dawrap.samplers.kernels import as_kernel

from _common import Timed, huge_pages, interleaved, parser


@functools.lru_cache(maxsize=None)
def restricted_proposal(m: int):
    """A uniformly drawn category among the first ``m``, with its Hastings ratio."""

    @numba.njit(nogil=True)
    def propose(rng, theta, x_i, out):
        j = rng.integers(0, m)
        out[0] = j
        return math.log(theta[j]) - math.log(theta[int(x_i[0])])

    return propose


class Case(Timed):
    """The entries sweep over K cells with records confined to the first ``m``."""

    def __init__(self, k, m, n, seed):
        self.k, self.m, self.n = k, m, n
        model = dm.model(np.ones(k), proposal="uniform")
        model.propose_record = restricted_proposal(m)
        mech = dm.laplace(epsilon=1.0, categories=k)
        rng = np.random.default_rng(seed)
        p = rng.dirichlet(np.ones(k))
        x = rng.integers(0, m, n).astype(float)[:, None]
        counts = np.bincount(x[:, 0].astype(int), minlength=k).astype(float)
        self.s_dp = mech.release_given_total(rng, counts)
        self.mech = mech
        # Once, as the runner does: Mechanism.params returns a copy, O(K) per access.
        self.params = mech.params
        self.fns = record.RecordFunctions(model.draw_record, model.propose_record,
                                          model.model_stat, mech.sampler_statistic,
                                          mech.log_density, model.theta_support,
                                          model.record_support,
                                          **entries_path.entries_fields(model, mech))
        shared = model.user_model_stat is mech.statistic
        chain = record.bind_chain(self.fns, record.SweepOptions(1, k, k, general=True,
                                                                shared=shared),
                                  kernel_step=as_kernel(model.draw_theta, False).step)
        self.sweep = chain.sweep
        self.state = chain.init(p, x, record.Inputs(self.s_dp, mech.params, 1), np.empty(0),
                                np.empty(0))
        self.rng = np.random.default_rng(seed)
        self.run(1)  # compile

    def run(self, sweeps):
        t = time.perf_counter()
        for _ in range(sweeps):
            self.state, info = self.sweep(self.rng, self.state, self.s_dp, self.params)
        assert info.status == record.OK
        return time.perf_counter() - t


def main():
    ap = parser(__doc__, n=20_000, cells=[1000, 1_000_000],
                footprints=[100, 1000, 10_000, 30_000, 100_000, 300_000, 1_000_000],
                sweeps=5, rounds=5)
    ap.add_argument("--no-hugepages", action="store_true")
    args = ap.parse_args()
    print(f"# load average at start: {os.getloadavg()}", flush=True)
    huge_pages(not args.no_hugepages)
    cases = [Case(k, m, args.n, 1) for k in args.cells for m in args.footprints if m <= k]
    interleaved(cases, args.rounds, args.sweeps)
    print(f"n = {args.n:,} records, Laplace(epsilon = 1); ns per record update, best of "
          f"{args.rounds} interleaved rounds of {args.sweeps} sweeps\n")
    print("| K (array length) | m (cells used) | footprint MB (5 arrays x 8 B x m) | "
          "ns/update |")
    print("|---|---|---|---|")
    for case in cases:
        print(f"| {case.k:,} | {case.m:,} | {5 * 8 * case.m / 1e6:.2f} | {case.best:,.0f} |")
    print(f"\n# load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
