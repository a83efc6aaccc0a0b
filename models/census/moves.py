"""What the census model's records moves share (:mod:`dawrap.models.census.pairs`,
:mod:`dawrap.models.census.collapsed`): the release they weigh a proposal against
(:class:`SparseRelease`), a proposal's merged change of the release's statistic and the
Metropolis-Hastings decision on it (:func:`proposals`), and the serial move, the group form run on the
whole database as one group (:func:`serial_move`)."""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from dawrap.extend import (BAD_ENTRIES, BAD_PARTITION, BAD_RATIO, OK, RecordState,
                           apply_group_change, group_density_change_of, merge_entries,
                           whole_database)

__all__ = ["SparseRelease", "sparse_release", "Proposals", "proposals", "serial_move"]


class SparseRelease(NamedTuple):
    """A mechanism as a records move reads it: its sparse statistic's ``entries`` (at most
    ``nnz`` per record), its separable ``log_density`` (one coordinate's term) and its
    ``size``."""
    entries: object
    nnz: int
    log_density: object
    size: int


def sparse_release(mechanism) -> SparseRelease | None:
    """``mechanism`` as a :class:`SparseRelease`, or None when its statistic is not sparse or
    its density not separable (the moves then cannot weigh a proposal in O(queries))."""
    if mechanism.sparse is None or mechanism.coordinate_log_density is None:
        return None
    return SparseRelease(mechanism.sparse.entries, int(mechanism.sparse.nnz),
                         mechanism.coordinate_log_density, int(mechanism.size))


class Proposals(NamedTuple):
    """The compiled pieces of a move that weighs proposals moving ``persons`` persons' cells
    (:func:`proposals`), each inlined into the move's loop."""
    scratch: object  # () -> the arrays merge and weigh work in, made once per run
    merge: object    # (work, s_dp, unit, before, after, used) -> used (work: scratch())
    weigh: object    # (rng, log_ratio, used, total, work, inputs, group) -> (status,
    #                   cell, change, accepted)


def proposals(release: SparseRelease, persons: int) -> Proposals:
    """:class:`Proposals` against ``release``. ``merge`` adds to the ``used`` merged pairs
    ``(touched, delta)`` of the proposal's change of the release's statistic a person of
    ``unit`` moved from cell ``before`` to ``after`` (``used < 0``: the entries did not fit).
    ``weigh`` is the Metropolis-Hastings decision on the merged change: ``change`` is the
    log density's change (``BAD_ENTRIES`` when the entries did not fit; a cell of another
    group: ``BAD_PARTITION`` and that ``cell``; NaN: ``BAD_RATIO``), accepted with
    probability ``exp(log_ratio + change)``, the change then written to the totals."""
    entries, nnz, size = release.entries, release.nnz, release.size
    change_of = group_density_change_of(release.log_density)
    pairs = 2 * persons * nnz  # each person's entries before and after
    inline = numba.njit(nogil=True, inline="always")

    @inline
    def scratch():
        return (np.empty(nnz, np.int64), np.empty(nnz), np.empty(pairs, np.int64),
                np.empty(pairs), np.empty(2))

    @inline
    def merge(work, s_dp, unit, before, after, used):
        index, value, touched, delta, record = work
        record[0] = unit
        for sign, cell in ((-1.0, before), (1.0, after)):
            record[1] = cell
            if used >= 0:
                used = merge_entries(entries(record, s_dp, index, value), index, value, sign,
                                     nnz, size, touched, delta, used)
        return used

    @inline
    def weigh(rng, log_ratio, used, total, work, inputs, group):
        touched, delta = work[2], work[3]
        if used < 0:
            return BAD_ENTRIES, -1, 0.0, False
        change, foreign = change_of(total, touched, delta, used, inputs, group)
        if foreign >= 0:
            return BAD_PARTITION, foreign, 0.0, False
        log_alpha = log_ratio + change
        if log_alpha != log_alpha:
            return BAD_RATIO, -1, 0.0, False
        if log_alpha >= 0.0 or rng.random() < math.exp(log_alpha):
            apply_group_change(total, group.local_total, inputs.slot_of, touched, delta, used)
            return OK, -1, change, True
        return OK, -1, change, False

    return Proposals(scratch, merge, weigh)


def serial_move(jit, prepare, run, rows: int):
    """The move ``(rng, state, s_dp, params, tuning) -> (state, acceptance rate, status)`` on
    the whole database: the group form's ``run`` on one group that owns every cell (and
    every one of ``rows`` rows of theta the move draws), compiled by ``jit``."""

    @jit
    def move(rng, state, s_dp, params, tuning):
        theta, x, total = state.theta, state.x, state.total
        inputs, group = whole_database(x, s_dp, params)
        accepted, proposed, status, i, j, change = run(
            rng, theta, prepare(theta), x, total, np.zeros(rows, np.int64), inputs, group)
        if status != OK:
            return state, math.nan, status
        rate_seen = accepted / proposed if proposed else math.nan
        return RecordState(theta, x, state.stats, total, state.log_g + change,
                           state.kernel_state, state.move_state, state.clock,
                           state.cells), rate_seen, OK

    return move
