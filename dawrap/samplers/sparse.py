r"""The record sampler's sparse path: statistics given as (index, value) pairs.

A record of a histogram release touches a few of its ``size`` cells. When the statistic is
declared sparse (:func:`dawrap.declare_sparse`, at most ``nnz`` pairs per record) and the
mechanism's density is a sum over cells (:mod:`dawrap.mechanisms.separable`), a record update
touches only the union :math:`J` of the old and the new record's cells:

.. math:: T^\star_j = T_j + \delta_j,\ j \in J, \qquad
          \log\frac{g(s_{dp}, T^\star)}{g(s_{dp}, T)} = \sum_{j\in J}
          \ell_j(s_{dp,j}, T_j + \delta_j) - \ell_j(s_{dp,j}, T_j),

O(nnz) whatever ``size``. This module holds the pieces outside the sweep itself
(:func:`dawrap.samplers.record.make_sweep` with ``sparse=True``): merging pairs into the
touched set, the running sums from scratch and their consistency check in O(n nnz + size),
and the check of a user's entries against the dense statistic before a run.

Every index is checked before it is used: numba does not check bounds, and an index outside
the statistic would otherwise write into unrelated memory.
"""
from __future__ import annotations

import numba
import numpy as np

from .status import OK, BAD_ENTRIES, BAD_DRIFT, BAD_RECORD_SUPPORT

__all__ = ["merge_entries", "sparse_sums", "sparse_consistency", "check_entries",
           "ENTRIES_COMPARED", "EntriesError", "guarded_pairs", "arm_pairs", "broken_pairs",
           "PAIRS_GUARD"]

# The names the templates below call, bound per model with the record sampler's
# (dawrap.samplers.record.bind_chain; placeholders here).
ENTRIES = MODEL_ENTRIES = MODEL_STAT = MECH_STAT = RECORD_SUPPORT = None
SIZE = STAT_SIZE = NNZ = MODEL_NNZ = 0

#: Records of the starting database whose entries are compared with the dense statistic
#: (each comparison costs O(size); the bounds of every record's entries are checked).
ENTRIES_COMPARED = 64


#: Pairs after the ``nnz`` an entries function may write that a check watches: one that
#: writes more pairs than it declared lands there (and is caught) instead of in unrelated
#: memory (up to this many extra pairs; numba checks no bounds).
PAIRS_GUARD = 16
_INDEX_GUARD = -(2 ** 62) - 7  # what the guard zones hold; no entries function writes these
_VALUE_GUARD = -7.0e307


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


def sparse_sums(x, s_dp, check_support):
    """The running sums from scratch through the entries: ``(stats, total, stats_abs,
    total_abs, status)``, with the absolute sums (plus one) that bound rounding. A model
    statistic without a sparse declaration is summed densely (O(stat_size) per record)."""
    stats, total = np.zeros(STAT_SIZE), np.zeros(SIZE)
    stats_abs, total_abs = np.ones(STAT_SIZE), np.ones(SIZE)
    index = np.empty(max(NNZ, MODEL_NNZ, 1), np.int64)
    value = np.empty(index.shape[0])
    buf = np.empty(STAT_SIZE)
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
        elif STAT_SIZE > 0:
            MODEL_STAT(x[i], buf)
            for j in range(STAT_SIZE):
                stats[j] += buf[j]
                stats_abs[j] += abs(buf[j])
    return stats, total, stats_abs, total_abs, status


@numba.njit(nogil=True, cache=True)
def _agrees(running, fresh, magnitude, tolerance):
    for j in range(running.shape[0]):
        if not abs(running[j] - fresh[j]) <= tolerance * magnitude[j]:
            return False
    return True


def sparse_consistency(state, s_dp, tolerance):
    """:func:`dawrap.samplers.record.consistency` in O(n nnz + size): ``(stats, total,
    status)``."""
    stats, total, stats_abs, total_abs, status = sparse_sums(state.x, s_dp, True)
    if status == OK and not (_agrees(state.stats, stats, stats_abs, tolerance)
                             and _agrees(state.total, total, total_abs, tolerance)):
        status = BAD_DRIFT
    return stats, total, status


def check_entries(x, s_dp, compared):
    """The first record of ``x`` whose entries are bad, as ``(index, which, why)``: ``which``
    1 for the model's entries, 2 for the mechanism's; ``why`` 1 for a count outside
    ``0..nnz``, 2 for an index outside the statistic, 3 for entries that disagree with the
    dense statistic (compared on the first ``compared`` records). ``(-1, 0, 0)`` if none."""
    nnz = max(NNZ, MODEL_NNZ, 1)
    index, value = np.empty(nnz, np.int64), np.empty(nnz)
    dense_t, sparse_t = np.empty(SIZE), np.empty(SIZE)
    dense_s, sparse_s = np.empty(STAT_SIZE), np.empty(STAT_SIZE)
    for i in range(x.shape[0]):
        for which in (2, 1):
            if which == 1 and MODEL_NNZ == 0:
                continue
            m = SIZE if which == 2 else STAT_SIZE
            count = (ENTRIES(x[i], s_dp, index, value) if which == 2
                     else MODEL_ENTRIES(x[i], index, value))
            if count < 0 or count > (NNZ if which == 2 else MODEL_NNZ):
                return i, which, 1
            for a in range(count):
                if index[a] < 0 or index[a] >= m:
                    return i, which, 2
            if i < compared:
                dense = dense_t if which == 2 else dense_s
                scattered = sparse_t if which == 2 else sparse_s
                if which == 2:
                    MECH_STAT(x[i], s_dp, dense)
                else:
                    MODEL_STAT(x[i], dense)
                scattered[:] = 0.0
                for a in range(count):
                    scattered[index[a]] += value[a]
                for j in range(m):
                    # Exact for counts; float values may be summed in another order.
                    if not abs(dense[j] - scattered[j]) <= 1e-12 * (1.0 + abs(dense[j])):
                        return i, which, 3
    return -1, 0, 0


def sparse_fields(model, mechanism) -> dict:
    """The :class:`~dawrap.samplers.record.RecordFunctions` fields of the sparse path for
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
    problem = {1: "returned a count outside 0..nnz (more pairs than declared, or negative)",
               2: "wrote an index outside the statistic",
               3: "disagree with the dense statistic (declare_sparse must describe the same "
                  "values)"}[why]
    return f"{func} {problem} on record {i} of {where}"
