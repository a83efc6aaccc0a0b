"""What the ``dawrap`` commands share: argument types, the output options and their check,
and the writers.

Below both :mod:`dawrap.cli` and :mod:`dawrap.demo` (which imports nothing of the command
line's own module), and light: it imports neither numba nor ArviZ, so that an argument is
checked in milliseconds, before any of the package's compiled code is loaded.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from dawrap._files import as_path, atomic_write, refuse_special

__all__ = ["count", "positive_number", "add_output", "output_file", "write_netcdf", "plots"]


def count(minimum: int):
    """An argparse type: an integer >= ``minimum`` (checked before anything compiles).

    Examples
    --------
    >>> count(1)("3")
    3
    >>> count(1)("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be an integer >= 1, got 0
    """
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {value}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def positive_number(text: str) -> float:
    """An argparse type: a finite number > 0, such as a privacy budget.

    Checked by the parser, so that ``--epsilon -1`` is reported as ``argument --epsilon: ...``
    at once, not by the mechanism once the models are loaded.

    Examples
    --------
    >>> positive_number("0.5")
    0.5
    >>> positive_number("-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a finite number > 0, got -1
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.0 < value < math.inf:  # NaN fails too
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text}")
    return value


def add_output(parser: argparse.ArgumentParser, default: str | None, out_help: str,
               forced: str) -> None:
    """A command's ``--out`` (default ``default``, described by ``out_help``) and
    ``--force``, which allows what ``forced`` says (refused without it).

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> add_output(parser, "results", "output folder", "overwrite its files")
    >>> parser.parse_args(["--force"])
    Namespace(out='results', force=True)
    """
    parser.add_argument("--out", default=default, help=out_help)
    parser.add_argument("--force", action="store_true", help=f"{forced} (default: refuse)")


def output_file(path, force: bool, option: str = "--out", default: str | None = None) -> Path:
    """Check an output file before any work, without writing anything: a regular file or
    nothing (never a folder, symlink or device), not overwritten without ``--force``.
    ``path`` None stands for ``default``, the option's default, which the message then names
    as such (the user gave no ``option``). The caller creates its folder
    (:func:`dawrap._files.ensure_folder`) once every argument has passed.

    Examples
    --------
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> output_file(os.path.join(folder, "new.nc"), force=False).name
    'new.nc'
    >>> output_file(folder, force=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: --out: ... is an existing folder, not a file; ...
    """
    out = as_path(default if path is None else path, option)
    if refuse_special(out, option, "file") == "file" and not force:
        given = f"{option}: {out}" if path is not None else f"{out} (the default {option})"
        raise ValueError(f"{given} exists; pass --force to overwrite it, or choose "
                         f"another {option}")
    refuse_special(out.parent, option, "folder")  # a file where its folder should be
    return out


def write_netcdf(data, path: Path, overwrite: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (a unique temporary file renamed into place)."""
    refuse_special(path, "--out", "file")
    try:
        atomic_write(path, lambda tmp: data.to_netcdf(tmp), "--out", overwrite=overwrite)
        print(f"Wrote {path}")
    except (ImportError, ValueError) as err:
        print(f"Not written: no netCDF backend ({err}); pip install h5netcdf")


def plots(out: Path, named_plots, overwrite: bool = True) -> None:
    """Write each ``(file name, plot function)`` of ``named_plots`` into folder ``out``, or
    say once that matplotlib is missing."""
    try:
        for name, plot in named_plots:
            # the name's suffix chooses the format
            atomic_write(out / name, plot, "--out", overwrite=overwrite)
            print(f"Wrote {out / name}")
    except ImportError as err:
        print(f"Plots not written: {err}")
