"""Running chains side by side (dawrap.runner.chains): results in task order whatever the
threads, and Ctrl-C turned into a call at a safe point, in the main thread only."""
import os
import signal
import threading
import time

import pytest

from dawrap.runner.chains import deferred_interrupt, run_parallel


def test_results_come_in_task_order_whatever_the_cores():
    """Later tasks finish first here; the results must still be in task order."""
    def task(i):
        def run():
            time.sleep(0.02 * (4 - i))
            return i * i
        return run

    tasks = [task(i) for i in range(5)]
    for cores in (1, 2, 8):
        assert run_parallel(tasks, cores) == [0, 1, 4, 9, 16]


def test_tasks_run_in_threads_at_once_when_cores_allow():
    """Two tasks that each wait for the other can finish only if they run concurrently."""
    barrier = threading.Barrier(2, timeout=10)
    tasks = [lambda: barrier.wait() >= 0] * 2
    assert run_parallel(tasks, cores=2) == [True, True]


def test_a_task_error_propagates():
    def fails():
        raise RuntimeError("chain 1 failed")

    with pytest.raises(RuntimeError, match="chain 1 failed"):
        run_parallel([lambda: 0, fails], cores=2)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach the main thread only")
def test_ctrl_c_inside_the_block_calls_on_interrupt_instead_of_raising():
    calls = []
    before = signal.getsignal(signal.SIGINT)
    with deferred_interrupt(lambda: calls.append("stop")) as pressed:
        assert pressed == []
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler runs in the main thread between bytecodes
        assert calls == ["stop"] and pressed == [True]
    assert signal.getsignal(signal.SIGINT) is before  # restored on leaving


def test_the_previous_handler_is_restored_after_an_error():
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(ValueError):
        with deferred_interrupt(lambda: None):
            raise ValueError("inside")
    assert signal.getsignal(signal.SIGINT) is before


def test_outside_the_main_thread_the_block_runs_unchanged():
    """A study's worker thread cannot install a signal handler: the block must still run."""
    seen = {}

    def worker():
        with deferred_interrupt(lambda: None) as pressed:
            seen["pressed"] = pressed
            seen["handler"] = signal.getsignal(signal.SIGINT)

    before = signal.getsignal(signal.SIGINT)
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == {"pressed": [], "handler": before}
