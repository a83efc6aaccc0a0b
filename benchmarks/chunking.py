"""Cost of sizing the record chain's compiled calls by time (issue 29, item 9).

The runner used to call the compiled chain for ``min(10000, 2e6 // n)`` iterations at a
time, whatever an iteration cost; it now sizes each call by the measured time per
iteration (about ``CHUNK_SECONDS``, :class:`dawrap.runner.chains.Chunks`), starting from one
iteration, so that Ctrl-C is honoured within a call. This measures what the extra Python
round trips cost: the sampler's own time (the result's ``sampling_time``) with time-sized
calls and with the old fixed ones, interleaved in the same run, medians of ``--repeat``.

    python benchmarks/chunking.py [--repeat 9]

Writes ``benchmarks/results/chunking.md``.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import dawrap as dw
from dawrap.models import beta_binomial
from dawrap.runner import chains, record as run_record

RESULTS = Path(__file__).resolve().parent / "results" / "chunking.md"
CASES = [(100, 20_000), (10_000, 2_000)]  # (n, iterations)


def fixed_chunks(n: int):
    """The old rule, as a Chunks that never adapts."""
    class Fixed(chains.Chunks):
        def __init__(self):
            self.size = max(1, min(10_000, 2_000_000 // n))

        def timed(self, iterations, seconds):
            pass

    return Fixed


def seconds(n: int, iterations: int, chunks, seed: int) -> float:
    run_record.Chunks = chunks
    model, mech = beta_binomial.model(), beta_binomial.laplace(0.5)
    idata = dw.sample(model, mech, 0.3 * n, n, draws=iterations, tune=0, chains=1, seed=seed,
                      progress=False, interweave=False)
    return float(dw.diagnostics.attrs(idata)["sampling_time"])


def main(repeat: int) -> str:
    rows = []
    for n, iterations in CASES:
        seconds(n, 50, chains.Chunks, 0)  # compiled or loaded once, outside the timing
        timed = {"time-sized": [], "fixed": []}
        for rep in range(repeat):
            timed["time-sized"].append(seconds(n, iterations, chains.Chunks, rep))
            timed["fixed"].append(seconds(n, iterations, fixed_chunks(n), rep))
        new, old = np.median(timed["time-sized"]), np.median(timed["fixed"])
        rows.append(f"| {n} | {iterations} | {max(1, min(10_000, 2_000_000 // n))} | "
                    f"{new:.3f} | {old:.3f} | {new / old:.3f} |")
    load = os.getloadavg()
    text = "\n".join([
        "# Time-sized chunks of the record chain: their cost",
        "",
        f"`python benchmarks/chunking.py --repeat {repeat}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; beta_binomial, Laplace "
        f"(epsilon 0.5), 1 chain, no interweaving; sampler seconds (`sampling_time`), medians "
        f"of {repeat} runs interleaved with the baseline; load average "
        f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on 2 shared cores.",
        "",
        "| n | iterations | old fixed chunk | time-sized s | fixed s | ratio |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"ratio: time-sized over fixed (1: the extra round trips of calls of about "
        f"{chains.CHUNK_SECONDS} s, and of the first calls of 1, 8, 64, ... iterations, cost "
        f"nothing against the sampling). What they buy: Ctrl-C waits for one call, not for up "
        f"to 10 000 iterations whatever their cost (`tests/runner/test_interrupt.py`).",
        ""])
    RESULTS.write_text(text)
    return text


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    print(main(parser.parse_args().repeat))
