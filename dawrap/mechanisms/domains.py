r"""Contribution domains: what one record may contribute to a statistic, declared by the
curator so that a secure release can bound every record's contribution before adding noise.

:class:`Box` bounds each coordinate, :class:`Sparse` (histograms) also the number of
non-zero coordinates. Their L1 and L2 diameters, computed exactly, are the most one record's
replacement can move the total: a mechanism refuses a stated sensitivity below the diameter
(:func:`check_sensitivity`), and the publication path (:mod:`dawrap.mechanisms.publication`)
projects every contribution onto the domain (:meth:`Box.project`), so the guarantee holds
for every database.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .._checks import as_count
from ._immutable import Immutable, read_only

__all__ = ["Box", "Sparse", "as_contribution", "check_sensitivity", "LARGEST_BOUND"]

#: Bounds of a contribution domain: integers that float64 holds exactly.
LARGEST_BOUND = 2 ** 53


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




class Box(Immutable):
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
        self.lower = read_only(_integer_bounds(lower, "lower"))
        self.upper = read_only(_integer_bounds(upper, "upper"))
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


def as_contribution(contribution, size: int):
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


def check_sensitivity(sensitivity: float, domain: Box, norm: int, guarantee: str) -> None:
    """Refuse a stated sensitivity below the domain's L1 or L2 diameter: the guarantee would
    then be false. Compared exactly (the float sensitivity as a fraction, squared for L2)."""
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
