r"""One chain whose groups of records are swept on the workers of a dask cluster.

The within-chain parallel sweep (:mod:`dawrap.samplers.parallel`, driven on threads by
:mod:`dawrap.runner.parallel`) splits the records into groups that, given theta and the
shared cells' pieces, are conditionally independent. Here the groups live on the workers of
a ``dask.distributed`` cluster instead of on threads: each worker holds one
:class:`GroupActor` (a dask *actor*, state that stays on its worker) with the records of its
groups, their generators and their partial sums; the client holds theta, the running sums
and the chain's own generator. One iteration is

1. theta's kernel, on the client, from the running statistic ``stats`` (the records stay on
   the workers, so the kernel must read them only through ``stats``:
   :func:`kernel_reads_records`);
2. per sweep, the shared cells' pieces :math:`r_{gk}` drawn on the client with the chain's
   generator (:func:`dawrap.samplers.parallel.draw_pieces`, O(groups x shared cells); for
   Laplace and geometric noise after the shared cells' latent variances,
   :func:`dawrap.samplers.parallel.draw_scales`, sent along as the pieces' scales), sent
   with theta to every worker; every worker sweeps its groups
   (:func:`dawrap.samplers.parallel.group_pass`, each group with its own generator) and
   returns its groups' partial totals of the shared cells, the totals of the cells its
   groups own, and its groups' model-statistic rows: O(cells + theta) floats move per sweep,
   never a record (a model with ``stat_every="iteration"`` recounts its statistic on the
   workers, each group from its own records, in the iteration's last sweep call:
   :func:`dawrap.samplers.parallel.group_stats`);
3. the client folds those into the running sums in group order, as the threaded run does.

Every group reads and writes the same numbers with the same generator as on threads, and the
client folds them in the same order, so the draws for a seed are bit-identical to
``dw.Record(threads=k)`` with the same partition (for any ``k``), and a checkpoint of one is
resumed by the other. The one difference: the refresh every
:data:`~dawrap.samplers.record.REFRESH_EVERY` iterations recomputes the running sums as a sum
of the workers' partial sums, not in record order; for an integer statistic (counts, as the
census and small-area releases) that is the same number, for a float statistic it may differ
in the last bits from the threaded run's after the first refresh.

The records are scattered to the workers once, when the chain starts, and pulled back only
for a checkpoint or a kept database (``Record(databases=...)``). The models are sent by
their :func:`dawrap.recipe` (the rule of the studies' executors): a worker rebuilds the
model and mechanism by importing their factories, so these must be in modules the workers
can import. A worker lost during the run stops it with a ``RuntimeError`` naming the worker,
its groups and the iteration; so does a worker that does not answer a call within
``Record(worker_timeout=...)`` seconds (hung rather than lost: a deadlock or a stopped
process, which the scheduler may take minutes to give up on, or never). The checkpoint
folder keeps the last checkpoint written.
"""
from __future__ import annotations

import ast
import asyncio
import gc
import inspect
import logging
import math
import pickle
import textwrap
import time
import warnings

import numpy as np

from ..samplers import parallel, record
from ..samplers.status import OK, BAD_SUPPORT
from .parallel import draw_pieces, fold_recount, fold_sweep, later_rate, move_parts

__all__ = ["DistributedChain", "GroupActor", "check_client", "cluster_partition",
           "kernel_reads_records", "logger"]

#: Where a finished chain reports its sweeps' timings (``extra={"timings": {...}}``).
logger = logging.getLogger("dawrap.dask")

#: Seconds the chain's start and the first call of each of its methods (which compile code on
#: the workers) may take at least, whatever ``Record(worker_timeout=...)``.
START_TIMEOUT = 600.0


def check_client(executor) -> None:
    """Check that ``executor`` is a ``dask.distributed.Client`` (a TypeError otherwise)."""
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - distributed is in the test extra
        raise ImportError("executor: running a chain on a dask cluster needs the distributed "
                          "package: pip install 'dawrap[distributed]'") from None
    if not isinstance(executor, Client):
        raise TypeError(f"executor must be a dask.distributed.Client (a chain's groups are "
                        f"held by the cluster's workers), got {type(executor).__name__}")


def kernel_reads_records(model) -> str | None:
    """The name of the records' argument when theta's kernel may read it, else None.

    A cluster run keeps the records on the workers, so theta's kernel is called with an
    empty database: it must use the records only through ``stats``. The check reads the
    kernel's source (that of ``draw_theta``, or of a :class:`dawrap.kernels.Kernel`'s
    ``step``): the records' argument, the third, must not appear in its body. Without source
    (a built-in, a lambda in an interactive session) it is assumed to be read.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.runner.dask_chain import kernel_reads_records
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


def cluster_partition(method, model, mechanism, x) -> parallel.Partition:
    """The partition of a chain on a cluster: ``method.partition``, else the model's
    (:func:`dawrap.runner.parallel.partition_for`), else an error saying what to pass."""
    from .parallel import partition_for

    if method.partition is None and model.partition is None:
        raise ValueError("executor needs a partition of the records into groups for the "
                         "workers: pass dw.Record(executor=..., partition=dw.Partition("
                         "records=..., cells=...)), or use a model that derives one "
                         "(Model(partition=...), as the census and small_area models do)")
    return partition_for(method, model, mechanism, x)


def _rebuild(blob: bytes):
    """The model and mechanism from their recipes, on a worker, with a clear error."""
    try:
        return pickle.loads(blob)
    except Exception as err:  # ImportError, AttributeError: the factory is not there
        raise RuntimeError(
            f"executor: a dask worker could not rebuild the model and mechanism from their "
            f"@dw.recipe factories ({type(err).__name__}: {err}): a cluster's workers import "
            f"the factories, so they must live in a module the workers can import (installed "
            f"or on their path, not a script's __main__)") from None


class GroupActor:
    """The worker-side state of one chain's groups on one worker (a dask actor).

    Holds the records of its groups (``x``, rows in group order), the groups' generators,
    the worker's copies of the running sums (valid on the cells its groups own) and the
    groups' partial totals of the shared cells. Built by :class:`DistributedChain`.
    """

    def __init__(self, blob, s_dp, n, sweeps, random_scan, x, members, groups, rngs,
                 cells, stats_owner, slot_of, piece_scale, rows_width, own_cells,
                 own_stats, total, stats, global_ids, move_layouts=(), move_theta=()):
        from .record import _Setup

        # Arrays that arrive from another process may be read-only, which numba types apart
        # (another compilation, and the sweep writes x): writable copies, O(cells + n/W).
        x, s_dp, cells, stats_owner, slot_of, piece_scale, global_ids = (
            np.array(a) for a in (x, s_dp, cells, stats_owner, slot_of, piece_scale,
                                  global_ids))
        members = [np.array(m) for m in members]
        model, mechanism = _rebuild(blob)
        setup = _Setup(model, mechanism, s_dp, n, 0, sweeps, random_scan, None)
        self.setup = setup
        self.fns = parallel.bind_groups(
            setup.fns, model.record_size, mechanism.size, model.stat_size,
            general=model.general_proposal, shared=setup.shared, random_scan=random_scan,
            batched=model.draw_records is not None, prepared=model.prepared is not None,
            stats_owned=stats_owner.shape[0] > 0, lazy_stats=setup.lazy_stats)
        # each of its groups' cells of the model's statistic (stat_every="iteration")
        self.own_stats_of = [np.flatnonzero(stats_owner == g) for g in groups]
        self.x, self.members, self.groups, self.rngs = x, members, groups, rngs
        self.cells, self.stats_owner, self.slot_of = cells, stats_owner, slot_of
        self.piece_scale = piece_scale
        self.own_cells, self.own_stats, self.global_ids = own_cells, own_stats, global_ids
        self.total, self.stats = total.copy(), stats.copy()
        self.local_total = np.zeros((len(groups), int(np.count_nonzero(slot_of >= 0))))
        self.stats_rows = np.zeros((len(groups), rows_width))
        self.theta = self.table = None
        # the model's records move in these groups (dawrap.samplers.group_moves): its parts'
        # group forms, what they read, and the entries of theta these groups draw
        parts = getattr(setup.move, "parts", (setup.move,))
        self.moves = [None if layout is None else (part.group, np.array(layout),
                                                   np.array(entries))
                      for part, layout, entries in zip(parts, move_layouts, move_theta)]

    def _global(self, result):
        """A group's result with its record as an index of the whole database."""
        *head, i, j = result
        return (*head, int(self.global_ids[i]) if i >= 0 else -1, int(j))

    def totals(self):
        """The groups' partial totals of the shared cells, recounted from the records:
        ``(local_total, results)``, a result ``(status, record, cell)`` per group."""
        results = [self._global(self.fns.totals(self.x, self.setup.s_dp, self.members[a],
                                                self.cells, self.slot_of, g,
                                                self.local_total[a]))
                   for a, g in enumerate(self.groups)]
        return self.local_total.copy(), results

    def set_sums(self, total, stats) -> None:
        """The running sums from the client (at the start and after a refresh)."""
        self.total[:], self.stats[:] = total, stats

    def sweep(self, theta, local_release, recount=False, piece_scale=None):
        """One sweep of every group of this worker with the pieces ``local_release`` (its
        groups' rows), seen through noise of inverse sd ``piece_scale`` (Laplace and
        geometric noise: drawn on the client each sweep; None: the constant one the actor
        was built with), then with ``recount`` (the iteration's last sweep of a model with
        ``stat_every="iteration"``) each group's part of the model's statistic recounted
        from its records: ``(results, local_total, stats_rows, owned totals, owned stats,
        seconds, recounts)``, a result ``(accepted, min_log_alpha, status, record, cell)``
        per group, a recount ``(status, record, cell)`` per group (none without
        ``recount``)."""
        began = time.perf_counter()
        theta, local_release = np.array(theta), np.array(local_release)  # writable (above)
        if piece_scale is not None:
            self.piece_scale = np.array(piece_scale)
        if self.theta is None or not np.array_equal(theta, self.theta):
            self.theta, self.table = theta, self.fns.table(theta)
        setup = self.setup
        results = [self._global(self.fns.sweep(
            self.rngs[a], self.theta, self.x, setup.s_dp, setup.params, self.members[a],
            self.cells, self.slot_of, self.stats_owner, g, self.total, self.stats,
            self.stats_rows[a], self.local_total[a], local_release[a], self.piece_scale,
            self.table)) for a, g in enumerate(self.groups)]
        recounts = []
        if recount and setup.lazy_stats and all(r[2] == OK for r in results):
            recounts = [self._global(self.fns.stats(
                self.x, self.members[a], self.stats_owner, self.own_stats_of[a], g,
                self.stats, self.stats_rows[a])) for a, g in enumerate(self.groups)]
        rows = self.stats_rows.copy()
        self.stats_rows[:] = 0.0
        return (results, self.local_total.copy(), rows, self.total[self.own_cells],
                self.stats[self.own_stats], time.perf_counter() - began, recounts)

    def move(self, k, theta, local_release, piece_scale=None):
        """Part ``k`` of the model's records move in every group of this worker, with the
        pieces ``local_release`` (as :meth:`sweep`): ``(results, local_total, owned totals,
        theta's entries these groups drew, seconds)``, a result ``(accepted, proposed,
        status, record, cell)`` per group."""
        began = time.perf_counter()
        theta, local_release = np.array(theta), np.array(local_release)  # writable (above)
        if piece_scale is not None:
            self.piece_scale = np.array(piece_scale)
        group, layout, entries = self.moves[k]
        table, setup = group.prepare(theta), self.setup
        results = [self._global(group.run(
            self.rngs[a], theta, table, self.x, self.members[a], setup.s_dp, setup.params,
            self.total, self.cells, self.slot_of, g, self.local_total[a], local_release[a],
            self.piece_scale, layout)[:5]) for a, g in enumerate(self.groups)]
        return (results, self.local_total.copy(), self.total[self.own_cells], theta[entries],
                time.perf_counter() - began)

    def sums(self, theta, log_g):
        """The running sums of this worker's records, recomputed, and the check of its
        records (support, entries): ``(stats, total, status)``."""
        setup = self.setup
        theta = np.array(theta)
        fresh = setup.chain.init(theta.copy(), self.x, setup.inputs,
                                 setup.kernel.init_state(theta.copy()),
                                 setup.init_move_state(theta.copy()))
        _, _, status = setup.chain.consistency(fresh._replace(log_g=log_g), setup.s_dp)
        return np.array(fresh.stats), np.array(fresh.total), int(status)

    def records(self):
        """The records of this worker (rows in group order) and their global indices."""
        return self.x, self.global_ids

    def generator_states(self) -> list:
        """The states of its groups' generators."""
        return [r.bit_generator.state for r in self.rngs]

    def restore(self, states) -> None:
        """Set its groups' generators to ``states``."""
        for r, s in zip(self.rngs, states):
            r.bit_generator.state = s


def _assign(sizes: np.ndarray, workers: int) -> list:
    """Groups split among ``workers`` workers: largest group first to the least loaded
    (balances records; the draws do not depend on it); each worker's groups in order."""
    load, out = np.zeros(workers), [[] for _ in range(workers)]
    for g in np.argsort(-sizes, kind="stable"):
        w = int(np.argmin(load))
        out[w].append(int(g))
        load[w] += sizes[g]
    return [sorted(b) for b in out if b]


class DistributedChain:
    """One chain's groups held by the workers of a dask cluster (module docstring).

    The interface of :class:`dawrap.runner.parallel.GroupedChain` (``recount``, ``sweep``,
    ``advance``, ``generator_states``, ``restore``, ``close``), plus :meth:`records` (the
    database, pulled from the workers) and :meth:`consistency`. Built from the chain's
    starting ``state`` (whose database it scatters); :attr:`state` is that state without
    its records (an empty database in their place) for the client to carry on with.
    """

    def __init__(self, setup, partition: parallel.Partition, client, rng, state, chain: int,
                 timeout: float = 600.0):
        model, mech, fns = setup.model, setup.mechanism, setup.fns
        self.timeout = float(timeout)  # seconds for the workers' answer to one call
        if fns.nnz == 0:
            raise ValueError("executor: a chain on a dask cluster needs the sparse path (a "
                             "mechanism with a separable density whose statistic is declared "
                             "with dw.declare_sparse): records must touch a few cells each")
        reads = kernel_reads_records(model)
        if reads is not None:
            name = getattr(model.draw_theta, "name", None) or getattr(
                model.draw_theta, "__name__", "draw_theta")
            raise ValueError(f"executor: theta's kernel ({name}) reads the records (its "
                             f"argument {reads!r}), which a cluster run keeps on the "
                             f"workers: it needs a kernel that uses the records only "
                             f"through stats (model_stat's sum), as the census and "
                             f"small_area models' kernels do; or run without executor")
        x = state.x
        noise = parallel.shared_noise(fns.coordinate_log_density)
        parallel.check_partition(partition, x.shape[0], mech.size, model.stat_size,
                                 noise=noise, shared_statistic=setup.shared,
                                 model_nnz=fns.model_nnz)
        try:
            blob = pickle.dumps((model, mech))
        except (TypeError, AttributeError, pickle.PicklingError) as err:
            raise TypeError(f"executor sends the model and mechanism to the dask workers, "
                            f"but they cannot be pickled: {err}") from err
        self.setup, self.partition, self.client, self.chain = setup, partition, client, chain
        G = partition.groups
        self.shared = np.ascontiguousarray(partition.shared_cells)
        K = self.shared.shape[0]
        slot_of = np.full(mech.size, -1, np.int64)
        slot_of[self.shared] = np.arange(K)
        params = np.asarray(setup.params, np.float64)
        # the pieces' inverse sd: constant for Gaussian noise (sent once, to the actors),
        # drawn each sweep with the latent variances for Laplace noise (sent with the pieces)
        self.latent = noise == "laplace"
        # The extra move's parts that run in the groups, on the workers; the others would
        # move every record on the client: left out when optional (a warning), else refused.
        parts = move_parts(setup, partition, x, parallel.pieces_pinned(
            params, self.shared, G, self.latent, mech.integer_statistic))
        left_out = [part for part, layout in parts if layout is None]
        names = "; ".join(getattr(p, "name", setup.move_name) for p in left_out)
        if any(not getattr(p, "optional", setup.move_optional) for p in left_out):
            raise ValueError(
                f"executor: the extra move ({names}) runs on the whole database, on the "
                f"client, and a chain on a dask cluster keeps the records on its workers: it "
                f"has no form that runs in the partition's groups (or, for the census pair "
                f"move, the shared cells' pieces are pinned, which only a move on the whole "
                f"database frees). Run on a cluster with interweave=False and without that "
                f"move (census.model(..., pair_moves=0); marginals.model(..., "
                f"ridge_moves=False, collapsed_moves=0)), or without executor")
        if left_out:
            warnings.warn(f"executor: the model's {names} runs on the whole database, on the "
                          f"client (no form that runs in the partition's groups, or pinned "
                          f"shared cells that only the whole database frees), and a chain on "
                          f"a dask cluster keeps the records on its workers: this chain runs "
                          f"without it (still exact; it may mix more slowly)",
                          UserWarning, stacklevel=4)
        self.move_layouts = [layout for _, layout in parts]  # None: left out
        frees = any(getattr(p, "frees_shared_cells", setup.frees_shared_cells)
                    for p, layout in parts if layout is not None)
        piece_scale = parallel.first_piece_scale(params, self.shared, G, self.latent,
                                                 mech.integer_statistic and not frees)
        self.piece_scale = piece_scale
        self.local_total = np.zeros((G, K))
        self.local_release = np.zeros((G, K))
        accumulate = model.stat_size > 0 and not setup.shared and partition.stats is None
        width = model.stat_size if accumulate else 0
        self.stats_rows = np.zeros((G, width))
        stats_owner = (partition.stats if partition.stats is not None
                       else np.zeros(0, np.int64))
        addresses = sorted(client.scheduler_info()["workers"])
        if not addresses:
            raise RuntimeError("executor: the dask cluster has no workers")
        if len(addresses) > G:
            warnings.warn(f"the dask cluster has {len(addresses)} workers but the partition "
                          f"has {G} group(s): {G} worker(s) will sweep them (the draws are "
                          f"the same)", UserWarning, stacklevel=4)
        self.assigned = _assign(partition.sizes, len(addresses))
        self.addresses = addresses[:len(self.assigned)]
        order = np.argsort(partition.records, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(partition.sizes)])
        rngs = parallel.group_generators(rng, G)
        # per part and worker, the entries of theta its groups draw (sent back after a move)
        self.move_theta = [[np.concatenate([part.group.theta_of(layout, g) for g in groups])
                            if layout is not None else np.zeros(0, np.int64)
                            for groups in self.assigned] for part, layout in parts]
        self.actors, self.own = [], []
        pending, scattered = [], []
        for w, (address, groups) in enumerate(zip(self.addresses, self.assigned)):
            ids = np.concatenate([order[bounds[g]:bounds[g + 1]] for g in groups])
            starts = np.cumsum([0] + [int(partition.sizes[g]) for g in groups])
            members = [np.arange(starts[a], starts[a + 1], dtype=np.int64)
                       for a in range(len(groups))]
            own_cells = np.flatnonzero(np.isin(partition.cells, groups))
            if setup.shared:
                own_stats = own_cells
            elif partition.stats is not None:
                own_stats = np.flatnonzero(np.isin(partition.stats, groups))
            else:
                own_stats = np.zeros(0, np.int64)
            self.own.append((own_cells, own_stats))
            # the records, scattered once to the worker that keeps them
            records = client.scatter(np.ascontiguousarray(x[ids]), workers=[address],
                                     direct=True)
            scattered.append(records)
            pending.append(client.submit(
                GroupActor, blob, setup.s_dp, setup.n, setup.inputs.sweeps, setup.random_scan,
                records, members, groups, [rngs[g] for g in groups], partition.cells,
                stats_owner, slot_of, piece_scale, width, own_cells, own_stats,
                np.array(state.total), np.array(state.stats), ids, self.move_layouts,
                [entries[w] for entries in self.move_theta], workers=[address],
                actor=True, pure=False, allow_other_workers=False))
        self.called = set()  # the actor methods called once (their code compiled)
        patience = self._patience("__init__")
        deadline = time.monotonic() + patience
        for address, future in zip(self.addresses, pending):
            self.actors.append(self._result(future, address, "starting the chain", deadline,
                                            patience))
        for future in scattered:  # the actors hold the records now
            future.release()
        self._futures = pending  # the actors live as long as their futures
        self.state = state._replace(x=np.empty((0, model.record_size)))
        self.sweeps, self.communication, self.computation = 0, 0.0, 0.0

    # -- calls to the workers -------------------------------------------------------------

    def _result(self, future, address: str, doing: str, deadline: float, patience: float):
        """``future.result()`` by ``deadline`` (``time.monotonic()``, ``patience`` seconds
        after the call), a lost worker or one that does not answer in time named in a
        RuntimeError."""
        try:
            return future.result(timeout=max(deadline - time.monotonic(), 0.001))
        except (TimeoutError, asyncio.TimeoutError):  # (before OSError, TimeoutError's base)
            self._hung(address, doing, patience)
        except RuntimeError as err:
            if "lost" not in str(err).lower():
                raise
            self._lost(address, doing, err)
        except OSError as err:  # a closed connection (distributed's CommClosedError)
            self._lost(address, doing, err)

    def _patience(self, method: str) -> float:
        """Seconds to wait for the workers' answer to the actors' ``method``:
        ``worker_timeout``, and at least START_TIMEOUT for the start (``"__init__"``) and
        each method's first call (which compile code on the workers)."""
        return self.timeout if method in self.called else max(self.timeout, START_TIMEOUT)

    def _groups_of(self, address: str) -> list:
        return self.assigned[self.addresses.index(address)] if address in self.addresses \
            else []

    def _lost(self, address: str, doing: str, err) -> None:
        groups = self._groups_of(address)
        raise RuntimeError(f"executor: the dask worker {address}, which held groups {groups} "
                           f"of chain {self.chain}'s records, was lost while {doing} ({err}); "
                           f"the run stops (its records are gone). A checkpoint folder keeps "
                           f"the last checkpoint written: resume it on a cluster or with "
                           f"threads") from None

    def _hung(self, address: str, doing: str, waited: float) -> None:
        groups = self._groups_of(address)
        raise RuntimeError(f"executor: the dask worker {address}, which holds groups {groups} "
                           f"of chain {self.chain}'s records, did not answer within "
                           f"{waited:g} s while {doing}: it may hang (a deadlock, a "
                           f"stopped process, a machine swapping). The run stops; a checkpoint "
                           f"folder keeps the last checkpoint written: resume it on a cluster "
                           f"or with threads. If its sweeps are that slow, raise "
                           f"dw.Record(worker_timeout=...)") from None

    def _call(self, method: str, doing: str, *per_worker) -> list:
        """``actor.method(*args)`` on every worker at once (``per_worker[k]`` a list of one
        argument per worker, or one value for all); the results in worker order."""
        futures = []
        for w, actor in enumerate(self.actors):
            args = [a[w] if isinstance(a, list) else a for a in per_worker]
            try:
                futures.append(getattr(actor, method)(*args))
            except (RuntimeError, OSError) as err:
                self._lost(self.addresses[w], doing, err)
        patience = self._patience(method)
        deadline = time.monotonic() + patience
        got = [self._result(f, a, doing, deadline, patience)
               for f, a in zip(futures, self.addresses)]
        self.called.add(method)
        return got

    # -- the GroupedChain interface -------------------------------------------------------

    def close(self) -> None:
        """Release the workers' actors (their records go with them)."""
        if self.sweeps:
            logger.info("chain %d: %d sweeps on %d workers, %.3f s communication, %.3f s "
                        "computation", self.chain, self.sweeps, len(self.actors),
                        self.communication, self.computation,
                        extra={"timings": {"sweeps": self.sweeps, "workers": len(self.actors),
                                           "communication": self.communication,
                                           "computation": self.computation}})
            self.sweeps = 0
        self.actors = []
        for future in getattr(self, "_futures", []):  # the workers drop the records
            future.release()
        self._futures = []
        # distributed's actor calls leave reference cycles that hold the actors' handles,
        # and with them their keys: without a collection now, the workers kept a chain's
        # records until Python's collector ran, and a run of 4 chains held up to two
        # chains' at once (a worker's peak 1.05 GB against 0.51 GB for one chain at 10^7
        # records: benchmarks/results/parallel_dask.md)
        gc.collect()

    def generator_states(self) -> list:
        """The groups' generators' states, in group order (for a checkpoint)."""
        states = [None] * self.partition.groups
        for groups, got in zip(self.assigned, self._call("generator_states", "checkpointing")):
            for g, s in zip(groups, got):
                states[g] = s
        return states

    def restore(self, states) -> None:
        """Set the groups' generators to the saved ``states``."""
        if len(states) != self.partition.groups:
            raise ValueError(f"resume: the checkpoint holds {len(states)} group generators, "
                             f"the partition has {self.partition.groups} groups")
        self._call("restore", "resuming", [[states[g] for g in groups]
                                           for groups in self.assigned])

    def records(self) -> np.ndarray:
        """The chain's database, pulled from the workers (a checkpoint, a kept database)."""
        model = self.setup.model
        x = np.empty((self.partition.records.shape[0], model.record_size))
        for part, ids in self._call("records", "collecting the records"):
            x[ids] = part
        return x

    def _raise(self, results, statistic: str, owners) -> None:
        for g, result in enumerate(results):
            status, i, j = result[-3:]
            if status == parallel.BAD_PARTITION:
                raise ValueError(parallel.partition_error(int(i), int(j), g, int(owners[j]),
                                                          statistic))
            if status != OK:
                raise ValueError(f"{record.STATUS_MESSAGES[status]} (record {i}, in group {g})")

    def _by_group(self, per_worker) -> list:
        out = [None] * self.partition.groups
        for groups, items in zip(self.assigned, per_worker):
            for g, item in zip(groups, items):
                out[g] = item
        return out

    def recount(self, state) -> None:
        """The groups' partial totals of the shared cells, recounted on the workers from
        their records (at the start and after a refresh), checking the partition."""
        got = self._call("totals", "recounting the shared cells")
        for groups, (rows, _) in zip(self.assigned, got):
            self.local_total[groups] = rows
        self._raise(self._by_group([r for _, r in got]), "mechanism's statistic",
                    self.partition.cells)

    def sweep(self, rng, state, table=None, recount: bool = False) -> tuple:
        """One sweep of every group, on the workers: ``(accepted, min_log_alpha, status)``
        (as :meth:`dawrap.runner.parallel.GroupedChain.sweep`, the same floats); with
        ``recount`` (the iteration's last sweep, ``stat_every="iteration"``) the model's
        statistic recounted there too, as
        :meth:`dawrap.runner.parallel.GroupedChain.recount_stats` does."""
        total, stats = state.total, state.stats
        draw_pieces(self, rng, state)
        began = time.perf_counter()
        got = self._call("sweep", "sweeping", np.array(state.theta),
                         [self.local_release[groups] for groups in self.assigned], recount,
                         self.piece_scale.copy() if self.latent else None)
        elapsed = time.perf_counter() - began
        slowest = max(r[5] for r in got)
        self.sweeps += 1
        self.computation += slowest
        self.communication += max(0.0, elapsed - slowest)
        for groups, (own_cells, own_stats), (_, rows, srows, t, s, _, _) in zip(
                self.assigned, self.own, got):
            self.local_total[groups] = rows
            self.stats_rows[groups] = srows
            total[own_cells] = t
            stats[own_stats] = s
        results = self._by_group([r[0] for r in got])
        status = fold_sweep(self, results, total, stats)
        if status == OK and self.setup.lazy_stats and recount:
            status = fold_recount(self, self._by_group([r[6] for r in got]), stats)
        if status != OK:
            return 0, 0.0, status
        return (sum(r[0] for r in results), min(r[1] for r in results), OK)

    def move(self, rng, state, tuning) -> tuple:
        """The model's records move in the groups, on the workers (as
        :meth:`dawrap.runner.parallel.GroupedChain.move`, the same floats; only a move whose
        every part has a group form runs here): ``(state, accept_rate, status)``."""
        rate = math.nan
        for k, layout in enumerate(self.move_layouts):
            if layout is None:  # left out (a warning said so)
                continue
            draw_pieces(self, rng, state)
            if f"move {k}" not in self.called:  # its first call compiles it on the workers:
                self.called.discard("move")      # the start's patience (_patience)
            got = self._call("move", "moving records", k, np.array(state.theta),
                             [self.local_release[groups] for groups in self.assigned],
                             self.piece_scale.copy() if self.latent else None)
            self.called.add(f"move {k}")
            for groups, (own_cells, _), entries, (_, rows, t, drawn, _) in zip(
                    self.assigned, self.own, self.move_theta[k], got):
                self.local_total[groups] = rows
                state.total[own_cells] = t
                state.theta[entries] = drawn
            results = self._by_group([r[0] for r in got])
            status = fold_sweep(self, results, state.total, state.stats)
            if status != OK:
                return state, math.nan, status
            rate = later_rate(rate, results)
        return state, rate, OK

    def _fresh(self, state):
        """The running sums recomputed on the workers (partial sums added in worker order)
        and whether they agree with ``state``'s: ``(stats, total, status)``."""
        got = self._call("sums", "recomputing the running sums", np.array(state.theta),
                         float(state.log_g))
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
        """The check of the chain's last iteration (``record.consistency``), on the
        workers' records: a status."""
        return self._fresh(state)[2]

    def refresh(self, state):
        """The periodic refresh of the running sums (``record.refresh``), then the workers'
        copies and partial totals: ``(state, status)``."""
        stats, total, status = self._fresh(state)
        state.stats[:] = stats
        state.total[:] = total
        state = state._replace(log_g=float(self.setup.fns.log_density(
            self.setup.s_dp, np.ascontiguousarray(total), self.setup.params)))
        if status == OK:
            self._call("set_sums", "refreshing the running sums", np.array(state.total),
                       np.array(state.stats))
        return state, status

    def advance(self, rng, state, start: int, stop: int, tune: int, trace):
        """Iterations ``start..stop-1`` (as :meth:`GroupedChain.advance
        <dawrap.runner.parallel.GroupedChain.advance>`, the sweeps on the workers):
        ``(state, done, status)``."""
        from .record import _theta_output  # (that module imports this one)

        setup = self.setup
        model, inputs = setup.model, setup.inputs
        n = self.partition.records.shape[0]
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
            accepted, min_log_alpha = 0, 0.0
            for s in range(inputs.sweeps):
                got, low, status = self.sweep(rng, state,
                                              recount=s == inputs.sweeps - 1)
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
                self.recount(state)
            if it >= tune:
                swept = parallel.info_of(accepted, n * inputs.sweeps, min_log_alpha, OK,
                                         move_accept)
                info = record.RecordInfo(OK, swept.accept_rate, swept.min_accept_prob,
                                         float(theta_accept), swept.move_accept)
                setup.chain.keep(it - tune, state, info, *trace)
        return state, stop, OK
