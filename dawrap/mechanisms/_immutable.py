"""Immutability once built, shared by the mechanisms and their contribution domains: what the
privacy guarantee was checked against at construction is what the release and the sampler
use afterwards."""
from __future__ import annotations

import numpy as np

__all__ = ["Immutable", "read_only"]


class _FrozenOnceBuilt(type):
    """Instances become immutable when their outermost constructor returns (subclasses set
    their own attributes after ``super().__init__``, so freezing earlier would stop them)."""

    def __call__(cls, *args, **kwargs):
        obj = super().__call__(*args, **kwargs)
        object.__setattr__(obj, "_frozen", True)
        return obj


class Immutable(metaclass=_FrozenOnceBuilt):
    """No attribute can be set or deleted once built: what the privacy guarantee (and the
    sampler compiled for the mechanism) was checked against at construction stays what
    ``release`` and ``privacy`` use. Arrays held are read-only, or handed out as copies.

    The one exception is ``_recipe``, the factory call stamped by :func:`dawrap.recipe`
    after construction (it says how to rebuild the object elsewhere, not what it does)."""

    _frozen = False

    def __setattr__(self, name: str, value) -> None:
        self._refuse_change(name)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._refuse_change(name)
        object.__delattr__(self, name)

    def _refuse_change(self, name: str) -> None:
        if self._frozen and name != "_recipe":
            kind = type(self).__name__
            raise AttributeError(
                f"{kind} objects are immutable once built: {name!r} cannot be changed, because "
                f"the privacy guarantee (the sensitivity and domain checks) and the noise were "
                f"set up for the values given to the constructor. Build a new {kind} with the "
                f"values you want instead")


def read_only(array: np.ndarray) -> np.ndarray:
    """``array``, made read-only in place (a mechanism's arrays cannot change)."""
    array.flags.writeable = False
    return array

