r"""The sufficient-statistic sampler for one-hot statistics (counts of K cells), in O(K).

A family that declares ``cell_probabilities`` (:class:`dawrap.ExponentialFamily`) has records
that fall in exactly one of K cells, with probabilities :math:`p(\theta)`, so the CLT of the
count vector is :math:`s \mid \theta \approx N(np, \Sigma)` with

.. math:: \Sigma = n(\mathrm{diag}\,p - pp^T),

diagonal minus rank one and singular (the counts sum to ``n``). The dense kernels of
:mod:`dawrap.samplers.suffstat` and :mod:`dawrap.samplers.suffstat_marginal` form and factorise
K x K matrices, O(K^3) per iteration; the kernels here target *the same distribution* and never
form one, O(K) per iteration and in memory. With :math:`D = \mathrm{diag}(\sigma^2)` the noise
variances, :math:`a = np + \sigma^2` and :math:`c = \sum_j p_j\sigma_j^2/a_j`:

* **Solve** (Sherman-Morrison): :math:`\Sigma + D = \mathrm{diag}(a) - n pp^T`, so
  :math:`(\Sigma + D)^{-1}v = v/a + n\,(p/a)\,(p^T(v/a))/c`. The denominator
  :math:`1 - n\sum_j p_j^2/a_j` is written as :math:`c` (equal when :math:`\sum p = 1`), a sum
  of positive terms: no cancellation however small the noise.
* **Likelihood** of the release with the counts integrated out (determinant lemma):
  :math:`\log N(y; np, \Sigma + D)` with :math:`\log\det(\Sigma + D) = \sum_j \log a_j +
  \log c`.
* **Draw** of the counts given theta and the release (Matheron's rule, "sample then
  correct"): :math:`s_0 = np + z - p\sum_j z_j`, :math:`z \sim N(0, n\,\mathrm{diag}\,p)`, has
  covariance exactly :math:`\Sigma`; with :math:`e \sim N(0, D)`,
  :math:`s = s_0 + \Sigma(\Sigma + D)^{-1}(y - s_0 - e)` is a draw of
  :math:`N(m, \Sigma - \Sigma(\Sigma + D)^{-1}\Sigma)`, :math:`m = np + \Sigma(\Sigma +
  D)^{-1}(y - np)`: the law the dense :func:`~dawrap.samplers.suffstat.norm_product` and
  :func:`~dawrap.samplers.suffstat.draw_normal` draw from, and its counts sum to ``n``.

What Bernstein & Sheldon leave loose: they state :math:`s \mid \theta \approx N(n\mu, n\Sigma)`
for the multinomial without saying what a normal with a singular covariance means in the
Gibbs step. The dense kernel reads it as the degenerate normal on the hyperplane
:math:`\sum_j s_j = n` (the product form needs no inverse of :math:`\Sigma`; the
eigendecomposition clamps rounding-level negative eigenvalues); so does the draw above,
exactly, which is why the two kernels share their target.

**Gibbs kernel** (:func:`gibbs_step`): the dense Gibbs step with the draw above, the valid
region of ``s`` still imposed by rejection (as in the dense kernel, whose target it is: at
many cells with small expected counts nearly every draw has a negative count, and the step
stops with its rejection error; the marginal kernel, the default there, imposes no region).

**Marginal kernel** (:func:`marginal_step`): target :math:`\pi(\theta) \propto p(\theta)\,
N(y; np, \Sigma + D)` (given :math:`\sigma^2` for Laplace noise, as in the dense kernel).
Its local step proposes from Poisson pseudo-data instead of the dense kernel's normal
pseudo-total: :math:`u_j \sim \mathrm{Poisson}(\tilde n p_j(\theta))`, then
:math:`\theta' \sim p(\theta \mid u)`, the family's conjugate draw given the counts ``u`` of
:math:`\sum_j u_j` records. Since :math:`\prod_j \mathrm{Poisson}(u_j; \tilde n p_j) \propto_u
\prod_j p_j^{u_j}` when :math:`\sum_j p_j = 1`, the conjugate draw is the exact conditional of
theta given ``u`` in the extended target :math:`\pi(\theta)\prod_j\mathrm{Poisson}(u_j;
\tilde n p_j(\theta))`, and the Metropolis-Hastings ratio is just
:math:`N(y; np', \cdot)/N(y; np, \cdot)`. Integer pseudo-counts are always valid: the dense
kernel's normal pseudo-total has a negative cell almost always once many cells have small
probabilities, and its chains then never move (a release of 50 cells, 3 of them non-zero:
effective sample size 2 of 4000 draws, ``benchmarks/results/tables_suffstat.md``). Moving all
K cells at once, the local step needs a pseudo-sample about K - 1 times the one a single
cell would: the runner starts :math:`\tilde n` there and its warm-up adaptation (the dense
kernel's Robbins-Monro) may go up to :math:`nK` instead of ``n``. The independence step after
warm-up is the dense kernel's (:mod:`dawrap.samplers.suffstat_marginal`), with theta's part
of the conjugate likelihood :math:`\sum_j \bar u_j \log p_j(\theta)`.

Examples
--------
>>> import numpy as np
>>> from dawrap.samplers.suffstat_multinomial import log_release_likelihood
>>> p, y, noise = np.array([0.2, 0.5, 0.3]), np.array([21.0, 48.0, 33.0]), np.full(3, 8.0)
>>> round(log_release_likelihood(p, 100.0, y, noise), 6)  # log N(y; 100 p, Sigma + 8 I)
-7.659153
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from . import loop
from .arrays import all_finite, copy_into
from .kernels import acceptance_probability
from .status import BAD_THETA, OK, TOO_MANY_REJECTIONS
from ..compile import templates as _templates
from .suffstat import MAX_REJECTIONS, GibbsInfo, function_names, update_noise
from .suffstat_marginal import MarginalInfo, schedule
from .suffstat_densities import LOG_SQRT_2PI
from .suffstat_marginal_parts import (PSEUDO_ADAPTED, PSEUDO_INDEPENDENT, PSEUDO_LOG_N,
                                      PSEUDO_STATS, PSEUDO_SUMMARISED)

__all__ = ["MultinomialFunctions", "solve", "cov_times", "log_release_likelihood",
           "counts_given", "draw_counts", "gibbs_step", "marginal_step", "bind_gibbs",
           "bind_marginal"]


# The slots the templates below read: MultinomialFunctions' fields in capitals, bound per
# family (dawrap.samplers.suffstat.function_names; dawrap._templates checks them).
PROBABILITIES = _templates.slot("(theta) -> p: the cell probabilities")
CONJUGATE_DRAW = _templates.slot("(rng, counts, records) -> theta")
VALID = _templates.slot("(s, n) -> bool: the Gibbs kernel's rejection step")


class MultinomialFunctions(NamedTuple):
    """The family's compiled pieces the O(K) kernels need."""
    probabilities: object   # (theta) -> p, the cell probabilities
    conjugate_draw: object  # (rng, counts, records) -> theta
    valid: object           # (s, n) -> bool (the Gibbs kernel's rejection step)


@numba.njit(nogil=True, cache=True)
def _diagonal(p, n, noise_var):
    """``(a, c)``: the diagonal ``a = n p + sigma^2`` of Sigma + D's diagonal part and the
    Sherman-Morrison denominator ``c = sum_j p_j sigma_j^2 / a_j``."""
    a = n * p + noise_var
    c = 0.0
    for j in range(p.shape[0]):
        c += p[j] * noise_var[j] / a[j]
    return a, c


@numba.njit(nogil=True, cache=True)
def solve(p, n, noise_var, v):
    r""":math:`(\Sigma + D)^{-1} v` for :math:`\Sigma = n(\mathrm{diag}\,p - pp^T)`, in O(K)."""
    a, c = _diagonal(p, n, noise_var)
    out = v / a
    t = 0.0
    for j in range(p.shape[0]):
        t += p[j] * out[j]
    scale = n * t / c
    for j in range(p.shape[0]):
        out[j] += scale * p[j] / a[j]
    return out


@numba.njit(nogil=True, cache=True)
def cov_times(p, n, x):
    r""":math:`\Sigma x = n(p \circ x - p\,(p^T x))`."""
    t = 0.0
    for j in range(p.shape[0]):
        t += p[j] * x[j]
    return n * (p * x - p * t)


@numba.njit(nogil=True, cache=True)
def log_release_likelihood(p, n, y, noise_var):
    r""":math:`\log N(y; np, \Sigma + D)`: the release's density with the counts integrated
    out (Sherman-Morrison for the quadratic form, the determinant lemma for the
    log-determinant)."""
    a, c = _diagonal(p, n, noise_var)
    quad, t, logdet = 0.0, 0.0, math.log(c)
    for j in range(p.shape[0]):
        r = y[j] - n * p[j]
        quad += r * r / a[j]
        t += p[j] * r / a[j]
        logdet += math.log(a[j])
    quad += n * t * t / c
    return -0.5 * (quad + logdet) - p.shape[0] * LOG_SQRT_2PI


@numba.njit(nogil=True, cache=True)
def counts_given(p, n, y, noise_var, z, e):
    r"""The counts given theta and the release, from standard normals ``z`` and ``e`` (K
    each): Matheron's rule, :math:`s = s_0 + \Sigma(\Sigma + D)^{-1}(y - s_0 - \sqrt{D}e)`,
    :math:`s_0 = np + w - p\sum_j w_j`, :math:`w = \sqrt{np}\circ z` (module docstring)."""
    k = p.shape[0]
    w = np.empty(k)
    total = 0.0
    for j in range(k):
        w[j] = math.sqrt(max(n * p[j], 0.0)) * z[j]
        total += w[j]
    s0 = n * p + w - p * total
    gap = np.empty(k)
    for j in range(k):
        gap[j] = y[j] - s0[j] - math.sqrt(noise_var[j]) * e[j]
    return s0 + cov_times(p, n, solve(p, n, noise_var, gap))


@numba.njit(nogil=True, cache=True)
def draw_counts(rng, p, n, y, noise_var):
    """One draw of the counts given theta and the release (:func:`counts_given`)."""
    k = p.shape[0]
    z = rng.standard_normal(k)
    e = rng.standard_normal(k)
    return counts_given(p, n, y, noise_var, z, e)


def gibbs_step(rng, state, inputs):
    """One Gibbs iteration (theta | s; s | theta, sigma^2, y; sigma^2 | s, y), as
    :func:`dawrap.samplers.suffstat.step` for a bounded release. Returns ``(state,
    GibbsInfo(status, rejections))`` (:mod:`dawrap.samplers.loop`'s protocol)."""
    n = inputs.n
    theta = CONJUGATE_DRAW(rng, state.s, n)
    if not all_finite(theta):
        return state, GibbsInfo(BAD_THETA, 0)
    p = PROBABILITIES(theta)
    rejections = 0
    s = draw_counts(rng, p, n, inputs.y, state.noise_var)
    while not VALID(s, n):
        rejections += 1
        if rejections >= MAX_REJECTIONS:
            return state, GibbsInfo(TOO_MANY_REJECTIONS, rejections)
        s = draw_counts(rng, p, n, inputs.y, state.noise_var)
    copy_into(state.s, s)
    copy_into(state.s_centre, s)
    copy_into(state.theta, theta)
    update_noise(rng, state, inputs)
    return state, GibbsInfo(OK, rejections)


@numba.njit(nogil=True, cache=True)
def _log_cell_likelihood(p, u):
    """sum_j u_j log p_j: theta's part of the conjugate likelihood of the counts ``u``."""
    out = 0.0
    for j in range(p.shape[0]):
        if u[j] != 0.0:
            out += u[j] * math.log(p[j])
    return out


@numba.njit(nogil=True, cache=True)
def _summarise(state, p):
    """:func:`dawrap.samplers.suffstat_marginal_parts.summarise` with diag Sigma =
    p (1 - p): Welford's mean and squared deviations of p, mean of p (1 - p)."""
    q = state.pseudo
    k = p.shape[0]
    q[PSEUDO_SUMMARISED] += 1.0
    count = q[PSEUDO_SUMMARISED]
    for j in range(k):
        before = p[j] - q[PSEUDO_STATS + j]
        q[PSEUDO_STATS + j] += before / count
        q[PSEUDO_STATS + k + j] += before * (p[j] - q[PSEUDO_STATS + j])
        q[PSEUDO_STATS + 2 * k + j] += (p[j] * (1.0 - p[j]) - q[PSEUDO_STATS + 2 * k + j]) / count


def marginal_step(rng, state, inputs):
    """One iteration of the marginal kernel (module docstring): ``inputs.moves`` local
    steps from Poisson pseudo-data, after warm-up ``inputs.independence_moves`` independence
    steps, then the counts and (Laplace noise) the noise variances. Returns ``(state,
    MarginalInfo(status, accept_prob))``; the warm-up ``state.phase`` as in
    :func:`dawrap.samplers.suffstat_marginal.step`, set by its
    :func:`~dawrap.samplers.suffstat_marginal.schedule`."""
    phase = state.phase[0]
    n, y, noise_var = inputs.n, inputs.y, state.noise_var
    theta = state.theta.copy()
    p = PROBABILITIES(theta)
    k = p.shape[0]
    log_lik = log_release_likelihood(p, n, y, noise_var)
    pseudo_n = math.exp(state.pseudo[PSEUDO_LOG_N])
    local = inputs.moves
    mean_accept = 0.0
    u = np.empty(k)
    for _ in range(local):
        records = 0.0
        for j in range(k):
            u[j] = float(rng.poisson(pseudo_n * p[j]))
            records += u[j]
        proposal = CONJUGATE_DRAW(rng, u, records)
        if not all_finite(proposal):
            return state, MarginalInfo(BAD_THETA, mean_accept)
        p_new = PROBABILITIES(proposal)
        log_lik_new = log_release_likelihood(p_new, n, y, noise_var)
        a = acceptance_probability(log_lik_new - log_lik)
        if a >= 1.0 or (a > 0.0 and rng.random() < a):
            theta, p, log_lik = proposal, p_new, log_lik_new
        mean_accept += a / local
    reported, steps = mean_accept * local, local
    independent_n = state.pseudo[PSEUDO_INDEPENDENT] * inputs.independence_width
    if phase == 0 and independent_n > 0.0:
        # The conjugate update given the fixed pseudo-counts independent_n * mean(p) proposes
        # from about the posterior, widened; its factor is prod_j p_j^{u_j}.
        u_bar = independent_n * state.pseudo[PSEUDO_STATS:PSEUDO_STATS + k]
        records = 0.0
        for j in range(k):
            records += u_bar[j]
        for _ in range(inputs.independence_moves):
            proposal = CONJUGATE_DRAW(rng, u_bar, records)
            if not all_finite(proposal):
                return state, MarginalInfo(BAD_THETA, mean_accept)
            p_new = PROBABILITIES(proposal)
            log_lik_new = log_release_likelihood(p_new, n, y, noise_var)
            log_ratio = (log_lik_new - log_lik + _log_cell_likelihood(p, u_bar)
                         - _log_cell_likelihood(p_new, u_bar))
            a = acceptance_probability(log_ratio)
            reported += a
            steps += 1
            if a >= 1.0 or (a > 0.0 and rng.random() < a):
                theta, p, log_lik = proposal, p_new, log_lik_new
    if phase > 0:
        # Robbins-Monro on log n~, warm-up only (as the dense kernel), up to n K rather than
        # n: moving K cells at once, the step that keeps the acceptance needs about K - 1
        # times the pseudo-sample of one cell's.
        q = state.pseudo
        q[PSEUDO_ADAPTED] += 1.0
        q[PSEUDO_LOG_N] -= (mean_accept - inputs.target_accept) / q[PSEUDO_ADAPTED] ** 0.6
        q[PSEUDO_LOG_N] = min(max(q[PSEUDO_LOG_N], math.log(1e-3)), math.log(n * k))
        if phase == 2:
            _summarise(state, p)
    s = draw_counts(rng, p, n, y, noise_var)
    copy_into(state.theta, theta)
    copy_into(state.s, s)
    copy_into(state.s_centre, s)
    update_noise(rng, state, inputs)
    return state, MarginalInfo(OK, reported / max(steps, 1))


def bind_gibbs(fns: MultinomialFunctions):
    """The compiled O(K) Gibbs loop for one family's functions:
    :func:`dawrap.samplers.loop.run` bound to :func:`gibbs_step`."""
    # The steps inlined into the loop, as the dense kernels' (dawrap.samplers.loop).
    return loop.bind(_templates.bind((gibbs_step,), function_names(fns),
                                     inline=("gibbs_step",)).gibbs_step).run


def bind_marginal(fns: MultinomialFunctions):
    """The compiled O(K) marginal loop for one family's functions:
    :func:`dawrap.samplers.loop.run` bound to :func:`marginal_step` and the dense marginal
    kernel's warm-up :func:`~dawrap.samplers.suffstat_marginal.schedule`."""
    step = _templates.bind((marginal_step,), function_names(fns),
                           inline=("marginal_step",)).marginal_step
    return loop.bind(step, schedule).run
