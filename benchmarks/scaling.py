"""Time per sweep and peak memory against n, and compile time on first use.

Each n runs in a fresh subprocess so its peak resident memory is its own. Expected: time per
record flat in n (a sweep is O(n)), memory = the (n, record_size) float64 database + O(draws)
output, never a copy of x per draw.

Run: python benchmarks/scaling.py [--max-exponent 7] [--draws 10]
"""
from __future__ import annotations

import json
import subprocess
import sys

from _common import parser

CHILD = r"""
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
n, draws = int(sys.argv[1]), int(sys.argv[2])
t0 = time.perf_counter()
import numpy as np
import dawrap as dw
from dawrap.models import beta_binomial
t_import = time.perf_counter() - t0
model, mech = beta_binomial.model(1.0, 1.0), beta_binomial.laplace(0.5)
s_dp = 0.3 * n
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
# Plain sweeps throughout (interweave=False): the default would switch the move on for the
# tiny warm-up call only, and the timed call would then compile the plain path.
dw.sample(model, mech, s_dp, n=8, draws=1, tune=0, chains=1, seed=0, interweave=False)
t_compile = time.perf_counter() - t0
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
idata = dw.sample(model, mech, s_dp, n=n, draws=draws, tune=0, chains=1, seed=0,
                  init_theta=[0.3], interweave=False)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
attrs = idata.attrs if hasattr(idata, "attrs") and "sampling_time" in idata.attrs \
    else idata.posterior.attrs
print(json.dumps({"n": n, "import": t_import, "compile": t_compile,
                  "seconds": float(attrs["sampling_time"]),
                  "extra_mb": (peak - base) / 1024}))
"""


def main():
    ap = parser(__doc__, max_exponent=7, draws=10)
    args = ap.parse_args()
    print(f"beta_binomial + Laplace(eps=0.5), 1 chain, {args.draws} sweeps per n\n")
    print(f"{'n':>12s}{'s/sweep':>12s}{'ns/record':>11s}{'extra MB':>10s}{'x MB':>8s}"
          f"{'compile s':>11s}")
    rows = []
    for e in range(3, args.max_exponent + 1):
        n = 10 ** e
        out = subprocess.run([sys.executable, "-c", CHILD, str(n), str(args.draws)],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(r)
        per_sweep = r["seconds"] / args.draws
        print(f"{n:>12,d}{per_sweep:12.4g}{1e9 * per_sweep / n:11.2f}{r['extra_mb']:10.1f}"
              f"{8 * n / 2**20:8.1f}{r['compile']:11.2f}")
    small, large = rows[1], rows[-1]
    ratio = (large["seconds"] / large["n"]) / (small["seconds"] / small["n"])
    print(f"\ntime per record at n = {large['n']:,} / at n = {small['n']:,}: {ratio:.2f} "
          f"(1.00 = exactly linear)")
    print("compile s: first dw.sample in a fresh process, numba's disk cache as it stands "
          "(the leaf functions are cached, the engine is compiled per model)")


if __name__ == "__main__":
    main()
