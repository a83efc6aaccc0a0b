r"""The 2020 Census redistricting data (P.L. 94-171) production release of persons, as a
ready-made census release description.

**What the Census Bureau released.** The 2020 Disclosure Avoidance System (DAS, the TopDown
Algorithm) measured, for every unit of every level of its geographic spine (US, State,
County, Tract, Block_Group, Block), eleven tables of persons (ten at the US, whose total is
exact) with discrete Gaussian noise under zCDP: of the histogram :data:`ATTRIBUTES`, ``hhgq``
(household or one of seven group-quarters types, 8) x ``votingage`` (2) x ``hispanic`` (2)
x ``cenrace`` (the 63 race combinations), 2016 cells. Level :math:`l` receives the share
:math:`s_l` of the persons' budget :math:`\rho = (542/339)^2 \approx 2.556` and its query
:math:`q` the share :math:`s_{q \mid l}` of that, so

.. math::

    \rho_{l,q} = \rho\, s_l\, s_{q \mid l}, \qquad \sigma_{l,q} = 1/\sqrt{\rho_{l,q}},
    \qquad \sum_l \sum_q \rho_{l,q} = \rho,

each unit's table of query :math:`q` of level :math:`l` with noise of variance
:math:`1/\rho_{l,q}` (the DAS's ``inverse_scale`` is :math:`s_l s_{q \mid l}/g^2` with
``global_scale`` :math:`g = 339/542`, the variance's inverse; replace-one neighbours, L2
sensitivity :math:`\sqrt2` per table, as :func:`dawrap.models.census.discrete_gaussian`).
The shares are the published fractions (:data:`LEVEL_SHARES`, :data:`QUERY_SHARES`), held
exactly as :class:`fractions.Fraction`. The ``hhinstlevels`` table groups ``hhgq`` into
household / institutional (types 1-4) / non-institutional (5-7) group quarters
(:data:`HHINSTLEVELS`, a :func:`dawrap.models.census.recode`).

**Sources** (repository ``uscensusbureau/DAS_2020_Redistricting_Production_Code``; the files
below are byte-identical at commit ``b51272816ef243049a0e24891c61d9c496fceee4`` under
``DAS_PL94.release/`` and at ``a1bbd06386db7d135f5116fb31772c33f94b4e8c`` under
``source/``):

- ``configs/production/pl94/person_US.ini``: ``geolevel_names``, ``geolevel_budget_prop
  = 104/4099, 1440/4099, 447/4099, 687/4099, 1256/4099, 165/4099`` (US first), ``strategy =
  ProductionCandidate20210527US_mult8_add02_dsepJune3``;
- ``configs/production/pl94/person_default.ini``: the histogram ``hhgq votingage hispanic
  cenrace_das`` (0-7, 0-1, 0-1, 0-62), ``global_scale = 339/542``, ``dp_mechanism =
  discrete_gaussian_mechanism``, the invariants and constraints (``[constraints]``);
- ``programs/strategies/strategies.py``, class
  ``ProductionCandidate20210527US_mult8_add02_dsepJune3``: each level's queries and their
  shares;
- ``programs/engine/budget.py`` (``rho = 1 / self.global_scale ** 2``) and
  ``programs/engine/engine_utils.py`` (``getAdjustedInverseScalePerQuery``: ``dpq_prop *
  geolevel_prop / global_scale**2``, the discrete Gaussian's ``1/sigma^2``);
- ``programs/schema/attributes/hhgq_person_simple.py``, ``recodeHHnstLevels``: the
  ``hhinstlevels`` groups;
- ``docs/certificates/DAS-PL94171-PRODUCTION-RUN1A-202106241420-US-Persons.certificate.pdf``
  (commit ``289ee463936a6f0efcf2e378abe410ec01d0e140``), the signed production run:
  :math:`\rho` = 293764/114921 (about 2.56), the same level and query shares.

**A user's release.** A user with the noisy measurements of a state or a county describes
the levels they have (``{"county": ..., "tract": ..., "block_group": ..., "block": ...}``,
with ``"state"`` above for a state): each geography level is read as the spine level of its
name (:data:`LEVELS`, any case; ``"nation"`` for US; others mapped with ``levels=``), and
the levels above are not released to them (their budget is spent on other units). The
block groups are the DAS's optimised spine's, not the tabulation block groups
(``docs/census.md``). Not described: the housing-unit release, the invariants (the state
populations, each block's housing units and group-quarters facilities by type), the
constraints the DAS's post-processing imposes, and units the optimised spine bypassed (a
bypassed unit's budget moved to its only child).

Examples
--------
A county of two tracts, each of two block groups of two blocks:

>>> from fractions import Fraction
>>> import numpy as np
>>> from dawrap.models import census
>>> tract = np.repeat([1, 2], 4)
>>> geo = census.Geography({"county": np.zeros(8, int), "tract": tract,
...                         "block_group": 10 * tract + np.repeat([1, 2, 1, 2], 2),
...                         "block": np.arange(8)}, census.PL94_ATTRIBUTES)
>>> queries = census.pl94_171_queries(geo)
>>> len(queries), queries[0].level, queries[0].marginal           # county total first
(44, 'county', ())
>>> rho = census.pl94.budgets()
>>> rho["County"]["total"] == Fraction(542, 339) ** 2 * Fraction(447, 4099) * Fraction(
...     3126, 4097)
True
>>> mech = census.pl94_171(geo)
>>> mech.size                      # 15 units x 2603 cells (11 tables, 2016 detailed)
39045
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from fractions import Fraction as Fr

import numpy as np

import dawrap as dw

from .geography import DETAILED, Geography, Query, as_geography, query, recode
from .release import CensusRelease, discrete_gaussian

__all__ = ["pl94_171", "pl94_171_queries", "pl94_171_measurements", "budgets", "size_of",
           "LEVELS",
           "ATTRIBUTES", "HHINSTLEVELS", "RHO", "LEVEL_SHARES", "QUERIES", "QUERY_SHARES",
           "MARGINALS"]

#: The spine's levels, coarsest first (``geolevel_names`` of ``person_US.ini``, reversed).
LEVELS = ("US", "State", "County", "Tract", "Block_Group", "Block")

#: The persons' histogram, in the DAS's order (a cell is the row-major index):
#: ``hhgq`` 0 household, 1-4 institutional group quarters (correctional facilities for
#: adults, juvenile facilities, nursing facilities, other institutional), 5-7
#: non-institutional (college housing, military quarters, other); ``votingage`` 0 under 18,
#: 1 18 or over; ``hispanic`` 0 not Hispanic, 1 Hispanic; ``cenrace`` the 63 combinations of
#: the six race groups (the DAS's ``cenrace`` levels).
ATTRIBUTES = {"hhgq": 8, "votingage": 2, "hispanic": 2, "cenrace": 63}

#: ``hhinstlevels``: household (0), institutional (1-4), non-institutional (5-7) group
#: quarters (``HHGQPersonSimpleAttr.recodeHHnstLevels``).
HHINSTLEVELS = recode("hhgq", (0, 1, 1, 1, 1, 2, 2, 2), name="hhinstlevels")

#: The persons' zCDP budget, ``1 / global_scale**2`` with ``global_scale = 339/542``.
RHO = Fr(542, 339) ** 2

#: Each level's share of :data:`RHO` (``geolevel_budget_prop``; they sum to 1).
LEVEL_SHARES = dict(zip(LEVELS, (Fr(104, 4099), Fr(1440, 4099), Fr(447, 4099),
                                 Fr(687, 4099), Fr(1256, 4099), Fr(165, 4099))))

#: The strategy's queries, in its order (the US level has no ``total``: it is exact).
QUERIES = ("total", "cenrace", "hispanic", "votingage", "hhinstlevels", "hhgq",
           "hispanic * cenrace", "votingage * cenrace", "votingage * hispanic",
           "votingage * hispanic * cenrace", "detailed")

#: Each query's share of its level's budget
#: (``ProductionCandidate20210527US_mult8_add02_dsepJune3``; each level's sum to 1).
QUERY_SHARES = {
    "US": dict(zip(QUERIES[1:], (
        Fr(52, 4097), Fr(26, 4097), Fr(26, 4097), Fr(26, 4097), Fr(26, 4097), Fr(130, 4097),
        Fr(130, 4097), Fr(26, 4097), Fr(26, 241), Fr(189, 241)))),
    "State": dict(zip(QUERIES, (
        Fr(3773, 4097), Fr(6, 4097), Fr(6, 4097), Fr(6, 4097), Fr(6, 4097), Fr(6, 4097),
        Fr(12, 4097), Fr(12, 4097), Fr(6, 4097), Fr(2, 241), Fr(230, 4097)))),
    "County": dict(zip(QUERIES, (
        Fr(3126, 4097), Fr(10, 4097), Fr(10, 4097), Fr(10, 4097), Fr(10, 4097), Fr(10, 4097),
        Fr(28, 4097), Fr(28, 4097), Fr(10, 4097), Fr(101, 4097), Fr(754, 4097)))),
    "Tract": dict(zip(QUERIES, (
        Fr(1567, 4102), Fr(4, 2051), Fr(5, 4102), Fr(5, 4102), Fr(5, 4102), Fr(5, 4102),
        Fr(1933, 4102), Fr(10, 2051), Fr(5, 4102), Fr(67, 4102), Fr(241, 2051)))),
    "Block_Group": dict(zip(QUERIES, (
        Fr(1705, 4099), Fr(3, 4099), Fr(3, 4099), Fr(3, 4099), Fr(3, 4099), Fr(3, 4099),
        Fr(1055, 4099), Fr(9, 4099), Fr(3, 4099), Fr(24, 4099), Fr(1288, 4099)))),
    "Block": dict(zip(QUERIES, (
        Fr(5, 4097), Fr(9, 4097), Fr(5, 4097), Fr(5, 4097), Fr(5, 4097), Fr(5, 4097),
        Fr(21, 4097), Fr(21, 4097), Fr(5, 4097), Fr(71, 4097), Fr(3945, 4097)))),
}

#: Each query as a marginal of :data:`ATTRIBUTES` (:func:`dawrap.models.census.query`); a
#: crossed query's table is row-major in this order, as the DAS's.
MARGINALS = {"total": (), "cenrace": ("cenrace",), "hispanic": ("hispanic",),
             "votingage": ("votingage",), "hhinstlevels": (HHINSTLEVELS,), "hhgq": ("hhgq",),
             "hispanic * cenrace": ("hispanic", "cenrace"),
             "votingage * cenrace": ("votingage", "cenrace"),
             "votingage * hispanic": ("votingage", "hispanic"),
             "votingage * hispanic * cenrace": ("votingage", "hispanic", "cenrace"),
             "detailed": DETAILED}

#: Other names of spine levels a geography may use (besides the DAS's, in any case).
_ALIASES = {"nation": "US"}


def budgets(rho_total=None, *, production: bool = True) -> dict:
    r"""The exact budget of every query of every level, :math:`\rho_{l,q} = \rho\, s_l\,
    s_{q \mid l}` (module docstring).

    Parameters
    ----------
    rho_total : Fraction, int or float, optional
        The persons' total :math:`\rho` (default :data:`RHO`, the production one). Another
        value is refused unless ``production=False``.
    production : bool
        ``False``: the production shares at another ``rho_total`` (a what-if release).

    Returns
    -------
    dict of str to dict of str to Fraction
        Level (:data:`LEVELS`) -> query (:data:`QUERIES`) -> its :math:`\rho`.

    Examples
    --------
    >>> from dawrap.models import census
    >>> rho = census.pl94.budgets()
    >>> sum(sum(level.values()) for level in rho.values()) == census.pl94.RHO
    True
    >>> round(float(rho["Block"]["detailed"]), 4)
    0.0991
    """
    total = _rho_total(rho_total, production, "budgets")
    return {level: {q: total * LEVEL_SHARES[level] * share
                    for q, share in QUERY_SHARES[level].items()} for level in LEVELS}


def _rho_total(rho_total, production: bool, where: str) -> Fr:
    """``rho_total`` as a Fraction (RHO when None), refused when it is not the production
    one unless ``production`` is False."""
    if rho_total is None:
        return RHO
    if isinstance(rho_total, bool) or not isinstance(rho_total, numbers.Real) \
            or not 0 < rho_total < math.inf:
        raise ValueError(f"{where}: rho_total must be a finite number > 0, got {rho_total!r}")
    # a float equal to RHO's rounding is the production total typed as a decimal
    same = rho_total == RHO or (isinstance(rho_total, float) and rho_total == float(RHO))
    if production and not same:
        raise ValueError(
            f"{where}: rho_total = {rho_total!r} is not the production persons' budget "
            f"(542/339)**2 = {RHO} = {float(RHO):.6f} (the published 2.56; 2.63 adds the "
            f"housing units' 0.07): leave rho_total out, or pass production=False to "
            f"describe the production shares at another total")
    return RHO if same else Fr(rho_total)


def _das_levels(geography: Geography, levels, where: str) -> tuple:
    """The spine level (:data:`LEVELS`) of each of the geography's levels, checked: known,
    distinct, coarsest first."""
    if levels is not None and not isinstance(levels, Mapping):
        raise TypeError(f"{where}: levels must be a dict of geography level -> spine level "
                        f"({list(LEVELS)}), got {levels!r}")
    given = {} if levels is None else dict(levels)
    unknown = [name for name in given if name not in geography.names]
    if unknown:
        raise ValueError(f"{where}: levels maps {unknown}, which are not levels of the "
                         f"geography {list(geography.names)}")
    lower = {name.lower(): name for name in LEVELS}
    lower.update(_ALIASES)
    out = []
    for name in geography.names:
        spine = given.get(name, name)
        spine = lower.get(spine.lower()) if isinstance(spine, str) else None
        if spine is None:
            raise ValueError(
                f"{where}: geography level {name!r} is not a level of the production spine "
                f"{list(LEVELS)} (any case; 'nation' for US); name it so, or map it with "
                f"levels={{{name!r}: ...}}, got {given.get(name, name)!r}")
        out.append(spine)
    order = [LEVELS.index(s) for s in out]
    if len(set(order)) != len(order) or order != sorted(order):
        raise ValueError(f"{where}: the geography's levels {list(geography.names)} must be "
                         f"distinct spine levels, coarsest first (US, State, County, Tract, "
                         f"Block_Group, Block), got {out}")
    return tuple(out)


def _check_attributes(geography: Geography, where: str) -> None:
    if list(geography.attributes.items()) != list(ATTRIBUTES.items()):
        raise ValueError(f"{where}: geography must cross-classify persons by the P.L. 94-171 "
                         f"histogram {ATTRIBUTES} (the DAS's attributes, in this order: 2016 "
                         f"cells; census.PL94_ATTRIBUTES), got {geography.attributes}")


def pl94_171_queries(geography: Geography, *, levels=None, rho_total=None,
                     production: bool = True) -> list:
    r"""The production release's queries for the units of ``geography``: every level's
    eleven tables (ten at the US), each with its :math:`\rho_{l,q}` (module docstring).

    Parameters
    ----------
    geography : Geography or dict
        Levels named as the spine's (:data:`LEVELS`, any case, ``"nation"`` for US), coarsest
        first, e.g. county, tract, block_group, block; attributes :data:`ATTRIBUTES`.
    levels : dict of str to str, optional
        Spine levels of geography levels named otherwise, e.g. ``{"bg": "Block_Group"}``.
    rho_total : Fraction or float, optional
        The persons' budget (default :data:`RHO`); another value is refused unless
        ``production=False``.
    production : bool
        ``False``: the production shares at another ``rho_total``.

    Returns
    -------
    list of Query
        Level by level, coarsest first, in the strategy's order (:data:`QUERIES`); levels
        named as the geography's, each ``rho`` the float of the exact
        :math:`\rho_{l,q}` (:func:`budgets`).

    Examples
    --------
    >>> from dawrap.models import census
    >>> geo = census.Geography({"Tract": [0, 0], "Block": [0, 1]}, census.PL94_ATTRIBUTES)
    >>> [q.marginal for q in census.pl94_171_queries(geo)][:5]
    [(), ('cenrace',), ('hispanic',), ('votingage',), (Recode(attribute='hhgq', groups=(0, 1, 1, 1, 1, 2, 2, 2), name='hhinstlevels'),)]
    >>> census.pl94_171_queries(geo, rho_total=2.63)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: pl94_171: rho_total = 2.63 is not the production persons' budget ...
    """
    where = "pl94_171"
    geography = as_geography(geography)
    _check_attributes(geography, where)
    spine = _das_levels(geography, levels, where)
    rho = budgets(_rho_total(rho_total, production, where), production=False)
    return [query(name, MARGINALS[q], float(r)) for name, das in zip(geography.names, spine)
            for q, r in rho[das].items()]


@dw.recipe
def pl94_171(geography: Geography, *, levels=None, rho_total=None,
             production: bool = True) -> CensusRelease:
    r"""The production P.L. 94-171 persons' release of the units of ``geography``:
    :func:`dawrap.models.census.discrete_gaussian` of :func:`pl94_171_queries` (arguments
    there), one block of coordinates per query, level by level, coarsest first.

    Returns
    -------
    CensusRelease
        Its ``privacy["rho"]`` is the budget spent on these units' tables (the levels above
        the geography's spent the rest of :data:`RHO` on other units).

    Notes
    -----
    The levels, queries and shares are those of the production configuration in
    ``uscensusbureau/DAS_2020_Redistricting_Production_Code`` (commit
    ``a1bbd06386db7d135f5116fb31772c33f94b4e8c``: ``source/configs/production/pl94/``,
    ``source/programs/strategies/strategies.py``), as the production run's certificate
    states them; the module ``dawrap.models.census.pl94`` lists each file, and
    ``docs/census.md`` (The 2020 production release) what is and is not described.

    Examples
    --------
    >>> from dawrap.models import census
    >>> geo = census.Geography({"Tract": [0, 0], "Block": [0, 1]}, census.PL94_ATTRIBUTES)
    >>> mech = census.pl94_171(geo)
    >>> round(mech.sigmas[0], 3), round(mech.privacy["rho"], 4)   # the tract total
    (2.472, 0.5313)
    """
    return discrete_gaussian(geography, pl94_171_queries(
        geography, levels=levels, rho_total=rho_total, production=production))


#: Where the budgets are given, for ``dawrap models``.
pl94_171.budgets = "the production rho, (542/339)**2, shared as published (rho_total=)"


def pl94_171_measurements(geography: Geography, tables: Mapping, *, levels=None) -> np.ndarray:
    """The release vector ``s_dp`` of :func:`pl94_171` from the noisy tables of each level
    and query, checked against the description.

    Parameters
    ----------
    geography : Geography
        As for :func:`pl94_171`.
    tables : dict
        ``(level, query) -> table``: ``level`` a geography level (or its spine name),
        ``query`` one of :data:`QUERIES`; ``table`` of shape ``(units, cells)`` (or flat),
        the units of that level in the order of the geography's codes
        (``geography.labels``), the cells row-major over the query's attributes (as the
        DAS's). Every query of every level must be given, once, and no other.

    Returns
    -------
    ndarray of float64

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import census
    >>> geo = census.Geography({"tract": [0, 0], "block": [0, 1]}, census.PL94_ATTRIBUTES)
    >>> mech = census.pl94_171(geo)
    >>> tables = {(level, q): np.zeros((units, census.pl94.size_of(q)))
    ...           for level, units in (("tract", 1), ("block", 2)) for q in census.pl94.QUERIES}
    >>> census.pl94_171_measurements(geo, tables).shape == (mech.size,)
    True
    >>> del tables[("block", "hhgq")]
    >>> census.pl94_171_measurements(geo, tables)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: pl94_171_measurements: tables lacks the description's [('block', 'hhgq')] ...
    """
    where = "pl94_171_measurements"
    geography = as_geography(geography)
    _check_attributes(geography, where)
    spine = _das_levels(geography, levels, where)
    if not isinstance(tables, Mapping):
        raise TypeError(f"{where}: tables must be a dict of (level, query) -> table, got "
                        f"{type(tables).__name__}")
    by_spine = dict(zip(spine, geography.names))
    keyed = {}
    for key, table in tables.items():
        level, name = key if isinstance(key, tuple) and len(key) == 2 else (None, None)
        level = by_spine.get(level, level)
        if level not in geography.names or name not in QUERIES:
            raise ValueError(f"{where}: tables key {key!r} is not (level, query) of this "
                             f"release: levels {list(geography.names)}, queries "
                             f"{list(QUERIES)}")
        if (level, name) in keyed:
            raise ValueError(f"{where}: tables gives ({level!r}, {name!r}) twice")
        keyed[level, name] = table
    wanted = [(name, q) for name, das in zip(geography.names, spine) for q in QUERY_SHARES[das]]
    missing = [k for k in wanted if k not in keyed]
    extra = [k for k in keyed if k not in wanted]
    if missing:
        raise ValueError(f"{where}: tables lacks the description's {missing} (every query "
                         f"of every level of the geography is released)")
    if extra:
        raise ValueError(f"{where}: tables has {extra}, which the description does not "
                         f"release (the US total is exact)")
    out = []
    for level, name in wanted:
        units = geography.units[geography.level(level)]
        arr = np.asarray(keyed[level, name], dtype=np.float64)
        cells = size_of(name)
        if arr.size != units * cells or arr.ndim not in (1, 2) or (
                arr.ndim == 2 and arr.shape != (units, cells)):
            raise ValueError(f"{where}: table ({level!r}, {name!r}) must have shape "
                             f"({units}, {cells}) (units of {level!r} x the query's cells), "
                             f"got {arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{where}: table ({level!r}, {name!r}) holds values that are not "
                             f"finite (a unit the optimised spine bypassed has no "
                             f"measurement: not described here)")
        out.append(arr.reshape(-1))
    return np.concatenate(out)


def size_of(name: str) -> int:
    """The number of cells of query ``name`` (:data:`QUERIES`).

    Examples
    --------
    >>> from dawrap.models import census
    >>> census.pl94.size_of("votingage * hispanic * cenrace")
    252
    """
    marginal = MARGINALS[name]
    if marginal == DETAILED:
        return math.prod(ATTRIBUTES.values())
    return math.prod(e.size if not isinstance(e, str) else ATTRIBUTES[e] for e in marginal)
