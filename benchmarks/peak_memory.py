"""Peak resident memory of one ``dw.sample`` of the small-area model, beyond what the process
held before it (issue 24: the 10^6-record census run peaked at 4.4 GB).

``--areas`` areas of ``--per-area`` records, 6 categories, area and tract counts released
with discrete Gaussian noise; 4 chains x ``--draws`` draws after 100 warm-up iterations.
Prints the size of the kept theta draws and the peak RSS before and after ``dw.sample``
(``ru_maxrss``: run each build in its own process to compare them).

Run: python benchmarks/peak_memory.py [--areas 2000] [--per-area 20] [--draws 1000]
"""
from __future__ import annotations

import resource
import time

import numpy as np

import dawrap as dw
from dawrap.models import small_area

from _common import parser


def main() -> None:
    ap = parser(__doc__, areas=2000, per_area=20, draws=1000)
    args = ap.parse_args()
    sizes = np.full(args.areas, args.per_area)
    model = small_area.model(sizes, 6)
    mech = small_area.discrete_gaussian(np.arange(args.areas) // 10, 6, rho=(0.5, 0.5))
    truth = np.random.default_rng(1).integers(0, 6, sizes.sum())
    s_dp = mech.release(small_area.records(sizes, truth), seed=2)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.time()
    dw.sample(model, mech, s_dp, int(sizes.sum()), draws=args.draws, tune=100, chains=4,
              seed=3, progress=False)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kept = 4 * args.draws * model.theta_size * 8 / 2 ** 20
    print(f"{dw.__file__}: kept theta draws {kept:.0f} MB; peak RSS before dw.sample "
          f"{before:.0f} MB, after {peak:.0f} MB (+{peak - before:.0f} MB); "
          f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
