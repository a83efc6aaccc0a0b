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

The marginal kernel (``variant="marginal"``, for releases where the noise dominates) is in
:mod:`dawrap.samplers.suffstat_marginal`; the runner (:mod:`dawrap.runner.suffstat`) picks
the kernel.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from ..compile import templates as _templates
from ..model.family import TRUNCATION_TEMPLATES, truncated_moments_of
from . import loop
from .arrays import copy_into
from .status import BAD_THETA, OK, TOO_MANY_REJECTIONS, message

__all__ = ["SuffstatFunctions", "SuffstatState", "SuffstatInputs", "norm_product",
           "GibbsInfo", "draw_normal", "region_moments", "inverse_gaussian", "update_noise",
           "step", "bind_run",
           "MAX_REJECTIONS", "STATUS_MESSAGES", "OK", "WALD_CANCELLATION"]

#: Draws of ``s`` rejected in one iteration before the sampler gives up (status != 0).
MAX_REJECTIONS = 10_000
STATUS_MESSAGES = {
    TOO_MANY_REJECTIONS: message(TOO_MANY_REJECTIONS, max_rejections=MAX_REJECTIONS),
    BAD_THETA: message(BAD_THETA, "the family's conjugate_draw"),
}


# The slots the templates below read: SuffstatFunctions' fields in capitals, bound per
# family (function_names; dawrap._templates checks the names against these). CDF and SF are
# the truncation templates' (dawrap.model.family), bound with them.
MEAN_COV = _templates.slot("(theta) -> (mu, Sigma): the moments of t(x) under theta")
CONJUGATE_DRAW = _templates.slot("(rng, s, n) -> theta: a draw from p(theta | s, n)")
VALID = _templates.slot("(s, n) -> bool: s is a statistic n records can have")
NATURAL = _templates.slot("(theta) -> eta: the natural parameter (a float for truncation)")
LOG_PARTITION = _templates.slot("(eta) -> A(eta): the log-partition function")
LIKELIHOOD_NATURAL = _templates.slot("(theta) -> eta of the conjugate likelihood")
CDF = _templates.slot("(x, eta) -> P(X <= x): unbounded univariate families")
SF = _templates.slot("(x, eta) -> P(X >= x): unbounded univariate families")


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


class GibbsInfo(NamedTuple):
    """What a Gibbs iteration reports: its status and its one sample stat."""
    status: int      # dawrap.samplers.status: OK, or why the step stopped
    rejections: int  # draws of s rejected (outside the valid region) before one was kept


class SuffstatState(NamedTuple):
    """The Gibbs kernels' state."""
    theta: np.ndarray      # (theta_size,)
    s: np.ndarray          # (d,) full sufficient statistic
    s_centre: np.ndarray   # (d,) its released part (= s when bounded)
    noise_var: np.ndarray  # (d,) sigma_j^2


class SuffstatInputs(NamedTuple):
    """The Gibbs kernels' inputs: the release and the settings (plain data)."""
    n: float
    y: np.ndarray          # (d,) the release
    laplace_scale: float   # b; 0 for the Gaussian mechanism (noise_var fixed)
    truncated: bool
    lower: float
    upper: float
    discrete: bool
    printed: bool          # Algorithm 2 line 10 as printed


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


def region_moments(theta, v, w, discrete):
    """(q, mean_hat, var_hat) of t(x) for records in [v, w] (Lemma 1)."""
    eta = NATURAL(theta)
    mu, Sigma = MEAN_COV(theta)
    return truncated_moments_of(eta, mu[0], Sigma[0, 0], v, w, discrete)


def _regions(theta, inputs):
    r"""Mean (3,) and covariance (3, 3) of :math:`(s_\ell, s_c, s_u)` under the CLT.

    Per record the vector :math:`(1_\ell t, 1_c t, 1_u t)` has mean :math:`q_r\hat\mu_r` and
    covariance :math:`\mathrm{diag}(q_r(\hat\Sigma_r + \hat\mu_r^2)) - (q\hat\mu)(q\hat\mu)^T`,
    so the diagonal of ``n`` times it is the random-sum CLT of Prop. 1 / Algorithm 3 (with
    ``m = n q mu_hat``) and the off-diagonal is :math:`-n q_i q_j \hat\mu_i \hat\mu_j`: a
    record lies in exactly one region, so the parts are negatively correlated. The paper's
    Algorithm 2 draws them independently (``inputs.printed`` keeps that); with the correct
    covariance the variance of the total is exactly ``n Var(t)``, consistent with the conjugate
    theta step, and modes of the posterior are no longer pushed away (see docs/suffstat.md).
    """
    a, b = inputs.lower, inputs.upper
    lo_end = a - 1.0 if inputs.discrete else a
    hi_start = b + 1.0 if inputs.discrete else b
    n = inputs.n
    bounds = ((-math.inf, lo_end), (a, b), (hi_start, math.inf))
    q = np.empty(3)
    mean_hat = np.empty(3)
    var_hat = np.empty(3)
    for r in range(3):
        q[r], mean_hat[r], var_hat[r] = region_moments(theta, bounds[r][0], bounds[r][1],
                                                        inputs.discrete)
    m = n * q * mean_hat
    V = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            if i == j:
                V[i, i] = n * q[i] * var_hat[i] + n * q[i] * (1.0 - q[i]) * mean_hat[i] ** 2
            elif inputs.printed:
                V[i, j] = 0.0
            else:
                V[i, j] = -n * q[i] * q[j] * mean_hat[i] * mean_hat[j]
    return m, V


@numba.njit(nogil=True, cache=True)
def _condition_on_release(m, V, y, noise_var):
    """(m, V) of (s_l, s_c, s_u) given y ~ N(s_c, noise_var): a Kalman update on component 1."""
    gain = V[:, 1] / (V[1, 1] + noise_var)
    m_post = m + gain * (y - m[1])
    V_post = V - np.outer(gain, V[1, :])
    return m_post, 0.5 * (V_post + V_post.T)


#: Above this ratio of ``mean z^2`` to ``scale`` :func:`inverse_gaussian` leaves the
#: textbook formula, whose relative error there exceeds about 5e-11.
WALD_CANCELLATION = 1e6


@numba.njit(nogil=True, cache=True)
def inverse_gaussian(rng, mean, scale):
    r"""One draw of InverseGaussian(``mean``, ``scale``): numba's ``Generator.wald``
    (Michael, Schucany & Haas 1976), with the same random draws and, where it is accurate,
    the same arithmetic (so the same values, bit for bit).

    With :math:`y = \mu z^2`, the root :math:`x = \mu + rac{\mu}{2\lambda}(y - \sqrt{4\lambda
    y + y^2})` is a difference of nearly equal numbers when :math:`y \gg \lambda`: for the huge
    means of a noise scale whose statistic sits on the release it came out as exactly 0 (and
    the noise variance 1/0 stopped the chain, or pinned it). There the same root is computed as
    :math:`x = 4\lambda / (z^2 (1 + \sqrt{1 + 4\lambda/y})^2)`, free of cancellation and
    overflow (about :math:`\lambda/z^2`, far from 0: as the mean grows the law tends to the
    Levy law of scale :math:`\lambda`).
    """
    z = rng.standard_normal()
    y = mean * z * z
    if y > WALD_CANCELLATION * scale:
        root = 1.0 + math.sqrt(1.0 + 4.0 * scale / y)
        x = 4.0 * scale / (z * z * root * root)
    else:
        mu_2l = mean / (2 * scale)
        x = mean + mu_2l * (y - np.sqrt(4 * scale * y + y * y))
    u = rng.random()
    if u <= mean / (mean + x):
        return x
    return mean * mean / x


@numba.njit(nogil=True, cache=True)
def update_noise(rng, state, inputs):
    """1/sigma_j^2 | s_c, y ~ InverseGaussian(1/(b |y_j - s_c,j|), 1/b^2) (Park & Casella)."""
    b = inputs.laplace_scale
    if b <= 0.0:
        return
    for j in range(state.noise_var.shape[0]):
        gap = max(abs(inputs.y[j] - state.s_centre[j]), 1e-300)
        state.noise_var[j] = 1.0 / inverse_gaussian(rng, 1.0 / (b * gap), 1.0 / (b * b))


def step(rng, state, inputs):
    """One Gibbs iteration (:mod:`dawrap.samplers.loop`'s protocol). Returns ``(state,
    GibbsInfo(status, rejections))``."""
    n = inputs.n
    rejections = 0
    if not inputs.truncated:
        # Algorithm 1: theta | s; s | theta, sigma^2, y; sigma^2 | s, y.
        theta = CONJUGATE_DRAW(rng, state.s, n)
        mu, Sigma = MEAN_COV(theta)
        m, S = norm_product(n * mu, n * Sigma, inputs.y, state.noise_var)
        s = draw_normal(rng, m, S)
        while not VALID(s, n):
            rejections += 1
            if rejections >= MAX_REJECTIONS:
                return state, GibbsInfo(TOO_MANY_REJECTIONS, rejections)
            s = draw_normal(rng, m, S)
        copy_into(state.s, s)
        copy_into(state.s_centre, s)
    else:
        # Algorithm 2: (s_l, s_c, s_u) | theta, sigma^2, y; theta | s; sigma^2 | s_c, y.
        m, V = _regions(state.theta, inputs)
        m, V = _condition_on_release(m, V, inputs.y[0], state.noise_var[0])
        while True:
            parts = draw_normal(rng, m, V)
            s = np.array([parts[0] + parts[1] + parts[2]])
            if VALID(s, n):
                break
            rejections += 1
            if rejections >= MAX_REJECTIONS:
                return state, GibbsInfo(TOO_MANY_REJECTIONS, rejections)
        s_c = parts[1:2].copy()
        theta = CONJUGATE_DRAW(rng, s, n)
        if inputs.printed:
            # The paper's line 10: s_c redrawn at the new theta, ignoring y.
            m, V = _regions(theta, inputs)
            s_c = draw_normal(rng, m[1:2].copy(), V[1:2, 1:2].copy())
        copy_into(state.s, s)
        copy_into(state.s_centre, s_c)
    for j in range(theta.shape[0]):
        if not np.isfinite(theta[j]):
            return state, GibbsInfo(BAD_THETA, rejections)
    copy_into(state.theta, theta)
    update_noise(rng, state, inputs)
    return state, GibbsInfo(OK, rejections)


def function_names(fns) -> dict:
    """A functions NamedTuple's fields as the templates' global names (in capitals)."""
    return {name.upper(): value for name, value in fns._asdict().items()}


#: The Gibbs kernels (with the truncation helpers they call), bound per family.
GIBBS_TEMPLATES = TRUNCATION_TEMPLATES + (region_moments, _regions, step)


def bind_run(fns: SuffstatFunctions):
    """The compiled Gibbs loop for one family's functions, :func:`dawrap.samplers.loop.run`
    bound to :func:`step` (templates bound to ``fns``: a built-in model's loads from numba's
    disk cache, :mod:`dawrap._templates`)."""
    # The step inlined into the loop: the state is not passed to a call and returned each
    # iteration (a new reference per array; dawrap.samplers.loop).
    return loop.bind(_templates.bind(GIBBS_TEMPLATES, function_names(fns),
                                     inline=("step",)).step).run
