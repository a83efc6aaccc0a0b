r"""The census model's collapsed move: each person's cell redrawn with their unit's
probabilities integrated out, then those probabilities drawn afresh
(:mod:`dawrap.models.census`, ``collapsed_moves``).

Why. The record sweep draws a person's cell from their unit's probabilities :math:`p_r`
(the finest prior level's row), and the theta step draws :math:`p_r` from
:math:`\mathrm{Dir}(b_r + n_r)` given the unit's counts :math:`n_r`, with
:math:`b_r = \kappa\, p_{a(r)}` (or :math:`\alpha` for a top-level unit). A rare cell of a unit
whose release does not pin it sticks: with none of the unit's persons in it, its
probability is drawn from a Beta with a first parameter :math:`b_{rc}` well below one, near
zero (median about :math:`(\Gamma(1 + b_{rc})/2)^{1/b_{rc}} / n_r`, 1.5e-7 for
:math:`b_{rc} = 0.1` in a unit of 4 000), so the sweep proposes nobody there, so it stays
empty (``docs/census.md``: a worst R-hat of 1.33 after 600 iterations at 10^6 persons).
With :math:`p_r` integrated out, a person's cell given the others' follows the Pólya urn,

.. math:: P(c_i = c \mid c_{-i}, b_r) = \frac{b_{rc} + n_{rc,-i}}{W_r + n_r - 1},
          \qquad W_r = \sum_c b_{rc},

whose mass on an empty cell, :math:`b_{rc}/(W_r + n_r - 1)`, does not shrink by a draw of
:math:`p_r`: in the example the cell is proposed about 0.1 times per pass over the unit
instead of 6e-4 times.

The move. Per iteration, ``rate * n`` steps, one for each person from a random place in
storage order on (wrapping round). A step proposes person :math:`i`'s cell from the urn,
in O(1): with probability :math:`W_r / (W_r + n_r - 1)` from the base :math:`b_r / W_r`
(a categorical table per parent row, built once per move), else the cell of another person
of the unit drawn uniformly. The proposal is the person's conditional prior given the
others, so Metropolis-Hastings accepts with the release's density ratio alone,
:math:`g(s_{dp} \mid T')/g(s_{dp} \mid T)`, over the cells the person touches (O(queries)).
After the steps, every row :math:`p_r \sim \mathrm{Dir}(b_r + n_r)`, O(units x cells).

Why it is exact: the steps leave :math:`p(x \mid \theta_{-p}, s_{dp})` invariant, the
records' law with the finest prior level's probabilities :math:`p` integrated out (each
step is a Metropolis-Hastings step of one person's cell on that law, proposing from its
prior conditional). The final draw is :math:`p \mid x, \theta_{-p}`, its exact conditional
(the rows are independent given the parents' probabilities and :math:`\kappa` or
:math:`\alpha`, as in the theta step's step 3, with the same floor of 1e-300). Together
they are a partially collapsed Gibbs step of :math:`(x, p)` given the rest (Metropolis-Hastings
steps on :math:`x`'s law with :math:`p` integrated out, then :math:`p` from its
conditional), whatever :math:`p` was before: it leaves the posterior invariant. The units
of the persons do not change, so neither do the shares of a latent finest unit.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from dawrap.extend import BAD_PARTITION, OK, GroupMove, Move, MoveBuilder
from dawrap.random import categorical, fill_categorical_table, guide_size

from .draws import dirichlet_into
from .moves import SparseRelease, proposals, serial_move, sparse_release
from .._shared import closure_jit

__all__ = ["RATE", "FLOOR", "RowBase", "collapsed_move"]

#: Steps per person and iteration of ``collapsed_moves="auto"`` (with two or more prior
#: levels): each person twice. At 10^6 persons (``benchmarks/results/census_scale.md``) 0,
#: 1, 2 and 4 steps gave the worst probability 0.055, 0.063, 0.099 and 0.111 bulk ESS per
#: second (seconds per iteration 0.20, 0.31, 0.43, 0.64): 2 has most of the gain.
RATE = 2.0
#: The smallest parent probability used in a Dirichlet parameter (the theta step's floor).
FLOOR = 1e-300


#: How messages name the move.
NAME = "census collapsed move (census.model(..., collapsed_moves=0) turns it off)"


class RowBase(NamedTuple):
    """Where the collapsed move finds the rows of ``p`` it draws and their Dirichlet base in
    theta.

    Attributes
    ----------
    prior_unit : ndarray of int
        The row of ``p`` (at the start of theta) each finest unit draws its cell from.
    rows, cells : int
        The rows of ``p`` and their cells.
    parent : ndarray of int or None
        Each row's parent row among the probabilities at ``parent_off`` in theta, whose base
        is ``kappa p_parent`` with ``log kappa`` at ``theta[kappa_at]``; None: a top level,
        base ``alpha``, from ``log_alpha`` at ``theta[alpha_at:]`` or ``fixed_alpha``.
    parent_off, kappa_at, alpha_at : int
    fixed_alpha : ndarray or None
    """
    prior_unit: np.ndarray
    rows: int
    cells: int
    parent: np.ndarray | None
    parent_off: int
    kappa_at: int
    alpha_at: int
    fixed_alpha: np.ndarray | None


def collapsed_move(base: RowBase, rate: float = RATE) -> MoveBuilder | None:
    """The collapsed move (module docstring) of a census model whose rows of ``p`` and their
    base lie in theta as ``base`` says. ``rate`` steps per person and iteration (0: None, no
    move).
    The compiled move's ``group`` is its group form (:mod:`dawrap.samplers.group_moves`):
    each group moves its persons and draws its rows of p. The mechanism must have a sparse
    statistic with a separable density (the census releases do); with another the builder
    gives no move."""
    if rate == 0:
        return None
    rows = int(base.rows)
    base = base._replace(
        prior_unit=np.asarray(base.prior_unit, np.int64), rows=rows, cells=int(base.cells),
        parent_off=int(base.parent_off), kappa_at=int(base.kappa_at),
        alpha_at=int(base.alpha_at))

    def build(mechanism):
        release = sparse_release(mechanism)
        if release is None:
            return None
        jit = closure_jit(*_base_arrays(base))
        run = _group_run(jit, base, float(rate), release)
        prepare = _base_table(jit, base)
        assign, theta_of = _row_owners(base)
        return Move(serial_move(jit, prepare, run, rows), NAME,
                    GroupMove(prepare, run, assign, theta_of))

    return MoveBuilder(build, NAME)


def _base_arrays(base: RowBase) -> tuple:
    """``(prior_unit, parent, fixed)``: each row's parent (zeros at the top) and the fixed
    alpha (ones when learned), as the compiled move reads them."""
    parent = np.zeros(base.rows, np.int64) if base.parent is None else \
        np.asarray(base.parent, np.int64)
    fixed = np.ones(base.cells) if base.fixed_alpha is None else \
        np.asarray(base.fixed_alpha, float)
    return base.prior_unit, parent, fixed


def _base_table(jit, base: RowBase):
    """The compiled ``prepare(theta)``: the base of each parent row (``kappa p_parent``, or
    alpha at the top), its total and its categorical table, O(parents x cells), once per
    move."""
    _, parent, fixed = _base_arrays(base)
    top, alpha_fixed = base.parent is None, base.fixed_alpha is not None
    parents = 1 if top else int(parent.max()) + 1
    cells, parent_off, kappa_at, alpha_at = base.cells, base.parent_off, base.kappa_at, \
        base.alpha_at
    width = guide_size(cells)

    @jit
    def prepare(theta):
        base = np.empty((parents, cells))
        weight = np.empty(parents)
        cumulative = np.empty((parents, cells))
        guide = np.empty((parents, width), np.int32)
        kappa = 1.0 if top else math.exp(theta[kappa_at])
        for w in range(parents):
            for c in range(cells):
                if top:
                    base[w, c] = fixed[c] if alpha_fixed else math.exp(theta[alpha_at + c])
                else:
                    base[w, c] = kappa * max(theta[parent_off + w * cells + c], FLOOR)
            weight[w] = base[w].sum()
            fill_categorical_table(base[w] / weight[w], cumulative[w], guide[w])
        return base, weight, cumulative, guide

    return prepare


def _group_run(jit, base: RowBase, rate: float, release: SparseRelease):
    """The group form's compiled ``run``: group ``group.g``'s steps on its persons and its
    rows of p (``row_group[r] == g``); the whole database is group 0 of one, owning every
    cell (:func:`~dawrap.models.census.moves.serial_move`)."""
    prior_unit, parent, _ = _base_arrays(base)
    rows, cells = base.rows, base.cells
    scratch, merge, weigh = proposals(release, 1)

    @jit
    def run(rng, theta, table, x, total, row_group, inputs, group):
        s_dp, g, members = inputs.s_dp, group.g, group.members
        base, weight, cumulative, guide = table
        n = members.shape[0]
        # the persons by prior row (a counting sort, O(n + rows)): a row's persons hold a
        # contiguous run of ranks, each rank's cell in one compact array
        start = np.zeros(rows + 1, np.int64)
        for a in range(n):
            r = prior_unit[int(x[members[a], 0])]
            if row_group[r] != g:  # a row of another group's (assign checked the start)
                return 0, 0, BAD_PARTITION, members[a], -1, 0.0
            start[r + 1] += 1
        for r in range(rows):
            start[r + 1] += start[r]
        fill = start[:-1].copy()
        rank_of, cell_at = np.empty(n, np.int64), np.empty(n, np.int32)
        for a in range(n):
            r = prior_unit[int(x[members[a], 0])]
            rank_of[a], cell_at[fill[r]] = fill[r], int(x[members[a], 1])
            fill[r] += 1
        work = scratch()
        log_g_change = 0.0
        proposed, accepted = 0, 0
        first = rng.integers(0, n)
        for step in range(int(rate * n)):
            a = (first + step) % n
            i = members[a]
            u, ci = int(x[i, 0]), int(x[i, 1])
            r = prior_unit[u]
            w = parent[r]
            others = start[r + 1] - start[r] - 1
            # one uniform picks the urn's part and, past the base's weight, which other
            # person: v - W is uniform on [0, others) given v >= W
            v = rng.random() * (weight[w] + others)
            if v < weight[w]:
                cj = categorical(rng, cumulative[w], guide[w])
            else:  # another person of the row, uniformly
                k = start[r] + min(int(v - weight[w]), others - 1)
                if k >= rank_of[a]:
                    k += 1
                cj = cell_at[k]
            if cj == ci:  # the same database: nothing to weigh
                continue
            proposed += 1
            used = merge(work, s_dp, u, ci, cj, 0)
            # the proposal is the person's prior conditional: the release's ratio alone
            status, foreign, change, accept = weigh(rng, 0.0, used, total, work, inputs,
                                                    group)
            if status != OK:
                return accepted, proposed, status, i, foreign, log_g_change
            if accept:
                x[i, 1] = cj
                cell_at[rank_of[a]] = cj
                log_g_change += change
                accepted += 1
        # every row of p the group draws, from its conditional given the moved records
        concentration = np.empty(cells)
        for r in range(rows):
            if row_group[r] != g:
                continue
            w = parent[r]
            for c in range(cells):
                concentration[c] = base[w, c]
            for k in range(start[r], start[r + 1]):
                concentration[cell_at[k]] += 1.0
            dirichlet_into(rng, concentration, theta[r * cells:(r + 1) * cells])
        return accepted, proposed, OK, -1, -1, log_g_change

    return run


def _row_owners(base: RowBase):
    """The group form's ``assign`` and ``theta_of``: each row of p drawn by the group that
    owns its counts."""
    prior_unit, rows, cells = base.prior_unit, base.rows, base.cells

    def assign(x, partition):
        """Each row of p drawn by the group that owns the row's counts in the model's
        statistic (``partition.stats``: the census model's partition gives each row to the
        group of its units, whose persons alone can count there, a latent finest unit's
        persons moving only within their public unit); None without that map or when a
        person's row is another group's."""
        stats = partition.stats
        if stats is None or stats.shape[0] < rows * cells:
            return None
        row_group = np.ascontiguousarray(stats[:rows * cells:cells])
        if not np.array_equal(row_group[prior_unit[np.asarray(x[:, 0], np.int64)]],
                              partition.records):
            return None
        return row_group

    def theta_of(row_group, g):
        own = np.flatnonzero(row_group == g)
        return (own[:, None] * cells + np.arange(cells)).ravel()

    return assign, theta_of
