"""Plots for studies and results, written to files (matplotlib is the optional extra
``dawrap[plots]``; the ``Agg`` backend, so no display is needed).

Trace plots go through ArviZ (:func:`dawrap.diagnostics.plot_trace`); ArviZ has no plot for a
calibration study's ranks, so those are drawn here.
"""
from __future__ import annotations

import numpy as np

from .bands import ecdf_band, ecdf_grid

__all__ = ["pyplot", "plot_ranks", "plot_ecdf_difference", "plot_trace"]


def pyplot():
    """``matplotlib.pyplot`` on the file-only Agg backend, or an ImportError saying how to
    get it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError("plots need matplotlib: pip install 'dawrap[plots]'") from err
    return plt


def _panels(count: int, width: float = 3.6, height: float = 3.0):
    plt = pyplot()
    fig, axes = plt.subplots(1, count, figsize=(width * count, height), squeeze=False)
    return plt, fig, axes[0]


def _legend_below(fig, ax) -> None:
    """One legend for the figure, below the panels: never over the data."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=len(handles), fontsize=8,
                   frameon=False, bbox_to_anchor=(0.5, 0.0))
        fig.subplots_adjust(bottom=0.3)


def _save(plt, fig, path):
    fig.tight_layout(rect=(0, 0.1 if fig.legends else 0, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_ranks(pit: dict, path, bins: int = 20):
    """Histogram of the thinned ranks (as ``pit`` in [0, 1]) per method, with the expected
    count and its central 99% binomial range under uniformity."""
    from scipy import stats

    plt, fig, axes = _panels(len(pit))
    for ax, (method, u) in zip(axes, pit.items()):
        m = len(u)
        lo, hi = stats.binom.ppf([0.005, 0.995], m, 1.0 / bins)
        ax.axhspan(lo, hi, color="0.85", label="99% if uniform")
        ax.axhline(m / bins, color="0.4", lw=1)
        ax.hist(u, bins=np.linspace(0, 1, bins + 1), histtype="stepfilled", alpha=0.7)
        ax.set(title=method, xlabel="normalised rank", ylabel="trials")
    _legend_below(fig, axes[0])
    return _save(plt, fig, path)


def plot_ecdf_difference(pit: dict, path, alpha: float = 0.05):
    """ECDF minus the uniform CDF per method, with the simultaneous ``1 - alpha`` band
    (:func:`dawrap.studies.bands.ecdf_band`): a calibrated sampler's curve stays in the band."""
    plt, fig, axes = _panels(len(pit))
    for ax, (method, u) in zip(axes, pit.items()):
        u = np.sort(np.asarray(u, dtype=float))
        z, lower, upper = ecdf_band(u.size, alpha)
        ax.fill_between(z, lower - z, upper - z, color="0.85", step="mid",
                        label=f"{100 * (1 - alpha):g}% simultaneous")
        ecdf = np.searchsorted(u, ecdf_grid(u.size), side="right") / u.size
        ax.step(z, ecdf - z, where="mid", color="C0")
        ax.axhline(0.0, color="0.4", lw=0.8)
        ax.set(title=method, xlabel="normalised rank", ylabel="ECDF difference")
    _legend_below(fig, axes[0])
    return _save(plt, fig, path)


def plot_trace(idata, path):
    """ArviZ's trace plot of the posterior, written to ``path``."""
    from .. import diagnostics

    pyplot()
    diagnostics.plot_trace(idata, path)
    return path
