r"""The compiled functions of the decomposable model (see :mod:`dawrap.models.marginals`),
built once per structure and prior.

theta is the concatenation of the clique marginals :math:`p_C`, each a table over the
clique's attributes in the order of :class:`~dawrap.models.marginals.junction_tree.Structure`
(separator first, then residual), flattened in C order: the entries of one separator
configuration :math:`x_S` are contiguous, and divided by their sum they are the conditional
:math:`p(x_R \mid x_S)` from which a record's residual attributes are drawn. The model's
statistic (the clique counts :math:`n_C`) has the same layout.

The prior is hyper-Dirichlet (Dawid & Lauritzen 1993) with clique concentrations
:math:`\alpha_C(x_C) = a\, q_C(x_C)`, ``a`` the equivalent sample size and :math:`q` the prior
network (:class:`Centre`, the BDe prior of Heckerman, Geiger & Chickering 1995): a
decomposable distribution on the same tree, its clique marginals agreeing on the
separators, so that :math:`\alpha_S(x_S) = a\, q_S(x_S)` is the same from either side. With
:math:`q` uniform (``centre=None``), :math:`a / |\mathcal X_C|`: BDeu. The concentrations are
per cell, in theta's layout (:meth:`Layout.concentration`). The posterior
given complete records is hyper-Dirichlet with :math:`\alpha_C + n_C`, drawn root first:
:math:`p_{C_1} \sim \mathrm{Dir}(\alpha_{C_1} + n_{C_1})` and, for each further clique,
independently for each :math:`x_S`, :math:`p(\cdot \mid x_S) \sim \mathrm{Dir}((\alpha_C +
n_C)(x_S, \cdot))`, then :math:`p_C(x_S, x_R) = p_S(x_S)\, p(x_R \mid x_S)` with
:math:`p_S` summed from the parent's table. Every cost is O(sum of the clique tables) per
theta, O(number of cliques) per record; nothing is O(domain).
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numba
import numpy as np

import dawrap as dw

from .junction_tree import Structure
from .._shared import closure_jit

__all__ = ["Layout", "layout", "Centre", "GraphicalFunctions", "functions",
           "log_dirichlet_fill"]


class Layout:
    """The structure as the integer arrays the compiled functions close over."""

    def __init__(self, structure: Structure):
        levels, cliques = structure.levels, structure.cliques
        k, width = len(cliques), max(len(q) for q in cliques)
        self.levels = np.array(levels, dtype=np.int64)
        self.attr = np.full((k, width), -1, dtype=np.int64)
        self.stride = np.zeros((k, width), dtype=np.int64)
        self.length = np.array([len(q) for q in cliques], dtype=np.int64)
        self.sep_length = np.array([len(s) for s in structure.separators], dtype=np.int64)
        self.res_size = np.array([structure.cells(structure.residual(c)) for c in range(k)],
                                 dtype=np.int64)
        self.sep_size = np.array([structure.cells(s) for s in structure.separators],
                                 dtype=np.int64)
        self.parent = np.array(structure.parents, dtype=np.int64)
        self.offset = np.zeros(k + 1, dtype=np.int64)
        self.guide_length = np.array([dw.random.guide_size(int(r)) for r in self.res_size],
                                     dtype=np.int64)
        self.guide_offset = np.zeros(k + 1, dtype=np.int64)
        # For child c: the stride, in c's separator index, of each attribute of its parent's
        # layout (0 for an attribute outside the separator).
        self.in_separator = np.zeros((k, width), dtype=np.int64)
        for c, q in enumerate(cliques):
            self.attr[c, :len(q)] = q
            for p in range(len(q)):
                self.stride[c, p] = math.prod(levels[a] for a in q[p + 1:])
            self.offset[c + 1] = self.offset[c] + structure.cells(q)
            self.guide_offset[c + 1] = (self.guide_offset[c]
                                        + self.sep_size[c] * self.guide_length[c])
            parent = structure.parents[c]
            if parent >= 0:
                for p, a in enumerate(cliques[parent]):
                    if a in structure.separators[c]:
                        self.in_separator[c, p] = self.stride[c, q.index(a)] // self.res_size[c]
        self.size = int(self.offset[-1])
        self.max_sep = int(self.sep_size.max())
        self.max_res = int(self.res_size.max())

    def concentration(self, alpha: float, centre: "Centre | None" = None) -> np.ndarray:
        r"""The prior's concentration of every clique cell, in theta's layout:
        :math:`\alpha_C(x_C) = a\, q_C(x_C)` for the equivalent sample size ``alpha`` and
        the prior network ``centre`` (:class:`Centre`), :math:`a / |\mathcal X_C|` (BDeu)
        when it is None.

        Examples
        --------
        >>> from dawrap.models import marginals
        >>> from dawrap.models.marginals.graphical import Centre, layout
        >>> lay = layout(marginals.structure([2, 2], [(0, 1)]))
        >>> lay.concentration(2.0)
        array([0.5, 0.5, 0.5, 0.5])
        >>> lay.concentration(2.0, Centre([[[0.1, 0.2], [0.3, 0.4]]]))
        array([0.2, 0.4, 0.6, 0.8])
        """
        if centre is None:  # the same floats as one a / |X_C| per clique: BDeu bit for bit
            return np.repeat(alpha / (self.sep_size * self.res_size), np.diff(self.offset))
        return alpha * centre.flat


class Centre:
    r"""The prior network :math:`q` of a centred hyper-Dirichlet: its clique tables
    :math:`q_C`, each flattened in theta's layout (C order over the clique's attributes,
    separator first), already checked (``marginals.model(centre=)``). Hashable by value, so
    that compiled functions are cached per centre.

    Examples
    --------
    >>> from dawrap.models.marginals.graphical import Centre
    >>> Centre([[0.25, 0.75]]) == Centre([[[0.25], [0.75]]]), Centre.of(None)
    (True, None)
    """

    def __init__(self, tables):
        self.tables = tuple(np.array(t, dtype=np.float64).ravel() for t in tables)
        self.flat = np.concatenate(self.tables)
        self.flat.setflags(write=False)
        self._key = self.flat.tobytes()

    @classmethod
    def of(cls, tables) -> "Centre | None":
        """``tables`` (a model's ``centre``: clique tables, None, or ``"release"`` before a
        release resolves it, uniform until then) as a :class:`Centre`, None when uniform."""
        if isinstance(tables, str):
            return None
        return None if tables is None else cls(tables)

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other) -> bool:
        return isinstance(other, Centre) and self._key == other._key

    def __repr__(self) -> str:
        return f"Centre({len(self.tables)} tables, {self.flat.size} cells)"


@functools.lru_cache(maxsize=32)
def layout(structure: Structure) -> Layout:
    """The (cached) :class:`Layout` of ``structure``."""
    return Layout(structure)


@numba.njit(nogil=True, cache=True)
def log_dirichlet_fill(rng, shapes, out):
    """A ``Dirichlet(shapes)`` draw into ``out``, through log-gamma draws so that tiny
    shapes (an empty cell under a small prior) neither underflow to an all-zero row nor
    stall the gamma sampler; NaN everywhere if a shape is not finite and positive."""
    top = -math.inf
    for j in range(shapes.shape[0]):
        a = shapes[j]
        if not 0.0 < a < math.inf:
            out[:] = math.nan
            return
        if a >= 1.0:
            out[j] = math.log(rng.gamma(a, 1.0))
        else:  # G = G' U^(1/a), G' ~ Gamma(a + 1) (Marsaglia & Tsang 2000), in logs
            out[j] = math.log(rng.gamma(a + 1.0, 1.0)) + math.log(rng.random()) / a
        top = max(top, out[j])
    total = 0.0
    for j in range(shapes.shape[0]):
        out[j] = math.exp(out[j] - top)
        total += out[j]
    for j in range(shapes.shape[0]):
        out[j] /= total


class GraphicalFunctions(NamedTuple):
    """The decomposable model's compiled functions (:func:`functions`)."""
    draw_theta: object         # (rng, theta, x, stats) -> theta from its conditional
    prepare: object            # (theta) -> each clique's categorical tables, once per sweep
    draw_from_table: object    # (rng, theta, table, out): a record by ancestral sampling
    draw_record: object        # (rng, theta, out): the same by a scan (the reference)
    propose_attribute: object  # (rng, theta, x_i, out): one attribute from its conditional
    clique_counts: object      # (x_i, out): the model statistic (sparse)
    clique_cell: object        # (x_i, c): a record's cell of clique c
    separator_index: object    # (c, out): the offset of a record's separator row in clique c
    write_residual: object     # (c, j, out): a residual's attributes from its index
    theta_support: object      # (theta) -> bool
    record_support: object     # (x_i) -> bool


@functools.lru_cache(maxsize=32)
def functions(structure: Structure, alpha: float,
              centre: Centre | None = None) -> GraphicalFunctions:
    """The model's compiled functions (:class:`GraphicalFunctions`) for ``structure``,
    equivalent sample size ``alpha`` and prior network ``centre`` (None: BDeu)."""
    lay = layout(structure)
    concentration = lay.concentration(alpha, centre)
    jit = closure_jit(lay.levels, lay.attr, lay.stride, lay.length, lay.sep_length,
                      lay.res_size, lay.sep_size, lay.parent, lay.offset, lay.in_separator,
                      lay.guide_length, lay.guide_offset, concentration)
    cells = _clique_cells(jit, lay)
    draw_theta, theta_support = _theta_functions(jit, lay, concentration,
                                                 cells.separator_marginal)
    prepare, draw_from_table, draw_record = _record_draws(jit, lay, cells)
    clique_counts, record_support = _statistic(jit, lay, cells.clique_cell)
    return GraphicalFunctions(draw_theta, prepare, draw_from_table, draw_record,
                              _attribute_proposal(jit, lay, cells.separator_index),
                              clique_counts, cells.clique_cell, cells.separator_index,
                              cells.write_residual, theta_support, record_support)


class _CliqueCells(NamedTuple):
    separator_marginal: object
    separator_index: object
    write_residual: object
    clique_cell: object


def _clique_cells(jit, lay: Layout) -> _CliqueCells:
    """Where a record or a separator configuration lies in a clique's table."""
    levels, attr, stride, length = lay.levels, lay.attr, lay.stride, lay.length
    sep_length, sep_size = lay.sep_length, lay.sep_size
    parent, offset, in_separator = lay.parent, lay.offset, lay.in_separator

    @jit
    def separator_marginal(table, c, out):
        # p_S of clique c summed from its parent's part of ``table``: O(|X_parent|).
        out[:sep_size[c]] = 0.0
        q = parent[c]
        if q < 0:
            out[0] = 1.0
            return
        for j in range(offset[q + 1] - offset[q]):
            s = 0
            for p in range(length[q]):
                if in_separator[c, p] != 0:
                    s += ((j // stride[q, p]) % levels[attr[q, p]]) * in_separator[c, p]
            out[s] += table[offset[q] + j]

    @jit
    def separator_index(c, out):
        # the offset of x_S's row in clique c's table (the index times |X_R|)
        s = 0
        for p in range(sep_length[c]):
            s += int(out[attr[c, p]]) * stride[c, p]
        return s

    @jit
    def write_residual(c, j, out):
        for p in range(sep_length[c], length[c]):
            out[attr[c, p]] = (j // stride[c, p]) % levels[attr[c, p]]

    @jit
    def clique_cell(x_i, c):
        # the flat position of x_i's cell of clique c (in theta's and the statistic's layout)
        j = offset[c]
        for p in range(length[c]):
            j += int(x_i[attr[c, p]]) * stride[c, p]
        return j

    return _CliqueCells(separator_marginal, separator_index, write_residual, clique_cell)


def _theta_functions(jit, lay: Layout, concentration: np.ndarray, separator_marginal):
    """``draw_theta`` (the hyper-Dirichlet posterior, root first: module docstring) and
    ``theta_support`` (every clique table a distribution, neighbours agreeing on their
    separators)."""
    k, size, max_sep, max_res = lay.parent.shape[0], lay.size, lay.max_sep, lay.max_res
    res_size, sep_size, offset = lay.res_size, lay.sep_size, lay.offset

    @jit
    def draw_theta(rng, theta, x, stats):
        new = np.empty(size)
        p_sep, shapes = np.empty(max_sep), np.empty(max_res)
        for c in range(k):
            separator_marginal(new, c, p_sep)
            r = res_size[c]
            for s in range(sep_size[c]):
                base = offset[c] + s * r
                for j in range(r):
                    shapes[j] = concentration[base + j] + stats[base + j]
                log_dirichlet_fill(rng, shapes[:r], new[base:base + r])
                for j in range(r):
                    new[base + j] *= p_sep[s]
        return new

    @jit
    def theta_support(theta):
        p_sep = np.empty(max_sep)
        for c in range(k):
            total = 0.0
            for j in range(offset[c], offset[c + 1]):
                if not 0.0 <= theta[j] <= 1.0:
                    return False
                total += theta[j]
            if abs(total - 1.0) > 1e-9:
                return False
            # the clique's and its parent's marginals of the separator agree
            separator_marginal(theta, c, p_sep)
            r = res_size[c]
            for s in range(sep_size[c]):
                own = 0.0
                for j in range(r):
                    own += theta[offset[c] + s * r + j]
                if abs(own - p_sep[s]) > 1e-9:
                    return False
        return True

    return draw_theta, theta_support


def _record_draws(jit, lay: Layout, cells: _CliqueCells):
    r"""A record from :math:`p_\theta` by ancestral sampling along the tree:
    ``draw_from_table`` from the categorical tables ``prepare`` builds once per sweep,
    ``draw_record`` by a scan with the same arithmetic (the reference)."""
    k, size, max_res, guides = lay.parent.shape[0], lay.size, lay.max_res, \
        int(lay.guide_offset[-1])
    res_size, sep_size, offset = lay.res_size, lay.sep_size, lay.offset
    guide_length, guide_offset = lay.guide_length, lay.guide_offset
    separator_index, write_residual = cells.separator_index, cells.write_residual

    @jit
    def prepare(theta):
        cumulative = np.empty(size)
        guide = np.empty(guides, dtype=np.int32)
        row = np.empty(max_res)
        for c in range(k):
            r = res_size[c]
            for s in range(sep_size[c]):
                base = offset[c] + s * r
                total = 0.0
                for j in range(r):
                    total += theta[base + j]
                for j in range(r):  # the conditional p(x_R | x_S); any row if p_S = 0
                    row[j] = theta[base + j] / total if 0.0 < total < math.inf else 1.0 / r
                g = guide_offset[c] + s * guide_length[c]
                dw.random.fill_categorical_table(row[:r], cumulative[base:base + r],
                                                 guide[g:g + guide_length[c]])
        return cumulative, guide

    @jit
    def draw_from_table(rng, theta, table, out):
        cumulative, guide = table
        for c in range(k):
            s = separator_index(c, out)
            base, r = offset[c] + s, res_size[c]
            g = guide_offset[c] + (s // r) * guide_length[c]
            j = dw.random.categorical(rng, cumulative[base:base + r],
                                      guide[g:g + guide_length[c]])
            write_residual(c, j, out)

    @jit
    def draw_record(rng, theta, out):
        # The reference: the scan prepare's table reproduces, with the same arithmetic.
        for c in range(k):
            base, r = offset[c] + separator_index(c, out), res_size[c]
            total = 0.0
            for j in range(r):
                total += theta[base + j]
            u, acc, pick = rng.random(), 0.0, r - 1
            for j in range(r - 1):
                acc += theta[base + j] / total if 0.0 < total < math.inf else 1.0 / r
                if u < acc:
                    pick = j
                    break
            write_residual(c, pick, out)

    return prepare, draw_from_table, draw_record


def _attribute_proposal(jit, lay: Layout, separator_index):
    """``propose_attribute``: one attribute, uniformly, redrawn from its conditional given
    the record's others."""
    k, d, max_levels = lay.parent.shape[0], lay.levels.shape[0], int(lay.levels.max())
    levels, attr, stride, length = lay.levels, lay.attr, lay.stride, lay.length
    sep_length, res_size, offset = lay.sep_length, lay.res_size, lay.offset

    @jit
    def propose_attribute(rng, theta, x_i, out):
        # One attribute a, uniformly, redrawn from p_theta(x_a | the others): the product of
        # the factors p(x_R | x_S) of the cliques holding a (the rest do not depend on
        # x_a). A Gibbs proposal: f(x*) q(x | x*) / (f(x) q(x* | x)) = 1, log ratio 0.
        # O(levels[a] x the residual rows of those cliques), never O(domain).
        for j in range(d):
            out[j] = x_i[j]
        a = rng.integers(0, d)
        weight = np.ones(max_levels)
        for c in range(k):
            where = -1
            for p in range(length[c]):
                if attr[c, p] == a:
                    where = p
            if where < 0:
                continue
            r = res_size[c]
            for v in range(levels[a]):
                out[a] = v
                base = offset[c] + separator_index(c, out)
                j = 0
                for p in range(sep_length[c], length[c]):
                    j += int(out[attr[c, p]]) * stride[c, p]
                value = theta[base + j]
                if where < sep_length[c]:  # a in the separator: divide by p_S(x_S)
                    total = 0.0
                    for t in range(r):
                        total += theta[base + t]
                    value = value / total if total > 0.0 else 0.0
                weight[v] *= value
        total = 0.0
        for v in range(levels[a]):
            total += weight[v]
        if not total > 0.0:  # the record itself has probability 0 (not in the support)
            out[a] = x_i[a]
            return 0.0
        u, acc = rng.random() * total, 0.0
        out[a] = levels[a] - 1
        for v in range(levels[a]):
            acc += weight[v]
            if u < acc:
                out[a] = v
                break
        return 0.0

    return propose_attribute


def _statistic(jit, lay: Layout, clique_cell):
    """The model statistic ``clique_counts`` (a record's cell of every clique, declared
    sparse) and ``record_support`` (every attribute a level of its own)."""
    k, d, levels = lay.parent.shape[0], lay.levels.shape[0], lay.levels

    @jit
    def clique_entries(x_i, index, value):
        for c in range(k):
            index[c] = clique_cell(x_i, c)
            value[c] = 1.0
        return k

    @jit
    def clique_counts(x_i, out):
        out[:] = 0.0
        for c in range(k):
            out[clique_cell(x_i, c)] += 1.0

    dw.declare_sparse(clique_counts, clique_entries, nnz=k)

    @jit
    def record_support(x_i):
        for a in range(d):
            if not (0.0 <= x_i[a] < levels[a] and x_i[a] == math.floor(x_i[a])):
                return False
        return True

    return clique_counts, record_support
