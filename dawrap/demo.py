"""``dawrap demo``: the README's main job, and the case for the library.

Simulates a small confidential database, releases its count with the Laplace mechanism at a
small epsilon, and shows the naive posterior (the release taken for the count)
over-confident next to the exact record-level sampler and the closed-form exact posterior:
in a table, in a coverage line over repeated experiments, and in a plot; writes a netCDF
file and PNG plots to an output folder.
"""
from __future__ import annotations

import argparse
import time

from dawrap._cli_args import (add_output, count, output_file, plots, positive_number,
                              write_netcdf)
from dawrap._files import as_path, ensure_folder

__all__ = ["add_arguments", "run"]


def add_arguments(demo: argparse.ArgumentParser) -> None:
    """The demo's options, on its subcommand's parser."""
    demo.add_argument("--n", type=count(1), default=100, help="records (default 100)")
    demo.add_argument("--p", type=float, default=0.3, help="true Bernoulli p (default 0.3)")
    demo.add_argument("--epsilon", type=positive_number, default=0.1,
                      help="privacy budget, a number > 0 (default 0.1)")
    demo.add_argument("--draws", type=count(1), default=2000,
                      help="draws per chain (default 2000)")
    demo.add_argument("--tune", type=count(0), default=500,
                      help="warm-up per chain (default 500)")
    demo.add_argument("--chains", type=count(1), default=4, help="chains (default 4)")
    demo.add_argument("--methods", default="record,naive",
                      help="samplers, comma-separated: record and naive, and suffstat if "
                           "wanted (default record,naive)")
    demo.add_argument("--repeats", type=count(0), default=2000,
                      help="repeated experiments for the coverage line, computed in closed "
                           "form (default 2000; 0 skips it)")
    demo.add_argument("--seed", type=int, default=2022, help="random seed (default 2022)")
    add_output(demo, "dawrap-demo", "output folder (default dawrap-demo)",
               "overwrite the demo's files in --out if they exist")


#: One line of ``dawrap --help``, and the description of ``dawrap demo --help`` (which
#: argparse prints as it is: a percent sign is written once, not doubled).
HELP = "simulate, release, sample and compare on built-in data"
DESCRIPTION = ("Why the noise must be modelled. Simulate a confidential database of "
               "Bernoulli records, release its count with the Laplace mechanism, and "
               "compare the posterior of p from the exact record-level sampler (and, "
               "with --methods, the sufficient-statistic sampler) with the closed-form "
               "exact posterior and with the naive one that ignores the noise: mean, sd, 90% "
               "interval and whether it covers the true p, and how often each method's "
               "interval covers p over repeated experiments. Writes demo_posterior.nc, "
               "demo_trace.png and demo_posteriors.png to --out.")


#: What ``dawrap demo`` writes to --out.
DEMO_FILES = ("demo_posterior.nc", "demo_trace.png", "demo_posteriors.png")

#: The samplers the demo can run, and what each is. It runs record and naive by default:
#: suffstat adds the sufficient-statistic sampler (Bernstein & Sheldon), which approximates
#: the statistic's law by a normal one (CLT), and a compilation of about ten seconds.
DEMO_METHODS = {"record": "record-level data augmentation (exact)",
                "suffstat": "sufficient-statistic sampler (approximate: a normal, CLT, law "
                            "for the count)",
                "naive": "treats s_dp as the true count"}


def _interval(lower: float, upper: float) -> str:
    return f"[{lower:.3f}, {upper:.3f}]"


def _wrap(text: str) -> str:
    """A paragraph of the demo's printout, in lines of at most 90 characters."""
    import textwrap

    return textwrap.fill(text, width=90)


def _demo_coverage(mech, n: int, repeats: int, seed: int) -> tuple[float, float]:
    """How often the exact and the naive 90% central intervals cover p over ``repeats``
    experiments with p drawn from the uniform prior, each with a new database and release.

    Both posteriors are in closed form for this model, so no sampling is needed: the exact one
    is the Beta mixture of ``beta_binomial.exact_posterior``; the naive one is what
    ``method="naive"`` samples, Beta(1 + s, 1 + n - s) with the release ``s`` clipped to
    [0, n]. An interval covers p exactly when the posterior CDF at p lies in (0.05, 0.95).
    For p drawn from the prior an exact posterior's intervals cover at their nominal rate:
    that is a theorem, which the first number checks (within about 1.3 percentage points
    for 2000 repeats); the second is what ignoring the noise costs.
    """
    import numpy as np
    from scipy import stats

    from dawrap.models import beta_binomial

    rng = np.random.default_rng(seed)
    p = rng.uniform(size=repeats)
    s_dp = rng.binomial(n, p) + rng.laplace(0.0, mech.scale, repeats)
    exact = np.array([beta_binomial.exact_posterior(mech, [s], n).cdf(q)[0]
                      for s, q in zip(s_dp, p)])
    clipped = np.clip(s_dp, 0, n)
    naive = stats.beta.cdf(p, 1.0 + clipped, 1.0 + n - clipped)
    inside = [float(np.mean((u > 0.05) & (u < 0.95))) for u in (exact, naive)]
    return inside[0], inside[1]


def _plot_demo(path, draws: dict, exact, p: float, title: str) -> None:
    """Each method's posterior density against the exact one, with the true p marked; the
    legend sits outside the axes, clear of the data."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    grid = np.linspace(0.0, 1.0, 801)[1:-1]
    ax.fill_between(grid, exact.pdf(grid), color="0.85", label="exact (closed form)")
    styles = {"record": ("tab:blue", "-"), "suffstat": ("tab:green", "--"),
              "naive": ("tab:red", "-")}
    for method, values in draws.items():
        colour, line = styles.get(method, ("tab:gray", ":"))
        ax.hist(values, bins=np.linspace(0.0, 1.0, 101), density=True, histtype="step",
                color=colour, linestyle=line, lw=1.4,
                label=f"{method}: {DEMO_METHODS.get(method, '')}")
    ax.axvline(p, color="black", lw=1.2, linestyle=":", label=f"true p = {p:g}")
    ax.set(xlabel="p (probability that a record is 1)", ylabel="posterior density",
           title=title, xlim=(0.0, 1.0))
    ax.set_ylim(bottom=0.0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    fig.savefig(path, dpi=110, bbox_inches="tight")  # "tight" keeps the outside legend
    plt.close(fig)


def run(args) -> int:
    """``dawrap demo``: see the module docstring."""
    # Every argument and the output files first, before the imports of the work (numba,
    # ArviZ: seconds), so that an error is reported at once and nothing is written.
    if not 0.0 < args.p < 1.0:
        raise ValueError(f"--p must be a probability strictly between 0 and 1, got {args.p}")
    if args.repeats < 0:
        raise ValueError(f"--repeats must be >= 0, got {args.repeats}")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not {"record", "naive"} <= set(methods) <= set(DEMO_METHODS) or \
            len(set(methods)) != len(methods):
        raise ValueError(f"--methods must name record and naive, and may add suffstat, each "
                         f"once; got {args.methods!r}")
    methods = [m for m in DEMO_METHODS if m in methods]  # the table's order
    out = as_path(args.out, "--out")
    for name in DEMO_FILES:  # before any work, not after (and the folder itself checked)
        output_file(out / name, args.force)
    ensure_folder(out, "--out")

    import numpy as np

    import dawrap as dw
    from . import diagnostics
    from dawrap.models import beta_binomial

    model = beta_binomial.model(a=1.0, b=1.0)
    mech = beta_binomial.laplace(epsilon=args.epsilon)
    x = model.simulate({"p": args.p}, args.n, seed=args.seed)
    s_dp = mech.release(x, seed=args.seed + 1)
    count, noise_sd = int(x.sum()), float(np.sqrt(mech.noise_variance()[0]))
    count_sd = float(np.sqrt(args.n * args.p * (1.0 - args.p)))
    print(f"Confidential data (never published): n = {args.n} Bernoulli records with "
          f"p = {args.p:g};\ntheir count is {count}.")
    print(f"Release: the count plus Laplace noise of scale 1/epsilon = {mech.scale:g} "
          f"(epsilon = {args.epsilon:g}):\n  s_dp = {s_dp[0]:.3f}")
    print(_wrap(f"The noise sd, {noise_sd:.1f} counts, is {noise_sd / count_sd:.2g} times the "
                f"count's own sampling sd ({count_sd:.1f})."))

    began = time.perf_counter()
    cmp = dw.compare(model, mech, s_dp, args.n, methods=tuple(methods),
                     draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed + 2)
    wall = time.perf_counter() - began
    exact = beta_binomial.exact_posterior(mech, s_dp, args.n, 1.0, 1.0)
    draws = {m: diagnostics.group(idata, "posterior")["p"].values
             for m, idata in cmp.results.items()}

    print(f"\nPosterior of p given s_dp (uniform prior; {args.chains} chains x {args.draws} "
          f"draws per sampler,\n{wall:.1f} s including compilation):")
    print(f"  {'method':10s}{'mean':>8s}{'sd':>8s}   {'90% interval':16s}{'covers p':>8s}"
          f"{'sd/exact':>10s}")
    rows = [("exact", exact.mean(), exact.std(), exact.ppf(0.05), exact.ppf(0.95))]
    rows += [(m, d.mean(), d.std(ddof=1), np.quantile(d, 0.05), np.quantile(d, 0.95))
             for m, d in draws.items()]
    for method, mean, sd, lower, upper in rows:
        covers = "yes" if lower <= args.p <= upper else "NO"
        print(f"  {method:10s}{mean:8.4f}{sd:8.4f}   {_interval(lower, upper):16s}"
              f"{covers:>8s}{sd / exact.std():10.2f}")
    print(_wrap("exact: the closed-form posterior (the count summed out); "
                + "; ".join(f"{m}: {DEMO_METHODS[m]}" for m in methods) + "."))
    naive_sd = draws["naive"].std(ddof=1)
    if exact.std() / naive_sd >= 1.1:
        lines = [f"The naive posterior is {exact.std() / naive_sd:.1f} times too narrow: it "
                 f"takes the noisy release for the count."]
    else:  # e.g. --n 1000 --epsilon 0.5
        lines = [f"The naive posterior is about as wide as the exact one (sd ratio "
                 f"{naive_sd / exact.std():.2f}): here the noise is small against the "
                 f"sampling error."]
    if args.repeats:
        exact_cover, naive_cover = _demo_coverage(mech, args.n, args.repeats, args.seed + 4)
        lines.append(f"Over {args.repeats} repeated experiments (p drawn from the prior, a new "
                     f"database and release each time) its 90% interval covers p in "
                     f"{100 * naive_cover:.1f}% of them, the exact one in "
                     f"{100 * exact_cover:.1f}%.")
    print("\n" + _wrap(" ".join(lines)))

    record = draws["record"]
    print("\nThe record-level sampler against the exact posterior, with its Monte Carlo "
          "standard error:")
    print(f"  {'':8s}{'sampler':>10s}{'exact':>10s}{'mcse':>10s}")
    checks = [("mean", record.mean(), exact.mean(), diagnostics.mcse(record, "mean")),
              ("sd", record.std(ddof=1), exact.std(), diagnostics.mcse(record, "sd"))]
    checks += [(f"q{q:g}", np.quantile(record, q), exact.ppf(q),
                diagnostics.mcse(record, "quantile", q)) for q in (0.05, 0.5, 0.95)]
    for what, estimate, truth, se in checks:
        print(f"  {what:8s}{estimate:10.4f}{truth:10.4f}{se:10.4f}")
    stats = diagnostics.group(cmp.results["record"], "sample_stats")
    print(_wrap(f"Record acceptance rate {float(stats['accept_rate'].mean()):.3f}; smallest "
                f"acceptance probability {float(stats['min_accept_prob'].min()):.3f} >= "
                f"exp(-epsilon) = {np.exp(-args.epsilon):.3f} (Ju et al. Prop. 3.1)."))
    print(f"\nSampler efficiency on this release (ESS per second excludes compilation):\n{cmp}")

    print()
    idata = cmp.results["record"]
    write_netcdf(idata, out / DEMO_FILES[0], overwrite=args.force)
    title = (f"n = {args.n}, epsilon = {args.epsilon:g}: s_dp = {s_dp[0]:.1f} "
             f"(true count {count})")
    plots(out, [(DEMO_FILES[1], lambda path: diagnostics.plot_trace(idata, path)),
                (DEMO_FILES[2], lambda path: _plot_demo(path, {m: d.ravel() for m, d in
                                                               draws.items()},
                                                        exact, args.p, title))],
          overwrite=args.force)
    return 0
