"""What every sampler returns before labelling: the one result type of all methods."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Output"]


class Output(NamedTuple):
    """A method's draws before labelling: ``theta`` is ``(chains, draws, theta_size)``."""
    theta: np.ndarray
    sample_stats: dict  # name -> (chains, draws) array, as ArviZ's sample_stats group
    imputed: np.ndarray | None  # (chains, draws, size): the imputed noise-free release
    # (chains, k, n, record_size): imputed databases kept at the kept draws `database_draws`
    databases: np.ndarray | None = None
    database_draws: np.ndarray | None = None
