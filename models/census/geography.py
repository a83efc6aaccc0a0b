"""The census model's description of the population: nested geography levels, the
cross-classified attributes of a person, and the released queries (see
:mod:`dawrap.models.census`)."""
from __future__ import annotations

import hashlib
import math
import numbers
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

__all__ = ["Geography", "Query", "query", "Recode", "recode", "as_geography", "as_queries",
           "DETAILED", "TOTAL", "MAX_CELLS"]

#: ``query(..., marginal=DETAILED)``: the full cross-classified histogram of each unit.
DETAILED = "detailed"
#: ``query(..., marginal=TOTAL)``: each unit's number of persons.
TOTAL = "total"
#: Most cells of the cross-classification :class:`Geography` accepts by default: the model
#: and the release hold arrays of every cell for every unit (a marginal's index alone is 8
#: bytes a cell and attribute), so more is refused before anything is allocated.
MAX_CELLS = 10 ** 6


def _name(value, what: str) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise ValueError(f"{what} must be a name (a Python identifier), got {value!r}")
    return value


class Geography:
    r"""Nested geography levels and the cross-classified attributes of one person.

    Parameters
    ----------
    levels : dict of str -> array_like
        Coarsest level first, finest last (e.g. ``{"county": ..., "tract": ..., "block":
        ...}``); each value gives, for every unit of the finest level, the code of the unit
        of that level it lies in (any integers or strings; the units of a level are numbered
        in the sorted order of their codes). The finest level's codes name its units and
        must be distinct. Each unit must lie in exactly one unit of the level above.
    attributes : dict of str -> int, or int
        The attributes a person is cross-classified by and their numbers of categories, e.g.
        ``{"voting_age": 2, "hispanic": 2, "race": 63}`` (252 cells); an int ``K`` is
        ``{"category": K}``. A person's cell is the row-major index of their categories.
    max_cells : int
        Refuse attributes of more cells than this (default :data:`MAX_CELLS`), before
        anything is allocated.

    Attributes
    ----------
    names : tuple of str
        The levels, coarsest first.
    units : tuple of int
        Units per level.
    ancestors : ndarray of shape (levels, finest units)
        ``ancestors[l, u]``: the index of the unit of level ``l`` that finest unit ``u`` lies
        in (the last row is ``0..units[-1] - 1``).
    labels : tuple of ndarray
        Each level's unit codes, in the order of their indices.
    cells : int
        Number of cells of the cross-classification.

    Examples
    --------
    Three blocks in two tracts, persons classified by voting age and three races:

    >>> from dawrap.models import census
    >>> geo = census.Geography({"tract": ["A", "A", "B"], "block": [11, 12, 21]},
    ...                        {"voting_age": 2, "race": 3})
    >>> geo.units, geo.cells
    ((2, 3), 6)
    >>> geo.parents("block")                         # the tract of each block
    array([0, 0, 1])
    >>> census.Geography({"tract": [0, 1], "block": [5, 5]}, 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Geography: the finest level 'block' must give each unit its own code; ...
    """

    def __init__(self, levels: Mapping, attributes, *, max_cells: int = MAX_CELLS):
        if not isinstance(levels, Mapping) or not levels:
            raise TypeError(f"Geography: levels must be a non-empty dict of level name -> the "
                            f"code of each finest unit's unit at that level, coarsest level "
                            f"first, got {type(levels).__name__}")
        self.names = tuple(_name(k, "Geography: a level") for k in levels)
        codes = [np.asarray(v) for v in levels.values()]
        size = codes[-1].shape
        for name, c in zip(self.names, codes):
            if c.ndim != 1 or c.shape != size or c.shape[0] < 1:
                raise ValueError(f"Geography: level {name!r} must give one code per unit of "
                                 f"the finest level ({size[0] if len(size) else '?'}), got "
                                 f"shape {c.shape}")
            if c.dtype.kind not in "iuUSO":
                raise TypeError(f"Geography: level {name!r} must hold integer or string codes, "
                                f"got dtype {c.dtype}")
        labels, indices = zip(*(np.unique(c, return_inverse=True) for c in codes))
        if len(labels[-1]) != size[0]:
            raise ValueError(f"Geography: the finest level {self.names[-1]!r} must give each "
                             f"unit its own code; {size[0] - len(labels[-1])} code(s) repeat")
        self.labels = tuple(labels)
        self.units = tuple(len(lab) for lab in labels)
        self.ancestors = np.array([np.asarray(i).reshape(-1) for i in indices], dtype=np.int64)
        for l in range(1, len(self.names)):
            parent = np.full(self.units[l], -1)
            parent[self.ancestors[l]] = self.ancestors[l - 1]
            clash = parent[self.ancestors[l]] != self.ancestors[l - 1]
            if np.any(clash):
                u = int(np.flatnonzero(clash)[0])
                unit = self.labels[l][self.ancestors[l, u]].item()
                raise ValueError(f"Geography: levels are not nested: unit {unit!r} of level "
                                 f"{self.names[l]!r} lies in more than one unit of level "
                                 f"{self.names[l - 1]!r}")
        if isinstance(attributes, numbers.Integral) and not isinstance(attributes, bool):
            attributes = {"category": int(attributes)}
        if not isinstance(attributes, Mapping) or not attributes:
            raise TypeError(f"Geography: attributes must be a dict of attribute name -> number "
                            f"of categories (or an int, the categories of one attribute), got "
                            f"{attributes!r}")
        self.attributes = {}
        for key, count in attributes.items():
            _name(key, "Geography: an attribute")
            if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
                raise ValueError(f"Geography: attribute {key!r} must have a whole number >= 1 "
                                 f"of categories, got {count!r}")
            self.attributes[key] = int(count)
        self.shape = tuple(self.attributes.values())
        self.cells = math.prod(self.shape)
        if self.cells < 2:
            raise ValueError(f"Geography: the attributes must have at least 2 cells in all, "
                             f"got {self.attributes}")
        if isinstance(max_cells, bool) or not isinstance(max_cells, numbers.Real) \
                or not max_cells >= 2:  # NaN fails too
            raise ValueError(f"Geography: max_cells must be a number >= 2 (the most cells "
                             f"the attributes may cross-classify persons into), got "
                             f"{max_cells!r}")
        if self.cells > max_cells:
            raise ValueError(f"Geography: the attributes {self.attributes} cross-classify "
                             f"persons into {self.cells:,} cells, more than max_cells = "
                             f"{max_cells:,}: every unit holds a count and a probability for "
                             f"each cell. Merge categories, model fewer attributes, or raise "
                             f"max_cells")

    def level(self, name) -> int:
        """The index of level ``name`` (0 the coarsest), or an error listing the levels.

        Parameters
        ----------
        name : str
            A level's name.

        Returns
        -------
        int

        Examples
        --------
        >>> from dawrap.models import census
        >>> census.Geography({"tract": [0, 0], "block": [0, 1]}, 2).level("block")
        1
        """
        if name not in self.names:
            raise ValueError(f"unknown geography level {name!r}; the levels are "
                             f"{list(self.names)}")
        return self.names.index(name)

    def parents(self, name) -> np.ndarray:
        """For each unit of level ``name``, the index of its parent.

        Parameters
        ----------
        name : str
            A level's name, not the coarsest (whose units have no parent: a ValueError).

        Returns
        -------
        ndarray of int

        Examples
        --------
        >>> from dawrap.models import census
        >>> census.Geography({"tract": [1, 1, 0], "block": [0, 1, 2]}, 2).parents("block")
        array([1, 1, 0])
        """
        l = self.level(name)
        if l == 0:
            raise ValueError(f"level {name!r} is the coarsest: it has no parents")
        parent = np.empty(self.units[l], dtype=np.int64)
        parent[self.ancestors[l]] = self.ancestors[l - 1]
        return parent

    def marginal_index(self, marginal: tuple) -> tuple[np.ndarray, int]:
        """Each cell's index in the marginal table over the entries of ``marginal`` (in the
        order given, row-major), and that table's number of cells.

        Parameters
        ----------
        marginal : tuple of str or Recode
            Attribute names, or :class:`Recode` entries (an attribute's categories grouped:
            a cell is counted in the group of its category); empty: the total.

        Returns
        -------
        (ndarray of shape (cells,), int)

        Examples
        --------
        >>> from dawrap.models import census
        >>> geo = census.Geography({"block": [0]}, {"age": 2, "race": 3})
        >>> geo.marginal_index(("race",))
        (array([0, 1, 2, 0, 1, 2]), 3)
        >>> geo.marginal_index((census.recode("race", [0, 1, 1]), "age"))  # white / other
        (array([0, 2, 2, 1, 3, 3]), 4)
        """
        names = list(self.attributes)
        categories = np.unravel_index(np.arange(self.cells), self.shape)
        index, size = np.zeros(self.cells, dtype=np.int64), 1
        for entry in marginal:
            if isinstance(entry, Recode):
                groups = np.asarray(entry.groups, dtype=np.int64)
                index = index * entry.size + groups[categories[names.index(entry.attribute)]]
                size *= entry.size
            else:
                k = names.index(entry)
                index = index * self.shape[k] + categories[k]
                size *= self.shape[k]
        return index, size

    def __repr__(self) -> str:
        # the digest makes two geographies with the same sizes but other units differ where
        # a model's fingerprint (its factory call) is compared, as on resuming a checkpoint
        levels = ", ".join(f"{n}: {u}" for n, u in zip(self.names, self.units))
        digest = hashlib.sha256(self.ancestors.tobytes() + repr(
            [lab.tolist() for lab in self.labels]).encode()).hexdigest()[:12]
        return (f"Geography({levels}; attributes {self.attributes}, {self.cells} cells; "
                f"units {digest})")


class Recode(NamedTuple):
    """A marginal entry that groups one attribute's categories: category ``c`` of
    ``attribute`` is counted in group ``groups[c]`` (``0 .. size - 1``); build it with
    :func:`recode`. A query over it still counts each person in exactly one cell, so its L2
    sensitivity stays :math:`\\sqrt2` (:mod:`dawrap.models.census.release`).

    Examples
    --------
    >>> from dawrap.models import census
    >>> r = census.recode("hhgq", [0, 1, 1, 1, 1, 2, 2, 2], name="hhinstlevels")
    >>> r.size, str(r)
    (3, 'hhinstlevels')
    """
    attribute: str
    groups: tuple
    name: str

    @property
    def size(self) -> int:
        """The number of groups."""
        return max(self.groups) + 1

    def __str__(self) -> str:
        return self.name


def recode(attribute: str, groups, name: str | None = None) -> Recode:
    """Group the categories of ``attribute`` for a marginal: ``groups[c]`` is the group of
    category ``c``, the groups numbered ``0 .. k - 1``, each used.

    Parameters
    ----------
    attribute : str
        An attribute's name.
    groups : sequence of int
        One group per category of the attribute (its length is checked against the
        geography with the query, :meth:`Query.checked`).
    name : str, optional
        What tables and errors call the grouped attribute (default ``"<attribute>_recode"``).

    Returns
    -------
    Recode

    Examples
    --------
    >>> from dawrap.models import census
    >>> census.recode("race", [0, 1, 1])
    Recode(attribute='race', groups=(0, 1, 1), name='race_recode')
    >>> census.recode("race", [0, 2, 2])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: recode('race'): groups must number the groups 0..k-1, each used; got [0, 2, 2]
    """
    where = f"recode({attribute!r})"
    _name(attribute, f"{where}: attribute")
    values = list(groups) if isinstance(groups, (list, tuple, np.ndarray)) else None
    if not values or not all(isinstance(g, numbers.Integral) and not isinstance(g, bool)
                             for g in values):
        raise ValueError(f"{where}: groups must be a non-empty list of whole numbers (one "
                         f"group per category), got {groups!r}")
    values = [int(g) for g in values]
    if sorted(set(values)) != list(range(max(values) + 1)):
        raise ValueError(f"{where}: groups must number the groups 0..k-1, each used; got "
                         f"{values}")
    name = f"{attribute}_recode" if name is None else _name(name, f"{where}: name")
    return Recode(attribute, tuple(values), name)


class Query(NamedTuple):
    """One released table: for every unit of ``level``, the counts of persons over the
    attributes ``marginal`` (empty: the unit's total; an entry may be a :class:`Recode`, an
    attribute's categories grouped), with discrete Gaussian noise of zCDP budget ``rho``;
    build it with :func:`query`.

    Examples
    --------
    >>> from dawrap.models import census
    >>> q = census.query("tract", ("voting_age", "race"), rho=0.5)
    >>> q.level, q.marginal, q.rho
    ('tract', ('voting_age', 'race'), 0.5)
    """
    level: str
    marginal: tuple
    rho: float

    def checked(self, geography: Geography) -> "Query":
        """This query, checked against ``geography`` (its level and attributes exist).

        Parameters
        ----------
        geography : Geography

        Returns
        -------
        Query

        Examples
        --------
        >>> from dawrap.models import census
        >>> geo = census.Geography({"block": [0, 1]}, {"age": 2})
        >>> census.query("block", ("sex",), rho=0.5).checked(geo)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: query('block', ('sex',)): unknown attribute 'sex'; the attributes are ['age']
        """
        where = f"query({self.level!r}, {self.marginal!r})"
        if self.level not in geography.names:
            raise ValueError(f"{where}: unknown geography level {self.level!r}; the levels "
                             f"are {list(geography.names)}")
        if self.marginal != DETAILED:
            check_marginal(geography, self.marginal, where)
        return self


def check_marginal(geography: Geography, marginal: tuple, where: str) -> None:
    """Refuse (a ValueError starting with ``where``) a marginal entry whose attribute the
    geography does not have, or a :class:`Recode` without one group per category."""
    for entry in marginal:
        attribute = entry.attribute if isinstance(entry, Recode) else entry
        if attribute not in geography.attributes:
            raise ValueError(f"{where}: unknown attribute {attribute!r}; the attributes "
                             f"are {list(geography.attributes)}")
        if isinstance(entry, Recode) and len(entry.groups) != geography.attributes[attribute]:
            raise ValueError(f"{where}: recode {entry.name!r} gives {len(entry.groups)} "
                             f"groups, but attribute {attribute!r} has "
                             f"{geography.attributes[attribute]} categories: one group per "
                             f"category")


def query(level: str, marginal=DETAILED, rho: float = 1.0) -> Query:
    """A released table: each unit of ``level`` tabulated over the attributes ``marginal``,
    with its own zCDP budget ``rho``.

    Parameters
    ----------
    level : str
        A geography level.
    marginal : "detailed", "total", str, Recode or tuple of them
        ``"detailed"``: every attribute (the full histogram); ``"total"`` or ``()``: the
        unit's number of persons; an attribute name, a :func:`recode` of one, or a tuple of
        them: that marginal.
    rho : float
        The query's zCDP budget, > 0 and finite.

    Returns
    -------
    Query
        ``marginal`` as a tuple of attribute names (``DETAILED`` is resolved against the
        geography when the mechanism is built).

    Examples
    --------
    >>> from dawrap.models import census
    >>> census.query("tract", "race", rho=0.25)
    Query(level='tract', marginal=('race',), rho=0.25)
    >>> census.query("block", "total", rho=0.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: query('block', 'total'): rho must be a finite number > 0, got 0.0
    """
    where = f"query({level!r}, {marginal!r})"
    if not isinstance(level, str):
        raise TypeError(f"{where}: level must be a level's name, got {type(level).__name__}")
    if isinstance(rho, bool) or not isinstance(rho, numbers.Real) or not 0 < rho < math.inf:
        raise ValueError(f"{where}: rho must be a finite number > 0, got {rho!r}")
    if marginal == TOTAL:
        marginal = ()
    elif isinstance(marginal, Recode) or (isinstance(marginal, str) and marginal != DETAILED):
        marginal = (marginal,)
    if marginal != DETAILED:
        if not isinstance(marginal, (tuple, list)) or not all(isinstance(a, (str, Recode))
                                                              for a in marginal):
            raise TypeError(f"{where}: marginal must be 'detailed', 'total', an attribute "
                            f"name, a recode of one or a tuple of them, got {marginal!r}")
        if len(set(marginal)) != len(marginal):
            raise ValueError(f"{where}: an attribute appears twice in the marginal")
        marginal = tuple(marginal)
    return Query(level, marginal, float(rho))


def as_geography(value) -> Geography:
    """A :class:`Geography`, or one built from plain data: ``{"levels": {...},
    "attributes": {...}}`` (as JSON gives it, e.g. on the command line).

    Parameters
    ----------
    value : Geography or dict

    Returns
    -------
    Geography

    Examples
    --------
    >>> from dawrap.models import census
    >>> census.as_geography({"levels": {"tract": [0, 0], "block": [0, 1]},
    ...                      "attributes": {"age": 2}}).units
    (1, 2)
    """
    if isinstance(value, Geography):
        return value
    if isinstance(value, Mapping) and set(value) == {"levels", "attributes"}:
        return Geography(value["levels"], value["attributes"])
    raise TypeError(f"geography must be a census.Geography or a dict with the keys 'levels' "
                    f"and 'attributes', got {value!r}")


def as_queries(value) -> list:
    """A list of :class:`Query` from queries, ``(level, marginal, rho)`` triples or dicts
    of :func:`query`'s arguments (as JSON gives them).

    Parameters
    ----------
    value : Query, sequence of Query, triple or dict

    Returns
    -------
    list of Query

    Examples
    --------
    >>> from dawrap.models import census
    >>> census.as_queries([["block", "total", 0.5], {"level": "tract", "rho": 1}])
    [Query(level='block', marginal=(), rho=0.5), Query(level='tract', marginal='detailed', rho=1.0)]
    """
    if isinstance(value, (Query, Mapping)) or (isinstance(value, (list, tuple)) and value
                                               and isinstance(value[0], str)):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise TypeError(f"queries must be a non-empty list of census.query(level, marginal, "
                        f"rho), got {value!r}")
    out = []
    for q in value:
        if isinstance(q, Query):
            out.append(q)
        elif isinstance(q, Mapping):
            out.append(query(**q))
        elif isinstance(q, (list, tuple)) and 1 <= len(q) <= 3:
            out.append(query(*q))
        else:
            raise TypeError(f"a query must be census.query(level, marginal, rho), a (level, "
                            f"marginal, rho) triple or a dict, got {q!r}")
    return out
