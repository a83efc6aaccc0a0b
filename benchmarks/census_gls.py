"""dawrap's posterior against generalised least squares (GLS) of the noisy measurements
(issue 24, item 4): interval coverage of the true block and tract counts over repeated
releases, interval width, and the share of negative GLS estimates.

The geography: ``--blocks`` blocks of public sizes (about ``--per-block`` persons), ``--per-tract``
blocks to a tract, ``--categories`` categories; released are the block-by-category and the
tract-by-category counts with discrete Gaussian noise (rho ``--rho`` per level: sigma
1/sqrt(rho)). ``--truth fixed``: the true counts are drawn once (block probabilities Dirichlet
around their tract's) and each of ``--releases`` releases adds new noise to them (the
frequentist question: coverage of fixed counts). ``--truth prior``: each release first draws
new true counts from the fitted model's own prior (``alpha_c ~ Gamma(2, 1)``, each block's
probabilities ``Dirichlet(alpha)``), where a Bayesian 90% interval covers in 90% of the
releases exactly (calibration), so dawrap's coverage must come out nominal.

**GLS** (what the agency's uncertainty product computes, written out here): the block counts
``beta`` (blocks x categories) minimise ``sum_j (y_j - (A beta)_j)^2 / sigma_j^2`` subject to
the invariants (each block's total is its public size), ``A`` stacking the identity (block
measurements) and the sums over each tract's blocks. Each tract is solved on its own (the
measurements do not couple tracts) through the KKT system; the covariance of the estimate is
the constrained inverse of ``A^T W A``, and the 90% interval is ``beta_hat +- 1.645 sd``
(normal noise: nominal 90% if the discrete noise were Gaussian; the estimates are real numbers
and may be negative). Tract counts: sums of the block estimates, with their covariance.

**dawrap**: ``small_area.model`` / ``small_area.discrete_gaussian`` with ``dw.sample``'s
defaults (4 chains x 1000 draws after 1000 warm-up, started from the release) and
``keep_stats=True``: the posterior of the noise-free block and tract counts; 5%-95%
equal-tailed intervals. The counts are whole numbers, so such an interval holds at least 90%
of the posterior, often more (a count known to within one has its 5% and 95% quantiles one
apart, and the interval holds nearly all of it): its nominal coverage is the posterior mass
it holds, printed as "nominal coverage", which the coverage over releases drawn from the
prior must match.

Run: python benchmarks/census_gls.py [--releases 100] [--blocks 100] [--per-block 20]
     [--truth fixed|prior]
"""
from __future__ import annotations

import os
import time

import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import small_area

from _common import parser

Z90 = 1.6448536269514722


def gls(y_block: np.ndarray, y_tract: np.ndarray, sizes: np.ndarray, tracts: np.ndarray,
        var_block: float, var_tract: float):
    """GLS block counts and their standard deviations, and the tract counts' and theirs,
    under the invariants (block totals = sizes)."""
    blocks, cats = y_block.shape
    beta, sd = np.empty((blocks, cats)), np.empty((blocks, cats))
    t_hat, t_sd = np.empty((tracts.max() + 1, cats)), np.empty((tracts.max() + 1, cats))
    for t in range(tracts.max() + 1):
        members = np.flatnonzero(tracts == t)
        m = len(members)
        d = m * cats
        # measurements: each block cell, then each tract cell (sum over its blocks)
        A = np.vstack([np.eye(d), np.tile(np.eye(cats), (1, m))])
        w = np.r_[np.full(d, 1.0 / var_block), np.full(cats, 1.0 / var_tract)]
        y = np.r_[y_block[members].ravel(), y_tract[t]]
        C = np.kron(np.eye(m), np.ones((1, cats)))  # block totals
        H = A.T @ (w[:, None] * A)
        kkt = np.block([[H, C.T], [C, np.zeros((m, m))]])
        rhs = np.r_[A.T @ (w * y), sizes[members]]
        inv = np.linalg.inv(kkt)
        solution = inv @ rhs
        cov = inv[:d, :d]  # the constrained covariance of the estimate: (H^-1 restricted)
        beta[members] = solution[:d].reshape(m, cats)
        sd[members] = np.sqrt(np.clip(np.diag(cov), 0.0, None)).reshape(m, cats)
        S = np.tile(np.eye(cats), (1, m))
        t_hat[t] = S @ solution[:d]
        t_sd[t] = np.sqrt(np.clip(np.diag(S @ cov @ S.T), 0.0, None))
    return beta, sd, t_hat, t_sd


def simulate(blocks: int, per_block: int, per_tract: int, cats: int, seed: int = 4):
    rng = np.random.default_rng(seed)
    tracts = np.arange(blocks) // per_tract
    sizes = 1 + rng.poisson(per_block - 1, blocks)
    p_tract = rng.dirichlet(np.full(cats, 2.0), tracts.max() + 1)
    p_block = np.array([rng.dirichlet(20.0 * p_tract[t]) for t in tracts])
    counts = rng.multinomial(sizes, p_block)
    return sizes, tracts, counts


def prior_counts(rng, sizes: np.ndarray, cats: int) -> np.ndarray:
    """Counts drawn from ``small_area.model``'s prior: alpha, then each block's
    probabilities, then its counts."""
    alpha = rng.gamma(2.0, 1.0, cats)
    return rng.multinomial(sizes, rng.dirichlet(alpha, len(sizes)))


def main():
    ap = parser(__doc__, releases=100, blocks=100, per_block=20, per_tract=10, categories=4,
                rho=0.5)
    ap.add_argument("--truth", choices=("fixed", "prior"), default="fixed")
    args = ap.parse_args()
    cats = args.categories
    sizes, tracts, counts = simulate(args.blocks, args.per_block, args.per_tract, cats)
    n = int(sizes.sum())
    x = small_area.records(sizes, np.concatenate([np.repeat(np.arange(cats), c)
                                                  for c in counts]))
    model = small_area.model(sizes, cats)
    mech = small_area.discrete_gaussian(tracts, cats, rho=(args.rho, args.rho))
    var_b, var_t = mech.noise_variance()[0], mech.noise_variance()[-1]
    true_tract = np.array([counts[tracts == t].sum(axis=0) for t in range(tracts.max() + 1)])
    nb = args.blocks * cats
    rows = []
    began = time.perf_counter()
    truth_rng = np.random.default_rng(77)
    for r in range(args.releases):
        if args.truth == "prior":
            counts = prior_counts(truth_rng, sizes, cats)
            x = small_area.records(sizes, np.concatenate([np.repeat(np.arange(cats), c)
                                                          for c in counts]))
            true_tract = np.array([counts[tracts == t].sum(axis=0)
                                   for t in range(tracts.max() + 1)])
        s_dp = mech.release(x, seed=1000 + r)
        y_block, y_tract = s_dp[:nb].reshape(-1, cats), s_dp[nb:].reshape(-1, cats)
        beta, sd, t_hat, t_sd = gls(y_block, y_tract, sizes, tracts, var_b, var_t)
        idata = dw.sample(model, mech, s_dp, n, seed=r, keep_stats=True, progress=False)
        t = diagnostics.group(idata, "imputed_statistic")["t"].values.reshape(-1, mech.size)
        lo, hi = np.quantile(t, [0.05, 0.95], axis=0)
        d_lo_b, d_hi_b = lo[:nb].reshape(-1, cats), hi[:nb].reshape(-1, cats)
        d_lo_t, d_hi_t = lo[nb:].reshape(-1, cats), hi[nb:].reshape(-1, cats)
        inside = ((lo <= t) & (t <= hi)).mean(axis=0)  # each interval's posterior mass
        rows.append(dict(
            gls_block=np.mean(np.abs(beta - counts) <= Z90 * sd),
            gls_tract=np.mean(np.abs(t_hat - true_tract) <= Z90 * t_sd),
            gls_block_width=np.mean(2 * Z90 * sd), gls_tract_width=np.mean(2 * Z90 * t_sd),
            gls_negative=np.mean(beta < 0), gls_negative_tract=np.mean(t_hat < 0),
            gls_rmse=np.sqrt(np.mean((beta - counts) ** 2)),
            dw_block=np.mean((d_lo_b <= counts) & (counts <= d_hi_b)),
            dw_tract=np.mean((d_lo_t <= true_tract) & (true_tract <= d_hi_t)),
            dw_block_mass=inside[:nb].mean(), dw_tract_mass=inside[nb:].mean(),
            dw_block_width=np.mean(d_hi_b - d_lo_b), dw_tract_width=np.mean(d_hi_t - d_lo_t),
            dw_rmse=np.sqrt(np.mean((t[:, :nb].mean(axis=0).reshape(-1, cats) - counts) ** 2)),
            rhat=max(diagnostics.rhat(diagnostics.group(idata, "posterior")["log_alpha"]
                                      .values[..., c]) for c in range(cats))))
        print(f"release {r + 1}/{args.releases}: {time.perf_counter() - began:.0f} s",
              flush=True)
    mean = {k: np.mean([row[k] for row in rows]) for k in rows[0]}
    se = {k: np.std([row[k] for row in rows], ddof=1) / np.sqrt(len(rows)) for k in rows[0]}
    print(f"\n{args.blocks} blocks ({n} persons, sizes public), {tracts.max() + 1} tracts, "
          f"{cats} categories; rho {args.rho:g} per level (noise sd {np.sqrt(var_b):.2f}); "
          f"{args.releases} releases, truth {args.truth} (" + ("the same confidential counts"
          if args.truth == "fixed" else "new counts from the prior each time") + "); 90% "
          f"intervals; "
          f"load {os.getloadavg()[0]:.1f}\n")
    print("| | GLS | dawrap |\n|---|---|---|")
    fmt = lambda k: f"{mean[k]:.3f} ({se[k]:.3f})"  # noqa: E731
    print(f"| coverage of the true block counts | {fmt('gls_block')} | {fmt('dw_block')} |")
    print(f"| coverage of the true tract counts | {fmt('gls_tract')} | {fmt('dw_tract')} |")
    print(f"| nominal coverage of those intervals, blocks | 0.900 | {fmt('dw_block_mass')} |")
    print(f"| nominal coverage of those intervals, tracts | 0.900 | {fmt('dw_tract_mass')} |")
    print(f"| mean interval width, block counts | {fmt('gls_block_width')} | "
          f"{fmt('dw_block_width')} |")
    print(f"| mean interval width, tract counts | {fmt('gls_tract_width')} | "
          f"{fmt('dw_tract_width')} |")
    print(f"| share of negative estimates, blocks | {fmt('gls_negative')} | 0 (counts) |")
    print(f"| share of negative estimates, tracts | {fmt('gls_negative_tract')} | 0 |")
    print(f"| root mean square error, block counts | {fmt('gls_rmse')} | {fmt('dw_rmse')} |")
    print(f"| worst R-hat of log_alpha (mean over releases) | | {mean['rhat']:.3f} |")
    print("\n(standard errors over releases in parentheses)")


if __name__ == "__main__":
    main()
