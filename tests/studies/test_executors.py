"""Running a study's tasks (dawrap.studies.executors): every index reaches on_result once
with its own result, whichever executor; bad executors and unpicklable studies are refused
before anything runs; an error stops the study and cancels what has not started."""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from dawrap.studies.executors import run_tasks


def square_plus(offset, i):
    return offset + i * i


@pytest.mark.parametrize("executor", ["serial", "threads", "custom"])
def test_every_index_gets_its_own_result(executor):
    results = {}
    pool = ThreadPoolExecutor(max_workers=3) if executor == "custom" else None
    try:
        run_tasks(square_plus, (100,), range(7), executor=pool or executor,
                  on_result=lambda i, r: results.setdefault(i, r), workers=3)
    finally:
        if pool is not None:
            pool.shutdown()
    assert results == {i: 100 + i * i for i in range(7)}


def test_on_result_runs_in_the_calling_thread():
    threads = set()
    run_tasks(square_plus, (0,), range(4), executor="threads", workers=2,
              on_result=lambda i, r: threads.add(threading.current_thread()))
    assert threads == {threading.current_thread()}


def test_no_tasks_is_nothing_to_do():
    run_tasks(square_plus, (0,), [], executor="processes",
              on_result=lambda i, r: pytest.fail("no task should run"))


@pytest.mark.parametrize("executor, error, said", [
    ("dask", ValueError, r"executor must be one of \('processes', 'threads', 'serial'\)"),
    (object(), TypeError, r"concurrent.futures.Executor \(with .submit\), got object"),
])
def test_a_bad_executor_is_refused(executor, error, said):
    with pytest.raises(error, match=said):
        run_tasks(square_plus, (0,), range(2), executor=executor)


def test_a_study_that_cannot_be_pickled_is_refused_before_a_process_starts():
    with pytest.raises(TypeError, match=r"executor='processes' sends the study to other "
                                        r"processes, but it cannot be pickled"):
        run_tasks(square_plus, (lambda: 0,), range(2), executor="processes")


def test_an_error_propagates_and_tasks_not_started_are_cancelled():
    started = []

    def task(i):
        started.append(i)
        if i == 0:
            raise RuntimeError("trial 0 failed")
        time.sleep(0.05)
        return i

    with pytest.raises(RuntimeError, match="trial 0 failed"):
        run_tasks(task, (), range(40), executor="threads", workers=1)
    assert len(started) < 40  # the queue was cancelled, not run to its end
