"""Marginal tables of the decomposable model from its clique marginals (post-processing of
theta draws; see :func:`dawrap.models.marginals.marginal`)."""
from __future__ import annotations

import string

import numpy as np

from . import graphical as _graphical

__all__ = ["marginal"]


def _theta_draws(source, model) -> np.ndarray:
    """``(..., theta_size)`` draws from an array or from a result of ``dw.sample``."""
    if isinstance(source, np.ndarray):
        return source
    from dawrap import diagnostics

    post = diagnostics.group(source, "posterior")
    lead = post[next(iter(model.params))].shape[:2]
    return np.concatenate([post[name].values.reshape(lead + (-1,)) for name in model.params],
                          axis=-1)


def _factors(theta: np.ndarray, tree, keep: set):
    """The Bayesian-network factors (root marginals, then each clique's conditional given its
    separator) of the smallest subtree that still holds every attribute in ``keep``: a leaf
    clique whose residual attributes are all outside ``keep`` is summed out exactly (they
    appear in no other clique), repeatedly."""
    lay = _graphical.layout(tree)
    k = len(tree.cliques)
    alive = set(range(k))
    changed = True
    while changed:
        changed = False
        for c in sorted(alive, reverse=True):
            leaf = not any(tree.parents[j] == c for j in alive)
            # a root's table sums to one: it goes too when it keeps nothing and has no child
            if leaf and not set(tree.residual(c)) & keep:
                alive.remove(c)
                changed = True
    lead = theta.shape[:-1]
    factors = []
    for c in sorted(alive):
        q = tree.cliques[c]
        table = theta[..., lay.offset[c]:lay.offset[c + 1]].reshape(
            lead + (int(lay.sep_size[c]), int(lay.res_size[c])))
        if tree.parents[c] >= 0:  # the conditional p(x_R | x_S); 0 where p_S = 0
            total = table.sum(axis=-1, keepdims=True)
            table = np.divide(table, total, out=np.zeros_like(table), where=total > 0)
        factors.append((table.reshape(lead + tuple(tree.levels[a] for a in q)), q))
    return factors


def marginal(source, model, attrs) -> np.ndarray:
    """Draws of the marginal table of ``attrs`` from draws of theta (clique marginals).

    Within one clique it is that clique's table summed; across cliques it is computed from
    the tree's factors by variable elimination (``numpy.einsum``), never over the domain.

    Parameters
    ----------
    source : result of dawrap.sample, or ndarray of shape (..., theta_size)
        The draws of theta.
    model : dawrap.Model
        A model of :func:`dawrap.models.marginals.model`.
    attrs : sequence of attribute names or indices
        The table's attributes, in the order of its axes.

    Returns
    -------
    ndarray of shape (..., levels of attrs)
        One table per draw (``(chain, draw, ...)`` for a result).

    Examples
    --------
    The marginal of ``a x c``, two attributes that share no clique, from one theta:

    >>> import numpy as np
    >>> from dawrap.models import marginals
    >>> model = marginals.model({"a": 2, "b": 2, "c": 2}, [("a", "b"), ("b", "c")])
    >>> theta = model.pack({"p_a_b": [[0.4, 0.1], [0.1, 0.4]],     # a and b agree mostly
    ...                     "p_b_c": [[0.5, 0.0], [0.0, 0.5]]})    # c = b
    >>> marginals.marginal(theta, model, ("a", "c"))
    array([[0.4, 0.1],
           [0.1, 0.4]])
    """
    tree = model.structure
    want = model.domain.index(attrs, "attrs")
    theta = _theta_draws(source, model)
    c = tree.covering(want)
    letters = string.ascii_letters
    if len(tree.levels) > len(letters) - 1:
        raise ValueError("marginal: more attributes than einsum can name")
    if c >= 0:  # one clique holds them: sum its table
        lay = _graphical.layout(tree)
        q = tree.cliques[c]
        table = theta[..., lay.offset[c]:lay.offset[c + 1]].reshape(
            theta.shape[:-1] + tuple(tree.levels[a] for a in q))
        spec = "..." + "".join(letters[a] for a in q) + "->..." + \
            "".join(letters[a] for a in want)
        return np.einsum(spec, table) + 0.0
    factors = _factors(theta, tree, set(want))
    spec = ",".join("..." + "".join(letters[a] for a in q) for _, q in factors)
    spec += "->..." + "".join(letters[a] for a in want)
    return np.einsum(spec, *(f for f, _ in factors), optimize="greedy")
