"""Effective samples per second of the record sampler's kernels, against plain data
augmentation in the same run.

Kernels (all exact; tests/test_sampling.py and tests/test_interweave.py check each against
exact posteriors):
  plain          Ju et al. Algorithm 1: theta | x, then one systematic sweep of the records
  default        what dw.sample picks on its own (interweave=None: the non-centred move with
                 DEFAULT_STEPS steps where the estimated missing information is >= 0.3)
  interweave xK  plus K steps of the non-centred theta move of dawrap.interweave (ASIS)
  sweeps=3       three record sweeps per theta update
  sweeps=10      ten: close to an exact draw of x | theta, s_dp, so its ESS per iteration
                 bounds what any kernel that updates the records given theta can reach
                 (a SOMA-style kernel, a release-informed record proposal; see soma.py)
  random scan    n records drawn at random per sweep
For each problem and kernel: 4 chains x DRAWS draws after TUNE warm-up, over REPS releases;
bulk and tail ESS are each minimised over parameters, min ESS is the smaller of the two;
ESS/s = min ESS / wall time (compilation excluded, one core). Ratios are medians over
releases of the kernel's ESS (per iteration) and ESS/s over plain's on the same release.
Writes benchmarks/results/ess_per_second.md.

Run: python benchmarks/ess_per_second.py [--reps 3] [--draws 4000]
"""
from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial, linear_regression, normal_mean

from _common import parser, show_row, write_table

OUT = Path(__file__).parent / "results"
KERNELS = {"plain": {"interweave": False}, "default": {},
           "interweave x1": {"interweave": 1}, "interweave x2": {"interweave": 2},
           "interweave x3": {"interweave": 3},
           "sweeps=3": {"interweave": False, "sweeps": 3},
           "sweeps=10": {"interweave": False, "sweeps": 10},
           "random scan": {"interweave": False, "scan": "random"}}
#: At n = 10000 the regression's sweep takes 8 ms: ten of them per iteration would take 7
#: minutes per release, so the bound is measured at n = 100 only.
CHEAPER = {k: v for k, v in KERNELS.items() if k != "sweeps=10"}


def problems():
    """(label, model, mechanism, n, truth, kernels that apply)."""
    n = 1000
    for fmi in (0.1, 0.3, 0.5, 0.9, 0.99):
        # Missing information tau^2 / (n sigma^2 + tau^2) with sigma = 1 (prior negligible).
        tau = np.sqrt(fmi * n / (1 - fmi))
        yield (f"normal_mean, Gaussian noise, n={n}, missing information {fmi:g}",
               normal_mean.model(0.0, 10.0, 1.0), normal_mean.gaussian(tau), n, {"mu": 1.0},
               KERNELS)
    for eps in (0.01, 1.0):
        yield (f"beta_binomial, Laplace, n={n}, epsilon={eps:g}", beta_binomial.model(),
               beta_binomial.laplace(eps), n, {"p": 0.3}, KERNELS)
    settings = linear_regression.published_settings()
    for n in (100, 10_000):
        yield (f"linear_regression (Ju et al. S-5), epsilon=1, n={n}",
               linear_regression.model(**settings["model"]),
               linear_regression.laplace(epsilon=1.0, **settings["mechanism"]), n,
               {"beta": settings["beta"]}, KERNELS if n <= 1000 else CHEAPER)


def ess_per_second(model, mech, s_dp, n, options, draws, tune, seed) -> dict:
    """One run: ESS per second, min/bulk/tail ESS, seconds and record acceptance rate."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        dw.sample(model, mech, s_dp, n, draws=2, tune=2, chains=1, seed=0, **options)  # compile
        began = time.perf_counter()
        idata = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=4, cores=1,
                          seed=seed, **options)
    elapsed = time.perf_counter() - began
    post = diagnostics.group(idata, "posterior")
    bulk, tail = [], []
    for name in model.params:
        values = post[name].values.reshape(4, draws, -1)
        for j in range(values.shape[-1]):
            bulk.append(diagnostics.ess(values[..., j], "bulk"))
            tail.append(diagnostics.ess(values[..., j], "tail"))
    ess = min(min(bulk), min(tail))
    accept = float(np.mean(diagnostics.group(idata, "sample_stats")["accept_rate"].values))
    return {"rate": ess / elapsed, "ess": ess, "bulk": min(bulk), "tail": min(tail),
            "seconds": elapsed, "accept": accept}


def releases(model, mech, n, truth, reps: int):
    """``(rep, s_dp)``: the releases every kernel is measured on (fixed seeds, so other
    benchmarks that import this measure on the same ones)."""
    for rep in range(reps):
        x = model.simulate(truth, n, seed=100 + rep)
        yield rep, mech.release(x, seed=200 + rep)


def table_cells(results: list[dict], plain: list[dict]) -> str:
    """Medians over releases, and ratios to plain on the same release."""
    def median(key):
        return np.median([r[key] for r in results])

    def ratio(key):
        return np.median([r[key] / p[key] for r, p in zip(results, plain)])

    def fmt(value):  # two decimals, but not 0.00 for a kernel 500 times slower
        return f"{value:.2f}" if value >= 0.01 else f"{value:.1e}"

    return (f"{median('bulk'):.0f} | {median('tail'):.0f} | {median('ess'):.0f} | "
            f"{median('seconds'):.2f} | {median('rate'):.3g} | {fmt(ratio('ess'))} | "
            f"{fmt(ratio('rate'))} |")


def main():
    ap = parser(__doc__, reps=3, draws=4000, tune=1000, out=str(OUT / "ess_per_second.md"))
    ap.add_argument("--start", choices=("default", "truth"), default="default",
                    help="where chains start: dw.sample's default (release-informed prior "
                         "draws), or the true theta (mixing only, no burn-in)")
    ap.add_argument("--only", default="", help="run the problems whose label contains this")
    args = ap.parse_args()
    lines = ["# ESS per second of the record sampler's kernels", "",
             f"`python benchmarks/ess_per_second.py {' '.join(sys.argv[1:])}`: "
             f"4 chains x {args.draws} draws (+{args.tune} warm-up), one core, {args.reps} "
             "releases per problem. bulk and tail ESS are each minimised over parameters; min "
             "ESS is the smaller of the two; ratios are medians over releases of ESS and "
             "ESS/s relative to plain data augmentation on the same release. Chains start at "
             + ("the true theta (mixing only, no burn-in)." if args.start == "truth" else
                "dw.sample's default: release-informed prior draws."), "",
             "| problem | kernel | bulk ESS | tail ESS | min ESS | seconds | ESS/s | "
             "ESS ratio | ESS/s ratio |", "|---|---|---|---|---|---|---|---|---|"]
    for label, model, mech, n, truth, kernels in problems():
        if args.only not in label:
            continue
        start = {"init_theta": truth} if args.start == "truth" else {}
        rows = {k: [] for k in kernels}
        for rep, s_dp in releases(model, mech, n, truth, args.reps):
            for kernel, options in kernels.items():
                rows[kernel].append(ess_per_second(model, mech, s_dp, n,
                                                   {**options, **start}, args.draws,
                                                   args.tune, seed=300 + rep))
        for kernel, results in rows.items():
            line = f"| {label} | {kernel} | " + table_cells(results, rows["plain"])
            show_row(lines, line)
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
