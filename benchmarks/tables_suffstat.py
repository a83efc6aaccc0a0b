"""Sufficient-statistic sampler: cost per iteration against the number of cells K (issue 14).

``dirichlet_multinomial`` with Laplace noise (epsilon = 1) on all K counts, ``n = 100 K``
records (100 expected per cell, so that the Gibbs kernel's counts are valid), prior
Dirichlet(1). Two implementations of the same kernels in one process, on the same releases:

* structured: the built-in declaration (``cell_probabilities``), the O(K) kernels of
  ``dawrap.samplers.suffstat_multinomial``;
* dense: the same family without it, the kernels that form and factorise K x K matrices
  (``--dense-up-to``; they refuse more than 500 cells).

Both kernels are timed (``variant="gibbs"`` and ``"marginal"``): microseconds per iteration of
one chain started near the data (warm-up included, a third of the iterations; after it the
marginal kernel adds its independence step), the fastest of ``--rounds`` runs, each run long
enough to take about ``--seconds`` seconds (20 iterations at least). Also printed: the whole ``dw.sample`` call of one such run (checks,
starts, compilation cached), and the ratio dense / structured at equal K. BLAS runs on one
thread (below).

Part ``empty``: a release of 50 cells of which 3 hold the n = 1000 records (prior
Dirichlet(0.1), Laplace noise, epsilon = 1), both implementations of the marginal kernel
(the default there) and of the Gibbs kernel: 2 chains x 2000 draws (+1000 warm-up), bulk ESS
of the occupied cells' probabilities and of the smallest over all cells, mean acceptance,
or the error raised.

Part ``kernels``: the releases of part ``cost`` at K = 100 and 1000, both O(K) kernels from
the default start (prior draws resampled by the release), 2 chains x 2000 draws (+1000
warm-up): the smallest and the median bulk ESS over the first 50 cells, the seconds of
sampling, and the kernel ``variant=None`` picks.

Run: python benchmarks/tables_suffstat.py [--cells 3 10 30 100 300 1000 10000 100000]
     [--dense-up-to 300] [--rounds 3] [--seconds 1.0] [--parts cost,empty,kernels]
"""
from __future__ import annotations

import os

# One BLAS thread: the dense kernels' LAPACK calls (eigh, solve) otherwise start threads that
# contend with the chain's own on this shared 2-core machine, which made them 10-200x slower
# and erratic (eigh of 300 x 300: 1.9 s with OpenBLAS's threads, 10 ms with one). Set before
# numpy is imported.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import dawrap as dw  # noqa: E402
from dawrap import diagnostics  # noqa: E402
from dawrap.models import dirichlet_multinomial as dm  # noqa: E402

from _common import parser  # noqa: E402


def dense_model(alpha):
    """dirichlet_multinomial without its one-hot declaration: the dense kernels."""
    model = dm.model(alpha)
    f = model.family
    model.family = dw.ExponentialFamily(f.statistic, f.stat_size, f.mean_cov,
                                        f.conjugate_draw, f.valid, bounded=True,
                                        natural=f.natural, log_partition=f.log_partition,
                                        project=f.project)
    return model


def release(k, seed):
    """A release of n = 100 k records in k cells (counts drawn directly: no database)."""
    rng = np.random.default_rng(seed)
    n = 100 * k
    p = rng.dirichlet(np.full(k, 50.0))
    mech = dm.laplace(1.0, k)
    return mech, mech.release_given_total(rng, rng.multinomial(n, p).astype(float)), n


def start(y):
    """A start near the data (the release's counts, clipped, as probabilities): the timed
    runs measure the steady state, not a walk in from a prior draw (whose first Gibbs steps
    reject many draws of the counts when some of K prior probabilities are tiny)."""
    p = np.maximum(y, 1.0)
    return {"p": p / p.sum()}


def run(model, mech, y, n, variant, iterations):
    """(seconds per iteration of the sampler, seconds of the whole dw.sample call, mean
    rejected draws of the counts per kept iteration (Gibbs) or mean acceptance (marginal))."""
    tune = iterations // 3
    begin = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # R-hat of a single short chain
        idata = dw.sample(model, mech, y, n, method="suffstat", variant=variant,
                          draws=iterations - tune, tune=tune, chains=1, seed=1,
                          init_theta=start(y), progress=False)
    call = time.perf_counter() - begin
    stats = diagnostics.group(idata, "sample_stats")
    extra = stats["rejections" if variant == "gibbs" else "accept_prob"].values.mean()
    return float(diagnostics.attrs(idata)["sampling_time"]) / iterations, call, float(extra)


def measure(model, mech, y, n, variant, rounds, seconds):
    run(model, mech, y, n, variant, 3)  # compile
    # Lengthen a probe run until it takes a fifth of the target, then size the timed runs
    # from it (a run's fixed cost, about a millisecond, is then negligible).
    iterations = 6
    while True:
        per = run(model, mech, y, n, variant, iterations)[0]
        if per * iterations >= 0.2 * seconds or iterations >= 1_000_000:
            break
        iterations *= 4
    iterations = int(min(max(seconds / per, 20), 2_000_000))
    best, call = np.inf, np.inf
    for _ in range(rounds):
        t, c, extra = run(model, mech, y, n, variant, iterations)
        best, call = min(best, t), min(call, c)
    return best, call, iterations, extra


def empty_cells():
    """Part ``empty``: the dense and the O(K) kernels where most cells hold no record."""
    k, n = 50, 1000
    p = np.zeros(k)
    p[:3] = [0.5, 0.3, 0.2]
    rng = np.random.default_rng(0)
    mech = dm.laplace(1.0, k)
    y = mech.release_given_total(rng, rng.multinomial(n, p).astype(float))
    alpha = np.full(k, 0.1)
    print(f"\n{k} cells, records in 3 (n = {n:,}), Dirichlet(0.1) prior, Laplace noise "
          f"(epsilon = 1); 2 chains x 2000 draws (+1000 warm-up), seed 2\n")
    print("| implementation | kernel | bulk ESS of p_0, p_1, p_2 | smallest bulk ESS, all "
          "cells | mean acceptance | seconds |")
    print("|---|---|---|---|---|---|")
    for name, model in (("dense", dense_model(alpha)), ("structured", dm.model(alpha))):
        for variant in ("gibbs", "marginal"):
            begin = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    idata = dw.sample(model, mech, y, n, method="suffstat", variant=variant,
                                      draws=2000, tune=1000, chains=2, seed=2, progress=False)
            except ValueError as err:
                print(f"| {name} | {variant} | error: {str(err)[:90]}... | | | |")
                continue
            seconds = time.perf_counter() - begin
            draws = diagnostics.group(idata, "posterior")["p"].values
            ess = [diagnostics.ess(draws[..., j]) for j in range(k)]
            accept = diagnostics.group(idata, "sample_stats")["accept_prob"].values.mean()
            print(f"| {name} | {variant} | {ess[0]:.0f}, {ess[1]:.0f}, {ess[2]:.0f} | "
                  f"{min(ess):.0f} | {accept:.3f} | {seconds:.1f} |", flush=True)


def kernels():
    """Part ``kernels``: Gibbs against marginal where the typical cell keeps its information."""
    from dawrap.runner.suffstat import choose_variant

    print("\n| K | kernel | smallest / median bulk ESS, first 50 cells | sampling s | "
          "default |")
    print("|---|---|---|---|---|")
    for k in (100, 1000):
        mech, y, n = release(k, seed=k)
        model = dm.model(np.ones(k))
        default = choose_variant(model, mech, n, None)
        for variant in ("gibbs", "marginal"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                idata = dw.sample(model, mech, y, n, method="suffstat", variant=variant,
                                  draws=2000, tune=1000, chains=2, seed=1, progress=False)
            draws = diagnostics.group(idata, "posterior")["p"].values
            ess = [diagnostics.ess(draws[..., j]) for j in range(50)]
            seconds = float(diagnostics.attrs(idata)["sampling_time"])
            print(f"| {k:,} | {variant} | {min(ess):.0f} / {np.median(ess):.0f} | "
                  f"{seconds:.2f} | {default} |", flush=True)


def main():
    ap = parser(__doc__, cells=[3, 10, 30, 100, 300, 1000, 10_000, 100_000], dense_up_to=300,
                rounds=3, seconds=1.0, parts="cost,empty,kernels")
    args = ap.parse_args()
    print(f"# load average at start: {os.getloadavg()}", flush=True)
    if "cost" in args.parts.split(","):
        cost(args)
    if "empty" in args.parts.split(","):
        empty_cells()
    if "kernels" in args.parts.split(","):
        kernels()
    print(f"# load average at end: {os.getloadavg()}")


def cost(args):
    """Part ``cost``: microseconds per iteration against K, structured and dense."""
    print("| K | n | kernel | structured us/it | dense us/it | dense / structured | "
          "structured dw.sample s (iterations) | structured rejections/it or acceptance |")
    print("|---|---|---|---|---|---|---|---|")
    for k in args.cells:
        mech, y, n = release(k, seed=k)
        alpha = np.ones(k)
        fast = dm.model(alpha)
        slow = dense_model(alpha) if k <= args.dense_up_to else None
        for variant in ("gibbs", "marginal"):
            t_fast, call, its, extra = measure(fast, mech, y, n, variant, args.rounds,
                                               args.seconds)
            if slow is not None:
                t_slow = measure(slow, mech, y, n, variant, args.rounds, args.seconds)[0]
                dense, ratio = f"{t_slow * 1e6:,.1f}", f"{t_slow / t_fast:,.1f}"
            else:
                dense = ratio = "-"
            print(f"| {k:,} | {n:,} | {variant} | {t_fast * 1e6:,.1f} | {dense} | {ratio} | "
                  f"{call:.2f} ({its:,}) | {extra:.3g} |", flush=True)


if __name__ == "__main__":
    main()
