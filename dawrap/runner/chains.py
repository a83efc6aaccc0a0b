"""Running independent chains side by side, with Ctrl-C deferred to safe points."""
from __future__ import annotations

import contextlib
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
__all__ = ["run_parallel", "deferred_interrupt"]


def run_parallel(tasks, cores: int, on_interrupt=None) -> list:
    """Call each zero-argument task, up to ``cores`` at once in threads (compiled chains
    release the GIL); results in task order, so they cannot depend on ``cores``.

    Ctrl-C reaches only the main thread: ``on_interrupt()`` is then called (it should tell the
    tasks to stop) and their results are still collected."""
    if cores <= 1 or len(tasks) <= 1:
        return [task() for task in tasks]
    with ThreadPoolExecutor(max_workers=cores) as pool:
        futures = [pool.submit(task) for task in tasks]
        results = []
        for future in futures:
            while True:
                try:
                    results.append(future.result())
                    break
                except KeyboardInterrupt:
                    if on_interrupt is None:
                        raise
                    on_interrupt()
        return results


@contextlib.contextmanager
def deferred_interrupt(on_interrupt):
    """Inside the block, Ctrl-C (SIGINT) calls ``on_interrupt()`` instead of raising
    ``KeyboardInterrupt``; the caller stops at its next safe point.

    Why: a ``KeyboardInterrupt`` raised while numba boxes a compiled function's return value
    (a NamedTuple state) crashes the interpreter with SIGSEGV, and one raised inside numba's
    compiler is lost. With this handler no exception is ever raised in the middle of compiled
    code or compilation: the main thread records the request (``on_interrupt`` typically sets
    a ``threading.Event`` the chains poll between chunks) and carries on to a point where it
    can return the draws so far. Yields a list that holds ``True`` once Ctrl-C was pressed.

    Only the main thread receives signals and may install handlers; elsewhere (a worker
    thread of a study) the block runs unchanged.
    """
    pressed: list = []
    if threading.current_thread() is not threading.main_thread():
        yield pressed
        return

    def handler(signum, frame):
        pressed.append(True)
        on_interrupt()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, previous)
