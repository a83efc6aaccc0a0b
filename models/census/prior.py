r"""The census model's prior (see :mod:`dawrap.models.census`): its settings as one record
(:class:`Prior`), where each of its parameters lies in the flat theta (:class:`ThetaLayout`)
and a draw of theta from it (:func:`draw_prior`). The theta step
(:mod:`dawrap.models.census.kernel`), the collapsed move
(:mod:`dawrap.models.census.collapsed`) and the model read theta through the one layout.

theta is, in order: the finest prior level's ``p`` (units x cells), each coarser level's
``p`` up to the top, ``log_alpha`` (cells; unless fixed), ``log_kappa`` (one per prior level
below the top) and ``share`` (finest units; when their totals are latent).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Prior", "ThetaLayout", "theta_layout", "draw_prior", "dirichlet_rows"]


class Prior(NamedTuple):
    r"""The settings of the census prior (:func:`dawrap.models.census.model`).

    Attributes
    ----------
    units : tuple of int
        The units of each prior level, coarsest first.
    parents : tuple
        ``parents[l]``: the parent (a unit of level ``l - 1``) of each unit of level ``l``;
        ``parents[0]`` is None.
    cells : int
        Cells of the cross-classification.
    alpha : ndarray or None
        The fixed Dirichlet parameters of the top level, or None: :math:`\alpha` learned,
        :math:`\alpha_c \sim \mathrm{Gamma}(a_0, b_0)`.
    a0, b0 : float
        The Gamma hyperprior of a learned :math:`\alpha` (shape, rate).
    kappa : (float, float)
        Shape and rate of the Gamma prior of each level's concentration.
    groups : (ndarray, ndarray) or None
        The finest units of each unit whose total is public (CSR: starts, finest units), or
        None when every finest unit's total is public.
    share_prior : float
        The Dirichlet parameter of the finest units' shares within their public unit.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models.census.prior import Prior, theta_layout
    >>> prior = Prior((2, 3), (None, np.array([0, 0, 1])), 4, None, 2.0, 1.0, (1.0, 0.01),
    ...               None, 1.0)
    >>> theta_layout(prior).kappa_off        # p (3 x 4), p of the top (2 x 4), log_alpha (4)
    24
    """
    units: tuple
    parents: tuple
    cells: int
    alpha: np.ndarray | None
    a0: float
    b0: float
    kappa: tuple
    groups: tuple | None
    share_prior: float


class ThetaLayout(NamedTuple):
    """Where the prior's parameters lie in the flat theta (module docstring).

    Attributes
    ----------
    level_off : ndarray of int64
        Where each prior level's ``p`` starts (the finest first in theta, so
        ``level_off[-1]`` is 0).
    alpha_off : int
        Where ``log_alpha`` starts (when learned): after every level's ``p``.
    kappa_off : int
        Where ``log_kappa`` starts: level ``l``'s concentration at ``kappa_off + l - 1``.
    share_off : int
        Where the finest units' shares start (when latent).
    fine : int
        The size of the finest prior level's ``p``.
    """
    level_off: np.ndarray
    alpha_off: int
    kappa_off: int
    share_off: int
    fine: int


def theta_layout(prior: Prior) -> ThetaLayout:
    """The :class:`ThetaLayout` of ``prior``'s theta (example: :class:`Prior`)."""
    levels, cells = len(prior.units), prior.cells
    level_off = np.zeros(levels, np.int64)  # theta order: the finest level's p first
    for l in range(levels - 2, -1, -1):
        level_off[l] = level_off[l + 1] + prior.units[l + 1] * cells
    alpha_off = int(level_off[0] + prior.units[0] * cells)
    kappa_off = alpha_off + (cells if prior.alpha is None else 0)
    return ThetaLayout(level_off, alpha_off, kappa_off, kappa_off + levels - 1,
                       int(prior.units[-1] * cells))


def dirichlet_rows(rng, concentration: np.ndarray) -> np.ndarray:
    """One Dirichlet draw per row, in log space (a tiny parameter gives 0, never NaN)."""
    conc = np.maximum(concentration, 1e-300)
    log_g = np.log(rng.gamma(conc + 1.0)) + np.log(rng.random(conc.shape)) / conc
    log_g -= log_g.max(axis=-1, keepdims=True)
    g = np.exp(log_g)
    return g / g.sum(axis=-1, keepdims=True)


def draw_prior(rng, prior: Prior) -> np.ndarray:
    """A flat theta from the prior, in the order of the model's parameters.

    Parameters
    ----------
    rng : numpy.random.Generator
    prior : Prior

    Returns
    -------
    ndarray
        theta (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models.census.prior import Prior, draw_prior
    >>> prior = Prior((1, 2), (None, np.array([0, 0])), 3, None, 2.0, 1.0, (1.0, 0.01),
    ...               None, 1.0)
    >>> theta = draw_prior(np.random.default_rng(0), prior)
    >>> theta.shape, theta[:6].reshape(2, 3).sum(axis=1).round(12)   # p, p_top, alpha, kappa
    ((13,), array([1., 1.]))
    """
    units, cells, alpha = prior.units, prior.cells, prior.alpha
    top = rng.gamma(prior.a0, 1.0 / prior.b0, cells) if alpha is None else alpha
    p = [dirichlet_rows(rng, np.broadcast_to(top, (units[0], cells)))]
    log_kappa = np.log(rng.gamma(prior.kappa[0], 1.0 / prior.kappa[1], len(units) - 1))
    for l in range(1, len(units)):
        p.append(dirichlet_rows(rng, np.exp(log_kappa[l - 1]) * p[-1][prior.parents[l]]))
    parts = [q.ravel() for q in reversed(p)]  # the finest level first
    if alpha is None:
        parts.append(np.log(top))
    parts.append(log_kappa)
    if prior.groups is not None:
        start, members = prior.groups
        share = np.empty(members.shape[0])  # every finest unit lies in one group
        for g in range(len(start) - 1):
            share[members[start[g]:start[g + 1]]] = dirichlet_rows(
                rng, np.full(start[g + 1] - start[g], prior.share_prior))
        parts.append(share)
    return np.concatenate(parts)
