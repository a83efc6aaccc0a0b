r"""The decomposable model's collapsed move: each record redrawn with theta integrated out,
then theta drawn afresh (:mod:`dawrap.models.marginals`, ``collapsed_moves``).

Why. The record sweep proposes a record from :math:`p_\theta`, and the theta step draws
theta from the hyper-Dirichlet given the records' clique counts. With a small prior (``alpha``
of order one spread over a clique's cells) a cell that holds no record is drawn at a
probability of order :math:`\exp(-1/\alpha_C)` (about :math:`e^{-40}` for a 40-cell clique
at ``alpha = 1``), so the sweep never proposes a record there and the cell stays empty,
whatever the release says: chains disagree on whether a small cell holds a few records or
none (``benchmarks/results/marginals_start.md``: on Adult at ``alpha = 1`` a worst R-hat
of 1.8 after 800 iterations, 1.09 after 4000). With theta
integrated out, a record given the others follows the hyper-Dirichlet's predictive
(Dawid & Lauritzen 1993), along the junction tree,

.. math:: P(x_i = x \mid x_{-i}) = \frac{a_{C_1}(x_{C_1}) + n_{C_1,-i}(x_{C_1})}{a + n - 1}
          \prod_{C \ne C_1} \frac{a_C(x_C) + n_{C,-i}(x_C)}{a_S(x_S) + n_{S,-i}(x_S)},

(:math:`a_C(x_C) = a\, q_C(x_C)`, :math:`a / |\mathcal X_C|` under BDeu, :math:`a_S` its sum
over the residual, the counts without record :math:`i`), whose mass on an empty cell,
:math:`a_C / (a_S + n_S)`, does not shrink with a draw of theta.

The move. Per iteration, ``rate * n`` steps, one for each record from a random place on
(wrapping round). A step proposes record :math:`i` from the predictive by ancestral
sampling: the root clique's attributes with probability :math:`a / (a + n - 1)` from
:math:`q_{C_1}` (uniformly over its cells under BDeu), else copied from another record drawn
uniformly (O(1)); each further clique's residual attributes given its separator from :math:`a_C + n_{C,-i}` over the
residual's cells (O(residual cells)). The proposal is the record's conditional prior given
the others, so Metropolis-Hastings accepts with the release's density ratio alone, over the
cells the record touches (O(released tables)). After the steps, theta is drawn from its
conditional given the records (the model's theta step, O(clique tables)).

Why it is exact: each step is a Metropolis-Hastings step of one record on
:math:`p(x \mid s_{dp})`, the records' law with theta integrated out (the proposal is the
prior conditional, so the prior's terms cancel from the ratio); the steps use neither
theta nor anything but the current records. The final draw is :math:`\theta \mid x`, its
exact conditional. Together they are a partially collapsed Gibbs step (van Dyk & Park 2008)
that leaves the posterior invariant, whatever theta was before.

Cost: per step O(sum over the non-root cliques of their residual cells + released tables);
``rate`` passes over the records per iteration.
"""
from __future__ import annotations

import math

import numpy as np

from dawrap.extend import Move, MoveBuilder
from dawrap.extend import density_change_of, merge_entries
from dawrap.extend import RecordState
from dawrap.extend import BAD_ENTRIES, BAD_RATIO, OK

from . import graphical as _graphical
from .._shared import closure_jit

__all__ = ["RATE", "AUTO_MAX_RESIDUAL", "collapsed_move"]

#: Steps per record and iteration of ``collapsed_moves="auto"``: each record twice. On Adult
#: (``benchmarks/results/marginals_start.md``, 2 chains x 4000 iterations) 0, 1 and 2 steps
#: gave the worst parameter 255, 758 and 1459 bulk ESS at alpha = 100 (2.7, 5.0 and 6.8 per
#: second) and 19, 18 and 49 at alpha = 1 (0.14, 0.11 and 0.23 per second).
RATE = 2.0
#: ``"auto"`` runs no move when the cliques other than the root have residuals of more cells
#: than this in all (a step scans each of them).
AUTO_MAX_RESIDUAL = 4096


#: How messages name the move.
NAME = "marginals collapsed move (marginals.model(..., collapsed_moves=0) turns it off)"


def collapsed_move(structure, alpha: float, rate: float = RATE,
                   centre: _graphical.Centre | None = None) -> MoveBuilder | None:
    """The collapsed move (module docstring) of the decomposable model of ``structure`` with
    equivalent sample size ``alpha`` and prior network ``centre`` (None: BDeu): ``rate``
    steps per record and iteration (0: None, no move). The mechanism must have a sparse
    statistic with a separable density (the marginal releases do); with another the builder
    gives no move."""
    if rate == 0:
        return None

    def build(mechanism):
        if mechanism.sparse is None or mechanism.coordinate_log_density is None:
            return None
        return Move(_compile(structure, float(alpha), float(rate), mechanism.sparse.entries,
                             int(mechanism.sparse.nnz), mechanism.coordinate_log_density,
                             int(mechanism.size), centre), NAME)

    return MoveBuilder(build, NAME)


def _compile(structure, alpha, rate, entries, nnz, log_density, size, centre=None):
    lay = _graphical.layout(structure)
    k, d = len(structure.cliques), len(structure.levels)
    attr, length, res_size, offset = lay.attr, lay.length, lay.res_size, lay.offset
    concentration = lay.concentration(alpha, centre)
    fns = _graphical.functions(structure, alpha, centre)
    draw_theta, cell_of, separator_index, write_residual = (
        fns.draw_theta, fns.clique_cell, fns.separator_index, fns.write_residual)
    density_change = density_change_of(log_density)
    # The root urn's prior part: its weight (the root's total concentration) and, under a
    # centre, the cumulative concentrations the "new table" draw searches (q_root, not
    # uniform). BDeu keeps its own arithmetic (alpha, a uniform cell): the same draws as
    # before centres existed.
    centred = centre is not None
    root_cumulative = np.cumsum(concentration[:offset[1]])
    prior_mass = float(root_cumulative[-1]) if centred else float(alpha)
    jit = closure_jit(attr, length, res_size, offset, concentration, root_cumulative)

    @jit
    def move(rng, state, s_dp, params, tuning):
        theta, x, stats, total = state.theta, state.x, state.stats, state.total
        n = x.shape[0]
        own, new_cell = np.empty(k, np.int64), np.empty(k, np.int64)
        proposal = np.empty(d)
        index, value = np.empty(nnz, np.int64), np.empty(nnz)
        touched, delta = np.empty(2 * nnz, np.int64), np.empty(2 * nnz)
        log_g = state.log_g
        proposed, accepted = 0, 0
        first = rng.integers(0, n)
        for step in range(int(rate * n)):
            i = (first + step) % n
            for c in range(k):
                own[c] = cell_of(x[i], c)
            # the root clique from its urn: one uniform picks the prior's part (uniform
            # over the clique's cells) or, past its weight, which other record to copy
            v = rng.random() * (prior_mass + n - 1)
            if v < prior_mass:
                if centred:  # a cell of the root with probability q_root: v is uniform here
                    pick = res_size[0] - 1
                    for r in range(res_size[0] - 1):
                        if v < root_cumulative[r]:
                            pick = r
                            break
                    write_residual(0, pick, proposal)
                else:
                    write_residual(0, rng.integers(0, res_size[0]), proposal)
            else:
                other = min(int(v - prior_mass), n - 2)
                if other >= i:
                    other += 1
                for p in range(length[0]):
                    proposal[attr[0, p]] = x[other, attr[0, p]]
            # each further clique's residual given its separator (already drawn: parents
            # come first), from a_C + n_{C,-i} over the residual's cells
            for c in range(1, k):
                base = offset[c] + separator_index(c, proposal)
                mine = own[c] - base   # record i's residual in this row, if it is in it
                weight = 0.0
                for r in range(res_size[c]):
                    weight += concentration[base + r] + stats[base + r] \
                        - (1.0 if r == mine else 0.0)
                u, pick = rng.random() * weight, res_size[c] - 1
                for r in range(res_size[c] - 1):
                    u -= concentration[base + r] + stats[base + r] - (1.0 if r == mine else 0.0)
                    if u < 0.0:
                        pick = r
                        break
                write_residual(c, pick, proposal)
            same = True
            for c in range(k):
                new_cell[c] = cell_of(proposal, c)
                same = same and new_cell[c] == own[c]
            if same:  # the same record: nothing to weigh
                continue
            proposed += 1
            used = merge_entries(entries(x[i], s_dp, index, value), index, value, -1.0, nnz,
                                 size, touched, delta, 0)
            if used >= 0:
                used = merge_entries(entries(proposal, s_dp, index, value), index, value,
                                     1.0, nnz, size, touched, delta, used)
            if used < 0:
                return state, math.nan, BAD_ENTRIES
            change = density_change(s_dp, total, touched, delta, used, params)
            if change != change:
                return state, math.nan, BAD_RATIO
            if change >= 0.0 or rng.random() < math.exp(change):
                for a in range(used):
                    total[touched[a]] += delta[a]
                for c in range(k):
                    stats[own[c]] -= 1.0
                    stats[new_cell[c]] += 1.0
                for a in range(d):
                    x[i, a] = proposal[a]
                log_g += change
                accepted += 1
        # theta from its conditional given the moved records
        fresh = draw_theta(rng, theta, x, stats)
        for j in range(fresh.shape[0]):
            theta[j] = fresh[j]
        rate_seen = accepted / proposed if proposed else math.nan
        return RecordState(theta, x, stats, total, log_g, state.kernel_state,
                           state.move_state, state.clock, state.cells), rate_seen, OK

    return move
