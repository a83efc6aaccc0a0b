"""A SOMA-style record kernel (Single Offer, Multiple Attempts; Xiong & Ju 2025) against plain
data augmentation and dawrap's default kernel, in ESS per second on the same releases.

SOMA replaces the record sweep: each of n offers draws one record y ~ f(. | theta) and
attempts it at *every* record j, with weight w_j = g(s_dp, T - t(x_j) + t(y)); record I is
chosen with probability w_I / W (W = sum_j w_j) and replaced with probability
min(1, W / W'), where W' = W - w_I + g(s_dp, T) is the same sum for the reverse move (the
attempts at j != I have the same totals before and after the move). Detailed balance with
respect to prod_j f(x_j | theta) g(s_dp, T) holds path by path (multiple-try Metropolis with
the attempts as the tries), so the kernel is exact for exchangeable records; the script checks
its draws against the exact posterior where one is known. An offer costs O(n) (n evaluations
of log g), a sweep O(n^2): it is here to measure, not shipped (docs/kernels.md).

For each problem: 4 chains x DRAWS draws after TUNE warm-up, over REPS releases, one core.
ESS = min(bulk, tail) over parameters; the ratios are medians over releases against plain
data augmentation on the same release.

Run: python benchmarks/soma.py [--reps 2] [--draws 2000]
"""
from __future__ import annotations

import contextlib
import functools
import math
import sys
import warnings
from pathlib import Path

import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.samplers import record
from dawrap.models import beta_binomial, linear_regression, normal_mean

sys.path.insert(0, str(Path(__file__).parent))
from _common import parser, show_row, write_table
from ess_per_second import ess_per_second, releases, table_cells  # noqa: E402

OUT = Path(__file__).parent / "results"


# The names soma_sweep calls, bound per model by dawrap.samplers.record.bind_chain.
DRAW_RECORD = MECH_STAT = MODEL_STAT = LOG_DENSITY = None
RECORD_SIZE = MECH_STAT_SIZE = MODEL_STAT_SIZE = 0


def soma_sweep(rng, state, s_dp, params, table):
    """A drop-in replacement for the record sweep (a template bound like
    ``dawrap.samplers.record.dense_pass``, whose place it takes): n SOMA offers (``table``,
    the prepared draw's, is not used)."""
    record_size, size, stat_size = RECORD_SIZE, MECH_STAT_SIZE, MODEL_STAT_SIZE
    theta, x, stats, total = state.theta, state.x, state.stats, state.total
    n = x.shape[0]
    t = np.empty((n, size))          # each record's contribution, kept in step with x
    for j in range(n):
        MECH_STAT(x[j], s_dp, t[j])
    y, t_y, moved = np.empty(record_size), np.empty(size), np.empty(size)
    s_old, s_new = np.empty(stat_size), np.empty(stat_size)
    log_w = np.empty(n)
    log_g = state.log_g
    accepted, min_log_alpha = 0, 0.0
    for _ in range(n):
        DRAW_RECORD(rng, theta, y)
        MECH_STAT(y, s_dp, t_y)
        top = -math.inf
        for j in range(n):                       # the n attempts: log(w_j / g(T))
            for k in range(size):
                moved[k] = total[k] - t[j, k] + t_y[k]
            log_w[j] = LOG_DENSITY(s_dp, moved, params) - log_g
            top = max(top, log_w[j])
        if top == -math.inf:                     # y fits nowhere: rejected
            min_log_alpha = -math.inf
            continue
        weight = 0.0                             # W / (g(T) e^top)
        for j in range(n):
            weight += math.exp(log_w[j] - top)
        u = rng.random() * weight
        chosen, cumulative = n - 1, 0.0
        for j in range(n):
            cumulative += math.exp(log_w[j] - top)
            if u < cumulative:
                chosen = j
                break
        # W' = W - w_I + g(T), in the same units; max() guards the cancellation when
        # w_I dominates (W' is then tiny and the move accepted anyway).
        reverse = max(weight - math.exp(log_w[chosen] - top), 0.0) + math.exp(-top)
        log_alpha = math.log(weight) - math.log(reverse)
        min_log_alpha = min(min_log_alpha, log_alpha)
        if log_alpha >= 0.0 or rng.random() < math.exp(log_alpha):
            if stat_size > 0:
                MODEL_STAT(x[chosen], s_old)
                MODEL_STAT(y, s_new)
                for k in range(stat_size):
                    stats[k] += s_new[k] - s_old[k]
            for k in range(size):
                total[k] += t_y[k] - t[chosen, k]
                t[chosen, k] = t_y[k]
            for k in range(record_size):
                x[chosen, k] = y[k]
            log_g += log_w[chosen]
            accepted += 1
    info = record.StepInfo(accepted / n, math.exp(min_log_alpha), record.OK, math.nan)
    return record.RecordState(theta, x, stats, total, log_g, state.kernel_state,
                              state.move_state, state.cells), info


@contextlib.contextmanager
def soma_sweeps():
    """Make the record sampler build SOMA sweeps instead of its own."""
    original = record.dense_pass
    record.dense_pass = soma_sweep
    try:
        yield
    finally:
        record.dense_pass = original


def problems():
    """(label, model, mechanism, n, truth, exact posterior ``(s_dp, n) -> dist`` or None)."""
    for eps in (0.01, 1.0):
        for n in (100, 1000):
            mech = beta_binomial.laplace(eps)
            yield (f"beta_binomial, Laplace, n={n}, epsilon={eps:g}", beta_binomial.model(),
                   mech, n, {"p": 0.3},
                   functools.partial(beta_binomial.exact_posterior, mech))
    n = 1000
    for fmi in (0.1, 0.99):
        tau = np.sqrt(fmi * n / (1 - fmi))
        yield (f"normal_mean, Gaussian noise, n={n}, missing information {fmi:g}",
               normal_mean.model(0.0, 10.0, 1.0), normal_mean.gaussian(tau), n, {"mu": 1.0},
               functools.partial(normal_mean_exact, tau=tau))
    settings = linear_regression.published_settings()
    yield ("linear_regression (Ju et al. S-5), epsilon=1, n=100",
           linear_regression.model(**settings["model"]),
           linear_regression.laplace(epsilon=1.0, **settings["mechanism"]), 100,
           {"beta": settings["beta"]}, None)


def normal_mean_exact(s_dp, n, tau):
    return normal_mean.exact_posterior_gaussian(s_dp, n, tau, mu0=0.0, sd0=10.0, sigma=1.0)


def exactness(model, mech, s_dp, n, exact, draws, tune, seed) -> float:
    """SOMA's posterior mean of the first parameter minus the exact one, in Monte Carlo
    standard errors (from the bulk ESS)."""
    with soma_sweeps(), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # R-hat: slow chains are the point
        idata = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=4, seed=seed,
                          interweave=False, progress=False)
    name = next(iter(model.params))
    values = diagnostics.group(idata, "posterior")[name].values.reshape(4, draws)
    mcse = values.std() / math.sqrt(diagnostics.ess(values, "bulk"))
    return (values.mean() - exact(s_dp, n).mean()) / mcse


def main():
    ap = parser(__doc__, reps=2, draws=2000, tune=500, out=str(OUT / "soma.md"))
    args = ap.parse_args()
    lines = ["# A SOMA-style record kernel against plain data augmentation", "",
             f"`python benchmarks/soma.py {' '.join(sys.argv[1:])}`: 4 chains x {args.draws} "
             f"draws (+{args.tune} warm-up), one core, {args.reps} releases per problem. bulk "
             "and tail ESS are each minimised over parameters; min ESS is the smaller; ratios "
             "are medians over releases against plain on the same release. default: "
             "dw.sample's own choice of kernel. exact z: SOMA's posterior mean minus the "
             "exact one in Monte Carlo standard errors, one per release (where the exact "
             "posterior is known).", "",
             "| problem | kernel | record accept rate | bulk ESS | tail ESS | min ESS | "
             "seconds | ESS/s | ESS ratio | ESS/s ratio | exact z |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, model, mech, n, truth, exact in problems():
        rows = {"plain": [], "SOMA": [], "default": []}
        zs = []
        for rep, s_dp in releases(model, mech, n, truth, args.reps):
            common = (model, mech, s_dp, n)
            rows["plain"].append(ess_per_second(*common, {"interweave": False}, args.draws,
                                                args.tune, 300 + rep))
            with soma_sweeps():
                rows["SOMA"].append(ess_per_second(*common, {"interweave": False},
                                                   args.draws, args.tune, 300 + rep))
            rows["default"].append(ess_per_second(*common, {}, args.draws, args.tune,
                                                  300 + rep))
            if exact is not None:
                zs.append(exactness(*common, exact, args.draws, args.tune, 400 + rep))
        for kernel, results in rows.items():
            accept = np.median([r["accept"] for r in results])
            z = ", ".join(f"{v:+.1f}" for v in zs) if kernel == "SOMA" else ""
            line = (f"| {label} | {kernel} | {accept:.3f} | "
                    f"{table_cells(results, rows['plain'])} {z} |")
            show_row(lines, line)
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
