"""Cost per iteration of the default suffstat kernel where the Gibbs kernel already mixes well,
against another checkout of dawrap (issue 16: nothing may get slower there).

The two versions run alternately in fresh processes (``rounds`` times each), every process
timing one chain of 200 000 iterations after a compile call; the fastest of each version's
runs is the least disturbed by other jobs on this shared machine.

Run: python benchmarks/suffstat_overhead.py --against /path/to/other/checkout [--rounds 5]
(the other checkout's dawrap must be importable from it, e.g. a ``git archive`` of a commit
with ``dawrap/models`` linked to its ``models``). Writes benchmarks/results/suffstat_overhead.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).parent / "results"
HERE = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, warnings
import numpy as np
import dawrap as dw
from dawrap import _arviz
from dawrap.models import beta_binomial, dirichlet_multinomial, gamma_exponential
cases = {
    "beta-binomial n=1000 eps=0.5": (beta_binomial.model(1, 1), beta_binomial.laplace(0.5), 1000, 300.0),
    "beta-binomial n=1000 eps=1": (beta_binomial.model(1, 1), beta_binomial.laplace(1.0), 1000, 300.0),
    "Dirichlet-multinomial n=100 eps=1": (dirichlet_multinomial.model([1, 1, 1]),
                                          dirichlet_multinomial.laplace(1.0, 3), 100, np.array([20.0, 50.0, 30.0])),
    "gamma-exponential [0, 5] n=1000 eps=1": (gamma_exponential.model(20, 20),
                                              gamma_exponential.laplace(1.0, 0.0, 5.0), 1000, 990.0),
}
out = {}
for label, (model, mech, n, s_dp) in cases.items():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dw.sample(model, mech, s_dp, n, method="suffstat", draws=10, tune=10, chains=1, seed=0)
        idata = dw.sample(model, mech, s_dp, n, method="suffstat", draws=199000, tune=1000,
                          chains=1, seed=1)
    out[label] = [float(_arviz.attrs(idata)["sampling_time"]) / 200000,
                  str(_arviz.attrs(idata).get("variant", "gibbs"))]
print(json.dumps(out))
"""


def run(path):
    env = dict(os.environ, PYTHONPATH=str(path))
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd="/", check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    results = {"this": [], "other": []}
    for r in range(args.rounds):
        for key, path in (("this", HERE), ("other", Path(args.against))):
            results[key].append(run(path))
            print(r, key, results[key][-1], flush=True)
    labels = list(results["this"][0])
    lines = ["# Cost per iteration of the default suffstat kernel where Gibbs mixes well", "",
             f"`python benchmarks/suffstat_overhead.py --against {args.against} --rounds "
             f"{args.rounds}`: one chain, 200 000 iterations, fastest of {args.rounds} "
             "alternating runs of each version (us/iteration).", "",
             "| release | kernel | this checkout | other | ratio |", "|---|---|---|---|---|"]
    for label in labels:
        this = min(r[label][0] for r in results["this"])
        other = min(r[label][0] for r in results["other"])
        lines.append(f"| {label} | {results['this'][0][label][1]} | {1e6 * this:.3f} | "
                     f"{1e6 * other:.3f} | {this / other:.3f} |")
    OUT.mkdir(exist_ok=True)
    (OUT / "suffstat_overhead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
