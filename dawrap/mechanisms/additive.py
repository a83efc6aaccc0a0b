r"""Record-additive privacy mechanisms.

A mechanism is record additive (Ju et al. 2022, Assumption 2) when its density factorises as

.. math:: \eta(s_{dp} \mid x) = g\big(s_{dp},\ \textstyle\sum_{i=1}^n t(x_i, s_{dp})\big),

so replacing one record changes the sum ``T`` in O(1) and the sampler's acceptance ratio
``g(s_dp, T*) / g(s_dp, T)`` costs O(1). Every mechanism here is described by

* ``statistic``: a ``numba.njit`` function ``(x_i, out)`` (or ``(x_i, s_dp, out)`` when the
  contribution depends on the release) writing the record's contribution ``t(x_i)``;
* ``log_density``: a ``numba.njit`` function ``(s_dp, t, params) -> float`` returning
  ``log g(s_dp, t)``, normalised, evaluated in log space;
* ``params``: the float64 array handed to ``log_density`` (inverse scales and the log
  normaliser, for the built-in ones), so that changing epsilon recompiles nothing.

Releases made with ``release`` use NumPy's floating-point samplers: they are for simulations and
demos, not for publishing real data (floating-point Laplace noise leaks, Mironov 2012).
``release(x, secure=True)`` is for publication: the integer mechanisms (``Geometric``,
``DiscreteGaussian``) declare each record's *contribution domain* (:class:`Box`,
:class:`Sparse`), whose diameter is checked against the stated sensitivity at construction;
the secure release projects every record's contribution onto the integer points of that domain
before any noise is drawn, so it is differentially private for every input and raises nothing
that depends on the confidential values.
"""
from __future__ import annotations

import functools
import json
import math
import numbers
import types

import numba
import numpy as np

from .. import _templates
from .._checks import (as_count, as_float_vector, as_positive_float, n_positional, require_arity,
                      require_njit)
from ..model.recipe import reduce_by_recipe
from . import separable
from .checked import bounds_checked

__all__ = ["Mechanism", "Laplace", "Gaussian", "Geometric", "DiscreteGaussian", "Box", "Sparse"]

# Usable noise scales (Laplace and geometric scale sensitivity / epsilon, Gaussian sigma).
# Inside [1e-150, 1e150] every constructor's arithmetic (the scale's square and inverse, the
# log normalisers, the noise variance) stays finite and normal in float64. The integer
# mechanisms stop at 2**53 / 1000 (9.0e12): noise beyond 2**53, above which float64 no longer
# holds every integer, then has probability below e^-1000 (Geometric) or far less
# (DiscreteGaussian), and NumPy's geometric sampler behind the simulated releases saturates
# at 2**63 for larger scales.
SMALLEST_SCALE = 1e-150
LARGEST_SCALE = 1e150
LARGEST_INTEGER_SCALE = 2.0 ** 53 / 1000.0
# Bounds of a contribution domain: integers that float64 holds exactly.
LARGEST_BOUND = 2 ** 53


def _usable_scale(scale: float, source: str, what: str, highest: float, mechanism: str) -> float:
    """``scale`` if it lies in the usable range, else a ValueError saying which arguments
    produced it (``source``) and the range."""
    if not SMALLEST_SCALE <= scale <= highest:  # also False for NaN
        raise ValueError(f"{source} gives {what} = {scale:g}, outside the usable range "
                         f"[{SMALLEST_SCALE:g}, {highest:g}] of {mechanism}: beyond it the "
                         f"noise cannot be represented or drawn exactly in float64")
    return scale


# The built-in densities take ``params = [1/scale_1, ..., 1/scale_m, log normaliser]``: the
# normaliser is computed once, not per record update (a log costs as much as the rest).


@numba.njit(nogil=True, cache=True)
def _laplace_log_density(s_dp, t, params):
    out = params[-1]
    for j in range(s_dp.shape[0]):
        out -= abs(s_dp[j] - t[j]) * params[j]
    return out


@numba.njit(nogil=True, cache=True)
def _gaussian_log_density(s_dp, t, params):
    out = params[-1]
    for j in range(s_dp.shape[0]):
        z = (s_dp[j] - t[j]) * params[j]
        out -= 0.5 * z * z
    return out


def _params(inverse_scale: float, size: int, log_normaliser: float) -> np.ndarray:
    return np.r_[np.full(size, inverse_scale), size * log_normaliser]


# The names the templates below call, bound per statistic (dawrap._templates).
STATISTIC = None
SIZE = 0


def sum_statistic(x, s_dp, statistic, size: int) -> np.ndarray:
    """``sum_i t(x_i, s_dp)`` over the rows of ``x`` (compiled)."""
    return _templates.bind((total_of,), {"STATISTIC": statistic, "SIZE": size}
                           ).total_of(x, s_dp)


def total_of(x, s_dp):
    """The template of :func:`sum_statistic`."""
    total = np.zeros(SIZE)
    buf = np.empty(SIZE)
    for i in range(x.shape[0]):
        STATISTIC(x[i], s_dp, buf)
        for j in range(SIZE):
            total[j] += buf[j]
    return total


def statistic_given_release(x_i, s_dp, out):
    """A ``(x_i, out)`` statistic in the engine's ``(x_i, s_dp, out)`` form (a template)."""
    STATISTIC(x_i, out)


def with_release_argument(statistic):
    """Adapt a ``(x_i, out)`` statistic to the engine's ``(x_i, s_dp, out)`` form (the same
    user function always maps to the same compiled wrapper)."""
    return _templates.bind((statistic_given_release,), {"STATISTIC": statistic}
                           ).statistic_given_release


def _as_truncation(truncation):
    if truncation is None:
        return None
    try:
        lower, upper = (float(v) for v in truncation)
    except (TypeError, ValueError):
        raise TypeError(f"truncation must be a pair (lower, upper), got {truncation!r}") from None
    if not (np.isfinite(lower) and np.isfinite(upper) and lower < upper):
        raise ValueError(f"truncation must be finite with lower < upper, got {truncation!r}")
    return lower, upper


def _integer_bounds(value, name: str) -> np.ndarray:
    """A 1-d int64 array of integer-valued bounds, each of magnitude at most 2**53."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer or a list of integers, got {value!r}")
    arr = np.atleast_1d(np.asarray(value))
    if arr.dtype.kind not in "iuf" or arr.ndim != 1 or arr.shape[0] < 1:
        raise TypeError(f"{name} must be an integer or a 1-d list of integers, got {value!r}")
    floats = arr.astype(np.float64)
    if not (np.all(np.isfinite(floats)) and np.all(floats == np.round(floats))
            and np.all(np.abs(floats) <= LARGEST_BOUND)):
        raise ValueError(f"{name} must hold whole numbers of magnitude at most 2**53, got "
                         f"{value!r}")
    return floats.astype(np.int64)


class _FrozenOnceBuilt(type):
    """Instances become immutable when their outermost constructor returns (subclasses set
    their own attributes after ``super().__init__``, so freezing earlier would stop them)."""

    def __call__(cls, *args, **kwargs):
        obj = super().__call__(*args, **kwargs)
        object.__setattr__(obj, "_frozen", True)
        return obj


class _Immutable(metaclass=_FrozenOnceBuilt):
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


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


class Box(_Immutable):
    r"""A contribution domain: every record contributes a vector ``c`` with
    ``lower[j] <= c[j] <= upper[j]`` in each coordinate (integers).

    The declaration behind an integer mechanism's secure release (``contribution=Box(0, 1)``
    for a count of 0/1 records, ``Box(0, c)`` for counts clamped at ``c``). Its L1 diameter
    is :math:`\sum_j (u_j - l_j)`, its L2 diameter :math:`\sqrt{\sum_j (u_j - l_j)^2}`:
    the most one record's replacement can move the total.

    Parameters
    ----------
    lower, upper : int or sequence of int
        Bounds per coordinate; a single value applies to every coordinate. Whole numbers of
        magnitude at most 2**53 with ``lower <= upper``.

    Notes
    -----
    :meth:`project` maps a contribution to the domain: NaN coordinates become the domain's
    value nearest zero, the others are rounded to the nearest integer (halves to even) and
    clamped into ``[lower, upper]`` (so ``+inf`` becomes ``upper``).

    Examples
    --------
    Each record contributes a 0/1 count and a count clamped at 3:

    >>> from dawrap.mechanisms import Box
    >>> box = Box([0, 0], [1, 3])
    >>> box.diameter_l1(), box.diameter_l2_squared()      # 1 + 3, 1 + 9
    (4, 10)
    """

    def __init__(self, lower, upper):
        self.lower = _read_only(_integer_bounds(lower, "lower"))
        self.upper = _read_only(_integer_bounds(upper, "upper"))
        if self.lower.shape != self.upper.shape and 1 not in (self.lower.shape[0],
                                                                 self.upper.shape[0]):
            raise ValueError(f"lower and upper must have the same length (or one value), got "
                             f"{self.lower.shape[0]} and {self.upper.shape[0]}")
        if np.any(np.broadcast_to(self.lower, np.broadcast_shapes(self.lower.shape,
                                                                  self.upper.shape))
                  > self.upper):
            raise ValueError(f"lower must be <= upper in every coordinate, got lower={lower!r}, "
                             f"upper={upper!r}")

    def bind(self, size: int) -> "Box":
        """This domain for a statistic of ``size`` coordinates (single bounds broadcast).

        Parameters
        ----------
        size : int
            The statistic's number of coordinates (the mechanism calls this with its
            ``size``).

        Returns
        -------
        Box
            A domain with ``size`` lower and upper bounds.

        Examples
        --------
        >>> from dawrap.mechanisms import Box
        >>> Box(0, 1).bind(3)
        Box(lower=[0, 0, 0], upper=[1, 1, 1])
        """
        for name, bound in (("lower", self.lower), ("upper", self.upper)):
            if bound.shape[0] not in (1, size):
                raise ValueError(f"the contribution Box has {bound.shape[0]} {name} bounds for a "
                                 f"statistic of size {size}")
        return Box(np.broadcast_to(self.lower, size).copy(),
                   np.broadcast_to(self.upper, size).copy())

    def _widths(self) -> list:
        # A single bound applies to every coordinate of the other (zip alone would drop them).
        lower, upper = np.broadcast_arrays(self.lower, self.upper)
        return [int(u) - int(lo) for lo, u in zip(lower, upper)]

    def diameter_l1(self) -> int:
        """The largest L1 distance between two contributions (exact).

        Returns
        -------
        int
            :math:`\\sum_j (u_j - l_j)`: the L1 sensitivity the domain implies.

        Examples
        --------
        >>> from dawrap.mechanisms import Box
        >>> Box([0, -2], [1, 2]).diameter_l1()
        5
        """
        return sum(self._widths())

    def diameter_l2_squared(self) -> int:
        """The square of the largest L2 distance between two contributions (exact).

        Returns
        -------
        int
            :math:`\\sum_j (u_j - l_j)^2`, an integer, so that comparisons with a stated L2
            sensitivity are exact.

        Examples
        --------
        >>> from dawrap.mechanisms import Box
        >>> Box([0, -2], [1, 2]).diameter_l2_squared()
        17
        """
        return sum(w * w for w in self._widths())

    def magnitude(self) -> int:
        """The largest absolute value of any coordinate of a contribution.

        Returns
        -------
        int
            :math:`\\max_j \\max(|l_j|, |u_j|)`.

        Examples
        --------
        >>> from dawrap.mechanisms import Box
        >>> Box([0, -5], [1, 2]).magnitude()
        5
        """
        return int(max(np.max(np.abs(self.lower)), np.max(np.abs(self.upper))))

    def _clamp(self, c: np.ndarray) -> np.ndarray:
        lower, upper = self.lower.astype(np.float64), self.upper.astype(np.float64)
        nearest_zero = np.clip(0.0, lower, upper)
        c = np.where(np.isnan(c), nearest_zero, np.rint(c))
        return np.clip(c, lower, upper)

    def project(self, c: np.ndarray) -> np.ndarray:
        """Each row of the ``(n, size)`` contributions ``c`` mapped onto the domain's integer
        points (see Notes); never raises for any float values.

        Parameters
        ----------
        c : array_like of shape (n, size)
            Contributions, any floats (NaN and infinities included).

        Returns
        -------
        ndarray of shape (n, size)
            The projected contributions, integer-valued floats inside the bounds.

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.mechanisms import Box
        >>> Box([0, 0], [1, 3]).project([[0.4, 7.0], [np.nan, -np.inf], [0.5, 2.5]])
        array([[0., 3.],
               [0., 0.],
               [0., 2.]])
        """
        with np.errstate(all="ignore"):
            return self._clamp(np.asarray(c, dtype=np.float64))

    def __repr__(self) -> str:
        return f"Box(lower={self.lower.tolist()}, upper={self.upper.tolist()})"


class Sparse(Box):
    r"""A contribution domain for histograms: every record contributes a vector with at most
    ``cells`` non-zero coordinates, each an integer in ``[lower, upper]``.

    ``Sparse(cells=1, lower=0, upper=1)`` (the default) is a one-hot record, or none: the
    counts of a categorical variable, L1 diameter 2, L2 diameter :math:`\sqrt 2`.

    Parameters
    ----------
    cells : int
        The most coordinates one record may change (``>= 1``).
    lower, upper : int
        Bounds of each non-zero coordinate, with ``lower <= 0 <= upper`` (the other
        coordinates are zero). Whole numbers of magnitude at most 2**53.
    size : int, optional
        The number of coordinates; the mechanism sets it (:meth:`bind`), and the diameters
        depend on it (two records can use disjoint cells only when ``2 cells <= size``).

    Notes
    -----
    :meth:`project` first projects every coordinate as :class:`Box` does (NaN becomes 0), then
    keeps the ``cells`` coordinates of largest magnitude (the first ones on ties) and sets the
    others to zero.

    Examples
    --------
    A one-hot record of a 4-category histogram: one record moves two counts by one.

    >>> import numpy as np
    >>> from dawrap.mechanisms import Sparse
    >>> domain = Sparse(cells=1).bind(4)
    >>> domain.diameter_l1(), domain.diameter_l2_squared()
    (2, 2)
    >>> domain.project(np.array([[1.0, 1.0, 0.0, 0.0], [0.2, 0.0, 0.9, 0.0]]))
    array([[1., 0., 0., 0.],
           [0., 0., 1., 0.]])
    """

    def __init__(self, cells: int = 1, lower: int = 0, upper: int = 1, *, size: int | None = None):
        self.cells = as_count(cells, "cells")
        lower_, upper_ = _integer_bounds(lower, "lower"), _integer_bounds(upper, "upper")
        if lower_.shape[0] != 1 or upper_.shape[0] != 1:
            raise TypeError(f"Sparse takes one lower and one upper bound for every cell, got "
                            f"lower={lower!r}, upper={upper!r}")
        if not lower_[0] <= 0 <= upper_[0]:
            raise ValueError(f"Sparse needs lower <= 0 <= upper (cells a record does not touch "
                             f"are zero), got lower={lower!r}, upper={upper!r}")
        self.size = size
        super().__init__(np.full(size or 1, lower_[0]), np.full(size or 1, upper_[0]))

    def bind(self, size: int) -> "Sparse":
        if self.cells > size:
            raise ValueError(f"the contribution domain Sparse(cells={self.cells}) has more cells "
                             f"than the statistic's {size} coordinates")
        return Sparse(self.cells, int(self.lower[0]), int(self.upper[0]), size=size)

    def _extremes(self, power: int) -> int:
        # Two contributions share s cells and use k - s cells each on their own (at most m
        # cells in all, so s >= 2k - m): a shared cell differs by at most upper - lower, an
        # own cell by max(|lower|, upper). The distance is linear in s: an endpoint is largest.
        k, m = self.cells, self.size or 1
        width, far = int(self.upper[0]) - int(self.lower[0]), self.magnitude()
        return max(s * width ** power + 2 * (k - s) * far ** power
                   for s in (max(0, 2 * k - m), k))

    def diameter_l1(self) -> int:
        return self._extremes(1)

    def diameter_l2_squared(self) -> int:
        return self._extremes(2)

    def project(self, c: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            c = self._clamp(np.asarray(c, dtype=np.float64))
            # Only rows with more than `cells` non-zero coordinates change (the others would
            # only have zeros zeroed): rank just those, O(size log size) each.
            over = np.count_nonzero(c, axis=1) > self.cells
            if np.any(over):
                # Rank the coordinates of each row by magnitude (stable: first ones win ties)
                # and zero every one ranked past `cells`.
                rows = c[over]
                order = np.argsort(-np.abs(rows), axis=1, kind="stable")
                rank = np.empty_like(order)
                np.put_along_axis(rank, order, np.arange(rows.shape[1])[None, :], axis=1)
                rows[rank >= self.cells] = 0.0
                c[over] = rows
        return c

    def __repr__(self) -> str:
        return (f"Sparse(cells={self.cells}, lower={int(self.lower[0])}, "
                f"upper={int(self.upper[0])})")


def _as_contribution(contribution, size: int):
    """The declared contribution domain bound to ``size`` coordinates, or None."""
    if contribution is None:
        return None
    if not isinstance(contribution, Box):
        try:
            lower, upper = contribution
        except (TypeError, ValueError):
            raise TypeError(f"contribution must be a dawrap.mechanisms.Box or Sparse, or a pair "
                            f"(lower, upper), got {contribution!r}") from None
        contribution = Box(lower, upper)
    return contribution.bind(size)


def _check_sensitivity(sensitivity: float, domain: Box, norm: int, guarantee: str) -> None:
    """Refuse a stated sensitivity below the domain's L1 or L2 diameter: the guarantee would
    then be false. Compared exactly (the float sensitivity as a fraction, squared for L2)."""
    from fractions import Fraction

    if norm == 1:
        diameter, ok = domain.diameter_l1(), Fraction(sensitivity) >= domain.diameter_l1()
        shown = f"{diameter}"
    else:
        squared = domain.diameter_l2_squared()
        ok = Fraction(sensitivity) ** 2 >= squared
        shown = f"sqrt({squared}) = {math.sqrt(squared):g}"
    if not ok:
        raise ValueError(f"sensitivity = {sensitivity:g} is below the L{norm} diameter {shown} "
                         f"of the declared contribution domain {domain!r}: one record could move "
                         f"the total by that much, so the release would not be {guarantee}. "
                         f"Declare a sensitivity at least the diameter, or a smaller domain")


#: Contributions held at once by a secure release and the simulation path's domain check:
#: records are streamed in chunks of this many floats (8 MB), so that a histogram of a
#: million cells never needs an (n, size) array.
CONTRIBUTION_CHUNK = 1 << 20


@numba.njit(nogil=True)  # takes a function argument: not cacheable, see record.py
def record_contributions(x, statistic, size):
    """Each record's contribution ``t(x_i)`` as the rows of an ``(n, size)`` array (compiled);
    a statistic that writes nothing contributes zeros, and a record on which it raises (with
    a bounds-checked statistic, :mod:`dawrap.mechanisms.checked`: also any index out of
    range) contributes a row of NaN, which the projection maps like any NaN."""
    out = np.empty((x.shape[0], size))
    buf = np.empty(size)
    for i in range(x.shape[0]):
        buf[:] = 0.0
        if not _statistic_returned(statistic, x[i], buf):
            buf[:] = np.nan  # discard what it wrote before raising
        out[i] = buf
    return out


@numba.njit(nogil=True)
def _statistic_returned(statistic, x_i, buf):
    """Whether ``statistic(x_i, buf)`` returned (``False``: it raised).

    The ``try`` sits in its own function on purpose: with numba 0.68 a ``try`` inside the
    record loop caught the first record's exception but let the second one escape (a
    release then raised exactly when two records were bad, which reveals the data); one
    call per record leaves no exception state behind."""
    try:
        statistic(x_i, buf)
        return True
    except Exception:  # noqa: BLE001 - numba catches only Exception subclasses anyway
        return False


def _real(value) -> float:
    """One element of an object array as a float: no value can make this raise (huge
    integers become +-inf, which the projection clamps)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"x must hold real numbers only, found an element of type "
                        f"{type(value).__name__}")
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _records_for_publication(x) -> np.ndarray:
    """Records as a float64 ``(n, record_size)`` array, checking only what does not depend on
    the values (the type and the shape): NaN, infinities and any magnitude pass through, for
    the projection onto the contribution domain to handle."""
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        raise ValueError("x must be a rectangular array of real numbers") from None
    if arr.dtype == object:
        arr = np.vectorize(_real, otypes=[np.float64])(arr) if arr.size else arr
    elif arr.dtype.kind not in "biuf":
        raise TypeError(f"x must be an array of numbers, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"x must have shape (n, record_size) or (n,) with n >= 1, "
                         f"got shape {arr.shape}")
    with np.errstate(all="ignore"):  # float128 beyond float64's range becomes inf: no warning
        return np.ascontiguousarray(arr, dtype=np.float64)


def as_records(x, name: str = "x") -> np.ndarray:
    """Records as a C-contiguous float64 array of shape ``(n, record_size)``."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of numbers, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(f"{name} must have shape (n, record_size) or (n,) with n >= 1, "
                         f"got shape {np.shape(x)}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


class Mechanism(_Immutable):
    r"""Any record-additive mechanism :math:`g(s_{dp}, \sum_i t(x_i, s_{dp}))`.

    Parameters
    ----------
    statistic : numba.njit function
        ``(x_i, out)`` or ``(x_i, s_dp, out)``: writes record ``i``'s contribution to ``out``
        (length ``size``).
    log_density : numba.njit function
        ``(s_dp, t, params) -> float``: ``log g(s_dp, t)``. Return ``-inf`` where the density
        is zero; never NaN.
    size : int
        Length of the released vector.
    params : array_like
        Float parameters passed to ``log_density``.
    draw_release : callable, optional
        ``(rng, t) -> s_dp``: draws a release given the confidential total ``t``; enables
        :meth:`release`.
    epsilon : float, optional
        The pure epsilon-DP guarantee, if the mechanism has one (then every acceptance
        probability of the record sampler is at least ``exp(-epsilon)``).
    name : str
        A label stored with the results.
    truncation : (float, float), optional
        Bounds ``(a, b)`` when the statistic is a truncated one, :math:`1_{[a,b]}(x)\,t(x)`
        (records outside contribute zero), as the sufficient-statistic sampler needs to know.
    coordinate_log_density : numba.njit function, optional
        ``(s_j, t_j, j, params) -> float``: declares the density separable, :math:`\log g =
        c + \sum_j \ell_j(s_j, t_j)`, with this function the term :math:`\ell_j` (up to a
        constant). With a sparse statistic the record sampler then updates a record in
        O(nnz) instead of O(size) (:mod:`dawrap.mechanisms.separable`).
    entries, nnz : numba.njit function and int, optional
        The statistic's sparse form, ``(x_i, index, value) -> count`` with at most ``nnz``
        pairs; by default the one declared with :func:`dawrap.declare_sparse`, if any. Only
        a separable mechanism can use it.
    noise_variance : array_like, optional
        The variance of each coordinate's noise, when known in closed form (returned by
        :meth:`noise_variance`; without it, release-informed starts estimate it from
        ``draw_release``).

    Notes
    -----
    A mechanism is immutable once built, as are those of its subclasses: setting or deleting
    any attribute raises ``AttributeError`` (its guarantee and noise were checked for the
    values it was built with), and :attr:`params` is handed out as a copy.

    Examples
    --------
    A uniform-noise mechanism, ``s_dp = sum_i x_i + U(-h, h)``:

    >>> import math
    >>> import numba
    >>> import dawrap as dw
    >>> @numba.njit
    ... def identity(x_i, out):
    ...     out[0] = x_i[0]
    >>> @numba.njit
    ... def log_uniform(s_dp, t, params):
    ...     return -math.log(2 * params[0]) if abs(s_dp[0] - t[0]) < params[0] else -math.inf
    >>> mech = dw.Mechanism(identity, log_uniform, params=[5.0], name="Uniform",
    ...                     draw_release=lambda rng, t: t + rng.uniform(-5.0, 5.0, t.shape))
    >>> mech.log_g(s_dp=12.0, t=10.0) == -math.log(10.0)
    True
    """

    def __init__(self, statistic, log_density, *, size: int = 1, params=(),
                 draw_release=None, epsilon: float | None = None, name: str = "Mechanism",
                 truncation: tuple | None = None, coordinate_log_density=None, entries=None,
                 nnz: int | None = None, noise_variance=None):
        require_njit(statistic, "statistic", "(x_i, out) or (x_i, s_dp, out)")
        require_njit(log_density, "log_density", "(s_dp, t, params) -> float")
        # A wrong arity would otherwise fail only inside dw.sample, as a numba typing error.
        require_arity(log_density, "log_density", "(s_dp, t, params) -> float", 3)
        arity = n_positional(statistic)
        if arity not in (2, 3):
            raise TypeError(f"statistic must take (x_i, out) or (x_i, s_dp, out), "
                            f"it takes {arity} positional arguments")
        self.statistic = statistic
        self.depends_on_release = arity == 3
        self.engine_statistic = statistic if arity == 3 else with_release_argument(statistic)
        self.log_density = log_density
        self.size = as_count(size, "size")
        self._density_params = _read_only(
            np.atleast_1d(np.asarray(params, dtype=np.float64)).copy())
        if not np.all(np.isfinite(self._density_params)):
            raise ValueError(f"params must be finite, got {self._density_params}")
        self._noise_variance = None if noise_variance is None else _read_only(
            as_float_vector(noise_variance, "noise_variance", self.size).copy())
        if self._noise_variance is not None and np.any(self._noise_variance < 0):
            raise ValueError(f"noise_variance must be >= 0, got {noise_variance!r}")
        #: Releases and record contributions must be integers (discrete mechanisms).
        self.integer_statistic = False
        if draw_release is not None and not callable(draw_release):
            raise TypeError("draw_release must be callable (rng, t) -> s_dp")
        self._draw_release = draw_release
        self.epsilon = None if epsilon is None else as_positive_float(epsilon, "epsilon")
        self.name = name
        self.truncation = _as_truncation(truncation)
        #: The declared per-record contribution domain (:class:`Box`, :class:`Sparse`), which
        #: secure releases project onto; only the integer mechanisms take one.
        self.contribution = None
        self._declare_sparse(coordinate_log_density, entries, nnz)

    def _declare_sparse(self, coordinate_log_density, entries, nnz) -> None:
        """Set ``coordinate_log_density`` (None: not separable) and ``sparse`` (the
        statistic's :class:`~dawrap.mechanisms.separable.SparseForm` in the engine's
        ``(x_i, s_dp, index, value)`` form, or None: the dense path)."""
        self.coordinate_log_density = None
        if coordinate_log_density is not None:
            sig = "(s_j, t_j, j, params) -> float"
            require_njit(coordinate_log_density, "coordinate_log_density", sig)
            require_arity(coordinate_log_density, "coordinate_log_density", sig, 4)
            self.coordinate_log_density = coordinate_log_density
        if entries is None and nnz is not None:
            raise TypeError(f"{type(self).__name__}: nnz = {nnz!r} was given without entries")
        if entries is not None:
            if nnz is None:
                raise TypeError(f"{type(self).__name__}: entries needs nnz, the most (index, "
                                f"value) pairs one record has")
            if self.coordinate_log_density is None:
                raise ValueError(f"{type(self).__name__}: a sparse statistic (entries) needs a "
                                 f"separable density; give coordinate_log_density "
                                 f"(s_j, t_j, j, params) -> float, or leave entries out to use "
                                 f"the dense statistic")
            if self.depends_on_release:
                raise ValueError(f"{type(self).__name__}: entries are (x_i, index, value): a "
                                 f"statistic that depends on the release cannot be sparse")
            form = separable.SparseForm(require_njit(entries, "entries",
                                                     "(x_i, index, value) -> count"),
                                        as_count(nnz, "nnz"))
        else:
            form = separable.sparse_form(self.statistic)
        usable = (form is not None and self.coordinate_log_density is not None
                  and not self.depends_on_release)
        self.sparse = (separable.SparseForm(separable.entries_given_release(form.entries),
                                            form.nnz) if usable else None)

    # -- description -------------------------------------------------------------------------
    @property
    def params(self) -> np.ndarray:
        """The float parameters handed to ``log_density`` (a copy: changing it changes
        nothing).

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Laplace(beta_binomial.count, epsilon=0.5).params    # 1/scale, log normaliser
        array([ 0.5       , -1.38629436])
        """
        return self._density_params.copy()

    @property
    def privacy(self) -> dict:
        """The mechanism's parameters, stored as ``constant_data`` with each result."""
        out = {} if self.epsilon is None else {"epsilon": self.epsilon}
        return out

    def noise_variance(self) -> np.ndarray | None:
        """The variance of each coordinate's noise when it is known in closed form (the
        built-in mechanisms, or the ``noise_variance`` given to the constructor), else
        ``None`` (:mod:`dawrap.runner.starts` then estimates it from ``draw_release``).

        Returns
        -------
        ndarray of shape (size,) or None

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Laplace(beta_binomial.count, epsilon=0.5).noise_variance()   # 2 (1/0.5)^2
        array([8.])
        """
        return None if self._noise_variance is None else self._noise_variance.copy()

    @property
    def fingerprint(self) -> str:
        """Everything that defines the mechanism, exactly (no rounding), as a string: what a
        checkpoint or a stored study is checked against on restart."""
        stat = getattr(self.statistic, "py_func", self.statistic)
        return json.dumps({"name": self.name, "size": self.size,
                           "statistic": f"{stat.__module__}.{stat.__qualname__}",
                           "params": [repr(float(v)) for v in self.params],
                           "truncation": None if self.truncation is None
                           else [repr(v) for v in self.truncation],
                           "privacy": {k: repr(float(v)) for k, v in self.privacy.items()}})

    def __reduce__(self):
        # Pickled by the recipe that built it (dawrap.recipe): compiled functions and
        # closures cannot be pickled by value.
        return reduce_by_recipe(self)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v:g}" for k, v in self.privacy.items())
        return f"{self.name}({self.statistic.__name__}{', ' if args else ''}{args}, size={self.size})"

    # -- inference side ----------------------------------------------------------------------
    def check_release(self, s_dp) -> np.ndarray:
        """Validate a release: a finite real scalar or vector of length ``size``, integers for
        the integer mechanisms.

        Parameters
        ----------
        s_dp : float or array_like
            The release.

        Returns
        -------
        ndarray of shape (size,)
            The release as float64.

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Laplace(beta_binomial.count, epsilon=0.5).check_release(3.5)
        array([3.5])
        >>> dw.Geometric(beta_binomial.count, epsilon=0.5).check_release(3.5)
        Traceback (most recent call last):
        ...
        ValueError: s_dp must be integer-valued for the Geometric mechanism, got [3.5]
        """
        s = as_float_vector(s_dp, "s_dp", self.size)
        if self.integer_statistic and not np.all(s == np.round(s)):
            raise ValueError(f"s_dp must be integer-valued for the {self.name} mechanism, "
                             f"got {s}")
        return s

    def log_g(self, s_dp, t) -> float:
        """``log g(s_dp, t)`` for a release and a confidential total ``t``.

        Parameters
        ----------
        s_dp, t : float or array_like
            The release and the confidential total, each of length ``size``.

        Returns
        -------
        float
            The log density of the release given the total.

        Examples
        --------
        Laplace noise of scale 2: :math:`\\log g = -\\log 4 - |3.5 - 3| / 2`.

        >>> import math
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> mech = dw.Laplace(beta_binomial.count, epsilon=0.5)
        >>> math.isclose(mech.log_g(3.5, 3.0), -math.log(4.0) - 0.25)
        True
        """
        s = self.check_release(s_dp)
        return float(self.log_density(s, as_float_vector(t, "t", self.size), self.params))

    def total(self, x, s_dp=None) -> np.ndarray:
        """The confidential total ``sum_i t(x_i, s_dp)`` of a database ``x``.

        Parameters
        ----------
        x : array_like of shape (n, record_size) or (n,)
            The records (finite).
        s_dp : float or array_like, optional
            The release, needed only by a statistic that depends on it.

        Returns
        -------
        ndarray of shape (size,)

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Laplace(beta_binomial.count, epsilon=0.5).total([1.0, 0.0, 1.0, 1.0])
        array([3.])
        """
        x = as_records(x)
        if self.depends_on_release:
            if s_dp is None:
                raise ValueError("s_dp is required: this mechanism's statistic depends on it")
            s = self.check_release(s_dp)
        else:
            s = np.zeros(self.size)
        if self.sparse is not None:  # O(n nnz + size) rather than O(n size)
            total, ok = separable.sparse_total(x, s, self.sparse.entries, self.sparse.nnz,
                                               self.size)
            if ok:
                return total
            # A record the entries reject: the dense statistic says what it contributes.
        return sum_statistic(x, s, self.engine_statistic, self.size)

    # -- curator side ------------------------------------------------------------------------
    def release(self, x, seed=None, *, secure: bool = False) -> np.ndarray:
        """A release ``s_dp`` of the confidential database ``x``.

        By default NumPy's seeded floating-point noise: reproducible, for simulation studies
        and demos, **not** for publishing real data (floating-point noise leaks, Mironov 2012).
        The records must be finite, and with a declared contribution domain every record's
        contribution must lie in it (a simulation is refused, never silently clamped).

        ``secure=True`` is the path for publication, offered by the integer mechanisms
        (``Geometric``, ``DiscreteGaussian``) built with a ``contribution`` domain: each
        record's contribution is projected onto the integer points of that domain
        (:meth:`bounded_total`), then exact integer noise from the operating system's
        cryptographic source is added (:mod:`dawrap.mechanisms.discrete`). Every input of a valid type and
        shape gets a release with the stated guarantee; nothing raised depends on the values.
        It takes no seed.

        Parameters
        ----------
        x : array_like of shape (n, record_size) or (n,)
            The confidential records.
        seed : int, numpy.random.Generator or None
            The simulated release's randomness (refused with ``secure=True``).
        secure : bool
            Publish: project the contributions, add cryptographically secure exact noise.

        Returns
        -------
        ndarray of shape (size,)
            The release ``s_dp``.

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> x = beta_binomial.model().simulate({"p": 0.3}, n=100, seed=1)
        >>> mech = dw.Laplace(beta_binomial.count, epsilon=0.5)
        >>> s_dp = mech.release(x, seed=2)                   # for a simulation study
        >>> s_dp.shape
        (1,)
        >>> geometric = dw.Geometric(beta_binomial.count, epsilon=0.5, contribution=(0, 1))
        >>> s_dp = geometric.release(x, secure=True)         # for publication
        >>> bool(s_dp[0] == round(s_dp[0]))                   # an integer count
        True
        """
        if self.depends_on_release:
            raise NotImplementedError("a statistic that depends on s_dp has no release")
        if secure:
            return self._publish(x, seed)
        if self._draw_release is None:
            raise NotImplementedError(f"{self.name} has no draw_release, so it cannot release")
        if self.contribution is not None:
            self._check_contributions(as_records(x))
        return self.release_given_total(np.random.default_rng(seed), self.total(x))

    @property
    def can_draw_releases(self) -> bool:
        """Whether :meth:`release_given_total` can draw (the mechanism has a ``draw_release``
        and its statistic does not depend on the release)."""
        return self._draw_release is not None and not self.depends_on_release

    def release_given_total(self, rng: np.random.Generator, t: np.ndarray) -> np.ndarray:
        """A simulated release for a confidential total ``t``: ``t`` plus the mechanism's
        noise, drawn with ``rng`` (NumPy's floating-point noise: for simulation, never for
        publication). Release-informed starts estimate the noise from it.

        Parameters
        ----------
        rng : numpy.random.Generator
        t : ndarray of shape (size,)
            The confidential total.

        Returns
        -------
        ndarray of shape (size,)

        Examples
        --------
        >>> import numpy as np
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> mech = dw.Laplace(beta_binomial.count, epsilon=0.5)
        >>> draws = [mech.release_given_total(np.random.default_rng(i), np.array([30.0]))[0]
        ...          for i in range(2000)]
        >>> bool(abs(np.mean(draws) - 30.0) < 4 * np.sqrt(8.0 / 2000))   # noise var 8
        True
        """
        if self._draw_release is None:
            raise NotImplementedError(f"{self.name} has no draw_release, so it cannot release")
        return np.asarray(self._draw_release(rng, t), dtype=np.float64).reshape(self.size)

    #: One draw of exact integer noise from the cryptographic source, for the mechanisms that
    #: have a publication path (set by ``Geometric`` and ``DiscreteGaussian``).
    _secure_noise = None

    def _publish(self, x, seed) -> np.ndarray:
        # Everything that can fail is checked before the data are looked at: after that, only
        # the records' type and shape can stop the release, never their values.
        if seed is not None:
            raise ValueError("secure=True draws from the operating system's cryptographic "
                             "source; a seed would make the noise predictable")
        if self._secure_noise is None:
            raise ValueError(f"{self.name} has no safe release path: floating-point noise leaks "
                             f"(Mironov 2012). For integer statistics use dw.Geometric (discrete "
                             f"Laplace) or dw.DiscreteGaussian with secure=True")
        if self.contribution is None:
            raise ValueError(
                f"secure=True needs the {self.name} mechanism's contribution domain, so that "
                f"every record's contribution can be bounded before noise is added: build it "
                f"with contribution=(lower, upper) (each coordinate of a record's contribution "
                f"an integer in [lower, upper]) or contribution=dawrap.mechanisms.Sparse(cells, "
                f"lower, upper) for histograms, e.g. dw.{type(self).__name__}(statistic, ..., "
                f"contribution=(0, 1)); the stated sensitivity is checked against its diameter")
        total = self.bounded_total(x)
        return np.array([v + self._secure_noise() for v in total], dtype=np.float64)

    def bounded_total(self, x) -> list:
        """The confidential total a secure release adds noise to: the sum over records of each
        contribution projected onto the declared domain (:meth:`Box.project`), as exact
        Python integers.

        Checks only the type and shape of ``x``; NaN, infinite, fractional and out-of-range
        values are projected, never reported. The statistic runs as a bounds-checked copy
        (:mod:`dawrap.mechanisms.checked`): a record on which it raises, or indexes an array
        out of range (a category beyond ``out``, say), contributes as if every coordinate
        were NaN, i.e. the domain's value nearest zero (zero for :class:`Sparse`). Nothing
        outside ``out`` is ever read or written, whatever the records hold; a statistic
        whose copy cannot be checked is refused (TypeError) before any record is read.

        Parameters
        ----------
        x : array_like of shape (n, record_size) or (n,)
            The confidential records, any real values.

        Returns
        -------
        list of int
            One exact total per coordinate.

        Examples
        --------
        A 0/1 count: NaN contributes 0, 7 is clamped to 1 and 0.3 rounded to 0.

        >>> import numpy as np
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> mech = dw.Geometric(beta_binomial.count, epsilon=1.0, contribution=(0, 1))
        >>> mech.bounded_total([1.0, np.nan, 7.0, 0.3])
        [2]

        A one-hot count of 3 categories: the record of category 10**6 would index past
        ``out``; it contributes nothing.

        >>> from dawrap.models import dirichlet_multinomial
        >>> hist = dw.Geometric(dirichlet_multinomial.one_hot, epsilon=1.0, sensitivity=2.0,
        ...                     size=3, contribution=dw.mechanisms.Sparse(1))
        >>> hist.bounded_total([0.0, 2.0, 2.0, 1e6])
        [1, 0, 2]
        """
        if self.contribution is None:
            raise ValueError(f"the {self.name} mechanism declares no contribution domain "
                             f"(contribution=...), so it has no bounded total")
        if self.depends_on_release:
            raise NotImplementedError("a statistic that depends on s_dp has no release")
        statistic = bounds_checked(self.statistic)  # or a TypeError, whatever x holds
        records = _records_for_publication(x)
        # Compiled on no records at all, so that a compilation error too comes before any
        # record is read (the types of x, not its values, decide what is compiled).
        record_contributions(records[:0], statistic, self.size)
        # The projection is row by row and the sum exact, so streaming the records in chunks
        # gives the same integers as one (n, size) array, in O(chunk * size) memory.
        small = records.shape[0] * self.contribution.magnitude() < 2 ** 62
        total = np.zeros(self.size, dtype=np.int64) if small else [0] * self.size
        for chunk in self._chunks(records):
            projected = self.contribution.project(
                record_contributions(chunk, statistic, self.size)).astype(np.int64)  # |v|<=2**53
            if small:
                total += projected.sum(axis=0)  # no int64 overflow possible
            else:  # exact, arbitrary size
                total = [t + sum(map(int, column)) for t, column in zip(total, projected.T)]
        return [int(v) for v in total]

    def _chunks(self, records: np.ndarray):
        """Consecutive blocks of records whose contributions fill at most
        :data:`CONTRIBUTION_CHUNK` floats (one record at least)."""
        rows = max(1, CONTRIBUTION_CHUNK // self.size)
        for start in range(0, records.shape[0], rows):
            yield records[start:start + rows]

    def _check_contributions(self, records: np.ndarray) -> None:
        """The simulation path's refusal of records a publication would have to project."""
        try:  # never writes outside out either, where the statistic can be checked
            statistic = bounds_checked(self.statistic)
        except TypeError:
            statistic = self.statistic
        for chunk in self._chunks(records):  # O(chunk * size) memory, as bounded_total
            contributions = record_contributions(chunk, statistic, self.size)
            if not np.array_equal(self.contribution.project(contributions), contributions):
                self._outside_domain()

    def _outside_domain(self):
        raise ValueError(f"x has records whose contribution to the statistic lies outside "
                         f"the declared contribution domain {self.contribution!r} (or is "
                         f"not an integer, or on which the statistic raises or indexes an "
                         f"array out of range); a simulated release refuses them, so that a "
                         f"study simulates only releases that could be published; "
                         f"release(x, secure=True) projects them onto the domain")

    def _integer_total(self, t: np.ndarray) -> list:
        if not np.all(t == np.round(t)):
            # The total itself is not shown: even a simulated database may be confidential.
            raise ValueError(f"the {self.name} mechanism releases integer statistics, but the "
                             f"statistic's total over x is not an integer")
        return [int(v) for v in np.round(t)]


class Laplace(Mechanism):
    r"""The Laplace mechanism: :math:`s_{dp} = T + \mathrm{Laplace}(0, \Delta_1/\epsilon)` per
    coordinate, pure :math:`\epsilon`-DP when :math:`\Delta_1` bounds the L1 change of ``T``
    from replacing one record.

    Parameters
    ----------
    statistic : numba.njit function
        ``(x_i, out)``: the record's contribution.
    epsilon, sensitivity : float
        The guarantee and the L1 sensitivity :math:`\Delta_1`; the noise scale
        ``sensitivity / epsilon`` must lie in [1e-150, 1e150].
    size : int
        Length of the released vector.
    truncation : (float, float), optional
        As for :class:`Mechanism`.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> mech = dw.Laplace(beta_binomial.count, epsilon=0.5, sensitivity=1.0)
    >>> mech
    Laplace(count, epsilon=0.5, sensitivity=1, scale=2, size=1)
    >>> x = beta_binomial.model().simulate({"p": 0.3}, n=100, seed=1)
    >>> s_dp = mech.release(x, seed=1)         # the count plus Laplace(0, 2) noise
    """

    def __init__(self, statistic, epsilon: float, sensitivity: float = 1.0, *, size: int = 1,
                 truncation: tuple | None = None):
        epsilon = as_positive_float(epsilon, "epsilon")
        self.sensitivity = as_positive_float(sensitivity, "sensitivity")
        self.scale = _usable_scale(
            self.sensitivity / epsilon, f"epsilon = {epsilon!r} with sensitivity = "
            f"{self.sensitivity!r}", "the noise scale sensitivity / epsilon", LARGEST_SCALE,
            "dw.Laplace")
        size = as_count(size, "size")
        super().__init__(statistic, _laplace_log_density, size=size,
                         params=_params(1.0 / self.scale, size, -math.log(2.0 * self.scale)),
                         epsilon=epsilon, name="Laplace", truncation=truncation,
                         coordinate_log_density=separable.laplace_coordinate,
                         draw_release=lambda rng, t: t + rng.laplace(0.0, self.scale, t.shape))

    @property
    def privacy(self) -> dict:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity, "scale": self.scale}

    def noise_variance(self) -> np.ndarray:
        return np.full(self.size, 2.0 * self.scale ** 2)


class Geometric(Mechanism):
    r"""The two-sided geometric (discrete Laplace) mechanism for integer statistics:
    :math:`P(s_{dp} = T + z) = \frac{1-\alpha}{1+\alpha}\alpha^{|z|}`,
    :math:`\alpha = e^{-\epsilon/\Delta_1}`; pure :math:`\epsilon`-DP.

    Releases and confidential totals must be integers.

    Parameters
    ----------
    statistic : numba.njit function
        ``(x_i, out)``: the record's (integer) contribution.
    epsilon, sensitivity : float
        The guarantee and the L1 sensitivity; the noise scale ``sensitivity / epsilon`` must lie
        in [1e-150, 9.0e12] (2**53 / 1000: beyond, float64 cannot hold the releases exactly).
    size : int
        Length of the released vector.
    truncation : (float, float), optional
        As for :class:`Mechanism`.
    contribution : Box, Sparse or (lower, upper), optional
        The domain of one record's contribution, which the publication path
        (``release(x, secure=True)``) needs: each record's contribution is projected onto its
        integer points before noise is added. Its L1 diameter must not exceed
        ``sensitivity`` (checked here), which makes the stated epsilon-DP hold for every
        database.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> mech = dw.Geometric(beta_binomial.count, epsilon=1.0, contribution=(0, 1))
    >>> mech
    Geometric(count, epsilon=1, sensitivity=1, alpha=0.367879, size=1)
    >>> dw.Geometric(beta_binomial.count, epsilon=1.0, contribution=(0, 2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: sensitivity = 1 is below the L1 diameter 2 of the declared contribution domain ...
    """

    def __init__(self, statistic, epsilon: float, sensitivity: float = 1.0, *, size: int = 1,
                 truncation: tuple | None = None, contribution=None):
        epsilon = as_positive_float(epsilon, "epsilon")
        self.sensitivity = as_positive_float(sensitivity, "sensitivity")
        _usable_scale(self.sensitivity / epsilon, f"epsilon = {epsilon!r} with sensitivity = "
                      f"{self.sensitivity!r}", "the noise scale sensitivity / epsilon",
                      LARGEST_INTEGER_SCALE, "dw.Geometric")
        self.alpha = math.exp(-epsilon / self.sensitivity)
        size = as_count(size, "size")
        domain = _as_contribution(contribution, size)
        if domain is not None:
            _check_sensitivity(self.sensitivity, domain, 1, f"{epsilon:g}-DP")
        # log pmf = log((1 - a) / (1 + a)) - |z| epsilon / sensitivity: the Laplace form.
        log_alpha = -epsilon / self.sensitivity
        super().__init__(statistic, _laplace_log_density, size=size,
                         params=_params(-log_alpha, size, math.log(-math.expm1(log_alpha))
                                        - math.log1p(self.alpha)),
                         epsilon=epsilon, name="Geometric", draw_release=self._draw,
                         truncation=truncation,
                         coordinate_log_density=separable.laplace_coordinate)
        self.integer_statistic = True
        self.contribution = domain

    @classmethod
    def from_scale(cls, statistic, scale: float, sensitivity: float = 1.0, *,
                   size: int = 1, contribution=None) -> "Geometric":
        """The mechanism adding discrete Laplace noise of ``scale``, :math:`P(z) \\propto
        e^{-|z|/\\text{scale}}`: epsilon = sensitivity / scale. This is how OpenDP's
        Laplace measurement on integers is described (``make_laplace(..., scale=s)``).
        ``scale`` must lie in [1e-150, 9.0e12]; ``contribution`` as for the constructor.

        Parameters
        ----------
        statistic : numba.njit function
            ``(x_i, out)``: the record's (integer) contribution.
        scale, sensitivity : float
            The noise scale and the L1 sensitivity.
        size : int
            Length of the released vector.
        contribution : Box, Sparse or (lower, upper), optional
            As for the constructor.

        Returns
        -------
        Geometric

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Geometric.from_scale(beta_binomial.count, scale=2.0).epsilon
        0.5
        """
        scale = _usable_scale(as_positive_float(scale, "scale"), f"scale = {scale!r}",
                              "the noise scale", LARGEST_INTEGER_SCALE, "dw.Geometric")
        sensitivity = as_positive_float(sensitivity, "sensitivity")
        epsilon = sensitivity / scale
        if not 0.0 < epsilon < math.inf:
            raise ValueError(f"sensitivity = {sensitivity!r} with scale = {scale!r} gives "
                             f"epsilon = sensitivity / scale = {epsilon:g}, which float64 "
                             f"cannot hold")
        return cls(statistic, epsilon=epsilon, sensitivity=sensitivity, size=size,
                   contribution=contribution)

    def _success_probability(self) -> float:
        """``1 - alpha``, the success probability of the two geometric counts."""
        rate = self.epsilon / self.sensitivity
        # 1.0 - alpha is what seeded releases have always used, kept so that their draws do
        # not change; for rates below 1e-6 its rounding error exceeds 1e-10 relative (at the
        # smallest usable rate, 1e-13, it would be 1e-3), and expm1 is exact there.
        return 1.0 - self.alpha if rate >= 1e-6 else -math.expm1(-rate)

    def _draw(self, rng, t):
        self._integer_total(t)
        p = self._success_probability()
        return t + (rng.geometric(p, t.shape) - rng.geometric(p, t.shape))

    def _secure_noise(self) -> int:
        from .discrete import as_fraction, discrete_laplace

        # The exact scale sensitivity / epsilon of the decimal parameters: no rounding.
        return discrete_laplace(as_fraction(self.sensitivity) / as_fraction(self.epsilon))

    @property
    def privacy(self) -> dict:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity, "alpha": self.alpha}

    def noise_variance(self) -> np.ndarray:
        # The difference of two geometric counts of failures, each of variance a / (1 - a)^2.
        return np.full(self.size, 2.0 * self.alpha / self._success_probability() ** 2)


class Gaussian(Mechanism):
    r"""The Gaussian mechanism :math:`s_{dp} = T + N(0, \sigma^2 I)`.

    Build it from ``sigma`` directly, or from a privacy guarantee with an L2 sensitivity
    :math:`\Delta_2`: :meth:`from_zcdp` (:math:`\rho`-zCDP, :math:`\sigma = \Delta_2/\sqrt{2\rho}`)
    or :meth:`from_gdp` (:math:`\mu`-GDP, :math:`\sigma = \Delta_2/\mu`).

    Parameters
    ----------
    statistic : numba.njit function
        ``(x_i, out)``: the record's contribution.
    sigma : float
        The noise standard deviation, in [1e-150, 1e150].
    size : int
        Length of the released vector.
    truncation : (float, float), optional
        As for :class:`Mechanism`.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> mech = dw.Gaussian(beta_binomial.count, sigma=2.0)
    >>> mech, mech.noise_variance()
    (Gaussian(count, sigma=2, size=1), array([4.]))
    """

    #: The largest usable sigma (see ``LARGEST_SCALE``).
    _largest_sigma = LARGEST_SCALE

    def __init__(self, statistic, sigma: float, *, size: int = 1,
                 truncation: tuple | None = None):
        self.sigma = _usable_scale(as_positive_float(sigma, "sigma"), f"sigma = {sigma!r}",
                                   "sigma", self._largest_sigma, f"dw.{type(self).__name__}")
        self._guarantee = types.MappingProxyType({})  # set by from_zcdp / from_gdp
        size = as_count(size, "size")
        super().__init__(statistic, _gaussian_log_density, size=size,
                         params=_params(1.0 / self.sigma, size, -self._log_normaliser()),
                         name=type(self).__name__, truncation=truncation,
                         draw_release=self._draw,
                         coordinate_log_density=separable.gaussian_coordinate)

    def _log_normaliser(self) -> float:
        return math.log(self.sigma) + 0.5 * math.log(2.0 * math.pi)

    def _draw(self, rng, t):
        return t + rng.normal(0.0, self.sigma, t.shape)

    @classmethod
    def _sigma_for(cls, rho_or_mu: str, value, sensitivity) -> tuple[float, float, float]:
        """Checked (value, sensitivity, sigma) for a zCDP or GDP budget, naming the arguments
        when sigma falls outside the usable range."""
        value = as_positive_float(value, rho_or_mu)
        sensitivity = as_positive_float(sensitivity, "sensitivity")
        if rho_or_mu == "rho":
            sigma, formula = sensitivity / math.sqrt(2.0 * value), "sensitivity / sqrt(2 rho)"
        else:
            sigma, formula = sensitivity / value, "sensitivity / mu"
        _usable_scale(sigma, f"{rho_or_mu} = {value!r} with sensitivity = {sensitivity!r}",
                      f"sigma = {formula}", cls._largest_sigma, f"dw.{cls.__name__}")
        return value, sensitivity, sigma

    @classmethod
    def from_zcdp(cls, statistic, rho: float, sensitivity: float, *, size: int = 1) -> "Gaussian":
        """The Gaussian mechanism satisfying ``rho``-zCDP for L2 sensitivity ``sensitivity``.

        Parameters
        ----------
        statistic : numba.njit function
            ``(x_i, out)``: the record's contribution.
        rho, sensitivity : float
            The zCDP budget and the L2 sensitivity: sigma = sensitivity / sqrt(2 rho).
        size : int
            Length of the released vector.

        Returns
        -------
        Gaussian

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Gaussian.from_zcdp(beta_binomial.count, rho=0.5, sensitivity=1.0).privacy
        {'sigma': 1.0, 'rho': 0.5, 'sensitivity': 1.0}
        """
        rho, sensitivity, sigma = cls._sigma_for("rho", rho, sensitivity)
        mech = cls(statistic, sigma, size=size)
        mech._state_guarantee("rho", rho, sensitivity)
        return mech

    @classmethod
    def from_gdp(cls, statistic, mu: float, sensitivity: float, *, size: int = 1) -> "Gaussian":
        """The Gaussian mechanism satisfying ``mu``-GDP for L2 sensitivity ``sensitivity``.

        Parameters
        ----------
        statistic : numba.njit function
            ``(x_i, out)``: the record's contribution.
        mu, sensitivity : float
            The GDP parameter and the L2 sensitivity: sigma = sensitivity / mu.
        size : int
            Length of the released vector.

        Returns
        -------
        Gaussian

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Gaussian.from_gdp(beta_binomial.count, mu=0.5, sensitivity=1.0).privacy
        {'sigma': 2.0, 'mu': 0.5, 'sensitivity': 1.0}
        """
        mu, sensitivity, sigma = cls._sigma_for("mu", mu, sensitivity)
        mech = cls(statistic, sigma, size=size)
        mech._state_guarantee("mu", mu, sensitivity)
        return mech

    def _state_guarantee(self, rho_or_mu: str, value: float, sensitivity: float) -> None:
        """Record the budget that ``from_zcdp`` / ``from_gdp`` derived sigma from: the one
        change after construction, allowed once and only for a budget giving this sigma."""
        _, _, sigma = self._sigma_for(rho_or_mu, value, sensitivity)
        if self._guarantee or sigma != self.sigma:
            raise AttributeError(f"{type(self).__name__}: a guarantee is stated once, by "
                                 f"from_zcdp or from_gdp, and only for the sigma it gives")
        object.__setattr__(self, "_guarantee", types.MappingProxyType(
            {rho_or_mu: value, "sensitivity": sensitivity}))

    @property
    def privacy(self) -> dict:
        return {"sigma": self.sigma, **self._guarantee}

    def noise_variance(self) -> np.ndarray:
        return np.full(self.size, self.sigma ** 2)


def discrete_gaussian_variance(sigma: float) -> float:
    r"""Variance of the discrete Gaussian, :math:`\sum_k k^2 e^{-k^2/(2\sigma^2)} / \sum_k
    e^{-k^2/(2\sigma^2)}`: below :math:`\sigma^2` for small sigma (0.0077 against 0.09 at
    sigma = 0.3), :math:`\sigma^2(1 - 8\pi^2\sigma^2 e^{-2\pi^2\sigma^2})` to first order
    above (2e-7 relative at sigma = 1).

    For sigma >= 1 by Poisson summation, :math:`\sigma^2 \sum_m (1 - 4\pi^2\sigma^2m^2)
    q^{m^2} / \sum_m q^{m^2}` with :math:`q = e^{-2\pi^2\sigma^2}`; below, the direct sums.
    """
    if sigma >= 1.0:
        m = np.arange(1, 4)
        q = np.exp(-2 * math.pi ** 2 * sigma ** 2 * m * m)
        return float(sigma ** 2 * (1 + 2 * np.sum((1 - 4 * math.pi ** 2 * sigma ** 2 * m * m) * q))
                     / (1 + 2 * np.sum(q)))
    k = np.arange(1, int(40 * sigma) + 40)
    w = np.exp(-k * k / (2 * sigma * sigma))
    return float(2 * np.sum(k * k * w) / (1 + 2 * np.sum(w)))


def discrete_gaussian_log_normaliser(sigma: float) -> float:
    r""":math:`\log \sum_{k \in \mathbb Z} e^{-k^2/(2\sigma^2)}`, accurate at any sigma.

    For sigma >= 1, by Poisson summation: :math:`\sqrt{2\pi}\sigma\,(1 + 2\sum_{k\ge1}
    e^{-2\pi^2\sigma^2k^2})`, whose correction is below 1e-17 already; below, the direct sum,
    whose terms vanish after a few sigma.
    """
    if sigma >= 1.0:
        correction = sum(math.exp(-2 * math.pi ** 2 * sigma ** 2 * k * k) for k in range(1, 4))
        return 0.5 * math.log(2 * math.pi) + math.log(sigma) + math.log1p(2 * correction)
    k = np.arange(1, int(40 * sigma) + 40)
    return math.log1p(2 * np.exp(-k * k / (2 * sigma * sigma)).sum())


class DiscreteGaussian(Gaussian):
    r"""The discrete Gaussian mechanism for integer statistics (Canonne, Kamath & Steinke
    2020): :math:`P(s_{dp} = T + z) = e^{-z^2/(2\sigma^2)} / \sum_k e^{-k^2/(2\sigma^2)}`.

    It satisfies :math:`\tfrac12(\Delta_2/\sigma)^2`-zCDP; :meth:`from_zcdp` picks sigma from
    a budget (sigma = sensitivity / sqrt(2 rho), as OpenDP's Gaussian on integers). The log
    pmf is evaluated in log space with its exact normaliser, so it stays finite and correct
    far in the tails. ``release(x, secure=True)`` uses the exact sampler.

    ``sigma`` must lie in [1e-150, 9.0e12] (2**53 / 1000, as for :class:`Geometric`).
    ``contribution`` (a :class:`Box`, :class:`Sparse` or ``(lower, upper)``) declares the domain
    of one record's contribution, which the publication path needs: each contribution is
    projected onto its integer points before noise is added, so the release is
    :math:`\tfrac12(D_2/\sigma)^2`-zCDP for the domain's L2 diameter :math:`D_2` on every
    database; :meth:`from_zcdp` checks that its ``sensitivity`` is at least :math:`D_2`.

    Parameters
    ----------
    statistic : numba.njit function
        ``(x_i, out)``: the record's (integer) contribution.
    sigma : float
        The scale :math:`\sigma`.
    size : int
        Length of the released vector.
    truncation : (float, float), optional
        As for :class:`Mechanism`.
    contribution : Box, Sparse or (lower, upper), optional
        The domain of one record's contribution (see above).

    Examples
    --------
    At small sigma the variance is far below :math:`\sigma^2 = 0.09`:

    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> dw.DiscreteGaussian(beta_binomial.count, sigma=0.3).noise_variance().round(4)
    array([0.0077])
    """

    _largest_sigma = LARGEST_INTEGER_SCALE

    def __init__(self, statistic, sigma: float, *, size: int = 1,
                 truncation: tuple | None = None, contribution=None):
        super().__init__(statistic, sigma, size=size, truncation=truncation)
        self.integer_statistic = True
        self.contribution = _as_contribution(contribution, self.size)

    @classmethod
    def from_zcdp(cls, statistic, rho: float, sensitivity: float, *, size: int = 1,
                  contribution=None) -> "DiscreteGaussian":
        """The discrete Gaussian satisfying ``rho``-zCDP for L2 sensitivity ``sensitivity``
        (sigma = sensitivity / sqrt(2 rho)); a declared ``contribution`` domain's L2 diameter
        must not exceed ``sensitivity``.

        Parameters
        ----------
        statistic : numba.njit function
            ``(x_i, out)``: the record's (integer) contribution.
        rho, sensitivity : float
            The zCDP budget and the L2 sensitivity.
        size : int
            Length of the released vector.
        contribution : Box, Sparse or (lower, upper), optional
            The domain of one record's contribution.

        Returns
        -------
        DiscreteGaussian

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> mech = dw.DiscreteGaussian.from_zcdp(beta_binomial.count, rho=0.5, sensitivity=1.0,
        ...                                      contribution=(0, 1))
        >>> mech.sigma, mech.privacy["rho"]
        (1.0, 0.5)
        """
        rho, sensitivity, sigma = cls._sigma_for("rho", rho, sensitivity)
        mech = cls(statistic, sigma, size=size, contribution=contribution)
        if mech.contribution is not None:
            _check_sensitivity(sensitivity, mech.contribution, 2, f"{rho:g}-zCDP")
        mech._state_guarantee("rho", rho, sensitivity)
        return mech

    def _log_normaliser(self) -> float:
        return discrete_gaussian_log_normaliser(self.sigma)

    def noise_variance(self) -> np.ndarray:
        return np.full(self.size, discrete_gaussian_variance(self.sigma))

    @classmethod
    def from_gdp(cls, statistic, mu, sensitivity, *, size=1):
        """Not offered: raises TypeError (build it :meth:`from_zcdp`).

        Parameters
        ----------
        statistic, mu, sensitivity, size
            As for :meth:`Gaussian.from_gdp`.

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.DiscreteGaussian.from_gdp(beta_binomial.count, 1.0, 1.0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: DiscreteGaussian.from_gdp is not offered: build it from_zcdp, ...
        """
        raise TypeError("DiscreteGaussian.from_gdp is not offered: build it from_zcdp, the "
                        "guarantee Canonne, Kamath & Steinke prove for it")

    def _draw(self, rng, t):
        """Simulation path: seeded, and exact in distribution (the same rational algorithm
        driven by NumPy's generator), but not for publication."""
        from .discrete import discrete_gaussian

        source = _NumpyIntegers(rng)
        return [v + discrete_gaussian(self.sigma, source) for v in self._integer_total(t)]

    def _secure_noise(self) -> int:
        from .discrete import discrete_gaussian

        return discrete_gaussian(self.sigma)


class _NumpyIntegers:
    """``randrange`` backed by a NumPy generator, for reproducible simulated releases."""

    def __init__(self, rng):
        self.rng = rng

    def randrange(self, stop: int) -> int:
        if stop < 2 ** 62:
            return int(self.rng.integers(stop))
        bits = stop.bit_length()  # rejection from the smallest power of two above: unbiased
        while True:
            value = int.from_bytes(self.rng.bytes((bits + 7) // 8), "big") >> (-bits % 8)
            if value < stop:
                return value
