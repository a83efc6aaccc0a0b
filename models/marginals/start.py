r"""Where a chain of the decomposable model starts: a database drawn from a fit of the release
(see :mod:`dawrap.models.marginals`, ``start="release"``, the default).

Why. Records are proposed from :math:`p_\theta`, and theta is drawn from the records' clique
counts with concentrations :math:`\alpha_C = a / |\mathcal X_C|` (BDeu; :math:`a\, q_C(x_C)`
under a centre): a cell with no records gets
theta of order :math:`\exp(-1/\alpha_C)` (about :math:`10^{-17}` for ``alpha = 1`` on a clique
of 40 cells), so it is never proposed, and it stays empty whatever the release says. A start
drawn from a sparse prior draw of theta leaves such cells empty from the first sweep: the
chain is trapped. (A proposal mixed with a uniform component would not free it: given theta,
a record's full conditional is proportional to :math:`p_\theta(x)`, so a proposal into such a
cell is accepted with probability about :math:`p_\theta(x)` too. The trap is in the joint of
theta and the records, and leaving it takes a start where the cells the release needs are
occupied.)

The start. Each chain

1. redraws the release around the published one, :math:`\tilde s = s_{dp} + z` with
   :math:`z` fresh noise of the mechanism (so chains start apart, about as far from the
   posterior as the truth is from the release, and R-hat compares chains that begin in
   different places);
2. fits theta to :math:`\tilde s` by iterative proportional fitting on the junction tree
   (Deming & Stephan 1940; on a decomposable model, Jirousek & Preucil 1995): each noisy
   table, clipped at :data:`FLOOR` records a cell and normalised, becomes a target of the
   clique that covers it; a clique is scaled to its target's margin and the change is passed
   on through the separators, so every clique table stays consistent with its neighbours
   (theta stays in the model's support) and nothing is O(domain). It begins from a random
   consistent theta (each clique cell's concentration raised by one, so no cell starts
   near zero): IPF keeps the interactions the released tables do not determine, such as the
   3-way interaction of a clique whose three 2-way margins are released, and each chain
   starts at another point of that ridge (:func:`release_centre` runs the same IPF from the
   uniform table instead, on the release itself: the maximum-entropy fit);
3. draws its ``n`` records from the fitted theta by ancestral sampling with *systematic*
   draws (:func:`balanced_records`): clique by clique, the records sharing a separator
   configuration get their residual attributes in counts within one of their expected
   counts, so a cell the fit expects at least one record in is never left empty by chance
   (an independent draw of 8 records leaves a cell of probability 0.2 empty 17% of the time).

Every cell of every clique has probability at least of order ``FLOOR / n`` under the fit, so
the cells the release needs start occupied. This only chooses where a chain begins: the kept
draws are exact whatever the start.
"""
from __future__ import annotations

import numpy as np

from . import graphical as _graphical
from .release import MarginalRelease

__all__ = ["release_fit", "release_centre", "balanced_records", "start_database",
           "check_mechanism", "FLOOR", "IPF_SWEEPS", "IPF_TOLERANCE"]

#: Records a cell of a noisy table counts at least (negative noisy counts are clipped to it).
FLOOR = 0.5
#: Most IPF sweeps over the released tables, and the largest change of a fitted margin
#: (as a proportion) at which the fit stops earlier. Noisy tables disagree with each other
#: (their totals, their shared margins), so IPF cycles around a compromise rather than
#: converging exactly: a start needs no more.
IPF_SWEEPS, IPF_TOLERANCE = 50, 1e-6


def _clique_tables(theta: np.ndarray, tree) -> list:
    lay = _graphical.layout(tree)
    return [theta[lay.offset[c]:lay.offset[c + 1]].reshape([tree.levels[a] for a in q]).copy()
            for c, q in enumerate(tree.cliques)]


def _sum_to(table: np.ndarray, axes: tuple, keep: tuple) -> np.ndarray:
    """``table`` (axes labelled ``axes``) summed to the attributes ``keep``, in that order."""
    return np.einsum(table, list(axes), list(keep)) if keep else np.array(table.sum())


def _scale(table: np.ndarray, axes: tuple, factor: np.ndarray, over: tuple) -> np.ndarray:
    """``table`` times ``factor`` (labelled ``over``, a subset of ``axes``) broadcast."""
    if not over:
        return table * float(factor)
    return np.einsum(table, list(axes), factor, list(over), list(axes))


def _ratio(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    return np.divide(new, old, out=np.zeros_like(new), where=old > 0)


def _neighbours(tree) -> list:
    out = [[] for _ in tree.cliques]
    for c, p in enumerate(tree.parents):
        if p >= 0:
            out[c].append(p)
            out[p].append(c)
    return out


def _propagate(tables: list, tree, neighbours: list, c: int, old: np.ndarray,
               came_from: int) -> None:
    """After clique ``c``'s table changed from ``old``, rescale the rest of its tree so that
    each neighbour's separator margin is ``c``'s new one (a decomposable distribution's
    clique marginals after the update, O(size of the tables))."""
    q = tree.cliques[c]
    for d in neighbours[c]:
        if d == came_from:
            continue
        r = tree.cliques[d]
        sep = tuple(a for a in q if a in r)
        factor = _ratio(_sum_to(tables[c], q, sep), _sum_to(old, q, sep))
        before = tables[d]
        tables[d] = _scale(before, r, factor, sep)
        _propagate(tables, tree, neighbours, d, before, c)


def _targets(mechanism: MarginalRelease, tree, s: np.ndarray) -> list:
    """``(clique, attributes, target proportions)`` of each released table a clique covers."""
    out = []
    for attrs, table in zip(mechanism.tables, mechanism.split(s)):
        c = tree.covering(attrs)
        if c < 0:  # allow_uncovered: the model cannot fit it; the likelihood still uses it
            continue
        clipped = np.maximum(table, FLOOR)
        out.append((c, tuple(attrs), clipped / clipped.sum()))
    return out


def release_fit(model, mechanism: MarginalRelease, s: np.ndarray, rng: np.random.Generator,
                sweeps: int = IPF_SWEEPS) -> np.ndarray:
    """theta fitted to the noisy tables ``s`` by IPF on the junction tree from a random
    consistent start (module docstring, step 2).

    Parameters
    ----------
    model : dawrap.Model
        A model of :func:`dawrap.models.marginals.model`.
    mechanism : MarginalRelease
        Its release, over the same attributes.
    s : ndarray
        The (redrawn) release.
    rng : numpy.random.Generator
        For the random start of the fit.
    sweeps : int
        Most passes over the tables.

    Returns
    -------
    ndarray
        theta (packed), inside the model's support, every cell positive.

    Examples
    --------
    Two released tables of a chain a - b - c, without noise to speak of:

    >>> import numpy as np
    >>> from dawrap.models import marginals
    >>> from dawrap.models.marginals.start import release_fit
    >>> levels, tables = [2, 2, 2], [(0, 1), (1, 2)]
    >>> model = marginals.model(levels, tables)
    >>> mech = marginals.gaussian(levels, tables, rho=1e8)
    >>> x = np.array([[0, 0, 0]] * 30 + [[1, 1, 0]] * 50 + [[1, 1, 1]] * 20, float)
    >>> theta = release_fit(model, mech, mech.release(x, seed=1), np.random.default_rng(2))
    >>> (marginals.marginal(theta, model, (1, 2)) * 100.5).round(2)   # the empty cell: FLOOR
    array([[30. ,  0.5],
           [50. , 20. ]])
    """
    tree = model.structure
    draw_theta = _graphical.functions(tree, model.alpha,
                                      _graphical.Centre.of(model.centre)).draw_theta
    size = _graphical.layout(tree).size
    # a consistent theta with every cell's concentration raised by one: no cell near zero
    start = draw_theta(rng, np.zeros(size), np.empty((0, len(tree.levels))), np.ones(size))
    return _ipf(_clique_tables(start, tree), tree, _targets(mechanism, tree, s), sweeps)


def _ipf(tables: list, tree, targets: list, sweeps: int = IPF_SWEEPS) -> np.ndarray:
    """IPF on the junction tree (module docstring, step 2) from the consistent clique
    ``tables`` towards ``targets`` (:func:`_targets`), packed and each clique summing to
    one: :func:`release_fit` from a random start, :func:`release_centre` from the uniform
    table."""
    neighbours = _neighbours(tree)
    for _ in range(sweeps):
        worst = 0.0
        for c, attrs, target in targets:
            q = tree.cliques[c]
            current = _sum_to(tables[c], q, attrs)
            worst = max(worst, float(np.max(np.abs(_ratio(target, current) - 1.0))))
            old = tables[c]
            tables[c] = _scale(old, q, _ratio(target, current), attrs)
            _propagate(tables, tree, neighbours, c, old, -1)
        if worst < IPF_TOLERANCE:
            break
    theta = np.concatenate([t.ravel() for t in tables])
    return theta / np.repeat([t.sum() for t in tables],  # rounding: each clique sums to one
                             [t.size for t in tables])


def release_centre(model, mechanism: MarginalRelease, s_dp, sweeps: int = IPF_SWEEPS) -> list:
    r"""The maximum-entropy fit of the release on the model's junction tree, as the clique
    tables ``marginals.model(centre=)`` takes: the prior network of a release-centred
    hyper-Dirichlet.

    Each released table is clipped at :data:`FLOOR` records a cell (noisy counts can be
    negative or zero) and normalised, and IPF on the junction tree runs from the uniform
    table (Deming & Stephan 1940; Csiszar 1975): among the decomposable distributions of the
    structure with the targets' margins, IPF from the uniform table converges to the one of
    maximum entropy, which adds no interaction the targets do not show (a triangle clique
    whose three 2-way tables are released gets no 3-way interaction beyond what the margins
    force). Noisy tables disagree a little (totals, shared margins), so IPF then cycles
    around a compromise; every cell stays positive (each step multiplies by positive
    ratios), and the clique tables agree on their separators. A clique no released table
    touches stays uniform. Cost O(sweeps x size of the clique tables); deterministic.

    Parameters
    ----------
    model : dawrap.Model
        A model of :func:`dawrap.models.marginals.model` (its structure is used).
    mechanism : MarginalRelease
        Its release, over the same attributes.
    s_dp : array_like
        The release.
    sweeps : int
        Most passes over the tables.

    Returns
    -------
    list of ndarray
        One table per clique, in the order of ``model.structure.cliques`` and shaped as the
        model's parameters, each summing to one, every cell positive.

    Examples
    --------
    Three binary attributes, the three 2-way tables of records with no 3-way interaction:

    >>> import numpy as np
    >>> from dawrap.models import marginals
    >>> levels, tables = [2, 2, 2], [(0, 1), (1, 2), (0, 2)]
    >>> mech = marginals.gaussian(levels, tables, rho=1e8)          # noise negligible here
    >>> x = np.array(list(np.ndindex(2, 2, 2)) * 10, float)         # 10 records a cell
    >>> s_dp = mech.release(x, seed=1)
    >>> model = marginals.model(levels, tables)
    >>> centre = marginals.release_centre(model, mech, s_dp)
    >>> [t.shape for t in centre], centre[0].round(3).ravel()
    ([(2, 2, 2)], array([0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125, 0.125]))
    >>> centred = marginals.model(levels, tables, alpha=8.0, centre=centre)
    """
    check_mechanism(model, mechanism)   # a release over other attributes: refused, as at start
    tree = model.structure
    s = mechanism.check_release(s_dp)
    # from the uniform table: the maximum-entropy start, consistent on every separator
    uniform = [np.full([tree.levels[a] for a in q], 1.0 / tree.cells(q)) for q in tree.cliques]
    theta = _ipf(uniform, tree, _targets(mechanism, tree, s), sweeps)
    return _clique_tables(theta, tree)


def balanced_records(model, theta: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` records from ``theta`` by ancestral sampling with systematic draws (module
    docstring, step 3): each clique's residual attributes are drawn for the records of one
    separator configuration together, at the points :math:`(u + k)/m`, :math:`k < m`, of
    the conditional's cumulative distribution (:math:`u` uniform, :math:`m` the records),
    and dealt to those records in random order. Each count is within one of its expectation
    given the separator's; O(n x cliques + size of the tables).

    Parameters
    ----------
    model : dawrap.Model
        A model of :func:`dawrap.models.marginals.model`.
    theta : ndarray
        Packed, in the model's support.
    n : int
        The number of records.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (n, number of attributes)
        Level codes as floats, rows in random order.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import marginals
    >>> from dawrap.models.marginals.start import balanced_records
    >>> model = marginals.model([2, 3], [(0, 1)])
    >>> theta = model.pack({"p_x0_x1": [[0.25, 0.25, 0.0], [0.125, 0.125, 0.25]]})
    >>> x = balanced_records(model, theta, 8, np.random.default_rng(0))
    >>> np.bincount((3 * x[:, 0] + x[:, 1]).astype(int), minlength=6)   # 8 theta exactly
    array([2, 2, 0, 1, 1, 2])
    """
    tree = model.structure
    lay = _graphical.layout(tree)
    x = np.zeros((n, len(tree.levels)), dtype=np.int64)
    for c, q in enumerate(tree.cliques):
        sep, res = tree.separators[c], tree.residual(c)
        rows, width = int(lay.sep_size[c]), int(lay.res_size[c])
        table = theta[lay.offset[c]:lay.offset[c + 1]].reshape(rows, width)
        total = table.sum(axis=1, keepdims=True)
        conditional = np.divide(table, total, out=np.full_like(table, 1.0 / width),
                                where=total > 0)
        key = np.ravel_multi_index(tuple(x[:, a] for a in sep), [tree.levels[a] for a in sep]) \
            if sep else np.zeros(n, dtype=np.int64)
        order = np.lexsort((rng.random(n), key))     # by configuration, randomly within it
        size = np.bincount(key, minlength=rows)
        first = np.concatenate([[0], np.cumsum(size)[:-1]])
        group = key[order]
        rank = np.arange(n) - first[group]
        point = (rng.random(rows)[group] + rank) / size[group]
        # every group's cumulative distribution, shifted by its index so that one sorted
        # search serves all of them (the last entry a little above one against rounding)
        cumulative = np.cumsum(conditional, axis=1)
        cumulative[:, -1] = 1.0 + 1e-9
        flat = (cumulative + np.arange(rows)[:, None]).ravel()
        cell = np.searchsorted(flat, point + group, side="right") - group * width
        values = np.unravel_index(np.minimum(cell, width - 1), [tree.levels[a] for a in res])
        for a, v in zip(res, values):
            x[order, a] = v
    return x[rng.permutation(n)].astype(np.float64)


def check_mechanism(model, mechanism) -> None:
    """A ValueError, naming both, unless a :class:`MarginalRelease` ``mechanism`` is over the
    model's attributes: the same names and numbers of levels, in the same order. (Its
    statistic reads a record's level codes by position: a record of the model whose level is
    beyond the release's would fall outside its tables, and a renamed or reordered attribute
    would be counted as another.) Another mechanism is not checked.

    Parameters
    ----------
    model : dawrap.Model
        A model of :func:`dawrap.models.marginals.model`.
    mechanism : dawrap.Mechanism

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> from dawrap.models.marginals.start import check_mechanism
    >>> model = marginals.model({"a": 3, "b": 2}, [("a", "b")])
    >>> check_mechanism(model, marginals.laplace({"a": 2, "b": 2}, [("a", "b")], 1.0))
    Traceback (most recent call last):
    ...
    ValueError: the mechanism releases tables of the attributes {'a': 2, 'b': 2}, but the model's records have {'a': 3, 'b': 2}: build both from the same levels (names, numbers of levels, order)
    """
    if not isinstance(mechanism, MarginalRelease):
        return
    domain = model.domain
    if tuple(mechanism.levels) != tuple(domain.levels) or \
            tuple(mechanism.attributes) != tuple(domain.attributes):
        theirs = dict(zip(mechanism.attributes, mechanism.levels))
        mine = dict(zip(domain.attributes, domain.levels))
        raise ValueError(f"the mechanism releases tables of the attributes {theirs}, but the "
                         f"model's records have {mine}: build both from the same levels "
                         f"(names, numbers of levels, order)")


def start_database(model, rng, theta, n: int, mechanism, s_dp, init_x) -> np.ndarray:
    """The database a chain starts from (``Model(start_database=)``): ``init_x`` when given;
    else ``n`` records from :func:`release_fit` of a redraw of the release (module docstring);
    with a mechanism that is not a :class:`MarginalRelease`, ``n`` records from the chain's
    starting ``theta``. A :class:`MarginalRelease` over other attributes than the model's is
    refused (:func:`check_mechanism`).

    Parameters
    ----------
    model : dawrap.Model
        A model of :func:`dawrap.models.marginals.model`.
    rng : numpy.random.Generator
        The chain's.
    theta : ndarray
        The chain's starting theta.
    n : int
        The number of records.
    mechanism : dawrap.Mechanism
        The release's mechanism.
    s_dp : ndarray
        The release.
    init_x : ndarray or None
        The user's start (the runner checks it against the model's support).

    Returns
    -------
    ndarray of shape (n, number of attributes)
    """
    check_mechanism(model, mechanism)
    if init_x is not None:
        return init_x
    if isinstance(mechanism, MarginalRelease):
        s = np.asarray(s_dp, dtype=np.float64)
        if mechanism.can_draw_releases:
            s = mechanism.release_given_total(rng, s)
        return balanced_records(model, release_fit(model, mechanism, s, rng), n, rng)
    return model.simulate(theta, n, seed=rng)
