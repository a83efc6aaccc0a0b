"""Pieces the ready-made models share: hyperparameter checks and the valid region of a
non-negative total (Poisson and exponential records)."""
import math
import numbers

import numba
import numpy as np


def positive(name: str, value) -> float:
    """``value`` as a finite float > 0, or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not 0 < float(value) < math.inf:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


@numba.njit(nogil=True, cache=True)
def nonnegative_total(s, n):
    """A total of non-negative records is >= 0."""
    return s[0] >= 0.0


@numba.njit(nogil=True, cache=True)
def nearest_nonnegative_total(s, n):
    """The nearest valid total: negative values become 0."""
    return np.array([max(s[0], 0.0)])


#: numba compiles a constant array into a function's code up to this size only; a closure
#: over a larger one is read through a pointer of the process, and numba then refuses (with
#: a warning) to cache the function on disk.
FROZEN_ARRAY_BYTES = 10 ** 6


def closure_jit(*arrays):
    """``numba.njit(nogil=True)`` for a closure of a model factory over numbers and
    ``arrays``: cached on disk (numba keys a closure by its captured values), unless an
    array is too large to be compiled into the code."""
    return numba.njit(nogil=True,
                      cache=all(np.asarray(a).nbytes <= FROZEN_ARRAY_BYTES for a in arrays))
