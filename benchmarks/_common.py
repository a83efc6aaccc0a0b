"""What the benchmark scripts share: their command line, writing and printing their tables,
and the bookkeeping of cases timed in interleaved rounds. Imported by the scripts as a sibling
module (``python benchmarks/<script>.py`` puts this folder on the path)."""
from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np


def parser(doc: str, quick: str | None = None, **defaults) -> argparse.ArgumentParser:
    """A script's command line: described by the first line of its docstring ``doc``, with
    an option ``--name`` (underscores written as dashes) for each keyword, of its default's
    type (a list default: one or more values of its first element's type), and with
    ``quick``, what a smaller run does, a ``--quick`` flag for it. Options with a help text,
    other flags and choices are added to the parser returned.

    >>> parser("Demo.", n=10, cells=[1, 2]).parse_args(["--cells", "3", "4"])
    Namespace(n=10, cells=[3, 4])
    """
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    for name, default in defaults.items():
        option = "--" + name.replace("_", "-")
        if isinstance(default, list):
            ap.add_argument(option, type=type(default[0]), nargs="+", default=default)
        elif type(default) in (int, float):
            ap.add_argument(option, type=type(default), default=default)
        elif isinstance(default, str):
            ap.add_argument(option, default=default)
        else:
            raise TypeError(f"{option}: an int, float, str or list default, got {default!r}")
    if quick is not None:
        ap.add_argument("--quick", action="store_true",
                        help=f"{quick}, nothing written: checks that the script runs")
    return ap


def write_csv(rows: list[dict], path) -> None:
    """Write ``rows`` to a CSV file: a column for each key of any row, in the order the keys
    first appear."""
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for row in rows for k in row)))
        writer.writeheader()
        writer.writerows(rows)


def write_table(lines: list[str], path) -> Path:
    """Write a table (``lines``, one a line) to ``path``, its folder made if need be; returns
    the path."""
    path = Path(path)
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def print_or_write(lines: list[str], path, quick: bool) -> None:
    """The end of a run: with ``quick`` (a check that the script runs) the table printed and
    nothing written; else the table written to ``path``, and where said."""
    if quick:
        print("\n".join(lines))
        return
    print(f"wrote {write_table(lines, path)}")


def seed_for(root: int, *keys: int) -> np.random.SeedSequence:
    """One stream of randomness of a study: the child of the ``SeedSequence`` of ``root``
    at ``keys`` (purpose, epsilon, replicate, ...)."""
    return np.random.SeedSequence(root, spawn_key=keys)


def coverage_differences(ours, published: dict, replicates: int,
                         published_replicates: int) -> list[tuple]:
    """``(z, epsilon, cell, ours, paper)`` for each cell of a paper's coverage table,
    ``published`` (``{epsilon: coverage of each cell}``, over ``published_replicates``): the
    two-proportion z statistic (pooled variance) of ours, ``ours(epsilon, cell)`` over
    ``replicates``, against the paper's."""
    out = []
    for eps, row in published.items():
        for cell, theirs in enumerate(row):
            mine = ours(eps, cell)
            pooled = ((mine * replicates + theirs * published_replicates)
                      / (replicates + published_replicates))
            se = np.sqrt(pooled * (1 - pooled) * (1 / replicates + 1 / published_replicates))
            out.append(((mine - theirs) / se if se > 0 else 0.0, eps, cell, mine, theirs))
    return out


def largest_differences(diffs: list[tuple], label, reproduced: str) -> str:
    """The sentence on :func:`coverage_differences` ``diffs``: the largest, and the cells
    beyond two standard errors (``label(cell)`` names a cell), or that none is, ``so``
    ``reproduced``."""
    z, eps, cell, ours, theirs = max(diffs, key=lambda d: abs(d[0]))
    beyond = [d for d in diffs if abs(d[0]) > 2]
    return (f"the largest difference is {label(cell)} at epsilon {eps:g}, {ours:.2f} against "
            f"{theirs:.2f} (z = {z:+.2f}); "
            + (f"{len(beyond)} of {len(diffs)} cells differ by more than two standard errors: "
               + ", ".join(f"{label(c)} at {e:g} ({o:.2f} vs {t:.2f})"
                           for _, e, c, o, t in beyond)
               if beyond else f"no cell of the {len(diffs)} differs by more than two standard "
               f"errors, so {reproduced}"))


def print_and_write(lines: list[str], path, quick: bool) -> None:
    """The end of a run: the table printed, and written to ``path`` unless ``quick``."""
    print("\n".join(lines))
    if not quick:
        write_table(lines, path)


def show_row(lines: list[str], line: str) -> None:
    """Print a table's row as soon as it is measured, and keep it in ``lines``."""
    print(line, flush=True)
    lines.append(line)


def minutes_since(began: float) -> str:
    """The minutes since ``began`` (a ``time.perf_counter()``), as a run's tables state them."""
    return f"{(time.perf_counter() - began) / 60:.1f}"


def huge_pages(asked: bool) -> None:
    """Let NumPy ask the kernel for transparent huge pages for its large arrays, or not
    (``--no-hugepages``), and print a header line saying which, and the kernel's setting."""
    if not asked:
        from numpy._core import multiarray

        multiarray._set_madvise_hugepage(False)
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            setting = f.read().strip()
    except OSError:
        setting = "unknown"
    print(f"# NumPy asks for transparent huge pages: {asked}; the kernel's setting: {setting}")


class Timed:
    """A case timed in interleaved rounds: a subclass sets ``n`` (records per sweep) and
    defines ``run(sweeps)``, the seconds ``sweeps`` sweeps take; :meth:`time` keeps the best
    ns per record update over the rounds."""

    n: int
    best = float("inf")

    def run(self, sweeps: int) -> float:
        raise NotImplementedError

    def time(self, sweeps: int) -> None:
        self.best = min(self.best, self.run(sweeps) / (sweeps * self.n) * 1e9)


def interleaved(cases, rounds: int, sweeps: int) -> None:
    """Time every case in turn, ``rounds`` times, each keeping its best: load on a shared
    machine slows some rounds, and interleaving spreads that over all cases alike."""
    for _ in range(rounds):
        for case in cases:
            case.time(sweeps)
