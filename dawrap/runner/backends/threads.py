"""The threads backend: a grouped chain's workers on a thread pool of this process.

Each worker is a :class:`~dawrap.runner.group_worker.GroupWorker` over the chain's own
database and running sums (no copies): its groups write only their own cells, so the workers
run at once. The group pass is compiled with numba's ``nogil``, so the threads sweep in
parallel; the Python dispatch, one call per worker and step, is small against a sweep of
many records. Which thread runs which group changes nothing any group reads or writes, so
the draws are those of one thread (and of a dask cluster).
"""
from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor

from ..group_worker import GroupWorker

__all__ = ["ThreadsBackend"]


class ThreadsBackend:
    """Workers on ``threads`` threads (the backend protocol of
    :mod:`dawrap.runner.backends`)."""

    local = True

    def __init__(self, threads: int):
        self.threads = int(threads)
        self.pool, self.workers_ = None, []

    def workers(self, groups: int) -> int:
        """At most one thread per group (a warning when more were asked)."""
        if self.threads > groups:
            warnings.warn(f"threads = {self.threads} but the partition has {groups} "
                          f"group(s): {groups} thread(s) will sweep them (the draws are the "
                          f"same)", UserWarning, stacklevel=5)
        return min(self.threads, groups)

    def start(self, setup, fns, layouts, x, rngs, total, stats) -> None:
        """One worker per layout over the chain's ``x``, ``total`` and ``stats``."""
        self.workers_ = [GroupWorker(setup, fns, layout, x, r, total, stats, local=True)
                         for layout, r in zip(layouts, rngs)]
        if len(self.workers_) > 1:
            self.pool = ThreadPoolExecutor(len(self.workers_))

    def call(self, method: str, doing: str, *per_worker) -> list:
        """``worker.method(*args)`` on every worker, on the pool; results in worker order."""
        calls = [(getattr(w, method), [a[k] if isinstance(a, list) else a
                                       for a in per_worker])
                 for k, w in enumerate(self.workers_)]
        if self.pool is None:
            return [f(*args) for f, args in calls]
        return [f.result() for f in [self.pool.submit(f, *args) for f, args in calls]]

    def close(self) -> None:
        """Stop the thread pool."""
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
        self.workers_ = []
