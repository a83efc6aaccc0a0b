"""Mixing of the sufficient-statistic sampler where the noise dominates (issue 16).

For each release and kernel (``variant``): 4 chains x 5000 draws (+1000 tune), seed 1, against
the exact posterior. Reports bulk ESS, R-hat, the posterior mean's error in Monte Carlo
standard errors (z), the sd ratio to the exact sd with its z, the cost per iteration (one chain,
101 000 iterations, the fastest of ``--repeats`` runs) and ESS per second at that cost; and
``f``, the estimated fraction of missing information, with the kernel ``variant=None`` picks.

* beta-binomial, Laplace release of the count, p = 0.3 (releases as in
  benchmarks/suffstat_speed.py): the issue's rows (n, epsilon) = (1000, 0.01), (10000, 0.005),
  (100, 0.05), and rows where the Bernstein-Sheldon Gibbs sampler already mixes well
  (n = 1000, epsilon 0.5 and 1), and between;
* Dirichlet-multinomial (K = 3, Laplace per count): each p_j against the enumerated
  exact posterior;
* truncated gamma-exponential (Algorithm 2/3 release, bounds [0, 5]): against the
  exact posterior by characteristic functions (``gamma_exponential.exact_posterior``),
  prior Gamma(20, 20) as in benchmarks/calibration.py. (With bounds [0, 3] the expected
  truncated total at lam ~ 0.35-0.6 equals the one at lam ~ 1, and the exact posterior has a
  second mode holding ~8e-4 of the mass, 2% of its sd, that no chain visits; with [0, 5] the
  other branch is at lam ~ 0.1, e^-24 less likely a priori.)

Run: python benchmarks/suffstat_mixing.py [--variants gibbs,marginal] [--only bb,dm,ge]
     [--out benchmarks/results/suffstat_mixing.md]
     (``--quick``: the first release of each model, 2 x 200 draws, to check the script runs;
     its numbers mean nothing)
The same with an older dawrap on PYTHONPATH (its Gibbs kernel) gives the "today" column;
``--summary OLD.md NEW.md`` prints the table of docs/suffstat.md from the two result files:
per release, the old Gibbs kernel against the new default (worst coordinate for the
multinomial: smallest ESS, largest R-hat and |sd ratio - 1|, smallest ESS/s).
"""
from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

import dawrap as dw

from _common import minutes_since, parser, show_row, write_table
try:
    from dawrap import diagnostics
    from dawrap.runner.information import missing_information
except ImportError:  # a dawrap from before the package layout (for the "before" column)
    from dawrap import _arviz as diagnostics
    from dawrap.interweave import missing_information
try:
    from dawrap.runner.suffstat import choose_variant
except ImportError:  # a dawrap from before the marginal kernel (for the "before" column)
    def choose_variant(model, mech, n, variant):
        return "gibbs"
from dawrap.models import beta_binomial, dirichlet_multinomial, gamma_exponential

OUT = Path(__file__).parent / "results"
SETTINGS = {"draws": 5000, "tune": 1000, "chains": 4, "cores": 1, "seed": 1}
ITERATIONS = SETTINGS["chains"] * (SETTINGS["draws"] + SETTINGS["tune"])
COST_ITERATIONS = 100_000
BB_ROWS = [(1000, 0.01), (10000, 0.005), (100, 0.05), (1000, 0.05), (1000, 0.1), (1000, 0.2),
           (1000, 0.5), (1000, 1.0), (100, 0.3), (100, 1.0), (10000, 0.02), (10000, 0.1)]
DM_ROWS = [(1000, 0.01), (100, 0.05), (100, 0.01), (100, 0.1), (100, 1.0)]
GE_ROWS = [(1000, 0.01), (10000, 0.005), (100, 0.05), (1000, 0.1), (1000, 1.0)]


def releases(only):
    """(family label, n, epsilon, model, mechanism, s_dp, {parameter index: exact})."""
    if "bb" in only:
        model = beta_binomial.model(1, 1)
        for n, eps in BB_ROWS:
            mech = beta_binomial.laplace(eps)
            s_dp = mech.release(model.simulate({"p": 0.3}, n, seed=n), seed=n + 1)
            yield ("beta-binomial", n, eps, model, mech, s_dp,
                   {0: beta_binomial.exact_posterior(mech, s_dp, n, 1, 1)})
    if "dm" in only:
        alpha = [1.0, 1.0, 1.0]
        model = dirichlet_multinomial.model(alpha)
        for n, eps in DM_ROWS:
            mech = dirichlet_multinomial.laplace(eps, 3)
            s_dp = mech.release(model.simulate({"p": np.array([0.2, 0.5, 0.3])}, n, seed=n),
                                seed=n + 1)
            exact = dirichlet_multinomial.exact_posterior(mech, s_dp, n, alpha)
            yield ("dirichlet-multinomial", n, eps, model, mech, s_dp, dict(enumerate(exact)))
    if "ge" in only:
        model = gamma_exponential.model(20, 20)  # keeps lam on one side of the peak of
        # the expected truncated total (with a wide prior the posterior is bimodal: docs)
        for n, eps in GE_ROWS:
            mech = gamma_exponential.laplace(eps, 0.0, 5.0)
            s_dp = mech.release(model.simulate({"lam": 1.0}, n, seed=n), seed=n + 1)
            yield ("gamma-exponential [0, 5]", n, eps, model, mech, s_dp,
                   {0: gamma_exponential.exact_posterior(mech, s_dp, n, 20, 20)})


def cost_per_iteration(model, mech, s_dp, n, kwargs, repeats, iterations=None):
    """Seconds per iteration of one chain in a long run (the fastest of ``repeats``: the
    least disturbed by the other jobs on this shared machine; a short run's fixed costs,
    ~ms, would otherwise count)."""
    iterations = iterations or COST_ITERATIONS
    seconds = []
    for _ in range(repeats):
        idata = dw.sample(model, mech, s_dp, n, method="suffstat", draws=iterations, tune=1000,
                          chains=1, seed=2, **kwargs)
        seconds.append(float(diagnostics.attrs(idata)["sampling_time"]))
    return min(seconds) / (iterations + 1000)


def measure(model, mech, s_dp, n, variant, exact, repeats):
    kwargs = {} if variant == "default" else {"variant": variant}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        dw.sample(model, mech, s_dp, n, method="suffstat", draws=5, tune=0, chains=1, seed=0,
                  **kwargs)  # compile
        idata = dw.sample(model, mech, s_dp, n, method="suffstat", **SETTINGS, **kwargs)
        cost = cost_per_iteration(model, mech, s_dp, n, kwargs, repeats)
    # ESS per second of the 4 x 6000 iterations at the steady-state cost.
    seconds = cost * ITERATIONS
    if variant == "default":
        variant = f"default ({diagnostics.attrs(idata)['variant']})"
    theta = diagnostics.group(idata, "posterior")[next(iter(model.params))].values
    theta = theta.reshape(theta.shape[0], theta.shape[1], -1)
    rows = []
    for j, ref in exact.items():
        x = theta[:, :, j]
        ess = diagnostics.ess(x, "bulk")
        z_mean = (x.mean() - ref.mean()) / diagnostics.mcse(x, "mean")
        sd_ratio = x.std() / ref.std()
        z_sd = (x.std() - ref.std()) / diagnostics.mcse(x, "sd")
        rows.append((variant, j, ess, diagnostics.rhat(x), z_mean, sd_ratio, z_sd, seconds,
                     ess / seconds))
    return rows


def _rows(path):
    """{(model, n, epsilon): {variant: [row per coordinate]}} from a results file."""
    out = {}
    for line in Path(path).read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 14 or not cells[1].isdigit():
            continue
        key = (cells[0], int(cells[1]), float(cells[2]))
        row = {"f": float(cells[3]), "default": cells[4], "ess": float(cells[7]),
               "rhat": float(cells[8]), "sd": float(cells[10]), "rate": float(cells[13])}
        out.setdefault(key, {}).setdefault(cells[5], []).append(row)
    return out


def summary(old_path, new_path):
    old, new = _rows(old_path), _rows(new_path)
    lines = ["| release | f | default | before: ESS, R-hat, sd/exact | default: ESS, R-hat, "
             "sd/exact | ESS/s, default / before |", "|---|---|---|---|---|---|"]
    for key, variants in new.items():
        chosen = variants[next(iter(variants))][0]["default"]
        before, after = old[key]["gibbs"], variants[chosen]

        def worst(rows):
            return (min(r["ess"] for r in rows), max(r["rhat"] for r in rows),
                    max((r["sd"] for r in rows), key=lambda v: abs(v - 1)),
                    min(r["rate"] for r in rows))

        b, a = worst(before), worst(after)
        label = f"{key[0]} n = {key[1]}, epsilon = {key[2]:g}"
        lines.append(f"| {label} | {after[0]['f']:.2f} | {chosen} | {b[0]:.0f}, {b[1]:.3f}, "
                     f"{b[2]:.3f} | {a[0]:.0f}, {a[1]:.3f}, {a[2]:.3f} | {a[3] / b[3]:.1f}x |")
    return "\n".join(lines)


def main():
    import sys

    if len(sys.argv) == 4 and sys.argv[1] == "--summary":
        print(summary(sys.argv[2], sys.argv[3]))
        return
    ap = parser(__doc__, variants="gibbs", only="bb,dm,ge", repeats=3)
    ap.add_argument("--out", default=None)
    ap.add_argument("--moves", type=int, default=None, help="marginal kernel steps per "
                    "iteration (default: dawrap.runner.suffstat.MOVES)")
    ap.add_argument("--quick", action="store_true", help="first release of each model, short "
                    "chains: checks that the script runs")
    ap.add_argument("--target", type=float, default=None, help="its warm-up acceptance target")
    args = ap.parse_args()
    from dawrap.runner import suffstat as run_suffstat
    if args.moves is not None:
        run_suffstat.MOVES = args.moves
    if args.target is not None:
        run_suffstat.TARGET_ACCEPT = args.target
    if args.quick:
        global ITERATIONS, COST_ITERATIONS
        SETTINGS.update(draws=200, tune=100, chains=2)
        ITERATIONS = SETTINGS["chains"] * (SETTINGS["draws"] + SETTINGS["tune"])
        COST_ITERATIONS, args.repeats = 2000, 1
        for rows in (BB_ROWS, DM_ROWS, GE_ROWS):
            del rows[1:]
    variants = args.variants.split(",")
    lines = ["# Sufficient-statistic sampler: mixing against the exact posterior", "",
             f"`python benchmarks/suffstat_mixing.py --variants {args.variants} --only "
             f"{args.only}`; 4 chains x 5000 draws (+1000 tune), seed 1. z: error in "
             "Monte Carlo standard errors (|z| < 4 agrees). us/it: microseconds per iteration "
             f"of one chain over 101 000 iterations, the fastest of {args.repeats} runs (this "
             "machine is shared). ESS/s: bulk ESS per second of the 4 x 6000 iterations at "
             "that cost. variant default: the kernel dw.sample chose.", "",
             "f: the estimated fraction of missing information "
             "(dawrap.runner.information.missing_information), on which the default kernel (the "
             "column default) is chosen.",
             "", "| model | n | epsilon | f | default | variant | j | bulk ESS | R-hat | mean z | "
             "sd/exact | sd z | us/it | ESS/s |", "|" + "---|" * 14]
    began = time.perf_counter()
    for label, n, eps, model, mech, s_dp, exact in releases(args.only.split(",")):
        f = missing_information(model, mech, n)
        chosen = choose_variant(model, mech, n, None)
        for variant in variants:
            for used, j, ess, rhat, zm, ratio, zs, sec, rate in measure(model, mech, s_dp, n,
                                                                         variant, exact,
                                                                         args.repeats):
                line = (f"| {label} | {n} | {eps:g} | {f:.2f} | {chosen} | {used} | {j} | "
                        f"{ess:.0f} | "
                        f"{rhat:.3f} | {zm:+.1f} | {ratio:.3f} | {zs:+.1f} | "
                        f"{1e6 * sec / ITERATIONS:.2f} | "
                        f"{rate:.0f} |")
                show_row(lines, line)
    lines += ["", f"{minutes_since(began)} min."]
    if args.out:
        print(f"wrote {write_table(lines, args.out)}")


if __name__ == "__main__":
    main()
