r"""Noise families as objects: :class:`NoiseFamily`, everything the package asks of one family
of additive noise, said once, and the registry that finds a family by its name
(``NoiseLaw.of("laplace", ...)``) or by its compiled coordinate density.

A family module (:mod:`.laplace`, :mod:`.geometric`, :mod:`.gaussian`,
:mod:`.discrete_gaussian`, or a user's) defines one :class:`NoiseFamily` and registers it
(:func:`register`); this module imports none of them (they import it), so the registry sits
at the bottom of the package and no import cycle runs through it. The callers ask the
family, never its name: the noise law's variance and exact relative density
(:class:`~dawrap.mechanisms.NoiseLaw`), the sufficient-statistic sampler's continuous noise
(:func:`dawrap.runner.suffstat.noise_model`), the plausibility check's hint
(:mod:`dawrap.runner.plausibility`), a grouped chain's split of its shared cells
(:mod:`dawrap.runner.grouped`, :mod:`dawrap.samplers.parallel`), the record sampler's
per-cell parameters (:mod:`dawrap.samplers.record`) and the secure release's exact integer
noise.

Every family's density takes ``params = [w_1, ..., w_m, c]``: ``w_j`` the family's parameter
of coordinate ``j`` (the inverse of its scale, for the built-in families), ``c`` the log
normaliser; its coordinate density reads ``params[j]`` alone.

Examples
--------
>>> from dawrap.mechanisms.families import family_named, of_coordinate
>>> geometric = family_named("geometric")
>>> geometric, geometric.integer, geometric.continuous, geometric.split
(GeometricFamily('geometric'), True, LaplaceFamily('laplace'), <Split.LATENT: 'latent variance'>)
>>> of_coordinate(geometric.coordinate_log_density)    # the first family registered with it
LaplaceFamily('laplace')
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, ClassVar, NamedTuple

import numpy as np

from .._checks import require_arity, require_njit
from ._immutable import Immutable

__all__ = ["NoiseFamily", "Split", "ContinuousNoise", "register", "family_named", "registered",
           "of_coordinate", "nearest_totals"]


class Split(enum.Enum):
    """How a grouped chain splits a shared cell's noise into one piece per group
    (:mod:`dawrap.samplers.parallel`, whose module docstring proves both exact)."""

    #: Gaussian pieces of sd :math:`\sigma_j/\sqrt G` (Gaussian-form noise).
    PIECES = "Gaussian pieces"
    #: A latent variance per shared cell first, then Gaussian pieces of it (Laplace-form
    #: noise, a scale mixture of normals with mixing scale :math:`b_j`).
    LATENT = "latent variance"


class ContinuousNoise(NamedTuple):
    """The continuous noise the sufficient-statistic sampler assumes: Laplace of scale
    ``laplace_scale`` when it is > 0, else Gaussian of variance ``gaussian_variance``."""

    laplace_scale: float
    gaussian_variance: float


@dataclass(eq=False, repr=False)
class NoiseFamily(Immutable):
    r"""One family of independent additive noise per coordinate, :math:`s_{dp} = T + z`:
    what every part of the package asks of it. A subclass defines the methods below and the
    class attributes :attr:`split` and :attr:`flat_beyond_range`; an instance, registered
    (:func:`register`), is the family (immutable once built, as a mechanism).

    Parameters
    ----------
    name : str
        Its name, as ``NoiseLaw.of(name, ...)`` and ``NoiseLaw.family`` spell it.
    integer : bool
        Whether the noise (and so the release) takes integer values.
    log_density : numba.njit function
        ``(s_dp, t, params) -> float``, :math:`\log g(s_{dp}, t)` with ``params`` laid out
        as the module docstring says.
    coordinate_log_density : numba.njit function
        ``(s_j, t_j, j, params) -> float``: coordinate ``j``'s term of ``log_density``
        without its constant, reading ``params[j]`` alone (the record sampler may hand it
        each cell's parameter from a block of its own).
    continuous : NoiseFamily, optional
        The continuous family of the same form (the geometric's is the Laplace); by default
        the family itself.

    Examples
    --------
    >>> from dawrap.mechanisms.families import family_named
    >>> gaussian = family_named("gaussian")
    >>> gaussian.variance(np.array([2.0])), gaussian.log_shape(2.0)   # sigma^2, -z^2 / 2
    (array([4.]), -2.0)
    """

    name: str
    integer: bool
    log_density: Callable
    coordinate_log_density: Callable
    continuous: "NoiseFamily | None" = None

    #: How a grouped chain splits a shared cell (None: no exact split; such a cell is
    #: refused).
    split: ClassVar[Split | None] = None
    #: Whether, beyond the range of the confidential totals, the release changes no
    #: posterior: the log density's differences between totals do not depend on how far
    #: the release lies (Laplace form), so the release at the range's edge gives it exactly.
    flat_beyond_range: ClassVar[bool] = False

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a noise family's name must be a non-empty string, got "
                             f"{self.name!r}")
        require_njit(self.log_density, "log_density", "(s_dp, t, params) -> float")
        require_arity(self.log_density, "log_density", "(s_dp, t, params) -> float", 3)
        sig = "(s_j, t_j, j, params) -> float"
        require_njit(self.coordinate_log_density, "coordinate_log_density", sig)
        require_arity(self.coordinate_log_density, "coordinate_log_density", sig, 4)
        if self.continuous is None:
            self.continuous = self
        elif not isinstance(self.continuous, NoiseFamily):
            raise TypeError(f"continuous must be a NoiseFamily, got {self.continuous!r}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def __reduce__(self):
        # Pickled by name: the registry holds the one instance (its densities are compiled).
        return family_named, (self.name,)

    # -- what a subclass defines ------------------------------------------------------------
    def variance(self, scale: np.ndarray) -> np.ndarray:
        """Each coordinate's noise variance, from its ``scale``."""
        raise NotImplementedError(f"{type(self).__name__} does not define variance")

    def log_shape(self, z: float) -> float:
        """The log density of noise of ``z`` scales (``z >= 0``), relative to zero noise: how
        a law is checked against a mechanism's log density
        (:meth:`~dawrap.mechanisms.NoiseLaw.disagreement`)."""
        raise NotImplementedError(f"{type(self).__name__} does not define log_shape")

    def relative_log_density(self, s: np.ndarray, t: np.ndarray,
                             inverse_scale: np.ndarray) -> np.ndarray:
        """:math:`\\log g(s, t)` for each row of ``t`` (shape ``(K, size)``), up to a constant
        the same for every row, exact however far ``s`` lies outside the rows
        (:meth:`~dawrap.mechanisms.NoiseLaw.relative_log_density`); ``inverse_scale`` is
        ``1 / scale``."""
        raise NotImplementedError(f"{type(self).__name__} does not define "
                                  f"relative_log_density")

    def continuous_noise(self, scale: float, variance: float) -> ContinuousNoise:
        """The continuous noise the sufficient-statistic sampler assumes for noise of this
        ``scale`` and ``variance`` (one coordinate): the family's continuous equivalent."""
        raise NotImplementedError(f"{type(self).__name__} does not define continuous_noise")

    def exact_noise(self, scale) -> int:
        """One exact integer draw of the noise of ``scale`` (taken exactly, as
        :func:`dawrap.mechanisms.discrete.as_fraction` reads it) from the operating system's
        cryptographic source, for the secure release (:mod:`dawrap.mechanisms.publication`):
        only an integer family with an exact sampler defines it."""
        raise NotImplementedError(f"the {self.name} noise family has no exact integer sampler")

    def cell_inverse_scale(self, params: np.ndarray, cells: np.ndarray) -> np.ndarray:
        r"""The inverse of the scale that :attr:`split` splits, for each of ``cells``, read
        from the density's ``params``: :math:`1/\sigma_j` (Gaussian pieces) or
        :math:`1/b_j` (latent variances). By default ``params[cells]``."""
        return np.asarray(params, dtype=np.float64)[cells]


def nearest_totals(s: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Per coordinate, the value of the rows ``t`` nearest the release ``s`` (``s`` clipped to
    their range): where a relative log density is evaluated instead of at ``s``."""
    return np.clip(s, t.min(axis=0), t.max(axis=0))


#: name -> family, in the order registered.
_REGISTRY: dict[str, NoiseFamily] = {}


def register(family: NoiseFamily) -> NoiseFamily:
    """Register ``family`` under its name, so that ``NoiseLaw.of(family.name, ...)`` finds it;
    returns it. Registering the same object again changes nothing; another family under a
    name taken is refused (ValueError).

    Parameters
    ----------
    family : NoiseFamily

    Returns
    -------
    NoiseFamily

    Examples
    --------
    >>> from dawrap.mechanisms.families import family_named, register
    >>> register(family_named("laplace")) is family_named("laplace")
    True
    """
    if not isinstance(family, NoiseFamily):
        raise TypeError(f"register takes a NoiseFamily, got {type(family).__name__}")
    taken = _REGISTRY.get(family.name)
    if taken is not None and taken is not family:
        raise ValueError(f"a noise family named {family.name!r} is registered already "
                         f"({taken!r}); register the new one under another name")
    _REGISTRY[family.name] = family
    return family


def family_named(name) -> NoiseFamily:
    """The registered family named ``name`` (a name, or a registered family itself).

    Parameters
    ----------
    name : str or NoiseFamily

    Returns
    -------
    NoiseFamily

    Examples
    --------
    >>> from dawrap.mechanisms.families import family_named
    >>> family_named("discrete_gaussian").continuous
    GaussianFamily('gaussian')
    >>> family_named("cauchy")                               # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: noise family must be one of ['laplace', 'geometric', ...], got 'cauchy'
    """
    if isinstance(name, NoiseFamily) and _REGISTRY.get(name.name) is name:
        return name
    family = _REGISTRY.get(name) if isinstance(name, str) else None
    if family is None:
        raise ValueError(f"noise family must be one of {list(_REGISTRY)}, got {name!r}")
    return family


def registered() -> tuple:
    """The registered families, in the order registered.

    Examples
    --------
    >>> from dawrap.mechanisms.families import registered
    >>> [f.name for f in registered()][:4]
    ['laplace', 'geometric', 'gaussian', 'discrete_gaussian']
    """
    return tuple(_REGISTRY.values())


def of_coordinate(coordinate_log_density) -> NoiseFamily | None:
    """The first registered family whose compiled coordinate density is
    ``coordinate_log_density``, or None: a mechanism with that density takes its parameters
    in the family's layout (module docstring), whether or not it declares a noise law, so
    what the samplers read of its ``params`` is the family's to say. (A family that reuses
    another's coordinate density, as the geometric the Laplace's, reads it the same way.)

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.mechanisms.families import of_coordinate
    >>> from dawrap.models import beta_binomial
    >>> of_coordinate(dw.Gaussian(beta_binomial.count, sigma=1.0).coordinate_log_density)
    GaussianFamily('gaussian')
    >>> of_coordinate(None) is None
    True
    """
    for family in _REGISTRY.values():
        if family.coordinate_log_density is coordinate_log_density:
            return family
    return None
