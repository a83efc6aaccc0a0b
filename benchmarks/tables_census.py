"""The census-style workload of issue 14: ``small_area`` with many records and areas.

Records in ``--areas`` areas (sizes drawn once, about ``--records / --areas`` each) grouped
``--per-tract`` areas to a tract; ``--categories`` categories; released are the
area-by-category and tract-by-category counts with discrete Gaussian noise (rho 0.5 per
level, ``DiscreteGaussian``-style exact noise). One chain of the record sampler from the
public API (``dw.sample``), started at ``small_area.records(sizes)``.

Reported: seconds per sweep (one iteration: the conjugate area step, the hyperparameter
Metropolis steps and one sweep over the records), bulk ESS per second of the first 50 areas'
probabilities (min and median) and of ``log_alpha``, and the process's peak resident memory.
The sufficient-statistic sampler does not apply at this size (its cost is cubic in the
release's length; ``Suffstat`` refuses it).

Run: python benchmarks/tables_census.py [--records 1000000] [--areas 10000] [--categories 6]
     [--per-tract 10] [--draws 200] [--tune 100]
"""
from __future__ import annotations

import argparse
import resource
import time

import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import small_area


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--areas", type=int, default=10_000)
    ap.add_argument("--categories", type=int, default=6)
    ap.add_argument("--per-tract", type=int, default=10)
    ap.add_argument("--draws", type=int, default=200)
    ap.add_argument("--tune", type=int, default=100)
    args = ap.parse_args()
    rng = np.random.default_rng(14)
    areas, cats = args.areas, args.categories
    sizes = 1 + rng.multinomial(args.records - areas, np.full(areas, 1.0 / areas))
    regions = np.arange(areas) // args.per_tract
    alpha = np.full(cats, 5.0)
    p = rng.dirichlet(alpha, areas)
    categories = np.concatenate([rng.choice(cats, size=s, p=p[a]) for a, s in enumerate(sizes)])
    x = small_area.records(sizes, categories)
    model = small_area.model(sizes, cats)
    mech = small_area.discrete_gaussian(regions, cats, rho=(0.5, 0.5))
    t = time.perf_counter()
    s_dp = mech.release(x, seed=1)
    release_s = time.perf_counter() - t
    n = int(sizes.sum())
    t = time.perf_counter()
    dw.sample(model, mech, s_dp, n, init_x=small_area.records(sizes), chains=1, draws=2,
              tune=0, seed=3, progress=False)  # compiles: the timed run below does not
    first = time.perf_counter() - t
    t = time.perf_counter()
    idata = dw.sample(model, mech, s_dp, n, init_x=small_area.records(sizes), chains=1,
                      draws=args.draws, tune=args.tune, seed=2, progress=False)
    elapsed = time.perf_counter() - t
    post = diagnostics.group(idata, "posterior")
    p_draws = post["p"].values[:, :, :50, :].reshape(1, args.draws, -1)
    ess_p = np.array([diagnostics.ess(p_draws[..., j], "bulk") for j in range(p_draws.shape[-1])])
    eta = post["log_alpha"].values
    ess_eta = [diagnostics.ess(eta[..., c], "bulk") for c in range(cats)]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    iterations = args.draws + args.tune
    print(f"records {n:,}, areas {areas:,}, tracts {regions.max() + 1:,}, categories {cats}, "
          f"released cells {mech.size:,}; 1 chain, {args.tune} warm-up + {args.draws} draws\n")
    print("| quantity | value |\n|---|---|")
    print(f"| simulated release (exact discrete Gaussian noise), s | {release_s:.1f} |")
    print(f"| first dw.sample of 2 draws (compiles), s | {first:.1f} |")
    print(f"| dw.sample total (probes, start, run), s | {elapsed:.1f} |")
    print(f"| seconds per iteration (total / iterations, an upper bound) | "
          f"{elapsed / iterations:.3f} |")
    print(f"| ns per record update (same, per record) | {elapsed / iterations / n * 1e9:.0f} |")
    print(f"| bulk ESS/s of p, first 50 areas: min / median | {ess_p.min() / elapsed:.2f} / "
          f"{np.median(ess_p) / elapsed:.2f} |")
    print(f"| bulk ESS/s of log_alpha: min | {min(ess_eta) / elapsed:.3f} |")
    print(f"| posterior mean of exp(log_alpha) (truth {alpha[0]:g}) | "
          f"{np.exp(eta).mean(axis=(0, 1)).round(2).tolist()} |")
    print(f"| peak resident memory, MB | {peak:.0f} |")
    print("| suffstat | not applicable: O(cells^3) per iteration |")


if __name__ == "__main__":
    main()
