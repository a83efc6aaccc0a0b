"""Running independent tasks through any ``concurrent.futures.Executor``.

Studies are embarrassingly parallel. A task is a picklable module-level function and its
arguments; each result arrives with its task's index, so where and in which order tasks ran
cannot change the result. ``executor`` may be

* ``"processes"`` (the default): a local pool, one worker process per core, each using one
  numba thread. Workers are started with ``spawn``: forking a process that already runs
  threads (numba's, or chains of ``dw.sample``) can deadlock.
* ``"threads"``: a thread pool in this process (compiled chains release the GIL); no
  pickling, so it also runs models that are not built by a :func:`dawrap.recipe`.
* ``"serial"``: one task after another, in this thread.
* any :class:`concurrent.futures.Executor`, e.g. a dask cluster's ``client.get_executor()``.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor, as_completed

from ..runner.chains import interrupting_running

__all__ = ["EXECUTORS", "run_tasks"]

EXECUTORS = ("processes", "threads", "serial")


def _one_numba_thread() -> None:
    import numba

    numba.set_num_threads(1)


def _own_executor(kind: str, workers: int) -> Executor:
    if kind == "threads":
        return ThreadPoolExecutor(max_workers=workers)
    return ProcessPoolExecutor(max_workers=workers, initializer=_one_numba_thread,
                               mp_context=multiprocessing.get_context("spawn"))


def run_tasks(function: Callable, args: tuple, indices: Iterable[int], executor=None,
              on_result: Callable[[int, object], None] = lambda i, r: None,
              workers: int | None = None) -> None:
    """Call ``function(*args, i)`` for every ``i`` in ``indices``; ``on_result(i, result)``
    is called in this thread as each finishes. On an error or Ctrl-C, tasks not yet started
    are cancelled and the exception propagates (results already passed on are kept); on
    Ctrl-C, sampling in tasks running in threads is told to stop
    (:func:`dawrap.runner.chains.interrupting_running`)."""
    indices = list(indices)
    executor = "processes" if executor is None else executor
    if isinstance(executor, str) and executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS} or a "
                         f"concurrent.futures.Executor, got {executor!r}")
    if not isinstance(executor, str) and not callable(getattr(executor, "submit", None)):
        raise TypeError(f"executor must be one of {EXECUTORS} or a concurrent.futures."
                        f"Executor (with .submit), got {type(executor).__name__}")
    if executor == "serial" or not indices:
        for i in indices:
            on_result(i, function(*args, i))
        return
    if executor != "threads" and not isinstance(executor, ThreadPoolExecutor):
        try:  # fail here, with advice, rather than inside a worker
            pickle.dumps(args)
        except (TypeError, AttributeError, pickle.PicklingError) as err:
            raise TypeError(f"executor={executor!r} sends the study to other processes, "
                            f"but it cannot be pickled: {err}") from err
    owned = isinstance(executor, str)
    pool = _own_executor(executor, workers or os.cpu_count() or 1) if owned else executor
    futures, interrupted = {}, False
    try:
        for i in indices:
            futures[pool.submit(function, *args, i)] = i
        for future in as_completed(futures):
            on_result(futures[future], future.result())
    except BaseException as err:
        for future in futures:
            future.cancel()
        interrupted = isinstance(err, KeyboardInterrupt)
        raise
    finally:
        # Ctrl-C reaches only this thread: tasks running in threads (sampling under
        # interruptions_raise) are told to stop at their next chunk, not to run on.
        with interrupting_running() if interrupted else contextlib.nullcontext():
            if owned:
                pool.shutdown(wait=True, cancel_futures=True)
