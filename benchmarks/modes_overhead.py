"""What the mode landscape (dawrap.runner.modes) costs a run that has one mode.

``dw.sample`` examines the release before sampling (1024 release-weighted prior draws, the
valley test between them) and after it (the missed-mode warning reads the same cached
landscape). On a plain release that is pure overhead, so it is measured here:

1. the README's built-in example (``beta_binomial.model(a=1, b=1)``, ``laplace(0.1)``,
   n = 100, the release 23.52), in a fresh process: the first landscape (its compiled
   template loaded from numba's disk cache), then ``dw.sample`` with its defaults (4 chains
   x 1000 draws + 1000 tune), with and without the landscape (``modes.landscape``
   replaced by one returning ``None``), interleaved, cache cleared before each run;
2. the README Quickstart's model of one's own (n = 1000, the release 312.4, 4 x 2000
   draws + 1000 tune), in a fresh process each: the first ``dw.sample`` (the chain's
   compilation included) and the landscape's share of it (its template compiled in that
   process);
3. the README's built-in example again, each run a fresh process (imports, the chain loaded
   from the disk cache, sampling), with and without the landscape, alternating: the first
   landscape's cache load above is numba's one-time start-up, which the chain's load pays
   anyway.

Run: python benchmarks/modes_overhead.py   (about a minute). Prints a Markdown table.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _quickstart import MODEL  # noqa: E402

BUILTIN = r"""
import time, numpy as np, dawrap as dw
from dawrap.runner import modes
from dawrap.models import beta_binomial
model, mech, n = beta_binomial.model(a=1, b=1), beta_binomial.laplace(epsilon=0.1), 100
s_dp = np.array([23.52])
t = time.perf_counter(); modes.landscape(model, mech, s_dp, n)
first = time.perf_counter() - t
dw.sample(model, mech, s_dp, n, seed=0, progress=False)            # compile / load the chain
real = modes.landscape
on, off, alone = [], [], []
for r in range(ROUNDS):
    for use in (True, False):
        modes._CACHE.clear()
        modes.landscape = real if use else (lambda *a: None)
        t = time.perf_counter()
        dw.sample(model, mech, s_dp, n, seed=r, progress=False)
        (on if use else off).append(time.perf_counter() - t)
    modes._CACHE.clear()
    t = time.perf_counter(); real(model, mech, s_dp, n); alone.append(time.perf_counter() - t)
modes.landscape = real
print(first, np.median(alone), np.median(on), np.median(off))
"""

OWN = MODEL + r"""
import time
from dawrap.runner import modes
real, spent = modes.landscape, []
def timed(*args):
    t = time.perf_counter(); out = real(*args); spent.append(time.perf_counter() - t)
    return out
modes.landscape = timed
t = time.perf_counter()
dw.sample(model, mech, s_dp=312.4, n=1000, draws=2000, tune=1000, chains=4, seed=0,
          progress=False)
print(time.perf_counter() - t, spent[0], sum(spent))
"""


FRESH = r"""
import time
t0 = time.perf_counter()
import numpy as np, dawrap as dw
from dawrap.runner import modes
from dawrap.models import beta_binomial
if OFF:
    modes.landscape = lambda *a: None
model, mech = beta_binomial.model(a=1, b=1), beta_binomial.laplace(epsilon=0.1)
dw.sample(model, mech, 23.52, 100, seed=0, progress=False)
print(time.perf_counter() - t0)
"""


def run(code: str, rounds: int = 0, off: bool = False) -> list[float]:
    out = subprocess.run([sys.executable, "-c", code.replace("ROUNDS", str(rounds))
                          .replace("OFF", str(int(off)))],
                         capture_output=True, text=True, check=True)
    return [float(v) for v in out.stdout.split()]


def main() -> None:
    load = os.getloadavg()[0]
    first, alone, on, off = run(BUILTIN, rounds=5)
    print(f"Load average {load:.1f} on {os.cpu_count()} cores.\n")
    print("| run | with landscape | without | landscape alone | overhead |")
    print("|---|---|---|---|---|")
    print(f"| README beta_binomial, dw.sample defaults (median of 5, warm) | {on * 1e3:.0f} ms "
          f"| {off * 1e3:.0f} ms | {alone * 1e3:.0f} ms | {on / off - 1:+.0%} |")
    print(f"| same, first landscape in a fresh process (template from disk cache) | | | "
          f"{first * 1e3:.0f} ms | |")
    for trial in range(2):
        total, first_call, all_calls = run(OWN)
        print(f"| Quickstart's own model, first dw.sample in a fresh process ({trial + 1}) | "
              f"{total:.1f} s | | {first_call:.2f} s (all calls {all_calls:.2f} s) | "
              f"{all_calls / (total - all_calls):+.0%} |")
    fresh = {False: [], True: []}
    for _ in range(4):
        for off in (False, True):
            fresh[off].append(run(FRESH, off=off)[0])
    with_, without = (float(np.median(fresh[off])) for off in (False, True))
    print(f"| README beta_binomial, fresh process each (median of 4: "
          f"{', '.join(f'{v:.1f}' for v in fresh[False])} s against "
          f"{', '.join(f'{v:.1f}' for v in fresh[True])} s) | {with_:.2f} s | {without:.2f} s "
          f"| | {with_ / without - 1:+.0%} |")


if __name__ == "__main__":
    t0 = time.time()
    main()
    print(f"\n{time.time() - t0:.0f} s")
