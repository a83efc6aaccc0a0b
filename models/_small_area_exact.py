"""Exact posterior of the small-area model by enumeration (see :mod:`dawrap.models.small_area`):
every area's count vector, and the hyperparameters on a grid."""
from __future__ import annotations

import itertools

import numpy as np

from ._shared import compositions

__all__ = ["exact_posterior"]


def exact_posterior(mechanism, s_dp, sizes, categories: int, a0: float = 2.0, b0: float = 1.0,
                    grid: int = 60, span=(-5.0, 4.0)):
    r"""The exact posterior of ``p[0, 0]`` and of ``log_alpha`` for small problems.

    .. math:: p(N, \eta \mid s_{dp}) \propto \pi(\eta) \prod_a \mathrm{DirMult}(N_a; n_a,
              e^{\eta})\, g(s_{dp}, T(N)),

    summed over every table :math:`N` of counts (one count vector per area) and over a
    ``grid`` x ... x ``grid`` product grid of :math:`\eta = \log\alpha` on ``span`` (the
    midpoint rule: the integrand is smooth and negligible at the ends for the default
    Gamma(2, 1) hyperprior). Returns ``(beta_mixture, eta_mean, eta_sd)``: a
    :class:`dawrap.reference.BetaMixture` for ``p[0, 0]`` and the posterior mean and sd of
    each ``log_alpha``. Cost: (tables x grid^categories); keep everything small.

    Parameters
    ----------
    mechanism : dawrap.Mechanism
        The release's mechanism (:func:`dawrap.models.small_area.discrete_gaussian`).
    s_dp : array_like
        The release.
    sizes : sequence of int
        Records per area.
    categories : int
        Number of categories.
    a0, b0 : float
        The Gamma hyperprior's shape and rate.
    grid : int
        Grid points per ``log_alpha`` coordinate.
    span : (float, float)
        The grid's range of each ``log_alpha``.

    Returns
    -------
    (dawrap.reference.BetaMixture, ndarray, ndarray)
        The posterior of ``p[0, 0]``, and the posterior mean and sd of each ``log_alpha``.

    Examples
    --------
    >>> from dawrap.models import small_area
    >>> mech = small_area.discrete_gaussian([0, 0], categories=2, rho=(0.5, 0.5))
    >>> p00, eta_mean, eta_sd = small_area.exact_posterior(mech, [1, 1, 0, 1, 1, 2],
    ...                                                    sizes=[2, 1], categories=2, grid=20)
    >>> bool(0.0 < p00.mean() < 1.0), eta_mean.shape
    (True, (2,))
    """
    from scipy import special

    from dawrap.reference import BetaMixture, normalise_log_weights, relative_log_g

    sizes = [int(s) for s in sizes]
    c = int(categories)
    per_area = [compositions(n, c).astype(float) for n in sizes]
    tables = list(itertools.product(*per_area))
    counts = np.array([np.concatenate(t) for t in tables])  # (tables, areas * c)
    # The release's totals: area counts, then region counts (from the statistic itself).
    areas = np.repeat(np.arange(len(sizes)), sizes).astype(float)
    totals = np.array([mechanism.total(np.column_stack([areas, _categories(t, sizes)]))
                       for t in tables])
    log_g = relative_log_g(mechanism, s_dp, totals)
    eta_1d = np.linspace(*span, grid + 1)
    eta_1d = 0.5 * (eta_1d[1:] + eta_1d[:-1])
    eta = np.array(list(itertools.product(eta_1d, repeat=c)))  # (grid^c, c)
    alpha = np.exp(eta)
    log_prior = (a0 * eta - b0 * alpha).sum(1)
    a_sum = alpha.sum(1)
    log_w = log_prior[:, None] + log_g[None, :]
    for a, n in enumerate(sizes):
        n_a = counts[:, a * c:(a + 1) * c]  # (tables, c)
        log_w += (special.gammaln(a_sum)[:, None] - special.gammaln(a_sum + n)[:, None]
                  + (special.gammaln(alpha[:, None, :] + n_a[None]) - special.gammaln(
                      alpha[:, None, :]) - special.gammaln(n_a[None] + 1)).sum(-1)
                  + special.gammaln(n + 1))
    w = normalise_log_weights(log_w.ravel()).reshape(log_w.shape)
    a00 = alpha[:, 0][:, None] + counts[None, :, 0]
    b00 = (a_sum - alpha[:, 0])[:, None] + sizes[0] - counts[None, :, 0]
    mixture = BetaMixture(w.ravel(), np.broadcast_to(a00, w.shape).ravel(),
                          np.broadcast_to(b00, w.shape).ravel())
    eta_w = w.sum(1)
    mean = eta_w @ eta
    sd = np.sqrt(np.maximum(eta_w @ eta ** 2 - mean ** 2, 0.0))
    return mixture, mean, sd


def _categories(table, sizes) -> np.ndarray:
    """One database's categories with the given per-area counts (records ordered by area)."""
    return np.concatenate([np.repeat(np.arange(len(n_a)), n_a.astype(int)) for n_a in table])
