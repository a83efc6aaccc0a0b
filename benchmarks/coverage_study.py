"""What the suffstat under-coverage of issue 16 was.

`dawrap calibrate beta_binomial --epsilon 0.1 --n 100 --methods record,suffstat,naive
--trials 200` (2 chains x 1000 draws + 500 tune, seed 0) printed "in band: yes" for suffstat
while its 95% intervals missed the truth in 22 of 200 trials. This script reruns that study
(the Bernstein-Sheldon Gibbs kernel, ``suffstat:gibbs``, in the same position as ``suffstat``
then, so with the same seeds and draws), adds the marginal kernel, and reruns everything with
more trials and longer chains. For each sampler it reports the coverage of the central
intervals between raw-draw quantiles (what was read then), the coverage from the ESS-thinned
ranks (what the verdict now tests), their binomial p-values, the per-trial bulk ESS, and the
verdict.

Run: python benchmarks/coverage_study.py [--long-trials 1000] [--quick]   (minutes, 2 cores)
Writes benchmarks/results/coverage_study.md.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from scipy import stats

from dawrap.studies.calibration import calibrate
from dawrap.models import beta_binomial

from _common import minutes_since, parser, print_or_write

OUT = Path(__file__).parent / "results"


def table(cal, label):
    tests = cal.coverage_test(0.025)
    verdict = cal.verdict(0.05)
    raw = cal.coverage()
    trials = cal.theta.size
    rows = []
    for m in cal.methods:
        ess = cal.ess[m]
        raw_p = [stats.binomtest(int(round(c * trials)), trials, lev).pvalue
                 for c, lev in zip(raw[m], cal.levels)]
        misses_95 = int(round((1 - raw[m][cal.levels.index(0.95)]) * trials))
        rows.append(
            f"| {label} | {m} | "
            + " ".join(f"{c:.3f}" for c in raw[m]) + f" | {misses_95} | "
            + " ".join(f"{p:.2g}" for p in raw_p) + " | "
            + " ".join(f"{c:.3f}" for c in tests[m].coverage) + " | "
            + " ".join(f"{p:.2g}" for p in tests[m].p_value) + " | "
            + f"{np.min(ess):.0f} / {np.median(ess):.0f} | "
            + f"{'yes' if verdict[m] else 'NO'} |")
    return rows


def main():
    ap = parser(__doc__, quick="8 trials, short chains", long_trials=1000, workers=2)
    args = ap.parse_args()
    short_trials = 200
    short_kw = {"draws": 1000, "tune": 500, "chains": 2}
    long_kw = {"draws": 5000, "tune": 1000, "chains": 4}
    if args.quick:
        args.long_trials, short_trials = 8, 8
        short_kw = long_kw = {"draws": 200, "tune": 100, "chains": 2}
    model, mech, n = beta_binomial.model(1, 1), beta_binomial.laplace(0.1), 100
    began = time.perf_counter()
    lines = ["# Coverage of the suffstat sampler at n = 100, epsilon = 0.1 (issue 16)", "",
             f"`python benchmarks/coverage_study.py --long-trials {args.long_trials}`. "
             "Levels 0.5, 0.8, 0.9, 0.95. raw: central intervals between quantiles of the "
             "raw draws; thinned: from the ESS-thinned, jittered rank (the verdict's); p: "
             "exact two-sided binomial test against the level; ESS: per-trial bulk ESS, "
             "min / median; calibrated: dawrap's verdict at 0.05 (ECDF band at 0.025 and "
             "thinned coverage at 0.025 / 4 per level).", "",
             "| study | sampler | raw coverage | raw misses of 95% | raw p | thinned "
             "coverage | thinned p | ESS min / median | calibrated |",
             "|---|---|---|---|---|---|---|---|---|"]
    # 1. The command: same seed, settings and method positions (suffstat:gibbs is
    # the default suffstat kernel of that time, so its draws are the ones reported then).
    short = calibrate(model, mech, n, ["record", "suffstat:gibbs", "naive", "suffstat:marginal"],
                      trials=short_trials, seed=0, sample_kwargs=short_kw,
                      workers=args.workers)
    print(short, flush=True)
    lines += table(short, "200 trials, 2 x 1000 draws (the issue's command)")
    # 2. More trials, longer chains.
    long = calibrate(model, mech, n, ["record", "suffstat:gibbs", "suffstat:marginal"],
                     trials=args.long_trials, seed=1, sample_kwargs=long_kw,
                     workers=args.workers)
    print(long, flush=True)
    lines += table(long, f"{args.long_trials} trials, 4 x 5000 draws")
    # 3. The same number of trials with the short chains, to separate chain length
    # from the number of trials.
    many = calibrate(model, mech, n, ["record", "suffstat:gibbs", "suffstat:marginal"],
                     trials=args.long_trials, seed=1, sample_kwargs=short_kw,
                     workers=args.workers)
    print(many, flush=True)
    lines += table(many, f"{args.long_trials} trials, 2 x 1000 draws")
    lines += ["", f"{minutes_since(began)} min on 2 cores."]
    print_or_write(lines, OUT / "coverage_study.md", args.quick)


if __name__ == "__main__":
    main()
