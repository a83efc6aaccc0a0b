"""The Metropolis-Hastings acceptance probability, shared by the theta kernels (the random
walk, :mod:`.kernels`, and Hamiltonian Monte Carlo, :mod:`.hmc`), the interweaving move and
the marginal sufficient-statistic kernels. Public as ``dw.kernels.acceptance_probability``.
"""
from __future__ import annotations

import math

import numba

__all__ = ["acceptance_probability"]


@numba.njit(nogil=True, cache=True)
def acceptance_probability(log_ratio):
    """``min(1, exp(log_ratio))``, and 0 for NaN.

    Parameters
    ----------
    log_ratio : float
        The log Metropolis-Hastings ratio.

    Returns
    -------
    float

    Examples
    --------
    >>> import math
    >>> import dawrap as dw
    >>> dw.kernels.acceptance_probability(0.5), dw.kernels.acceptance_probability(math.nan)
    (1.0, 0.0)
    >>> dw.kernels.acceptance_probability(-1.0) == math.exp(-1.0)
    True
    """
    if log_ratio != log_ratio:  # NaN: the proposal is rejected
        return 0.0
    return 1.0 if log_ratio >= 0.0 else math.exp(log_ratio)
