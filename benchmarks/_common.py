"""What the benchmark scripts share: their command line, writing and printing their tables,
and the bookkeeping of cases timed in interleaved rounds. Imported by the scripts as a sibling
module (``python benchmarks/<script>.py`` puts this folder on the path)."""
from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np


def parser(doc: str, **defaults) -> argparse.ArgumentParser:
    """A script's command line: described by the first line of its docstring ``doc``, with
    an option ``--name`` (underscores written as dashes) for each keyword, of its default's
    type (a list default: one or more values of its first element's type). Options with a
    help text, flags and choices are added to the parser returned.

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
