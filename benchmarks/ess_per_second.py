"""Effective samples per second of the record sampler's kernels, against plain data
augmentation in the same run.

Kernels (all exact; tests/test_sampling.py checks each against exact posteriors):
  plain        Ju et al. Algorithm 1: theta | x, then one systematic sweep of the records
  interweave   plus the non-centred theta move of dawrap.interweave (ASIS), one step
  interweave xK  the same with K non-centred Metropolis steps per iteration
  sweeps=3     three record sweeps per theta update
  random scan  n records drawn at random per sweep
For each problem and kernel: 4 chains x DRAWS draws after TUNE warm-up, over REPS seeds;
ESS/s = min(bulk ESS, tail ESS) over parameters / wall time (compilation excluded, one core).
The ratio column is the median over seeds of the kernel's ESS/s over plain's on the same
release. Writes benchmarks/results/ess_per_second.md.

Run: python benchmarks/ess_per_second.py [--reps 3] [--draws 4000]
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import dawrap as dw
from dawrap import _arviz
from dawrap.models import beta_binomial, linear_regression, normal_mean

OUT = Path(__file__).parent / "results"
KERNELS = {"plain": {"interweave": False}, "interweave": {"interweave": 1},
           "interweave x2": {"interweave": 2}, "interweave x3": {"interweave": 3},
           "sweeps=3": {"interweave": False, "sweeps": 3},
           "random scan": {"interweave": False, "scan": "random"}}


def problems():
    """(label, model, mechanism, n, truth, kernels that apply)."""
    n = 1000
    for fmi in (0.1, 0.5, 0.9, 0.99):
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
               {"beta": settings["beta"]}, KERNELS)


def ess_per_second(model, mech, s_dp, n, options, draws, tune, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        dw.sample(model, mech, s_dp, n, draws=2, tune=2, chains=1, seed=0, **options)  # compile
        began = time.perf_counter()
        idata = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=4, cores=1,
                          seed=seed, **options)
    elapsed = time.perf_counter() - began
    post = _arviz.group(idata, "posterior")
    ess = []
    for name in model.params:
        values = post[name].values.reshape(4, draws, -1)
        for j in range(values.shape[-1]):
            ess += [_arviz.ess(values[..., j], "bulk"), _arviz.ess(values[..., j], "tail")]
    return min(ess) / elapsed, min(ess), elapsed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--start", choices=("default", "truth"), default="default",
                    help="where chains start: dw.sample's default (release-informed prior "
                         "draws), or the true theta (mixing only, no burn-in)")
    ap.add_argument("--only", default="", help="run the problems whose label contains this")
    ap.add_argument("--out", default=str(OUT / "ess_per_second.md"))
    args = ap.parse_args()
    lines = ["# ESS per second of the record sampler's kernels", "",
             f"`python benchmarks/ess_per_second.py {' '.join(sys.argv[1:])}`: "
             f"4 chains x {args.draws} draws (+{args.tune} warm-up), one core, {args.reps} "
             "releases per problem. min ESS = the smaller of bulk and tail ESS, minimised over "
             "parameters; ratio = median over releases of ESS/s relative to plain data "
             "augmentation on the same release. Chains start at "
             + ("the true theta (mixing only, no burn-in)." if args.start == "truth" else
                "dw.sample's default: release-informed prior draws."), "",
             "| problem | kernel | min ESS | seconds | ESS/s | ratio to plain |",
             "|---|---|---|---|---|---|"]
    for label, model, mech, n, truth, kernels in problems():
        if args.only not in label:
            continue
        start = {"init_theta": truth} if args.start == "truth" else {}
        rows = {k: [] for k in kernels}
        for rep in range(args.reps):
            x = model.simulate(truth, n, seed=100 + rep)
            s_dp = mech.release(x, seed=200 + rep)
            for kernel, options in kernels.items():
                rows[kernel].append(ess_per_second(model, mech, s_dp, n,
                                                   {**options, **start}, args.draws,
                                                   args.tune, seed=300 + rep))
        base = np.array([r[0] for r in rows["plain"]])
        for kernel, results in rows.items():
            rate, ess, secs = (np.median([r[i] for r in results]) for i in range(3))
            ratio = np.median(np.array([r[0] for r in results]) / base)
            line = f"| {label} | {kernel} | {ess:.0f} | {secs:.2f} | {rate:.3g} | {ratio:.2f} |"
            print(line, flush=True)
            lines.append(line)
    Path(args.out).parent.mkdir(exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
