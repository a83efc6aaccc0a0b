"""Small compiled array loops shared by the samplers.

Element loops rather than slice assignment or ``+=`` on arrays: those compile numba's
shape-mismatch error path with its string formatting, seconds of compile time for nothing.
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["copy_into", "add_into", "all_finite"]


@numba.njit(nogil=True, cache=True)
def copy_into(dst, src):
    for j in range(dst.shape[0]):
        dst[j] = src[j]


@numba.njit(nogil=True, cache=True)
def add_into(dst, src):
    for j in range(dst.shape[0]):
        dst[j] += src[j]


@numba.njit(nogil=True, cache=True)
def all_finite(a):
    """``np.all(np.isfinite(a))`` without allocating an array the size of ``a``."""
    for v in a.ravel():
        if not np.isfinite(v):
            return False
    return True
