"""The user's model: :class:`Model` (the record sampler, theta kernel and prior of the
non-private model), its :class:`ExponentialFamily` description for the sufficient-statistic
sampler and the baselines, and :func:`recipe`, which lets models travel to worker processes."""
from .family import ExponentialFamily
from .model import Model
from .recipe import recipe

__all__ = ["Model", "ExponentialFamily", "recipe"]
