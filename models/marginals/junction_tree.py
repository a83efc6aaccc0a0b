r"""The structure of a decomposable model: a junction tree whose cliques cover given attribute
sets (see :mod:`dawrap.models.marginals`).

The rule. The *interaction graph* joins two attributes when they appear together in one of
the given sets (the released marginals, or the user's cliques). It is made chordal by
eliminating its attributes one at a time in a greedy *min-fill* order (Kjaerulff 1990;
Koller & Friedman 2009, Sec. 9.4.3): at each step the attribute whose elimination adds the
fewest edges between its remaining neighbours, ties broken by the smallest table over it and
its neighbours, then by the attribute's position. Each elimination makes the clique
{attribute} + {its remaining neighbours}; the maximal ones are the cliques of the chordal
graph, and every given set lies inside one of them (its attributes are pairwise joined).
The junction tree is a maximum-weight spanning tree of the cliques, weighted by the size of
their intersections (Jensen & Jensen 1994), which has the running-intersection property for
a chordal graph; attributes in no given set become cliques of their own (a forest, joined by
empty separators). The cliques are listed root first, each after its parent: the order of
ancestral sampling.
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

__all__ = ["Structure", "junction_tree"]


class Structure(NamedTuple):
    """A junction tree over attributes ``0..d-1`` with ``levels[a]`` levels each.

    ``cliques[c]`` lists clique ``c``'s attributes, its separator (the attributes it shares
    with its parent ``parents[c]``, ``-1`` for a root) first, in ascending order, then the
    others (its *residual*) in ascending order; ``separators[c]`` is that first part. Every
    parent comes before its children.

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> tree = marginals.structure([2, 3, 2], [(0, 1), (1, 2)])
    >>> tree.cliques, tree.separators, tree.parents
    (((0, 1), (1, 2)), ((), (1,)), (-1, 0))
    """

    levels: tuple
    cliques: tuple
    separators: tuple
    parents: tuple

    def residual(self, c: int) -> tuple:
        """Clique ``c``'s attributes outside its separator.

        Examples
        --------
        >>> from dawrap.models import marginals
        >>> marginals.structure([2, 3, 2], [(0, 1), (1, 2)]).residual(1)
        (2,)
        """
        return self.cliques[c][len(self.separators[c]):]

    def cells(self, attrs) -> int:
        """The number of cells of a table over ``attrs``.

        Examples
        --------
        >>> from dawrap.models import marginals
        >>> marginals.structure([2, 3, 2], [(0, 1), (1, 2)]).cells((0, 1))
        6
        """
        return math.prod(self.levels[a] for a in attrs)

    def covering(self, attrs) -> int:
        """The first clique containing every attribute of ``attrs``, or -1.

        Examples
        --------
        >>> from dawrap.models import marginals
        >>> tree = marginals.structure([2, 3, 2], [(0, 1), (1, 2)])
        >>> tree.covering((2, 1)), tree.covering((0, 2))
        (1, -1)
        """
        want = set(attrs)
        return next((c for c, q in enumerate(self.cliques) if want <= set(q)), -1)


def _min_fill_cliques(levels: tuple, edges: set) -> list:
    """The maximal elimination cliques of the greedy min-fill order (module docstring)."""
    neighbours = {a: set() for a in range(len(levels))}
    for a, b in edges:
        neighbours[a].add(b)
        neighbours[b].add(a)
    remaining, cliques = set(neighbours), []
    while remaining:
        def cost(a):
            near = neighbours[a] & remaining
            fill = sum(1 for u, v in itertools.combinations(sorted(near), 2)
                       if v not in neighbours[u])
            return fill, math.prod(levels[b] for b in near | {a}), a
        a = min(remaining, key=cost)
        near = neighbours[a] & remaining
        for u, v in itertools.combinations(near, 2):
            neighbours[u].add(v)
            neighbours[v].add(u)
        cliques.append(frozenset(near | {a}))
        remaining.remove(a)
    maximal = [q for q in cliques if not any(q < r for r in cliques)]
    return sorted(set(maximal), key=lambda q: (min(q), sorted(q)))


def junction_tree(levels, sets) -> Structure:
    """The junction tree of the module docstring's rule for attribute subsets ``sets``.

    Parameters
    ----------
    levels : tuple of int
        Levels per attribute.
    sets : sequence of tuple of int
        Attribute subsets every one of which some clique must contain.

    Returns
    -------
    Structure

    Examples
    --------
    The three two-way marginals of a cycle a - b - c - a close a triangle; a chain does not:

    >>> from dawrap.models.marginals.junction_tree import junction_tree
    >>> junction_tree((2, 2, 2), [(0, 1), (1, 2), (0, 2)]).cliques
    ((0, 1, 2),)
    >>> tree = junction_tree((2, 3, 2, 4), [(0, 1), (1, 2)])
    >>> tree.cliques, tree.separators, tree.parents
    (((0, 1), (1, 2), (3,)), ((), (1,), ()), (-1, 0, -1))
    """
    levels = tuple(levels)
    edges = {(min(a, b), max(a, b)) for s in sets for a, b in itertools.combinations(s, 2)}
    cliques = _min_fill_cliques(levels, edges)
    # Kruskal on the intersections (largest first, then the lower clique indices): a maximum
    # spanning forest; cliques that share nothing stay apart (empty separators).
    pairs = sorted(((len(p & q), i, j) for (i, p), (j, q) in
                    itertools.combinations(enumerate(cliques), 2) if p & q),
                   key=lambda t: (-t[0], t[1], t[2]))
    component = list(range(len(cliques)))

    def find(i):
        while component[i] != i:
            component[i] = component[component[i]]
            i = component[i]
        return i

    adjacent = {i: [] for i in range(len(cliques))}
    for _, i, j in pairs:
        if find(i) != find(j):
            component[find(i)] = find(j)
            adjacent[i].append(j)
            adjacent[j].append(i)
    # Root each tree at its lowest clique; list cliques breadth first, parents before children.
    order, parent, seen = [], {}, set()
    for root in range(len(cliques)):
        if root in seen:
            continue
        seen.add(root)
        parent[root], queue = -1, [root]
        while queue:
            i = queue.pop(0)
            order.append(i)
            for j in sorted(adjacent[i]):
                if j not in seen:
                    seen.add(j)
                    parent[j] = i
                    queue.append(j)
    position = {c: k for k, c in enumerate(order)}
    out_cliques, out_seps, out_parents = [], [], []
    for c in order:
        sep = sorted(cliques[c] & cliques[parent[c]]) if parent[c] >= 0 else []
        out_cliques.append(tuple(sep) + tuple(sorted(cliques[c] - set(sep))))
        out_seps.append(tuple(sep))
        out_parents.append(position[parent[c]] if parent[c] >= 0 else -1)
    return Structure(levels, tuple(out_cliques), tuple(out_seps), tuple(out_parents))
