r"""The sufficient-statistic sampler's marginal kernel (``variant="marginal"``), compiled.

Where the noise dominates, the Gibbs sampler of :mod:`dawrap.samplers.suffstat` crawls:
given theta the statistic is pinned to within :math:`\sqrt{n\Sigma}`, given the statistic
theta is pinned to within its complete-data posterior sd, while the release leaves both far
wider (the fraction of missing information :math:`f = V/(n\Sigma + V)` is the
lag-1 autocorrelation of theta, so the integrated autocorrelation time is about
:math:`(1+f)/(1-f)`: about 200 at f = 0.99). The noise-scale augmentation adds a
second, lesser, slow coupling (a small :math:`\sigma^2` pins ``s`` to ``y``, which keeps
:math:`\sigma^2` small); collapsing it alone would leave the first. The marginal kernel
removes both. Its target is the approximate joint
with the statistic (and, univariate, the noise scale) integrated out,

.. math:: \pi(\theta \mid y) \propto p(\theta)\, \ell(\theta),\qquad
          \ell(\theta) = \int N(s; \mathbf m(\theta), \mathbf V(\theta))\, g(y \mid s)\, ds,

with :math:`(\mathbf m, \mathbf V) = (n\mu, n\Sigma)` for a bounded statistic and the
random-sum CLT of the centre part for a truncated one, and :math:`g` the exact noise density:
for Laplace noise of scale :math:`b`, with :math:`r = \mathbf m - y`, :math:`v = \mathbf V`,

.. math:: \ell = \frac{1}{2b}\Big[e^{r/b + v/2b^2}\,\Phi\big(\tfrac{-r - v/b}{\sqrt v}\big)
          + e^{-r/b + v/2b^2}\,\Phi\big(\tfrac{r - v/b}{\sqrt v}\big)\Big]

(evaluated in log space with the Mills ratio, :func:`log_normal_laplace`); Gaussian noise
gives :math:`N(y; \mathbf m, \mathbf V + \tau^2)`. For a vector release with Laplace noise
the integral has no closed form, so :math:`\sigma^2` is kept and :math:`\ell(\theta \mid
\sigma^2) = N(y; n\mu, n\Sigma + \mathrm{diag}\,\sigma^2)`, followed by the Gibbs draws
of ``s`` and :math:`\sigma^2`.

Theta moves by Metropolis-Hastings with a *pseudo-data* proposal, which needs no prior
density: draw a pseudo-total of :math:`\tilde n` records :math:`u \sim N(\tilde n\mu(\theta),
\tilde n\Sigma(\theta))`, then :math:`\theta' \sim p(\theta \mid u, \tilde n)` by the
family's conjugate update. That is a Gibbs step in :math:`(\theta, u)` for the extended target
:math:`\pi(\theta)\,N(u; \tilde n\mu(\theta), \tilde n\Sigma(\theta))` followed by a
Metropolis-Hastings step for :math:`\theta \mid u` with the conjugate proposal
:math:`\propto p(\theta')\,e^{L(\theta'; u, \tilde n)}`, :math:`L(\theta; u, \tilde n) =
\eta(\theta)^T u - \tilde n A(\eta(\theta))`. The prior cancels, leaving

.. math:: \alpha = \min\Big\{1,\ \frac{\ell(\theta')\,N(u; \tilde n\mu(\theta'),
          \tilde n\Sigma(\theta'))\,e^{L(\theta; u, \tilde n)}}{\ell(\theta)\,N(u;
          \tilde n\mu(\theta), \tilde n\Sigma(\theta))\,e^{L(\theta'; u, \tilde n)}}\Big\}.

(The ratio :math:`N(u; \cdot)/e^{L}` is nearly constant in theta, so the step is close to a
Gibbs draw given ``u``.) :math:`\tilde n` sets the step, a random walk centred on theta: the
effective number of records the release carries, :math:`n(1 - f)`, would make it about as
wide as the posterior. It starts at a third of that and is adapted during warm-up only
(Robbins-Monro on the acceptance rate, target 0.5, then frozen).

After warm-up each iteration also makes an *independence* step: :math:`\theta' \sim
p(\theta \mid \bar u, \tilde n')` for the fixed pseudo-total :math:`\bar u = \tilde n'
\bar\mu`, :math:`\bar\mu` the mean of :math:`\mu(\theta)` over the second half of
warm-up and :math:`\tilde n'` ``independence_width`` (0.15) times the pseudo-sample whose
conjugate spread :math:`\Sigma/\tilde n` matches that half's spread of :math:`\mu` (so the
proposal is about 2.6 times wider than the posterior, and its tails heavier than a
Gaussian fit's would be). For a fixed pseudo-total the conjugate update is an independence
proposal :math:`\propto p(\theta) e^{L(\theta; \bar u, \tilde n')}`, and the ratio is
:math:`\ell(\theta') e^{L(\theta; \bar u, \tilde n')} / (\ell(\theta) e^{L(\theta';
\bar u, \tilde n')})`. It raises the effective draws per iteration severalfold for one
coordinate (docs/suffstat.md has the numbers); the local step keeps
the chain moving where the proposal is poor (tails, a second mode). Both need the family's
``natural`` and ``log_partition``, and every adapted quantity is frozen after warm-up, so
the kept draws come from one fixed kernel.

After theta, the statistic is drawn from its conditional (for output; for a vector Laplace
release also to update :math:`\sigma^2`). The valid region of ``s`` is not imposed: the
normal matches the first two moments of the exact statistic, which is what the convolution
with wide noise depends on; truncating it to the valid region would shift its mean near the
boundary. The two kernels target slightly different approximations: the Gibbs
kernel's conditional of theta given ``s`` is exact (its error vanishes as the noise does);
the marginal kernel's likelihood is the CLT convolved with the noise (its error vanishes as
the noise grows). ``dw.sample`` uses the marginal kernel where the noise dominates (see
docs/suffstat.md).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from ..compile import templates as _templates
from ..model.family import TRUNCATION_TEMPLATES, _as_vector
from . import loop
from .arrays import copy_into
from .kernels import acceptance_probability
from .status import BAD_THETA, OK
from . import suffstat
from .suffstat import function_names, region_moments, update_noise
from .suffstat_densities import LOG_SQRT_2PI, dot, log_normal_cholesky, matvec, on_support
from .suffstat_marginal_parts import (PSEUDO_ADAPTED, PSEUDO_INDEPENDENT, PSEUDO_LOG_N,
                                      PSEUDO_STATS, all_finite, draw_released_statistic, freeze,
                                      log_conjugate_likelihood, pseudo_factor,
                                      release_log_likelihood, release_moments, summarise)

__all__ = ["MarginalState", "MarginalInputs", "MarginalInfo", "schedule", "step",
           "bind_run"]

# The slots the templates below read: the family's functions, bound per family with the
# other suffstat templates (dawrap.samplers.suffstat.function_names).
MEAN_COV = suffstat.MEAN_COV
CONJUGATE_DRAW = suffstat.CONJUGATE_DRAW
VALID = suffstat.VALID
LIKELIHOOD_NATURAL = suffstat.LIKELIHOOD_NATURAL


# The marginal kernel has its own state and settings (the Gibbs kernels' types, and so their
# compiled loop and its cost, stay as they were: every array in a state passed by value costs
# reference counting on each call).

class MarginalState(NamedTuple):
    """The marginal kernel's state: the Gibbs fields (``s`` is the released part only,
    ``s = s_centre``) and its own."""
    theta: np.ndarray
    s: np.ndarray
    s_centre: np.ndarray
    noise_var: np.ndarray  # sigma_j^2 (augmented only for a vector Laplace release)
    pseudo: np.ndarray     # (4 + 3 d,) see ``_PSEUDO_*``: log of the local step's
    #                        pseudo-sample size, its warm-up adaptations so far, late-warm-up
    #                        draws summarised, the independence step's pseudo-sample size (0:
    #                        off), and the summaries: mean and sum of squared deviations of
    #                        mu(theta), mean of diag Sigma(theta)
    release_mean: np.ndarray  # (d,) the CLT moments of the release at theta, kept between
    release_cov: np.ndarray   # (d, d) iterations (a truncated release's cost three truncated
    cached: np.ndarray        # (2,) moments); [valid, log likelihood]
    phase: np.ndarray         # (1,) int: 1, 2 the first, second half of warm-up, 0 after
    #                           (set in place by :func:`schedule`)


class MarginalInfo(NamedTuple):
    """What a marginal iteration reports: its status and its one sample stat."""
    status: int          # dawrap.samplers.status: OK, or why the step stopped
    accept_prob: float   # mean acceptance probability of the iteration's theta steps


class MarginalInputs(NamedTuple):
    """The marginal kernel's inputs: the Gibbs kernels' and its own settings."""
    n: float
    y: np.ndarray
    laplace_scale: float
    truncated: bool
    lower: float
    upper: float
    discrete: bool
    basis: np.ndarray      # (d, r) orthonormal basis of the statistic's support
    moves: int = 1         # local Metropolis-Hastings steps per iteration
    target_accept: float = 0.5  # acceptance rate their warm-up adaptation aims at
    independence_moves: int = 1  # independence steps per iteration (after warm-up)
    independence_width: float = 0.15  # their pseudo-sample, as a fraction of the one that
    #                                   matches the posterior spread of mu(theta)


@numba.njit(nogil=True, cache=True)
def schedule(state, it, tune):
    """The marginal kernels' warm-up (:mod:`dawrap.samplers.loop`'s schedule): in two halves,
    the local step adapting in both (``phase`` 1, 2), the second summarised for the
    independence step, which :func:`~dawrap.samplers.suffstat_marginal_parts.freeze` sets up
    at ``it == tune``; then the kept draws (``phase`` 0), every adapted quantity frozen."""
    if it == tune:
        freeze(state)
    state.phase[0] = 0 if it >= tune else (1 if 2 * it < tune else 2)


def step(rng, state, inputs):
    """One iteration of the marginal kernel (:mod:`dawrap.samplers.loop`'s protocol):
    ``inputs.moves`` local pseudo-data Metropolis-Hastings steps for theta and, after warm-up
    (``state.phase`` 0), ``inputs.independence_moves`` independence steps (module
    docstring), then the statistic, then (vector Laplace release) the noise variances.
    Returns ``(state, MarginalInfo(status, accept_prob))``, the mean acceptance probability
    of the iteration's steps.

    The pseudo-total lives on the statistic's support ``inputs.basis`` (an orthonormal basis
    of the span of Sigma, the same for every theta: the hyperplane of counts summing to n for
    the multinomial), where its covariance is positive definite; its density there is the
    one the ratio needs."""
    phase = state.phase[0]
    theta = state.theta.copy()
    basis = inputs.basis
    pseudo_n = math.exp(state.pseudo[PSEUDO_LOG_N])
    d = state.s.shape[0]
    # theta's release moments (and, without noise variances to integrate over, its
    # likelihood) are kept from the previous iteration.
    univariate_exact = d == 1  # the likelihood does not depend on sigma^2
    if state.cached[0] == 1.0:
        m, V = state.release_mean.copy(), state.release_cov.copy()
    else:
        m, V = release_moments(theta, inputs)
    if state.cached[0] == 1.0 and univariate_exact:
        log_lik = state.cached[1]
    else:
        log_lik = release_log_likelihood(m, V, inputs, state.noise_var)
    mu, Sigma = MEAN_COV(theta)
    r = basis.shape[1]
    mean_accept = 0.0
    if d == 1:
        L, ok = np.empty((1, 1)), Sigma[0, 0] > 0.0
    else:
        L, ok = pseudo_factor(basis, pseudo_n, Sigma)
    # theta on the boundary of the parameter space (a probability exactly 0, as a prior draw
    # with tiny shapes can be, or a start given there): Sigma(theta) is singular or eta(theta)
    # infinite, so the pseudo-total has no density there. Leave by conjugate draws at theta's
    # own mean. That set has no posterior mass, so what the kernel does there cannot change
    # what it leaves invariant; a chain can only start there.
    for _ in range(100):
        if ok and all_finite(_as_vector(LIKELIHOOD_NATURAL(theta))):
            break
        proposal = CONJUGATE_DRAW(rng, pseudo_n * mu, pseudo_n)
        if not all_finite(proposal):
            return state, MarginalInfo(BAD_THETA, 0.0)
        theta = proposal
        m, V = release_moments(theta, inputs)
        log_lik = release_log_likelihood(m, V, inputs, state.noise_var)
        mu, Sigma = MEAN_COV(theta)
        if d == 1:
            ok = Sigma[0, 0] > 0.0
        else:
            L, ok = pseudo_factor(basis, pseudo_n, Sigma)
    local = inputs.moves
    for _ in range(local):
        a = 0.0
        if not ok:
            continue
        if d == 1:
            # The same step in scalars (no small arrays to allocate).
            sd = math.sqrt(pseudo_n * Sigma[0, 0])
            z1 = rng.standard_normal()
            u = np.array([pseudo_n * mu[0] + sd * z1])
            log_u = -0.5 * z1 * z1 - math.log(sd) - LOG_SQRT_2PI
        else:
            z = rng.standard_normal(r)
            u = pseudo_n * mu + matvec(basis, matvec(L, z))
            log_u = -0.5 * dot(z, z) - r * LOG_SQRT_2PI
            for j in range(r):
                log_u -= math.log(L[j, j])
        if VALID(u, pseudo_n):
            proposal = CONJUGATE_DRAW(rng, u, pseudo_n)
            if not all_finite(proposal):
                return state, MarginalInfo(BAD_THETA, mean_accept)
            m_new, V_new = release_moments(proposal, inputs)
            log_lik_new = release_log_likelihood(m_new, V_new, inputs, state.noise_var)
            mu_new, Sigma_new = MEAN_COV(proposal)
            if d == 1:
                L_new, ok_new = L, Sigma_new[0, 0] > 0.0
                if ok_new:
                    v_new = pseudo_n * Sigma_new[0, 0]
                    dev = u[0] - pseudo_n * mu_new[0]
                    log_u_new = -0.5 * dev * dev / v_new - 0.5 * math.log(v_new) - LOG_SQRT_2PI
            else:
                L_new, ok_new = pseudo_factor(basis, pseudo_n, Sigma_new)
                if ok_new:
                    log_u_new = log_normal_cholesky(
                        on_support(basis, u - pseudo_n * mu_new), L_new)
            if ok_new:
                log_ratio = (log_lik_new - log_lik + log_u_new - log_u
                             + log_conjugate_likelihood(theta, u, pseudo_n)
                             - log_conjugate_likelihood(proposal, u, pseudo_n))
                if log_lik == -math.inf and log_lik_new > -math.inf:
                    log_ratio = math.inf  # leave a start the release rules out
                a = acceptance_probability(log_ratio)
                if a >= 1.0 or (a > 0.0 and rng.random() < a):
                    theta, log_lik, m, V, mu, Sigma, L = (proposal, log_lik_new, m_new,
                                                          V_new, mu_new, Sigma_new, L_new)
        mean_accept += a / local
    reported, steps = mean_accept * local, local
    independent_n = state.pseudo[PSEUDO_INDEPENDENT] * inputs.independence_width
    if phase == 0 and independent_n > 0.0:
        # Independence Metropolis-Hastings: the conjugate update given the fixed pseudo-total
        # independent_n * mean(mu) proposes from about the posterior, widened; the prior
        # cancels and the proposal's own factor is e^{L(theta; u, n~)}.
        d = mu.shape[0]
        u = independent_n * state.pseudo[PSEUDO_STATS:PSEUDO_STATS + d]
        for _ in range(inputs.independence_moves):
            if not VALID(u, independent_n):
                break
            proposal = CONJUGATE_DRAW(rng, u, independent_n)
            if not all_finite(proposal):
                return state, MarginalInfo(BAD_THETA, mean_accept)
            m_new, V_new = release_moments(proposal, inputs)
            log_lik_new = release_log_likelihood(m_new, V_new, inputs, state.noise_var)
            log_ratio = (log_lik_new - log_lik
                         + log_conjugate_likelihood(theta, u, independent_n)
                         - log_conjugate_likelihood(proposal, u, independent_n))
            a = acceptance_probability(log_ratio)
            reported += a
            steps += 1
            if a >= 1.0 or (a > 0.0 and rng.random() < a):
                theta, log_lik, m, V = proposal, log_lik_new, m_new, V_new
                mu, Sigma = MEAN_COV(theta)
    if phase > 0:
        # Robbins-Monro on log n~: a larger pseudo-sample gives narrower proposals and more
        # acceptances. Warm-up only; the kept draws use the frozen value.
        p = state.pseudo
        p[PSEUDO_ADAPTED] += 1.0
        p[PSEUDO_LOG_N] -= (mean_accept - inputs.target_accept) / p[PSEUDO_ADAPTED] ** 0.6
        p[PSEUDO_LOG_N] = min(max(p[PSEUDO_LOG_N], math.log(1e-3)), math.log(inputs.n))
        if phase == 2:
            summarise(state, mu, Sigma)
    # The released statistic given theta, for output and for the vector Laplace release's
    # noise update (never constrained to its valid region: module docstring).
    s = draw_released_statistic(rng, m, V, inputs, state.noise_var)
    d = m.shape[0]
    copy_into(state.theta, theta)
    copy_into(state.s, s)
    copy_into(state.s_centre, s)
    copy_into(state.release_mean, m)
    for j in range(d):
        copy_into(state.release_cov[j], V[j])
    state.cached[0] = 1.0
    state.cached[1] = log_lik
    if d > 1:
        update_noise(rng, state, inputs)
    return state, MarginalInfo(OK, reported / max(steps, 1))


#: The marginal kernel's templates (with the Gibbs kernels' moments they call).
MARGINAL_TEMPLATES = TRUNCATION_TEMPLATES + (region_moments, release_moments,
                                             log_conjugate_likelihood, step)


def bind_run(fns):
    """The compiled marginal loop for one family's functions (a
    :class:`dawrap.samplers.suffstat.SuffstatFunctions`): :func:`dawrap.samplers.loop.run`
    bound to :func:`step` and :func:`schedule`."""
    # The step inlined into the loop: the state is not passed to a call and returned each
    # iteration (a new reference per array: 5-8% of a marginal iteration;
    # dawrap.samplers.loop).
    step_ = _templates.bind(MARGINAL_TEMPLATES, function_names(fns), inline=("step",)).step
    return loop.bind(step_, schedule).run
