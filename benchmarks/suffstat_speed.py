"""Sufficient-statistic sampler: cost per iteration, and effective samples per second against
the record sampler.

1. Microseconds per iteration of ``method="suffstat"`` (the default kernel, then the other)
   at n = 1000 for the beta-binomial and the truncated gamma-exponential, beside the cost
   reported for the authors' published Python implementation (about 0.6 ms and 4-5 ms per
   iteration). That figure was measured on their machine, not here, so the ratio is
   indicative; the in-run comparison is part 2.
2. ESS (bulk, of p) per second of sampling for suffstat and record on the same releases,
   beta-binomial, over n and epsilon, both measured in this run after a warm-up (compile)
   call. Writes benchmarks/results/suffstat_vs_record.md.

Run: python benchmarks/suffstat_speed.py [--quick]
"""
from __future__ import annotations

import warnings
from pathlib import Path

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial, gamma_exponential

from _common import parser, print_or_write

OUT = Path(__file__).parent / "results"
PUBLISHED_MS = {"beta_binomial": 0.6, "gamma_exponential (truncated)": 4.5}


#: Iterations timed per run, ESS draws per chain and the n of part 2 (``--quick``: tiny).
SIZES = {"iterations": 200_000, "draws": 5000, "sizes": (100, 1000, 10_000, 100_000)}


def per_iteration(model, mech, s_dp, n, variant=None, iterations=None, tune=1000):
    """Seconds per iteration, with warm-up (after it the marginal kernel adds its
    independence step), and the kernel's name: the fastest of three runs (this machine is
    shared)."""
    iterations = iterations or SIZES["iterations"]
    dw.sample(model, mech, s_dp, n, method="suffstat", variant=variant, draws=10, tune=0,
              chains=1, seed=0)
    best = []
    for _ in range(3):
        idata = dw.sample(model, mech, s_dp, n, method="suffstat", variant=variant,
                          draws=iterations, tune=tune, chains=1, seed=1)
        best.append(float(diagnostics.attrs(idata)["sampling_time"]) / (iterations + tune))
    return min(best), diagnostics.attrs(idata)["variant"]


def ess_per_second(model, mech, s_dp, n, method, draws):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        dw.sample(model, mech, s_dp, n, method=method, draws=5, tune=0, chains=1, seed=0)
        idata = dw.sample(model, mech, s_dp, n, method=method, draws=draws, tune=500,
                          chains=2, cores=1, seed=1)
    p = diagnostics.group(idata, "posterior")["p"].values
    seconds = float(diagnostics.attrs(idata)["sampling_time"])
    return diagnostics.ess(p, "bulk") / seconds, seconds, diagnostics.attrs(idata).get("variant")


def main():
    ap = parser(__doc__, quick="tiny runs")
    quick = ap.parse_args().quick
    if quick:
        SIZES.update(iterations=2000, draws=200, sizes=(100,))
    n = 1000
    lines = ["# Sufficient-statistic sampler: speed", "",
             "`python benchmarks/suffstat_speed.py` (2-core machine, 1 chain at a time).", "",
             "## Cost per iteration at n = 1000", "",
             "| model | kernel | ours (us/iteration) | authors' Python, as reported (ms) | "
             "ratio |", "|---|---|---|---|---|"]
    cases = [("beta_binomial", beta_binomial.model(1, 1), beta_binomial.laplace(0.1),
              {"p": 0.3}),
             ("gamma_exponential (truncated)", gamma_exponential.model(2, 1),
              gamma_exponential.laplace(0.1, 0.0, 3.0), {"lam": 1.0})]
    for label, model, mech, theta in cases:
        s_dp = mech.release(model.simulate(theta, n, seed=1), seed=2)
        sec, kernel = per_iteration(model, mech, s_dp, n)
        ratio = PUBLISHED_MS[label] * 1e-3 / sec
        print(f"{label} ({kernel}): {1e6 * sec:.2f} us/iteration; reported "
              f"{PUBLISHED_MS[label]} ms ({ratio:.0f}x)", flush=True)
        lines.append(f"| {label} | {kernel} | {1e6 * sec:.2f} | {PUBLISHED_MS[label]} | "
                     f"{ratio:.0f}x |")
        for variant in ("gibbs", "marginal"):
            if variant != kernel:
                other, _ = per_iteration(model, mech, s_dp, n, variant)
                lines.append(f"| {label} | {variant} | {1e6 * other:.2f} | "
                             f"{PUBLISHED_MS[label]} | {PUBLISHED_MS[label] * 1e-3 / other:.0f}x |")

    lines += ["", "## ESS per second, beta-binomial: suffstat against record", "",
              "Same release for both; ESS bulk of p over 2 chains x 5000 draws; seconds of "
              "sampling after compilation. ratio > 1: suffstat gives more effective samples "
              "per second. Both with their default kernels (suffstat's: the column kernel).",
              "",
              "| n | epsilon | record ESS/s | suffstat ESS/s | ratio | record s | suffstat s | "
              "kernel |", "|---|---|---|---|---|---|---|---|"]
    model = beta_binomial.model(1, 1)
    for n in SIZES["sizes"]:
        for eps in (0.01, 0.1, 1.0):
            mech = beta_binomial.laplace(eps)
            s_dp = mech.release(model.simulate({"p": 0.3}, n, seed=n), seed=n + 1)
            rec, rec_s, _ = ess_per_second(model, mech, s_dp, n, "record", SIZES["draws"])
            suf, suf_s, kernel = ess_per_second(model, mech, s_dp, n, "suffstat",
                                                SIZES["draws"])
            print(f"n={n} eps={eps}: record {rec:.3g} ESS/s, suffstat {suf:.3g} ESS/s "
                  f"({suf / rec:.2g}x)", flush=True)
            lines.append(f"| {n:,} | {eps:g} | {rec:.3g} | {suf:.3g} | {suf / rec:.2g} | "
                         f"{rec_s:.2f} | {suf_s:.2f} | {kernel} |")
    print_or_write(lines, OUT / "suffstat_vs_record.md", quick)


if __name__ == "__main__":
    main()
