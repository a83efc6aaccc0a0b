"""Pieces the ready-made models share: hyperparameter checks, the valid region of a
non-negative total (Poisson and exponential records), the closures' compiler and the
sequence of two records moves."""
import math
import numbers
import os

import numba
import numpy as np

from dawrap.model.protocols import MoveBuilder
from dawrap.samplers.status import OK


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


def in_turn(first: MoveBuilder | None, second: MoveBuilder | None) -> MoveBuilder | None:
    """One ``records_move`` running ``first``'s move, then ``second``'s (either may be None,
    or build None for a mechanism). Each leaves the posterior invariant, so their sequence
    does. The acceptance rate reported is the second's (the first's when the second does not
    run). Of the moves built for a mechanism: optional when all are, frees shared cells when
    one does, named by them (set on the compiled move, see MoveBuilder)."""
    if first is None or second is None:
        return second if first is None else first

    def build(mechanism):
        built = [(move, builder) for move, builder in ((first.build(mechanism), first),
                                                       (second.build(mechanism), second))
                 if move is not None]
        if not built:
            return None
        for part, builder in built:  # what each part is (a chain may run them apart)
            for attr in ("frees_shared_cells", "optional", "name"):
                if not hasattr(part, attr):
                    setattr(part, attr, getattr(builder, attr))
        move = built[0][0] if len(built) == 1 else _sequence(built[0][0], built[1][0])
        # the moves one by one, for a chain that runs each in its groups (group_moves)
        move.parts = tuple(part for m, _ in built for part in getattr(m, "parts", (m,)))
        # what runs, said of the compiled move (it stands for the builder's: MoveBuilder)
        move.frees_shared_cells = any(b.frees_shared_cells for _, b in built)
        move.optional = all(b.optional for _, b in built)
        move.name = "; ".join(b.name for _, b in built)
        return move

    return MoveBuilder(build, f"{first.name}; {second.name}",
                       frees_shared_cells=first.frees_shared_cells or second.frees_shared_cells,
                       optional=first.optional and second.optional)


def _sequence(a, b):
    # cached on disk only if both moves are (one over a large array cannot be, and numba
    # would warn on each run that the sequence calling it cannot either)
    @numba.njit(nogil=True, cache=getattr(a, "disk_cached", False)
                and getattr(b, "disk_cached", False))
    def move(rng, state, s_dp, params, tuning):
        state, rate_a, status = a(rng, state, s_dp, params, tuning)
        if status != OK:
            return state, rate_a, status
        state, rate_b, status = b(rng, state, s_dp, params, tuning)
        return state, (rate_a if rate_b != rate_b else rate_b), status

    return move
