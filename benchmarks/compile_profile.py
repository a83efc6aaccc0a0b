"""Where a user's model spends its compile time (issue 27 item 4).

Runs the README's Quickstart (a model of the user's own: its functions are defined in the
script, so nothing loads from the disk cache) in this process and records numba's compile
events: for each compiled function, the seconds spent in it *exclusive* of the functions it
compiled along the way, split into numba's own passes (bytecode analysis, typing, lowering to
LLVM IR: "typing etc.") and LLVM (optimisation and machine code: the time under numba's LLVM
lock). Functions are grouped by the layer they belong to (the records' helpers, the sweep,
the chain, the user's own functions, dawrap's fixed helpers).

    python benchmarks/compile_profile.py [--top 25]

Run it in a fresh process with a warm cache of the package's own (``cache=True``) helpers
(run once before): that is what a user sees.
"""
from __future__ import annotations

import argparse
import collections
import os
import time

import numba
import numpy as np
from numba.core import event

import dawrap as dw
from dawrap.samplers import record


class Profile(event.Listener):
    """Exclusive compile seconds per function, and how much of it is LLVM."""

    def __init__(self):
        self.stack = []  # [qualname, started, seconds of nested compiles, llvm seconds]
        self.exclusive = collections.Counter()
        self.llvm = collections.Counter()
        self.llvm_started = None

    def on_start(self, ev):
        if ev.kind == "numba:compile":
            self.stack.append([ev.data["dispatcher"].py_func.__qualname__,
                               time.perf_counter(), 0.0, 0.0])
        elif ev.kind == "numba:llvm_lock" and self.stack:
            self.llvm_started = time.perf_counter()

    def on_end(self, ev):
        if ev.kind == "numba:compile":
            name, started, nested, llvm = self.stack.pop()
            took = time.perf_counter() - started
            self.exclusive[name] += took - nested
            self.llvm[name] += llvm
            if self.stack:
                self.stack[-1][2] += took
        elif ev.kind == "numba:llvm_lock" and self.stack and self.llvm_started is not None:
            self.stack[-1][3] += time.perf_counter() - self.llvm_started
            self.llvm_started = None


def quickstart():
    """The README's Quickstart, verbatim but for the smaller run (compile time is the same)."""

    @numba.njit
    def draw_record(rng, theta, out):
        out[0] = 1.0 if rng.random() < theta[0] else 0.0

    @numba.njit
    def count(x_i, out):
        out[0] = x_i[0]

    @numba.njit
    def draw_theta(rng, theta, x, stats):
        return np.array([rng.beta(1 + stats[0], 1 + x.shape[0] - stats[0])])

    model = dw.Model(params={"p": ()}, record_size=1, draw_record=draw_record,
                     draw_theta=draw_theta, model_stat=count, stat_size=1,
                     draw_prior=lambda rng: np.array([rng.beta(1, 1)]))
    mech = dw.Laplace(count, epsilon=0.5, sensitivity=1.0)
    return dw.sample(model, mech, s_dp=312.4, n=1000, draws=200, tune=100, chains=4, seed=0,
                     progress=False)


def layer(name: str) -> str:
    base = name.split("__")[0]
    if "__" not in name:
        return "user / fixed helpers"
    if base in {t.__name__ for t in record.RECORD_TEMPLATES}:
        return "records' helpers"
    if base in {t.__name__ for t in record.SWEEP_TEMPLATES} | {"dense_sweep", "sparse_sweep",
                                                                "dense_pass", "sparse_pass"}:
        return "sweep"
    if base in {t.__name__ for t in record.CHAIN_TEMPLATES}:
        return "chain"
    return "other bound (kernel, starts, mechanism)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    profile = Profile()
    began = time.perf_counter()
    with event.install_listener("numba:compile", profile), \
            event.install_listener("numba:llvm_lock", profile):
        idata = quickstart()
    wall = time.perf_counter() - began
    from dawrap import diagnostics
    attrs = diagnostics.attrs(idata)
    total = sum(profile.exclusive.values())
    print(f"# load average: {os.getloadavg()}")
    print(f"dw.sample: {wall:.2f} s wall; compile_time attribute {attrs['compile_time']:.2f} s; "
          f"numba compiling {total:.2f} s, of which LLVM {sum(profile.llvm.values()):.2f} s\n")
    groups = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for name, seconds in profile.exclusive.items():
        g = groups[layer(name)]
        g[0] += seconds
        g[1] += profile.llvm[name]
        g[2] += 1
    print("| layer | functions | seconds | of which LLVM |")
    print("|---|---|---|---|")
    for name, (seconds, llvm, count) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        print(f"| {name} | {count} | {seconds:.2f} | {llvm:.2f} |")
    print(f"\n| function (top {args.top}) | seconds | of which LLVM |")
    print("|---|---|---|")
    for name, seconds in profile.exclusive.most_common(args.top):
        print(f"| {name.split('__')[0]} | {seconds:.3f} | {profile.llvm[name]:.3f} |")


if __name__ == "__main__":
    main()
