r"""The record sampler's entries path: statistics given as (index, value) pairs.

A record of a histogram release touches a few of its ``size`` cells. When the statistic is
declared sparse (:func:`dawrap.declare_sparse`, at most ``nnz`` pairs per record) and the
mechanism's density is a sum over cells (:mod:`dawrap.mechanisms.separable`), a record update
touches only the union :math:`J` of the old and the new record's cells:

.. math:: T^\star_j = T_j + \delta_j,\ j \in J, \qquad
          \log\frac{g(s_{dp}, T^\star)}{g(s_{dp}, T)} = \sum_{j\in J}
          \ell_j(s_{dp,j}, T_j + \delta_j) - \ell_j(s_{dp,j}, T_j),

O(nnz) whatever ``size``. This module holds the pieces outside the sweep itself
(:func:`dawrap.samplers.record.entries_sweep`, bound by
:func:`dawrap.samplers.record.bind_chain`): merging pairs into the touched set, the running
sums from scratch and their consistency check in O(n nnz + size), and the checks of a
user's entries against the dense statistic, before a run and at every
refresh (see the comment above :data:`DENSE_CHECK_CELLS` for why a lie cannot go unnoticed).

Every index is checked before it is used: numba does not check bounds, and an index outside
the statistic would otherwise write into unrelated memory.
"""
from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .status import OK, BAD_ENTRIES, BAD_DRIFT, BAD_RECORD_SUPPORT
from ..compile.templates import slot

__all__ = ["merge_entries", "entries_sums", "entries_consistency", "check_entries",
           "compared_before_a_run", "DENSE_CHECK_CELLS", "REFRESH_CHECK_CELLS", "EntriesError", "guarded_pairs", "arm_pairs", "broken_pairs",
           "PAIRS_GUARD", "prefetch", "PREFETCH_AHEAD", "PREFETCH_FROM_CELLS"]

# The slots of the templates below, bound per model with the record sampler's
# (dawrap.samplers.record.bind_chain, which says what each is).
ENTRIES = slot("(x_i, s_dp, index, value) -> count")
MODEL_ENTRIES = slot("(x_i, index, value) -> count")
MODEL_STAT = slot("(x_i, out)")
MECH_STAT = slot("(x_i, s_dp, out)")
RECORD_SUPPORT = slot("(x_i) -> bool")
MECH_STAT_SIZE = slot("int: floats of the mechanism's statistic")
MODEL_STAT_SIZE = slot("int: floats of the model's statistic")
NNZ = slot("int: most pairs of ENTRIES")
MODEL_NNZ = slot("int: most pairs of MODEL_ENTRIES (0: dense)")

#: Pairs after the ``nnz`` an entries function may write that a check watches: one that
#: writes more pairs than it declared lands there (and is caught) instead of in unrelated
#: memory (up to this many extra pairs; numba checks no bounds).
PAIRS_GUARD = 16
_INDEX_GUARD = -(2 ** 62) - 7  # what the guard zones hold; no entries function writes these
_VALUE_GUARD = -7.0e307


#: While the systematic-scan entries sweep updates record ``i``, it asks (:func:`prefetch`)
#: for the per-cell rows of the cells of record ``i + PREFETCH_AHEAD``: that record's value
#: is known, so its rows arrive while the sweep waits on the proposed cell's, which the
#: generator draws and which cannot be fetched ahead (``benchmarks/cell_layout.py``).
PREFETCH_AHEAD = 4
#: The sweep prefetches only for statistics of at least this many cells, whose ``(size, 4)``
#: block (1 MB here) no longer fits the caches nearest the core; smaller ones compile
#: without it (the size is a compile-time constant).
PREFETCH_FROM_CELLS = 1 << 15


@intrinsic
def prefetch(typingctx, array, index):
    """Ask the CPU to bring the cache line holding element ``index`` of ``array``'s flat
    data (a C-contiguous array) closer, for reading: an ``llvm.prefetch`` hint, which never
    blocks and never faults (an address outside the array is harmless), and changes no
    value."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        ptr = builder.gep(data, [args[1]])
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])  # read, keep in all levels, data
        return context.get_dummy_value()

    return types.void(array, index), codegen


class EntriesError(ValueError):
    """A sparse statistic's entries function broke its contract (a count outside 0..nnz,
    more pairs written than nnz, or an index outside the statistic)."""


@numba.njit(nogil=True, cache=True)
def guarded_pairs(nnz):
    """``(index, value)`` buffers of ``nnz`` pairs followed by :data:`PAIRS_GUARD` watched
    ones: hand ``index[:nnz]`` and ``value[:nnz]`` to the entries function."""
    return np.empty(nnz + PAIRS_GUARD, np.int64), np.empty(nnz + PAIRS_GUARD)


@numba.njit(nogil=True, cache=True)
def arm_pairs(index, value, nnz):
    """Fill the guard zones of :func:`guarded_pairs`' buffers (before each call)."""
    for a in range(nnz, index.shape[0]):
        index[a] = _INDEX_GUARD
        value[a] = _VALUE_GUARD


@numba.njit(nogil=True, cache=True)
def broken_pairs(count, index, value, nnz, size):
    """Whether the entries call that returned ``count`` into :func:`guarded_pairs`' armed
    buffers broke its contract, as :func:`entries_error`'s ``why``: 0 it did not, 1 a count
    outside ``0..nnz`` or a pair written past ``nnz``, 2 an index outside ``0..size-1``."""
    for a in range(nnz, index.shape[0]):
        if index[a] != _INDEX_GUARD or value[a] != _VALUE_GUARD:
            return 1
    if count < 0 or count > nnz:
        return 1
    for a in range(count):
        if index[a] < 0 or index[a] >= size:
            return 2
    return 0


@numba.njit(nogil=True, cache=True)
def merge_entries(count, index, value, sign, nnz, size, touched, delta, used):
    """Add ``sign * value[a]`` at ``index[a]`` (``a < count``) into the ``used`` pairs
    ``(touched, delta)``; returns the new number of pairs, or -1 when ``count`` is outside
    ``0..nnz`` or an index outside ``0..size-1``. O(count * used): both are at most a few."""
    if count < 0 or count > nnz:
        return -1
    for a in range(count):
        j = index[a]
        if j < 0 or j >= size:
            return -1
        b = 0
        while b < used and touched[b] != j:
            b += 1
        if b == used:
            touched[b] = j
            delta[b] = 0.0
            used += 1
        delta[b] += sign * value[a]
    return used


def density_change_of(log_density):
    r"""The compiled ``(s_dp, total, touched, delta, used, params) -> change``: the log
    density's change :math:`\sum_{j \in J} \ell_j(s_j, T_j + \delta_j) - \ell_j(s_j, T_j)`
    over the ``used`` pairs ``(touched, delta)`` of :func:`merge_entries`, for the
    mechanism's separable ``coordinate_log_density`` ``log_density``: what a move that
    changes records outside the sweep weighs (the sweep has its own copy, inlined into its
    loop). A closure rather than a function taking ``log_density``: numba cannot cache on
    disk a function that a compiled function is passed to, and warns on every run."""

    @numba.njit(nogil=True)
    def density_change(s_dp, total, touched, delta, used, params):
        change = 0.0
        for a in range(used):
            if delta[a] != 0.0:
                j = touched[a]
                change += (log_density(s_dp[j], total[j] + delta[a], j, params)
                           - log_density(s_dp[j], total[j], j, params))
        return change

    return density_change


@numba.njit(nogil=True, cache=True)
def _scatter(count, index, value, nnz, out, magnitude):
    """``out[index[a]] += value[a]`` (and ``|value[a]|`` into ``magnitude``); False on a
    count or an index out of range (then nothing is written)."""
    if count < 0 or count > nnz:
        return False
    for a in range(count):
        if index[a] < 0 or index[a] >= out.shape[0]:
            return False
    for a in range(count):
        out[index[a]] += value[a]
        magnitude[index[a]] += abs(value[a])
    return True


def entries_sums(x, s_dp, check_support):
    """The running sums from scratch through the entries: ``(stats, total, stats_abs,
    total_abs, status)``, with the absolute sums (plus one) that bound rounding. A model
    statistic without a sparse declaration is summed densely (O(stat_size) per record)."""
    stats, total = np.zeros(MODEL_STAT_SIZE), np.zeros(MECH_STAT_SIZE)
    stats_abs, total_abs = np.ones(MODEL_STAT_SIZE), np.ones(MECH_STAT_SIZE)
    index = np.empty(max(NNZ, MODEL_NNZ, 1), np.int64)
    value = np.empty(index.shape[0])
    buf = np.empty(MODEL_STAT_SIZE)
    status = OK
    for i in range(x.shape[0]):
        if check_support and status == OK and not RECORD_SUPPORT(x[i]):
            status = BAD_RECORD_SUPPORT
        if not _scatter(ENTRIES(x[i], s_dp, index, value), index, value, NNZ, total,
                        total_abs):
            return stats, total, stats_abs, total_abs, BAD_ENTRIES
        if MODEL_NNZ > 0:
            if not _scatter(MODEL_ENTRIES(x[i], index, value), index, value, MODEL_NNZ,
                            stats, stats_abs):
                return stats, total, stats_abs, total_abs, BAD_ENTRIES
        elif MODEL_STAT_SIZE > 0:
            MODEL_STAT(x[i], buf)
            for j in range(MODEL_STAT_SIZE):
                stats[j] += buf[j]
                stats_abs[j] += abs(buf[j])
    return stats, total, stats_abs, total_abs, status


@numba.njit(nogil=True, cache=True)
def _agrees(running, fresh, magnitude, tolerance):
    for j in range(running.shape[0]):
        if not abs(running[j] - fresh[j]) <= tolerance * magnitude[j]:
            return False
    return True


# Entries that disagree with the dense statistic would make the sampler target another
# posterior, silently (an ignored release cell). Comparing one record costs O(size): the dense
# statistic writes every cell. So the comparison is made in two places, and cannot miss a lie
# forever:
#
# * before the run (check_entries, on the starting database and the records drawn by the
#   probes), for the first occurrence of every distinct record (a pure statistic gives equal
#   records equal entries): sound for every value the run starts from, as long as those
#   comparisons fit in DENSE_CHECK_CELLS (about 0.1 s); beyond, as many distinct records as
#   fit, evenly spread;
# * at every refresh of the running sums (REFRESH_EVERY iterations), records of the current
#   imputed database at positions drawn from a hash of the chain's state (never from its
#   generator: the draws stay those of an unchecked run), as many as fit in
#   REFRESH_CHECK_CELLS (every record, at every refresh, for n * size up to 4 million). A
#   value the chain keeps imputing, in a fraction f of its database, escapes m probes with
#   probability (1 - f)^m per refresh: the lie is found as the run goes on, and a wrong
#   posterior cannot be returned without an error unless the lying value is as rare in the
#   chain as it was absent from its start.

#: Cells of the dense statistic computed at most before a run (2**27: about 0.1-0.5 s).
DENSE_CHECK_CELLS = 1 << 27
#: Cells of the dense statistic computed at most at each refresh (2**22: a few ms, against
#: the REFRESH_EVERY sweeps between refreshes).
REFRESH_CHECK_CELLS = 1 << 22


def entries_consistency(state, s_dp, tolerance):
    """:func:`dawrap.samplers.record.consistency` in O(n nnz + size), with the refresh's
    comparison of some records' entries with the dense statistic (above): ``(stats, total,
    status)``, ``BAD_ENTRIES`` for entries that disagree."""
    stats, total, stats_abs, total_abs, status = entries_sums(state.x, s_dp, True)
    if status == OK and not (_agrees(state.stats, stats, stats_abs, tolerance)
                             and _agrees(state.total, total, total_abs, tolerance)):
        status = BAD_DRIFT
    if status == OK:
        cells = MECH_STAT_SIZE + (MODEL_STAT_SIZE if MODEL_NNZ > 0 else 0)
        compare = sampled_records(state.x.shape[0], state_seed(state.theta, state.log_g),
                                  max(1, REFRESH_CHECK_CELLS // max(cells, 1)))
        if check_entries(state.x, s_dp, compare)[0] >= 0:
            status = BAD_ENTRIES
    return stats, total, status


@numba.njit(nogil=True, cache=True)
def _mix(h):
    """splitmix64's finaliser: every bit of the result depends on every bit of ``h``."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


@numba.njit(nogil=True, cache=True)
def state_seed(theta, log_g):
    """A hash of the chain's state (theta's and log g's bits), to choose records with."""
    bits = np.empty(theta.shape[0] + 1)
    bits[0] = log_g
    bits[1:] = theta
    h = np.uint64(0x9E3779B97F4A7C15)
    for b in bits.view(np.uint64):
        h = _mix(h ^ b)
    return h


@numba.njit(nogil=True, cache=True)
def sampled_records(n, seed, m):
    """A mask of ``n`` records: all of them when ``m >= n``, else ``m`` draws (with
    repetition) of positions from the hash sequence started at ``seed``."""
    compare = np.zeros(n, np.bool_)
    if m >= n:
        compare[:] = True
        return compare
    h = seed
    for _ in range(m):
        h = _mix(h + np.uint64(0x9E3779B97F4A7C15))
        compare[np.int64(h % np.uint64(n))] = True
    return compare


@numba.njit(nogil=True, cache=True)
def _scattered_agree(count, index, value, dense, scattered):
    """Whether the pairs add up to ``dense`` (exactly for counts; float values may be summed
    in another order)."""
    scattered[:] = 0.0
    for a in range(count):
        scattered[index[a]] += value[a]
    for j in range(dense.shape[0]):
        if not abs(dense[j] - scattered[j]) <= 1e-12 * (1.0 + abs(dense[j])):
            return False
    return True


def check_entries(x, s_dp, compare):
    """The first record of ``x`` whose entries are bad, as ``(index, which, why)``: ``which``
    1 for the model's entries, 2 for the mechanism's; ``why`` 1 for a count outside
    ``0..nnz`` or pairs written past ``nnz``, 2 for an index outside the statistic, 3 for
    entries that disagree with the dense statistic (compared on the records where the mask
    ``compare`` is True; the others' bounds only), 4 for a dense statistic that writes past
    its ``out`` (a guard zone after it). ``(-1, 0, 0)`` if none."""
    index, value = guarded_pairs(max(NNZ, MODEL_NNZ, 1))
    dense_t, scattered_t = np.empty(MECH_STAT_SIZE + PAIRS_GUARD), np.empty(MECH_STAT_SIZE)
    dense_s, scattered_s = np.empty(MODEL_STAT_SIZE + PAIRS_GUARD), np.empty(MODEL_STAT_SIZE)
    for i in range(x.shape[0]):
        arm_pairs(index, value, NNZ)
        count = ENTRIES(x[i], s_dp, index[:NNZ], value[:NNZ])
        why = broken_pairs(count, index, value, NNZ, MECH_STAT_SIZE)
        if why == 0 and compare[i]:
            _arm_floats(dense_t, MECH_STAT_SIZE)
            MECH_STAT(x[i], s_dp, dense_t[:MECH_STAT_SIZE])
            why = _compared(count, index, value, dense_t, scattered_t)
        if why != 0:
            return i, 2, why
        if MODEL_NNZ > 0:
            arm_pairs(index, value, MODEL_NNZ)
            count = MODEL_ENTRIES(x[i], index[:MODEL_NNZ], value[:MODEL_NNZ])
            why = broken_pairs(count, index, value, MODEL_NNZ, MODEL_STAT_SIZE)
            if why == 0 and compare[i]:
                _arm_floats(dense_s, MODEL_STAT_SIZE)
                MODEL_STAT(x[i], dense_s[:MODEL_STAT_SIZE])
                why = _compared(count, index, value, dense_s, scattered_s)
            if why != 0:
                return i, 1, why
    return -1, 0, 0


@numba.njit(nogil=True, cache=True)
def _arm_floats(buf, size):
    for j in range(size, buf.shape[0]):
        buf[j] = _VALUE_GUARD


@numba.njit(nogil=True, cache=True)
def _compared(count, index, value, dense, scattered):
    """:func:`check_entries`' ``why`` for pairs compared with ``dense`` (its first
    ``scattered.shape[0]`` values, then a guard zone): 4, 3 or 0."""
    size = scattered.shape[0]
    for j in range(size, dense.shape[0]):
        if dense[j] != _VALUE_GUARD:
            return 4
    return 0 if _scattered_agree(count, index, value, dense[:size], scattered) else 3


def compared_before_a_run(x, cells: int) -> np.ndarray:
    """The mask of the records of ``x`` that :func:`check_entries` compares with the dense
    statistic before a run: the first occurrence of every distinct record, all of them when
    they cost at most :data:`DENSE_CHECK_CELLS` (``cells`` per record), else as many as do,
    evenly spread over the distinct records."""
    _, first = np.unique(x[:, 0] if x.shape[1] == 1 else x, axis=None if x.shape[1] == 1
                         else 0, return_index=True)  # the 1-d sort is faster
    first.sort()
    budget = max(1, DENSE_CHECK_CELLS // max(cells, 1))
    if first.shape[0] > budget:
        first = first[np.linspace(0, first.shape[0] - 1, budget).astype(np.int64)]
    compare = np.zeros(x.shape[0], np.bool_)
    compare[first] = True
    return compare


def entries_fields(model, mechanism) -> dict:
    """The :class:`~dawrap.samplers.record.RecordFunctions` fields of the entries path for
    ``model`` and ``mechanism``: empty (the dense path) unless the mechanism is separable and
    its statistic declared sparse (:attr:`dawrap.Mechanism.sparse`). The model's statistic
    uses its own declaration, if any, else it is updated densely."""
    from ..mechanisms.separable import sparse_form

    form = mechanism.sparse
    if form is None:
        return {}
    fields = {"entries": form.entries, "nnz": form.nnz,
              "coordinate_log_density": mechanism.coordinate_log_density}
    model_form = sparse_form(model.user_model_stat) if model.stat_size else None
    if model_form is not None:
        fields.update(model_entries=model_form.entries, model_nnz=model_form.nnz)
    return fields


def entries_error(i: int, which: int, why: int, where: str, mechanism) -> str:
    """The message for :func:`check_entries`'s finding ``(i, which, why)`` on ``where``."""
    name = "" if mechanism is None else f" {mechanism.name}"
    func = ("the model statistic's entries" if which == 1
            else f"the entries of the{name} mechanism's statistic")
    problem = {1: "returned a count outside 0..nnz, or wrote more pairs than nnz",
               2: "wrote an index outside the statistic",
               3: "disagree with the dense statistic (declare_sparse must describe the same "
                  "values)",
               4: "could not be compared: the dense statistic writes past the end of out"}[why]
    return f"{func} {problem} on record {i} of {where}"
