"""The census model's split of the records for the within-chain parallel sweep
(:mod:`dawrap.samplers.parallel`): records grouped by a coarse geography unit.

A record's unit is public up to the model's ``invariant`` level, and the prior's counts are
kept per unit of its finest level, so a record never leaves its unit of any level (of the
model's geography or of the release's) that contains whole units of both. Of those levels
the partition takes the one with the fewest units, at least two (:func:`level_units`), and
merges its units into at most :data:`~dawrap.samplers.parallel.MAX_GROUPS` groups of about
equal numbers of records. A released cell whose unit lies in one group is that group's; the
cells of a unit spanning several groups (a nation's total when the groups are states) are
shared, and split exactly into pieces (discrete Gaussian noise).
"""
from __future__ import annotations

import numpy as np

from dawrap.extend import MAX_GROUPS, Partition, merge_units

from .geography import Geography
from .release import layout_of

__all__ = ["level_units", "partition"]


def _constant_on(labels: np.ndarray, blocks: np.ndarray) -> bool:
    """Whether ``labels`` (one per finest unit) is constant on each block of ``blocks``."""
    order = np.lexsort((labels, blocks))
    b, l = blocks[order], labels[order]
    return bool(np.all((b[1:] != b[:-1]) | (l[1:] == l[:-1])))


def level_units(geographies, invariant_of, prior_of) -> np.ndarray:
    """The unit of each finest unit at the level the records are grouped by: of the levels
    of ``geographies`` (the model's and the release's, over the same finest units) whose
    units contain whole units of ``invariant_of`` and of ``prior_of`` (each finest unit's
    unit of the invariant level and of the prior's finest), the one with the fewest units,
    at least two (all in one unit when none has two)."""
    best = None
    for geo in geographies:
        for l in range(len(geo.names)):
            units = geo.ancestors[l]
            count = int(np.unique(units).shape[0])
            if count >= 2 and (best is None or count < best[0]) \
                    and _constant_on(units, invariant_of) and _constant_on(units, prior_of):
                best = (count, np.asarray(units, np.int64))
    return np.zeros(invariant_of.shape[0], np.int64) if best is None else best[1]


def partition(geography: Geography, mechanism, x, invariant: int, prior_finest: int,
              latent: bool, max_groups: int = MAX_GROUPS) -> Partition:
    """The :class:`dawrap.parallel.Partition` of the census model's records ``x`` for the release of
    ``mechanism`` (module docstring); ``invariant``, ``prior_finest`` and ``latent`` are the
    model's (:func:`dawrap.models.census.model`).

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import census
    >>> from dawrap.models.census.partition import partition
    >>> geo = census.Geography({"nation": [0, 0, 0, 0], "state": [0, 0, 1, 1],
    ...                         "block": np.arange(4)}, 2)
    >>> mech = census.discrete_gaussian(geo, [census.query("block", rho=1.0),
    ...                                       census.query("nation", rho=1.0)])
    >>> part = partition(geo, mech, census.records(np.ones((4, 2), int)), 2, 2, False)
    >>> part.groups, part.cells.tolist()        # blocks 0-1 and 2-3; the nation's 2 cells
    (2, [0, 0, 0, 0, 1, 1, 1, 1, -1, -1])
    """
    layout = layout_of(mechanism)
    if layout is None or layout.geography.units[-1] != geography.units[-1] \
            or layout.geography.cells != geography.cells:
        raise ValueError("threads: the census model groups its records by the census "
                         "release's geography (census.discrete_gaussian over the model's "
                         "geography); with another mechanism pass dw.Record(partition=...)")
    unit_of_fine = level_units((geography, layout.geography),
                               geography.ancestors[invariant],
                               geography.ancestors[prior_finest])
    fine = np.asarray(x[:, 0], np.int64)
    group_of_unit = merge_units(unit_of_fine[fine], int(unit_of_fine.max()) + 1, max_groups)
    group_of_fine = group_of_unit[unit_of_fine]
    cells = np.empty(layout.size, np.int64)
    for q, l in enumerate(layout.levels):
        units = layout.geography.ancestors[l]
        owner = np.full(layout.geography.units[l], -2, np.int64)
        owner[units] = group_of_fine  # one of the groups under each unit, then checked:
        spans = np.zeros(owner.shape[0], bool)
        spans[units[owner[units] != group_of_fine]] = True  # units over several groups
        owner[spans] = -1
        cells[layout.offsets[q]:layout.offsets[q] + layout.sizes[q]] = np.repeat(
            owner, layout.cells[q])
    prior = np.empty(geography.units[prior_finest], np.int64)
    prior[geography.ancestors[prior_finest]] = group_of_fine
    stats = np.repeat(prior, geography.cells)
    if latent:
        stats = np.concatenate([stats, group_of_fine])
    return Partition(records=group_of_fine[fine], cells=cells, stats=stats)
