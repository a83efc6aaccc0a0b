r"""Simultaneous confidence bands for the ECDF of uniform values (Säilynoja, Bürkner &
Vehtari 2022), the standard picture of simulation-based calibration.

For :math:`M` values that are i.i.d. uniform, :math:`M F_M(z) \sim \mathrm{Bin}(M, z)` at each
point :math:`z`. A pointwise band at level :math:`1 - \gamma` is too narrow when read along the
whole curve; the simultaneous band uses the pointwise level :math:`\gamma` at which a fraction
:math:`1 - \alpha` of simulated uniform ECDFs stay inside everywhere on the grid. Plotting
:math:`F_M(z) - z` (the ECDF difference) makes departures visible at every :math:`z`.

>>> import numpy as np
>>> z, lower, upper = ecdf_band(100, alpha=0.05)
>>> u = np.random.default_rng(0).uniform(size=100)
>>> bool(ecdf_inside(u, alpha=0.05))          # uniform values stay inside the band
True
>>> bool(ecdf_inside(u ** 3, alpha=0.05))     # False: reject uniformity at level 0.05
False
"""
from __future__ import annotations

import functools

import numpy as np
from scipy import stats

__all__ = ["ecdf_grid", "ecdf_band", "ecdf_inside"]


def ecdf_grid(m: int, points: int = 100) -> np.ndarray:
    """Evaluation points in (0, 1): ``min(m, points)`` interior points, evenly spaced."""
    k = min(int(m), points)
    return np.arange(1, k + 1) / (k + 1)


def _pointwise_tail(counts: np.ndarray, m: int, z: np.ndarray) -> np.ndarray:
    """Two-sided binomial tail probability of each ECDF count (smaller = more extreme)."""
    return 2.0 * np.minimum(stats.binom.cdf(counts, m, z), stats.binom.sf(counts - 1, m, z))


@functools.lru_cache(maxsize=32)
def ecdf_band(m: int, alpha: float = 0.05, points: int = 100, simulations: int = 2000,
              seed: int = 20220101) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The simultaneous ``1 - alpha`` band of the ECDF of ``m`` uniform values.

    Returns ``(z, lower, upper)`` on :func:`ecdf_grid`; a uniform sample's ECDF lies inside
    at every ``z`` with probability about ``1 - alpha`` (the level is found by simulating
    ``simulations`` uniform samples with a fixed seed, so the band is deterministic; cached,
    so checking many samples of one size costs one simulation).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    z = ecdf_grid(m, points)
    rng = np.random.default_rng(seed)
    u = np.sort(rng.random((simulations, m)), axis=1)
    counts = np.stack([np.searchsorted(row, z, side="right") for row in u])
    gamma = np.quantile(_pointwise_tail(counts, m, z).min(axis=1), alpha)
    lower = stats.binom.ppf(gamma / 2.0, m, z) / m
    upper = stats.binom.ppf(1.0 - gamma / 2.0, m, z) / m
    for shared in (z, lower, upper):  # cached: callers share these arrays
        shared.setflags(write=False)
    return z, lower, upper


def ecdf_inside(u, alpha: float = 0.05, **band_options) -> bool:
    """Whether the ECDF of ``u`` stays inside the simultaneous ``1 - alpha`` band."""
    u = np.sort(np.asarray(u, dtype=float).ravel())
    z, lower, upper = ecdf_band(u.size, alpha, **band_options)
    ecdf = np.searchsorted(u, z, side="right") / u.size
    return bool(np.all((ecdf >= lower) & (ecdf <= upper)))
