r"""The sufficient-statistic Gibbs sampler of Bernstein & Sheldon (2018), compiled.

Approximate joint (bounded statistic, Algorithm 1):

.. math:: \theta \sim p(\theta),\quad s \mid \theta \approx N(n\mu, n\Sigma),\quad
          \sigma_j^2 \sim \mathrm{Exp}\big(1/(2b^2)\big),\quad y \mid s \sim N(s, \mathrm{diag}\,\sigma^2),

where Laplace noise of scale :math:`b` is the scale mixture of normals over :math:`\sigma^2`.
Gibbs steps: :math:`\theta \mid s` by conjugacy; :math:`s \mid \theta, \sigma^2, y` from the
product of two normals restricted to the valid region (rejection);
:math:`1/\sigma_j^2 \mid s, y \sim \mathrm{InverseGaussian}(1/(b|y_j - s_j|), 1/b^2)`. With
the Gaussian mechanism :math:`\sigma^2` is known and not augmented.

Unbounded univariate statistic released truncated to :math:`[a, b]` (Algorithms 2 and 3): the
total splits into lower, centre and upper parts :math:`s = s_\ell + s_c + s_u`, each
approximately normal by the random-sum CLT (Prop. 1):
:math:`\mathbf m = nq\hat\mu,\ \mathbf V = nq\hat\Sigma + nq(1-q)\hat\mu^2`, with
:math:`q = P(x \in \text{region})` and the truncated moments of Lemma 1; only :math:`s_c` is
released. Two corrections to the printed pseudo-code:

* Algorithm 3 line 4 prints ``m <- nq``; Prop. 1 (and the proof) give ``m = n q mu_hat``,
  which is what is implemented.
* Algorithm 2 line 10 redraws :math:`s_c \sim N(\mathbf m_c, \mathbf V_c)` *without*
  conditioning on :math:`y` before updating :math:`\sigma^2`. That is not the Gibbs conditional
  of the stated joint: it breaks the link between :math:`\sigma^2` and the release. By default
  (``variant="gibbs"``) the sampler keeps the :math:`s_c` it drew jointly with
  :math:`s_\ell, s_u` given :math:`y` in lines 7-8, so every step is a proper conditional of the
  approximate joint.
* The printed generative process draws :math:`s_\ell, s_c, s_u` independently. They are not:
  each record falls in exactly one region, so the CLT of the vector of parts has covariance
  :math:`-n q_i q_j \hat\mu_i\hat\mu_j` between parts (see :func:`_regions`). Ignoring it
  inflates the variance of the total beyond ``n Var(t)``, which the conjugate theta step
  assumes, and pushes chains out of posterior modes (a bimodal truncated Poisson posterior:
  chains stuck where there is no mass). ``variant="gibbs"`` uses the joint CLT;
  ``variant="printed"`` reproduces both printed choices for comparison.

Cost per iteration does not depend on ``n``.

**The marginal kernel** (``variant="marginal"``). Where the noise dominates, the Gibbs sampler
above crawls: given theta the statistic is pinned to within :math:`\sqrt{n\Sigma}`, given the
statistic theta is pinned to within its complete-data posterior sd, while the release leaves
both far wider (the fraction of missing information :math:`f = V/(n\Sigma + V)` is the
lag-1 autocorrelation of theta, so the integrated autocorrelation time is about
:math:`(1+f)/(1-f)`: 190 at n = 1000, epsilon = 0.01). The noise-scale augmentation adds a
second slow coupling (a small :math:`\sigma^2` pins ``s`` to ``y``, which keeps
:math:`\sigma^2` small). The marginal kernel removes both. Its target is the approximate joint
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
Gibbs draw given ``u``.) :math:`\tilde n` sets the step: about the effective number of
records the release carries, :math:`n(1 - f)`, makes the proposal as wide as the posterior.
It starts there and is adapted during warm-up only (Robbins-Monro on the acceptance rate,
then frozen), so the kept draws come from a fixed kernel. It needs the family's ``natural``
and ``log_partition``. After theta, the statistic is drawn from its conditional (for output;
for a vector Laplace release also to update :math:`\sigma^2`). The valid region of ``s`` is
not imposed: the normal matches the first two moments of the exact statistic, which is what
the convolution with wide noise depends on; truncating it to the valid region would shift its
mean near the boundary. The two kernels target slightly different approximations: the Gibbs
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

from .family import _as_vector, truncated_moments
from .kernels import acceptance_probability
from .record import _copy_into

__all__ = ["SuffstatFunctions", "SuffstatState", "SuffstatConfig", "MarginalState",
           "MarginalConfig", "norm_product", "step",
           "run", "marginal_step", "run_marginal", "MAX_REJECTIONS", "log_ndtr", "log_normal_laplace", "draw_normal_laplace"]

#: Draws of ``s`` rejected in one iteration before the sampler gives up (status != 0).
MAX_REJECTIONS = 10_000
OK, TOO_MANY_REJECTIONS, BAD_THETA = 0, 1, 2
STATUS_MESSAGES = {
    TOO_MANY_REJECTIONS: f"{MAX_REJECTIONS} consecutive draws of the statistic fell outside "
                         "its valid region: the normal approximation puts almost no mass on "
                         "valid totals (n too small for the CLT, or a release far outside the "
                         "possible range)",
    BAD_THETA: "the family's conjugate_draw returned a non-finite theta",
}


class SuffstatFunctions(NamedTuple):
    """The family's compiled pieces (see :class:`dawrap.ExponentialFamily`)."""
    mean_cov: object
    conjugate_draw: object
    valid: object
    natural: object
    cdf: object
    sf: object
    log_partition: object  # the marginal kernel only, with:
    likelihood_natural: object  # eta(theta) for the conjugate likelihood (``natural`` itself
    #                             is a placeholder for bounded families, whose eta may be a
    #                             vector, where the truncated moments need a float)


class SuffstatState(NamedTuple):
    """The Gibbs kernels' state."""
    theta: np.ndarray      # (theta_size,)
    s: np.ndarray          # (d,) full sufficient statistic
    s_centre: np.ndarray   # (d,) its released part (= s when bounded)
    noise_var: np.ndarray  # (d,) sigma_j^2


class SuffstatConfig(NamedTuple):
    """The Gibbs kernels' settings."""
    n: float
    y: np.ndarray          # (d,) the release
    laplace_scale: float   # b; 0 for the Gaussian mechanism (noise_var fixed)
    truncated: bool
    lower: float
    upper: float
    discrete: bool
    printed: bool          # Algorithm 2 line 10 as printed


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


class MarginalConfig(NamedTuple):
    """The marginal kernel's settings: the Gibbs ones and its own."""
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
def norm_product(m1, S1, m2, v2):
    r"""Mean and covariance of :math:`N(m_1, S_1)\,N(m_2, \mathrm{diag}\,v_2)` (normalised).

    Written as :math:`S_3 = S_1 - S_1(S_1 + D)^{-1}S_1`, :math:`m_3 = m_1 + S_1(S_1+D)^{-1}
    (m_2 - m_1)`, which needs no inverse of :math:`S_1`: the multinomial's covariance is
    singular (its counts sum to n), and that form keeps the sum exactly n.
    """
    d = m1.shape[0]
    M = S1.copy()
    for j in range(d):
        M[j, j] += v2[j]
    K = np.linalg.solve(M, S1)  # (S1 + D)^{-1} S1; symmetric problem, so K^T = S1 (S1+D)^{-1}
    m3 = m1 + K.T @ (m2 - m1)
    S3 = S1 - S1 @ K
    return m3, 0.5 * (S3 + S3.T)


@numba.njit(nogil=True, cache=True)
def draw_normal(rng, mean, cov):
    """One draw from N(mean, cov) for a positive semi-definite (possibly singular) cov."""
    d = mean.shape[0]
    if d == 1:
        return mean + math.sqrt(max(cov[0, 0], 0.0)) * rng.standard_normal(1)
    values, vectors = np.linalg.eigh(cov)
    z = rng.standard_normal(d)
    for j in range(d):
        z[j] *= math.sqrt(max(values[j], 0.0))
    return mean + vectors @ z


@numba.njit(nogil=True)
def _region_moments(fns, theta, v, w, discrete):
    """(q, mean_hat, var_hat) of t(x) for records in [v, w] (Lemma 1)."""
    eta = fns.natural(theta)
    mu, Sigma = fns.mean_cov(theta)
    return truncated_moments(fns.cdf, fns.sf, eta, mu[0], Sigma[0, 0], v, w, discrete)


@numba.njit(nogil=True)
def _regions(fns, theta, config):
    r"""Mean (3,) and covariance (3, 3) of :math:`(s_\ell, s_c, s_u)` under the CLT.

    Per record the vector :math:`(1_\ell t, 1_c t, 1_u t)` has mean :math:`q_r\hat\mu_r` and
    covariance :math:`\mathrm{diag}(q_r(\hat\Sigma_r + \hat\mu_r^2)) - (q\hat\mu)(q\hat\mu)^T`,
    so the diagonal of ``n`` times it is the random-sum CLT of Prop. 1 / Algorithm 3 (with
    ``m = n q mu_hat``) and the off-diagonal is :math:`-n q_i q_j \hat\mu_i \hat\mu_j`: a
    record lies in exactly one region, so the parts are negatively correlated. The paper's
    Algorithm 2 draws them independently (``config.printed`` keeps that); with the correct
    covariance the variance of the total is exactly ``n Var(t)``, consistent with the conjugate
    theta step, and modes of the posterior are no longer pushed away (see docs/suffstat.md).
    """
    a, b = config.lower, config.upper
    lo_end = a - 1.0 if config.discrete else a
    hi_start = b + 1.0 if config.discrete else b
    n = config.n
    bounds = ((-math.inf, lo_end), (a, b), (hi_start, math.inf))
    q = np.empty(3)
    mean_hat = np.empty(3)
    var_hat = np.empty(3)
    for r in range(3):
        q[r], mean_hat[r], var_hat[r] = _region_moments(fns, theta, bounds[r][0], bounds[r][1],
                                                        config.discrete)
    m = n * q * mean_hat
    V = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            if i == j:
                V[i, i] = n * q[i] * var_hat[i] + n * q[i] * (1.0 - q[i]) * mean_hat[i] ** 2
            elif config.printed:
                V[i, j] = 0.0
            else:
                V[i, j] = -n * q[i] * q[j] * mean_hat[i] * mean_hat[j]
    return m, V


@numba.njit(nogil=True)
def _condition_on_release(m, V, y, noise_var):
    """(m, V) of (s_l, s_c, s_u) given y ~ N(s_c, noise_var): a Kalman update on component 1."""
    gain = V[:, 1] / (V[1, 1] + noise_var)
    m_post = m + gain * (y - m[1])
    V_post = V - np.outer(gain, V[1, :])
    return m_post, 0.5 * (V_post + V_post.T)


@numba.njit(nogil=True)
def _update_noise(rng, state, config):
    """1/sigma_j^2 | s_c, y ~ InverseGaussian(1/(b |y_j - s_c,j|), 1/b^2) (Park & Casella)."""
    b = config.laplace_scale
    if b <= 0.0:
        return
    for j in range(state.noise_var.shape[0]):
        gap = max(abs(config.y[j] - state.s_centre[j]), 1e-300)
        state.noise_var[j] = 1.0 / rng.wald(1.0 / (b * gap), 1.0 / (b * b))


@numba.njit(nogil=True)
def step(rng, state, config, fns):
    """One Gibbs iteration. Returns ``(state, rejections, status)``."""
    n = config.n
    rejections = 0
    if not config.truncated:
        # Algorithm 1: theta | s; s | theta, sigma^2, y; sigma^2 | s, y.
        theta = fns.conjugate_draw(rng, state.s, n)
        mu, Sigma = fns.mean_cov(theta)
        m, S = norm_product(n * mu, n * Sigma, config.y, state.noise_var)
        s = draw_normal(rng, m, S)
        while not fns.valid(s, n):
            rejections += 1
            if rejections >= MAX_REJECTIONS:
                return state, rejections, TOO_MANY_REJECTIONS
            s = draw_normal(rng, m, S)
        _copy_into(state.s, s)
        _copy_into(state.s_centre, s)
    else:
        # Algorithm 2: (s_l, s_c, s_u) | theta, sigma^2, y; theta | s; sigma^2 | s_c, y.
        m, V = _regions(fns, state.theta, config)
        m, V = _condition_on_release(m, V, config.y[0], state.noise_var[0])
        while True:
            parts = draw_normal(rng, m, V)
            s = np.array([parts[0] + parts[1] + parts[2]])
            if fns.valid(s, n):
                break
            rejections += 1
            if rejections >= MAX_REJECTIONS:
                return state, rejections, TOO_MANY_REJECTIONS
        s_c = parts[1:2].copy()
        theta = fns.conjugate_draw(rng, s, n)
        if config.printed:
            # The paper's line 10: s_c redrawn at the new theta, ignoring y.
            m, V = _regions(fns, theta, config)
            s_c = draw_normal(rng, m[1:2].copy(), V[1:2, 1:2].copy())
        _copy_into(state.s, s)
        _copy_into(state.s_centre, s_c)
    for j in range(theta.shape[0]):
        if not np.isfinite(theta[j]):
            return state, rejections, BAD_THETA
    _copy_into(state.theta, theta)
    _update_noise(rng, state, config)
    return state, rejections, OK


@numba.njit(nogil=True)
def run(rng, state, config, fns, start, stop, tune, out_theta, out_rejections, out_s):
    """Iterations ``start..stop-1`` of the Gibbs kernels; iteration ``it >= tune`` is kept
    in row ``it - tune``.

    Returns ``(state, iterations done, status)``."""
    for it in range(start, stop):
        state, rejections, status = step(rng, state, config, fns)
        if status != OK:
            return state, it, status
        if it >= tune:
            row = it - tune
            _copy_into(out_theta[row], state.theta)
            out_rejections[row] = rejections
            if out_s.shape[0] > 0:
                _copy_into(out_s[row], state.s_centre)
    return state, stop, OK


# ---------------------------------------------------------------------------------------------
# The marginal kernel (module docstring): the statistic integrated out of theta's update.

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@numba.njit(nogil=True, cache=True)
def _log_ndtr_asymptotic_tail(x):
    """log(Phi(x)) + x^2/2 for x <= -20, from the asymptotic series of the Mills ratio
    (the next term is below 3e-12 there)."""
    r = 1.0 / (x * x)
    series = 1.0 - r * (1.0 - 3.0 * r * (1.0 - 5.0 * r * (1.0 - 7.0 * r * (1.0 - 9.0 * r))))
    return -math.log(-x) - _LOG_SQRT_2PI + math.log(series)


@numba.njit(nogil=True, cache=True)
def log_ndtr(x):
    """:math:`\\log\\Phi(x)`, accurate in both tails."""
    if x > 0.0:
        return math.log1p(-0.5 * math.erfc(x / math.sqrt(2.0)))
    if x > -20.0:
        return math.log(0.5 * math.erfc(-x / math.sqrt(2.0)))
    return _log_ndtr_asymptotic_tail(x) - 0.5 * x * x


@numba.njit(nogil=True, cache=True)
def _log_piece(r, v, b, x, sign):
    r"""log of :math:`\int N(s; m, v)\, e^{-|s - y|/b} ds` over one side of ``y`` (``sign``
    +1: below, -1: above), with ``r = m - y`` and ``x`` the standardised end, i.e.
    ``sign * r / b + v / (2 b^2) + log Phi(x)``. For ``x < 0`` the exponent and
    :math:`x^2/2` are equal up to :math:`-r^2/2v`, which is used instead of the difference of
    two large numbers."""
    if x < 0.0:
        if x > -20.0:
            tail = math.log(0.5 * math.erfc(-x / math.sqrt(2.0))) + 0.5 * x * x
        else:
            tail = _log_ndtr_asymptotic_tail(x)
        return -0.5 * r * r / v + tail
    return sign * r / b + 0.5 * v / (b * b) + log_ndtr(x)


@numba.njit(nogil=True, cache=True)
def log_normal_laplace(r, v, b):
    r""":math:`\log \int N(s; m, v)\, \frac{1}{2b} e^{-|y - s|/b}\, ds` with ``r = m - y``:
    the likelihood of a Laplace release of scale ``b`` when the statistic is ``N(m, v)``."""
    if not v > 0.0:
        return -abs(r) / b - math.log(2.0 * b)
    sd = math.sqrt(v)
    below = _log_piece(r, v, b, (-r - v / b) / sd, 1.0)
    above = _log_piece(r, v, b, (r - v / b) / sd, -1.0)
    top = max(below, above)
    return top + math.log(math.exp(below - top) + math.exp(above - top)) - math.log(2.0 * b)


@numba.njit(nogil=True, cache=True)
def _normal_above(rng, alpha):
    """One draw of Z ~ N(0, 1) given Z > alpha: plain rejection for alpha < 0.5 (acceptance
    above 0.3), else Robert's (1995) translated-exponential rejection (acceptance above
    0.76)."""
    if alpha < 0.5:
        while True:
            z = rng.standard_normal()
            if z > alpha:
                return z
    rate = 0.5 * (alpha + math.sqrt(alpha * alpha + 4.0))
    while True:
        z = alpha + rng.exponential() / rate
        if rng.random() <= math.exp(-0.5 * (z - rate) ** 2):
            return z


@numba.njit(nogil=True, cache=True)
def draw_normal_laplace(rng, m, v, y, b):
    r"""One draw of ``s`` with density :math:`\propto N(s; m, v)\, e^{-|y - s|/b}`: below
    ``y`` it is :math:`N(m + v/b, v)` restricted to :math:`s < y`, above it :math:`N(m - v/b,
    v)` restricted to :math:`s > y`, with the weights of :func:`log_normal_laplace`'s two
    pieces (an exact draw, no augmentation)."""
    if not v > 0.0:
        return m
    r, sd = m - y, math.sqrt(v)
    x_below, x_above = (-r - v / b) / sd, (r - v / b) / sd
    below = _log_piece(r, v, b, x_below, 1.0)
    above = _log_piece(r, v, b, x_above, -1.0)
    if rng.random() * (1.0 + math.exp(above - below)) < 1.0:
        return m + v / b - sd * _normal_above(rng, -x_below)   # Z < x_below
    return m - v / b + sd * _normal_above(rng, -x_above)       # Z > -x_above


@numba.njit(nogil=True, cache=True)
def cholesky(A):
    """``(L, ok)``: the lower Cholesky factor of a small symmetric matrix, and whether it is
    positive definite. Written out because for the few coordinates of a statistic a LAPACK
    call costs more than the arithmetic."""
    d = A.shape[0]
    L = np.zeros((d, d))
    for j in range(d):
        t = A[j, j]
        for k in range(j):
            t -= L[j, k] * L[j, k]
        if not t > 0.0:
            return L, False
        L[j, j] = math.sqrt(t)
        for i in range(j + 1, d):
            t = A[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    return L, True


@numba.njit(nogil=True, cache=True)
def _log_normal_cholesky(r, L):
    """log N(r; 0, L L^T) by forward substitution."""
    d = r.shape[0]
    z = np.empty(d)
    out = -d * _LOG_SQRT_2PI
    for i in range(d):
        t = r[i]
        for k in range(i):
            t -= L[i, k] * z[k]
        z[i] = t / L[i, i]
        out -= 0.5 * z[i] * z[i] + math.log(L[i, i])
    return out


@numba.njit(nogil=True, cache=True)
def log_normal_density(x, mean, cov):
    """log N(x; mean, cov) for a positive definite ``cov`` (-inf if it is not)."""
    L, ok = cholesky(cov)
    if not ok:
        return -math.inf
    return _log_normal_cholesky(x - mean, L)


# Small matrix products written out: numba sends ``@`` to BLAS, whose call costs more than
# the arithmetic for the few coordinates of a statistic.

@numba.njit(nogil=True, cache=True)
def _dot(x, y):
    out = 0.0
    for i in range(x.shape[0]):
        out += x[i] * y[i]
    return out


@numba.njit(nogil=True, cache=True)
def _matvec(A, x):
    """A x."""
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[i] += A[i, j] * x[j]
    return out


@numba.njit(nogil=True, cache=True)
def _tmatvec(A, x):
    """A^T x."""
    out = np.zeros(A.shape[1])
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[j] += A[i, j] * x[i]
    return out


@numba.njit(nogil=True, cache=True)
def _on_support(basis, x):
    """Coordinates ``basis^T x`` of ``x`` in the statistic's support."""
    return _tmatvec(basis, x)


@numba.njit(nogil=True, cache=True)
def _cov_on_support(basis, S):
    """``basis^T S basis``: a covariance restricted to the support (positive definite there
    for the multinomial, whose counts sum to n)."""
    d, r = basis.shape
    SB = np.zeros((d, r))
    for i in range(d):
        for k in range(d):
            for j in range(r):
                SB[i, j] += S[i, k] * basis[k, j]
    out = np.zeros((r, r))
    for a in range(r):
        for b in range(r):
            for i in range(d):
                out[a, b] += basis[i, a] * SB[i, b]
    return out


@numba.njit(nogil=True, cache=True)
def _spd_solve(A, B):
    """A^{-1} B for a symmetric positive definite ``A`` (Cholesky; a LAPACK call costs more
    than the arithmetic for a few coordinates)."""
    L, ok = cholesky(A)
    d, k = B.shape
    X = np.empty((d, k))
    for c in range(k):
        z = np.empty(d)
        for i in range(d):
            t = B[i, c]
            for j in range(i):
                t -= L[i, j] * z[j]
            z[i] = t / L[i, i]
        for i in range(d - 1, -1, -1):
            t = z[i]
            for j in range(i + 1, d):
                t -= L[j, i] * X[j, c]
            X[i, c] = t / L[i, i]
    return X


@numba.njit(nogil=True)
def _release_moments(fns, theta, config):
    """Mean (d,) and covariance (d, d) of the released statistic under the CLT: ``n mu`` and
    ``n Sigma``, or the centre part's random-sum CLT (Prop. 1) for a truncated release."""
    if config.truncated:
        n = config.n
        q, mean_hat, var_hat = _region_moments(fns, theta, config.lower, config.upper,
                                               config.discrete)
        return (np.array([n * q * mean_hat]),
                np.array([[n * q * var_hat + n * q * (1.0 - q) * mean_hat ** 2]]))
    mu, Sigma = fns.mean_cov(theta)
    return config.n * mu, config.n * Sigma


@numba.njit(nogil=True)
def _release_log_likelihood(m, V, config, noise_var):
    """log of the release's density given the statistic ~ N(m, V), the statistic integrated
    out: in closed form for one coordinate; for a vector Laplace release given the current
    noise variances ``noise_var`` (the Gaussian mechanism's fixed ones otherwise)."""
    d = m.shape[0]
    y = config.y
    if d == 1 and config.laplace_scale > 0.0:
        return log_normal_laplace(m[0] - y[0], V[0, 0], config.laplace_scale)
    C = V.copy()
    for j in range(d):
        C[j, j] += noise_var[j]
    return log_normal_density(y, m, C)


@numba.njit(nogil=True)
def _log_conjugate_likelihood(fns, theta, u, pseudo_n):
    """eta(theta)^T u - n~ A(eta(theta)): theta's part of the conjugate posterior given the
    total ``u`` of ``pseudo_n`` records (the prior is the rest, and cancels)."""
    eta = _as_vector(fns.likelihood_natural(theta))
    return _dot(eta, u) - pseudo_n * fns.log_partition(eta)


@numba.njit(nogil=True)
def _finite(theta):
    for j in range(theta.shape[0]):
        if not np.isfinite(theta[j]):
            return False
    return True


@numba.njit(nogil=True)
def _pseudo_factor(basis, pseudo_n, Sigma):
    """Cholesky factor of the pseudo-total's covariance on the support, and whether it
    exists (it does not at a theta on the boundary of the parameter space)."""
    return cholesky(pseudo_n * _cov_on_support(basis, Sigma))


# Layout of SuffstatState.pseudo.
_PSEUDO_LOG_N, _PSEUDO_ADAPTED, _PSEUDO_SUMMARISED, _PSEUDO_INDEPENDENT, _PSEUDO_STATS = 0, 1, 2, 3, 4


@numba.njit(nogil=True, cache=True)
def freeze(state):
    r"""End of warm-up: the independence move's pseudo-sample size from the summaries of the
    second half of warm-up. The conjugate update given :math:`\tilde n` records of mean
    :math:`\bar\mu` has spread about :math:`\Sigma/\tilde n` in :math:`\mu`, so
    :math:`\tilde n = \bar\Sigma_{jj}/\mathrm{Var}(\mu_j)` (averaged over coordinates)
    matches the posterior's; ``independence_width`` of it widens the proposal. Off (0)
    when fewer than 20 draws were summarised or mu did not move."""
    p = state.pseudo
    d = (p.shape[0] - _PSEUDO_STATS) // 3
    count = p[_PSEUDO_SUMMARISED]
    p[_PSEUDO_INDEPENDENT] = 0.0
    if count < 20.0:
        return
    total, used = 0.0, 0
    for j in range(d):
        var = p[_PSEUDO_STATS + d + j] / (count - 1.0)
        sigma = p[_PSEUDO_STATS + 2 * d + j]
        if var > 0.0 and sigma > 0.0:
            total += sigma / var
            used += 1
    if used > 0:
        p[_PSEUDO_INDEPENDENT] = total / used


@numba.njit(nogil=True)
def _summarise(state, mu, Sigma):
    """Welford's running mean and squared deviations of mu(theta), mean of diag Sigma."""
    p = state.pseudo
    d = mu.shape[0]
    p[_PSEUDO_SUMMARISED] += 1.0
    count = p[_PSEUDO_SUMMARISED]
    for j in range(d):
        before = mu[j] - p[_PSEUDO_STATS + j]
        p[_PSEUDO_STATS + j] += before / count
        p[_PSEUDO_STATS + d + j] += before * (mu[j] - p[_PSEUDO_STATS + j])
        p[_PSEUDO_STATS + 2 * d + j] += (Sigma[j, j] - p[_PSEUDO_STATS + 2 * d + j]) / count


@numba.njit(nogil=True)
def marginal_step(rng, state, config, fns, phase):
    """One iteration of the marginal kernel: ``config.moves`` local pseudo-data
    Metropolis-Hastings steps for theta and ``config.independence_moves`` independence steps
    (module docstring), then the statistic, then (vector Laplace release) the noise
    variances. Returns ``(state, mean acceptance of the local steps, status)``.

    The pseudo-total lives on the statistic's support ``config.basis`` (an orthonormal basis
    of the span of Sigma, the same for every theta: the hyperplane of counts summing to n for
    the multinomial), where its covariance is positive definite; its density there is the
    one the ratio needs."""
    theta = state.theta.copy()
    basis = config.basis
    pseudo_n = math.exp(state.pseudo[_PSEUDO_LOG_N])
    d = state.s.shape[0]
    # theta's release moments (and, without noise variances to integrate over, its
    # likelihood) are kept from the previous iteration.
    univariate_exact = d == 1  # the likelihood does not depend on sigma^2
    if state.cached[0] == 1.0:
        m, V = state.release_mean.copy(), state.release_cov.copy()
    else:
        m, V = _release_moments(fns, theta, config)
    if state.cached[0] == 1.0 and univariate_exact:
        log_lik = state.cached[1]
    else:
        log_lik = _release_log_likelihood(m, V, config, state.noise_var)
    mu, Sigma = fns.mean_cov(theta)
    r = basis.shape[1]
    mean_accept = 0.0
    if d == 1:
        L, ok = np.empty((1, 1)), Sigma[0, 0] > 0.0
    else:
        L, ok = _pseudo_factor(basis, pseudo_n, Sigma)
    local = config.moves
    for _ in range(local):
        a = 0.0
        if not ok:
            continue
        if d == 1:
            # The same step in scalars (no small arrays to allocate).
            sd = math.sqrt(pseudo_n * Sigma[0, 0])
            z1 = rng.standard_normal()
            u = np.array([pseudo_n * mu[0] + sd * z1])
            log_u = -0.5 * z1 * z1 - math.log(sd) - _LOG_SQRT_2PI
        else:
            z = rng.standard_normal(r)
            u = pseudo_n * mu + _matvec(basis, _matvec(L, z))
            log_u = -0.5 * _dot(z, z) - r * _LOG_SQRT_2PI
            for j in range(r):
                log_u -= math.log(L[j, j])
        if fns.valid(u, pseudo_n):
            proposal = fns.conjugate_draw(rng, u, pseudo_n)
            if not _finite(proposal):
                return state, mean_accept, BAD_THETA
            m_new, V_new = _release_moments(fns, proposal, config)
            log_lik_new = _release_log_likelihood(m_new, V_new, config, state.noise_var)
            mu_new, Sigma_new = fns.mean_cov(proposal)
            if d == 1:
                L_new, ok_new = L, Sigma_new[0, 0] > 0.0
                if ok_new:
                    v_new = pseudo_n * Sigma_new[0, 0]
                    dev = u[0] - pseudo_n * mu_new[0]
                    log_u_new = -0.5 * dev * dev / v_new - 0.5 * math.log(v_new) - _LOG_SQRT_2PI
            else:
                L_new, ok_new = _pseudo_factor(basis, pseudo_n, Sigma_new)
                if ok_new:
                    log_u_new = _log_normal_cholesky(
                        _on_support(basis, u - pseudo_n * mu_new), L_new)
            if ok_new:
                log_ratio = (log_lik_new - log_lik + log_u_new - log_u
                             + _log_conjugate_likelihood(fns, theta, u, pseudo_n)
                             - _log_conjugate_likelihood(fns, proposal, u, pseudo_n))
                if log_lik == -math.inf and log_lik_new > -math.inf:
                    log_ratio = math.inf  # leave a start the release rules out
                a = acceptance_probability(log_ratio)
                if a >= 1.0 or (a > 0.0 and rng.random() < a):
                    theta, log_lik, m, V, mu, Sigma, L = (proposal, log_lik_new, m_new,
                                                          V_new, mu_new, Sigma_new, L_new)
        mean_accept += a / local
    reported, steps = mean_accept * local, local
    independent_n = state.pseudo[_PSEUDO_INDEPENDENT] * config.independence_width
    if phase == 0 and independent_n > 0.0:
        # Independence Metropolis-Hastings: the conjugate update given the fixed pseudo-total
        # independent_n * mean(mu) proposes from about the posterior, widened; the prior
        # cancels and the proposal's own factor is e^{L(theta; u, n~)}.
        d = mu.shape[0]
        u = independent_n * state.pseudo[_PSEUDO_STATS:_PSEUDO_STATS + d]
        for _ in range(config.independence_moves):
            if not fns.valid(u, independent_n):
                break
            proposal = fns.conjugate_draw(rng, u, independent_n)
            if not _finite(proposal):
                return state, mean_accept, BAD_THETA
            m_new, V_new = _release_moments(fns, proposal, config)
            log_lik_new = _release_log_likelihood(m_new, V_new, config, state.noise_var)
            log_ratio = (log_lik_new - log_lik
                         + _log_conjugate_likelihood(fns, theta, u, independent_n)
                         - _log_conjugate_likelihood(fns, proposal, u, independent_n))
            a = acceptance_probability(log_ratio)
            reported += a
            steps += 1
            if a >= 1.0 or (a > 0.0 and rng.random() < a):
                theta, log_lik, m, V = proposal, log_lik_new, m_new, V_new
                mu, Sigma = fns.mean_cov(theta)
    if phase > 0:
        # Robbins-Monro on log n~: a larger pseudo-sample gives narrower proposals and more
        # acceptances. Warm-up only; the kept draws use the frozen value.
        p = state.pseudo
        p[_PSEUDO_ADAPTED] += 1.0
        p[_PSEUDO_LOG_N] -= (mean_accept - config.target_accept) / p[_PSEUDO_ADAPTED] ** 0.6
        p[_PSEUDO_LOG_N] = min(max(p[_PSEUDO_LOG_N], math.log(1e-3)), math.log(config.n))
        if phase == 2:
            _summarise(state, mu, Sigma)
    # The released statistic given theta (and the noise variances), for output and for the
    # vector Laplace release's noise update; never constrained to its valid region (module
    # docstring), so the pair (theta, s) is a draw of the same joint whose marginal is sampled.
    d = m.shape[0]
    if d == 1 and config.laplace_scale > 0.0:
        s = np.array([draw_normal_laplace(rng, m[0], V[0, 0], config.y[0],
                                          config.laplace_scale)])
    elif d == 1:
        v, noise = V[0, 0], state.noise_var[0]
        s = np.array([(m[0] * noise + config.y[0] * v) / (v + noise)
                      + math.sqrt(v * noise / (v + noise)) * rng.standard_normal()])
    else:
        # s | theta, y ~ N(m + K^T (y - m), V - V K), K = (V + D)^{-1} V (norm_product's
        # form, which keeps s on the support), drawn on the support.
        M = V.copy()
        for j in range(d):
            M[j, j] += state.noise_var[j]
        K = _spd_solve(M, V)
        m_s = m + _tmatvec(K, config.y - m)
        S_s = V.copy()
        for i in range(d):
            for j in range(d):
                for k in range(d):
                    S_s[i, j] -= V[i, k] * K[k, j]
        L_s, ok_s = cholesky(_cov_on_support(basis, 0.5 * (S_s + S_s.T)))
        s = m_s.copy()
        if ok_s:
            s += _matvec(basis, _matvec(L_s, rng.standard_normal(r)))
    _copy_into(state.theta, theta)
    _copy_into(state.s, s)
    _copy_into(state.s_centre, s)
    _copy_into(state.release_mean, m)
    for j in range(d):
        _copy_into(state.release_cov[j], V[j])
    state.cached[0] = 1.0
    state.cached[1] = log_lik
    if d > 1:
        _update_noise(rng, state, config)
    return state, reported / max(steps, 1), OK


@numba.njit(nogil=True)
def run_marginal(rng, state, config, fns, start, stop, tune, out_theta, out_accept, out_s):
    """:func:`run` for the marginal kernel (compiled apart, so that the Gibbs kernels' loop
    is the one it always was): ``out_accept`` gets each iteration's mean acceptance
    probability. Warm-up is in two halves: the local step adapts in both, the second is
    summarised for the independence step, which :func:`freeze` sets up at ``it == tune``."""
    for it in range(start, stop):
        if it == tune:
            freeze(state)
        phase = 0 if it >= tune else (1 if 2 * it < tune else 2)
        state, accept, status = marginal_step(rng, state, config, fns, phase)
        if status != OK:
            return state, it, status
        if it >= tune:
            row = it - tune
            _copy_into(out_theta[row], state.theta)
            out_accept[row] = accept
            if out_s.shape[0] > 0:
                _copy_into(out_s[row], state.s_centre)
    return state, stop, OK
