"""Running independent chains side by side, and what every method returns."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np

__all__ = ["Output", "run_parallel"]


class Output(NamedTuple):
    """A method's draws before labelling: ``theta`` is ``(chains, draws, theta_size)``."""
    theta: np.ndarray
    sample_stats: dict
    imputed: np.ndarray | None  # (chains, draws, size): the imputed noise-free release


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
