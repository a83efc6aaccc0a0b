"""The census model at scale (issue 24, item 5): three geography levels, a cross-classified
person histogram, 10^6 or 10^7 records.

The geography (``benchmarks/census_synthetic.py``): ``--counties`` counties of ``--tracts``
tracts of ``--blocks`` blocks, block sizes public (about ``--records`` / blocks each),
persons by voting age x Hispanic origin x race (``--races`` races: 2 x 2 x 7 = 28 cells by
default, 252 with 63). True cell probabilities from the model's own hierarchical prior.
Released (discrete Gaussian noise): the blocks by voting age (rho 0.2), the tracts' detailed
histograms (rho 0.5) and the counties' (rho 1): three sparse entries per record.

The model: ``census.model(geo, sizes, levels=...)`` with the prior's levels ``--levels``
(default county and tract: blocks draw their cells from their tract's probabilities, see
docs/census.md for why), ``dw.sample`` with ``--chains`` chains of ``--tune`` + ``--draws``
iterations, started from the release.

Reported: the release's simulation time, the first call's compile time, seconds per
iteration (one record sweep and the theta step) and ns per record update, bulk ESS per
second of every hyperparameter (``log_alpha`` per cell: min and median; ``log_kappa``) and
of the worst unit's probabilities (min over every ``p`` entry, and the 1st percentile), the
worst R-hat (and how many entries exceed 1.01, 1.05, 1.1), and the
process's peak resident memory with what the run's arrays take.

Run: python benchmarks/census_scale.py --records 1000000 [--counties 20 --tracts 50
     --blocks 10 --races 7 --chains 2 --tune 300 --draws 300 --collapsed-moves auto
     --seed 2] [--no-ess]

``--no-ess``: times and memory only (a run too short for ESS, e.g. at 10^7 records).
"""
from __future__ import annotations

import os
import resource
import time

import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import census

from _common import parser
from census_synthetic import synthetic


def ess_rhat(values):
    """(bulk ESS, R-hat) of every entry of (chain, draw, ...) draws."""
    flat = values.reshape(values.shape[0], values.shape[1], -1)
    return (np.array([diagnostics.ess(flat[..., j], "bulk") for j in range(flat.shape[2])]),
            np.array([diagnostics.rhat(flat[..., j]) for j in range(flat.shape[2])]))


def ess_rows(post, model, sampling: float) -> list:
    """The table's rows: ESS per second and R-hat of every hyperparameter, worst entries of
    each level's probabilities."""
    rows = []
    e_a, r_a = ess_rhat(post["log_alpha"].values)
    rows.append(("log_alpha (min / median over cells)", f"{e_a.min() / sampling:.3g} / "
                 f"{np.median(e_a) / sampling:.3g}", f"{r_a.max():.3f}"))
    if "log_kappa" in post:
        e_k, r_k = ess_rhat(post["log_kappa"].values)
        for name, e, r in zip(model.coords["prior_level"], e_k, r_k):
            rows.append((f"log_kappa[{name}]", f"{e / sampling:.3g}", f"{r:.3f}"))
    for name in [v for v in post.data_vars if v.startswith("p")]:
        e_p, r_p = ess_rhat(post[name].values)
        rows.append((f"{name}: worst entry (min ESS; max R-hat)", f"{e_p.min() / sampling:.3g}",
                     f"{r_p.max():.3f}"))
        rows.append((f"{name}: 1st percentile over its {e_p.size:,} entries",
                     f"{np.percentile(e_p, 1) / sampling:.3g}",
                     f"{np.percentile(r_p, 99):.3f}"))
        rows.append((f"{name}: entries with R-hat above 1.01 / 1.05 / 1.1", "",
                     f"{(r_p > 1.01).sum()} / {(r_p > 1.05).sum()} / {(r_p > 1.1).sum()}"))
    return rows


def _cpu_seconds() -> float:
    """The process's CPU time (user + system, every thread): unlike the wall time, hardly
    changed by other jobs on a shared machine."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main():
    ap = parser(__doc__, records=1_000_000, counties=20, tracts=50, blocks=10, races=7,
                levels="county,tract", chains=2, tune=300, draws=300)
    ap.add_argument("--collapsed-moves", default="auto",
                    help="census.model's collapsed_moves: 'auto' (default) or a number, 0 off")
    ap.add_argument("--seed", type=int, default=2, help="the chains' seed")
    ap.add_argument("--no-ess", action="store_true", help="times and memory only")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    t = time.perf_counter()
    geo, sizes, counts, _ = synthetic(args.records, args.counties, args.tracts, args.blocks,
                                      args.races)
    simulate_s = time.perf_counter() - t
    n = int(sizes.sum())
    queries = [census.query("block", "voting_age", rho=0.2),
               census.query("tract", "detailed", rho=0.5),
               census.query("county", "detailed", rho=1.0)]
    mech = census.discrete_gaussian(geo, queries)
    t = time.perf_counter()
    x = census.records(counts)
    s_dp = mech.release(x, seed=1)
    release_s = time.perf_counter() - t
    del x
    model = census.model(geo, sizes, levels=tuple(args.levels.split(",")),
                         collapsed_moves=(args.collapsed_moves if args.collapsed_moves == "auto"
                                          else float(args.collapsed_moves)))
    t = time.perf_counter()
    dw.sample(model, mech, s_dp, n, chains=1, draws=1, tune=0, seed=3, progress=False)
    first = time.perf_counter() - t
    t, cpu = time.perf_counter(), _cpu_seconds()
    idata = dw.sample(model, mech, s_dp, n, chains=args.chains, draws=args.draws,
                      tune=args.tune, seed=args.seed, progress=False)
    wall, cpu = time.perf_counter() - t, _cpu_seconds() - cpu
    sampling = float(idata.attrs["sampling_time"])
    iterations = args.tune + args.draws
    # chains run in parallel threads on min(chains, cores) cores
    per_iteration = sampling / iterations / max(1, args.chains // min(args.chains,
                                                                       os.cpu_count()))
    post = diagnostics.group(idata, "posterior")

    rows = [] if args.no_ess else ess_rows(post, model, sampling)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    theta_mb = model.theta_size * 8 / 1e6
    print(f"records {n:,}; counties {geo.units[0]}, tracts {geo.units[1]:,}, blocks "
          f"{geo.units[2]:,}; {geo.cells} cells; released cells {mech.size:,} (3 queries); "
          f"prior levels {args.levels}; collapsed_moves {args.collapsed_moves}; theta "
          f"{model.theta_size:,} values; {args.chains} "
          f"chains x ({args.tune} warm-up + {args.draws} draws); load {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after\n")
    print("| quantity | value |\n|---|---|")
    print(f"| simulate the counts, s | {simulate_s:.1f} |")
    print(f"| simulated release (discrete Gaussian noise), s | {release_s:.1f} |")
    print(f"| first dw.sample (1 draw: compiles, starts), s | {first:.1f} |")
    print(f"| dw.sample wall time, s | {wall:.0f} |")
    print(f"| sampling time (the chains), s | {sampling:.0f} |")
    print(f"| seconds per iteration per chain (a sweep and the theta step) | "
          f"{per_iteration:.3f} |")
    print(f"| ns per record update (the same, per record) | {per_iteration / n * 1e9:.0f} |")
    cpu_iteration = cpu / (iterations * args.chains)
    print(f"| CPU seconds per iteration per chain (whole dw.sample call) | "
          f"{cpu_iteration:.3f} |")
    print(f"| CPU ns per record update | {cpu_iteration / n * 1e9:.0f} |")
    print(f"| peak resident memory, MB | {peak:.0f} |")
    print(f"| of which the databases (chains x n x 2 float64), MB | "
          f"{args.chains * n * 16 / 1e6:.0f} |")
    print(f"| and the kept draws (chains x draws x theta, twice), MB | "
          f"{2 * args.chains * args.draws * theta_mb:.0f} |")
    if rows:
        print("\n| parameter | bulk ESS per second | R-hat |\n|---|---|---|")
    for row in rows:
        print(f"| {row[0]} | {row[1]} | {row[2]} |")


if __name__ == "__main__":
    main()
