"""What every executed gallery example needs, in whichever process runs it.

sphinx-gallery runs the examples in worker processes (``"parallel"`` in ``conf.py``), where
``conf.py`` itself never runs: its settings for the examples' warnings are installed here,
by a ``reset_modules`` hook that sphinx-gallery calls before each example in the process
that executes it.
"""
from __future__ import annotations

import os
import warnings


def format_warning(message, category, filename, lineno, line=None) -> str:
    """An executed example's warnings appear on its page as ``Category: message``, without
    the file and line of the machine that built the site."""
    return f"{category.__name__}: {message}\n"


def quiet_warnings(gallery_conf, fname) -> None:
    """Before each example: warnings without the build machine's paths, ArviZ's refactor
    notice left out, matplotlib without a display."""
    warnings.formatwarning = format_warning
    warnings.filterwarnings("ignore", message=".*ArviZ is undergoing a major refactor.*")
    os.environ.setdefault("MPLBACKEND", "Agg")
