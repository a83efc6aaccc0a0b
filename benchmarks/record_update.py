"""Cost of one record update: the generic engine against a hand-fused numba loop.

Both run the same sampler (Ju et al. Algorithm 1, Laplace mechanism, conjugate theta step)
on the same data, in the same process; the fused loop is written out by hand for one model
with everything inlined and reports what the engine reports (acceptance rate, smallest
acceptance probability). The ratio generic / fused is the price of the engine's generality;
"vs minimal loop" compares with a beta-binomial loop that keeps no statistics at all.

Run: python benchmarks/record_update.py [--n 1000000] [--sweeps 20]

``--ir FILE`` writes instead the optimised LLVM IR of the engine's bound sweep for both models,
its names normalised (cache tags, addresses, value numbering), so that two versions of dawrap
can be compared for identical code: ``PYTHONPATH=old-checkout python
benchmarks/record_update.py --ir old.ll; python benchmarks/record_update.py --ir new.ll; diff
old.ll new.ll``.
"""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import tempfile
import time

import numba
import numpy as np

import dawrap as dw
from dawrap.samplers import record
from dawrap.samplers.kernels import as_kernel
from dawrap.models import beta_binomial, poisson_gamma

from _common import parser


# The fused loops compute what the engine reports too (acceptance rate and the smallest
# acceptance probability of each sweep), as a user's own sampler would have to.


@numba.njit(nogil=True)
def fused_beta_binomial(rng, x, total, s_dp, scale, a, b, sweeps):
    n = x.shape[0]
    accept_rate, min_prob = np.empty(sweeps), np.empty(sweeps)
    for it in range(sweeps):
        p = rng.beta(a + total, b + n - total)
        log_g = -abs(s_dp - total) / scale
        accepted, min_log_alpha = 0, 0.0
        for i in range(n):
            new = 1.0 if rng.random() < p else 0.0
            if new == x[i]:
                accepted += 1
                continue
            t_new = total + new - x[i]
            log_g_new = -abs(s_dp - t_new) / scale
            log_alpha = log_g_new - log_g
            min_log_alpha = min(min_log_alpha, log_alpha)
            if log_alpha >= 0.0 or rng.random() < math.exp(log_alpha):
                x[i], total, log_g = new, t_new, log_g_new
                accepted += 1
        accept_rate[it], min_prob[it] = accepted / n, math.exp(min_log_alpha)
    return total, accept_rate, min_prob


@numba.njit(nogil=True)
def minimal_beta_binomial(rng, x, total, s_dp, scale, a, b, sweeps):
    """The sweep with no bookkeeping at all (issue 13's yardstick): conjugate draw, propose,
    skip an unchanged record, accept on ``la >= 0 or u < exp(la)``."""
    n = x.shape[0]
    for it in range(sweeps):
        p = rng.beta(a + total, b + n - total)
        log_g = -abs(s_dp - total) / scale
        for i in range(n):
            new = 1.0 if rng.random() < p else 0.0
            if new == x[i]:
                continue
            t_new = total + new - x[i]
            log_g_new = -abs(s_dp - t_new) / scale
            la = log_g_new - log_g
            if la >= 0.0 or rng.random() < math.exp(la):
                x[i], total, log_g = new, t_new, log_g_new
    return total


@numba.njit(nogil=True)
def fused_poisson_gamma(rng, x, total, clamped, s_dp, scale, c, alpha, beta, sweeps):
    n = x.shape[0]
    accept_rate, min_prob = np.empty(sweeps), np.empty(sweeps)
    for it in range(sweeps):
        lam = rng.gamma(alpha + total, 1.0 / (beta + n))
        log_g = -abs(s_dp - clamped) / scale
        accepted, min_log_alpha = 0, 0.0
        for i in range(n):
            new = float(rng.poisson(lam))
            d_clamped = min(new, c) - min(x[i], c)
            if d_clamped == 0.0:
                total += new - x[i]
                x[i] = new
                accepted += 1
                continue
            log_g_new = -abs(s_dp - (clamped + d_clamped)) / scale
            log_alpha = log_g_new - log_g
            min_log_alpha = min(min_log_alpha, log_alpha)
            if log_alpha >= 0.0 or rng.random() < math.exp(log_alpha):
                total += new - x[i]
                clamped += d_clamped
                x[i], log_g = new, log_g_new
                accepted += 1
        accept_rate[it], min_prob[it] = accepted / n, math.exp(min_log_alpha)
    return total, accept_rate, min_prob


def engine_chain(model, mech):
    fns = record.RecordFunctions(model.draw_record, model.propose_record, model.model_stat,
                                 mech.sampler_statistic, mech.log_density)
    shared = model.user_model_stat is mech.statistic
    kernel = as_kernel(model.draw_theta, False).step
    return record.bind_chain(fns, record.SweepOptions(model.record_size, mech.size,
                                                      model.stat_size, shared=shared),
                             kernel_step=kernel)


def sweep_ir(model, mech, theta) -> str:
    """The optimised LLVM IR of the engine's sweep for ``model``: each function defined in it,
    with what differs between builds of the same code normalised (cache tags and version
    counters in mangled names, addresses, the numbering of values and blocks)."""
    x = model.simulate(theta, 100, seed=1)
    s_dp = mech.release(x, seed=2)
    chain = engine_chain(model, mech)
    inputs = record.Inputs(s_dp, mech.params, 1)
    state = chain.init(model.pack(theta), x, inputs, np.empty(0), np.empty(0))
    chain.sweep(np.random.default_rng(0), state, s_dp, mech.params)
    (ir,) = chain.sweep.inspect_llvm().values()
    ir = re.sub(r"__[0-9a-f]{16}", "__TAG", ir)
    ir = re.sub(r"B\d+v\d+", "BvN", re.sub(r"0x[0-9a-f]+|\.\d{6,}", "ADDR", ir))
    out, names = [], {}
    for line in ir.splitlines():
        if line.startswith("define"):
            names = {}  # number values and blocks afresh in each function
        if names is not None and (line.startswith("define") or names):
            line = re.sub(r'%"[^"]*"|%[\w.$]+|^[\w.$]+(?=:)',
                          lambda m: names.setdefault(m.group(0).lstrip("%"), f"v{len(names)}"),
                          line)
            out.append(line)
            if line == "}":
                out.append("")
                names = {}
    return "\n".join(out)


def time_engine(model, mech, theta, n, sweeps, seed):
    x = model.simulate(theta, n, seed=seed)
    s_dp = mech.release(x, seed=seed + 1)
    chain = engine_chain(model, mech)
    trace = record.Trace(np.empty((sweeps, 1)), np.empty((sweeps, len(record.SAMPLE_STATS))),
                         np.empty((0, 1)))
    inputs = record.Inputs(s_dp, mech.params, 1)

    def go(k):
        state = chain.init(model.pack(theta), x.copy(), inputs, np.empty(0), np.empty(0))
        rng = np.random.default_rng(seed)
        t = time.perf_counter()
        chain.run(rng, state, inputs, 0, k, 0, *trace)
        return time.perf_counter() - t

    go(1)  # compile
    return min(go(sweeps) for _ in range(3)), x, s_dp


def time_fused(fn, args, sweeps):
    fn(*args(1))  # compile
    best = math.inf
    for _ in range(3):
        a = args(sweeps)
        t = time.perf_counter()
        fn(*a)
        best = min(best, time.perf_counter() - t)
    return best


def main():
    ap = parser(__doc__, n=1_000_000, sweeps=20)
    ap.add_argument("--ir", metavar="FILE", help="write the sweeps' normalised LLVM IR to FILE "
                    "instead of timing them")
    args = ap.parse_args()
    if args.ir and "DAWRAP_IR_RUN" not in os.environ:
        # numba shows no IR for code loaded from its cache: compile afresh, in a process
        # with an empty cache
        with tempfile.TemporaryDirectory() as cache:
            subprocess.run([sys.executable, __file__, "--ir", args.ir], check=True,
                           env={**os.environ, "NUMBA_CACHE_DIR": cache, "DAWRAP_IR_RUN": "1"})
        return
    if args.ir:
        with open(args.ir, "w") as f:
            f.write(sweep_ir(beta_binomial.model(1.0, 1.0), beta_binomial.laplace(0.5),
                             {"p": 0.3}))
            f.write(sweep_ir(poisson_gamma.model(2.0, 1.0), poisson_gamma.laplace(1.0, c=5.0),
                             {"lam": 3.0}))
        return
    n, sweeps = args.n, args.sweeps
    print(f"n = {n:,} records, {sweeps} sweeps, best of 3; ns per record update\n")
    print(f"{'model':34s}{'engine':>10s}{'fused':>10s}{'ratio':>8s}{'updates/s':>14s}")

    model, mech = beta_binomial.model(1.0, 1.0), beta_binomial.laplace(0.5)
    t_engine, x, s_dp = time_engine(model, mech, {"p": 0.3}, n, sweeps, 1)
    t_fused = time_fused(fused_beta_binomial, lambda k: (
        np.random.default_rng(1), x[:, 0].copy(), float(x.sum()), float(s_dp[0]), 2.0, 1.0,
        1.0, k), sweeps)
    report("beta_binomial, Laplace(eps=0.5)", t_engine, t_fused, n * sweeps)
    t_minimal = time_fused(minimal_beta_binomial, lambda k: (
        np.random.default_rng(1), x[:, 0].copy(), float(x.sum()), float(s_dp[0]), 2.0, 1.0,
        1.0, k), sweeps)
    report("  vs minimal loop (no bookkeeping)", t_engine, t_minimal, n * sweeps)

    c = 5.0
    model, mech = poisson_gamma.model(2.0, 1.0), poisson_gamma.laplace(1.0, c=c)
    t_engine, x, s_dp = time_engine(model, mech, {"lam": 3.0}, n, sweeps, 2)
    t_fused = time_fused(fused_poisson_gamma, lambda k: (
        np.random.default_rng(2), x[:, 0].copy(), float(x.sum()),
        float(np.minimum(x, c).sum()), float(s_dp[0]), c / 1.0, c, 2.0, 1.0, k), sweeps)
    report("poisson_gamma, clamped c=5, eps=1", t_engine, t_fused, n * sweeps)


def report(label, t_engine, t_fused, updates):
    ns_e, ns_f = 1e9 * t_engine / updates, 1e9 * t_fused / updates
    print(f"{label:34s}{ns_e:10.2f}{ns_f:10.2f}{ns_e / ns_f:8.2f}{updates / t_engine:14.3g}")


if __name__ == "__main__":
    main()
