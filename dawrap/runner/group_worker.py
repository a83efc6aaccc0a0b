"""What one worker of a grouped chain holds and does: its groups' records, generators and
partial sums, and the named steps the chain runs on every worker
(:mod:`dawrap.runner.grouped`).

A worker is the same object on every backend: a thread of this process
(:mod:`dawrap.runner.backends.threads`, its records a view of the chain's database and its
running sums the chain's own arrays) or a dask actor on a cluster's worker
(:mod:`dawrap.runner.backends.dask`, its records and sums copies that live there). Each
step returns per group, in the order of the worker's groups, results of O(cells + theta)
floats: never a record, except :meth:`GroupWorker.records` (a checkpoint, a kept database).
"""
from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from ..samplers.parallel import GroupInputs, GroupState
from ..samplers.status import OK

__all__ = ["GroupWorker", "WorkerLayout"]


class WorkerLayout(NamedTuple):
    """What one worker is given of the chain's partition (built by
    :class:`dawrap.runner.grouped.GroupedChain`).

    ``groups`` are its groups (ascending), ``ids`` the records of each (global indices, in
    the partition's order); ``own_cells`` / ``own_stats`` the cells of the mechanism's and
    the model's statistic its groups own (their totals are sent back after each step);
    ``move_layouts`` per part of the model's records move what its group form reads (None:
    the part does not run in the groups) and ``move_theta`` the entries of theta these
    groups draw in it."""
    groups: list
    ids: list
    cells: np.ndarray
    stats_owner: np.ndarray
    slot_of: np.ndarray
    piece_scale: np.ndarray
    rows_width: int
    own_cells: np.ndarray
    own_stats: np.ndarray
    move_layouts: list
    move_theta: list


class GroupWorker:
    """One worker's groups of a chain (module docstring).

    Parameters
    ----------
    setup : dawrap.runner.record._Setup
        The chain's model, mechanism and compiled functions.
    fns : dawrap.samplers.parallel.GroupFunctions
        The compiled group pass for them.
    layout : WorkerLayout
        This worker's part of the partition.
    x : ndarray
        Records: the chain's whole database (``local=True``: rows ``layout.ids``) or this
        worker's rows only, in the order of ``layout.ids`` (``local=False``).
    rngs : list of numpy.random.Generator
        Its groups' generators.
    total, stats : ndarray
        The running sums (valid on the cells its groups own): the chain's arrays
        themselves on threads, copies on a cluster.
    local : bool
        Whether ``x`` is the whole database.
    """

    def __init__(self, setup, fns, layout: WorkerLayout, x, rngs, total, stats, local: bool):
        self.setup, self.fns, self.layout = setup, fns, layout
        self.x, self.rngs, self.total, self.stats = x, rngs, total, stats
        self.groups = layout.groups
        if local:
            self.members, self.global_ids = [np.asarray(i, np.int64) for i in layout.ids], None
        else:
            starts = np.cumsum([0] + [len(i) for i in layout.ids])
            self.members = [np.arange(starts[a], starts[a + 1], dtype=np.int64)
                            for a in range(len(layout.ids))]
            self.global_ids = np.concatenate(layout.ids).astype(np.int64) if layout.ids \
                else np.zeros(0, np.int64)
        # (writable copies: numba types read-only arrays apart, another compilation)
        self.inputs = GroupInputs(setup.s_dp, np.asarray(setup.params, np.float64),
                                  np.array(layout.cells), np.array(layout.slot_of),
                                  np.array(layout.stats_owner), np.array(layout.piece_scale))
        self.local_total = np.zeros((len(self.groups), int(np.count_nonzero(
            layout.slot_of >= 0))))
        self.stats_rows = np.zeros((len(self.groups), layout.rows_width))
        # each group's part: its records, rows, and cells of the model's statistic (those it
        # recounts with stat_every="iteration"); its pieces are set before each pass
        self.parts = [GroupState(g, self.members[a], self.local_total[a], np.zeros(0),
                                 self.stats_rows[a],
                                 np.flatnonzero(layout.stats_owner == g))
                      for a, g in enumerate(self.groups)]
        self.theta = self.table = None
        self.moves = [None if lay is None else (part.group, np.array(lay), np.array(entries))
                      for part, lay, entries in zip(setup.move.parts, layout.move_layouts,
                                                    layout.move_theta)]

    def _global(self, result):
        """A group's result with its record as an index of the whole database."""
        *head, i, j = result
        if self.global_ids is not None and i >= 0:
            i = self.global_ids[i]
        return (*head, int(i), int(j))

    def _table(self, theta):
        """The sweep's table of ``theta`` (built again only when theta changed)."""
        if self.theta is None or not np.array_equal(theta, self.theta):
            self.theta, self.table = theta, self.fns.table(theta)
        return self.table

    def _with(self, local_release, piece_scale) -> None:
        """This pass's pieces (its groups' rows) and their scales (None: unchanged)."""
        if piece_scale is not None:
            self.inputs = self.inputs._replace(piece_scale=np.array(piece_scale))
        self.parts = [part._replace(local_release=local_release[a])
                      for a, part in enumerate(self.parts)]

    def totals(self):
        """The groups' partial totals of the shared cells, recounted from the records:
        ``(local_total, results)``, a result ``(status, record, cell)`` per group."""
        results = [self._global(self.fns.totals(self.x, self.inputs, part))
                   for part in self.parts]
        return self.local_total.copy(), results

    def set_sums(self, total, stats) -> None:
        """The running sums from the chain (at the start and after a refresh)."""
        self.total[:], self.stats[:] = total, stats

    def sweep(self, theta, local_release, recount=False, piece_scale=None):
        """One sweep of every group with the pieces ``local_release`` (its groups' rows),
        seen through noise of inverse sd ``piece_scale`` (Laplace and geometric noise:
        drawn by the chain each sweep; None: the constant one of the layout), then with
        ``recount`` (the iteration's last sweep of a model with ``stat_every="iteration"``)
        each group's part of the model's statistic recounted from its records:
        ``(results, local_total, stats_rows, owned totals, owned stats, seconds,
        recounts)``, a result ``(accepted, min_log_alpha, status, record, cell)`` per group,
        a recount ``(status, record, cell)`` per group (none without ``recount``)."""
        began = time.perf_counter()
        # copies: theta may change in place in the chain (threads), and arrays that arrive
        # from another process may be read-only, which numba types apart (a dask cluster)
        theta, local_release = np.array(theta), np.array(local_release)
        self._with(local_release, piece_scale)
        table, layout = self._table(theta), self.layout
        results = [self._global(self.fns.sweep(rng, theta, self.x, self.total, self.stats,
                                               table, self.inputs, part))
                   for rng, part in zip(self.rngs, self.parts)]
        recounts = []
        if recount and self.setup.lazy_stats and all(r[2] == OK for r in results):
            recounts = [self._global(self.fns.stats(self.x, self.stats, self.inputs, part))
                        for part in self.parts]
        rows = self.stats_rows.copy()
        self.stats_rows[:] = 0.0
        return (results, self.local_total.copy(), rows, self.total[layout.own_cells],
                self.stats[layout.own_stats], time.perf_counter() - began, recounts)

    def move(self, k, theta, local_release, piece_scale=None):
        """Part ``k`` of the model's records move in every group, with the pieces
        ``local_release`` (as :meth:`sweep`): ``(results, local_total, owned totals,
        theta's entries these groups drew, seconds)``, a result ``(accepted, proposed,
        status, record, cell)`` per group."""
        began = time.perf_counter()
        theta, local_release = np.array(theta), np.array(local_release)  # (see sweep)
        self._with(local_release, piece_scale)
        group, layout, entries = self.moves[k]
        table = group.prepare(theta)
        results = [self._global(group.run(rng, theta, table, self.x, self.total, layout,
                                          self.inputs, part)[:5])
                   for rng, part in zip(self.rngs, self.parts)]
        return (results, self.local_total.copy(), self.total[self.layout.own_cells],
                theta[entries], time.perf_counter() - began)

    def sums(self, theta, log_g):
        """Each group's running sums recomputed from its records, and the check of its
        records (support, entries): ``[(stats, total, status)]`` per group. The chain adds
        them in group order, so the refresh is the same floats on any number of workers."""
        setup = self.setup
        theta = np.array(theta)
        out = []
        for members in self.members:
            fresh = setup.chain.init(theta.copy(), self.x[members], setup.inputs,
                                     setup.kernel.init_state(theta.copy()),
                                     setup.init_move_state(theta.copy()))
            _, _, status = setup.chain.consistency(fresh._replace(log_g=log_g), setup.s_dp)
            out.append((np.array(fresh.stats), np.array(fresh.total), int(status)))
        return out

    def records(self):
        """Its groups' records and their global indices."""
        ids = np.concatenate(self.layout.ids).astype(np.int64)
        return (self.x if self.global_ids is not None else self.x[ids]), ids

    def generator_states(self) -> list:
        """The states of its groups' generators."""
        return [r.bit_generator.state for r in self.rngs]

    def restore(self, states) -> None:
        """Set its groups' generators to ``states``."""
        for r, s in zip(self.rngs, states):
            r.bit_generator.state = s
