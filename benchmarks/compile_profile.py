"""Where a user's model spends its compile time, and what the disk cache saves (issue 27 item 4).

Runs the README's Quickstart (a model of the user's own: its three ``@numba.njit``
functions are defined in this file) in fresh Python processes, each recording numba's
compile events: for each compiled function, the seconds spent in it *exclusive* of the
functions it compiled along the way, and how much of that is LLVM (optimisation and machine
code: the time under numba's LLVM lock). The processes, in this order, share one new cache
folder (``DAWRAP_CACHE_DIR``):

1. **empty cache**: the first run on a machine (dawrap's own helpers compile too);
2. **new model**: the same file under another module name, so that its functions have
   other keys and nothing of its chain is cached, while dawrap's own helpers are: what every
   process paid before a user's chain could be cached;
3. **same model again**, ``--repeat`` times: the chain loads from the disk cache.

The ratios (new model / same model again) are measured in one run, under the same load.

    python benchmarks/compile_profile.py [--top 25] [--repeat 2]

Writes ``benchmarks/results/compile_profile.md``.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import parser  # noqa: E402
from _quickstart import MODEL  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "compile_profile.md"

#: The README's Quickstart as a user's module file (its model, and a smaller run: compile
#: time is the same). Each run imports it under a module name of its own choosing: another
#: name is another model to the cache (every function's key holds its module's name).
QUICKSTART = MODEL + """
def quickstart():
    return dw.sample(model, mech, s_dp=312.4, n=1000, draws=200, tune=100, chains=4, seed=0,
                     progress=False)
"""


def layer(name: str) -> str:
    from dawrap.samplers import record

    base = name.split("__")[0]
    if "__" not in name:
        return "user / numba's overloads / fixed helpers"
    if base in {t.__name__ for t in record.RECORD_TEMPLATES}:
        return "records' helpers"
    if base in {t.__name__ for t in record.SWEEP_TEMPLATES} | {"dense_sweep", "entries_sweep",
                                                                "dense_pass", "entries_pass"}:
        return "sweep"
    if base in {t.__name__ for t in record.CHAIN_TEMPLATES}:
        return "chain"
    return "other bound (kernel, starts, modes, mechanism)"


def child(folder: str, module: str) -> None:
    """One profiled Quickstart, ``module`` in ``folder``; prints a JSON line."""
    import importlib

    from numba.core import event

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

    profile = Profile()
    began = time.perf_counter()
    sys.path.insert(0, folder)
    quickstart = importlib.import_module(module).quickstart
    with event.install_listener("numba:compile", profile), \
            event.install_listener("numba:llvm_lock", profile):
        idata = quickstart()
    wall = time.perf_counter() - began
    from dawrap import diagnostics
    layers = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for name, seconds in profile.exclusive.items():
        row = layers[layer(name)]
        row[0] += seconds
        row[1] += profile.llvm[name]
        row[2] += 1
    print(json.dumps({
        "sample_wall": wall, "compile_time": float(diagnostics.attrs(idata)["compile_time"]),
        "compiling": sum(profile.exclusive.values()), "llvm": sum(profile.llvm.values()),
        "layers": dict(layers),
        "functions": [(name.split("__")[0], s, profile.llvm[name])
                      for name, s in profile.exclusive.most_common()]}))


def _run(scratch: str, module: str) -> dict:
    folder = os.path.join(scratch, "user")
    os.makedirs(folder, exist_ok=True)
    Path(folder, f"{module}.py").write_text(QUICKSTART)
    env = dict(os.environ, DAWRAP_CACHE_DIR=os.path.join(scratch, "cache"))
    began = time.perf_counter()
    out = subprocess.run([sys.executable, __file__, "--child", folder, module], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"the Quickstart failed ({out.returncode}):\n{out.stderr[-3000:]}")
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["process_wall"] = time.perf_counter() - began
    return row


def report(runs: dict, top: int, began: str) -> str:
    import numba

    load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    lines = ["# A user's model: compile time in a fresh process, and the disk cache", "",
             f"`python benchmarks/compile_profile.py`, {began}; Python "
             f"{sys.version.split()[0]}, numba {numba.__version__}, {os.cpu_count()} cores "
             f"shared with other work (load average {load} at the end): seconds are inflated "
             "by the load; compare within the table (all rows of one run).", "",
             "README Quickstart (the user's own `@numba.njit` functions, in a module file; "
             "n = 1000, 4 chains x 200 draws). empty cache: the first run on a machine; new "
             "model: the same file under another module name (nothing of its chain cached, "
             "dawrap's own helpers cached: what every process paid before); same model again: "
             "its chain loads from the cache. process: the whole new Python process; "
             "dw.sample: the call; compile_time: the result's attribute (compiling or "
             "loading compiled code); numba compiling: the sum of numba's compile events "
             "(of which LLVM).", "",
             "| run | process s | dw.sample s | compile_time s | numba compiling s "
             "(LLVM) |", "|---|---|---|---|---|"]
    for name, rows in runs.items():
        def cell(key):
            values = sorted(r[key] for r in rows)
            return (f"{values[0]:.2f}" if len(values) == 1
                    else f"{values[0]:.2f}-{values[-1]:.2f}")
        lines.append(f"| {name} | {cell('process_wall')} | {cell('sample_wall')} | "
                     f"{cell('compile_time')} | {cell('compiling')} "
                     f"({min(r['llvm'] for r in rows):.2f}) |")
    new, warm = runs["new model"][0], runs["same model again"]
    best = min(warm, key=lambda r: r["process_wall"])
    lines += ["", "Ratios, new model / same model again (best of the repeats): "
              f"process {new['process_wall'] / best['process_wall']:.1f}x, dw.sample "
              f"{new['sample_wall'] / best['sample_wall']:.1f}x, compile_time "
              f"{new['compile_time'] / best['compile_time']:.1f}x.", ""]
    for name, row in (("new model", new), ("same model again", best)):
        if not row["functions"]:
            lines += [f"{name[0].upper()}{name[1:]}: nothing compiled.", ""]
            continue
        lines += [f"Where the compile time goes, {name}:", "",
                  "| layer | functions | seconds | of which LLVM |", "|---|---|---|---|"]
        for label, (seconds, llvm, count) in sorted(row["layers"].items(),
                                                     key=lambda kv: -kv[1][0]):
            lines.append(f"| {label} | {count} | {seconds:.2f} | {llvm:.2f} |")
        lines += ["", f"| function (top {top}) | seconds | of which LLVM |", "|---|---|---|"]
        lines += [f"| {f} | {s:.3f} | {llvm:.3f} |" for f, s, llvm in row["functions"][:top]]
        lines.append("")
    lines.append(NOTE)
    return "\n".join(lines) + "\n"


NOTE = ("With the chain cached (dawrap.compile.user_keys, docs/compile_cache.md) nothing compiles: "
        "the user's functions that the runner calls from Python (its probes, the starts' "
        "plausibility evidence) run through cached wrappers too "
        "(dawrap.compile.templates.cached_caller). What remains of the dw.sample column is mostly "
        "importing: the Quickstart's first dw.Model / dw.sample loads dawrap's sampling "
        "module and with it ArviZ and SciPy (a cProfile of a warm run, load 6: 9 of 11 s "
        "in imports, 0.8 s sampling, 0.3 s loading the cached code).")


def main() -> None:
    ap = parser(__doc__, top=25)
    ap.add_argument("--repeat", type=int, default=2, help="warm runs (default 2)")
    ap.add_argument("--out", default=str(RESULTS), help="the markdown results file")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    began = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    runs = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, module, times in (("empty cache", "user_model_a", 1),
                                    ("new model", "user_model_b", 1),
                                    ("same model again", "user_model_b", args.repeat)):
            for _ in range(times):
                row = _run(scratch, module)
                runs.setdefault(name, []).append(row)
                print(f"{name}: process {row['process_wall']:.2f} s, dw.sample "
                      f"{row['sample_wall']:.2f} s, compile_time {row['compile_time']:.2f} s",
                      flush=True)
    text = report(runs, args.top, began)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
