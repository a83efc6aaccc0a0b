"""Mixing of one chain's record sweep on 2 threads against the serial sweep (issue 25),
with and without cells shared between the groups.

The census problem of ``parallel_sweep.py`` (8 states of 250 blocks, persons by voting age x
3 races), released at the blocks (rho 0.5), the states (rho 1) and, with ``--nation``, the
nation (rho 2): the model's partition groups the records by state, so with the nation
released its 6 cells are shared (split into pieces each sweep). Two chains each, serial and
then ``threads=2``, on the same release: min and median bulk ESS and max R-hat over the
block probabilities ``p``, the five worst entries with their chain means, and the largest
difference of the posterior means between the two runs in Monte Carlo standard errors.

Run: python benchmarks/parallel_mixing.py [--records 100000 --tune 300 --draws 1000] [--nation]
"""
from __future__ import annotations

import time
import warnings

import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import census

from _common import parser
from parallel_sweep import synthetic


def run(model, mech, s_dp, n: int, tune: int, draws: int, threads):
    began = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the R-hat warning: the table says it
        idata = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=2, seed=5,
                          progress=False, method=dw.Record(groups=dw.parallel.Threads(threads) if threads else None))
    seconds = time.perf_counter() - began
    p = diagnostics.group(idata, "posterior")["p"].values
    flat = p.reshape(p.shape[0], p.shape[1], -1)
    ess = np.array([diagnostics.ess(flat[..., j], "bulk") for j in range(flat.shape[2])])
    rhat = np.array([diagnostics.rhat(flat[..., j]) for j in range(flat.shape[2])])
    return flat, ess, rhat, seconds


def main():
    ap = parser(__doc__, records=100_000, tune=300, draws=1000)
    ap.add_argument("--nation", action="store_true", help="release the nation (shared)")
    args = ap.parse_args()
    geo, sizes, counts = synthetic(args.records, 8, 250, 3)
    model = census.model(geo, totals=sizes)
    queries = [census.query("block", rho=0.5), census.query("state", rho=1.0)]
    if args.nation:
        queries.append(census.query("nation", rho=2.0))
    mech = census.discrete_gaussian(geo, queries)
    s_dp, n = mech.release(census.records(counts), seed=1), int(sizes.sum())
    shared = model.partition(census.records(counts), mech).shared_cells.shape[0]
    print(f"n = {n}, nation released: {args.nation}, shared cells {shared}; "
          f"2 chains x ({args.tune} + {args.draws})")
    runs = {}
    for threads in (None, 2):
        flat, ess, rhat, seconds = runs[threads] = run(model, mech, s_dp, n, args.tune,
                                                       args.draws, threads)
        print(f"threads={threads}: {seconds:.0f} s; min bulk ESS {ess.min():.1f}, median "
              f"{np.median(ess):.0f}, max R-hat {rhat.max():.3f}")
        for j in np.argsort(ess)[:5]:
            print(f"  p entry {j}: ESS {ess[j]:.1f}, R-hat {rhat[j]:.3f}, chain means "
                  f"{np.round(flat[..., j].mean(1), 4).tolist()}")
    (a, ea, _, _), (b, eb, _, _) = runs[None], runs[2]
    se = a.std((0, 1)) * np.sqrt(1 / np.maximum(ea, 1) + 1 / np.maximum(eb, 1))
    z = np.abs(a.mean((0, 1)) - b.mean((0, 1))) / se
    print(f"largest |difference of posterior means| / MC standard error: {z.max():.1f}")


if __name__ == "__main__":
    main()
