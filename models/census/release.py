r"""The census release: each query's table (units of a level by a marginal of the
attributes) with discrete Gaussian noise of its own budget, and the start a chain takes from
it (see :mod:`dawrap.models.census`).

A record is ``[unit, cell]``: the finest geography unit a person lives in and their cell of
the cross-classification. Query :math:`q` (level :math:`l_q`, marginal :math:`A_q` with
:math:`K_q` cells) releases, for every unit :math:`v` of level :math:`l_q`, the counts
:math:`T_{q,v,k} = \#\{i : a_{l_q}(u_i) = v,\ m_q(c_i) = k\}` plus noise; a record adds 1 to
exactly one cell of each query, so the statistic is declared sparse with ``nnz`` = the number
of queries, and a record update costs O(queries) whatever the numbers of units and cells.

**Sensitivity.** Replacing one person's record by another's moves at most two cells of each
query, one down and one up by 1 (none when both fall in the same cell): the L2 sensitivity
of every query is :math:`\sqrt2` (brute-forced in the tests), and query :math:`q` with budget
:math:`\rho_q` gets :math:`\sigma_q = \sqrt2/\sqrt{2\rho_q} = 1/\sqrt{\rho_q}`; the release is
:math:`(\sum_q \rho_q)`-zCDP (composition of zCDP).
"""
from __future__ import annotations

import hashlib
import math

import numba
import numpy as np

import dawrap as dw

from .geography import DETAILED, Geography, Query, as_geography, as_queries
from .levelled import LevelledDiscreteGaussian

__all__ = ["Layout", "statistic", "discrete_gaussian", "CensusRelease", "layout_of",
           "expected_counts"]

#: Compiled statistics by the digest of what they close over (one compilation per layout).
_COMPILED: dict = {}


class Layout:
    """Where each query's cells lie in the release (its ``offsets`` and ``sizes``), with the
    geography and the resolved queries (``marginal`` a tuple of attributes, never
    ``"detailed"``)."""

    def __init__(self, geography: Geography, queries):
        geography, queries = as_geography(geography), as_queries(queries)
        self.geography = geography
        self.queries = [q.checked(geography)._replace(
            marginal=tuple(geography.attributes) if q.marginal == DETAILED else q.marginal)
            for q in queries]
        self.levels = np.array([geography.level(q.level) for q in self.queries], np.int64)
        self.marginals = [geography.marginal_index(q.marginal) for q in self.queries]
        self.cells = np.array([k for _, k in self.marginals], np.int64)
        self.sizes = np.array([geography.units[l] * k for l, k in zip(self.levels, self.cells)],
                              np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.size = int(self.sizes.sum())

    def check_records(self, x, name: str = "x") -> np.ndarray:
        """Records ``[unit, cell]`` as a float array ``(n, 2)``: each unit a whole number
        among the finest level's units, each cell one among the attributes' cells (a
        ValueError naming ``name``, the row and the column otherwise).

        Parameters
        ----------
        x : array_like of shape (n, 2)
        name : str
            What the error calls ``x``.

        Returns
        -------
        ndarray of shape (n, 2)

        Examples
        --------
        >>> from dawrap.models import census
        >>> geo = census.Geography({"block": [0, 1]}, 3)
        >>> census.layout_of(census.discrete_gaussian(geo, [census.query("block")])
        ...                  ).check_records([[0, 2], [1, 2.5]])
        Traceback (most recent call last):
        ...
        ValueError: x[1, 1] = 2.5 is not a cell of the attributes {'category': 3} (0..2)
        """
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise ValueError(f"{name} must have shape (n, 2): a record is [unit, cell], got "
                             f"shape {arr.shape}")
        geo = self.geography
        limits = np.array([geo.units[-1], geo.cells])
        bad = ~((arr >= 0) & (arr < limits) & (arr == np.floor(arr)))  # NaN is bad too
        if np.any(bad):
            i, column = (int(v[0]) for v in np.nonzero(bad))
            what = f"a unit of level {geo.names[-1]!r}" if column == 0 else \
                f"a cell of the attributes {geo.attributes}"
            raise ValueError(f"{name}[{i}, {column}] = {float(arr[i, column])!r} is not {what} "
                             f"(0..{limits[column] - 1})")
        return arr

    def table(self, values: np.ndarray, q: int) -> np.ndarray:
        """Query ``q``'s block of a release (or total), as ``(units, marginal cells)``."""
        start = self.offsets[q]
        return values[start:start + self.sizes[q]].reshape(-1, self.cells[q])


def _digest(*arrays) -> str:
    digest = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        digest.update(str((a.dtype, a.shape)).encode())
        digest.update(a.tobytes())
    return digest.hexdigest()


def statistic(geography: Geography, queries):
    """The release's statistic for ``queries`` over ``geography``, declared sparse (one pair
    per query), with its :class:`Layout` as the attribute ``census_layout``.

    Parameters
    ----------
    geography : Geography
    queries : list of Query

    Returns
    -------
    numba.njit function
        ``(x_i, out)``; a record that is not ``[unit, cell]`` of the geography (another
        length, a unit or cell out of range or NaN) contributes nothing (a fractional code is
        read as its integer part: :meth:`Layout.check_records` refuses it where records
        enter a release).

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import census
    >>> geo = census.Geography({"tract": [0, 0], "block": [0, 1]}, {"age": 2, "race": 2})
    >>> stat = census.statistic(geo, [census.query("block", "total"),
    ...                               census.query("tract", "race")])
    >>> out = np.empty(stat.census_layout.size)
    >>> stat(np.array([1.0, 3.0]), out)          # block 1, age 1 and race 1 (cell 3)
    >>> out                                      # block totals, then the tract's races
    array([0., 1., 0., 1.])
    """
    layout = Layout(geography, queries)
    geography = layout.geography
    where = np.ascontiguousarray(geography.ancestors[layout.levels], dtype=np.int32)
    marginal = np.ascontiguousarray([m for m, _ in layout.marginals], dtype=np.int32)
    offsets, cells = layout.offsets, layout.cells
    key = _digest(where, marginal, offsets, cells)
    if key not in _COMPILED:
        _COMPILED[key] = _compile(where, marginal, offsets, cells)
    stat = _COMPILED[key]
    stat.census_layout = layout  # the same for every layout with this key
    return stat


def _compile(where, marginal, offsets, cells):
    count, units, n_cells = where.shape[0], where.shape[1], marginal.shape[1]
    cache = max(where.nbytes, marginal.nbytes) <= 10 ** 6

    @numba.njit(nogil=True, cache=cache, inline="always")
    def in_range(x_i):
        # [unit, cell], each in range (NaN fails the comparisons too); a fractional code is
        # refused where records enter a release (Layout.check_records), not here: the check
        # runs at every record update
        if x_i.shape[0] != 2:
            return False
        u, c = x_i[0], x_i[1]
        return 0 <= u < units and 0 <= c < n_cells

    @numba.njit(nogil=True, cache=cache, inline="always")
    def entries(x_i, index, value):
        if not in_range(x_i):
            return 0
        u, c = int(x_i[0]), int(x_i[1])
        for q in range(count):
            index[q] = offsets[q] + where[q, u] * cells[q] + marginal[q, c]
            value[q] = 1.0
        return count

    @numba.njit(nogil=True, cache=cache)
    def census_statistic(x_i, out):
        out[:] = 0.0
        if not in_range(x_i):
            return
        u, c = int(x_i[0]), int(x_i[1])
        for q in range(count):
            out[offsets[q] + where[q, u] * cells[q] + marginal[q, c]] += 1.0

    return dw.declare_sparse(census_statistic, entries, nnz=count)


def layout_of(mechanism) -> Layout | None:
    """The :class:`Layout` of a census mechanism's release, or None for another mechanism.

    Parameters
    ----------
    mechanism : dawrap.Mechanism

    Returns
    -------
    Layout or None

    Examples
    --------
    >>> from dawrap.models import census
    >>> geo = census.Geography({"block": [0, 1, 2]}, 3)
    >>> mech = census.discrete_gaussian(geo, [census.query("block", rho=0.5)])
    >>> census.layout_of(mech).size                       # 3 blocks x 3 categories
    9
    """
    return getattr(getattr(mechanism, "statistic", None), "census_layout", None)


@dw.recipe
def discrete_gaussian(geography: Geography, queries) -> "CensusRelease":
    r"""The census release: every query's table with discrete Gaussian noise,
    :math:`\sigma_q = 1/\sqrt{\rho_q}` (L2 sensitivity :math:`\sqrt2` per query); the release
    is :math:`\sum_q \rho_q`-zCDP, and each query's budget is reported as ``rho_<q>``.

    Parameters
    ----------
    geography : Geography or dict
        The levels and attributes (or the plain data of :func:`as_geography`).
    queries : list of Query
        The released tables (:func:`query`, or ``(level, marginal, rho)`` triples), in the
        order of the release.

    Returns
    -------
    CensusRelease
        A :class:`LevelledDiscreteGaussian`, one block of coordinates per query: units of its
        level by its marginal's cells; records are checked where a release is computed.

    Examples
    --------
    Block totals and the tract's histogram by race:

    >>> from dawrap.models import census
    >>> geo = census.Geography({"tract": [0, 0], "block": [0, 1]}, {"age": 2, "race": 3})
    >>> mech = census.discrete_gaussian(geo, [census.query("block", "total", rho=0.5),
    ...                                       census.query("tract", "race", rho=0.25)])
    >>> mech.size, mech.privacy["rho"], [round(s, 3) for s in mech.sigmas]
    (5, 0.75, [1.414, 2.0])
    """
    return CensusRelease(statistic(geography, queries))


class CensusRelease(LevelledDiscreteGaussian):
    r"""The census release of :func:`discrete_gaussian`: a :class:`LevelledDiscreteGaussian`
    with one block per query, :math:`\sigma_q = 1/\sqrt{\rho_q}`, whose records are checked
    (:meth:`Layout.check_records`) wherever the release or its total is computed from them:
    a record that is not ``[unit, cell]`` of the geography is refused, naming its row, never
    counted in another unit's or cell's count.

    Parameters
    ----------
    stat : numba.njit function
        The release's statistic (:func:`statistic`), carrying its :class:`Layout`.

    Examples
    --------
    >>> from dawrap.models import census
    >>> geo = census.Geography({"block": [0, 1]}, 2)
    >>> mech = census.discrete_gaussian(geo, [census.query("block", rho=0.5)])
    >>> mech.total([[0, 1], [1, 1]])
    array([0., 1., 0., 1.])
    >>> mech.total([[0], [1]])
    Traceback (most recent call last):
    ...
    ValueError: x must have shape (n, 2): a record is [unit, cell], got shape (2, 1)
    """

    def __init__(self, stat):
        layout = stat.census_layout
        super().__init__(stat, layout.sizes, [q.rho for q in layout.queries], math.sqrt(2.0))

    def total(self, x, s_dp=None) -> np.ndarray:
        # the base's total (its docstring) of the records checked (the class docstring);
        # release computes its total here too
        return super().total(layout_of(self).check_records(x), s_dp)


#: Where the budgets are given, for ``dawrap models`` (the factory has no budget argument).
discrete_gaussian.budgets = ("rho per query (census.query(level, marginal, rho=...) in "
                             "queries; the release is sum(rho)-zCDP)")


def expected_counts(layout: Layout, s_dp: np.ndarray, level: int, totals: np.ndarray,
                    rounds: int = 10) -> np.ndarray:
    r"""A rough estimate, from the release, of the counts per unit of ``level`` and cell:
    ``(units, cells)`` non-negative, each row summing to ``totals`` (the units' numbers of
    persons).

    Top down: each level's units start from their parent's cell shares (uniform at the top)
    and are fitted by iterative proportional fitting to their own released marginals,
    clipped at zero (a twentieth of a count added to every cell, so that the fit never
    divides by zero). Used only to choose where chains start.
    """
    geo = layout.geography
    shares = np.full((1, geo.cells), 1.0 / geo.cells)
    for l in range(level + 1):
        if l > 0:
            shares = shares[geo.parents(geo.names[l])]
        else:
            shares = np.repeat(shares, geo.units[0], axis=0)
        for _ in range(rounds if np.any(layout.levels == l) else 0):
            for q in np.flatnonzero(layout.levels == l):
                index, k = layout.marginals[q]
                target = np.clip(layout.table(s_dp, q), 0.0, None) + 0.05
                target /= target.sum(axis=1, keepdims=True)
                current = shares @ (index[:, None] == np.arange(k)[None, :])
                shares = shares * (target / np.maximum(current, 1e-300))[:, index]
                shares /= shares.sum(axis=1, keepdims=True)
    return shares * np.asarray(totals, float)[:, None]
