"""The census model's pair move (``census.model(..., pair_moves=...)``) against none, on
the three-level problem whose worst block probabilities barely mixed (issue 24).

The census problem of ``parallel_mixing.py`` (8 states of 250 blocks, persons by voting
age x 3 races), released at the blocks (rho 0.5), the states (rho 1) and the nation (rho 2,
sigma 0.71: its totals are pinned to about one count). One serial chain pair per setting,
same release and seed: seconds, min and median bulk ESS and max R-hat over the 12,000 block
probabilities ``p``, the worst entry's bulk ESS per second, the mean acceptance of the pair
move, and the largest difference of the posterior means against the first setting in Monte
Carlo standard errors (the move must not change the posterior).

Run: python benchmarks/census_pairs.py [--records 100000 --tune 300 --draws 1000]
     [--rates 0 0.5 1]
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


def run(model, mech, s_dp, n: int, tune: int, draws: int):
    began = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the R-hat warning: the table says it
        idata = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=2, seed=5,
                          progress=False)
    seconds = time.perf_counter() - began
    p = diagnostics.group(idata, "posterior")["p"].values
    flat = p.reshape(p.shape[0], p.shape[1], -1)
    ess = np.array([diagnostics.ess(flat[..., j], "bulk") for j in range(flat.shape[2])])
    rhat = np.array([diagnostics.rhat(flat[..., j]) for j in range(flat.shape[2])])
    stats = diagnostics.group(idata, "sample_stats")
    accept = float(stats["move_accept"].mean()) if "move_accept" in stats else float("nan")
    return flat, ess, rhat, seconds, accept


def main():
    ap = parser(__doc__, records=100_000, tune=300, draws=1000, rates=[0.0, 0.5, 1.0])
    args = ap.parse_args()
    geo, sizes, counts = synthetic(args.records, 8, 250, 3)
    mech = census.discrete_gaussian(geo, [census.query("block", rho=0.5),
                                          census.query("state", rho=1.0),
                                          census.query("nation", rho=2.0)])
    s_dp, n = mech.release(census.records(counts), seed=1), int(sizes.sum())
    print(f"n = {n}; 2 chains x ({args.tune} + {args.draws}); serial sweep")
    print("| pair_moves | seconds | min bulk ESS | median bulk ESS | max R-hat | worst ESS/s "
          "| move acceptance | max mean diff / MCSE |")
    print("|---|---|---|---|---|---|---|---|")
    first = None
    for rate in args.rates:
        model = census.model(geo, totals=sizes, pair_moves=rate)
        flat, ess, rhat, seconds, accept = run(model, mech, s_dp, n, args.tune, args.draws)
        if first is None:
            first, z = (flat, ess), float("nan")
        else:
            a, ea = first
            se = a.std((0, 1)) * np.sqrt(1 / np.maximum(ea, 1) + 1 / np.maximum(ess, 1))
            z = float((np.abs(a.mean((0, 1)) - flat.mean((0, 1))) / se).max())
        print(f"| {rate:g} | {seconds:.0f} | {ess.min():.1f} | {np.median(ess):.0f} | "
              f"{rhat.max():.3f} | {ess.min() / seconds:.3f} | {accept:.3f} | {z:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
