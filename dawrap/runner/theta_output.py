"""What a plain Python ``draw_theta`` returns, checked and normalised (the record chain and
the grouped chain both call it once per iteration)."""
from __future__ import annotations

import numpy as np

from .._checks import is_real

__all__ = ["theta_output"]


def theta_output(out, model, name: str):
    """Normalise a kernel's return value to ``(theta, accept_prob)``, validating theta."""
    if isinstance(out, tuple) and len(out) != 2:
        raise ValueError(f"{name} must return theta or (theta, accept_prob), got a tuple of "
                         f"{len(out)}")
    theta, accept = (out if isinstance(out, tuple) else (out, np.nan))
    if not is_real(accept):
        raise TypeError(f"{name} returned (theta, accept_prob) with accept_prob of type "
                        f"{type(accept).__name__}; expected a float")
    return model.pack(theta, f"the theta returned by {name}"), float(accept)
