r"""The dask backend: a grouped chain's workers on the workers of a ``dask.distributed``
cluster.

Each cluster worker holds one :class:`GroupActor` (a dask *actor*, state that stays on its
worker): a :class:`~dawrap.runner.group_worker.GroupWorker` with the records of its groups,
their generators and its copies of the running sums. The client holds theta, the running
sums and the chain's own generator, and runs the one grouped iteration
(:mod:`dawrap.runner.grouped`); per sweep O(cells + theta) floats move, never a record.

The records are scattered to the workers once, when the chain starts, and pulled back only
for a checkpoint or a kept database (``Record(databases=...)``). The model and mechanism
reach the workers by their :func:`dawrap.recipe` (the rule of the studies' executors): a
worker rebuilds them by importing their factories, so these must be in modules the workers
can import. A worker lost during the run stops it with a ``RuntimeError`` naming the worker,
its groups and what it was doing; so does a worker that does not answer a call within the
option's ``timeout`` seconds (hung rather than lost: a deadlock or a stopped process, which
the scheduler may take minutes to give up on, or never). The checkpoint folder keeps the
last checkpoint written.
"""
from __future__ import annotations

import asyncio
import gc
import logging
import pickle
import time
import warnings
from typing import NamedTuple

import numpy as np

from ...samplers import parallel
from ..group_worker import GroupWorker

__all__ = ["DaskBackend", "GroupActor", "check_client", "logger"]

#: Where a finished chain reports its sweeps' timings (``extra={"timings": {...}}``).
logger = logging.getLogger("dawrap.dask")

#: Seconds the chain's start and the first call of each of its steps (which compile code on
#: the workers) may take at least, whatever the option's ``timeout``.
START_TIMEOUT = 600.0


def check_client(client) -> None:
    """Check that ``client`` is a ``dask.distributed.Client`` (a TypeError otherwise)."""
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - distributed is in the test extra
        raise ImportError("dw.parallel.Dask: running a chain on a dask cluster needs the "
                          "distributed package: pip install 'dawrap[distributed]'") from None
    if not isinstance(client, Client):
        raise TypeError(f"dw.parallel.Dask: client must be a dask.distributed.Client (a "
                        f"chain's groups are held by the cluster's workers), got "
                        f"{type(client).__name__}")


def _rebuild(blob: bytes):
    """The model and mechanism from their recipes, on a worker, with a clear error."""
    try:
        return pickle.loads(blob)
    except Exception as err:  # ImportError, AttributeError: the factory is not there
        raise RuntimeError(
            f"dw.parallel.Dask: a dask worker could not rebuild the model and mechanism from "
            f"their @dw.recipe factories ({type(err).__name__}: {err}): a cluster's workers "
            f"import the factories, so they must live in a module the workers can import "
            f"(installed or on their path, not a script's __main__)") from None


class ChainRecipe(NamedTuple):
    """What a worker rebuilds the chain's setup from: the model and mechanism pickled by
    their recipes (``blob``), the release, ``n`` and the sweep's settings."""
    blob: bytes
    s_dp: np.ndarray
    n: int
    sweeps: int
    random_scan: bool


class GroupActor(GroupWorker):
    """A :class:`~dawrap.runner.group_worker.GroupWorker` living on a cluster's worker: it
    rebuilds the model and mechanism from its ``recipe`` and compiles its group pass there."""

    def __init__(self, recipe: ChainRecipe, x, layout, rngs, total, stats):
        from ..record import _Setup

        blob, s_dp, n, sweeps, random_scan = recipe
        # Arrays that arrive from another process may be read-only, which numba types apart
        # (another compilation, and the sweep writes x): writable copies, O(cells + n/W).
        x, s_dp = np.array(x), np.array(s_dp)
        layout = layout._replace(**{name: np.array(getattr(layout, name)) for name in (
            "cells", "stats_owner", "slot_of", "piece_scale", "own_cells", "own_stats")})
        model, mechanism = _rebuild(blob)
        setup = _Setup(model, mechanism, s_dp, n, 0, sweeps, random_scan, None)
        fns = parallel.bind_groups(setup.fns, setup.options, layout.stats_owner.shape[0] > 0)
        super().__init__(setup, fns, layout, x, rngs, np.array(total), np.array(stats),
                         local=False)


def _step_key(method: str, per_worker) -> str:
    """What compiles on a worker's first call: a step, and each part of the records move."""
    return f"move {per_worker[0]}" if method == "move" else method


#: Seconds to wait for a worker when the cluster has none (at most the call timeout).
WORKER_GRACE = 60.0


class DaskBackend:
    """Workers on a dask cluster (the backend protocol of :mod:`dawrap.runner.backends`):
    ``client`` a ``dask.distributed.Client``, ``timeout`` the seconds to wait for the
    workers' answer to one call, ``chain`` the chain's number (for messages)."""

    local = False

    def __init__(self, client, timeout: float, chain: int):
        self.client, self.timeout, self.chain = client, float(timeout), chain
        self.addresses = sorted(client.scheduler_info()["workers"])
        if not self.addresses:
            # The client's view of the workers is refreshed every few seconds, and a nanny
            # restarts a lost worker under a new address: wait for one (at most the timeout,
            # and a minute) before calling the cluster empty.
            try:
                client.wait_for_workers(1, timeout=min(self.timeout, WORKER_GRACE))
            except Exception:  # distributed's TimeoutError (or an older client's)
                pass
            self.addresses = sorted(client.scheduler_info()["workers"])
        if not self.addresses:
            raise RuntimeError(f"dw.parallel.Dask: the dask cluster has no workers (none "
                               f"joined within {min(self.timeout, WORKER_GRACE):g} s)")
        self.actors, self.assigned, self._futures = [], [], []
        self.called = set()  # the steps called once (their code compiled on the workers)
        self.sweeps, self.communication, self.computation = 0, 0.0, 0.0

    def workers(self, groups: int) -> int:
        """At most one worker per group (a warning when the cluster has more)."""
        if len(self.addresses) > groups:
            warnings.warn(f"the dask cluster has {len(self.addresses)} workers but the "
                          f"partition has {groups} group(s): {groups} worker(s) will sweep "
                          f"them (the draws are the same)", UserWarning, stacklevel=5)
        return min(len(self.addresses), groups)

    def start(self, setup, fns, layouts, x, rngs, total, stats) -> None:
        """Scatter each worker's records and build its actor there."""
        try:
            blob = pickle.dumps((setup.model, setup.mechanism))
        except (TypeError, AttributeError, pickle.PicklingError) as err:
            raise TypeError(f"dw.parallel.Dask sends the model and mechanism to the dask "
                            f"workers, but they cannot be pickled: {err}") from err
        recipe = ChainRecipe(blob, setup.s_dp, setup.n, setup.inputs.sweeps, setup.random_scan)
        self.addresses = self.addresses[:len(layouts)]
        self.assigned = [layout.groups for layout in layouts]
        pending, scattered = [], []
        for address, layout, r in zip(self.addresses, layouts, rngs):
            ids = np.concatenate(layout.ids)
            # the records, scattered once to the worker that keeps them
            records = self.client.scatter(np.ascontiguousarray(x[ids]), workers=[address],
                                          direct=True)
            scattered.append(records)
            pending.append(self.client.submit(
                GroupActor, recipe, records, layout, r, np.array(total), np.array(stats),
                workers=[address],
                actor=True, pure=False, allow_other_workers=False))
        patience = self._patience("__init__")
        deadline = time.monotonic() + patience
        for address, future in zip(self.addresses, pending):
            self.actors.append(self._result(future, address, "starting the chain", deadline,
                                            patience))
        for future in scattered:  # the actors hold the records now
            future.release()
        self._futures = pending  # the actors live as long as their futures

    def call(self, method: str, doing: str, *per_worker) -> list:
        """``actor.method(*args)`` on every worker at once; the results in worker order."""
        began = time.perf_counter()
        futures = []
        for w, actor in enumerate(self.actors):
            args = [a[w] if isinstance(a, list) else a for a in per_worker]
            try:
                futures.append(getattr(actor, method)(*args))
            except (RuntimeError, OSError) as err:
                self._lost(self.addresses[w], doing, err)
        key = _step_key(method, per_worker)
        patience = self._patience(key)
        deadline = time.monotonic() + patience
        got = [self._result(f, a, doing, deadline, patience)
               for f, a in zip(futures, self.addresses)]
        self.called.add(key)
        if method == "sweep":  # the workers report their seconds of computation
            slowest = max(r[5] for r in got)
            self.sweeps += 1
            self.computation += slowest
            self.communication += max(0.0, time.perf_counter() - began - slowest)
        return got

    def close(self) -> None:
        """Release the workers' actors (their records go with them); log the timings."""
        if self.sweeps:
            logger.info("chain %d: %d sweeps on %d workers, %.3f s communication, %.3f s "
                        "computation", self.chain, self.sweeps, len(self.actors),
                        self.communication, self.computation,
                        extra={"timings": {"sweeps": self.sweeps, "workers": len(self.actors),
                                           "communication": self.communication,
                                           "computation": self.computation}})
            self.sweeps = 0
        self.actors = []
        for future in self._futures:  # the workers drop the records
            future.release()
        self._futures = []
        # distributed's actor calls leave reference cycles that hold the actors' handles,
        # and with them their keys: without a collection now, the workers kept a chain's
        # records until Python's collector ran, and a run of 4 chains held up to two
        # chains' at once (a worker's peak 1.05 GB against 0.51 GB for one chain at 10^7
        # records: benchmarks/results/parallel_dask.md)
        gc.collect()

    # -- waiting for the workers ----------------------------------------------------------

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

    def _patience(self, key: str) -> float:
        """Seconds to wait for the workers' answer to the step ``key``: ``timeout``, and at
        least START_TIMEOUT for the start and each step's first call (which compile code on
        the workers)."""
        return self.timeout if key in self.called else max(self.timeout, START_TIMEOUT)

    def _groups_of(self, address: str) -> list:
        return self.assigned[self.addresses.index(address)] if address in self.addresses \
            else []

    def _lost(self, address: str, doing: str, err) -> None:
        groups = self._groups_of(address)
        raise RuntimeError(f"dw.parallel.Dask: the dask worker {address}, which held groups "
                           f"{groups} of chain {self.chain}'s records, was lost while {doing} "
                           f"({err}); the run stops (its records are gone). A checkpoint "
                           f"folder keeps the last checkpoint written: resume it on a cluster "
                           f"or with threads") from None

    def _hung(self, address: str, doing: str, waited: float) -> None:
        groups = self._groups_of(address)
        raise RuntimeError(f"dw.parallel.Dask: the dask worker {address}, which holds groups "
                           f"{groups} of chain {self.chain}'s records, did not answer within "
                           f"{waited:g} s while {doing}: it may hang (a deadlock, a stopped "
                           f"process, a machine swapping). The run stops; a checkpoint folder "
                           f"keeps the last checkpoint written: resume it on a cluster or "
                           f"with threads. If its sweeps are that slow, raise "
                           f"dw.parallel.Dask(..., timeout=...)") from None
