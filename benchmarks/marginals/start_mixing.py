r"""Where a chain of the marginals model starts, on Adult (issue 26): max R-hat, min bulk ESS
and wall time of the case study's run (docs/marginals.md: the ten released 2-way tables,
Gaussian noise rho = 0.0016 a table, 2 chains) with the default prior (alpha = 1), once
with records started from the chain's starting theta (``start="theta"``, the old default)
and once from the release (``start="release"``, the new default), and the case study's old
workaround (alpha = 100, a uniform init_theta, records from it) for reference
(``--part start``, all without ridge moves); and the two record proposals, ancestral (a whole record from
:math:`p_\theta`) and attribute by attribute (one attribute from its conditional given the
others), both started from the release, and the ancestral one with the moves along the
unreleased 3-way interaction (``ridge_moves``), by the bulk ESS per second of the worst
parameter (``--part proposal``); and the collapsed move (``collapsed_moves``: records redrawn
with theta integrated out) off, at 1 step per record and at its default (2), at alpha = 1
and 100 (``--part collapsed``).

Run: ``python benchmarks/marginals/start_mixing.py --part start|proposal|collapsed [--draws 600 --tune
200]`` (about 4 CPU minutes a configuration on a loaded 2-core machine); results in
benchmarks/results/marginals_start.md.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import marginals

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
from adult_marginals import TABLES, load_adult  # noqa: E402


def run(levels, mech, s_dp, n, alpha, start, uniform, draws, tune, seed, proposal, ridge,
        collapsed):
    model = marginals.model(levels, TABLES, alpha=alpha, start=start, proposal=proposal,
                            ridge_moves=ridge, collapsed_moves=collapsed)
    init = model.pack({k: np.full(s, 1.0 / np.prod(s)) for k, s in model.params.items()}) \
        if uniform else None
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # R-hat warnings: the table reports them
        result = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=2,
                           seed=seed, init_theta=init, progress=False)
    wall = time.perf_counter() - t0
    s = diagnostics.summary(result)
    worst = s["r_hat"].idxmax()
    return {"max_rhat": float(s["r_hat"].max()), "worst": worst,
            "min_ess": float(s["ess_bulk"].min()), "wall": wall,
            "ess_per_s": float(s["ess_bulk"].min()) / wall}


def main(part: str, draws: int, tune: int, seed: int = 26):
    df = load_adult()
    levels = {a: list(df[a].cat.categories) for a in df.columns}
    x = np.column_stack([df[a].cat.codes for a in df.columns]).astype(float)
    mech = marginals.gaussian(levels, TABLES, rho=0.0016)
    s_dp = mech.release(x, seed=seed)
    configs = {"start": [
        ("alpha = 1, start='theta' (old default)", 1.0, "theta", False, "ancestral", False, 0),
        ("alpha = 1, start='release'", 1.0, "release", False, "ancestral", False, 0),
        ("alpha = 100, uniform init_theta, start='theta' (old workaround)", 100.0, "theta",
         True, "ancestral", False, 0)],
        "proposal": [
        ("alpha = 1, start='release', proposal='ancestral'", 1.0, "release", False,
         "ancestral", False, 0),
        ("alpha = 1, start='release', proposal='attribute'", 1.0, "release", False,
         "attribute", False, 0),
        ("alpha = 1, start='release', proposal='ancestral', ridge_moves=True", 1.0,
         "release", False, "ancestral", True, 0)],
        "collapsed": [
        (f"alpha = {a:g}, ridge moves, collapsed_moves={r}{' (default)' if r == 'auto' else ''}",
         a, "release", False, "ancestral", True, r)
        for a in (1.0, 100.0) for r in (0, 1, "auto")]}[part]
    print(f"Adult, n = {len(x)}, {draws} draws + {tune} warm-up, 2 chains, seed {seed + 1}")
    print("| configuration | max R-hat (parameter) | min bulk ESS | wall s | min ESS / s |")
    print("|---|---|---|---|---|")
    for name, alpha, start, uniform, proposal, ridge, collapsed in configs:
        r = run(levels, mech, s_dp, len(x), alpha, start, uniform, draws, tune, seed + 1,
                proposal, ridge, collapsed)
        print(f"| {name} | {r['max_rhat']:.2f} ({r['worst']}) | {r['min_ess']:.0f} | "
              f"{r['wall']:.0f} | {r['ess_per_s']:.3f} |", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("start", "proposal", "collapsed"), default="start")
    ap.add_argument("--draws", type=int, default=600)
    ap.add_argument("--tune", type=int, default=200)
    args = ap.parse_args()
    main(args.part, args.draws, args.tune)
