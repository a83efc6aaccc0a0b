"""Driver of one chain whose record sweep runs on several threads (:mod:`dawrap.samplers.parallel`).

An iteration is the serial chain's (:func:`dawrap.samplers.record.step`) with the
record sweeps replaced: theta by the model's kernel and the extra move with the chain's
generator, then per sweep the shared cells' pieces (chain's generator) and every group's
pass (its own generator) on a thread pool, the groups' partial sums folded back in group
order. Which thread runs which group changes nothing any group reads or writes, so the draws
are those of one thread. The groups run the compiled
:func:`~dawrap.samplers.parallel.group_pass`, which releases the GIL (numba ``nogil``), on a
``ThreadPoolExecutor``, rather than a numba ``prange`` loop: each group's generator is an
ordinary ``numpy.random.Generator`` passed to its call (a ``prange`` body would need the
groups' generators as one typed container, which numba does not offer for generators), and
the Python dispatch, one call per group and sweep, is small against a sweep of many records
(the two were not timed against each other).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..samplers import parallel, record
from ..samplers.status import OK, BAD_SUPPORT

__all__ = ["GroupedChain", "draw_pieces", "fold_recount", "fold_sweep", "later_rate",
           "move_parts", "partition_for"]


def partition_for(method, model, mechanism, x) -> parallel.Partition:
    """The partition of a chain starting from ``x``: ``method.partition`` when given, else
    the model's own (``Model(partition=...)``, e.g. the census model's), else an error."""
    if method.partition is not None:
        return method.partition
    if model.partition is None:
        raise ValueError("threads needs a partition of the records: pass "
                         "dw.Record(threads=..., partition=dw.Partition(records=..., "
                         "cells=...)), or use a model that derives one (Model(partition=...), "
                         "as the census and small_area models do)")
    part = model.partition(x, mechanism)
    if not isinstance(part, parallel.Partition):
        raise TypeError(f"the model's partition must return a dawrap.Partition, got "
                        f"{type(part).__name__}")
    return part


class GroupedChain:
    """One chain's groups: their records, generators, partial sums of the shared cells,
    and the thread pool that sweeps them (close it with :meth:`close`)."""

    def __init__(self, setup, partition: parallel.Partition, threads: int, rng, x):
        model, mech, fns = setup.model, setup.mechanism, setup.fns
        if fns.nnz == 0:
            raise ValueError("threads: the within-chain parallel sweep needs the sparse path "
                             "(a mechanism with a separable density whose statistic is "
                             "declared with dw.declare_sparse): records must touch a few "
                             "cells each")
        noise = parallel.shared_noise(fns.coordinate_log_density)
        parallel.check_partition(partition, x.shape[0], mech.size, model.stat_size,
                                 noise=noise, shared_statistic=setup.shared,
                                 model_nnz=fns.model_nnz)
        self.setup, self.partition = setup, partition
        self.fns = parallel.bind_groups(
            fns, model.record_size, mech.size, model.stat_size, general=model.general_proposal,
            shared=setup.shared, random_scan=setup.random_scan,
            batched=model.draw_records is not None, prepared=model.prepared is not None,
            stats_owned=partition.stats is not None, lazy_stats=setup.lazy_stats)
        G = partition.groups
        order = np.argsort(partition.records, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(partition.sizes)])
        self.members = [np.ascontiguousarray(order[bounds[g]:bounds[g + 1]])
                        for g in range(G)]
        self.shared = np.ascontiguousarray(partition.shared_cells)
        K = self.shared.shape[0]
        self.slot_of = np.full(mech.size, -1, np.int64)
        self.slot_of[self.shared] = np.arange(K)
        params = np.asarray(setup.params, np.float64)
        # the groups' inverse sd of the shared cells' pieces: sqrt(G) / sigma for Gaussian
        # noise, drawn each sweep with the latent variances for Laplace noise (draw_scales)
        self.latent = noise == "laplace"
        # (no warning about pinned pieces when the model's move frees them)
        self.piece_scale = parallel.first_piece_scale(
            params, self.shared, G, self.latent,
            mech.integer_statistic and not setup.frees_shared_cells)
        self.local_total = np.zeros((G, K))
        self.local_release = np.zeros((G, K))
        accumulate = model.stat_size > 0 and not setup.shared and partition.stats is None
        self.stats_rows = np.zeros((G, model.stat_size if accumulate else 0))
        self.stats_owner = (partition.stats if partition.stats is not None
                            else np.zeros(0, np.int64))
        # each group's cells of the model's statistic (recounted there, stat_every="iteration")
        self.own_stats = [np.flatnonzero(self.stats_owner == g) for g in range(G)]
        self.rngs = parallel.group_generators(rng, G)
        self.threads = parallel.warn_threads(threads, G)
        self.batches = _batches(partition.sizes, self.threads)
        self.pool = ThreadPoolExecutor(self.threads) if self.threads > 1 else None
        self.moves = move_parts(setup, partition, x, parallel.pieces_pinned(
            params, self.shared, G, self.latent, mech.integer_statistic))

    def close(self) -> None:
        """Stop the thread pool."""
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None

    def generator_states(self) -> list:
        """The groups' generators' states (for a checkpoint)."""
        return [r.bit_generator.state for r in self.rngs]

    def restore(self, states) -> None:
        """Set the groups' generators to the saved ``states``."""
        if len(states) != len(self.rngs):
            raise ValueError(f"resume: the checkpoint holds {len(states)} group generators, "
                             f"the partition has {len(self.rngs)} groups")
        for r, s in zip(self.rngs, states):
            r.bit_generator.state = s

    def _map(self, work) -> list:
        """``work(g)`` for every group, on the pool; the results in group order."""
        out = [None] * len(self.members)

        def batch(groups):
            for g in groups:
                out[g] = work(g)

        if self.pool is None:
            batch(range(len(self.members)))
        else:
            for f in [self.pool.submit(batch, b) for b in self.batches]:
                f.result()
        return out

    def recount(self, state) -> None:
        """The groups' partial totals of the shared cells from the database (at the start,
        after the extra move and after a refresh), checking the partition."""
        s_dp = self.setup.s_dp
        results = self._map(lambda g: self.fns.totals(
            state.x, s_dp, self.members[g], self.partition.cells, self.slot_of, g,
            self.local_total[g]))
        self._raise(results, "mechanism's statistic", self.partition.cells)

    def _raise(self, results, statistic: str, owners) -> None:
        for g, result in enumerate(results):
            status, i, j = result[-3:]
            if status == parallel.BAD_PARTITION:
                raise ValueError(parallel.partition_error(int(i), int(j), g, int(owners[j]),
                                                          statistic))
            if status != OK:
                raise ValueError(f"{record.STATUS_MESSAGES[status]} (record {i}, in group {g})")

    def move(self, rng, state, tuning) -> tuple:
        """The model's records move (:mod:`dawrap.samplers.group_moves`): each part with a
        group form in every group at once, after the pieces; a part without one on the whole
        database (the chain's generator), then the groups' partial totals recounted.
        ``(state, accept_rate, status)``; the rate is the last part's that proposed."""
        s_dp, params = self.setup.s_dp, self.setup.params
        rate = float("nan")
        for part, layout in self.moves:
            if layout is None:
                state, got, status = part(rng, state, s_dp, params, tuning)
                if status == OK:
                    self.recount(state)
                    rate = rate if got != got else got
            else:
                group = part.group
                table = group.prepare(state.theta)
                draw_pieces(self, rng, state)
                results = self._map(lambda g: group.run(
                    self.rngs[g], state.theta, table, state.x, self.members[g], s_dp, params,
                    state.total, self.partition.cells, self.slot_of, g, self.local_total[g],
                    self.local_release[g], self.piece_scale, layout))
                status = fold_sweep(self, results, state.total, state.stats)
                if status == OK:
                    rate = later_rate(rate, results)
            if status != OK:
                return state, float("nan"), status
        return state, rate, OK

    def sweep(self, rng, state, table) -> tuple:
        """One sweep of every group (steps a-c of :mod:`dawrap.samplers.parallel`):
        ``(accepted, min_log_alpha, status)``."""
        s_dp, params = self.setup.s_dp, self.setup.params
        total, stats = state.total, state.stats
        draw_pieces(self, rng, state)
        results = self._map(lambda g: self.fns.sweep(
            self.rngs[g], state.theta, state.x, s_dp, params, self.members[g],
            self.partition.cells, self.slot_of, self.stats_owner, g, total, stats,
            self.stats_rows[g], self.local_total[g], self.local_release[g], self.piece_scale,
            table))
        status = fold_sweep(self, results, total, stats)
        if status != OK:
            return 0, 0.0, status
        return (sum(r[0] for r in results), min(r[1] for r in results), OK)

    def recount_stats(self, state) -> int:
        """The model's statistic recounted from the records once per iteration (a model with
        ``stat_every="iteration"``): each group its part (its cells, or its row, the rows
        added in group order), :func:`dawrap.samplers.parallel.group_stats`; a status."""
        stats = state.stats
        results = self._map(lambda g: self.fns.stats(
            state.x, self.members[g], self.stats_owner, self.own_stats[g], g, stats,
            self.stats_rows[g]))
        return fold_recount(self, results, stats)

    def advance(self, rng, state, start: int, stop: int, tune: int, trace):
        """Iterations ``start..stop-1`` (as :func:`dawrap.samplers.record.step` with the
        grouped sweep), each kept draw stored by the chain's ``keep`` (the run loop's):
        ``(state, done, status)``."""
        from .record import _theta_output  # (that module imports this one)

        setup = self.setup
        model, inputs, fns = setup.model, setup.inputs, self.fns
        n = state.x.shape[0]
        for it in range(start, stop):
            tuning = it < tune
            if setup.compiled_kernel:
                theta_new, theta_accept = setup.kernel.step(
                    rng, state.theta, state.x, state.stats.copy(), state.kernel_state, tuning)
            else:
                x_view = state.x.view()
                x_view.flags.writeable = False
                theta_new, theta_accept = _theta_output(
                    model.draw_theta(rng, state.theta, x_view, state.stats.copy()), model,
                    "draw_theta")
            status = record.set_theta(state, theta_new)
            if status == OK and not setup.fns.theta_support(state.theta):
                status = BAD_SUPPORT
            if status != OK:
                return state, it, status
            state, move_accept, status = self.move(rng, state, tuning)
            if status != OK:
                return state, it, status
            table = fns.table(state.theta)
            accepted, min_log_alpha = 0, 0.0
            for _ in range(inputs.sweeps):
                got, low, status = self.sweep(rng, state, table)
                if status != OK:
                    return state, it, status
                accepted += got
                min_log_alpha = min(min_log_alpha, low)
            if setup.lazy_stats:
                status = self.recount_stats(state)
                if status != OK:
                    return state, it, status
            state = state._replace(log_g=float(setup.fns.log_density(
                inputs.s_dp, np.ascontiguousarray(state.total), inputs.params)))
            if (it + 1) % record.REFRESH_EVERY == 0:
                state, status = setup.chain.refresh(state, inputs.s_dp, inputs.params)
                if status != OK:
                    return state, it, status
                self.recount(state)
            if it >= tune:
                swept = parallel.info_of(accepted, n * inputs.sweeps, min_log_alpha, OK,
                                         move_accept)
                info = record.RecordInfo(OK, swept.accept_rate, swept.min_accept_prob,
                                         float(theta_accept), swept.move_accept)
                setup.chain.keep(it - tune, state, info, *trace)
        return state, stop, OK


def draw_pieces(chain, rng, state) -> None:
    """Step (a) of :mod:`dawrap.samplers.parallel` for a threaded or cluster ``chain``: the
    shared cells' pieces (after their latent variances under Laplace or geometric noise),
    with the chain's generator ``rng``, into ``chain.local_release``."""
    if chain.shared.shape[0]:
        s_dp, params, total = chain.setup.s_dp, chain.setup.params, state.total
        if chain.latent:
            parallel.draw_scales(rng, s_dp, total, params, chain.shared,
                                 chain.partition.groups, chain.piece_scale)
        parallel.draw_pieces(rng, s_dp, total, chain.shared, chain.piece_scale,
                             chain.local_total, chain.local_release)


def fold_sweep(chain, results, total, stats) -> int:
    """Fold one sweep's per-group ``results`` (accepted, lowest log acceptance, status,
    record, cell) into the running ``total`` and ``stats``, in group order, as the threaded
    (:class:`GroupedChain`) and the cluster chain (:mod:`dawrap.runner.dask_chain`) both do:
    a wrong partition raises naming the record, the cell and both groups; the shared cells'
    totals and the groups' rows of the model's statistic (not with ``stat_every=
    "iteration"``: recounted, :func:`fold_recount`) are summed in group order. ``chain``
    holds the groups' partial totals (``local_total``, ``stats_rows``). Returns a status."""
    for g, result in enumerate(results):
        status, i, j = result[2:5]
        if status == parallel.BAD_PARTITION and j < 0:  # a records move's layout (its rows)
            raise ValueError(f"threads: record {i} (group {g} of the partition) moved into a "
                             f"part of theta that another group's records move draws; "
                             f"declare a partition whose groups hold whole units of the "
                             f"model's finest prior level")
        if status in (parallel.BAD_PARTITION, parallel.BAD_STAT_PARTITION):
            stat = status == parallel.BAD_STAT_PARTITION
            owners = chain.partition.stats if stat else chain.partition.cells
            raise ValueError(parallel.partition_error(
                int(i), int(j), g, int(owners[j]),
                "model's statistic" if stat else "mechanism's statistic"))
        if status != OK:
            return status
    if chain.shared.shape[0]:  # the shared cells' totals, summed in group order
        new = chain.local_total.sum(axis=0)
        if chain.setup.shared:
            stats[chain.shared] += new - total[chain.shared]
        total[chain.shared] = new
    if chain.stats_rows.shape[1] and not chain.setup.lazy_stats:
        stats += chain.stats_rows.sum(axis=0)
        chain.stats_rows[:] = 0.0
        if not np.all(np.isfinite(stats)):
            return record.BAD_STATS
    return OK


def later_rate(rate: float, results) -> float:
    """The acceptance rate a move part's per-group ``results`` (accepted, proposed, ...)
    report, where they proposed anything; else the earlier parts' ``rate`` (a sequence of
    moves reports its last part that proposed, as ``in_turn``'s compiled sequence does)."""
    proposed = sum(r[1] for r in results)
    return sum(r[0] for r in results) / proposed if proposed else rate


def move_parts(setup, partition, x, pinned: bool) -> list:
    """The model's records move as ``(part, layout)`` pairs, in order
    (:mod:`dawrap.samplers.group_moves`): a sequence of moves (``in_turn``) gives its parts;
    ``layout`` is what the part's group form reads in these groups, or None where the part
    runs on the whole database: it has no group form, the partition splits what a group
    would draw, the model's statistic is moved per record rather than recounted, or the
    part frees pinned shared cells (``frees_shared_cells``, the census pair move) and the
    partition's pieces are ``pinned`` (:func:`dawrap.samplers.parallel.pieces_pinned`): in a
    group such a move keeps the group's part of every shared cell, which the pieces pin, so
    only on the whole database does it move how a shared cell splits between groups."""
    if setup.move is record.no_move:
        return []
    recounted = setup.lazy_stats or setup.model.stat_size == 0
    out = []
    for part in getattr(setup.move, "parts", (setup.move,)):
        group = getattr(part, "group", None)
        frees = getattr(part, "frees_shared_cells", setup.frees_shared_cells)
        runs_in_groups = group is not None and recounted and not (pinned and frees)
        out.append((part, group.assign(x, partition) if runs_in_groups else None))
    return out


def fold_recount(chain, results, stats) -> int:
    """Fold the groups' recounts of the model's statistic (``stat_every="iteration"``;
    per group: status, record, cell) into ``stats``: a wrong partition raises naming the
    record, the cell and both groups; each group wrote its own cells, and the rows
    (``chain.stats_rows``) are added in group order. Returns a status."""
    for g, (status, i, j) in enumerate(results):
        if status == parallel.BAD_STAT_PARTITION:
            raise ValueError(parallel.partition_error(
                int(i), int(j), g, int(chain.partition.stats[j]), "model's statistic"))
        if status != OK:
            return status
    if chain.stats_rows.shape[1]:
        stats[:] = chain.stats_rows.sum(axis=0)
        chain.stats_rows[:] = 0.0
    return OK


def _batches(sizes: np.ndarray, threads: int) -> list:
    """Groups split among ``threads`` threads, largest group first to the least loaded
    (balances records; the draws do not depend on it)."""
    if threads <= 1:
        return [list(range(sizes.shape[0]))]
    load, out = np.zeros(threads), [[] for _ in range(threads)]
    for g in np.argsort(-sizes, kind="stable"):
        t = int(np.argmin(load))
        out[t].append(int(g))
        load[t] += sizes[g]
    return [b for b in out if b]
