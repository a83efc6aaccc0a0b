r"""Records of many categorical attributes, a decomposable graphical model; released are noisy
marginal tables.

.. math:: \theta \sim \text{hyper-Dirichlet}(a), \quad
          x_i \mid \theta \sim p_\theta(x) = \frac{\prod_C p_C(x_C)}{\prod_S p_S(x_S)},
          \quad s_{dp} = \big(M_m(x) + z_m\big)_{m},

with :math:`C` the cliques and :math:`S` the separators of a junction tree over the
attributes, :math:`p_C` the clique marginals (theta), :math:`M_m(x)` the counts of
marginal table :math:`m` and :math:`z_m` its noise: Laplace or geometric
(:math:`\epsilon`-DP), Gaussian or discrete Gaussian (zCDP), chosen per table.

**Structure.** By default the junction tree is derived from the released tables: attributes
that appear in a common table are joined, the graph is triangulated by greedy min-fill
elimination, and its maximal cliques are joined by a maximum-weight spanning tree
(:func:`structure`; the rule in full in ``models/marginals/junction_tree.py``). Each released table
then lies inside a clique, and attributes that share no table are conditionally independent
given the rest. ``cliques=`` gives the structure instead (it is triangulated the same way).
A clique of more than ``max_clique_cells`` cells is refused, naming it: theta and each
sweep's tables are as large as the cliques, never as the domain.

**Prior.** Hyper-Dirichlet (Dawid & Lauritzen 1993) with clique concentrations
:math:`\alpha_C(x_C) = a\, q_C(x_C)` and separator concentrations :math:`\alpha_S(x_S) = a\,
q_S(x_S)`, ``a = alpha`` an equivalent sample size of prior records and :math:`q` the *prior
network* (``centre``): a decomposable distribution on the same junction tree, given by its
clique marginals :math:`q_C`, which agree on the separators. These concentrations are
consistent (a separator's are the same from either clique), so the prior, and the posterior,
do not depend on the clique chosen as root or on the orientation used to draw records: it is
the BDe prior of Heckerman, Geiger & Chickering (1995) for every Bayesian network of the
structure, and the prior mean of every clique marginal is :math:`q_C`. By default
(``centre="release"``) :math:`q` is the maximum-entropy fit of the release, made when
``dw.sample`` is given it, and :math:`a` (``alpha="auto"``, :func:`auto_alpha`) a tenth of
what the release says about its least informed table; with ``centre=None`` :math:`q` is
uniform, :math:`\alpha_C(x_C) = a / |\mathcal X_C|`: BDeu.
Given the imputed records, theta is drawn exactly (conjugate, :math:`\alpha_C + n_C`) in
O(size of the clique tables).

*Why centre.* A clique of three attributes whose three 2-way tables are released has a
3-way interaction the release does not identify: its counts move along a line that keeps
every released table fixed (below), on which the likelihood is flat and the prior alone
decides. There the hyper-Dirichlet weighs a table by :math:`\prod_x \Gamma(\alpha_C(x) +
n_x) / n_x!`, about :math:`\prod_x n_x^{\alpha_C(x) - 1}`: with BDeu at ``alpha = 1``
(:math:`\alpha_C = 1/8` on a 2 x 2 x 2 clique) it favours the line's sparse ends, a confident
interaction the data never showed (issue 45: on the Adult data a conditional probability's
posterior mean 0.96 against a truth of 0.70, where Private-PGM's maximum-entropy fit gives
0.71).
Centred on the maximum-entropy fit of the released tables (:func:`release_centre`) with
:math:`a` of order a tenth of the release's effective records, the prior's weight along the
line peaks near the fit
(the weight is about :math:`\prod_x n_x^{\alpha_C(x) - 1}`, with :math:`\alpha_C(x) > 1`
wherever the fit expects more than ten records), so the posterior of what the
release does not identify stays near the fit. What the release does identify is pinned by
the data whatever the centre: a released table's small cell is still estimated from its
noisy count (the prior adds :math:`a\, q_C(x)` pseudo-records spread as the release itself,
not the sparse ends; where the noise dominates, :func:`auto_alpha` makes :math:`a` small, so
a noisy fit is not taken for records). ``release_centre`` fits the centre from the release
alone (no privacy cost: post-processing); setting a prior from the data it is then given is
an empirical-Bayes choice, which ``dw.calibrate``'s fixed-prior check refuses.

**Records.** A record is its attribute levels (floats, ``0..levels[a]-1``). Records are
proposed from :math:`p_\theta` by ancestral sampling along the tree, one categorical draw per
clique from a table built once per sweep (:class:`dawrap.PreparedDraw`), and accepted by the
record sampler with the release's density: a record touches one cell per table (the release
is declared sparse), so a record update costs O(number of cliques + number of tables),
whatever the size of the domain.

**Where chains start.** Records are proposed from :math:`p_\theta`, and an empty cell's
theta is of order :math:`\exp(-1/\alpha_C)`: a cell that starts empty is never proposed, whatever
the release says, and the chain is trapped. So by default (``start="release"``) each chain's
records are drawn from a fit of the release: the release redrawn with fresh noise (chains
start apart), clipped at half a record a cell, fitted by iterative proportional fitting on
the junction tree from a random consistent theta (theta stays in the support, nothing is
O(domain)), and ``n`` records drawn from the fit with systematic draws, so that every cell
the fit expects a record in starts occupied (``models/_start.py``).
``start="theta"`` draws them from the chain's starting theta instead.

**Unreleased 3-way interactions.** A clique of three attributes whose three 2-way tables are
released has a 3-way interaction the release does not identify: its counts can move along a
line that keeps every released table fixed, and the record sampler crosses it only slowly.
By default (``ridge_moves=True``) each iteration also draws the position on such lines
exactly, theta integrated out, and then theta given the moved records
(``models/_ridge.py``).

**Cells that empty.** Under a small ``alpha`` a cell a chain empties is drawn at a theta of
order :math:`\exp(-1/\alpha_C)` and then seldom proposed again, however the release reads.
By default (``collapsed_moves="auto"``) each iteration also redraws every record from the
hyper-Dirichlet's predictive given the other records (theta integrated out: an empty cell
keeps the mass :math:`\alpha_C / (\alpha_S + n_{S,-i})`), accepted with the release's density
ratio alone, and then theta given the records (``models/_collapsed.py``).

**Releases.** Neighbouring databases replace one record (n is public, as everywhere in
dawrap): each table has L1 sensitivity 2 and L2 sensitivity :math:`\sqrt2`, so Laplace or
geometric noise of scale ``b`` makes it :math:`2/b`-DP, Gaussian or discrete Gaussian noise of
sd :math:`\sigma` makes it :math:`1/\sigma^2`-zCDP; the budgets add over tables
(``mech.privacy``). The posterior depends only on the noise actually added, so releases made
elsewhere are described by their noise scales:

=====================================================  ======================================
what was run                                           dawrap
=====================================================  ======================================
OpenDP, integer counts + ``make_laplace(scale=s)``     ``Noise("geometric", s)``
OpenDP, integer counts + ``make_gaussian(scale=s)``    ``Noise("discrete_gaussian", s)``
OpenDP, float counts + ``make_laplace(scale=s)``       ``Noise("laplace", s)``
OpenDP, float counts + ``make_gaussian(scale=s)``      ``Noise("gaussian", s)``
AIM, MST (Private-PGM, SmartNoise): measurements       :func:`from_measurements` with the
``(clique, y, sigma)``, Gaussian noise                 ``(clique, sigma)`` pairs; ``s_dp`` is
                                                       the ``y`` concatenated
=====================================================  ======================================

AIM and MST account under add/remove-one neighbours (each table's L2 sensitivity 1, so
:math:`1/(2\sigma^2)`-zCDP a table); ``mech.privacy`` states the replace-one guarantee of the
same noise, :math:`1/\sigma^2`. Tables are flattened in C order over their attributes in the
order listed (the last varies fastest), as ``mbi``'s ``Factor.datavector()`` for a clique
listed in domain order.

Examples
--------
Three attributes, two released tables with different noise:

>>> from dawrap.models import marginals
>>> levels = {"age": 4, "sex": 2, "income": 2}
>>> tables = [("age", "income"), ("sex", "income")]
>>> model = marginals.model(levels, tables)        # prior centred on the release (default)
>>> mech = marginals.mechanism(levels, tables, [marginals.Noise.laplace(0.5),
...                                             marginals.Noise.gaussian(0.1)])
>>> model.structure.cliques                     # (sex, income) lists its separator first
((0, 2), (2, 1))
>>> mech.privacy
{'epsilon': 0.5, 'rho': 0.1, 'rho_total': 0.225}
"""
from __future__ import annotations

import math
import numbers
import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

import dawrap as dw
from dawrap.extend import Move, MoveBuilder

from . import graphical as _graphical, collapsed as _collapsed, ridge as _ridge, start as _start
from .junction_tree import Structure, junction_tree
from .release import MarginalRelease, Noise
from .exact import ExactPosterior, exact_posterior
from .start import release_centre
from .tables import marginal

__all__ = ["model", "mechanism", "laplace", "geometric", "gaussian", "discrete_gaussian",
           "from_measurements", "structure", "release_centre", "Domain", "Noise", "Structure",
           "MarginalRelease", "marginal", "exact_posterior", "ExactPosterior",
           "MAX_CLIQUE_CELLS", "CENTRE_TOLERANCE", "CENTRED_ALPHA_SHARE",
           "auto_alpha"]

#: Largest clique table :func:`structure` accepts by default: each of its cells is a
#: parameter kept at every draw (4 chains x 1000 draws x 10^5 cells = 3.2 GB).
MAX_CLIQUE_CELLS = 100_000
#: How far a ``centre`` table's sum may be from one, and two cliques' margins of their
#: separator from each other (absolute); a centre uniform within it (relative to
#: ``1 / cells``) is BDeu.
CENTRE_TOLERANCE = 1e-6
#: ``alpha="auto"`` under a centre (:func:`auto_alpha`): prior records as this share of the
#: effective records of the release's least informed table.
CENTRED_ALPHA_SHARE = 0.1
# Where a chain's records start (model's ``start``).
_STARTS = ("release", "theta")
# How a record update proposes (model's ``proposal``).
_PROPOSALS = ("ancestral", "attribute")


class Domain(NamedTuple):
    """The attributes: their names, numbers of levels and (optionally) level labels.

    Built from ``levels`` as every function here takes it: a dict ``{name: number of levels}``
    or ``{name: [labels]}``, or a sequence of numbers of levels (names ``x0, x1, ...``).

    Examples
    --------
    >>> from dawrap.models.marginals import Domain
    >>> Domain.of({"sex": ["F", "M"], "age": 3})
    Domain(attributes=('sex', 'age'), levels=(2, 3), labels=(('F', 'M'), None))
    >>> Domain.of([2, 3]).index(("x1",), "tables")
    (1,)
    """

    attributes: tuple
    levels: tuple
    labels: tuple

    @classmethod
    def of(cls, levels) -> "Domain":
        """The domain of ``levels`` (see the class docstring); a ValueError names a bad one.

        Examples
        --------
        >>> from dawrap.models.marginals import Domain
        >>> Domain.of([2, 3]).attributes
        ('x0', 'x1')
        """
        if isinstance(levels, Domain):
            return levels
        items = list(levels.items()) if isinstance(levels, dict) else \
            [(f"x{a}", v) for a, v in enumerate(levels)]
        if not items:
            raise ValueError("levels must describe at least one attribute")
        names, counts, labels = [], [], []
        for name, value in items:
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
                count, label = int(value), None
            elif isinstance(value, (list, tuple)):
                count, label = len(value), tuple(str(v) for v in value)
                if len(set(label)) != count:
                    raise ValueError(f"levels: the labels of attribute {name!r} repeat")
            else:
                raise TypeError(f"levels: attribute {name!r} needs a number of levels or a list "
                                f"of labels, got {value!r}")
            if count < 2:
                raise ValueError(f"levels: attribute {name!r} needs at least 2 levels, got "
                                 f"{count}")
            names.append(str(name))
            counts.append(count)
            labels.append(label)
        if len(set(names)) != len(names):
            raise ValueError(f"levels: attribute names repeat: {names}")
        return cls(tuple(names), tuple(counts), tuple(labels))

    def index(self, attrs, argument: str) -> tuple:
        """Attribute names (or indices) as a tuple of indices; a ValueError names
        ``argument`` for an unknown or repeated attribute.

        Examples
        --------
        >>> from dawrap.models.marginals import Domain
        >>> domain = Domain.of({"sex": 2, "age": 3})
        >>> domain.index(("age", 0), "tables")
        (1, 0)
        >>> domain.index(("age", "age"), "tables")
        Traceback (most recent call last):
        ...
        ValueError: tables: attribute repeated in ('age', 'age')
        """
        if isinstance(attrs, (str, int, np.integer)):
            attrs = (attrs,)
        out = []
        for a in attrs:
            if isinstance(a, str) and a in self.attributes:
                out.append(self.attributes.index(a))
            elif isinstance(a, (int, np.integer)) and not isinstance(a, bool) \
                    and 0 <= a < len(self.levels):
                out.append(int(a))
            else:
                raise ValueError(f"{argument}: unknown attribute {a!r} in {tuple(attrs)!r}; "
                                 f"the attributes are {self.attributes}")
        if not out:
            raise ValueError(f"{argument}: an empty attribute set")
        if len(set(out)) != len(out):
            raise ValueError(f"{argument}: attribute repeated in {tuple(attrs)!r}")
        return tuple(out)


def _tables(domain: Domain, tables, argument: str) -> tuple:
    if isinstance(tables, (str, int)):
        raise TypeError(f"{argument} must be a list of attribute sets, got {tables!r}")
    return tuple(domain.index(t, argument) for t in tables)


def _released(domain: Domain, marginals) -> tuple:
    """The tables a mechanism releases (at least one), as attribute index tuples."""
    tables = _tables(domain, marginals, "marginals")
    if not tables:
        raise ValueError(f"marginals must list at least one table to release (attribute sets "
                         f"of {domain.attributes}), got {marginals!r}")
    return tables


def _clique_limit(value) -> float:
    """``max_clique_cells`` checked: a number >= 1 (``math.inf``: no limit); NaN, which no
    comparison refuses, would silently apply none."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not value >= 1:  # NaN fails too
        raise ValueError(f"max_clique_cells must be a number >= 1 (the most cells a clique "
                         f"may have; math.inf for no limit), got {value!r}")
    return value


def structure(levels, marginals=(), cliques=None, *,
              max_clique_cells: int = MAX_CLIQUE_CELLS, allow_uncovered: bool = False
              ) -> Structure:
    """The junction tree of the model: derived from the released ``marginals``, or from
    ``cliques`` when given (see the module docstring for the rule).

    Parameters
    ----------
    levels : dict or sequence
        The attributes (:class:`Domain`).
    marginals : sequence of attribute sets
        The released tables.
    cliques : sequence of attribute sets, optional
        The structure, instead of the one the tables imply.
    max_clique_cells : int
        Refuse a clique with more cells than this (a number >= 1; ``math.inf``: no limit).
    allow_uncovered : bool
        Accept ``cliques`` that leave a released table outside every clique. The model then
        assumes the conditional independences of ``cliques`` among that table's attributes;
        the table still enters the likelihood, but no theta can reproduce an interaction it
        shows beyond them.

    Returns
    -------
    Structure
        Attribute indices; ``cliques[c]`` lists the separator first.

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> levels = {"a": 2, "b": 3, "c": 2, "d": 2}
    >>> marginals.structure(levels, [("a", "b"), ("b", "c"), ("a", "c"), ("d",)]).cliques
    ((0, 1, 2), (3,))
    >>> chain = [("a", "b"), ("b", "c")]
    >>> marginals.structure(levels, [("a", "c")], cliques=chain)   # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: cliques: no clique contains the released table ('a', 'c')...
    """
    domain = Domain.of(levels)
    max_clique_cells = _clique_limit(max_clique_cells)
    released = _tables(domain, marginals, "marginals")
    given = released if cliques is None else _tables(domain, cliques, "cliques")
    tree = junction_tree(domain.levels, given)
    for q in tree.cliques:
        if tree.cells(q) > max_clique_cells:
            names = tuple(domain.attributes[a] for a in q)
            raise ValueError(
                f"{'cliques' if cliques is not None else 'marginals'}: the junction tree needs "
                f"the clique {names} of {tree.cells(q):,} cells, more than max_clique_cells = "
                f"{max_clique_cells:,}: every cell of a clique is a parameter. Release or "
                f"model fewer attributes together (cliques=...), merge levels, or raise "
                f"max_clique_cells")
    for t in released:
        if tree.covering(t) < 0 and not allow_uncovered:
            names = tuple(domain.attributes[a] for a in t)
            raise ValueError(
                f"cliques: no clique contains the released table {names}, so the model would "
                f"assume conditional independences among its attributes that the table can "
                f"contradict; add a clique containing them, or pass allow_uncovered=True to "
                f"assume them")
    return tree


def _parameter_names(domain: Domain, tree: Structure) -> list:
    names = []
    for c, q in enumerate(tree.cliques):
        name = "p_" + "_".join(re.sub(r"\W", "_", domain.attributes[a]) for a in sorted(q))
        names.append(name if name not in names else f"{name}_{c}")
    return names


def _centre(domain: Domain, tree: Structure, names: list, centre) -> tuple | None:
    """``model(centre=)`` checked (module docstring, **Prior.**): one table per clique, in
    the clique's attribute order, or None for BDeu (None given, or a uniform centre)."""
    if centre is None:
        return None
    k = len(tree.cliques)
    shown = [tuple(domain.attributes[a] for a in q) for q in tree.cliques]
    expected = (f"one table per clique of the model's structure, {shown} (keyed by attribute "
                f"tuple or parameter name {names}, or a list in that order)")
    given = [None] * k
    if isinstance(centre, dict):
        for key, table in centre.items():
            if isinstance(key, str) and key in names:
                c, order = names.index(key), tree.cliques[names.index(key)]
            else:
                try:
                    order = domain.index(key, "centre")
                except (ValueError, TypeError):
                    raise ValueError(f"centre: {key!r} is neither a clique's attributes nor a "
                                     f"parameter name; expected {expected}") from None
                found = [c for c, q in enumerate(tree.cliques) if set(q) == set(order)]
                if not found:
                    raise ValueError(f"centre: {key!r} is not a clique; expected {expected}")
                c = found[0]
            if given[c] is not None:
                raise ValueError(f"centre: the clique {shown[c]} is given twice")
            given[c] = (table, order)
        missing = [shown[c] for c in range(k) if given[c] is None]
        if missing:
            raise ValueError(f"centre: no table for the cliques {missing}; expected {expected}")
    elif isinstance(centre, (list, tuple)):
        if len(centre) != k:
            raise ValueError(f"centre: {len(centre)} tables for {k} cliques; expected "
                             f"{expected}")
        given = [(table, q) for table, q in zip(centre, tree.cliques)]
    else:
        raise ValueError(f"centre must be None (BDeu) or {expected}, got {type(centre)}")
    tables = []
    for c, (table, order) in enumerate(given):
        q = tree.cliques[c]
        shape = tuple(domain.levels[a] for a in order)
        try:
            value = np.array(table, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"centre: the table of clique {shown[c]} is not an array of "
                             f"numbers") from None
        if value.shape != shape:
            raise ValueError(f"centre: the table of clique {shown[c]} has shape {value.shape}, "
                             f"expected {shape} (the levels of "
                             f"{tuple(domain.attributes[a] for a in order)})")
        value = np.transpose(value, [order.index(a) for a in q])    # to the clique's order
        if not np.isfinite(value).all() or (value < 0).any():
            raise ValueError(f"centre: the table of clique {shown[c]} must be finite and "
                             f"non-negative (a distribution)")
        if abs(value.sum() - 1.0) > CENTRE_TOLERANCE:
            raise ValueError(f"centre: the table of clique {shown[c]} sums to "
                             f"{value.sum()!r}, expected 1 (within {CENTRE_TOLERANCE})")
        if (value <= 0).any():
            cell = tuple(int(v) for v in np.argwhere(value <= 0)[0])
            named = dict(zip((domain.attributes[a] for a in q), cell))
            raise ValueError(f"centre: the table of clique {shown[c]} is 0 at the cell {named}: "
                             f"every cell must be positive (its prior concentration, alpha "
                             f"times the centre, would be 0, which no Dirichlet has)")
        tables.append(value / value.sum())
    for c in range(1, k):   # neighbours' margins of their separator agree
        p, sep = tree.parents[c], tree.separators[c]
        if p < 0:
            continue
        mine = np.einsum(tables[c], list(tree.cliques[c]), list(sep))
        theirs = np.einsum(tables[p], list(tree.cliques[p]), list(sep))
        if np.max(np.abs(mine - theirs)) > CENTRE_TOLERANCE:
            raise ValueError(
                f"centre: the tables of cliques {shown[p]} and {shown[c]} give different "
                f"margins of their separator {tuple(domain.attributes[a] for a in sep)} (by "
                f"up to {np.max(np.abs(mine - theirs)):.3g}, more than {CENTRE_TOLERANCE}): "
                f"expected the clique marginals of one distribution (e.g. "
                f"marginals.release_centre)")
    if all(np.max(np.abs(t * t.size - 1.0)) <= CENTRE_TOLERANCE for t in tables):
        return None      # uniform: BDeu, with its own arithmetic (the same draws)
    return tuple(tables)


def auto_alpha(n: int, mechanism: MarginalRelease | None = None) -> float:
    r"""The prior's equivalent sample size ``alpha="auto"`` gives (:func:`model`): 1 for BDeu
    (``mechanism`` None), and under a centre a tenth (:data:`CENTRED_ALPHA_SHARE`) of what
    the release of ``n`` records says about its least informed table, at least 1.

    A table of :math:`K` cells released with noise variance :math:`v` a cell says about a
    typical cell share :math:`\bar q = 1/K` what :math:`n_{\text{eff}} = n / (1 + v / (n
    \bar q (1 - \bar q)))` exact records would (sampling and noise variance added). With
    :math:`a = \max(1, 0.1 \min_t n_{\text{eff}, t})` prior records centred on the release's
    fit, the prior adds a tenth to what the release pins (intervals about 5% narrower than
    the release alone gives), yet a cell the centre expects to hold more than ten effective
    records gets a concentration :math:`a\, q > 1`, so the prior does not favour the sparse
    ends of what the release cannot identify (module docstring, *Why centre*). Where the
    noise dominates, :math:`n_{\text{eff}}` is small and so is the prior: a noisy release's
    fit is not taken for records it does not hold.

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> levels, tables = {"a": 5, "b": 7, "c": 2}, [("a", "b"), ("b", "c")]
    >>> mech = marginals.gaussian(levels, tables, rho=0.5)          # variance 2 a cell
    >>> round(marginals.auto_alpha(10_000, mech), 1), marginals.auto_alpha(10_000)
    (992.8, 1.0)
    >>> marginals.auto_alpha(300, marginals.gaussian(levels, tables, rho=0.001))  # sd 32
    1.0
    """
    if mechanism is None:
        return 1.0
    variance = mechanism.noise_variance()
    effective, start = [], 0
    for size in mechanism.sizes:
        share = 1.0 / size
        noise = float(np.max(variance[start:start + size]))
        effective.append(n / (1.0 + noise / (n * share * (1.0 - share))) if n else 0.0)
        start += size
    return max(1.0, CENTRED_ALPHA_SHARE * min(effective))


def _alpha(alpha) -> float | str:
    if isinstance(alpha, str) and alpha == "auto":
        return alpha
    if not isinstance(alpha, (int, float, np.number)) or isinstance(alpha, bool) \
            or not 0 < float(alpha) < math.inf:
        raise ValueError(f"alpha must be 'auto' or a finite number > 0, got {alpha!r}")
    return float(alpha)


@dw.recipe
def model(levels, marginals=(), *, cliques=None, alpha="auto", centre="release",
          max_clique_cells: int = MAX_CLIQUE_CELLS, allow_uncovered: bool = False,
          start: str = "release", proposal: str = "ancestral", ridge_moves: bool = True,
          collapsed_moves="auto") -> dw.Model:
    r"""The decomposable model of the module docstring, structured to cover ``marginals``.

    Parameters
    ----------
    levels : dict or sequence
        The attributes (:class:`Domain`). A release of :func:`mechanism` over other
        attributes (other names, numbers of levels or order) is refused by ``dw.sample``
        before anything is drawn, naming both.
    marginals : sequence of attribute sets
        The released tables (names or indices).
    cliques, max_clique_cells, allow_uncovered
        As for :func:`structure`.
    alpha : "auto" or float
        The prior's equivalent sample size :math:`a` (its total concentration on every
        clique). ``"auto"`` (the default) is :func:`auto_alpha`: under a centre, a tenth of
        what the release says about its least informed table, in records (set when
        ``dw.sample`` is given the release); 1 for BDeu.
    centre : "release", dict, list or None
        The prior network :math:`q` of the hyper-Dirichlet (module docstring, **Prior.**):
        :math:`\alpha_C(x_C) = a\, q_C(x_C)`. ``"release"`` (the default) is the
        maximum-entropy fit of the release (:func:`release_centre`), made by ``dw.sample``
        from the release it is given, before anything is drawn (``Model.resolve``); until
        then (``draw_prior``, ``simulate``) the model's prior is uniformly centred. None is
        BDeu, :math:`q` uniform. Otherwise one table per clique of ``model.structure``, a
        dict keyed by the clique's attributes (the table's axes in the key's order) or by its
        parameter name (axes as the parameter's), or a list in clique order (axes as the
        parameters'); each finite, every cell positive, summing to one, and neighbouring
        cliques' tables agreeing on their separator (within :data:`CENTRE_TOLERANCE`; a
        ValueError names ``centre``).
    start : {"release", "theta"}
        Where a chain's records start when ``init_x`` is not given: ``"release"`` (the
        default), drawn from a fit of a redraw of the release (IPF on the junction tree,
        every cell positive; the module docstring); ``"theta"``, drawn from the chain's
        starting theta (a release-weighted prior draw, or ``init_theta``), which with a
        small ``alpha`` can leave cells the release needs empty for good.
    proposal : {"ancestral", "attribute"}
        A record update proposes a whole new record from :math:`p_\theta` by ancestral
        sampling (the default), or one attribute, chosen uniformly, from its conditional
        given the record's other attributes (``benchmarks/marginals/start_mixing.py``
        compares them). Either is exact.
    ridge_moves : bool
        Each iteration, also move the records along the unreleased 3-way interaction of
        every clique of three attributes whose 2-way tables are released (an exact Gibbs
        step on the line of counts that keeps every released table fixed, theta integrated
        out; ``models/_ridge.py``). The release given to ``dw.sample`` must then
        be of the model's own ``marginals`` (checked). Nothing to do without such a clique.
    collapsed_moves : "auto" or float
        Steps per record and iteration of the collapsed move
        (``models/_collapsed.py``: each record redrawn from the hyper-Dirichlet's
        predictive given the other records, theta integrated out, then theta drawn afresh),
        which keeps a cell that holds no record from sticking at a theta near zero under a
        small ``alpha`` (``docs/marginals.md``); 0 turns it off. A step scans the residual
        cells of every clique but the root, so ``"auto"`` (default) runs
        ``_collapsed.RATE`` steps per record when those residuals have at most
        ``_collapsed.AUTO_MAX_RESIDUAL`` cells in all, else none. A chain on a dask
        cluster runs without it: with ``"auto"`` after a warning, with a number > 0 it is
        refused.

    Returns
    -------
    dawrap.Model
        One parameter per clique, its marginal table ``p_<attributes>`` with the attributes
        as dimensions (labelled when ``levels`` gives labels); ``record_size`` is the
        number of attributes. It carries ``model.structure`` (:class:`Structure`),
        ``model.domain`` (:class:`Domain`), ``model.alpha`` (a number: 1 for ``"auto"``
        before a release) and ``model.centre`` (``"release"`` before a release, the
        centre's clique tables in clique order, None for BDeu).

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> model = marginals.model({"a": 2, "b": 3, "c": 2}, [("a", "b"), ("b", "c")])
    >>> model
    Model(marginals(a x b, b x c); params {p_a_b: (2, 3), p_b_c: (3, 2)}, record_size=3)
    >>> x = model.simulate({"p_a_b": [[0.5, 0, 0], [0, 0, 0.5]],
    ...                     "p_b_c": [[0, 0.5], [0, 0], [0.5, 0]]}, n=4, seed=1)
    >>> x[:, 1] == 2 * x[:, 0], x[:, 2] == 1 - x[:, 0]       # b = 2a and c = 1 - a
    (array([ True,  True,  True,  True]), array([ True,  True,  True,  True]))
    """
    domain = Domain.of(levels)
    alpha = _alpha(alpha)
    from_release = isinstance(centre, str)
    if from_release and centre != "release":
        raise ValueError(f"centre must be 'release' (the default), None (BDeu), or clique "
                         f"tables (a dict or a list), got {centre!r}")
    if start not in _STARTS:
        raise ValueError(f"start must be one of {_STARTS}, got {start!r}")
    if proposal not in _PROPOSALS:
        raise ValueError(f"proposal must be one of {_PROPOSALS}, got {proposal!r}")
    if collapsed_moves != "auto" and (isinstance(collapsed_moves, bool) or not isinstance(
            collapsed_moves, numbers.Real) or not 0 <= collapsed_moves <= 100):  # NaN too
        raise ValueError(f"marginals.model: collapsed_moves must be 'auto' or a number in "
                         f"[0, 100] (steps per record and iteration), got "
                         f"{collapsed_moves!r}")
    tree = structure(domain, marginals, cliques, max_clique_cells=max_clique_cells,
                     allow_uncovered=allow_uncovered)
    names = _parameter_names(domain, tree)
    centre_tables = None if from_release else _centre(domain, tree, names, centre)
    prior_network = _graphical.Centre.of(centre_tables)
    centred = from_release or centre_tables is not None
    # alpha="auto" under a centre depends on n, and centre="release" on the release: both
    # are resolved by dw.sample (for_release, below); until then the model is its prior at
    # alpha 1, with the centre given or uniform (what draw_prior, simulate and the
    # baselines without a release use).
    resolves = from_release or (centred and alpha == "auto")
    size_a = 1.0 if alpha == "auto" else alpha
    fns = _graphical.functions(tree, size_a, prior_network)
    size = _graphical.layout(tree).size
    draw_theta = fns.draw_theta
    no_records = np.empty((0, len(domain.levels)))

    def draw_prior(rng):
        return draw_theta(rng, np.zeros(size), no_records, np.zeros(size))

    params = {name: tuple(domain.levels[a] for a in q) for name, q in zip(names, tree.cliques)}
    dims = {name: tuple(domain.attributes[a] for a in q) for name, q in zip(names, tree.cliques)}
    coords = {domain.attributes[a]: list(lab) for a, lab in enumerate(domain.labels) if lab}
    shown = ", ".join(" x ".join(domain.attributes[a] for a in sorted(q)) for q in tree.cliques)

    released = _tables(domain, marginals, "marginals")
    ridge = _ridge.make_move(tree, size_a, released, centre=prior_network) \
        if ridge_moves else None
    if collapsed_moves == "auto":
        scanned = int(_graphical.layout(tree).res_size[1:].sum())   # cells a step scans
        collapsed_rate = _collapsed.RATE \
            if scanned <= _collapsed.AUTO_MAX_RESIDUAL else 0.0
    else:
        collapsed_rate = float(collapsed_moves)
    ridge = None if ridge is None else Move(ridge, "marginals ridge moves (marginals.model(..., "
                                            "ridge_moves=False) turns them off)")
    moves = MoveBuilder.in_turn(
        None if ridge is None else MoveBuilder(lambda mechanism: ridge, ridge.name),
        _collapsed.collapsed_move(tree, size_a, collapsed_rate, prior_network))

    def start_database(rng, theta, n, mechanism, s_dp, init_x):
        # given whatever the start: the one hook that sees the mechanism before sampling,
        # where a release over other attributes is refused (as the census model's)
        _start.check_mechanism(out, mechanism)
        if ridge is not None:
            _ridge.check_release(out, mechanism)
        if start == "release":
            return _start.start_database(out, rng, theta, n, mechanism, s_dp,
                                                   init_x)
        return init_x if init_x is not None else out.simulate(theta, n, seed=rng)

    def for_release(mechanism, s_dp, n):
        # centre="release": the same model centred on the release's maximum-entropy fit
        # (release_centre), alpha="auto" set from n; built once per release by dw.sample
        if not isinstance(mechanism, MarginalRelease):
            raise TypeError(f"mechanism: centre='release' and alpha='auto' set the prior from "
                            f"a release of marginals.mechanism (a MarginalRelease), got "
                            f"{type(mechanism).__name__}; give centre=None (BDeu) or clique "
                            f"tables, and a number for alpha")
        if from_release:   # release_centre refuses a release over other attributes
            fitted = release_centre(out, mechanism, s_dp)
        else:
            _start.check_mechanism(out, mechanism)
            fitted = centre
        return model(levels, marginals, cliques=cliques,
                     alpha=auto_alpha(n, mechanism) if alpha == "auto" else alpha,
                     centre=fitted, max_clique_cells=max_clique_cells,
                     allow_uncovered=allow_uncovered, start=start, proposal=proposal,
                     ridge_moves=ridge_moves, collapsed_moves=collapsed_moves)

    out = dw.Model(params=params, record_size=len(domain.levels),
                   draw_record=fns.draw_record, draw_theta=draw_theta,
                   draw_prior=draw_prior, model_stat=fns.clique_counts, stat_size=size,
                   prepared=dw.PreparedDraw(fns.prepare, fns.draw_from_table),
                   theta_support=fns.theta_support, record_support=fns.record_support,
                   name=f"marginals({shown})", dims=dims, coords=coords or None,
                   start_database=start_database, records_move=moves,
                   propose_record=fns.propose_attribute if proposal == "attribute"
                   else None, for_release=for_release if resolves else None)
    out.structure, out.domain, out.alpha = tree, domain, size_a
    out.centre = "release" if from_release else centre_tables
    out.released = released
    return out


def _noises(noise, count: int) -> tuple:
    items = [noise] * count if isinstance(noise, Noise) else list(noise)
    if len(items) != count or not all(isinstance(n, Noise) for n in items):
        raise ValueError(f"noise must be one Noise or one per table ({count}), got {noise!r}")
    return tuple(items)


@dw.recipe
def mechanism(levels, marginals, noise) -> MarginalRelease:
    """The release of the ``marginals`` tables, table ``m`` with noise ``noise[m]``.

    Parameters
    ----------
    levels : dict or sequence
        The attributes (:class:`Domain`).
    marginals : sequence of attribute sets
        The tables, each flattened in C order over its attributes in the order listed; the
        release is their concatenation.
    noise : Noise or sequence of Noise
        One for every table, or one per table.

    Returns
    -------
    MarginalRelease

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> mech = marginals.mechanism([2, 2], [(0,), (0, 1)], marginals.Noise("geometric", 2.0))
    >>> mech.total([[0, 1], [1, 1], [1, 0]])                 # x0: 1, 2; (x0, x1): 0 1 1 1
    array([1., 2., 0., 1., 1., 1.])
    >>> mech.privacy
    {'epsilon': 2.0}
    """
    domain = Domain.of(levels)
    tables = _released(domain, marginals)
    return MarginalRelease(domain.levels, tables, _noises(noise, len(tables)),
                           domain.attributes)


def _every_table(levels, marginals, budget, name: str, noise) -> MarginalRelease:
    """:func:`mechanism` with noise ``noise(b)`` on each table, ``b`` its budget: ``budget``
    is one value for every table or one per table (a ValueError names ``name``)."""
    domain = Domain.of(levels)
    tables = _released(domain, marginals)
    values = np.broadcast_to(np.asarray(budget, dtype=float), (len(tables),)) \
        if np.ndim(budget) == 0 else np.asarray(budget, dtype=float)
    if values.shape != (len(tables),):
        raise ValueError(f"{name} must be one value or one per table ({len(tables)}), got "
                         f"{budget!r}")
    return mechanism(domain, tables, [noise(b) for b in list(values)])


@dw.recipe
def laplace(levels, marginals, epsilon) -> MarginalRelease:
    """The :class:`MarginalRelease` of every table with Laplace noise, table ``m``
    ``epsilon[m]``-DP (scale ``2/epsilon``; one value applies to every table).

    Parameters
    ----------
    levels, marginals
        As for :func:`mechanism`.
    epsilon : float or sequence of float
        The budget of each table; the release is ``sum(epsilon)``-DP.

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> marginals.laplace([2, 3], [(0,), (1,)], epsilon=0.5).privacy
    {'epsilon': 1.0}
    """
    return _every_table(levels, marginals, epsilon, "epsilon", Noise.laplace)


@dw.recipe
def geometric(levels, marginals, epsilon) -> MarginalRelease:
    """Every table with two-sided geometric noise, table ``m`` ``epsilon[m]``-DP: the
    release of :func:`laplace` (the same arguments) in integers, which ``release(x,
    secure=True)`` publishes with exact noise.

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> mech = marginals.geometric([2, 3], [(0, 1)], epsilon=1.0)
    >>> s_dp = mech.release([[0, 2], [1, 1]], secure=True)       # for publication
    >>> s_dp.shape, bool((s_dp == s_dp.round()).all())
    ((6,), True)
    """
    return _every_table(levels, marginals, epsilon, "epsilon", Noise.geometric)


@dw.recipe
def gaussian(levels, marginals, rho) -> MarginalRelease:
    """Every table with Gaussian noise, table ``m`` ``rho[m]``-zCDP (sigma ``1/sqrt(rho)``):
    ``rho`` as ``epsilon`` of :func:`laplace`, one value or one per table, the release
    ``sum(rho)``-zCDP.

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> mech = marginals.gaussian([2, 3], [(0,), (0, 1)], rho=[0.5, 0.25])
    >>> mech.privacy, mech.noise_variance()[[0, 2]]           # sigma^2 = 1 / rho
    ({'rho': 0.75}, array([2., 4.]))
    """
    return _every_table(levels, marginals, rho, "rho", Noise.gaussian)


@dw.recipe
def discrete_gaussian(levels, marginals, rho) -> MarginalRelease:
    """Every table with discrete Gaussian noise, table ``m`` ``rho[m]``-zCDP: the release of
    :func:`gaussian` (the same arguments) in integers, which ``release(x, secure=True)``
    publishes with exact noise.

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> marginals.discrete_gaussian([2, 2], [(0, 1)], rho=1.0).privacy
    {'rho': 1.0}
    """
    return _every_table(levels, marginals, rho, "rho", Noise.discrete_gaussian)


@dw.recipe
def from_measurements(levels, measurements, kind: str = "gaussian") -> MarginalRelease:
    """The release AIM or MST made: their measurements ``(clique, sigma)`` (the noisy
    vector ``y`` of each, concatenated, is ``s_dp``).

    Parameters
    ----------
    levels : dict or sequence
        The attributes (:class:`Domain`).
    measurements : sequence of (attribute set, float)
        Each measured table and its noise's sd (or scale, for ``kind`` ``"laplace"``).
    kind : str
        The noise: ``"gaussian"`` for AIM and MST.

    Returns
    -------
    MarginalRelease

    Examples
    --------
    MST's three kinds of measurement on two attributes, sigma 10:

    >>> from dawrap.models import marginals
    >>> mech = marginals.from_measurements({"a": 2, "b": 3},
    ...                                    [(("a",), 10.0), (("b",), 10.0), (("a", "b"), 10.0)])
    >>> mech.size, round(mech.privacy["rho"], 12)             # replace-one: 3 / sigma^2
    (11, 0.03)
    """
    if isinstance(measurements, (str, bytes, dict)) or not isinstance(
            measurements, Sequence) or not measurements:
        raise ValueError(f"measurements must be a non-empty list of (attribute set, sigma) "
                         f"pairs, one per measured table, got {measurements!r}")
    for k, pair in enumerate(measurements):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(f"measurements[{k}] must be a pair (attribute set, sigma), e.g. "
                             f"(('a', 'b'), 10.0), got {pair!r}")
    pairs = [(attrs, Noise(kind, scale)) for attrs, scale in measurements]
    return mechanism(levels, [a for a, _ in pairs], [n for _, n in pairs])
