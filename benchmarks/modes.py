"""Releases that two explanations fit (issue 30): mode switching, accuracy and speed of the
record sampler, before and after, and where the Poisson non-centred map pays for itself.

Part 1, issue 30's release: exponential records, prior Gamma(1, 1), bounds [0, 10],
epsilon = 1, n = 100, a release of 0. About 31% of the exact posterior lies below
lam = 0.05. Per seed, in the same run (so machine load cancels), four record samplers,
4 chains x 2000 draws (+1000 tune):

* "before": what dw.sample did before issue 30 (no non-centred map, so no interweaving;
  chains started at prior draws resampled by the central-limit likelihood, 64 each);
* "starts only": the new starts (one chain per mode) with plain record sweeps;
* "interweave, no jumps": the new starts and the non-centred random walk alone;
* "default": what dw.sample now chooses (interweaving with jumps between the modes).

Columns: the mean and P(lam < 0.05) against importance sampling from the prior with the
exact likelihood (closed form at this release; 2 x 10^6 draws), switches between the modes
per 1000 iterations (all chains), bulk ESS of the mode indicator, R-hat of lam, sampling
seconds, and whether a warning was raised.

Part 2, poisson_gamma's non-centred map (the inverse CDF of the Poisson, located from
either tail): min ESS per second of interweaving against plain record sweeps on clamped
releases (c = 5, n = 1000, lam about 2) across the missing information, and the same for
gamma_exponential's (one division per record) on truncated releases with a Gamma(20, 20)
prior (one mode): where each crosses over (their NonCentred thresholds, 0.85 and 0.5).

Run: python benchmarks/modes.py [--quick]   (about 10 minutes; --quick: one seed, short
chains, nothing written). Writes benchmarks/results/modes.md.
"""
from __future__ import annotations

import math
import os
import time
import warnings
from pathlib import Path

import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import gamma_exponential, poisson_gamma
from dawrap.runner import starts
from dawrap.runner.information import missing_information

from _common import minutes_since, parser, print_or_write

OUT = Path(__file__).parent / "results"
N, UPPER, EPSILON, RELEASE = 100, 10.0, 1.0, 0.0


def reference(draws: int = 2_000_000):
    """Importance sampling from the Gamma(1, 1) prior with the exact likelihood of a release
    at the lower bound: E[exp(-t(x) / b)]^n, b the Laplace scale."""
    lam = np.random.default_rng(2026).gamma(1.0, 1.0, draws)
    scale = UPPER / EPSILON
    rate = lam + 1.0 / scale
    log_w = N * np.log(np.exp(-lam * UPPER) + lam / rate * -np.expm1(-rate * UPPER))
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    return float(w @ lam), float(w @ (lam < 0.05))


def old_starts(model, mech, seed, chains):
    """The starts dw.sample made before: each chain resamples its own 64 prior draws."""
    rngs = [np.random.Generator(np.random.PCG64(s))
            for s in np.random.SeedSequence(seed).spawn(chains)]
    noise = starts.noise_variance(mech)
    return [{"lam": starts.release_informed_theta(rng, model, mech, np.array([RELEASE]), N,
                                                  noise)[0]} for rng in rngs]


def run(label, model, mech, seed, draws, tune, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = dw.sample(model, mech, RELEASE, N, draws=draws, tune=tune, seed=seed,
                          cores=1, progress=False, **options)
    lam = diagnostics.group(idata, "posterior")["lam"].values
    low = (lam < 0.05).astype(float)
    switches = np.abs(np.diff(low, axis=1)).sum()
    kinds = {"R-hat": "R-hat", "the chains stayed in separate modes": "chains apart",
             "a mode may be missing": "mode missed"}
    told = [label for w in caught if issubclass(w.category, RuntimeWarning)
            for start, label in kinds.items() if str(w.message).startswith(start)]
    return dict(label=label, mean=lam.mean(), low=low.mean(),
                switches=1000 * switches / (low.shape[0] * (low.shape[1] - 1)),
                ess=diagnostics.ess(low) if low.std() > 0 else float("nan"),
                rhat=diagnostics.rhat(lam), seconds=diagnostics.attrs(idata)["sampling_time"],
                warned="; ".join(told) or "no")


def part1(seeds, draws, tune):
    plain = dw.Model(params={"lam": ()}, record_size=1,
                     draw_record=gamma_exponential.draw_record,
                     draw_theta=gamma_exponential.model().draw_theta,
                     model_stat=gamma_exponential.value, stat_size=1,
                     draw_prior=lambda rng: np.array([rng.gamma(1.0, 1.0)]),
                     family=gamma_exponential.family())  # the model as it was: no map
    model = gamma_exponential.model()
    mech = gamma_exponential.laplace(EPSILON, 0.0, UPPER)
    ref_mean, ref_low = reference()
    rows = []
    for seed in seeds:
        rows.append(run("before", plain, mech, seed, draws, tune,
                        init_theta=old_starts(model, mech, seed, 4)))
        rows.append(run("starts only", model, mech, seed, draws, tune, interweave=False))
        rows.append(run("interweave, no jumps", model, mech, seed, draws, tune,
                        interweave=True, jumps=False))
        rows.append(run("default", model, mech, seed, draws, tune))
        for row in rows[-4:]:
            row["seed"] = seed
            print(row, flush=True)
    lines = [f"Importance sampling (2 x 10^6 prior draws): mean {ref_mean:.3f}, "
             f"P(lam < 0.05) {ref_low:.3f}.", "",
             "| seed | sampler | mean | P(lam < 0.05) | switches / 1000 it. | ESS (mode) | "
             "R-hat | seconds | warnings (as raised now) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['seed']} | {r['label']} | {r['mean']:.3f} | {r['low']:.3f} | "
                     f"{r['switches']:.1f} | {r['ess']:.0f} | {r['rhat']:.2f} | "
                     f"{r['seconds']:.2f} | {r['warned']} |")
    return lines


def ess_per_second(model, mech, s_dp, n, draws, **options):
    idata = dw.sample(model, mech, s_dp, n, draws=draws, tune=1000, chains=2, cores=1,
                      seed=1, progress=False, **options)
    x = diagnostics.group(idata, "posterior")[list(model.params)[0]].values
    ess = min(diagnostics.ess(x, "bulk"), diagnostics.ess(x, "tail"))
    return ess / diagnostics.attrs(idata)["sampling_time"]


def part2(draws):
    lines = ["| model | epsilon | missing information | plain ESS/s | interweave ESS/s | "
             "ratio | default |", "|---|---|---|---|---|---|---|"]
    cases = [("poisson_gamma clamped c=5", poisson_gamma.model(2.0, 1.0),
              lambda e: poisson_gamma.laplace(e, 5), {"lam": 2.0}, (0.2, 0.1, 0.07, 0.05, 0.03)),
             ("gamma_exponential [0, 5]", gamma_exponential.model(20.0, 20.0),
              lambda e: gamma_exponential.laplace(e, 0.0, 5.0), {"lam": 1.0},
              (0.5, 0.3, 0.2, 0.1, 0.05))]
    n = 1000
    for name, model, make, truth, epsilons in cases:
        for eps in epsilons:
            mech = make(eps)
            s_dp = mech.release(model.simulate(truth, n, seed=1), seed=2)
            f = missing_information(model, mech, n)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                dw.sample(model, mech, s_dp, n, draws=20, tune=20, chains=1, seed=0,
                          interweave=True, jumps=False, progress=False)  # compile
                plain = ess_per_second(model, mech, s_dp, n, draws, interweave=False)
                moved = ess_per_second(model, mech, s_dp, n, draws, interweave=True,
                                       jumps=False)
                chosen = dw.Record().prepare(model, mech, n, s_dp).interweave
            line = (f"| {name} | {eps:g} | {f:.2f} | {plain:.0f} | {moved:.0f} | "
                    f"{moved / plain:.2f}x | {'interweave' if chosen else 'plain'} |")
            print(line, flush=True)
            lines.append(line)
    return lines


def main():
    ap = parser(__doc__, quick="one seed, short chains")
    quick = ap.parse_args().quick
    seeds, draws, tune = ((1,), 300, 200) if quick else ((1, 2, 3), 2000, 1000)
    began = time.perf_counter()
    load = os.getloadavg()[0]
    lines = ["# Releases that two explanations fit (issue 30)", "",
             "`python benchmarks/modes.py`: see the script's docstring for the setup.", "",
             "## Issue 30's release: mode switching and accuracy", "",
             *part1(seeds, draws, tune), "",
             "## Where the non-centred maps pay for themselves", "",
             "2 chains x 4000 draws (+1000 tune), one release each, min of bulk and tail ESS "
             "per second of sampling; 'default' is what dw.sample chooses.", "",
             *part2(300 if quick else 4000), "",
             f"{minutes_since(began)} min; load average at the start "
             f"{load:.1f} on {os.cpu_count()} cores (ratios within a row are measured "
             f"back to back)."]
    print_or_write(lines, OUT / "modes.md", quick)


if __name__ == "__main__":
    main()
