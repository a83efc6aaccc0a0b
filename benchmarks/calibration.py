"""Calibration study in the style of Bernstein & Sheldon (2018), Figure 1a.

For each model and epsilon: M simulated datasets from the prior, one release each, every
method run on it; the ESS-thinned, jittered rank U of the true parameter is recorded
(dawrap.studies.calibration.calibrate), and the KS statistic of U against the uniform is reported
(0 = perfectly calibrated), with the coverage of the central intervals read from U (tested
against the level, exact binomial), the raw-draw intervals' 95% coverage, the median per-trial
ESS and dawrap's verdict (ECDF band and coverage, at 0.05). ``suffstat`` is the default
kernel; ``suffstat:gibbs`` (listed last, so that the other methods keep their seeds) the
Bernstein-Sheldon Gibbs kernel. Trials run in a local process pool. Writes
benchmarks/results/calibration.md and calibration.png.

Run: python benchmarks/calibration.py [--trials 300] [--quick]   (about 10 minutes on 2 cores)
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from dawrap.studies.calibration import calibrate
from dawrap.models import beta_binomial, dirichlet_multinomial, gamma_exponential

from _common import parser

OUT = Path(__file__).parent / "results"
SETTINGS = {"draws": 1000, "tune": 500, "chains": 2}


def studies():
    # (label, model, mechanism factory, n, methods)
    yield ("binomial", beta_binomial.model(1, 1), beta_binomial.laplace, 100,
           ["record", "suffstat", "naive", "nonprivate", "suffstat:gibbs"])
    yield ("multinomial (K=3)", dirichlet_multinomial.model([1, 1, 1]),
           lambda eps: dirichlet_multinomial.laplace(eps, 3), 100,
           ["record", "suffstat", "naive", "nonprivate", "suffstat:gibbs"])
    # Prior Gamma(20, 20) keeps lam near 1; the bounds [0, 3] keep about 95% of records and are
    # fixed in advance, never taken from the true lam.
    yield ("exponential (truncated [0, 3])", gamma_exponential.model(20, 20),
           lambda eps: gamma_exponential.laplace(eps, 0.0, 3.0), 200,
           ["record", "suffstat", "suffstat:printed", "naive", "nonprivate", "suffstat:gibbs"])


def main():
    ap = parser(__doc__, quick="8 trials, one epsilon, short chains", trials=300)
    args = ap.parse_args()
    epsilons, settings = (0.01, 0.1, 1.0), SETTINGS
    if args.quick:
        args.trials, epsilons = 8, (0.1,)
        settings = {"draws": 200, "tune": 100, "chains": 2}
    OUT.mkdir(exist_ok=True)
    rows, curves = [], {}
    began = time.perf_counter()
    for label, model, mech_for, n, methods in studies():
        for eps in epsilons:
            cal = calibrate(model, mech_for(eps), n, methods, trials=args.trials, seed=2018,
                            sample_kwargs=settings)
            tests, verdict, raw = cal.coverage_test(0.025), cal.verdict(0.05), cal.coverage()
            for m, (ks, p) in cal.ks().items():
                cover = " ".join(f"{c:.3f}" + ("" if ok else "*")
                                 for c, ok in zip(tests[m].coverage, tests[m].passed))
                rows.append((label, eps, m, ks, p, cover, raw[m][-1],
                             float(np.median(cal.ess[m])), verdict[m]))
                curves[(label, eps, m)] = np.sort(cal.pit[m])
                print(f"{label:32s} eps={eps:<5g} {m:18s} KS={ks:.3f} p={p:.2g} "
                      f"cover {cover} {'calibrated' if verdict[m] else 'NOT calibrated'}",
                      flush=True)
    elapsed = time.perf_counter() - began
    if args.quick:
        return
    crit = 1.36 / np.sqrt(args.trials)
    lines = [
        "# Calibration (KS statistic of ESS-thinned ranks of the true parameter; 0 is "
        "perfect)", "",
        f"`python benchmarks/calibration.py --trials {args.trials}`; {args.trials} simulated "
        f"datasets per cell, {SETTINGS['chains']} chains x {SETTINGS['draws']} draws "
        f"(+{SETTINGS['tune']} tune), seed 2018; {elapsed / 60:.1f} min on 2 cores.",
        f"The 5% critical value of the KS statistic is {crit:.3f}: a calibrated method stays "
        "below it in about 19 cells of 20. Coverage at 0.5 / 0.8 / 0.9 / 0.95 from the "
        "ESS-thinned ranks (* fails the exact binomial test at 0.025 / 4); raw 0.95: the "
        "interval between raw-draw quantiles (Monte Carlo error in its ends); ESS: median "
        "per-trial bulk ESS; calibrated: the verdict at 0.05 (ECDF band at 0.025 and "
        "coverage).", "",
        "| model | epsilon | method | KS | p-value | coverage | raw 0.95 | ESS | calibrated |",
        "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {lab} | {eps:g} | {m} | {ks:.3f} | {p:.2g} | {cover} | {raw95:.3f} | "
              f"{ess:.0f} | {'yes' if ok else 'NO'} |"
              for lab, eps, m, ks, p, cover, raw95, ess, ok in rows]
    (OUT / "calibration.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    labels = [s[0] for s in studies()]
    fig, axes = plt.subplots(len(labels), 3, figsize=(12, 3.4 * len(labels)), sharex=True,
                             sharey=True)
    for i, label in enumerate(labels):
        for j, eps in enumerate((0.01, 0.1, 1.0)):
            ax = axes[i, j]
            for (lab, e, m), u in curves.items():
                if lab == label and e == eps:
                    ax.plot(u, np.arange(1, len(u) + 1) / len(u), label=m, lw=1.2)
            ax.plot([0, 1], [0, 1], "k:", lw=0.8)
            ax.set_title(f"{label}, eps={eps:g}", fontsize=9)
            if i == len(labels) - 1:
                ax.set_xlabel("posterior quantile of true parameter")
            if j == 0:
                ax.set_ylabel("empirical CDF")
        axes[i, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "calibration.png", dpi=110)
    print(f"wrote {OUT / 'calibration.md'} and {OUT / 'calibration.png'}")


if __name__ == "__main__":
    main()
