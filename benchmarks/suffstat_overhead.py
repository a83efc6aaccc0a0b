"""Cost per iteration of the default suffstat kernel where the Gibbs kernel already mixes well,
against another checkout of dawrap (issue 16: nothing may get slower there), and of the
marginal kernels (dense and O(K)) where the noise dominates (issue 28: the one run loop).

The two versions run alternately in fresh processes (``rounds`` times each), every process
timing one chain of 200 000 iterations after a compile call; the fastest of each version's
runs is the least disturbed by other jobs on this shared machine.

Run: python benchmarks/suffstat_overhead.py --against /path/to/other/checkout [--rounds 5]
[--quick]
(the other checkout's dawrap must be importable from it, e.g. a ``git archive`` of a commit
with ``dawrap/models`` linked to its ``models``; a checkout of the package layout finds its
top-level ``models`` itself). Writes ``--out``, default benchmarks/results/suffstat_overhead.md.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from _common import parser, print_and_write

OUT = Path(__file__).parent / "results"
HERE = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, warnings
import numpy as np
import dawrap as dw
try:
    from dawrap import diagnostics
except ImportError:  # a checkout from before the package layout
    from dawrap import _arviz as diagnostics
from dawrap.models import beta_binomial, dirichlet_multinomial, gamma_exponential
bb = beta_binomial.model(1, 1)
dm = dirichlet_multinomial.model([1, 1, 1])
counts = np.array([20.0, 50.0, 30.0])
cases = {  # (model, mechanism, n, release, variant: None the default)
    "beta-binomial n=1000 eps=0.5": (bb, beta_binomial.laplace(0.5), 1000, 300.0, None),
    "beta-binomial n=1000 eps=1": (bb, beta_binomial.laplace(1.0), 1000, 300.0, None),
    "Dirichlet-multinomial n=100 eps=1": (dm, dirichlet_multinomial.laplace(1.0, 3), 100,
                                          counts, None),
    "gamma-exponential [0, 5] n=1000 eps=1": (gamma_exponential.model(20, 20),
                                              gamma_exponential.laplace(1.0, 0.0, 5.0), 1000,
                                              990.0, None),
    "beta-binomial n=1000 eps=0.02": (bb, beta_binomial.laplace(0.02), 1000, 300.0,
                                      "marginal"),
    "Dirichlet-multinomial n=100 eps=0.1": (dm, dirichlet_multinomial.laplace(0.1, 3), 100,
                                            counts, "marginal"),
}
out = {}
for label, (model, mech, n, s_dp, variant) in cases.items():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dw.sample(model, mech, s_dp, n, method="suffstat", variant=variant, draws=10, tune=10,
                  chains=1, seed=0)
        idata = dw.sample(model, mech, s_dp, n, method="suffstat", variant=variant,
                          draws=ITERATIONS - 1000, tune=1000, chains=1, seed=1)
    out[label] = [float(diagnostics.attrs(idata)["sampling_time"]) / ITERATIONS,
                  str(diagnostics.attrs(idata).get("variant", "gibbs"))]
print(json.dumps(out))
"""


def run(path, iterations=200_000):
    env = dict(os.environ, PYTHONPATH=str(path))
    child = f"ITERATIONS = {iterations}\n" + CHILD
    done = subprocess.run([sys.executable, "-c", child], env=env, cwd="/", check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    ap = parser(__doc__, quick="one round of 3000 iterations", rounds=5,
                out=str(OUT / "suffstat_overhead.md"))
    ap.add_argument("--against", required=True)
    args = ap.parse_args()
    iterations = 3000 if args.quick else 200_000
    if args.quick:
        args.rounds = 1
    results = {"this": [], "other": []}
    for r in range(args.rounds):
        for key, path in (("this", HERE), ("other", Path(args.against))):
            results[key].append(run(path, iterations))
            print(r, key, results[key][-1], flush=True)
    labels = list(results["this"][0])
    lines = ["# Cost per iteration of the suffstat kernels", "",
             f"`python benchmarks/suffstat_overhead.py --against {args.against} --rounds "
             f"{args.rounds}`: one chain, {iterations:,} iterations, fastest of {args.rounds} "
             "alternating runs of each version (us/iteration).", "",
             "| release | kernel | this checkout | other | ratio |", "|---|---|---|---|---|"]
    for label in labels:
        this = min(r[label][0] for r in results["this"])
        other = min(r[label][0] for r in results["other"])
        lines.append(f"| {label} | {results['this'][0][label][1]} | {1e6 * this:.3f} | "
                     f"{1e6 * other:.3f} | {this / other:.3f} |")
    print_and_write(lines, args.out, args.quick)


if __name__ == "__main__":
    main()
