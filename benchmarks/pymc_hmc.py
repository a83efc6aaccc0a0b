"""HMC and PyMC models on the logistic-regression tutorial, against the tutorial's adaptive
random walk in the same run.

Three theta kernels on the same releases (examples/private_logistic_regression.py: n = 500,
beta = (1, -0.5), y clamp(x) and y released with Laplace noise):
  adaptive_metropolis   the tutorial: hand-written log density, adaptive random walk
  hmc (hand-written)    dw.kernels.hmc with a hand-written njit logp_and_grad
  hmc (PyMC)            dawrap.pymc.from_pymc of the same model written in PyMC
  hmc (PyMC, hand-written draw_record)
                        the same, with the tutorial's njit record draw (from_pymc's
                        draw_record=): the PyMC log density and gradient, a numba record draw
4 chains x DRAWS draws after TUNE warm-up, one core, compilation excluded; ESS = the smaller of
bulk and tail ESS over the parameters. "us/iter" is wall time per iteration (theta step plus
record sweep); the PyMC/hand-written HMC ratio is the cost of going through PyTensor.
Compile time of from_pymc is measured in fresh processes: cold (empty PyTensor cache) and warm.
Writes benchmarks/results/pymc_hmc.md.

Run: python benchmarks/pymc_hmc.py [--draws 2000] [--epsilons 1 4]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "examples"))
import private_logistic_regression as tutorial  # noqa: E402
import pymc_logistic_regression as pymc_tutorial  # noqa: E402

import dawrap as dw  # noqa: E402
import dawrap.pymc  # noqa: E402
from dawrap import diagnostics  # noqa: E402

OUT = Path(__file__).parent / "results" / "pymc_hmc.md"
P = tutorial.P


@numba.njit
def logp_and_grad(beta, x):
    """The tutorial's log posterior and its gradient, written by hand."""
    lp = -0.5 * np.sum(beta * beta) / tutorial.PRIOR_SD ** 2
    grad = -beta / tutorial.PRIOR_SD ** 2
    for i in range(x.shape[0]):
        eta = x[i, 1] * beta[0] + x[i, 2] * beta[1]
        lp += x[i, 0] * eta - max(eta, 0.0) - np.log1p(np.exp(-abs(eta)))
        r = x[i, 0] - 1.0 / (1.0 + np.exp(-eta))
        grad[0] += r * x[i, 1]
        grad[1] += r * x[i, 2]
    return lp, grad


def kernels(n: int) -> dict:
    base = tutorial.private_model()
    hand_hmc = dw.Model(params={"beta": (P,)}, record_size=1 + P, draw_record=tutorial.draw_record,
                        draw_theta=dw.kernels.hmc(logp_and_grad), draw_prior=base.draw_prior)
    pymc_hand_draw = dawrap.pymc.from_pymc(pymc_tutorial.pymc_model(n), records=["y", "X"],
                                           draw_record=tutorial.draw_record)
    return {"adaptive_metropolis": base, "hmc (hand-written)": hand_hmc,
            "hmc (PyMC)": pymc_tutorial.private_model(n),
            "hmc (PyMC, hand-written draw_record)": pymc_hand_draw}


def run(model, mech, s_dp, n, draws, tune, seed) -> dict:
    dw.sample(model, mech, s_dp, n, draws=2, tune=2, chains=1, seed=0)  # compile
    began = time.perf_counter()
    idata = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=4, cores=1,
                      seed=seed)
    elapsed = time.perf_counter() - began
    beta = diagnostics.group(idata, "posterior")["beta"].values
    ess = min(min(diagnostics.ess(beta[..., j], "bulk"), diagnostics.ess(beta[..., j], "tail"))
              for j in range(P))
    return {"ess": ess, "seconds": elapsed, "us": 1e6 * elapsed / (4 * (draws + tune)),
            "mean": beta.mean(axis=(0, 1))}


COMPILE = """
import time, numpy as np
t = time.perf_counter()
import pymc_logistic_regression as m
model = m.private_model(500)
t1 = time.perf_counter()
import dawrap as dw
mech = m.mechanism(1.0)
dw.sample(model, mech, np.zeros(3), 500, draws=2, tune=2, chains=1, seed=0)
print(t1 - t, time.perf_counter() - t1)
"""


def compile_times() -> list[tuple[float, float]]:
    """(from_pymc seconds, first-sample seconds) with a fresh PyTensor cache, then warm."""
    out = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYTENSOR_FLAGS=f"compiledir={cache}",
                   PYTHONPATH=str(Path(__file__).parents[1] / "examples"))
        for _ in range(2):
            res = subprocess.run([sys.executable, "-c", COMPILE], env=env, check=True,
                                 capture_output=True, text=True)
            out.append(tuple(float(v) for v in res.stdout.split()[-2:]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--n", type=int, default=500)
    args = parser.parse_args()
    lines = ["# HMC and PyMC models on the logistic-regression tutorial", "",
             f"`python benchmarks/pymc_hmc.py --draws {args.draws} --epsilons "
             f"{' '.join(f'{e:g}' for e in args.epsilons)}`; n = {args.n}, 4 chains x "
             f"{args.draws} draws (+{args.tune} warm-up), one core, compilation excluded.", "",
             "| epsilon | kernel | min ESS | seconds | us/iter | ESS/s | ESS/s vs AM | "
             "posterior mean |", "|---|---|---|---|---|---|---|---|"]
    for eps in args.epsilons:
        mech = tutorial.mechanism(eps)
        truth = {"beta": np.array([1.0, -0.5])}
        s_dp = mech.release(tutorial.private_model().simulate(truth, args.n, seed=2022),
                            seed=2023)
        results = {name: run(model, mech, s_dp, args.n, args.draws, args.tune, seed=7)
                   for name, model in kernels(args.n).items()}
        base = results["adaptive_metropolis"]
        for name, r in results.items():
            lines.append(f"| {eps:g} | {name} | {r['ess']:.0f} | {r['seconds']:.1f} | "
                         f"{r['us']:.0f} | {r['ess'] / r['seconds']:.1f} | "
                         f"{(r['ess'] / r['seconds']) / (base['ess'] / base['seconds']):.2f}x | "
                         f"{np.array2string(r['mean'], precision=3)} |")
            print(lines[-1], flush=True)
        for name in ("hmc (PyMC)", "hmc (PyMC, hand-written draw_record)"):
            ratio = results[name]["us"] / results["hmc (hand-written)"]["us"]
            lines.append(f"| {eps:g} | cost per iteration, {name} / hmc (hand-written) | | | "
                         f"{ratio:.2f}x | | | |")
            print(lines[-1], flush=True)
    (cold, cold_first), (warm, warm_first) = compile_times()
    lines += ["", f"Compile (fresh processes): from_pymc {cold:.1f} s cold (empty PyTensor "
              f"cache), {warm:.1f} s warm; then the chain's first dw.sample (numba) "
              f"{cold_first:.1f} s / {warm_first:.1f} s."]
    print(lines[-1])
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
