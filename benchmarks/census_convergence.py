"""Convergence of the census model with ``dw.sample``'s defaults (issue 24, item 1).

The issue's setting: ``--records`` records in ``--areas`` areas (sizes drawn once), ``--per-tract``
areas to a tract, 6 categories, true probabilities Dirichlet(5, ..., 5) per area; released are
the area-by-category and tract-by-category counts with discrete Gaussian noise, rho 0.5 per
level (``small_area.discrete_gaussian``). Each variant runs ``dw.sample`` with its defaults
(4 chains x 1000 draws after 1000 warm-up iterations) and reports wall time, the worst R-hat
and bulk ESS of ``log_alpha`` and of every area's probabilities, and ESS per second.

Variants (interleaved, one run, the same release):

* ``before``: the kernel and start of the former ``small_area``: a fixed random-walk step
  1/sqrt(areas) for ``log_alpha`` (5 steps per iteration, no adaptation), every record
  started in category 0 (``init_x=small_area.records(sizes)``);
* ``adaptive``: random-walk Metropolis adapted during warm-up (10 steps), category-0 start;
* ``hmc``: HMC with the digamma gradient (2 steps), category-0 start;
* ``hmc+release`` (the default): HMC, chains started from the release.

Run: python benchmarks/census_convergence.py [--records 100000] [--areas 1000]
     [--variants before,adaptive,hmc,hmc+release] [--chains 4 --draws 1000 --tune 1000]

``--chains``/``--draws``/``--tune`` change ``dw.sample``'s defaults where the kept draws would
not fit in memory (chains x draws x areas x categories float64 values, held about twice);
the peak resident memory of the process is printed.
"""
from __future__ import annotations

import math
import os
import resource
import time

import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import small_area

from _common import parser


def simulate(records: int, areas: int, per_tract: int, cats: int, seed: int = 24):
    rng = np.random.default_rng(seed)
    sizes = 1 + rng.multinomial(records - areas, np.full(areas, 1.0 / areas))
    p = rng.dirichlet(np.full(cats, 5.0), areas)
    counts = rng.multinomial(sizes, p)
    cat = np.concatenate([np.repeat(np.arange(cats), row) for row in counts])
    tracts = np.arange(areas) // per_tract
    return sizes, tracts, small_area.records(sizes, cat)


def worst(draws: np.ndarray, block: int = 1000):
    """(max R-hat, min bulk ESS) over the last axis of (chain, draw, k) draws: the numbers
    of ``diagnostics.rhat`` and ``ess(..., "bulk")``, vectorised (``diagnostics.convergence``)
    over blocks of ``block`` scalars (a loop over 60,000 scalars one by one took minutes; all
    at once, the FFTs' temporaries would take several GB)."""
    r, e = [], []
    for start in range(0, draws.shape[-1], block):
        rhat, ess = diagnostics.convergence(draws[..., start:start + block])
        r.append(np.nanmax(rhat))
        e.append(np.nanmin(ess))
    return max(r), min(e)


def run(variant: str, sizes, tracts, s_dp, mech, cats: int, seed: int, **sample_kwargs):
    kwargs, init = {}, {}
    if variant == "before":
        kwargs = dict(hyper_kernel="metropolis", step=1.0 / math.sqrt(len(sizes)),
                      hyper_steps=5)
    elif variant == "adaptive":
        kwargs = dict(hyper_kernel="metropolis")
    if variant != "hmc+release":
        init = dict(init_x=small_area.records(sizes))
    model = small_area.model(sizes, cats, **kwargs)
    t = time.perf_counter()
    idata = dw.sample(model, mech, s_dp, int(sizes.sum()), seed=seed, progress=False, **init,
                      **sample_kwargs)
    wall = time.perf_counter() - t
    post = diagnostics.group(idata, "posterior")
    eta = post["log_alpha"].values
    p = post["p"].values.reshape(eta.shape[0], eta.shape[1], -1)
    sampling = float(idata.attrs["sampling_time"]) if hasattr(idata, "attrs") else wall
    return wall, sampling, worst(eta), worst(p)


def main():
    ap = parser(__doc__, records=100_000, areas=1000, per_tract=10, categories=6,
                variants="before,adaptive,hmc,hmc+release", chains=4, draws=1000, tune=1000)
    args = ap.parse_args()
    sample_kwargs = dict(chains=args.chains, draws=args.draws, tune=args.tune)
    sizes, tracts, x = simulate(args.records, args.areas, args.per_tract, args.categories)
    mech = small_area.discrete_gaussian(tracts, args.categories, rho=(0.5, 0.5))
    s_dp = mech.release(x, seed=1)
    print(f"records {int(sizes.sum()):,}, areas {args.areas:,}, tracts {tracts.max() + 1:,}, "
          f"categories {args.categories}; dw.sample with {args.chains} chains x {args.draws} "
          f"draws, {args.tune} warm-up (defaults: 4 x 1000, 1000); load before: "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| variant | wall s | sampling s | log_alpha max R-hat | log_alpha min ESS | "
          "log_alpha min ESS/s | p max R-hat | p min ESS | p min ESS/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for variant in args.variants.split(","):
        wall, sampling, (r_a, e_a), (r_p, e_p) = run(variant, sizes, tracts, s_dp, mech,
                                                      args.categories, seed=2,
                                                      **sample_kwargs)
        print(f"| {variant} | {wall:.0f} | {sampling:.0f} | {r_a:.3f} | {e_a:.0f} | "
              f"{e_a / sampling:.2f} | {r_p:.3f} | {e_p:.0f} | {e_p / sampling:.2f} |",
              flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nload after: {os.getloadavg()[0]:.1f}; peak resident memory {peak:.0f} MB")


if __name__ == "__main__":
    main()
