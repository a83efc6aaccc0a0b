"""HMC and PyMC models against the adaptive random walk, ESS per second, in the same run, on
two problems:

  logistic    the logistic-regression tutorial (examples/gallery/plot_private_logistic_regression.py:
              n = 500, beta = (1, -0.5), y clamp(x) and y released with Laplace noise)
  regression  Ju et al. (2022) Sec. 5, clamped linear regression at the published settings
              (dawrap.models.linear_regression: n = 100, p = 2 with an intercept, sigma^2 and
              the predictors' distribution known, 9 clamped sums released, sensitivity 13)

Kernels, all on the same release and the same record draw unless said otherwise:
  adaptive_metropolis   hand-written log density, adaptive random walk (the baseline)
  hmc (hand-written)    dw.kernels.hmc with a hand-written njit logp_and_grad (same density)
  hmc (PyMC)            dawrap.pymc.from_pymc of the same model written in PyMC (its own
                        record draws, density and gradient compiled from PyMC's graphs; the
                        sweep draws its proposals in blocks, draw_records)
  hmc (PyMC, one record per call)
                        the same with from_pymc(batched=False): the sweep calls the compiled
                        one-record draw once per record (the cost before draw_records)
  hmc (PyMC, hand-written draw_record)
                        the same with the hand-written record draw (from_pymc's draw_record=)
  conjugate (built-in)  regression only: the built-in model's exact draw of beta given the
                        records, for reference (no kernel can mix faster within the sampler)

4 chains x DRAWS draws after TUNE warm-up, one core, compilation excluded. ESS = the smallest
of bulk and tail ESS over the parameters. The machine is shared, so each kernel's run is
repeated --repeats times, the kernels taking turns, with the same seed (identical chains): the
fastest repeat is its cost ("us/iter", wall time per iteration: theta step plus record sweep).
"PyMC / hand-written" is the cost of going through PyTensor, against hmc (hand-written).
Compile time of the PyMC logistic model in fresh processes: cold (empty PyTensor and numba
caches) and warm (the caches the cold run left).

Run: python benchmarks/pymc_hmc.py [--cases logistic regression] [--repeats 3] [--draws N]
(about 8 minutes on the 2-core machine, shared)
Writes benchmarks/results/pymc_hmc.md.
"""
from __future__ import annotations

import datetime
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
import pymc as pm

from _common import parser, write_table

sys.path.insert(0, str(Path(__file__).parents[1] / "examples"))
sys.path.insert(0, str(Path(__file__).parents[1] / "examples" / "gallery"))
import plot_private_logistic_regression as tutorial  # noqa: E402
import pymc_logistic_regression as pymc_tutorial  # noqa: E402

import dawrap as dw  # noqa: E402
import dawrap.pymc  # noqa: E402
from dawrap import diagnostics  # noqa: E402
from dawrap.models import linear_regression as lr  # noqa: E402

OUT = Path(__file__).parent / "results" / "pymc_hmc.md"
P = tutorial.P
JU = lr.published_settings()
SIGMA2, TAU2 = JU["model"]["sigma2"], JU["model"]["prior_sd"] ** 2


@numba.njit
def logistic_logp_and_grad(beta, x):
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


@numba.njit
def regression_logp_and_grad(beta, x):
    """log N(beta; 0, tau^2 I) + sum_i log N(y_i; beta_0 + x_i . beta_1:, sigma^2), records
    (x_1, x_2, y), and its gradient (the predictors' known density is a constant)."""
    lp = -0.5 * np.sum(beta * beta) / TAU2
    grad = -beta / TAU2
    for i in range(x.shape[0]):
        r = (x[i, 2] - beta[0] - beta[1] * x[i, 0] - beta[2] * x[i, 1]) / SIGMA2
        lp -= 0.5 * r * r * SIGMA2
        grad[0] += r
        grad[1] += r * x[i, 0]
        grad[2] += r * x[i, 1]
    return lp, grad


@numba.njit
def regression_log_density(beta, x, stats):
    return regression_logp_and_grad(beta, x)[0]


def regression_pymc(n: int) -> pm.Model:
    """The Ju et al. regression in PyMC: records (x_1, x_2, y)."""
    with pm.Model() as model:
        beta = pm.Normal("beta", 0.0, JU["model"]["prior_sd"], shape=3)
        X = pm.Normal("X", np.array(JU["model"]["m"]), 1.0, observed=np.zeros((n, 2)))
        pm.Normal("y", beta[0] + X @ beta[1:], np.sqrt(SIGMA2), observed=np.zeros(n))
    return model


def hand_model(base: dw.Model, kernel) -> dw.Model:
    return dw.Model(params=base.params, record_size=base.record_size,
                    draw_record=base.draw_record, draw_theta=kernel, draw_prior=base.draw_prior)


def logistic_case(eps: float, n: int) -> tuple:
    base = tutorial.private_model()
    mech = tutorial.mechanism(eps)
    s_dp = mech.release(base.simulate({"beta": np.array([1.0, -0.5])}, n, seed=2022), seed=2023)
    pymc_model = pymc_tutorial.pymc_model(n)
    return mech, s_dp, n, {
        "adaptive_metropolis": base,
        "hmc (hand-written)": hand_model(base, dw.kernels.hmc(logistic_logp_and_grad)),
        "hmc (PyMC)": dawrap.pymc.from_pymc(pymc_model, records=["y", "X"]),
        "hmc (PyMC, one record per call)": dawrap.pymc.from_pymc(
            pymc_model, records=["y", "X"], batched=False),
        "hmc (PyMC, hand-written draw_record)": dawrap.pymc.from_pymc(
            pymc_model, records=["y", "X"], draw_record=tutorial.draw_record)}


def regression_case(eps: float, n: int) -> tuple:
    base = lr.model(**JU["model"])
    mech = lr.laplace(eps, **JU["mechanism"])
    s_dp = mech.release(base.simulate({"beta": JU["beta"]}, n, seed=2022), seed=2023)
    pymc_model = regression_pymc(n)
    return mech, s_dp, n, {
        "adaptive_metropolis": hand_model(base, dw.kernels.adaptive_metropolis(
            regression_log_density, initial_scale=0.1)),
        "hmc (hand-written)": hand_model(base, dw.kernels.hmc(regression_logp_and_grad)),
        "hmc (PyMC)": dawrap.pymc.from_pymc(pymc_model, records=["X", "y"]),
        "hmc (PyMC, one record per call)": dawrap.pymc.from_pymc(
            pymc_model, records=["X", "y"], batched=False),
        "hmc (PyMC, hand-written draw_record)": dawrap.pymc.from_pymc(
            pymc_model, records=["X", "y"], draw_record=base.draw_record),
        "conjugate (built-in)": base}


#: builder, n, epsilons, draws per chain (the regression's record sampler mixes slowly at any
#: theta kernel: long chains, for ESS estimates worth comparing)
CASES = {"logistic": (logistic_case, 500, (1.0, 4.0), 2000),
         "regression": (regression_case, JU["n"], (1.0, 10.0), 20000)}


def run(model, mech, s_dp, n, draws, tune) -> tuple[float, np.ndarray]:
    """Seconds for 4 chains on one core, and the draws of the (single) parameter."""
    began = time.perf_counter()
    # interweave=False: the built-in regression would add its interweaving move on its own
    idata = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=4, cores=1, seed=7,
                      progress=False, interweave=False)
    return time.perf_counter() - began, diagnostics.group(idata, "posterior")["beta"].values


def min_ess(beta: np.ndarray) -> float:
    return min(min(diagnostics.ess(beta[..., j], "bulk"), diagnostics.ess(beta[..., j], "tail"))
               for j in range(beta.shape[-1]))


def measure(case: str, eps: float, draws: int, tune: int, repeats: int) -> list[str]:
    build, n = CASES[case][:2]
    mech, s_dp, n, models = build(eps, n)
    for model in models.values():  # compile every chain first
        dw.sample(model, mech, s_dp, n, draws=2, tune=2, chains=1, seed=0, progress=False)
    best, beta = {}, {}
    for _ in range(repeats):
        for name, model in models.items():
            seconds, beta[name] = run(model, mech, s_dp, n, draws, tune)
            best[name] = min(best.get(name, np.inf), seconds)
    rows, base = [], None
    for name in models:
        ess, seconds = min_ess(beta[name]), best[name]
        base = base or ess / seconds
        rows.append(f"| {case} | {eps:g} | {name} | {ess:.0f} | {seconds:.2f} | "
                    f"{1e6 * seconds / (4 * (draws + tune)):.1f} | {ess / seconds:.0f} | "
                    f"{ess / seconds / base:.2f}x | "
                    f"{np.array2string(beta[name].mean(axis=(0, 1)), precision=3)} |")
        print(rows[-1], flush=True)
    for name in ("hmc (PyMC)", "hmc (PyMC, one record per call)",
                 "hmc (PyMC, hand-written draw_record)"):
        rows.append(f"| {case} | {eps:g} | cost per iteration, {name} / hmc (hand-written) "
                    f"| | | {best[name] / best['hmc (hand-written)']:.2f}x | | | |")
        print(rows[-1], flush=True)
    return rows


COMPILE = """
import time, numpy as np
t = time.perf_counter()
import pymc_logistic_regression as m
model = m.private_model(500)
t1 = time.perf_counter()
import dawrap as dw
dw.sample(model, m.mechanism(1.0), np.zeros(3), 500, draws=2, tune=2, chains=1, seed=0)
print(t1 - t, time.perf_counter() - t1)
"""


def compile_times() -> list[tuple[float, float]]:
    """(import + from_pymc seconds, first dw.sample seconds) in a fresh process with empty
    PyTensor and numba caches, then again with the caches it left."""
    out = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYTENSOR_FLAGS=f"compiledir={cache}/pytensor",
                   NUMBA_CACHE_DIR=f"{cache}/numba",
                   PYTHONPATH=str(Path(__file__).parents[1] / "examples"))
        for _ in range(2):
            res = subprocess.run([sys.executable, "-c", COMPILE], env=env, check=True,
                                 capture_output=True, text=True)
            out.append(tuple(float(v) for v in res.stdout.split()[-2:]))
    return out


def main() -> None:
    ap = parser(__doc__, tune=1000, repeats=3)
    ap.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    ap.add_argument("--draws", type=int, help="draws per chain (default: 2000 for the "
                    "logistic case, 20000 for the regression)")
    ap.add_argument("--no-compile", action="store_true", help="skip the compile timing")
    args = ap.parse_args()
    began, load = datetime.datetime.now(datetime.timezone.utc), os.getloadavg()
    lines = ["# HMC and PyMC models against the adaptive random walk", "",
             f"`python benchmarks/pymc_hmc.py --cases {' '.join(args.cases)}"
             f"{f' --draws {args.draws}' if args.draws else ''} --tune {args.tune} --repeats "
             f"{args.repeats}`, {began:%Y-%m-%d %H:%M} UTC, Python {sys.version.split()[0]}, "
             f"numba {numba.__version__}, PyMC {pm.__version__}. 4 chains x "
             f"{args.draws or ' / '.join(str(CASES[c][3]) for c in args.cases)} draws "
             f"(+{args.tune} warm-up), one core, compilation excluded; each run repeated "
             f"{args.repeats} times, kernels taking turns, fastest kept.", "",
             "| case | epsilon | kernel | min ESS | seconds | us/iter | ESS/s | ESS/s vs AM | "
             "posterior mean |", "|---|---|---|---|---|---|---|---|---|"]
    for case in args.cases:
        for eps in CASES[case][2]:
            lines += measure(case, eps, args.draws or CASES[case][3], args.tune, args.repeats)
    if not args.no_compile:
        (cold, cold_first), (warm, warm_first) = compile_times()
        lines += ["", f"Compile, PyMC logistic model (fresh processes): imports + from_pymc "
                  f"{cold:.1f} s cold (empty PyTensor and numba caches), {warm:.1f} s warm; "
                  f"then the first dw.sample (numba compiles the chain) {cold_first:.1f} s "
                  f"cold, {warm_first:.1f} s warm."]
        print(lines[-1])
    load_end = os.getloadavg()
    lines += ["", f"Load average (1, 5, 15 min) at the start {load[0]:.2f}, {load[1]:.2f}, "
              f"{load[2]:.2f}; at the end {load_end[0]:.2f}, {load_end[1]:.2f}, "
              f"{load_end[2]:.2f} (2 cores, shared with other work)."]
    write_table(lines, OUT)


if __name__ == "__main__":
    main()
