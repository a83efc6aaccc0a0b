"""What the built-in noise families share: the range of noise scales float64 can represent,
and the layout of their density parameters."""
from __future__ import annotations

import numpy as np

__all__ = ["SMALLEST_SCALE", "LARGEST_SCALE", "LARGEST_INTEGER_SCALE", "usable_scale",
           "inverse_scale_params"]

# Usable noise scales (Laplace and geometric scale sensitivity / epsilon, Gaussian sigma).
# Inside [1e-150, 1e150] every constructor's arithmetic (the scale's square and inverse, the
# log normalisers, the noise variance) stays finite and normal in float64. The integer
# mechanisms stop at 2**53 / 1000 (9.0e12): noise beyond 2**53, above which float64 no longer
# holds every integer, then has probability below e^-1000 (Geometric) or far less
# (DiscreteGaussian), and NumPy's geometric sampler behind the simulated releases saturates
# at 2**63 for larger scales.
SMALLEST_SCALE = 1e-150
LARGEST_SCALE = 1e150
LARGEST_INTEGER_SCALE = 2.0 ** 53 / 1000.0


def usable_scale(scale: float, source: str, what: str, highest: float, mechanism: str) -> float:
    """``scale`` if it lies in the usable range, else a ValueError saying which arguments
    produced it (``source``) and the range."""
    if not SMALLEST_SCALE <= scale <= highest:  # also False for NaN
        raise ValueError(f"{source} gives {what} = {scale:g}, outside the usable range "
                         f"[{SMALLEST_SCALE:g}, {highest:g}] of {mechanism}: beyond it the "
                         f"noise cannot be represented or drawn exactly in float64")
    return scale


def inverse_scale_params(inverse_scale: float, size: int, log_normaliser: float) -> np.ndarray:
    """``[1/scale, ..., 1/scale, size * log normaliser]``: the parameters the built-in log
    densities take. The normaliser is computed once, not per record update (a log costs as
    much as the rest)."""
    return np.r_[np.full(size, inverse_scale), size * log_normaliser]
