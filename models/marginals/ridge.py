r"""A move of the decomposable model's records along the ridge of an unreleased 3-way
interaction (see :mod:`dawrap.models.marginals`, ``ridge_moves``).

The ridge. A clique :math:`Q = \{A, B, C\}` whose three 2-way tables are released, but not
the 3-way one, has a 3-way interaction the release does not identify: the counts
:math:`n_Q` can move along the *basic moves* of the no-3-way-interaction model,

.. math:: n_Q \;\to\; n_Q + t\,d, \qquad d = +e_{ab'c} + e_{a'bc} + e_{a'b'c'} + e_{abc'}
          - e_{abc} - e_{a'b'c} - e_{a'bc'} - e_{ab'c'},

without changing any released table (Diaconis & Sturmfels 1998), and the likelihood is flat
along them. The record sampler moves along that line by about the square root of a cell's
count per sweep (theta follows the records, the records follow theta), so it needs about as
many sweeps as the cells hold records to cross it.

The move. For an attribute :math:`B` that lies in the one clique :math:`Q` only, and no
released table containing all of :math:`Q`, changing :math:`B` in a record changes only
:math:`n_Q` and released tables inside :math:`Q`. With theta integrated out, the records'
posterior is :math:`p(x \mid s_{dp}) \propto g(s_{dp} \mid x) \prod_C
\prod_{x_C} \Gamma(\alpha_C + n_C(x_C)) / \prod_S \dots` (the separators' terms do not
change: records keep their other attributes). A move picks a clique, :math:`a \ne a'`,
:math:`b \ne b'`, :math:`c \ne c'` uniformly, and draws :math:`t` on the whole line
(every :math:`t` keeping the counts non-negative) from

.. math:: w(t) \propto \prod_{\text{the 8 cells } x} \frac{\Gamma(\alpha_Q(x) + n_x(t))}{n_x(t)!},

(:math:`\alpha_Q(x) = a\, q_Q(x)`, the prior's concentration of the cell: :math:`a / |\mathcal
X_Q|` under BDeu, the centre's under a centred prior),

the exact conditional of the line's position (the factorials count which records hold
:math:`b` or :math:`b'` within each configuration of :math:`A, C` and the other attributes:
they are exchangeable), then changes :math:`B` in :math:`|t|` records of each of the four
source cells, chosen uniformly (selection sampling, one pass over the records). A Gibbs step
on the records' collapsed posterior: no rejection. After the moves theta is drawn again
from its conditional given the moved records (a partially collapsed Gibbs sampler: the move
leaves :math:`p(x \mid s_{dp})` invariant and theta is then drawn from :math:`p(\theta \mid
x)`, so the pair is again a draw of the joint posterior).

Cost: ``moves`` passes over the records per iteration plus O(line length) each. The release
must be the model's (:func:`check_release`): with a table containing all of :math:`Q` the
line would not be flat.
"""
from __future__ import annotations

import math

import numpy as np

from dawrap.extend import OK

from . import graphical as _graphical
from .._shared import closure_jit

__all__ = ["ridges", "make_move", "check_release", "MOVES"]

#: Line draws per iteration.
MOVES = 8


def ridges(structure, tables) -> np.ndarray:
    """The moves' ``(clique, position of A, of B, of C)`` rows: cliques of 3 attributes, B
    in no other clique, every table of ``tables`` holding B inside the clique, none holding
    all three."""
    rows = []
    for c, q in enumerate(structure.cliques):
        if len(q) != 3 or any(set(q) <= set(t) for t in tables):
            continue
        for pb, b in enumerate(q):
            if sum(b in r for r in structure.cliques) != 1 or \
                    any(b in t and not set(t) <= set(q) for t in tables):
                continue
            pa, pc = (p for p in range(3) if p != pb)
            rows.append((c, pa, pb, pc))
    return np.array(rows, dtype=np.int64).reshape(-1, 4)


def check_release(model, mechanism) -> None:
    """A ValueError unless ``mechanism`` releases exactly the model's tables (the moves keep
    those fixed: with another release they would not leave the posterior invariant)."""
    mine = sorted(tuple(sorted(t)) for t in model.released)
    theirs = sorted(tuple(sorted(t)) for t in getattr(mechanism, "tables", ()))
    if getattr(mechanism, "levels", None) is None or \
            tuple(mechanism.levels) != tuple(model.structure.levels) or mine != theirs:
        raise ValueError(
            "ridge_moves=True needs the release of the model's own tables (a MarginalRelease "
            "of marginals.mechanism over the same attributes and tables): the moves keep "
            "those tables fixed. Build the model with marginals=<the released tables>, or "
            "ridge_moves=False")


def make_move(structure, alpha: float, tables, moves: int = MOVES,
              centre: _graphical.Centre | None = None):
    """The compiled move ``(rng, state, s_dp, params, tuning) -> (state, moved fraction,
    status)`` (module docstring) for equivalent sample size ``alpha`` and prior network
    ``centre`` (None: BDeu), or None when the structure has no ridge."""
    rows = ridges(structure, tables)
    if rows.shape[0] == 0:
        return None
    lay = _graphical.layout(structure)
    draw_theta = _graphical.functions(structure, alpha, centre).draw_theta
    levels, attr, stride, offset = lay.levels, lay.attr, lay.stride, lay.offset
    concentration = lay.concentration(alpha, centre)   # per cell: each of the 8 its own
    count = rows.shape[0]
    jit = closure_jit(rows, levels, attr, stride, offset, concentration)

    @jit
    def other(rng, level, k):
        # a level of k other than ``level``, uniformly
        v = rng.integers(0, k - 1)
        return v + 1 if v >= level else v

    @jit
    def cell_of(x_i, c):
        j = offset[c]
        for p in range(3):
            j += int(x_i[attr[c, p]]) * stride[c, p]
        return j

    @jit
    def move(rng, state, s_dp, params, tuning):
        x, stats = state.x, state.stats
        n = x.shape[0]
        moved = 0
        cells = np.empty(8, dtype=np.int64)
        sign = np.array([-1, -1, -1, -1, 1, 1, 1, 1])
        counts = np.empty(8, dtype=np.int64)
        need = np.empty(4, dtype=np.int64)
        for _ in range(moves):
            r = rng.integers(0, count)
            c, pa, pb, pc = rows[r, 0], rows[r, 1], rows[r, 2], rows[r, 3]
            la, lb, lc = levels[attr[c, pa]], levels[attr[c, pb]], levels[attr[c, pc]]
            a, b, cc = rng.integers(0, la), rng.integers(0, lb), rng.integers(0, lc)
            a2, b2, c2 = other(rng, a, la), other(rng, b, lb), other(rng, cc, lc)
            # the four cells losing records at t > 0, then the four gaining them
            for k in range(8):
                va = (a, a2, a2, a, a, a2, a2, a)[k]
                vb = (b, b2, b, b2, b2, b, b2, b)[k]
                vc = (cc, cc, c2, c2, cc, cc, c2, c2)[k]
                cells[k] = offset[c] + va * stride[c, pa] + vb * stride[c, pb] \
                    + vc * stride[c, pc]
                counts[k] = int(stats[cells[k]])
            low, high = counts[4], counts[0]
            for k in range(4):
                high = min(high, counts[k])
                low = min(low, counts[4 + k])
            if low + high == 0:
                continue
            log_w = np.empty(low + high + 1)
            top = -math.inf
            for s in range(low + high + 1):
                t = s - low
                value = 0.0
                for k in range(8):
                    m = counts[k] + sign[k] * t
                    value += math.lgamma(concentration[cells[k]] + m) - math.lgamma(m + 1.0)
                log_w[s] = value
                top = max(top, value)
            total = 0.0
            for s in range(low + high + 1):
                log_w[s] = math.exp(log_w[s] - top)
                total += log_w[s]
            u, acc, t = rng.random() * total, 0.0, high
            for s in range(low + high + 1):
                acc += log_w[s]
                if u < acc:
                    t = s - low
                    break
            if t == 0:
                continue
            moved += 1
            # t > 0: records leave cells[0..3] for cells[4..7]; t < 0 the other way
            first = 0 if t > 0 else 4
            steps = abs(t)
            left = np.empty(4, dtype=np.int64)
            for k in range(4):
                need[k] = steps
                left[k] = counts[first + k]
            for i in range(n):
                j = cell_of(x[i], c)
                for k in range(4):
                    if j == cells[first + k]:
                        # selection sampling: take this record with probability need / left
                        if rng.random() * left[k] < need[k]:
                            need[k] -= 1
                            target = cells[(first + 4 + k) % 8]
                            x[i, attr[c, pb]] = ((target - offset[c]) // stride[c, pb]) \
                                % levels[attr[c, pb]]
                        left[k] -= 1
                        break
            for k in range(8):
                stats[cells[k]] += sign[k] * t
        if moved > 0:  # theta from its conditional given the moved records
            new = draw_theta(rng, state.theta, x, stats)
            for j in range(new.shape[0]):
                state.theta[j] = new[j]
        return state, moved / moves, OK

    return move
