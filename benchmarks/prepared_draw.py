"""Cost of a record update against the number of categories K with the prior proposal (issue
27, item 1): the categorical table built once per sweep against the O(K) scan.

``dirichlet_multinomial.model(alpha=ones(K))`` with its default proposal (records proposed
from ``Categorical(p)``, Ju et al. Algorithm 1) and ``laplace(epsilon=1, categories=K)``
(sparse: a record update touches two cells). Three variants in one process, on the same data:

* table: the model as built (``Model.prepared``: running sums and a guide table built once per
  sweep, O(K); then O(1) per record, ``dawrap.random.categorical``);
* scan: the same model without the table (what ``draw_record`` does alone: O(K) per record);
* uniform: ``proposal="uniform"`` (O(1) per record, no table), for comparison.

Reported per K: ns per record update in a sweep of n records (theta fixed, the table built
at the start of each sweep included); the *marginal* cost of a record update, what each of
the n updates costs beyond what the sweep pays once whatever n: (sweep - table build) / n,
the build timed alone; each against the smallest K. (A difference of sweeps of 2n and n
records is no cleaner: the release, and with it the acceptance rate, changes with n.)

Run: python benchmarks/prepared_draw.py [--n 20000] [--cells 10 100 1000 10000 100000]
     [--sweeps 5] [--rounds 10] [--scan-up-to 100000]
"""
from __future__ import annotations

import time

import numba
import numpy as np

import dawrap as dw
from dawrap.models import dirichlet_multinomial as dm
from dawrap.runner.record import _Setup
from dawrap.samplers import record

from _common import parser


def without_table(model: dw.Model) -> dw.Model:
    """``model`` as it was before the table: every proposal scans the K probabilities."""
    return dw.Model(params=model.params, record_size=1, draw_record=model.draw_record,
                    draw_theta=model.draw_theta, draw_prior=model.draw_prior,
                    model_stat=dm.one_hot, stat_size=model.stat_size,
                    theta_support=model.theta_support, record_support=model.record_support)


class Case:
    """One variant at one K and n: its chain (as dw.sample builds it) and a state at the
    truth."""

    def __init__(self, model, k, n, seed):
        rng = np.random.default_rng(seed)
        self.mech = dm.laplace(epsilon=1.0, categories=k)
        self.theta = rng.dirichlet(np.ones(k))
        x = rng.choice(k, size=n, p=self.theta).astype(float)[:, None]
        s_dp = self.mech.release(x, seed=seed + 1)
        setup = _Setup(model, self.mech, s_dp, n)
        self.chain, self.s_dp, self.n = setup.chain, s_dp, n
        # Once, as the runner does: Mechanism.params returns a copy, O(K) per access.
        self.params = self.mech.params
        self.state = setup.fresh_state(self.theta.copy(), x)
        self.rng = np.random.default_rng(seed)
        self.best = np.inf  # seconds per sweep
        self.run(1)  # compile

    def run(self, sweeps):
        t = time.perf_counter()
        for _ in range(sweeps):
            self.state, info = self.chain.sweep(self.rng, self.state, self.s_dp,
                                                self.params)
        assert info.status == record.OK
        return (time.perf_counter() - t) / sweeps

    def time(self, sweeps):
        # Each sweep timed on its own (a millisecond at n = 20 000): on a loaded machine the
        # best of many short intervals is the one that ran without being preempted.
        for _ in range(sweeps):
            self.best = min(self.best, self.run(1))


@numba.njit(nogil=True)
def _build_tables(theta, times):
    total = 0
    for _ in range(times):
        total += dm.prepare_categorical(theta)[1][0]
    return total


def table_ms(theta, rounds=5):
    """Best time of one table build (ms)."""
    times = max(1, 10 ** 6 // theta.shape[0])
    _build_tables(theta, 1)
    best = np.inf
    for _ in range(rounds):
        t = time.perf_counter()
        _build_tables(theta, times)
        best = min(best, (time.perf_counter() - t) / times)
    return best * 1e3


def main():
    ap = parser(__doc__, n=20_000, cells=[10, 100, 1000, 10_000, 100_000], sweeps=5, rounds=10)
    ap.add_argument("--scan-up-to", type=int, default=100_000,
                    help="largest K for the scan variant (O(n K) per sweep)")
    args = ap.parse_args()
    n = args.n
    cases = {}
    for k in args.cells:
        table = dm.model(np.ones(k))
        assert table.prepared is not None
        variants = {"table": table, "uniform": dm.model(np.ones(k), proposal="uniform")}
        if k <= args.scan_up_to:
            variants["scan"] = without_table(table)
        for name, model in variants.items():
            cases[k, name] = Case(model, k, n, seed=1)
    # Rounds over every case in turn, keeping each case's best: a machine shared with other
    # work slows some rounds, and interleaving spreads that over all cases alike. The scan
    # at large K takes a second per sweep: it gets one sweep per round.
    for _ in range(args.rounds):
        for (k, name), case in cases.items():
            case.time(1 if name == "scan" and k >= 10_000 else args.sweeps)

    def per_update(k, name):
        return cases[k, name].best / n * 1e9

    builds = {k: table_ms(cases[k, "table"].theta) for k in args.cells}

    def marginal(k):
        return per_update(k, "table") - builds[k] * 1e6 / n

    print(f"n = {n:,} records, Laplace(epsilon = 1); ns per record update, the best sweep of "
          f"{args.rounds} interleaved rounds of {args.sweeps} sweeps; marginal: without the "
          f"table's build\n")
    print("| K | table ns/update | ratio | table marginal ns/update | ratio | table build ms | "
          "scan ns/update | ratio | uniform ns/update | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    k0 = args.cells[0]
    for k in args.cells:
        scan = (f"{per_update(k, 'scan'):,.0f} | {per_update(k, 'scan') / per_update(k0, 'scan'):.2f}"
                if (k, "scan") in cases and (k0, "scan") in cases else "- | -")
        print(f"| {k:,} | {per_update(k, 'table'):,.0f} | "
              f"{per_update(k, 'table') / per_update(k0, 'table'):.2f} | "
              f"{marginal(k):,.0f} | {marginal(k) / marginal(k0):.2f} | {builds[k]:.3f} | "
              f"{scan} | {per_update(k, 'uniform'):,.0f} | "
              f"{per_update(k, 'uniform') / per_update(k0, 'uniform'):.2f} |", flush=True)


if __name__ == "__main__":
    main()
