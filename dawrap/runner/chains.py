"""Running independent chains side by side, with Ctrl-C deferred to safe points."""
from __future__ import annotations

import contextlib
import signal
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

__all__ = ["run_parallel", "deferred_interrupt", "interruptions_raise", "interrupting_running",
           "interrupted", "Chunks", "CHUNK_SECONDS"]

#: Seconds of compiled work per call of a chain's loop: between two calls the runner looks
#: at Ctrl-C, writes checkpoints and updates the progress line. A call costs tens of
#: microseconds of Python, so at 0.1 s the round trips are free and Ctrl-C is prompt.
CHUNK_SECONDS = 0.1
#: Most iterations per call, and the most a chunk may grow from one call to the next (the
#: first call may include compiling; a rate measured on it would be far too slow).
MAX_CHUNK, GROWTH = 1_000_000, 8


class Chunks:
    """How many iterations a chain runs per compiled call: sized by the measured time per
    iteration so that a call takes about :data:`CHUNK_SECONDS`, whatever an iteration costs
    (``n``, ``sweeps``, the model). The first call runs one iteration.

    Chunking never changes the draws: the state and the generator carry over from one call
    to the next, and an iteration depends only on its index (``tests/runner``).

    Examples
    --------
    >>> chunks = Chunks()
    >>> chunks.stop(0, 1000)                  # one iteration first
    1
    >>> chunks.timed(1, 0.001)                # 1 ms per iteration: 8x more next (at most)
    >>> chunks.stop(1, 1000)
    9
    >>> chunks.stop(1, 1000, every=5)         # a checkpoint is due after iteration 5
    5
    """

    def __init__(self):
        self.size = 1

    def stop(self, done: int, total: int, every: int | None = None) -> int:
        """Where the next call ends: ``size`` iterations on from ``done``, not past ``total``
        nor the next multiple of ``every`` (a checkpoint)."""
        stop = min(total, done + self.size)
        return stop if not every else min(stop, (done // every + 1) * every)

    def timed(self, iterations: int, seconds: float) -> None:
        """Record that the last call ran ``iterations`` in ``seconds``."""
        if iterations <= 0:
            return
        wanted = iterations * CHUNK_SECONDS / seconds if seconds > 0 else float("inf")
        self.size = int(max(1, min(MAX_CHUNK, self.size * GROWTH, wanted)))


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
    thread of a study) the block runs unchanged, except that under :func:`interruptions_raise`
    :func:`interrupting_running` reaches it.

    Under :func:`interruptions_raise`, a block in which Ctrl-C was pressed ends by raising
    ``KeyboardInterrupt`` (once its chains have stopped), even if they had all finished.
    """
    pressed: list = []

    def interrupt(*_):
        pressed.append(True)
        on_interrupt()

    raising = interruptions_raise.active()
    if raising:
        with _LOCK:
            _RUNNING.add(interrupt)
            if _STOPPING:  # begun while its study is being stopped
                interrupt()
    try:
        if threading.current_thread() is not threading.main_thread():
            yield pressed
        else:
            previous = signal.signal(signal.SIGINT, interrupt)
            try:
                yield pressed
            finally:
                signal.signal(signal.SIGINT, previous)
    finally:
        if raising:
            with _LOCK:
                _RUNNING.discard(interrupt)
    if pressed and raising:
        raise KeyboardInterrupt("sampling interrupted")


#: The ``on_interrupt`` of every deferred block entered under :func:`interruptions_raise`
#: (in any thread): what :func:`interrupting_running` calls.
_RUNNING: set = set()
#: Non-empty while :func:`interrupting_running` stops them.
_STOPPING: list = []
_LOCK = threading.Lock()
_POLICY = threading.local()


class interruptions_raise(contextlib.ContextDecorator):
    """In this thread, within the block, a Ctrl-C that stops sampling raises
    ``KeyboardInterrupt`` instead of returning the draws so far.

    What a calibration trial needs (:func:`dawrap.studies.calibration.run_trial`): a trial
    computed from chains cut short would be stored as complete and never run again.

    Examples
    --------
    >>> with interruptions_raise():
    ...     interruptions_raise.active()
    True
    >>> interruptions_raise.active()
    False
    """

    def __enter__(self):
        _POLICY.depth = getattr(_POLICY, "depth", 0) + 1
        return self

    def __exit__(self, *exc):
        _POLICY.depth -= 1
        return False

    @staticmethod
    def active() -> bool:
        """Whether this thread is inside such a block."""
        return getattr(_POLICY, "depth", 0) > 0


@contextlib.contextmanager
def interrupting_running():
    """Within the block, every run in a deferred block under :func:`interruptions_raise`, in
    any thread, running or starting, is interrupted as Ctrl-C would interrupt it: what the
    main thread does on Ctrl-C while a study's trials run in worker threads, which signals
    do not reach (until they have stopped). Each stops at its next chunk and raises
    ``KeyboardInterrupt`` in its own thread."""
    with _LOCK:
        _STOPPING.append(True)
        running = list(_RUNNING)
    for interrupt in running:
        interrupt()
    try:
        yield
    finally:
        with _LOCK:
            _STOPPING.pop()


def interrupted(message: str, stacklevel: int) -> None:
    """Report a run whose chains were stopped by Ctrl-C before the end: a warning that the
    draws so far are returned, or, under :func:`interruptions_raise`, ``KeyboardInterrupt``."""
    if interruptions_raise.active():
        raise KeyboardInterrupt(message.split(":")[0])
    warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)
