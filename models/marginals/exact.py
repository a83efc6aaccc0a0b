r"""The exact posterior of the decomposable model on small domains, by enumerating every full
table of ``n`` records (see :func:`dawrap.models.marginals.exact_posterior`).

Given the full table :math:`N` (the confidential records up to order), the hyper-Dirichlet
posterior has clique concentrations :math:`\alpha_C + n_C` (per cell, :math:`\alpha_C(x_C) =
a\, q_C(x_C)` under a centre :math:`q`, :math:`a / |\mathcal X_C|` under BDeu, and
:math:`\alpha_S` the clique's own summed over its residual), and the records' marginal
likelihood factorises over the junction tree (Dawid & Lauritzen 1993):

.. math:: p(N) = \frac{n!}{\prod_x N_x!}\,
          \frac{\prod_C \mathrm{DM}(n_C; \alpha_C)}{\prod_S \mathrm{DM}(n_S; \alpha_S)},
          \quad \mathrm{DM}(n; \alpha) = \frac{\Gamma(A)}{\Gamma(A + n_+)}
          \prod_x \frac{\Gamma(\alpha_x + n_x)}{\Gamma(\alpha_x)},

so :math:`p(\theta \mid s_{dp}) = \sum_N w_N\, p(\theta \mid N)` with
:math:`w_N \propto p(N)\, g(s_{dp} \mid M N)`. Each clique cell is then a mixture of Betas,
a new record's distribution is :math:`\sum_N w_N \prod_C \hat p_C / \prod_S \hat p_S` with
:math:`\hat p_C = (\alpha_C + n_C) / (A + n)`, and the imputed table is :math:`N` with
probability :math:`w_N`.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import special

from . import graphical as _graphical

__all__ = ["ExactPosterior", "exact_posterior", "MAX_TABLES"]

#: Most full tables enumerated (C(n + cells - 1, cells - 1) of them).
MAX_TABLES = 2_000_000


def _compositions(n: int, cells: int) -> np.ndarray:
    """Every vector of ``cells`` counts summing to ``n`` (stars and bars)."""
    rows = []
    for bars in itertools.combinations(range(n + cells - 1), cells - 1):
        edges = (-1,) + bars + (n + cells - 1,)
        rows.append([edges[j + 1] - edges[j] - 1 for j in range(cells)])
    return np.array(rows, dtype=np.float64)


def _log_dm(counts: np.ndarray, concentration: np.ndarray) -> np.ndarray:
    """log DM(counts; concentration) for each row of ``counts``, ``concentration`` one per
    cell (a column of ``counts``)."""
    total = concentration.sum()
    return (special.gammaln(total) - special.gammaln(total + counts.sum(1))
            + (special.gammaln(concentration + counts)
               - special.gammaln(concentration)).sum(1))


class ExactPosterior:
    """The enumerated posterior: full tables, their weights, and what follows from them
    (built by :func:`dawrap.models.marginals.exact_posterior`).

    Attributes
    ----------
    tables : ndarray of shape (T, cells)
        Every full table of ``n`` records (joint cells in C order over the attributes).
    weights : ndarray of shape (T,)
        Their posterior probabilities.
    cells : ndarray of shape (cells, d)
        Each joint cell as a record.

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> model = marginals.model([2, 2], [(0,), (1,)], alpha=2.0)
    >>> mech = marginals.laplace([2, 2], [(0,), (1,)], epsilon=1.0)
    >>> exact = marginals.exact_posterior(model, mech, [2.3, 0.1, 1.2, 0.9], 2)
    >>> exact.tables.shape, round(float(exact.weights.sum()), 12)   # 10 tables of 2 records
    ((10, 4), 1.0)
    """

    def __init__(self, model, tables, weights, cells, alpha: float):
        self.model, self.tables, self.weights, self.cells = model, tables, weights, cells
        tree = model.structure
        lay = _graphical.layout(tree)
        self._alpha, self._n = alpha, float(tables[0].sum())
        # the prior's concentration of every clique cell (theta's layout): a q_C(x_C)
        self._concentration = lay.concentration(
            alpha, _graphical.Centre.of(model.centre))
        # clique counts of every table, in theta's layout
        index = np.zeros((cells.shape[0], len(tree.cliques)), dtype=np.int64)
        for c, q in enumerate(tree.cliques):
            index[:, c] = lay.offset[c] + sum(cells[:, a].astype(np.int64) * lay.stride[c, p]
                                              for p, a in enumerate(q))
        self._index = index
        self._clique_counts = np.zeros((tables.shape[0], lay.size))
        for c in range(len(tree.cliques)):
            np.add.at(self._clique_counts.T, index[:, c], tables.T)
        self._layout = lay

    def theta(self, j: int):
        """The posterior of theta's entry ``j`` (a clique cell) as a mixture of Betas.

        Parameters
        ----------
        j : int
            An index into the flat theta.

        Returns
        -------
        dawrap.reference.BetaMixture

        Examples
        --------
        >>> from dawrap.models import marginals
        >>> exact = marginals.exact_posterior(marginals.model([2, 2], [(0,), (1,)], alpha=2.0),
        ...     marginals.laplace([2, 2], [(0,), (1,)], 1.0), [2.3, 0.1, 1.2, 0.9], 2)
        >>> p0 = exact.theta(0)                 # P(x0 = 0): a mixture of Betas
        >>> bool(0.5 < p0.mean() < 1.0)         # the release leans towards x0 = 0
        True
        """
        from dawrap.reference import BetaMixture

        lay = self._layout
        c = int(np.searchsorted(lay.offset, j, side="right") - 1)
        a = self._concentration[j]
        total = self._concentration[lay.offset[c]:lay.offset[c + 1]].sum()   # a
        counts = self._clique_counts[:, j]
        return BetaMixture(self.weights, a + counts, total + self._n - a - counts)

    def predictive(self) -> np.ndarray:
        """The distribution of one new record over the joint cells (posterior predictive).

        Returns
        -------
        ndarray of shape (cells,)

        Examples
        --------
        >>> from dawrap.models import marginals
        >>> exact = marginals.exact_posterior(marginals.model([2, 2], [(0,), (1,)], alpha=2.0),
        ...     marginals.laplace([2, 2], [(0,), (1,)], 1.0), [2.3, 0.1, 1.2, 0.9], 2)
        >>> exact.predictive().shape, round(float(exact.predictive().sum()), 12)
        ((4,), 1.0)
        """
        tree, lay, conc = self.model.structure, self._layout, self._concentration
        log_p = np.zeros((self.tables.shape[0], self.cells.shape[0]))
        for c in range(len(tree.cliques)):
            total = conc[lay.offset[c]:lay.offset[c + 1]].sum() + self._n
            index = self._index[:, c]
            log_p += np.log((conc[index] + self._clique_counts[:, index]) / total)
            if tree.parents[c] >= 0:  # divide by the separator's predictive
                r = int(lay.res_size[c])
                sep = index - lay.offset[c]
                rows = (sep // r) * r + lay.offset[c]
                sep_counts = sum(self._clique_counts[:, rows + i] for i in range(r))
                sep_conc = sum(conc[rows + i] for i in range(r))
                log_p -= np.log((sep_conc + sep_counts) / total)
        return self.weights @ np.exp(log_p)

    def mean_table(self) -> np.ndarray:
        """The posterior mean of the full table of the confidential records, an ndarray of
        shape (cells,) over the joint cells.

        Examples
        --------
        >>> from dawrap.models import marginals
        >>> exact = marginals.exact_posterior(marginals.model([2, 2], [(0,), (1,)], alpha=2.0),
        ...     marginals.laplace([2, 2], [(0,), (1,)], 1.0), [2.3, 0.1, 1.2, 0.9], 2)
        >>> round(float(exact.mean_table().sum()), 12)                # n = 2 records
        2.0
        """
        return self.weights @ self.tables


def exact_posterior(model, mechanism, s_dp, n: int) -> ExactPosterior:
    r"""The exact posterior of ``model`` given the release ``s_dp`` of ``n`` records, by
    enumerating every full table: keep the domain and ``n`` small (at most
    :data:`MAX_TABLES` tables, e.g. 12 cells and n = 8).

    Parameters
    ----------
    model : dawrap.Model
        From :func:`dawrap.models.marginals.model`; a prior set from the release
        (``centre="release"``, ``alpha="auto"``) is set from ``s_dp`` and ``n`` first, as
        ``dw.sample`` does (``ExactPosterior.model`` is the model so resolved).
    mechanism : MarginalRelease
        The release's mechanism.
    s_dp : array_like
        The release.
    n : int
        The number of records.

    Returns
    -------
    ExactPosterior

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import marginals
    >>> levels, tables = [2, 2, 3], [(0, 1), (1, 2)]
    >>> model = marginals.model(levels, tables, alpha=2.0)
    >>> mech = marginals.laplace(levels, tables, epsilon=1.0)
    >>> exact = marginals.exact_posterior(model, mech, mech.release(np.zeros((3, 3)), seed=1), 3)
    >>> round(float(exact.weights.sum()), 12), round(float(exact.predictive().sum()), 12)
    (1.0, 1.0)
    >>> round(sum(exact.theta(j).mean() for j in range(4)), 12)     # p_x0_x1 sums to one
    1.0
    """
    # the prior dw.sample samples under: centred on this release by default (Model.resolve)
    s = mechanism.check_release(s_dp)
    model = model.resolve(mechanism, s, n)
    tree = model.structure
    alpha = model.alpha
    cells = math.prod(tree.levels)
    count = math.comb(n + cells - 1, cells - 1)
    if count > MAX_TABLES:
        raise ValueError(f"exact_posterior: {count:,} full tables of n = {n} records over "
                         f"{cells} cells, more than MAX_TABLES = {MAX_TABLES:,}")
    tables = _compositions(int(n), cells)
    records = np.array(list(itertools.product(*(range(v) for v in tree.levels))),
                       dtype=np.float64)
    post = ExactPosterior(model, tables, np.ones(tables.shape[0]), records, alpha)
    lay = post._layout
    log_w = special.gammaln(n + 1) - special.gammaln(tables + 1).sum(1)
    for c in range(len(tree.cliques)):
        block = post._clique_counts[:, lay.offset[c]:lay.offset[c + 1]]
        conc = post._concentration[lay.offset[c]:lay.offset[c + 1]]
        log_w += _log_dm(block, conc)
        if tree.parents[c] >= 0:  # alpha_S: the clique's own concentrations summed over x_R
            shape = (int(lay.sep_size[c]), int(lay.res_size[c]))
            sep = block.reshape(-1, *shape).sum(2)
            log_w -= _log_dm(sep, conc.reshape(shape).sum(1))
    margins = np.stack([mechanism.total(r[None, :]) for r in records], axis=1)
    totals = tables @ margins.T
    params = mechanism.params
    size = mechanism.size
    z = (s[None, :] - totals) * params[:size]
    gaussian = params[size:2 * size] == 1.0
    log_g = -np.where(gaussian, 0.5 * z * z, np.abs(z)).sum(1)
    log_w = log_w + log_g
    weights = np.exp(log_w - log_w.max())
    post.weights = weights / weights.sum()
    return post
