"""The grouped iteration: one chain whose records sweep runs in groups, on a backend.

An iteration is the serial chain's (:func:`dawrap.samplers.record.step`) with the record
sweeps run in the partition's groups (:mod:`dawrap.samplers.parallel`): theta by the model's
kernel with the chain's generator; the model's records move, each part with a group form in
every group at once after the shared cells' pieces, a part without one on the whole
database; then per sweep the pieces (chain's generator) and every group's pass (its own
generator), the groups' partial sums folded back in group order; the model's statistic
recounted where it is recounted once per iteration; every
:data:`~dawrap.samplers.record.REFRESH_EVERY` iterations the running sums recomputed from the
records, group by group, added in group order; the kept draw stored by the run loop's
``keep``.

This is the one place that logic lives. Where the groups run is the backend's business
(:mod:`dawrap.runner.backends`: threads of this process, or the workers of a dask cluster):
it holds each worker's groups (:class:`~dawrap.runner.group_worker.GroupWorker`) and runs a
named step on all of them. Every group reads and writes the same numbers with the same
generator on any backend and any number of workers, and the chain folds them in group
order, so the draws for a seed are bit-identical across backends and worker counts, and a
checkpoint of one is resumed by another.
"""
from __future__ import annotations

import math

import numpy as np

from ..mechanisms.families import Split, of_coordinate
from ..samplers import parallel, record
from ..samplers.loop import as_floats
from ..samplers.status import OK, BAD_SUPPORT
from .group_worker import WorkerLayout
from .theta_output import theta_output

__all__ = ["GroupedChain", "assign", "kernel_reads_records", "move_parts", "partition_for"]


def partition_for(option, model, mechanism, x) -> parallel.Partition:
    """The partition of a chain starting from ``x``: the option's (``dw.parallel.Threads(...,
    partition=)``) when given, else the model's own (``Model(partition=...)``, e.g. the
    census model's), else an error."""
    if option.partition is not None:
        return option.partition
    if model.partition is None:
        raise ValueError(f"{option!r} needs a partition of the records into groups: pass "
                         f"partition=dw.parallel.Partition(records=..., cells=...) to it, or "
                         f"use a model that derives one (Model(partition=...), as the census "
                         f"and small_area models do)")
    part = model.partition(x, mechanism)
    if not isinstance(part, parallel.Partition):
        raise TypeError(f"the model's partition must return a dawrap.parallel.Partition, got "
                        f"{type(part).__name__}")
    return part


def kernel_reads_records(model) -> str | None:
    """The name of the records' argument when theta's kernel may read it, else None.

    A backend whose workers hold the records elsewhere (a dask cluster) calls theta's kernel
    with an empty database: it must use the records only through ``stats``. The check reads
    the kernel's source (that of ``draw_theta``, or of a :class:`dawrap.kernels.Kernel`'s
    ``step``): the records' argument, the third, must not appear in its body. Without source
    (a built-in, a lambda in an interactive session) it is assumed to be read.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.runner.grouped import kernel_reads_records
    >>> class Model:
    ...     pass
    >>> model = Model()
    >>> def draw_theta(rng, theta, x, stats):
    ...     return stats / 2
    >>> model.draw_theta = draw_theta
    >>> kernel_reads_records(model) is None
    True
    >>> def by_records(rng, theta, x, stats):
    ...     return np.array([x[:, 0].mean()])
    >>> model.draw_theta = by_records
    >>> kernel_reads_records(model)
    'x'
    """
    import ast
    import inspect
    import textwrap

    from ..samplers.kernels import Kernel

    func = model.draw_theta.step if isinstance(model.draw_theta, Kernel) else model.draw_theta
    func = getattr(func, "py_func", func)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return "x"
    defs = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.Lambda))]
    if not defs or len(defs[0].args.args) < 3:
        return "x"
    name = defs[0].args.args[2].arg
    body = defs[0].body if isinstance(defs[0].body, list) else [defs[0].body]
    used = any(isinstance(node, ast.Name) and node.id == name
               for part in body for node in ast.walk(part))
    return name if used else None


def assign(sizes: np.ndarray, workers: int) -> list:
    """Groups split among ``workers`` workers: largest group first to the least loaded
    (balances records; the draws do not depend on it); each worker's groups ascending.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.runner.grouped import assign
    >>> assign(np.array([5, 1, 3, 2]), 2)      # 5 records, then 3 + 2, then 1 to the first
    [[0, 1], [2, 3]]
    """
    load, out = np.zeros(workers), [[] for _ in range(workers)]
    for g in np.argsort(-sizes, kind="stable"):
        w = int(np.argmin(load))
        out[w].append(int(g))
        load[w] += sizes[g]
    return [sorted(b) for b in out if b]


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
    if setup.move.step is record.no_move:
        return []
    recounted = setup.lazy_stats or setup.model.stat_size == 0
    out = []
    for part in setup.move.parts:
        runs_in_groups = (part.group is not None and recounted
                          and not (pinned and part.frees_shared_cells))
        out.append((part, part.group.assign(x, partition) if runs_in_groups else None))
    return out


def later_rate(rate: float, results) -> float:
    """The acceptance rate a move part's per-group ``results`` (accepted, proposed, ...)
    report, where they proposed anything; else the earlier parts' ``rate`` (a sequence of
    moves reports its last part that proposed, as ``in_turn``'s compiled sequence does)."""
    proposed = sum(r[1] for r in results)
    return sum(r[0] for r in results) / proposed if proposed else rate


class GroupedChain:
    """One chain's groups on a backend (module docstring); close it with :meth:`close`.

    Built from the chain's starting ``state``, whose records the backend's workers take
    over; :attr:`state` is the state the chain carries on with (its database an empty
    stand-in when the backend holds the records elsewhere).
    """

    def __init__(self, setup, option, rng, state, chain: int):
        model, mech, fns = setup.model, setup.mechanism, setup.fns
        backend = option.backend(chain)
        x = state.x
        partition = partition_for(option, model, mech, x)
        if fns.nnz == 0:
            raise ValueError(f"{option!r}: a chain's groups need the sparse path (a mechanism "
                             f"with a separable density whose statistic is declared with "
                             f"dw.declare_sparse): records must touch a few cells each")
        if not backend.local:
            reads = kernel_reads_records(model)
            if reads is not None:
                name = getattr(model.draw_theta, "name", None) or getattr(
                    model.draw_theta, "__name__", "draw_theta")
                raise ValueError(f"{option!r}: theta's kernel ({name}) reads the records (its "
                                 f"argument {reads!r}), which this backend keeps on its "
                                 f"workers: it needs a kernel that uses the records only "
                                 f"through stats (model_stat's sum), as the census and "
                                 f"small_area models' kernels do; or run on threads")
        # the noise family of the separable density says how a shared cell is split and
        # reads each cell's scale from the density's params (None: no family, no split)
        family = of_coordinate(fns.coordinate_log_density)
        split = None if family is None else family.split
        parallel.check_partition(partition, x.shape[0], mech.size, model.stat_size,
                                 split=split, shared_statistic=setup.shared,
                                 model_nnz=fns.model_nnz)
        self.setup, self.partition, self.backend = setup, partition, backend
        G = partition.groups
        self.shared = np.ascontiguousarray(partition.shared_cells)
        K = self.shared.shape[0]
        slot_of = np.full(mech.size, -1, np.int64)
        slot_of[self.shared] = np.arange(K)
        params = np.asarray(setup.params, np.float64)
        # the groups' inverse sd of the shared cells' pieces: sqrt(G) / sigma for Gaussian
        # noise, drawn each sweep with the latent variances for Laplace noise (draw_scales),
        # from each shared cell's 1 / sigma or 1 / b
        self.latent = split is Split.LATENT
        self.inverse_scale = (family.cell_inverse_scale(params, self.shared)
                              if split is not None else np.zeros(0))
        parts = move_parts(setup, partition, x, parallel.pieces_pinned(
            self.inverse_scale, G, self.latent, mech.integer_statistic))
        # the parts that run, with their index among the move's parts
        self.moves = self._runnable(parts)
        # (no warning about pinned pieces when a move that runs frees them)
        frees = any(p.frees_shared_cells for _, p, _ in self.moves)
        self.piece_scale = parallel.first_piece_scale(self.inverse_scale, G, self.latent,
                                                      mech.integer_statistic and not frees)
        self.local_total = np.zeros((G, K))
        self.local_release = np.zeros((G, K))
        accumulate = model.stat_size > 0 and not setup.shared and partition.stats is None
        width = model.stat_size if accumulate else 0
        self.stats_rows = np.zeros((G, width))
        stats_owner = (partition.stats if partition.stats is not None
                       else np.zeros(0, np.int64))
        self.assigned = assign(partition.sizes, backend.workers(G))
        order = np.argsort(partition.records, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(partition.sizes)])
        rngs = parallel.group_generators(rng, G)
        # per part of the move and worker, the entries of theta its groups draw (sent back)
        self.move_theta = [[np.concatenate([p.group.theta_of(lay, g) for g in groups])
                            if lay is not None else np.zeros(0, np.int64)
                            for groups in self.assigned] for p, lay in parts]
        layouts, self.own = [], []
        for w, groups in enumerate(self.assigned):
            own_cells = np.flatnonzero(np.isin(partition.cells, groups))
            if setup.shared:
                own_stats = own_cells
            elif partition.stats is not None:
                own_stats = np.flatnonzero(np.isin(partition.stats, groups))
            else:
                own_stats = np.zeros(0, np.int64)
            self.own.append((own_cells, own_stats))
            layouts.append(WorkerLayout(
                groups=groups, ids=[order[bounds[g]:bounds[g + 1]] for g in groups],
                cells=partition.cells, stats_owner=stats_owner, slot_of=slot_of,
                piece_scale=self.piece_scale, rows_width=width, own_cells=own_cells,
                own_stats=own_stats, move_layouts=[lay for _, lay in parts],
                move_theta=[entries[w] for entries in self.move_theta]))
        group_fns = parallel.bind_groups(fns, setup.options, partition.stats is not None) \
            if backend.local else None
        backend.start(setup, group_fns, layouts, x, [[rngs[g] for g in groups]
                                                     for groups in self.assigned],
                      state.total, state.stats)
        self.state = state if backend.local else state._replace(
            x=np.empty((0, model.record_size)))

    def _runnable(self, parts) -> list:
        """The move's parts this backend runs, as ``(index, part, layout)``: a part without a
        group form runs on the whole database, which a backend that keeps the records on its
        workers cannot do: the run is refused there, naming the part and how to turn it off
        (run without it, the chain would be another chain than on threads, whose draws the
        cluster's must be)."""
        backend = self.backend
        if backend.local:
            return [(k, p, layout) for k, (p, layout) in enumerate(parts)]
        left_out = [part for part, layout in parts if layout is None]
        if left_out:
            names = "; ".join(p.name for p in left_out)
            raise ValueError(
                f"dw.parallel.Dask: the extra move ({names}) runs on the whole database, and "
                f"a chain on a dask cluster keeps the records on its workers: it has no form "
                f"that runs in the partition's groups (or, for the census pair move, the "
                f"shared cells' pieces are pinned, which only a move on the whole database "
                f"frees). Run on threads (dw.parallel.Threads), which run every move, or turn "
                f"the move off, which is another chain than on threads (exact, it may mix more "
                f"slowly): census.model(..., pair_moves=0, collapsed_moves=0); "
                f"marginals.model(..., ridge_moves=False, collapsed_moves=0)")
        return [(k, p, layout) for k, (p, layout) in enumerate(parts)]

    # -- the backend's workers ------------------------------------------------------------

    def close(self) -> None:
        """Release the backend's workers."""
        self.backend.close()

    def _by_group(self, per_worker) -> list:
        """Per-worker lists of per-group items, as one list in group order."""
        out = [None] * self.partition.groups
        for groups, items in zip(self.assigned, per_worker):
            for g, item in zip(groups, items):
                out[g] = item
        return out

    def generator_states(self) -> list:
        """The groups' generators' states, in group order (for a checkpoint)."""
        return self._by_group(self.backend.call("generator_states", "checkpointing"))

    def restore(self, states) -> None:
        """Set the groups' generators to the saved ``states``."""
        if len(states) != self.partition.groups:
            raise ValueError(f"resume: the checkpoint holds {len(states)} group generators, "
                             f"the partition has {self.partition.groups} groups")
        self.backend.call("restore", "resuming", [[states[g] for g in groups]
                                                  for groups in self.assigned])

    def records(self) -> np.ndarray:
        """The chain's database, gathered from the workers (a checkpoint, a kept database)."""
        x = np.empty((self.partition.records.shape[0], self.setup.model.record_size))
        for part, ids in self.backend.call("records", "collecting the records"):
            x[ids] = part
        return x

    # -- the steps of an iteration --------------------------------------------------------

    def _raise(self, results, statistic: str, owners) -> None:
        for g, result in enumerate(results):
            status, i, j = result[-3:]
            if status == parallel.BAD_PARTITION:
                raise ValueError(parallel.partition_error(int(i), int(j), g, int(owners[j]),
                                                          statistic))
            if status != OK:
                raise ValueError(f"{record.STATUS_MESSAGES[status]} (record {i}, in group {g})")

    def recount(self, state) -> None:
        """The groups' partial totals of the shared cells, recounted from their records (at
        the start and after a refresh), checking the partition."""
        got = self.backend.call("totals", "recounting the shared cells")
        for groups, (rows, _) in zip(self.assigned, got):
            self.local_total[groups] = rows
        self._raise(self._by_group([r for _, r in got]), "mechanism's statistic",
                    self.partition.cells)

    def _draw_pieces(self, rng, state) -> None:
        """Step (a) of :mod:`dawrap.samplers.parallel`: the shared cells' pieces (after their
        latent variances under Laplace or geometric noise), with the chain's generator."""
        if self.shared.shape[0]:
            s_dp, total = self.setup.s_dp, state.total
            if self.latent:
                parallel.draw_scales(rng, s_dp, total, self.inverse_scale, self.shared,
                                     self.partition.groups, self.piece_scale)
            parallel.draw_pieces(rng, s_dp, total, self.shared, self.piece_scale,
                                 self.local_total, self.local_release)

    def _pieces(self) -> tuple:
        """The pieces as the workers take them: each worker its groups' rows, and the
        pieces' scales when they are drawn each sweep (None: the workers' constant ones)."""
        return ([self.local_release[groups] for groups in self.assigned],
                self.piece_scale.copy() if self.latent else None)

    def _fold(self, results, total, stats) -> int:
        """Fold one sweep's or move's per-group ``results`` (accepted, ..., status, record,
        cell) into the running ``total`` and ``stats``, in group order: a wrong partition
        raises naming the record, the cell and both groups; the shared cells' totals and the
        groups' rows of the model's statistic (not with ``stat_every="iteration"``:
        recounted, :meth:`_fold_recount`) are summed in group order. Returns a status."""
        for g, result in enumerate(results):
            status, i, j = result[2:5]
            if status == parallel.BAD_PARTITION and j < 0:  # a records move's layout
                raise ValueError(f"record {i} (group {g} of the partition) moved into a part "
                                 f"of theta that another group's records move draws; declare "
                                 f"a partition whose groups hold whole units of the model's "
                                 f"finest prior level")
            if status in (parallel.BAD_PARTITION, parallel.BAD_STAT_PARTITION):
                stat = status == parallel.BAD_STAT_PARTITION
                owners = self.partition.stats if stat else self.partition.cells
                raise ValueError(parallel.partition_error(
                    int(i), int(j), g, int(owners[j]),
                    "model's statistic" if stat else "mechanism's statistic"))
            if status != OK:
                return status
        if self.shared.shape[0]:  # the shared cells' totals, summed in group order
            new = self.local_total.sum(axis=0)
            if self.setup.shared:
                stats[self.shared] += new - total[self.shared]
            total[self.shared] = new
        if self.stats_rows.shape[1] and not self.setup.lazy_stats:
            stats += self.stats_rows.sum(axis=0)
            self.stats_rows[:] = 0.0
            if not np.all(np.isfinite(stats)):
                return record.BAD_STATS
        return OK

    def _fold_recount(self, results, stats) -> int:
        """Fold the groups' recounts of the model's statistic (``stat_every="iteration"``;
        per group: status, record, cell) into ``stats``: each group wrote its own cells, and
        the rows are added in group order. Returns a status."""
        for g, (status, i, j) in enumerate(results):
            if status == parallel.BAD_STAT_PARTITION:
                raise ValueError(parallel.partition_error(
                    int(i), int(j), g, int(self.partition.stats[j]), "model's statistic"))
            if status != OK:
                return status
        if self.stats_rows.shape[1]:
            stats[:] = self.stats_rows.sum(axis=0)
            self.stats_rows[:] = 0.0
        return OK

    def sweep(self, rng, state, recount: bool = False) -> tuple:
        """One sweep of every group (steps a-c of :mod:`dawrap.samplers.parallel`); with
        ``recount`` (the iteration's last sweep of a model with ``stat_every="iteration"``)
        the model's statistic recounted in the groups too: ``(accepted, min_log_alpha,
        status)``."""
        total, stats = state.total, state.stats
        self._draw_pieces(rng, state)
        releases, scales = self._pieces()
        got = self.backend.call("sweep", "sweeping", np.array(state.theta), releases,
                                recount, scales)
        for groups, (own_cells, own_stats), (_, rows, srows, t, s, _, _) in zip(
                self.assigned, self.own, got):
            self.local_total[groups] = rows
            self.stats_rows[groups] = srows
            total[own_cells] = t
            stats[own_stats] = s
        results = self._by_group([r[0] for r in got])
        status = self._fold(results, total, stats)
        if status == OK and self.setup.lazy_stats and recount:
            status = self._fold_recount(self._by_group([r[6] for r in got]), stats)
        if status != OK:
            return 0, 0.0, status
        return (sum(r[0] for r in results), min(r[1] for r in results), OK)

    def move(self, rng, state, tuning) -> tuple:
        """The model's records move (:mod:`dawrap.samplers.group_moves`): each part with a
        group form in every group at once, after the pieces; a part without one on the whole
        database (the chain's generator), then the groups' partial totals recounted.
        ``(state, accept_rate, status)``; the rate is the last part's that proposed."""
        s_dp, params = self.setup.s_dp, self.setup.params
        rate = math.nan
        for k, part, layout in self.moves:
            if layout is None:  # (only on a backend whose records are state.x)
                state, got, status = part.step(rng, state, s_dp, params, tuning)
                if status == OK:
                    self.recount(state)
                    rate = rate if got != got else got
            else:
                self._draw_pieces(rng, state)
                releases, scales = self._pieces()
                got = self.backend.call("move", "moving records", k, np.array(state.theta),
                                        releases, scales)
                for groups, (own_cells, _), (_, rows, t, drawn, _), layout_ in zip(
                        self.assigned, self.own, got, self.move_theta[k]):
                    self.local_total[groups] = rows
                    state.total[own_cells] = t
                    state.theta[layout_] = drawn
                results = self._by_group([r[0] for r in got])
                status = self._fold(results, state.total, state.stats)
                if status == OK:
                    rate = later_rate(rate, results)
            if status != OK:
                return state, math.nan, status
        return state, rate, OK

    def _fresh(self, state):
        """The running sums recomputed from the records, each group's added in group order,
        and whether they agree with ``state``'s: ``(stats, total, status)``."""
        got = self._by_group(self.backend.call("sums", "recomputing the running sums",
                                               np.array(state.theta), float(state.log_g)))
        stats, total = np.zeros(state.stats.shape[0]), np.zeros(state.total.shape[0])
        stats_abs, total_abs = np.ones_like(stats), np.ones_like(total)
        status = OK
        for s, t, st in got:
            stats += s
            total += t
            stats_abs += np.abs(s)
            total_abs += np.abs(t)
            if status == OK and st not in (OK, record.BAD_DRIFT):  # drift: checked below
                status = st
        tolerance = record.DRIFT_TOLERANCE
        if status == OK and not (np.all(np.abs(state.stats - stats) <= tolerance * stats_abs)
                                 and np.all(np.abs(state.total - total)
                                            <= tolerance * total_abs)):
            status = record.BAD_DRIFT
        return stats, total, status

    def consistency(self, state) -> int:
        """The check of the chain's last iteration (``record.consistency``), group by
        group: a status."""
        return self._fresh(state)[2]

    def refresh(self, state):
        """The periodic refresh of the running sums (``record.refresh``), then the workers'
        copies and the groups' partial totals: ``(state, status)``."""
        stats, total, status = self._fresh(state)
        state.stats[:] = stats
        state.total[:] = total
        state = state._replace(log_g=float(self.setup.fns.log_density(
            self.setup.s_dp, np.ascontiguousarray(total), self.setup.params)))
        if status == OK:
            self.backend.call("set_sums", "refreshing the running sums",
                              np.array(state.total), np.array(state.stats))
            self.recount(state)
        return state, status

    def advance(self, rng, state, start: int, stop: int, tune: int, trace):
        """Iterations ``start..stop-1`` (as :func:`dawrap.samplers.record.step` with the
        grouped sweep), each kept draw stored by the chain's ``keep`` (the run loop's):
        ``(state, done, status)``."""
        setup = self.setup
        model, inputs = setup.model, setup.inputs
        n = self.partition.records.shape[0]
        for it in range(start, stop):
            tuning = it < tune
            if setup.compiled_kernel:
                theta_new, kernel_info = setup.kernel.step(
                    rng, state.theta, state.x, state.stats.copy(), state.kernel_state, tuning)
            else:
                x_view = state.x.view()
                x_view.flags.writeable = False
                theta_new, kernel_info = theta_output(
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
            accepted, min_log_alpha = 0, 0.0
            for s in range(inputs.sweeps):
                got, low, status = self.sweep(rng, state, recount=s == inputs.sweeps - 1)
                if status != OK:
                    return state, it, status
                accepted += got
                min_log_alpha = min(min_log_alpha, low)
            state = state._replace(log_g=float(setup.fns.log_density(
                inputs.s_dp, np.ascontiguousarray(state.total), inputs.params)))
            if (it + 1) % record.REFRESH_EVERY == 0:
                state, status = self.refresh(state)
                if status != OK:
                    return state, it, status
            if it >= tune:
                swept = parallel.info_of(accepted, n * inputs.sweeps, min_log_alpha, OK,
                                         move_accept)
                info = record.RecordInfo(OK, swept.accept_rate, swept.min_accept_prob,
                                         as_floats(kernel_info), swept.move_accept)
                setup.chain.keep(it - tune, state, info, *trace)
        return state, stop, OK
