"""Cost per iteration of the suffstat kernels, this checkout against another, interleaved
finely: on a shared, loaded machine a whole-process comparison (``suffstat_overhead.py``)
measures the load as much as the code.

Two long-lived worker processes (this checkout and ``--against``) compile every case once, then
take turns: each round runs every case once in each worker (which goes first alternates), a
chain of ``--iterations`` iterations timed by the result's ``sampling_time`` (the sampler's own
time, compilation excluded). Printed per case: the median and the minimum over the rounds of
each version, and the ratio of the medians and of the per-round ratios' median (rounds
are paired, so drifting load cancels in the latter).

Run: python benchmarks/suffstat_loop_ab.py --against /path/to/other/checkout [--rounds 15]
[--iterations 100000] [--out benchmarks/results/suffstat_loop_ab.md] (the other checkout as
for ``suffstat_overhead.py``).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from _common import parser, print_and_write

HERE = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "results" / "suffstat_loop_ab.md"

WORKER = r"""
import json, sys, warnings
import numpy as np
import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial, dirichlet_multinomial, gamma_exponential
warnings.simplefilter("ignore")
bb, dm = beta_binomial.model(1, 1), dirichlet_multinomial.model([1, 1, 1])
counts = np.array([20.0, 50.0, 30.0])
CASES = {
    "beta-binomial n=1000 eps=1, gibbs": (bb, beta_binomial.laplace(1.0), 1000, 300.0, "gibbs"),
    "beta-binomial n=1000 eps=1, printed": (bb, beta_binomial.laplace(1.0), 1000, 300.0,
                                            "printed"),
    "Dirichlet-multinomial n=100 eps=1, gibbs": (dm, dirichlet_multinomial.laplace(1.0, 3),
                                                 100, counts, "gibbs"),
    "gamma-exponential [0, 5] n=1000 eps=1, gibbs": (gamma_exponential.model(20, 20),
                                                     gamma_exponential.laplace(1.0, 0.0, 5.0),
                                                     1000, 990.0, "gibbs"),
    "beta-binomial n=1000 eps=0.02, marginal": (bb, beta_binomial.laplace(0.02), 1000, 300.0,
                                                "marginal"),
    "Dirichlet-multinomial n=100 eps=0.1, marginal": (dm, dirichlet_multinomial.laplace(0.1, 3),
                                                      100, counts, "marginal"),
}


def once(label, iterations):
    model, mech, n, s_dp, variant = CASES[label]
    idata = dw.sample(model, mech, s_dp, n, method="suffstat", variant=variant,
                      draws=iterations - 100, tune=100, chains=1, seed=1, progress=False)
    return float(diagnostics.attrs(idata)["sampling_time"]) / iterations


for label in CASES:  # compile
    once(label, 200)
print(json.dumps(list(CASES)), flush=True)
for line in sys.stdin:
    label, iterations = json.loads(line)
    print(json.dumps(once(label, iterations)), flush=True)
"""


def start(path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WORKER], cwd="/", text=True,
                            env=dict(os.environ, PYTHONPATH=str(path)),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def ask(worker: subprocess.Popen, label: str, iterations: int) -> float:
    worker.stdin.write(json.dumps([label, iterations]) + "\n")
    worker.stdin.flush()
    return json.loads(worker.stdout.readline())


def main():
    ap = parser(__doc__, quick="2 rounds of 2000 iterations", rounds=15, iterations=100_000,
                out=str(OUT))
    ap.add_argument("--against", required=True)
    ap.add_argument("--only", default="", help="only the cases whose label contains this")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.iterations = 2, 2000
    workers = {"this": start(HERE), "other": start(Path(args.against))}
    labels = [label for label in [json.loads(w.stdout.readline()) for w in workers.values()][0]
              if args.only in label]
    times = {key: {label: [] for label in labels} for key in workers}
    try:
        for r in range(args.rounds):
            order = ("this", "other") if r % 2 == 0 else ("other", "this")
            for label in labels:
                for key in order:
                    times[key][label].append(ask(workers[key], label, args.iterations))
            print(f"round {r + 1} of {args.rounds} done", flush=True)
    finally:
        for w in workers.values():
            w.stdin.close()
            w.wait()
    lines = ["# Suffstat kernels: cost per iteration, this checkout against another, interleaved",
             "", f"`python benchmarks/suffstat_loop_ab.py --against {args.against} --rounds "
             f"{args.rounds} --iterations {args.iterations}"
             f"{f' --only {args.only!r}' if args.only else ''}`: us per iteration, one chain; "
             "median and minimum over the rounds; the last column is the median of the "
             "paired per-round ratios.", "",
             "| case | this: median | min | other: median | min | ratio of medians | "
             "median paired ratio |", "|---|---|---|---|---|---|---|"]
    for label in labels:
        this, other = times["this"][label], times["other"][label]
        paired = statistics.median(a / b for a, b in zip(this, other))
        lines.append(f"| {label} | {1e6 * statistics.median(this):.3f} | {1e6 * min(this):.3f} "
                     f"| {1e6 * statistics.median(other):.3f} | {1e6 * min(other):.3f} | "
                     f"{statistics.median(this) / statistics.median(other):.3f} | "
                     f"{paired:.3f} |")
    print_and_write(lines, args.out, args.quick)


if __name__ == "__main__":
    main()
