"""Time to first result in a fresh process (issue 15): ``import dawrap``, ``dawrap --help``,
the Quickstart's ``dw.sample`` of a built-in model end to end, and ``dawrap demo``.

Every case is a new Python process, timed from outside (interpreter start included, as a
user waits for it), first with an empty numba disk cache (``NUMBA_CACHE_DIR`` a fresh
folder: cold) and then again with the cache that run left (warm). With ``--baseline DIR``
(a checkout of another commit, e.g. ``git archive main | tar -x -C /tmp/base``) each case
also runs on that code, in the same run, so the ratios are measured under the same load.

    python benchmarks/startup.py [--baseline DIR] [--repeat 1] [--cases import,help,...]

Writes ``benchmarks/results/startup.md``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "startup.md"

QUICKSTART = """
import json, time
began = time.perf_counter()
import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial
model, mech = beta_binomial.model(a=1, b=1), beta_binomial.laplace(epsilon=0.5)
idata = dw.sample(model, mech, s_dp=312.4, n=1000, seed=0)
attrs = diagnostics.attrs(idata)
print(json.dumps({"compile_time": float(attrs.get("compile_time", float("nan"))),
                  "sampling_time": float(attrs["sampling_time"]),
                  "inside": time.perf_counter() - began}))
"""

#: case -> (what it is, the command after the interpreter)
CASES = {
    "import": ("`import dawrap`", ["-c", "import dawrap"]),
    "help": ("`dawrap --help`", ["-m", "dawrap", "--help"]),
    "quickstart": ("Quickstart: `dw.sample` of beta_binomial (n=1000, 4 chains x 1000 draws) "
                   "with its imports", ["-c", QUICKSTART]),
    "demo": ("`dawrap demo` (defaults, plots included)", ["-m", "dawrap", "demo", "--force"]),
}

#: Targets of issue 15 with a warm cache (seconds).
TARGETS = {"import": 1.5, "help": 1.0, "quickstart": 3.0, "demo": 10.0}


def _run(case: str, cache: str, code: str | None, workdir: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, MPLBACKEND="Agg")
    if code is not None:  # the baseline's source first on the path (before the editable install)
        env["PYTHONPATH"] = code + os.pathsep + env.get("PYTHONPATH", "")
    args = CASES[case][1]
    if case == "demo":
        args = args + ["--out", os.path.join(workdir, "demo")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    out = subprocess.run([sys.executable, *args], env=env, cwd=workdir, capture_output=True,
                         text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{case} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    # CPU seconds (user + system) of the process: what other work on the machine inflates
    # least, so it stands in for the wall time of a quiet machine.
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    row = {"wall": wall, "cpu": cpu}
    if case == "quickstart":
        row.update(json.loads(out.stdout.strip().splitlines()[-1]))
    return row


def measure(cases, baseline: str | None, repeat: int) -> dict:
    """``{(version, case, "cold"/"warm"): [row, ...]}``; every version and case gets its own
    cache folder, so a cold run is cold whatever ran before it."""
    versions = {"this": None, **({"baseline": baseline} if baseline else {})}
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(repeat):
            for case in cases:
                for version, code in versions.items():
                    cache = os.path.join(scratch, f"cache-{version}-{case}-{r}")
                    for temperature in ("cold", "warm"):
                        row = _run(case, cache, code, scratch)
                        results.setdefault((version, case, temperature), []).append(row)
                        print(f"{version:8} {case:10} {temperature}: "
                              + ", ".join(f"{k} {v:.2f}" for k, v in row.items()), flush=True)
    return results


def _cell(rows, key="wall") -> str:
    values = sorted(row[key] for row in rows)
    text = f"{values[0]:.2f}" if len(values) == 1 else f"{values[0]:.2f}-{values[-1]:.2f}"
    if key == "wall":
        text += f" ({min(row['cpu'] for row in rows):.2f})"
    return text


def report(results: dict, cases, baseline: str | None, began: str) -> str:
    import numba

    lines = ["# Startup: time to first result in a fresh process", "",
             f"`python benchmarks/startup.py{' --baseline DIR' if baseline else ''}`, {began}; "
             f"Python {sys.version.split()[0]}, numba {numba.__version__}, {os.cpu_count()} "
             "cores shared with other work (load average "
             f"{' / '.join(f'{v:.1f}' for v in os.getloadavg())} at the end), so wall times are "
             "inflated and noisy: compare within a row. Seconds of a new process, interpreter "
             "start included: wall, and in brackets its CPU time (user + system), which load "
             "inflates least. cold: empty numba disk cache; warm: the cache the cold run left.",
             ""]
    head = "| case | target (warm) | cold s | warm s |"
    rule = "|---|---|---|---|"
    if baseline:
        head += " baseline cold s | baseline warm s | warm ratio baseline/this |"
        rule += "---|---|---|"
    lines += [head, rule]
    for case in cases:
        row = (f"| {CASES[case][0]} | < {TARGETS[case]:g} | "
               f"{_cell(results['this', case, 'cold'])} | "
               f"{_cell(results['this', case, 'warm'])} |")
        if baseline:
            ratio = (min(r["wall"] for r in results["baseline", case, "warm"])
                     / min(r["wall"] for r in results["this", case, "warm"]))
            row += (f" {_cell(results['baseline', case, 'cold'])} | "
                    f"{_cell(results['baseline', case, 'warm'])} | {ratio:.1f} |")
        lines.append(row)
    if "quickstart" in cases:
        lines += ["", "Quickstart, from its result's attrs (this code; the baseline has no "
                      "compile_time): seconds compiling or loading from the cache, and sampling.",
                  "", "| cache | compile_time s | sampling_time s |", "|---|---|---|"]
        for temperature in ("cold", "warm"):
            rows = results["this", "quickstart", temperature]
            lines.append(f"| {temperature} | {_cell(rows, 'compile_time')} | "
                         f"{_cell(rows, 'sampling_time')} |")
    lines += ["", NOTE]
    return "\n".join(lines) + "\n"


NOTE = ("With a warm cache the record chain of a built-in model loads from numba's disk cache "
        "instead of compiling (docs/compile_cache.md); what remains of the Quickstart is "
        "importing ArviZ, numba and dawrap, loading the cached chain, and sampling.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="a checkout of the code to compare with")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each case (default 1)")
    parser.add_argument("--cases", default=",".join(CASES),
                        help=f"comma-separated, from {','.join(CASES)} (default all)")
    parser.add_argument("--out", default=str(RESULTS), help="the markdown results file")
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = set(cases) - set(CASES)
    if unknown:
        parser.error(f"--cases: unknown {sorted(unknown)}; choose from {list(CASES)}")
    began = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    baseline = str(Path(args.baseline).resolve()) if args.baseline else None
    results = measure(cases, baseline, args.repeat)
    text = report(results, cases, baseline, began)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
