"""Where the PyMC model's time goes: one record draw and one log density + gradient compiled
from PyMC's graphs (dawrap.pymc) against the hand-written njit functions, on the two problems
of benchmarks/pymc_hmc.py (the logistic-regression tutorial at n = 500, the Ju et al.
regression at n = 100), in the same run. Also: one PyTensor normal draw and a trivial
PyTensor function (the fixed costs of a call and of a random-variable node), the batched
record draw the sweep uses (``draw_records``, compiled for any number of records per call) in
calls of a full block (256 records, ``dawrap.samplers.record.BLOCK``) and of 100 (the
regression's whole sweep), and the record draw with PyTensor's general random variables
instead of dawrap.pymc's lean op. Writes benchmarks/results/pymc_record_draw.md.

Run: python benchmarks/pymc_record_draw.py
"""
from __future__ import annotations

import datetime
import os
import sys
import time
from pathlib import Path

import numba
import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.tensor.random.type import random_generator_type

from _common import write_table

sys.path.insert(0, str(Path(__file__).parents[1] / "examples"))
sys.path.insert(0, str(Path(__file__).parent))
import private_logistic_regression as tutorial  # noqa: E402
import pymc_hmc as bench  # noqa: E402
from pymc_logistic_regression import pymc_model  # noqa: E402

import dawrap.pymc  # noqa: E402
from dawrap.models import linear_regression as lr  # noqa: E402
from dawrap.pymc import compile as internals  # noqa: E402
from dawrap.samplers.record import BLOCK  # noqa: E402

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
def calls(f, rng, theta, k):
    for _ in range(k):
        f(rng, theta)


@numba.njit
def batches(f, rng, theta, out, k):
    for _ in range(k // out.shape[0]):  # k records, out.shape[0] per call
        f(rng, theta, out)


def per_call(cases: list, rounds: int = 5) -> list[tuple[str, float]]:
    """Microseconds per call of each ``(label, loop, args, k)``: the best of ``rounds``, the
    cases taking turns within each round (the machine is shared: a burst of load then hits
    every case, not one)."""
    for _, fn, args, _ in cases:
        fn(*args, 2)  # compile
    best = [np.inf] * len(cases)
    for _ in range(rounds):
        for i, (_, fn, args, k) in enumerate(cases):
            began = time.perf_counter()
            fn(*args, k)
            best[i] = min(best[i], 1e6 * (time.perf_counter() - began) / k)
    return [(case[0], t) for case, t in zip(cases, best)]


def general_draw(model, records):
    """The record draw compiled with PyTensor's general random variables instead of
    dawrap.pymc's lean RowDraw op (dawrap/pymc/draws.py)."""
    lean, internals.row_draw = internals.row_draw, lambda node, shape: None
    try:
        return dawrap.pymc.compile_model(model, records=records).draw_record
    finally:
        internals.row_draw = lean


def cases_for(name, pymc, hand, hand_logp, records, theta, x) -> list[tuple]:
    parts = dawrap.pymc.compile_model(pymc, records=records)
    rng = np.random.default_rng(0)
    return [(f"{name}: record draw, PyMC graph", draws, (parts.draw_record, rng, theta),
             200_000),
            (f"{name}: record draw, PyMC graph, PyTensor's random variables", draws,
             (general_draw(pymc, records), rng, theta), 200_000),
            (f"{name}: record draw, hand-written", draws, (hand, rng, theta), 200_000),
            # draw_records in calls of a block and of 100 records: per record, k counts records
            (f"{name}: record draw, PyMC graph, {BLOCK} per call (per record)", batches,
             (parts.draw_records, rng, theta, np.empty((BLOCK, 3))), 204_800),
            (f"{name}: record draw, PyMC graph, 100 per call (per record)", batches,
             (parts.draw_records, rng, theta, np.empty((100, 3))), 200_000),
            (f"{name}: logp + grad n={x.shape[0]}, PyMC graph", densities,
             (parts.logp_and_grad, theta, x), 5000),
            (f"{name}: logp + grad n={x.shape[0]}, hand-written", densities,
             (hand_logp, theta, x), 5000)]


def main() -> None:
    began, load = datetime.datetime.now(datetime.timezone.utc), os.getloadavg()
    theta = np.array([1.0, -0.5])
    r, th = random_generator_type("rng"), pt.vector("th")
    one = pt.random.normal(th[0], 1.0, size=(1,), rng=r).owner.outputs[1]
    one_fn = pytensor.function([pytensor.In(r, mutable=True), th], [one], mode="NUMBA").vm.jit_fn
    nothing = pytensor.function([pytensor.In(r, mutable=True), th], [th * 2.0], mode="NUMBA",
                                on_unused_input="ignore").vm.jit_fn
    rng = np.random.default_rng(0)
    base = lr.model(**bench.JU["model"])
    cases = [("a PyTensor function computing 2 theta", calls, (nothing, rng, theta), 200_000),
             ("one PyTensor normal draw, size (1,)", calls, (one_fn, rng, theta), 200_000)]
    cases += cases_for("logistic", pymc_model(500), tutorial.draw_record,
                       bench.logistic_logp_and_grad, ["y", "X"], theta,
                       tutorial.private_model().simulate({"beta": theta}, 500, seed=1))
    cases += cases_for("regression", bench.regression_pymc(100), base.draw_record,
                       bench.regression_logp_and_grad, ["X", "y"], bench.JU["beta"],
                       base.simulate({"beta": bench.JU["beta"]}, 100, seed=1))
    rows = per_call(cases)
    end = os.getloadavg()
    lines = ["# Where the PyMC model's time goes: PyTensor-compiled pieces vs hand-written", "",
             f"`python benchmarks/pymc_record_draw.py`, {began:%Y-%m-%d %H:%M} UTC: us per call, "
             f"the best of 5 rounds in which the cases take turns, one core; load average "
             f"{load[0]:.2f} at the start, {end[0]:.2f} at the end (2 cores shared with other "
             f"work).", "",
             "| what | us/call |", "|---|---|"] + [f"| {w} | {t:.3f} |" for w, t in rows]
    t = dict(rows)
    for name in ("logistic", "regression"):
        hand = t[f"{name}: record draw, hand-written"]
        logp = [v for w, v in rows if w.startswith(f"{name}: logp")]  # PyMC, hand-written
        block = t[f"{name}: record draw, PyMC graph, {BLOCK} per call (per record)"]
        hundred = t[f"{name}: record draw, PyMC graph, 100 per call (per record)"]
        ours = t[f"{name}: record draw, PyMC graph"]
        general = t[f"{name}: record draw, PyMC graph, PyTensor's random variables"]
        lines += ["", f"{name}: record draw {ours / hand:.1f}x the hand-written one "
                  f"({general / hand:.1f}x with PyTensor's random variables; batched, "
                  f"{block / hand:.1f}x per record in calls of {BLOCK} and {hundred / hand:.1f}x "
                  f"in calls of 100), logp + grad {logp[0] / logp[1]:.2f}x."]
    print("\n".join(lines))
    write_table(lines, OUT)


if __name__ == "__main__":
    main()
