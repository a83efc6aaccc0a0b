"""The ``dawrap`` command line.

``dawrap demo`` is the main job of the README: it simulates a confidential database on built-in
settings, releases its count with the Laplace mechanism, samples the exact private posterior and
checks it against the exact answer, and writes the result to an output folder.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

__all__ = ["main"]


def _demo(args) -> int:
    import numpy as np

    import dawrap as dw
    from dawrap import _arviz
    from dawrap.models import beta_binomial

    model = beta_binomial.model(a=1.0, b=1.0)
    mech = beta_binomial.laplace(epsilon=args.epsilon)
    x = model.simulate({"p": args.p}, args.n, seed=args.seed)
    s_dp = mech.release(x, seed=args.seed + 1)
    print(f"Confidential database: n = {args.n} Bernoulli({args.p}) records, "
          f"count = {int(x.sum())} (never published)")
    print(f"Release: {mech!r}\n  s_dp = {s_dp[0]:.3f}")

    began = time.perf_counter()
    idata = dw.sample(model, mech, s_dp, n=args.n, draws=args.draws, tune=args.tune,
                      chains=args.chains, seed=args.seed + 2, keep_stats=True)
    wall = time.perf_counter() - began
    print(f"\nRecord-level data augmentation: {args.chains} chains x {args.draws} draws "
          f"(+{args.tune} tune) in {wall:.2f} s (including compilation)\n")
    print(_arviz.summary(idata).to_string())

    draws = _arviz.group(idata, "posterior")["p"].values
    exact = beta_binomial.exact_posterior(mech, s_dp, args.n, 1.0, 1.0)
    print("\nAgainst the exact posterior (the count summed out, no approximation):")
    print(f"  {'':10s}{'sampler':>10s}{'exact':>10s}{'mcse':>10s}")
    rows = [("mean", draws.mean(), exact.mean(), _arviz.mcse(draws, "mean")),
            ("sd", draws.std(ddof=1), exact.std(), _arviz.mcse(draws, "sd"))]
    rows += [(f"q{q:g}", np.quantile(draws, q), exact.ppf(q), _arviz.mcse(draws, "quantile", q))
             for q in (0.05, 0.5, 0.95)]
    for what, est, ex, se in rows:
        print(f"  {what:10s}{est:10.4f}{ex:10.4f}{se:10.4f}")
    naive = (1.0 + np.clip(s_dp[0], 0, args.n)) / (2.0 + args.n)
    print(f"  naive posterior mean (noise ignored): {naive:.4f}")
    stats = _arviz.group(idata, "sample_stats")
    print(f"\nRecord acceptance rate {float(stats['accept_rate'].mean()):.3f}; smallest "
          f"acceptance probability {float(stats['min_accept_prob'].min()):.3f} >= "
          f"exp(-epsilon) = {np.exp(-args.epsilon):.3f} (Ju et al. Prop. 3.1)")

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "demo_posterior.nc"
    try:
        idata.to_netcdf(str(path))
        print(f"\nWrote {path}")
    except (ImportError, ValueError) as err:
        print(f"\nNot written: no netCDF backend ({err}); pip install h5netcdf")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``dawrap`` console script."""
    parser = argparse.ArgumentParser(
        prog="dawrap", description="Exact Bayesian inference from differentially private "
                                   "releases by record-level data augmentation.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo", help="simulate, release with Laplace noise, sample the exact private posterior",
        description="Simulate a confidential database of Bernoulli records, release its count "
                    "with the Laplace mechanism, sample p(p | s_dp) with record-level data "
                    "augmentation, compare with the exact posterior, write a netCDF file.")
    demo.add_argument("--n", type=int, default=1000, help="records (default 1000)")
    demo.add_argument("--p", type=float, default=0.3, help="true Bernoulli p (default 0.3)")
    demo.add_argument("--epsilon", type=float, default=0.5, help="privacy budget (default 0.5)")
    demo.add_argument("--draws", type=int, default=2000, help="draws per chain (default 2000)")
    demo.add_argument("--tune", type=int, default=500, help="warm-up per chain (default 500)")
    demo.add_argument("--chains", type=int, default=4, help="chains (default 4)")
    demo.add_argument("--seed", type=int, default=2022, help="random seed (default 2022)")
    demo.add_argument("--out", default="dawrap-demo", help="output folder (default dawrap-demo)")
    args = parser.parse_args(argv)
    try:
        return {"demo": _demo}[args.command](args)
    except (ValueError, TypeError) as err:
        print(f"dawrap {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
