r"""The census model's pair move: two persons of the same unit of a coarser level exchange
their cells (:mod:`dawrap.models.census`, ``pair_moves``).

Why. A release that is precise at a coarse level (a nation or state table with sigma of
about one count) pins that level's cell totals. The record sweep changes one person's cell
at a time, which moves those totals by one, and a precise release then rejects most such
changes (a log acceptance of about -1 to -3 at sigma 0.71): the finest units' allocations
drift slowly and their worst probabilities mixed with a bulk ESS of 1-10 in 1000 draws
(``benchmarks/parallel_mixing.py``). An exchange keeps every total of the level the pair
shares and of all coarser levels, so the precise releases do not oppose it.

The move. Per iteration, ``rate * n`` proposals, one for each of the persons from a random
place in storage order on (wrapping round): for person :math:`i`, a coarser level :math:`l`
uniformly and a person :math:`j` uniformly among those whose finest unit lies in the same
unit of level :math:`l` as :math:`i`'s (:math:`i` included). The proposal swaps their
cells, :math:`(u_i, c_i), (u_j, c_j) \to (u_i, c_j), (u_j, c_i)`; it is symmetric (from the
swapped database the same :math:`j` is drawn with the same probability: the persons' units,
and so the unit :math:`j` is drawn from, do not change), so Metropolis-Hastings accepts with

.. math:: \min\Big(1, \frac{p_{r(u_i), c_j}\, p_{r(u_j), c_i}}{p_{r(u_i), c_i}\,
          p_{r(u_j), c_j}}\; \frac{g(s_{dp} \mid T')}{g(s_{dp} \mid T)}\Big),

with :math:`r(u)` the row of the finest prior level's probabilities of unit :math:`u` and
:math:`T' - T` the two records' changes of the mechanism's statistic, merged (the cells both
touch, e.g. their shared tract's, cancel). The density ratio is taken over those cells only,
with the mechanism's separable density, so a proposal costs O(queries), whatever the number
of units. Each step leaves :math:`p(x \mid \theta, s_{dp})` invariant (it is reversible
with respect to it), so does their sequence, whatever its order: the move is a
Metropolis-within-Gibbs step of the records given theta, run after theta's kernel and
before the record sweeps. The records' units do not change, so neither do the shares of a
latent finest unit. Building the persons' index by unit costs O(n + units) per iteration.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from dawrap.extend import OK, GroupMove, Move, MoveBuilder

from .moves import SparseRelease, proposals, serial_move, sparse_release
from .._shared import closure_jit

__all__ = ["RATE", "PINNED_SIGMA", "auto_rate", "pair_move", "UnitRanges", "unit_ranges"]

#: Proposals per person and iteration: each proposal involves two persons, so 0.5 gives
#: every person one proposal on average.
RATE = 0.5

#: ``pair_moves="auto"`` runs the move at :data:`RATE` when a release above the finest level
#: has noise sd at most this: a person's change of cell then moves two of that release's
#: cells by one, accepted with probability about :math:`e^{-1/\sigma^2}` (0.64 at 1.5, 0.14
#: at the 0.71 of ``benchmarks/results/census_pairs.md``, where the move multiplied the
#: worst ESS per second by 36). Above it the record sweep moves those totals well enough,
#: and the move, about twice a sweep's time at 10^6 persons, would not pay.
PINNED_SIGMA = 1.5


def auto_rate(mechanism, finest: int) -> float:
    """:data:`RATE` when a query of ``mechanism`` (a census release) above level ``finest``
    has noise sd at most :data:`PINNED_SIGMA`, else 0 (and 0 for another mechanism).

    Examples
    --------
    >>> from dawrap.models import census
    >>> from dawrap.models.census.pairs import auto_rate
    >>> geo = census.Geography({"state": [0, 0, 1], "block": [0, 1, 2]}, 2)
    >>> precise = census.discrete_gaussian(geo, [census.query("block", rho=0.5),
    ...                                          census.query("state", rho=2.0)])
    >>> auto_rate(precise, 1), auto_rate(census.discrete_gaussian(
    ...     geo, [census.query("state", rho=0.1)]), 1)
    (0.5, 0.0)
    """
    from .release import layout_of

    layout, sigmas = layout_of(mechanism), getattr(mechanism, "sigmas", None)
    if layout is None or sigmas is None:
        return 0.0
    coarse = [s for s, level in zip(sigmas, layout.levels) if level < finest]
    return RATE if coarse and min(coarse) <= PINNED_SIGMA else 0.0


class UnitRanges(NamedTuple):
    """The finest units in nested order (``position[u]``: finest unit ``u``'s place in it)
    and, for every coarser level ``l`` and unit ``v``, the range ``[lo[l, v], hi[l, v])`` of
    that order holding ``v``'s finest units (:func:`unit_ranges`)."""
    position: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def unit_ranges(ancestors: np.ndarray) -> UnitRanges:
    """The :class:`UnitRanges` of a geography with ``ancestors`` (levels x finest units).

    Examples
    --------
    Two units above three finest ones, unit 1 holding finest units 0 and 2:

    >>> import numpy as np
    >>> from dawrap.models.census.pairs import unit_ranges
    >>> position, lo, hi = unit_ranges(np.array([[1, 0, 1], [0, 1, 2]]))
    >>> position.tolist(), lo.tolist(), hi.tolist()
    ([1, 0, 2], [[0, 1]], [[1, 3]])
    """
    ancestors = np.asarray(ancestors, np.int64)
    order = np.lexsort(ancestors[::-1])  # coarsest level first, then the next, ...
    position = np.empty(ancestors.shape[1], np.int64)
    position[order] = np.arange(order.shape[0])
    levels = ancestors.shape[0] - 1
    width = int(ancestors[:levels].max()) + 1 if levels else 0
    lo = np.full((levels, width), order.shape[0], np.int64)
    hi = np.zeros((levels, width), np.int64)
    for l in range(levels):
        np.minimum.at(lo[l], ancestors[l, order], np.arange(order.shape[0]))
        np.maximum.at(hi[l], ancestors[l, order], np.arange(1, order.shape[0] + 1))
    return UnitRanges(position, lo, hi)


#: How messages name the move.
NAME = "census pair move (census.model(..., pair_moves=0) turns it off)"


def pair_move(ancestors: np.ndarray, prior_unit: np.ndarray, cells: int,
              rate="auto") -> MoveBuilder | None:
    """The pair move (module docstring) of a geography with ``ancestors`` (levels x finest
    units) whose finest unit ``u`` draws its cell from row ``prior_unit[u]`` of ``p`` (at
    the start of theta), built for the run's mechanism with ``rate`` proposals per person
    and iteration (``"auto"``: :func:`auto_rate`); None with one level or ``rate`` 0.
    The mechanism must have a sparse statistic with a separable density (the census
    releases do); with another the builder gives no move."""
    ancestors = np.asarray(ancestors, np.int64)
    if ancestors.shape[0] < 2 or rate == 0:
        return None
    ranges = unit_ranges(ancestors)
    above = np.ascontiguousarray(ancestors[:-1])
    prior_unit = np.asarray(prior_unit, np.int64)

    def build(mechanism):
        release = sparse_release(mechanism)
        if release is None:
            return None
        used = auto_rate(mechanism, ancestors.shape[0] - 1) if rate == "auto" else rate
        if used == 0:
            return None
        jit = closure_jit(above, *ranges, prior_unit)
        run = _group_run(jit, above, ranges, prior_unit, int(cells), float(used), release)
        prepare = _no_table(jit)
        return Move(serial_move(jit, prepare, run, 0), NAME,
                    GroupMove(prepare, run, _any_partition, _no_theta),
                    frees_shared_cells=True)

    return MoveBuilder(build, NAME)


def _no_table(jit):
    @jit
    def prepare(theta):  # the move reads theta itself: nothing to build
        return np.zeros(0)

    return prepare


def _any_partition(x, partition):
    """Any partition: a group's persons exchange cells among themselves."""
    return np.zeros(0, np.int64)


def _no_theta(layout, g):
    return np.zeros(0, np.int64)  # it draws no part of theta


def _group_run(jit, above, ranges: UnitRanges, prior_unit, cells: int, rate: float,
               release: SparseRelease):
    """The group form's compiled ``run``: group ``group.g``'s proposals, its persons
    ``members`` exchanging cells among themselves (the whole database is group 0 of one,
    owning every cell: :func:`~dawrap.models.census.moves.serial_move`)."""
    position, lo, hi = ranges
    levels, units = above.shape[0], position.shape[0]
    scratch, merge, weigh = proposals(release, 2)

    @jit
    def run(rng, theta, table, x, total, layout, inputs, group):
        # In a group, j is drawn among the group's persons of i's unit: from the exchanged
        # database the same j is drawn with the same probability, so the proposal stays
        # symmetric, whichever groups share the unit.
        s_dp, members = inputs.s_dp, group.members
        n = members.shape[0]
        # the persons by finest unit, units in nested order: a unit of any coarser level
        # holds a contiguous run of ranks (a counting sort, O(n + units)); each rank's unit
        # and cell packed in one number, so drawing j reads one entry of one compact array
        # (at 10^6 persons a read of x[j] was a cache miss)
        start = np.zeros(units + 1, np.int64)
        for a in range(n):
            start[position[int(x[members[a], 0])] + 1] += 1
        for k in range(units):
            start[k + 1] += start[k]
        fill = start[:-1].copy()
        person, rank_of = np.empty(n, np.int64), np.empty(n, np.int64)
        packed = np.empty(n, np.int64)
        for a in range(n):
            i = members[a]
            k = position[int(x[i, 0])]
            person[fill[k]], rank_of[a] = i, fill[k]
            packed[fill[k]] = int(x[i, 0]) * cells + int(x[i, 1])
            fill[k] += 1
        work = scratch()
        log_g_change = 0.0
        proposed, accepted = 0, 0
        # The first persons in storage order, from a random place on (wrapping round): each
        # step, i fixed and j uniform in i's unit, is reversible on its own, so any order of
        # them leaves the law invariant; this one reads x[i] in sequence (at 10^6 persons a
        # uniformly drawn i cost a cache miss, and the move 3x a sweep).
        first = rng.integers(0, n)
        for step in range(int(rate * n)):
            a = (first + step) % n
            i = members[a]
            l = rng.integers(0, levels)
            u, ci = int(x[i, 0]), int(x[i, 1])
            v = above[l, u]
            lo_rank, hi_rank = start[lo[l, v]], start[hi[l, v]]
            r = lo_rank + rng.integers(0, hi_rank - lo_rank)
            uj, cj = packed[r] // cells, packed[r] % cells
            if ci == cj or uj == u:  # the same database: nothing to weigh
                continue
            proposed += 1
            ri, rj = prior_unit[u] * cells, prior_unit[uj] * cells
            after = theta[ri + cj] * theta[rj + ci]
            if after <= 0.0:
                continue
            log_ratio = math.log(after) - math.log(theta[ri + ci] * theta[rj + cj])
            used = merge(work, s_dp, uj, cj, ci, merge(work, s_dp, u, ci, cj, 0))
            status, foreign, change, accept = weigh(rng, log_ratio, used, total, work, inputs,
                                                    group)
            if status != OK:
                return accepted, proposed, status, i, foreign, log_g_change
            if accept:
                x[i, 1] = cj
                packed[rank_of[a]] = u * cells + cj
                x[person[r], 1] = ci
                packed[r] = uj * cells + ci
                log_g_change += change
                accepted += 1
        return accepted, proposed, OK, -1, -1, log_g_change

    return run
