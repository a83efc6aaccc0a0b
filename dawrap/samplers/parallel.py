r"""One chain's record sweep on several threads, with draws that do not depend on them.

Given theta, the records are independent a priori and interact only through the released
cells they touch. A :class:`Partition` splits the records into groups :math:`g = 1..G` and
says which group *owns* each cell of the mechanism's (sparse) statistic; a cell no group
owns is *shared* (e.g. a nation-level total when the groups are states). Records of
different groups then touch disjoint owned cells, and given theta and the shared cells'
treatment below, the groups' records are conditionally independent: the groups are swept at
the same time, each with its own ``numpy.random.Generator`` spawned from the chain's seed
(:func:`group_generators`), so that the draws for a seed are the same on 1, 2 or 16 threads
(which thread sweeps which group changes nothing a group reads or writes).

**Shared cells, exactly.** Let cell :math:`j` be shared, with Gaussian noise of sd
:math:`\sigma`, release :math:`s` and total :math:`T = \sum_g T_g` (:math:`T_g` the part of
group :math:`g`'s records). Its likelihood :math:`\exp(-(s - T)^2 / 2\sigma^2)` is the
marginal of an augmented model with one continuous *piece* per group,

.. math:: r_g = T_g + e_g, \quad e_g \overset{iid}{\sim} \mathcal N(0, \sigma^2 / G),
          \qquad s = \textstyle\sum_g r_g,

since :math:`\sum_g e_g \sim \mathcal N(0, \sigma^2)`. Given the pieces, the likelihood
factorises, :math:`p(r \mid x) \propto \prod_g \exp(-(r_g - T_g)^2 G / 2\sigma^2)` on the
plane :math:`\sum_g r_g = s` (a constant Jacobian), so group :math:`g` sees the release
:math:`r_g` of its own partial total with noise sd :math:`\sigma/\sqrt G`: the groups
decouple. Each sweep is then a Gibbs scan of the augmented posterior :math:`p(x, r \mid
\theta, s)`:

(a) the pieces given the records, exactly: :math:`e` given its sum :math:`c = s - T` is
    :math:`e_g = c/G + z_g - \bar z` with :math:`z_g \overset{iid}{\sim} \mathcal
    N(0, \sigma^2/G)` (a Gaussian vector conditioned on its sum), O(G) per shared cell,
    drawn with the chain's own generator;
(b) every group's records given the pieces (the record sweep of
    :mod:`dawrap.samplers.record`, Metropolis within Gibbs, with the group's pieces in place
    of the shared cells' releases), the groups in parallel;
(c) the pieces are discarded: :math:`x` is then a draw of the marginal chain, whose
    invariant law is :math:`p(x \mid \theta, s)` because that of the augmented chain is
    :math:`p(x, r \mid \theta, s)`.

Both steps leave :math:`p(x, r \mid \theta, s)` invariant, hence the posterior.

**The discrete Gaussian** is not infinitely divisible, but it need not be: its pmf on the
integers is :math:`\exp(-(s - T)^2 / 2\sigma^2) / Z(\sigma)` with
:math:`Z(\sigma) = \sum_{k \in \mathbb Z} e^{-k^2/2\sigma^2}`, the same for every integer
:math:`T` (the residual :math:`s - T` runs over the integers whatever :math:`T` is). As a
function of the records it is therefore proportional to the continuous Gaussian likelihood,
with a constant that does not depend on them, and the posterior of the records is the same:
the continuous pieces above are exact for it too (the statistic and the release being
integers, as the mechanism checks).

**Laplace noise** of scale :math:`b` is a scale mixture of normals:
:math:`e \mid V \sim \mathcal N(0, V)` with :math:`V \sim \mathrm{Exponential}` of rate
:math:`1/2b^2` has the density
:math:`\int_0^\infty \mathcal N(e; 0, V)\, \tfrac{1}{2b^2} e^{-V/2b^2}\, dV = e^{-|e|/b}/2b`.
Each shared cell gets one latent variance :math:`V_j`; given it, the cell's noise is
Gaussian and is split into pieces as above, with variance :math:`V_j/G` each. A sweep is a
Gibbs scan of :math:`p(x, V, r \mid \theta, s)`:

- step (a0): :math:`V_j` given the records (the pieces integrated out, so given
  :math:`c = s_j - T_j` only): :math:`p(V \mid c) \propto V^{-1/2}
  \exp(-c^2/2V - V/2b^2)`, a generalised inverse Gaussian
  :math:`\mathrm{GIG}(\tfrac12, 1/b^2, c^2)`. In units of :math:`b^2`,
  :math:`u = V/b^2` has density :math:`\propto u^{-1/2} e^{-\kappa^2/2u - u/2}` with
  :math:`\kappa = |c|/b`: for :math:`\kappa > 0`, :math:`1/u` is inverse Gaussian with
  mean :math:`1/\kappa` and shape 1; for :math:`c = 0` (integer data) :math:`u` is
  :math:`\chi^2_1`, the square of a standard normal (:func:`draw_scales`, with the
  chain's own generator);
- step (a): the pieces given their sum and :math:`V_j`, as for the Gaussian with
  :math:`\sigma^2 = V_j`;
- step (b): every group's records given the pieces and :math:`V_j`: the group sees its
  piece of the shared cell through Gaussian noise of variance :math:`V_j/G`
  (``piece_scale``, drawn anew each sweep), not through the mechanism's Laplace density;
- step (c): the pieces and :math:`V` are discarded.

Steps (a0) and (a) together draw :math:`(V, r)` from :math:`p(V, r \mid x, \theta, s)`
exactly, and (b) updates :math:`x` leaving :math:`p(x \mid V, r, \theta, s)` invariant, so
the joint :math:`p(x, V, r \mid \theta, s)` is invariant, hence its marginal
:math:`p(x \mid \theta, s)`.

**The two-sided geometric** (:class:`dawrap.Geometric`) has the pmf
:math:`\frac{1-\alpha}{1+\alpha} e^{-|s - T|/b}` on the integers,
:math:`b = \Delta_1/\epsilon`, whose normaliser does not depend on the integer :math:`T`: as
a function of the records it is proportional to the continuous Laplace likelihood of scale
:math:`b` (the argument made for the discrete Gaussian), so the same latent variances are
exact for it. Which scheme a run uses, and each shared cell's :math:`1/\sigma_j` or
:math:`1/b_j`, the noise family of the mechanism's separable density says
(:class:`~dawrap.mechanisms.families.NoiseFamily`: its ``split``, a
:class:`~dawrap.mechanisms.families.Split`, and its ``cell_inverse_scale`` read from the
mechanism's parameters; :mod:`dawrap.runner.grouped` asks it): this module receives the
scheme and the inverse scales, and knows no noise family and no parameter layout. Noise
without a split is refused when the partition shares cells (:func:`check_partition`), and
a partition whose groups own every cell they touch (coarser groups) needs no pieces,
whatever the noise.

Model statistics: when the model's statistic is the mechanism's it follows the cells; when
:attr:`Partition.stats` says which group owns each of its cells, groups write their own;
otherwise each group sums its changes in a row of its own, added to the running statistic
in group order after the sweep (the same floats for any number of threads). A model whose
statistic is recounted once per iteration (``Model(stat_every="iteration")``) has no
per-record work in the groups' passes: after the iteration's sweeps each group recounts
its part from its own records (:func:`group_stats`), into the cells it owns or its row,
the rows added in group order.

Examples
--------
Four records in two groups, one shared cell (index 2):

>>> import numpy as np
>>> from dawrap.samplers.parallel import Partition
>>> part = Partition(records=[0, 0, 1, 1], cells=[0, 1, -1])
>>> part.groups, part.shared_cells.tolist()
(2, [2])
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

from ..compile.templates import slot
from ..mechanisms.families import Split
from .record import BLOCK, StepInfo, move_model_stat, sweep_table, take_proposal
from .entries_path import merge_entries
from .status import OK, BAD_ENTRIES, BAD_RATIO, BAD_RECORD, BAD_STATS

__all__ = ["Partition", "GroupInputs", "GroupState", "check_partition", "group_generators",
           "merge_units", "draw_scales", "draw_pieces", "group_totals", "group_pass", "group_stats",
           "bind_groups", "GroupFunctions", "BAD_PARTITION", "BAD_STAT_PARTITION", "MAX_GROUPS",
           "GROUP_STREAM", "partition_error", "warn_pinned_pieces",
           "first_piece_scale", "pieces_pinned", "info_of"]

# The slots of the templates below (those of dawrap.samplers.record's sweep, plus two).
DRAW_RECORD = slot("(rng, theta, out)")
PROPOSE_RECORD = slot("(rng, theta, x_i, out) -> log Hastings ratio")
DRAW_PREPARED = slot("(rng, theta, table, out)")
PROPOSE_PREPARED = slot("(rng, theta, table, x_i, out) -> log Hastings ratio")
DRAW_RECORDS = slot("(rng, theta, out): out.shape[0] records at once")
ENTRIES = slot("(x_i, s_dp, index, value) -> count")
MODEL_ENTRIES = slot("(x_i, index, value) -> count")
MODEL_STAT = slot("(x_i, out)")
COORDINATE_LOG_DENSITY = slot("(s_j, t_j, j, params) -> float")
RECORD_SIZE = slot("int: floats per record")
MECH_STAT_SIZE = slot("int: floats of the mechanism's statistic")
MODEL_STAT_SIZE = slot("int: floats of the model's statistic")
NNZ = slot("int: most pairs of ENTRIES")
MODEL_NNZ = slot("int: most pairs of MODEL_ENTRIES (0: dense)")
USER_PROPOSAL = slot("bool: propose with PROPOSE_RECORD")
SAME_STATISTIC = slot("bool: the model's statistic is the mechanism's")
RANDOM_SCAN = slot("bool: visit as many records of the group at random")
BATCHED = slot("bool: proposals from DRAW_RECORDS, BLOCK at a time")
PREPARED_PROPOSALS = slot("bool: propose through the PreparedDraw's table")
LAZY_STATS = slot("bool: the model's statistic is recounted once per iteration "
                  "(group_stats), not moved per record")
STATS_OWNED = slot("bool: the partition says which group owns each model-statistic cell "
                   "(else each group sums its changes in a row of its own)")

class GroupInputs(NamedTuple):
    """What every group of a chain reads of the release and the partition (one record for
    the group pass, the recounts and a records move's group form)."""
    #: The release and the mechanism's density parameters.
    s_dp: np.ndarray
    params: np.ndarray
    #: The group owning each cell of the mechanism's statistic (-1: shared).
    owner: np.ndarray
    #: Each cell's slot among the shared cells (-1: owned by a group).
    slot_of: np.ndarray
    #: The group owning each cell of the model's statistic (empty: none declared).
    stats_owner: np.ndarray
    #: The inverse sd of each shared cell's pieces (this sweep's).
    piece_scale: np.ndarray


class GroupState(NamedTuple):
    """One group's part of a sweep: its index, its records, and its rows of the shared
    cells' partial totals and pieces and of the model's statistic."""
    g: int
    members: np.ndarray
    local_total: np.ndarray
    local_release: np.ndarray
    stats_row: np.ndarray
    #: The cells of the model's statistic the group owns (``stat_every="iteration"``).
    own_stats: np.ndarray


#: The status a group's pass returns when a record touched a cell another group owns
#: (the declared partition is wrong); beyond :mod:`dawrap.samplers.status`'s codes.
BAD_PARTITION = 100
#: The same for a cell of the model's statistic (``Partition.stats``).
BAD_STAT_PARTITION = 101
#: The most groups an automatic partition makes (units are merged, records balanced): each
#: group costs one call per sweep and one generator, and 64 groups feed 64 threads.
MAX_GROUPS = 64
#: The word appended to a chain's seed's spawn key to derive its groups' generators.
GROUP_STREAM = 0x70617274  # "part"


@dataclass(frozen=True, eq=False)
class Partition:
    """Records in groups, and the group owning each released cell (``-1``: shared).

    Parameters
    ----------
    records : array_like of int, shape (n,)
        The group of each record, ``0..G-1``; every group holds at least one record. A
        record keeps its group for the whole run: its proposals must touch only cells its
        group owns or shared ones (checked at every record update: a record that touches a
        cell of another group stops the run with an error, before it writes anything).
    cells : array_like of int, shape (size,)
        The group owning each cell of the mechanism's statistic, or ``-1`` for a cell
        several groups touch (split into pieces, module docstring: Gaussian, discrete
        Gaussian, Laplace and geometric noise).
    stats : array_like of int, shape (stat_size,), optional
        The group owning each cell of the model's statistic (when it is declared sparse and
        not the mechanism's). Default: each group sums its changes in a row of its own
        (``G x stat_size`` floats).

    Examples
    --------
    >>> from dawrap.samplers.parallel import Partition
    >>> Partition(records=[1, 0, 1], cells=[0, 1]).sizes.tolist()
    [1, 2]
    """
    records: np.ndarray
    cells: np.ndarray
    stats: np.ndarray | None = None

    def __post_init__(self):
        for name in ("records", "cells", "stats"):
            value = getattr(self, name)
            if value is None:
                continue
            arr = np.asarray(value)
            if arr.ndim != 1 or arr.dtype.kind not in "iu" and not (
                    arr.dtype.kind == "f" and np.all(arr == np.round(arr))):
                raise ValueError(f"Partition: {name} must be a 1-d array of whole numbers "
                                 f"(group indices), got {value!r}")
            arr = np.ascontiguousarray(arr, np.int64)
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        groups = self.groups
        if self.records.shape[0] == 0 or self.records.min() < 0:
            raise ValueError("Partition: records must give each record a group >= 0")
        if np.any(np.bincount(self.records, minlength=groups) == 0):
            empty = int(np.flatnonzero(np.bincount(self.records, minlength=groups) == 0)[0])
            raise ValueError(f"Partition: group {empty} holds no record (groups are numbered "
                             f"0..G-1, each with at least one record)")
        for name in ("cells", "stats"):
            arr = getattr(self, name)
            low = -1 if name == "cells" else 0
            if arr is not None and arr.shape[0] and (arr.min() < low or arr.max() >= groups):
                raise ValueError(f"Partition: {name} must hold groups 0..{groups - 1}"
                                 f"{' or -1 (shared)' if low < 0 else ''}, got values from "
                                 f"{arr.min()} to {arr.max()}")

    @property
    def groups(self) -> int:
        """The number of groups, G."""
        return int(self.records.max()) + 1

    @property
    def sizes(self) -> np.ndarray:
        """Records per group."""
        return np.bincount(self.records, minlength=self.groups)

    @property
    def shared_cells(self) -> np.ndarray:
        """The indices of the shared cells (``cells == -1``)."""
        return np.flatnonzero(self.cells < 0)


def check_partition(partition: Partition, n: int, size: int, stat_size: int, *,
                    split: Split | None, shared_statistic: bool, model_nnz: int) -> None:
    """Check ``partition`` against the run: its sizes, and shared cells only where they can
    be split exactly (``split``: how the mechanism's noise family splits a shared cell,
    :class:`~dawrap.mechanisms.families.Split`, or None). A ValueError names what to do.

    Examples
    --------
    >>> from dawrap.samplers.parallel import Partition, check_partition
    >>> check_partition(Partition([0, 1], [0, -1]), 2, 2, 0, split=None,
    ...                 shared_statistic=False, model_nnz=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: threads: the partition shares cell 1 between groups, ...
    """
    if not isinstance(partition, Partition):
        raise TypeError(f"partition must be a dawrap.parallel.Partition, got {type(partition).__name__}")
    if partition.records.shape[0] != n:
        raise ValueError(f"partition.records must give one group per record (n = {n}), got "
                         f"{partition.records.shape[0]}")
    if partition.cells.shape[0] != size:
        raise ValueError(f"partition.cells must give one group (or -1) per cell of the "
                         f"mechanism's statistic (size = {size}), got "
                         f"{partition.cells.shape[0]}")
    if partition.stats is not None:
        if partition.stats.shape[0] != stat_size:
            raise ValueError(f"partition.stats must give one group per cell of the model's "
                             f"statistic (stat_size = {stat_size}), got "
                             f"{partition.stats.shape[0]}")
        if model_nnz == 0 or shared_statistic:
            raise ValueError("partition.stats is for a model statistic declared sparse "
                             "(dw.declare_sparse) that is not the mechanism's: leave it out "
                             "(each group then sums its own changes)")
    shared = partition.shared_cells
    if split is not None and not isinstance(split, Split):
        raise TypeError(f"check_partition: split must be a dawrap.mechanisms.families.Split "
                        f"or None, got {split!r}")
    if shared.size and split is None:
        raise ValueError(
            f"threads: the partition shares cell {int(shared[0])} between groups, and shared "
            f"cells are split exactly only for noise whose family says how: Gaussian, "
            f"discrete Gaussian, Laplace or geometric noise (a separable density of a noise "
            f"family, dawrap.mechanisms.families); with this mechanism's noise, declare "
            f"coarser groups that own every cell they touch, or run without threads")


def group_generators(rng: np.random.Generator, groups: int) -> list:
    """One generator per group, from the seed of the chain's generator ``rng`` (its
    ``SeedSequence`` with the spawn key extended by :data:`GROUP_STREAM` and the group's
    index): the same for every number of threads, and independent of the chain's own
    stream and of every other chain's.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.samplers.parallel import group_generators
    >>> rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(3)))
    >>> a, b = group_generators(rng, 2)
    >>> float(a.random()) == float(group_generators(rng, 2)[0].random())
    True
    """
    seq = rng.bit_generator.seed_seq
    return [np.random.Generator(type(rng.bit_generator)(np.random.SeedSequence(
        seq.entropy, spawn_key=tuple(seq.spawn_key) + (GROUP_STREAM, g),
        pool_size=seq.pool_size))) for g in range(groups)]


def merge_units(unit_of_record: np.ndarray, units: int, max_groups: int = MAX_GROUPS
                ) -> np.ndarray:
    """The group of each of ``units`` units: consecutive units merged into at most
    ``max_groups`` groups of about equal numbers of records (every group non-empty), from
    the unit of each record. Depends on the records' units only, never on the threads.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.samplers.parallel import merge_units
    >>> merge_units(np.array([0, 0, 0, 1, 2, 3, 3, 3]), 4, max_groups=2).tolist()
    [0, 0, 1, 1]
    """
    counts = np.bincount(unit_of_record, minlength=units).astype(np.float64)
    occupied = counts > 0
    groups = int(min(max_groups, occupied.sum()))
    if groups <= 1:
        return np.zeros(units, np.int64)
    # a unit goes to the group its records' midpoint falls in (cumulative share of records)
    middle = (np.cumsum(counts) - 0.5 * counts) / counts.sum()
    group = np.minimum((middle * groups).astype(np.int64), groups - 1)
    # renumber the groups that received records 0..G-1 (empty units join their neighbour)
    used = np.unique(group[occupied])
    index = np.searchsorted(used, group)
    return np.minimum(index, used.shape[0] - 1).astype(np.int64)


@numba.njit(nogil=True, cache=True)
def _inverse_latent(rng, kappa):
    r"""One draw of :math:`1/u`, :math:`u` of density :math:`\propto u^{-1/2}
    e^{-\kappa^2/2u - u/2}` (step (a0) of the module docstring in units of :math:`b^2`).

    :math:`\kappa = 0`: :math:`u = z^2`, :math:`z` standard normal (:math:`\chi^2_1`, the
    Gamma of shape 1/2 and rate 1/2). :math:`\kappa > 0`: :math:`1/u` is inverse Gaussian of
    mean :math:`\mu = 1/\kappa` and shape 1, by Michael, Schucany and Haas's transformation
    (the algorithm of ``Generator.wald``) with :math:`y = \mu z^2`: the root
    :math:`x = \mu + \tfrac{\mu}{2}(y - \sqrt{y^2 + 4y})` written as
    :math:`x = 4 / (z^2 (1 + \sqrt{1 + 4/y})^2)`, which has no cancellation (``wald``'s
    form loses digits in proportion to :math:`\mu = b/|c|`, and for :math:`|c|/b` about
    :math:`10^{-15}` returns 0 for one draw in ten), then :math:`x` with probability
    :math:`\mu/(\mu + x)`, else :math:`\mu^2/x`. A normal that squares to 0 (probability 0 in exact arithmetic) is
    drawn again for :math:`\kappa = 0` and gives the limit :math:`x = \mu` otherwise."""
    z = rng.standard_normal()
    if kappa == 0.0:
        while z * z == 0.0:
            z = rng.standard_normal()
        return 1.0 / (z * z)
    mu = 1.0 / kappa
    z2 = z * z
    if z2 == 0.0:
        x = mu
    else:
        root = 1.0 + math.sqrt(1.0 + 4.0 / (mu * z2))
        x = 4.0 / (z2 * root * root)
    if rng.random() * (mu + x) <= mu:
        return x
    return mu * (mu / x)


@numba.njit(nogil=True, cache=True)
def draw_scales(rng, s_dp, total, inverse_scale, shared, groups, piece_scale):
    r"""Step (a0) of the module docstring (:attr:`Split.LATENT
    <dawrap.mechanisms.families.Split.LATENT>`: Laplace and geometric noise): for each
    shared cell ``shared[k]`` a latent variance :math:`V` from :math:`p(V \mid c) \propto
    V^{-1/2} \exp(-c^2/2V - V/2b^2)`, :math:`c` the release ``s_dp[j]`` minus the total
    ``total[j]`` and ``inverse_scale[k]`` the cell's :math:`1/b`, stored as the groups'
    inverse sd ``piece_scale[k]`` :math:`= \sqrt{G/V}` (``groups`` is :math:`G`); one or two
    normals and at most one uniform of ``rng`` per cell.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.samplers.parallel import draw_scales
    >>> scale = np.empty(1)
    >>> draw_scales(np.random.default_rng(0), np.array([3.0]), np.array([1.0]),
    ...             np.array([0.5]), np.array([0]), 4, scale)
    >>> bool(scale[0] > 0.0)
    True
    """
    root_groups = math.sqrt(groups)
    for k in range(shared.shape[0]):
        j = shared[k]
        inverse_u = _inverse_latent(rng, abs(s_dp[j] - total[j]) * inverse_scale[k])
        piece_scale[k] = root_groups * inverse_scale[k] * math.sqrt(inverse_u)


@numba.njit(nogil=True, cache=True)
def draw_pieces(rng, s_dp, total, shared, piece_scale, local_total, local_release):
    r"""Step (a) of the module docstring: for each shared cell ``shared[k]``, the pieces
    :math:`r_{gk} = T_{gk} + c/G + z_g - \bar z` of its release into ``local_release[:, k]``
    (``local_total[:, k]`` the groups' partial totals, ``total`` their sum), :math:`z_g \sim
    \mathcal N(0, 1/a_k^2)` with :math:`a_k` = ``piece_scale[k]``: :math:`\sigma^2/G` for
    Gaussian noise (``piece_scale`` the constant :math:`\sqrt G/\sigma`), :math:`V/G` for
    Laplace noise (:func:`draw_scales`)."""
    groups = local_total.shape[0]
    z = np.empty(groups)
    for k in range(shared.shape[0]):
        j = shared[k]
        sd = 1.0 / piece_scale[k]
        mean = 0.0
        for g in range(groups):
            z[g] = sd * rng.standard_normal()
            mean += z[g]
        mean /= groups
        share = (s_dp[j] - total[j]) / groups
        for g in range(groups):
            local_release[g, k] = local_total[g, k] + share + z[g] - mean


def group_totals(x, inputs, group):
    """Group ``g``'s partial totals of the shared cells into ``local_total`` (its row),
    checking the partition on its records: ``(status, record, cell)``, ``BAD_PARTITION``
    with the first record of the group that touches a cell another group owns."""
    s_dp, owner, slot_of = inputs.s_dp, inputs.owner, inputs.slot_of
    g, members, local_total = group.g, group.members, group.local_total
    index, value = np.empty(max(NNZ, 1), np.int64), np.empty(max(NNZ, 1))
    for k in range(local_total.shape[0]):
        local_total[k] = 0.0
    for a in range(members.shape[0]):
        i = members[a]
        count = ENTRIES(x[i], s_dp, index, value)
        if count < 0 or count > NNZ:
            return BAD_ENTRIES, i, -1
        for b in range(count):
            j = index[b]
            if j < 0 or j >= MECH_STAT_SIZE:
                return BAD_ENTRIES, i, -1
            if slot_of[j] >= 0:
                local_total[slot_of[j]] += value[b]
            elif owner[j] != g:
                return BAD_PARTITION, i, j
    return OK, -1, -1


def _owned_stats(x_i, proposal, stats, stats_owner, g, index, value, touched, delta):
    """``stats += model_stat(proposal) - model_stat(x_i)`` through the model's entries, on
    cells group ``g`` owns: ``(status, cell)``, ``BAD_PARTITION`` (nothing written) with a
    cell of another group, ``BAD_ENTRIES`` for broken entries, ``BAD_STATS`` non-finite."""
    used = merge_entries(MODEL_ENTRIES(x_i, index, value), index, value, -1.0, MODEL_NNZ,
                         MODEL_STAT_SIZE, touched, delta, 0)
    if used >= 0:
        used = merge_entries(MODEL_ENTRIES(proposal, index, value), index, value, 1.0,
                             MODEL_NNZ, MODEL_STAT_SIZE, touched, delta, used)
    if used < 0:
        return BAD_ENTRIES, -1
    for b in range(used):
        if delta[b] != 0.0 and stats_owner[touched[b]] != g:
            return BAD_PARTITION, touched[b]
    finite = True
    for b in range(used):
        stats[touched[b]] += delta[b]
        finite &= math.isfinite(stats[touched[b]])
    return (OK if finite else BAD_STATS), -1


def group_pass(rng, theta, x, total, stats, table, inputs, group):
    """Step (b) of the module docstring for group ``g`` (``group``, a :class:`GroupState`;
    ``inputs`` the chain's :class:`GroupInputs`): one sweep of its records ``members`` (in
    order, or as many at random with ``RANDOM_SCAN``), as
    :func:`dawrap.samplers.record.entries_pass` does, with the shared cells' pieces
    ``local_release`` (noise ``1/piece_scale``) against the group's partial totals
    ``local_total`` in place of their releases. Writes only the group's own cells of
    ``total`` (and ``stats``), its rows of the shared cells and of ``stats_row``.

    Returns ``(accepted, min_log_alpha, status, record, cell)``: ``record`` and ``cell`` say
    where a ``BAD_PARTITION`` (a cell another group owns) or ``BAD_STAT_PARTITION`` (the
    same in the model's statistic) was met.
    """
    s_dp, params, owner, slot_of, stats_owner, piece_scale = inputs
    g, members, local_total, local_release, stats_row, _ = group
    m = members.shape[0]
    nnz = max(NNZ, MODEL_NNZ)
    proposal, current = np.empty(RECORD_SIZE), np.empty(RECORD_SIZE)
    index, value = np.empty(nnz, np.int64), np.empty(nnz)
    touched, delta = np.empty(2 * nnz, np.int64), np.empty(2 * nnz)
    m_touched, m_delta = np.empty(2 * nnz, np.int64), np.empty(2 * nnz)
    s_old, s_new = np.empty(MODEL_STAT_SIZE), np.empty(MODEL_STAT_SIZE)
    if BATCHED:
        block = np.empty((BLOCK, RECORD_SIZE))
        taken = BLOCK
    accepted = 0
    min_log_alpha = 0.0
    nan_seen = False
    finite = True
    for visit in range(m):
        i = members[rng.integers(0, m)] if RANDOM_SCAN else members[visit]
        for j in range(RECORD_SIZE):  # no view x[i]: see record.dense_pass
            current[j] = x[i, j]
        # The proposal step and the entries' merge of record.entries_pass, copied on purpose:
        # a shared template costs reference counts per record
        # (benchmarks/results/proposal_block_ab.md).
        if USER_PROPOSAL:
            for j in range(RECORD_SIZE):
                proposal[j] = current[j]
            if PREPARED_PROPOSALS:
                log_alpha = PROPOSE_PREPARED(rng, theta, table, current, proposal)
            else:
                log_alpha = PROPOSE_RECORD(rng, theta, current, proposal)
        elif BATCHED:
            taken = take_proposal(rng, theta, block, taken, m - visit, proposal)
            log_alpha = 0.0
        elif PREPARED_PROPOSALS:
            DRAW_PREPARED(rng, theta, table, proposal)
            log_alpha = 0.0
        else:
            DRAW_RECORD(rng, theta, proposal)
            log_alpha = 0.0
        used = merge_entries(ENTRIES(current, s_dp, index, value), index, value, -1.0, NNZ,
                             MECH_STAT_SIZE, touched, delta, 0)
        if used >= 0:
            used = merge_entries(ENTRIES(proposal, s_dp, index, value), index, value, 1.0,
                                 NNZ, MECH_STAT_SIZE, touched, delta, used)
        if used < 0:
            return accepted, min_log_alpha, BAD_ENTRIES, i, -1
        change = 0.0
        for b in range(used):
            if delta[b] != 0.0:
                j = touched[b]
                k = slot_of[j]
                if k >= 0:  # a shared cell: the group's piece against its partial total
                    before = (local_release[k] - local_total[k]) * piece_scale[k]
                    after = (local_release[k] - local_total[k] - delta[b]) * piece_scale[k]
                    change += 0.5 * (before * before - after * after)
                elif owner[j] != g:  # read before anything is written: no race, no change
                    return accepted, min_log_alpha, BAD_PARTITION, i, j
                else:
                    change += (COORDINATE_LOG_DENSITY(s_dp[j], total[j] + delta[b], j, params)
                               - COORDINATE_LOG_DENSITY(s_dp[j], total[j], j, params))
        log_alpha += change
        nan_seen |= log_alpha != log_alpha
        if log_alpha < min_log_alpha:
            min_log_alpha = log_alpha
        if log_alpha >= 0.0 or rng.random() < math.exp(log_alpha):
            if LAZY_STATS:  # recounted after the iteration's sweeps (group_stats)
                pass
            elif SAME_STATISTIC:  # the model's statistic is the mechanism's: shared cells after
                for b in range(used):
                    if slot_of[touched[b]] < 0:
                        stats[touched[b]] += delta[b]
                        finite &= math.isfinite(stats[touched[b]])
            elif STATS_OWNED:
                moved, cell = _owned_stats(current, proposal, stats, stats_owner, g, index,
                                           value, m_touched, m_delta)
                if moved == BAD_PARTITION:
                    return accepted, min_log_alpha, BAD_STAT_PARTITION, i, cell
                if moved == BAD_ENTRIES:
                    return accepted, min_log_alpha, BAD_ENTRIES, i, -1
                finite &= moved == OK
            elif MODEL_STAT_SIZE > 0:  # the group's own row, added after the sweep
                move_model_stat(current, proposal, stats_row, s_old, s_new)
            for b in range(used):
                k = slot_of[touched[b]]
                if k >= 0:
                    local_total[k] += delta[b]
                else:
                    total[touched[b]] += delta[b]
            for j in range(RECORD_SIZE):
                x[i, j] = proposal[j]
            accepted += 1
    status = BAD_RATIO if nan_seen else (OK if finite else BAD_STATS)
    for a in range(m if status == OK else 0):
        for j in range(RECORD_SIZE):
            if not math.isfinite(x[members[a], j]):
                status = BAD_RECORD
    return accepted, min_log_alpha, status, -1, -1


def group_stats(x, stats, inputs, group):
    r"""Group ``g``'s part of the model's statistic recounted from its records ``members``
    (in order), for a model with ``stat_every="iteration"`` after the iteration's sweeps:
    with ``STATS_OWNED`` into the cells of ``stats`` it owns (``own_stats``, zeroed first;
    the groups write disjoint cells, so they may run at once), else into ``stats_row``
    (zeroed first), which the caller adds to the others in group order.

    Returns ``(status, record, cell)``: ``BAD_STAT_PARTITION`` with a record that counts in
    a cell another group owns (the check the per-record update made), ``BAD_ENTRIES`` for a
    broken entries function, ``BAD_STATS`` for a cell that is not finite."""
    stats_owner = inputs.stats_owner
    g, members, own_stats, stats_row = group.g, group.members, group.own_stats, group.stats_row
    current = np.empty(RECORD_SIZE)
    index, value = np.empty(max(MODEL_NNZ, 1), np.int64), np.empty(max(MODEL_NNZ, 1))
    buf = np.empty(MODEL_STAT_SIZE)
    if STATS_OWNED:
        for a in range(own_stats.shape[0]):
            stats[own_stats[a]] = 0.0
    else:
        for j in range(stats_row.shape[0]):
            stats_row[j] = 0.0
    for a in range(members.shape[0]):
        i = members[a]
        for j in range(RECORD_SIZE):  # no view x[i]: see record.dense_pass
            current[j] = x[i, j]
        if MODEL_NNZ > 0:
            count = MODEL_ENTRIES(current, index, value)
            if count < 0 or count > MODEL_NNZ:
                return BAD_ENTRIES, i, -1
            for b in range(count):
                j = index[b]
                if j < 0 or j >= MODEL_STAT_SIZE:
                    return BAD_ENTRIES, i, -1
                if STATS_OWNED:
                    if value[b] != 0.0 and stats_owner[j] != g:
                        return BAD_STAT_PARTITION, i, j
                    stats[j] += value[b]
                else:
                    stats_row[j] += value[b]
        else:
            MODEL_STAT(current, buf)
            for j in range(MODEL_STAT_SIZE):
                stats_row[j] += buf[j]
    finite = True
    if STATS_OWNED:
        for a in range(own_stats.shape[0]):
            finite &= math.isfinite(stats[own_stats[a]])
    else:
        for j in range(stats_row.shape[0]):
            finite &= math.isfinite(stats_row[j])
    return (OK if finite else BAD_STATS), -1, -1


#: The templates of a group's pass (bound with the model's functions, as the chain's are).
GROUP_TEMPLATES = (group_totals, _owned_stats, group_pass, take_proposal, move_model_stat,
                   sweep_table, group_stats)


@dataclass(frozen=True)
class GroupFunctions:
    """One model's compiled group pieces (:func:`bind_groups`): ``totals`` is
    :func:`group_totals`, ``sweep`` :func:`group_pass`, ``table`` the sweep's table of
    theta (:func:`dawrap.samplers.record.sweep_table`), ``stats`` :func:`group_stats`
    (used when ``lazy_stats``)."""
    totals: object
    sweep: object
    table: object
    stats: object


def bind_groups(fns, options, stats_owned: bool) -> GroupFunctions:
    """Compile the group pass for one model and mechanism (``options`` the
    :class:`~dawrap.samplers.record.SweepOptions` of
    :func:`~dawrap.samplers.record.bind_chain`, whose ``lazy_stats`` recounts the model's
    statistic once per iteration, :func:`group_stats`; ``stats_owned`` when the partition
    says who owns the model statistic's cells). Needs the entries path (``fns.nnz > 0``)."""
    from ..compile import templates as _templates
    from ..model.protocols import no_prepared_proposal

    (record_size, size, stat_size, general, shared, random_scan, batched, prepared,
     lazy_stats) = options

    if fns.nnz == 0:
        raise ValueError("threads: the within-chain parallel sweep needs the sparse path (a "
                         "mechanism with a separable density whose statistic is declared "
                         "with dw.declare_sparse): records must touch a few cells each")
    names = dict(
        DRAW_RECORD=fns.draw_record, PROPOSE_RECORD=fns.propose_record,
        DRAW_PREPARED=fns.draw_prepared, PROPOSE_PREPARED=fns.propose_prepared,
        DRAW_RECORDS=fns.draw_records, ENTRIES=fns.entries, MODEL_ENTRIES=fns.model_entries,
        MODEL_STAT=fns.model_stat, COORDINATE_LOG_DENSITY=fns.coordinate_log_density,
        PREPARE=fns.prepare, RECORD_SIZE=record_size, MECH_STAT_SIZE=size,
        MODEL_STAT_SIZE=stat_size,
        NNZ=fns.nnz, MODEL_NNZ=fns.model_nnz, USER_PROPOSAL=general, SAME_STATISTIC=shared,
        RANDOM_SCAN=random_scan, BATCHED=batched and not general,
        PREPARED_PROPOSALS=prepared and (not general or fns.propose_prepared
                                         is not no_prepared_proposal),
        STATS_OWNED=stats_owned, LAZY_STATS=lazy_stats)
    bound = _templates.bind(GROUP_TEMPLATES, names)
    return GroupFunctions(bound.group_totals, bound.group_pass, bound.sweep_table,
                          bound.group_stats)


def partition_error(record: int, cell: int, group: int, owner: int, statistic: str) -> str:
    """The message for a record of ``group`` that touched ``cell`` of ``owner``."""
    return (f"threads: record {record} (group {group} of the partition) touched cell {cell} "
            f"of the {statistic}, which the partition gives to group {owner}: records of "
            f"different groups must touch disjoint cells (or cells marked -1, shared); "
            f"declare a partition whose groups own every cell their records can move to")


def first_piece_scale(inverse_scale: np.ndarray, groups: int, latent: bool,
                      integer_statistic: bool) -> np.ndarray:
    r"""The groups' inverse sd of the shared cells' pieces before the first sweep, with
    :func:`warn_pinned_pieces`' check, from each shared cell's ``inverse_scale`` (the noise
    family's :math:`1/\sigma_j` or :math:`1/b_j`): :math:`\sqrt G/\sigma` for Gaussian
    pieces, constant for the run; zeros for latent variances (``latent``: Laplace and
    geometric noise), whose scales :func:`draw_scales` draws every sweep. For those the
    check uses the pieces' root-mean-square sd under the latent variance's prior (mean
    :math:`2b^2`), :math:`\sqrt 2\, b/\sqrt G`.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.samplers.parallel import first_piece_scale
    >>> first_piece_scale(np.array([0.5]), 4, False, False).tolist()   # sigma 2, 4 groups
    [1.0]
    """
    K = inverse_scale.shape[0]
    warn_pinned_pieces(_piece_sd(inverse_scale, groups, latent), groups, integer_statistic)
    if latent:
        return np.zeros(K)
    return math.sqrt(groups) * inverse_scale if K else np.zeros(0)


def _piece_sd(inverse_scale: np.ndarray, groups: int, latent: bool) -> np.ndarray:
    r"""The shared cells' pieces' sd: :math:`\sigma/\sqrt G` (``inverse_scale`` holding
    :math:`1/\sigma`), or with latent variances (``latent``, ``inverse_scale`` holding
    :math:`1/b`) their root-mean-square sd under the latent variance's prior,
    :math:`\sqrt 2\, b/\sqrt G`."""
    return (math.sqrt(2.0) if latent else 1.0) / (math.sqrt(groups) * inverse_scale)


def pieces_pinned(inverse_scale: np.ndarray, groups: int, latent: bool,
                  integer_statistic: bool) -> bool:
    r"""Whether some shared cell's pieces are more precise than one record's contribution
    (the condition :func:`warn_pinned_pieces` warns about, with the pieces' sd of
    :func:`first_piece_scale`): a group's records can then hardly change their part of it.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.samplers.parallel import pieces_pinned
    >>> pieces_pinned(np.array([1.0]), 4, False, True)   # sigma 1, 4 groups
    True
    """
    if not integer_statistic or inverse_scale.shape[0] == 0:
        return False
    return bool(_piece_sd(inverse_scale, groups, latent).min() < 1.0)


def warn_pinned_pieces(piece_sd: np.ndarray, groups: int, integer_statistic: bool) -> None:
    r"""Warn when the shared cells' pieces pin each group's part of them.

    A group sees a shared cell through noise of sd :math:`\sigma/\sqrt G` around its piece.
    When that is below one record's contribution to the cell (at least 1 for an integer
    statistic), a record move that changes the group's part of the cell has a log acceptance
    of about :math:`-G/2\sigma^2` (against :math:`-1/2\sigma^2` in the serial sweep): a
    group's records then hardly move, and the pieces, redrawn once a sweep around the
    current totals, do not free them. The chain stays exact but mixes far worse than the
    serial sweep (``benchmarks/results/parallel_sweep.md``). For a continuous statistic a
    record's contribution has no known unit, and nothing is checked.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> from dawrap.samplers.parallel import warn_pinned_pieces
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_pinned_pieces(np.array([0.25]), 8, True)
    >>> "mixes far worse" in str(caught[0].message)
    True
    """
    if not integer_statistic or piece_sd.size == 0 or piece_sd.min() >= 1.0:
        return
    sd = float(piece_sd.min())
    pinned = int(np.sum(piece_sd < 1.0))
    most = int(math.floor(sd * sd * groups))  # G <= sigma^2 keeps the pieces' sd >= 1
    advice = (f"Use a partition of at most {most} groups sharing these cells, or sample "
              f"without threads" if most >= 2 else
              "No partition into two or more groups that share these cells avoids it: "
              "sample without threads, or with a partition whose groups own them")
    warnings.warn(
        f"threads: {pinned} of the partition's {piece_sd.size} shared cells are split into "
        f"{groups} pieces of noise sd {sd:.3g} (sigma / sqrt({groups})), less than one record's "
        f"contribution to a cell (1): a group's records can then hardly change what they add "
        f"to those cells, and the chain, still exact, mixes far worse than the serial sweep "
        f"(the census benchmark with the nation released at rho = 2, 8 state groups and "
        f"no pair moves: "
        f"R-hat up to 1.6 where the serial sweep gives 1.15). {advice}",
        UserWarning, stacklevel=4)


def info_of(accepted: int, n: int, min_log_alpha: float, status: int, move_accept: float
            ) -> StepInfo:
    """The sweep's :class:`dawrap.samplers.record.StepInfo` from the groups' counts."""
    return StepInfo(accepted / n, math.exp(min_log_alpha), status, move_accept)
