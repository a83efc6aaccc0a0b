"""Pieces the ready-made models share: hyperparameter checks, the valid region of a
non-negative total (Poisson and exponential records), the closures' compiler and the memory
check of a model's arrays."""
import math
import numbers
import os

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
    array is too large to be compiled into the code. The compiled function's
    ``disk_cached`` says which."""
    cache = all(np.asarray(a).nbytes <= FROZEN_ARRAY_BYTES for a in arrays)
    decorate = numba.njit(nogil=True, cache=cache)

    def jit(function):
        compiled = decorate(function)
        # whether it is cached on disk: a closure that calls it can be only if it is
        compiled.disk_cached = cache
        return compiled

    return jit


#: Bytes a model may need per entry of its largest hyperparameter or statistic array: the
#: Python tuple that keys the factory's cache (a float object and a slot, about 32 bytes),
#: the arrays made from it and the compiled chain's copies.
BYTES_PER_ENTRY = 64


def check_memory(entries: int, what: str) -> None:
    """Refuse, before anything is allocated, a model whose arrays of ``entries`` numbers
    cannot fit in this machine's memory (a mistyped size must not run for a minute and be
    killed, or end in a bare MemoryError). ``what`` names the argument and the arrays."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not known here: nothing to compare with
        return
    need = BYTES_PER_ENTRY * entries
    if need > total:
        raise ValueError(f"{what}: about {need / 1e9:.3g} GB of memory, more than this "
                         f"machine's {total / 1e9:.3g} GB")
