"""Small compiled array loops shared by the samplers, and the flat form of a kernel's state.

Element loops rather than slice assignment or ``+=`` on arrays: those compile numba's
shape-mismatch error path with its string formatting, seconds of compile time for nothing.

A theta kernel's or a move's state is a NamedTuple of float64 arrays (nested NamedTuples
allowed), or one float64 array: typed fields in the compiled code, one flat vector only in a
checkpoint (:func:`flatten_state`, :func:`unflatten_state`).
"""
from __future__ import annotations

import numba
import numpy as np

__all__ = ["copy_into", "add_into", "all_finite", "flatten_state", "unflatten_state",
           "is_state"]


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


def _leaves(state):
    """The arrays of a state, depth first in field order."""
    if isinstance(state, tuple):
        for field in state:
            yield from _leaves(field)
    else:
        yield state


def is_state(state) -> bool:
    """Whether ``state`` is a kernel state: a float64 array, or a NamedTuple whose fields are
    float64 arrays or such NamedTuples."""
    if isinstance(state, tuple) and not hasattr(state, "_fields"):
        return False
    return all(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in _leaves(state))


def flatten_state(state) -> np.ndarray:
    """A kernel state as one float64 vector (its arrays raveled, depth first in field order),
    for a checkpoint.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.samplers.arrays import flatten_state, unflatten_state
    >>> from dawrap.samplers.kernels import rw_init_state
    >>> state = rw_init_state(np.array([1.0, 2.0]), np.array([0.1]))
    >>> flat = flatten_state(state)
    >>> flat.shape                        # 4 scalars, the mean, two 2 x 2 matrices
    (14,)
    >>> again = unflatten_state(flat, rw_init_state(np.zeros(2), np.array([0.1])))
    >>> again.mean
    array([1., 2.])
    """
    parts = [np.ravel(a) for a in _leaves(state)]
    return np.concatenate(parts) if parts else np.empty(0)


def unflatten_state(flat: np.ndarray, like):
    """The state of the structure and shapes of ``like`` (a fresh state of the same kernel)
    holding the values of ``flat`` (:func:`flatten_state`'s vector); a ValueError when the
    sizes differ."""
    sizes = [a.size for a in _leaves(like)]
    if flat.ndim != 1 or flat.shape[0] != sum(sizes):
        raise ValueError(f"a saved kernel state of shape {flat.shape} does not fit this "
                         f"kernel's state of {sum(sizes)} values")
    position = [0]

    def build(template):
        if isinstance(template, tuple):
            return type(template)(*(build(field) for field in template))
        start = position[0]
        position[0] += template.size
        return flat[start:position[0]].reshape(template.shape).astype(np.float64, copy=True)

    return build(like)
