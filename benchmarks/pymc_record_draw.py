"""Cost of one record draw: compiled from a PyMC graph (dawrap.pymc) against the hand-written
njit draw of the logistic-regression tutorial, and of one log density + gradient at n = 500,
in the same run. Also a single PyTensor normal draw, to show the fixed cost per random
variable node. Writes benchmarks/results/pymc_record_draw.md.

Run: python benchmarks/pymc_record_draw.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numba
import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.tensor.random.type import random_generator_type

sys.path.insert(0, str(Path(__file__).parents[1] / "examples"))
sys.path.insert(0, str(Path(__file__).parent))
import private_logistic_regression as tutorial  # noqa: E402
from pymc_hmc import logp_and_grad  # noqa: E402
from pymc_logistic_regression import pymc_model  # noqa: E402

import dawrap.pymc  # noqa: E402

OUT = Path(__file__).parent / "results" / "pymc_record_draw.md"


@numba.njit
def draws(draw, rng, theta, k):
    out = np.empty(3)
    for _ in range(k):
        draw(rng, theta, out)
    return out


@numba.njit
def densities(f, u, x, k):
    total = 0.0
    for _ in range(k):
        total += f(u, x)[0]
    return total


@numba.njit
def single(f, rng, theta, k):
    for _ in range(k):
        f(rng, theta)


def per_call(fn, args, k) -> float:
    fn(*args, 2)  # compile
    best = np.inf
    for _ in range(3):
        began = time.perf_counter()
        fn(*args, k)
        best = min(best, time.perf_counter() - began)
    return 1e6 * best / k


def main() -> None:
    parts = dawrap.pymc.compile_model(pymc_model(500), records=["y", "X"])
    rng, theta = np.random.default_rng(0), np.array([1.0, -0.5])
    x = tutorial.private_model().simulate({"beta": theta}, 500, seed=1)
    r = random_generator_type("rng")
    th = pt.vector("th")
    one = pt.random.normal(th[0], 1.0, size=(1,), rng=r).owner.outputs[1]
    one_fn = pytensor.function([pytensor.In(r, mutable=True), th], [one], mode="NUMBA").vm.jit_fn
    rows = [("record draw, PyMC graph", per_call(draws, (parts.draw_record, rng, theta), 200_000)),
            ("record draw, hand-written", per_call(draws, (tutorial.draw_record, rng, theta),
                                                   200_000)),
            ("one PyTensor normal draw, size (1,)", per_call(single, (one_fn, rng, theta),
                                                             200_000)),
            ("logp + grad n=500, PyMC graph", per_call(densities, (parts.logp_and_grad, theta, x),
                                                       2000)),
            ("logp + grad n=500, hand-written", per_call(densities, (logp_and_grad, theta, x),
                                                         2000))]
    lines = ["# One record draw and one log density + gradient: PyMC graph vs hand-written", "",
             "`python benchmarks/pymc_record_draw.py` (best of 3, us per call, one core)", "",
             "| what | us/call |", "|---|---|"] + [f"| {w} | {t:.3f} |" for w, t in rows]
    lines += ["", f"Ratios: record draw {rows[0][1] / rows[1][1]:.1f}x, "
              f"logp + grad {rows[3][1] / rows[4][1]:.2f}x."]
    print("\n".join(lines))
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
