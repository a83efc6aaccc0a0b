r"""A model's records move run inside the groups of a threaded or cluster chain.

A model's extra move (``Model(records_move=...)``, e.g. the census model's collapsed move)
changes records between theta's step and the record sweeps. In a chain whose sweep runs in
groups (:mod:`dawrap.samplers.parallel`) a move written for the whole database would run on
one thread, between the threaded sweeps, and could not run where the records are held by
dask workers. A move that also has a *group form* (:class:`GroupMove`, set as the compiled
move's ``group`` attribute) runs in every group at once instead, by the sweep's own scheme:

(a) the shared cells' pieces given the records (and, for Laplace or geometric noise, their
    latent variances), with the chain's generator, as before a sweep;
(b) every group's move given the pieces: group :math:`g` changes only its own records, weighs
    the cells it owns with the mechanism's density and the shared cells with its piece
    (:func:`group_density_change_of`), with its own generator;
(c) the pieces are discarded; the groups' partial totals of the shared cells are added in
    group order.

Given the pieces the groups' records are independent (the module docstring of
:mod:`dawrap.samplers.parallel`), so (b) is a move of each group's records given everything
else in the augmented posterior :math:`p(x, r \mid \theta, s)`, and (a)-(c) leave
:math:`p(x \mid \theta, s)` invariant when each group's move leaves its conditional invariant.
A move that also draws part of theta (the census move's fresh probabilities) may do so in a
group only for the parts no other group's records inform (``assign`` says which group draws
what, and refuses a partition that splits them).

The draws depend on the partition and the seed only, never on the number of threads or
workers: each group's move uses the group's generator, the pieces the chain's.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from .parallel import GroupInputs, GroupState

__all__ = ["GroupMove", "group_density_change_of", "apply_group_change", "whole_database"]


class GroupMove(NamedTuple):
    """The group form of a records move (module docstring).

    Attributes
    ----------
    prepare : ``(theta) -> table``
        numba-compiled: what every group's move reads from theta, built once per iteration
        (by the chain, or by each worker of a cluster).
    run : numba-compiled function (``nogil``)
        ``(rng, theta, table, x, total, layout, inputs, group) -> (accepted, proposed,
        status, record, cell, log_g_change)``: the move of group ``group.g``'s records
        ``group.members`` (``inputs`` a :class:`~dawrap.samplers.parallel.GroupInputs`,
        ``group`` a :class:`~dawrap.samplers.parallel.GroupState`), its shared cells weighed
        through its pieces (:func:`group_density_change_of`), its changes written by
        :func:`apply_group_change`; :func:`whole_database` gives the inputs of the move on
        the whole database (one group owning every cell). ``record`` and ``cell`` say where a record
        touched a cell of another group (``status`` then ``BAD_PARTITION``);
        ``log_g_change`` is the accepted changes' sum of the log density (the whole
        database's when run as one group).
    assign : ``(x, partition) -> layout or None``
        From the database and the :class:`~dawrap.samplers.parallel.Partition`: the array
        the groups' ``run`` reads (e.g. which group draws which row of theta), or None when
        the move cannot run in these groups (it then runs on the whole database, between the
        sweeps; a cluster chain leaves it out, or refuses it).
    theta_of : ``(layout, g) -> index array``
        The entries of theta group ``g``'s ``run`` writes (a cluster's workers send them back).
    """
    prepare: object
    run: object
    assign: object
    theta_of: object


def group_density_change_of(log_density):
    r"""The compiled ``(total, touched, delta, used, inputs, group) -> (change, cell)`` of a
    group's move: the log density's change over the ``used`` pairs ``(touched, delta)`` of
    :func:`~dawrap.samplers.entries_path.merge_entries`, a cell of the group's
    (``inputs.owner[j] == group.g``) by the mechanism's separable ``log_density``, a shared
    cell (``inputs.slot_of[j] = k >= 0``) by its piece, Gaussian of inverse sd
    ``inputs.piece_scale[k]`` around the group's partial total ``group.local_total[k]``:
    :math:`\tfrac12 a_k^2[(r_k - T_k)^2 - (r_k - T_k - \delta)^2]`. A cell of another group
    gives ``(nan, cell)``. With ``owner`` all ``g`` and ``slot_of`` all -1 it is the whole
    database's change, term for term as
    :func:`~dawrap.samplers.entries_path.density_change_of` (the same floats).

    Examples
    --------
    Group 0 moves a record from cell 0 (its own, released 3.0 under Gaussian noise of sd 1)
    into cell 1, shared, whose piece is 2.0 against the group's partial total 1.0 (pieces
    of sd 1): :math:`\ell_0(3, 1) - \ell_0(3, 2) = -1.5`, and :math:`\tfrac12(1^2 - 0^2)`
    for the piece.

    >>> import numpy as np
    >>> from dawrap.mechanisms.separable import gaussian_coordinate
    >>> from dawrap.samplers.group_moves import group_density_change_of
    >>> from dawrap.samplers.parallel import GroupInputs, GroupState
    >>> change_of = group_density_change_of(gaussian_coordinate)
    >>> inputs = GroupInputs(s_dp=np.array([3.0, 0.0]), params=np.array([1.0, 1.0]),
    ...                      owner=np.array([0, -1]), slot_of=np.array([-1, 0]),
    ...                      stats_owner=np.zeros(0, np.int64), piece_scale=np.array([1.0]))
    >>> group = GroupState(0, np.zeros(0, np.int64), local_total=np.array([1.0]),
    ...                    local_release=np.array([2.0]), stats_row=np.zeros(0),
    ...                    own_stats=np.zeros(0, np.int64))
    >>> change_of(np.array([2.0, 0.0]), np.array([0, 1]), np.array([-1.0, 1.0]), 2, inputs,
    ...           group)
    (-1.0, -1)
    """

    @numba.njit(nogil=True)
    def change_of(total, touched, delta, used, inputs, group):
        s_dp, params, owner, slot_of = inputs.s_dp, inputs.params, inputs.owner, inputs.slot_of
        piece_scale, g = inputs.piece_scale, group.g
        local_total, local_release = group.local_total, group.local_release
        change = 0.0
        for a in range(used):
            if delta[a] != 0.0:
                j = touched[a]
                k = slot_of[j]
                if k >= 0:
                    before = (local_release[k] - local_total[k]) * piece_scale[k]
                    after = (local_release[k] - local_total[k] - delta[a]) * piece_scale[k]
                    change += 0.5 * (before * before - after * after)
                elif owner[j] != g:
                    return math.nan, j
                else:
                    change += (log_density(s_dp[j], total[j] + delta[a], j, params)
                               - log_density(s_dp[j], total[j], j, params))
        return change, -1

    return change_of


@numba.njit(nogil=True, cache=True)
def apply_group_change(total, local_total, slot_of, touched, delta, used):
    """Write an accepted change: a shared cell into the group's partial total, a cell of
    the group's into the running ``total`` (no other group writes it)."""
    for a in range(used):
        k = slot_of[touched[a]]
        if k >= 0:
            local_total[k] += delta[a]
        else:
            total[touched[a]] += delta[a]


@numba.njit(nogil=True, cache=True)
def whole_database(x, s_dp, params):
    """The ``(inputs, group)`` of a records move's group form run on the whole database
    ``x`` as one group (group 0, owning every cell; no shared cell): the serial move."""
    size = s_dp.shape[0]
    nothing, no_cells = np.zeros(0), np.zeros(0, np.int64)
    inputs = GroupInputs(s_dp, params, np.zeros(size, np.int64), np.full(size, -1, np.int64),
                         no_cells, nothing)
    return inputs, GroupState(0, np.arange(x.shape[0]), nothing, nothing, nothing, no_cells)
