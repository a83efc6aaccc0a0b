"""Algorithm 2 as printed against the exact posterior on the truncated gamma-exponential release
(issue 16, item 4).

The authors' setting: n = 1000 exponential records (lam = 1), epsilon = 0.1, bounds the 2.5% /
97.5% quantiles of Exponential(1), sensitivity b - a. The expected truncated total is not
monotone in lam, so depending on the prior the exact posterior
(``gamma_exponential.exact_posterior``, by characteristic functions) has a second mode at small
lam. For priors Gamma(k, k), 4 chains x 25 000 draws (+1000 tune) of each suffstat kernel: the
sd ratio to the exact sd with its z (Monte Carlo standard errors), the mean's z, the fraction
of draws below lam = 0.6 (the second mode) against the exact one, bulk ESS.

Run: python benchmarks/printed_variant.py [--quick]   (about two minutes)
Writes benchmarks/results/printed_variant.md.
"""
from __future__ import annotations

import math
import time
import warnings
from pathlib import Path

import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import gamma_exponential

from _common import minutes_since, parser, print_or_write, show_row

OUT = Path(__file__).parent / "results"
PRIORS = (5.0, 10.0, 20.0)


def main():
    ap = parser(__doc__, quick="one prior, 4 x 300 draws")
    quick = ap.parse_args().quick
    priors, draws = ((PRIORS[0],), 300) if quick else (PRIORS, 25000)
    a, b = -math.log(0.975), -math.log(0.025)
    mech = dw.Laplace(gamma_exponential.family().truncated_statistic(a, b), epsilon=0.1,
                      sensitivity=b - a, truncation=(a, b))
    lines = ["# Algorithm 2 as printed on the truncated gamma-exponential release", "",
             "`python benchmarks/printed_variant.py`: n = 1000, epsilon = 0.1, bounds "
             f"[{a:.4f}, {b:.4f}] (2.5% / 97.5% quantiles of Exponential(1)), sensitivity "
             "b - a; 4 chains x 25 000 draws (+1000 tune), seed 4; exact posterior by "
             "characteristic functions. z: error in Monte Carlo standard errors.", "",
             "| prior | exact P(lam < 0.6) | variant | sd / exact | sd z | mean z | "
             "P(lam < 0.6) | bulk ESS | R-hat |", "|---|---|---|---|---|---|---|---|---|"]
    began = time.perf_counter()
    for k in priors:
        model = gamma_exponential.model(k, k)
        s_dp = mech.release(model.simulate({"lam": 1.0}, 1000, seed=11), seed=12)
        exact = gamma_exponential.exact_posterior(mech, s_dp, 1000, k, k, points=800)
        below = float(exact.cdf(0.6))
        for variant in ("gibbs", "printed", "marginal"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                idata = dw.sample(model, mech, s_dp, 1000, method="suffstat", variant=variant,
                                  seed=4, draws=draws, tune=1000)
            x = diagnostics.group(idata, "posterior")["lam"].values
            line = (f"| Gamma({k:g}, {k:g}) | {below:.4f} | {variant} | "
                    f"{x.std() / exact.std():.3f} | "
                    f"{(x.std() - exact.std()) / diagnostics.mcse(x, 'sd'):+.1f} | "
                    f"{(x.mean() - exact.mean()) / diagnostics.mcse(x):+.1f} | "
                    f"{np.mean(x < 0.6):.4f} | {diagnostics.ess(x):.0f} | "
                    f"{diagnostics.rhat(x):.3f} |")
            show_row(lines, line)
    lines += ["", f"{minutes_since(began)} min."]
    print_or_write(lines, OUT / "printed_variant.md", quick)


if __name__ == "__main__":
    main()
