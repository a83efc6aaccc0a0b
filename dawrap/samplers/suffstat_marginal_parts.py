"""Pieces of the sufficient-statistic sampler's marginal kernel
(:mod:`dawrap.samplers.suffstat_marginal`), compiled: the release's CLT moments and its
likelihood with the statistic integrated out, theta's part of the conjugate likelihood, the
statistic's draw given theta, and the warm-up summaries that set up the independence step.

Examples
--------
>>> from dawrap.samplers.suffstat_marginal_parts import PSEUDO_STATS
>>> PSEUDO_STATS  # state.pseudo holds 4 scalars, then 3 d summaries
4
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ..model.family import _as_vector
from . import suffstat
from .suffstat import region_moments
from .suffstat_densities import (cholesky, cov_on_support, dot, draw_normal_laplace,
                                 log_normal_density, log_normal_laplace, matvec, spd_solve,
                                 tmatvec)

__all__ = ["release_moments", "release_log_likelihood", "log_conjugate_likelihood",
           "all_finite", "pseudo_factor", "draw_released_statistic", "freeze", "summarise",
           "PSEUDO_LOG_N", "PSEUDO_ADAPTED", "PSEUDO_SUMMARISED", "PSEUDO_INDEPENDENT",
           "PSEUDO_STATS"]

# The slots the templates below read: the family's functions, bound per family with the
# other suffstat templates (dawrap.samplers.suffstat.function_names).
MEAN_COV = suffstat.MEAN_COV
LIKELIHOOD_NATURAL = suffstat.LIKELIHOOD_NATURAL
LOG_PARTITION = suffstat.LOG_PARTITION


def release_moments(theta, inputs):
    """Mean (d,) and covariance (d, d) of the released statistic under the CLT: ``n mu`` and
    ``n Sigma``, or the centre part's random-sum CLT (Prop. 1) for a truncated release."""
    if inputs.truncated:
        n = inputs.n
        q, mean_hat, var_hat = region_moments(theta, inputs.lower, inputs.upper,
                                               inputs.discrete)
        return (np.array([n * q * mean_hat]),
                np.array([[n * q * var_hat + n * q * (1.0 - q) * mean_hat ** 2]]))
    mu, Sigma = MEAN_COV(theta)
    return inputs.n * mu, inputs.n * Sigma


@numba.njit(nogil=True, cache=True)
def release_log_likelihood(m, V, inputs, noise_var):
    """log of the release's density given the statistic ~ N(m, V), the statistic integrated
    out: in closed form for one coordinate; for a vector Laplace release given the current
    noise variances ``noise_var`` (the Gaussian mechanism's fixed ones otherwise)."""
    d = m.shape[0]
    y = inputs.y
    if d == 1 and inputs.laplace_scale > 0.0:
        return log_normal_laplace(m[0] - y[0], V[0, 0], inputs.laplace_scale)
    C = V.copy()
    for j in range(d):
        C[j, j] += noise_var[j]
    return log_normal_density(y, m, C)


def log_conjugate_likelihood(theta, u, pseudo_n):
    """eta(theta)^T u - n~ A(eta(theta)): theta's part of the conjugate posterior given the
    total ``u`` of ``pseudo_n`` records (the prior is the rest, and cancels)."""
    eta = _as_vector(LIKELIHOOD_NATURAL(theta))
    return dot(eta, u) - pseudo_n * LOG_PARTITION(eta)


@numba.njit(nogil=True, cache=True)
def all_finite(theta):
    for j in range(theta.shape[0]):
        if not np.isfinite(theta[j]):
            return False
    return True


@numba.njit(nogil=True, cache=True)
def pseudo_factor(basis, pseudo_n, Sigma):
    """Cholesky factor of the pseudo-total's covariance on the support, and whether it
    exists (it does not at a theta on the boundary of the parameter space)."""
    return cholesky(pseudo_n * cov_on_support(basis, Sigma))


# Layout of SuffstatState.pseudo.
PSEUDO_LOG_N, PSEUDO_ADAPTED, PSEUDO_SUMMARISED, PSEUDO_INDEPENDENT = 0, 1, 2, 3
PSEUDO_STATS = 4


@numba.njit(nogil=True, cache=True)
def freeze(state):
    r"""End of warm-up: the independence move's pseudo-sample size from the summaries of the
    second half of warm-up. The conjugate update given :math:`\tilde n` records of mean
    :math:`\bar\mu` has spread about :math:`\Sigma/\tilde n` in :math:`\mu`, so
    :math:`\tilde n = \bar\Sigma_{jj}/\mathrm{Var}(\mu_j)` (averaged over coordinates)
    matches the posterior's; ``independence_width`` of it widens the proposal. Off (0)
    when fewer than 20 draws were summarised or mu did not move."""
    p = state.pseudo
    d = (p.shape[0] - PSEUDO_STATS) // 3
    count = p[PSEUDO_SUMMARISED]
    p[PSEUDO_INDEPENDENT] = 0.0
    if count < 20.0:
        return
    total, used = 0.0, 0
    for j in range(d):
        var = p[PSEUDO_STATS + d + j] / (count - 1.0)
        sigma = p[PSEUDO_STATS + 2 * d + j]
        if var > 0.0 and sigma > 0.0:
            total += sigma / var
            used += 1
    if used > 0:
        p[PSEUDO_INDEPENDENT] = total / used


@numba.njit(nogil=True, cache=True)
def summarise(state, mu, Sigma):
    """Welford's running mean and squared deviations of mu(theta), mean of diag Sigma."""
    p = state.pseudo
    d = mu.shape[0]
    p[PSEUDO_SUMMARISED] += 1.0
    count = p[PSEUDO_SUMMARISED]
    for j in range(d):
        before = mu[j] - p[PSEUDO_STATS + j]
        p[PSEUDO_STATS + j] += before / count
        p[PSEUDO_STATS + d + j] += before * (mu[j] - p[PSEUDO_STATS + j])
        p[PSEUDO_STATS + 2 * d + j] += (Sigma[j, j] - p[PSEUDO_STATS + 2 * d + j]) / count


@numba.njit(nogil=True, cache=True)
def draw_released_statistic(rng, m, V, inputs, noise_var):
    """One draw of the released statistic given theta's CLT moments ``(m, V)``, the release
    and (Gaussian mechanism, or a vector Laplace release) the noise variances."""
    basis = inputs.basis
    r = basis.shape[1]
    # Never constrained to the statistic's valid region (see suffstat_marginal's docstring),
    # so the pair (theta, s) is a draw of the same joint whose marginal is sampled.
    d = m.shape[0]
    if d == 1 and inputs.laplace_scale > 0.0:
        s = np.array([draw_normal_laplace(rng, m[0], V[0, 0], inputs.y[0],
                                          inputs.laplace_scale)])
    elif d == 1:
        v, noise = V[0, 0], noise_var[0]
        s = np.array([(m[0] * noise + inputs.y[0] * v) / (v + noise)
                      + math.sqrt(v * noise / (v + noise)) * rng.standard_normal()])
    else:
        # s | theta, y ~ N(m + K^T (y - m), V - V K), K = (V + D)^{-1} V (norm_product's
        # form, which keeps s on the support), drawn on the support.
        M = V.copy()
        for j in range(d):
            M[j, j] += noise_var[j]
        K = spd_solve(M, V)
        m_s = m + tmatvec(K, inputs.y - m)
        S_s = V.copy()
        for i in range(d):
            for j in range(d):
                for k in range(d):
                    S_s[i, j] -= V[i, k] * K[k, j]
        L_s, ok_s = cholesky(cov_on_support(basis, 0.5 * (S_s + S_s.T)))
        s = m_s.copy()
        if ok_s:
            s += matvec(basis, matvec(L_s, rng.standard_normal(r)))
    return s
