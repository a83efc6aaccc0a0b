"""Hyperparameter checks shared by the ready-made models."""
import math
import numbers


def positive(name: str, value) -> float:
    """``value`` as a finite float > 0, or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not 0 < float(value) < math.inf:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)
