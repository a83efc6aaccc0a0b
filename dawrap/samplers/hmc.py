r"""Hamiltonian Monte Carlo theta kernel, step size and diagonal mass matrix learned during
warm-up only.

Given a compiled ``logp_and_grad(u, x) -> (logp, grad)`` of the complete-data log posterior
:math:`\log p(u) + \log f(x \mid u)` on an unconstrained :math:`u \in \mathbb{R}^d` (log
Jacobian included), one step draws a momentum :math:`p \sim N(0, M)`, runs :math:`L`
leapfrog steps of size :math:`\epsilon` of the dynamics with Hamiltonian
:math:`H(u, p) = -\log p(u \mid x) + \tfrac12 p^\top M^{-1} p` and accepts the end point with
probability :math:`\min\{1, e^{H_0 - H_L}\}` (Neal 2011). While ``tuning``, the log step size
follows dual averaging towards an acceptance rate (Hoffman & Gelman 2014) and the diagonal
:math:`M^{-1}` is re-estimated at the end of doubling windows (as Stan does); after warm-up
both are frozen, so the kept draws come from an exact Metropolis-within-Gibbs chain.

**The metric of a step inside a Gibbs sampler.** Each step targets :math:`p(u \mid x)` for the
current imputed database, but the chain's draws of :math:`u` vary with :math:`x` too: their
variance is the *marginal* one, :math:`\operatorname{Var} u_j = E\,\operatorname{Var}(u_j
\mid x) + \operatorname{Var} E(u_j \mid x)`, much larger than the conditional one when the
release leaves much of the database unknown. Stan's estimate (the draws' variance) then makes
the step size, and so the cost of a trajectory of fixed length, follow the wrong scale. The
gradient measures the right one: at stationarity :math:`u \mid x \sim p(u \mid x)`, so
:math:`E[g_j^2] = E_x[\mathcal{I}_{jj}(x)]` with :math:`g = \nabla_u \log p(u \mid x)`
and :math:`\mathcal I(x)` the conditional's Fisher information, and :math:`1/\mathcal
I_{jj}` is :math:`u_j`'s conditional variance given :math:`x` and the other coordinates (for a
Gaussian exactly). The window's estimate is
:math:`M^{-1}_{jj} = \min(1 / \overline{g_j^2},\ \widehat{\operatorname{Var}}\,u_j)`
(the draws' variance bounds the conditional one, and caps the estimate where the gradient is
nearly flat), shrunk towards :math:`10^{-3}` with weight :math:`5/(n + 5)` as Stan does.

>>> import numba, numpy as np, dawrap as dw
>>> @numba.njit
... def logp_and_grad(beta, x):          # logistic regression, N(0, 2^2) prior
...     z = np.ascontiguousarray(x[:, 1:])  # the covariates (contiguous: a fast @)
...     eta = z @ beta
...     mu = 1.0 / (1.0 + np.exp(-eta))
...     logp = -0.125 * beta @ beta + np.sum(x[:, 0] * eta - np.log1p(np.exp(eta)))
...     return logp, -0.25 * beta + z.T @ (x[:, 0] - mu)
>>> kernel = dw.kernels.hmc(logp_and_grad)

One step at the database ``x`` of records :math:`(y, 1, z)`, as the sampler takes it (here
while tuning, which updates the kernel's state in place):

>>> x = np.array([[1.0, 1.0, 0.5], [0.0, 1.0, -1.2], [1.0, 1.0, 2.0]])
>>> beta, state = np.zeros(2), kernel.init_state(np.zeros(2))
>>> beta, info = kernel.step(np.random.default_rng(0), beta, x, np.zeros(0), state, True)
>>> beta.shape, 0.0 <= info.theta_accept <= 1.0, info.diverging
((2,), True, 0.0)

Its info becomes the result's sample stats (``kernel.stats``): the acceptance probability,
whether the trajectory diverged, the step size and the number of leapfrog steps.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from .._checks import as_count, as_positive_float, require_arity, require_njit
from ..model.protocols import Kernel
from .acceptance import acceptance_probability

__all__ = ["hmc", "identity", "HmcState", "HmcInfo", "DIVERGENCE"]

class HmcState(NamedTuple):
    """The per-chain state of :func:`hmc`, carried by the sampler and updated in place during
    warm-up (the scalars are arrays of one value for that); a checkpoint stores the fields
    flattened in this order (:func:`dawrap.samplers.arrays.flatten_state`)."""
    log_eps: np.ndarray      # (1,) log step size while tuning
    log_eps_bar: np.ndarray  # (1,) dual averaging's mean log step (used after warm-up)
    hbar: np.ndarray         # (1,) dual averaging's mean acceptance deficit
    t: np.ndarray            # (1,) dual-averaging iterations
    mu: np.ndarray           # (1,) dual averaging's centre
    count: np.ndarray        # (1,) warm-up iterations
    window_end: np.ndarray   # (1,) end of the current mass-matrix window
    window_n: np.ndarray     # (1,) iterations in it
    inv_mass: np.ndarray     # (d,) diagonal inverse mass matrix
    mean: np.ndarray         # (d,) the window's mean of u (Welford)
    m2: np.ndarray           # (d,) its sum of squared deviations
    g2: np.ndarray           # (d,) its sum of squared gradients


class HmcInfo(NamedTuple):
    """What one step of :func:`hmc` reports: each field a sample stat of the result."""
    theta_accept: float  # the acceptance probability of the trajectory's end point
    diverging: float     # 1.0 where the trajectory diverged (DIVERGENCE), else 0.0
    step_size: float     # the leapfrog step it used (jittered)
    n_steps: float       # the leapfrog steps it made


#: A trajectory diverges when its log density stops being finite or its energy error
#: exceeds this (Stan's threshold): the step size is too large for the posterior's curvature
#: there, and the draws may miss that region.
DIVERGENCE = 1000.0

_FIRST_WINDOW = 50.0
# Dual-averaging constants of Hoffman & Gelman (2014), section 3.2.1.
_GAMMA, _T0, _KAPPA = 0.05, 10.0, 0.75


@numba.njit(nogil=True, cache=True)
def identity(theta):
    """The map of a model whose parameter space is already :math:`\\mathbb{R}^d`."""
    return theta.copy()


@numba.njit(nogil=True, cache=True)
def _restart_dual_averaging(state, log_eps):
    state.log_eps[0] = log_eps
    state.mu[0] = math.log(10.0) + log_eps
    state.hbar[0] = 0.0
    state.t[0] = 0.0


@numba.njit(nogil=True, cache=True)
def _adapt(state, u, grad, accept_prob, target):
    """One warm-up update: dual averaging on the log step, Welford on u's variance, the sum
    of squared gradients at u, and the inverse mass matrix replaced at the end of each
    doubling window (module doc)."""
    d = u.shape[0]
    t = state.t[0] + 1.0
    eta = 1.0 / (t + _T0)
    state.hbar[0] = (1.0 - eta) * state.hbar[0] + eta * (target - accept_prob)
    log_eps = state.mu[0] - math.sqrt(t) / _GAMMA * state.hbar[0]
    weight = t ** -_KAPPA
    state.log_eps_bar[0] = weight * log_eps + (1.0 - weight) * state.log_eps_bar[0]
    state.log_eps[0], state.t[0] = log_eps, t

    inv_mass, mean, m2, g2 = state.inv_mass, state.mean, state.m2, state.g2
    n = state.window_n[0] + 1.0
    for j in range(d):
        delta = u[j] - mean[j]
        mean[j] += delta / n
        m2[j] += delta * (u[j] - mean[j])
        if math.isfinite(grad[j]):
            g2[j] += grad[j] * grad[j]
    state.window_n[0] = n
    state.count[0] += 1.0
    if state.count[0] >= state.window_end[0]:
        # the conditional variance from the gradient, capped by the draws' variance, then
        # Stan's regularisation: shrunk towards 1e-3 with weight 5/(n+5)
        for j in range(d):
            var = m2[j] / max(n - 1.0, 1.0)
            if g2[j] > 0.0:
                var = min(var, n / g2[j])
            inv_mass[j] = (n / (n + 5.0)) * var + 1e-3 * (5.0 / (n + 5.0))
            mean[j] = 0.0
            m2[j] = 0.0
            g2[j] = 0.0
        state.window_n[0] = 0.0
        state.window_end[0] = state.count[0] + 2.0 * n
        # the metric changed: the step size learned for the old one is only a start
        _restart_dual_averaging(state, state.log_eps[0])


def hmc(logp_and_grad, step_size: float = 0.1, path_length: float = 2.0,
        max_steps: int = 64, target: float = 0.8, to_unconstrained=None,
        to_constrained=None) -> Kernel:
    r"""Hamiltonian Monte Carlo, tuned during warm-up and then frozen.

    Each step makes :math:`L = \lceil \lambda / \epsilon \rceil` leapfrog steps
    (at most ``max_steps``) with :math:`\epsilon` jittered uniformly in
    :math:`[0.8, 1.2]\times` the tuned step (jitter independent of the state keeps the
    kernel reversible and avoids periodic trajectories). ``path_length`` :math:`\lambda` is
    in units of the conditional posterior sd (given the imputed records) once the mass
    matrix is learned: about :math:`\pi/2` turns a Gaussian's coordinates into nearly
    independent draws. Each step costs :math:`L + 1` gradient evaluations.

    Parameters
    ----------
    logp_and_grad : numba.njit function
        ``(u, x) -> (logp, grad)``: the log prior plus the complete-data log likelihood of the
        imputed database ``x`` at the unconstrained parameter ``u`` (float, 1-d array of
        ``u``'s size), up to a constant; ``-inf`` or NaN marks a point to reject.
    step_size : float
        Initial leapfrog step, before dual averaging.
    path_length : float
        Trajectory length :math:`\epsilon L`.
    max_steps : int
        Upper bound on :math:`L` (a cap on the cost of one step with a tiny step size).
    target : float
        Acceptance rate that dual averaging aims at.
    to_unconstrained, to_constrained : numba.njit function, optional
        ``(theta) -> u`` and ``(u) -> theta`` when the sampler's ``theta`` lives in a
        constrained space (e.g. a log for a scale); ``u`` must have ``theta``'s size.
        Without them ``theta`` is ``u``.

    Returns
    -------
    Kernel
        For ``dw.Model(draw_theta=...)``.

    Examples
    --------
    Records :math:`x_i \sim N(\mu, 1)` and the prior :math:`\mu \sim N(0, 10^2)`: the
    complete-data log posterior and its gradient, the record draw, and the model.

    >>> import dawrap as dw
    >>> @numba.njit
    ... def logp_and_grad(u, x):
    ...     r = x[:, 0] - u[0]
    ...     return -0.005 * u[0] ** 2 - 0.5 * np.sum(r * r), np.array([np.sum(r) - 0.01 * u[0]])
    >>> @numba.njit
    ... def draw_record(rng, theta, out):
    ...     out[0] = theta[0] + rng.standard_normal()
    >>> model = dw.Model(params={"mu": ()}, record_size=1, draw_record=draw_record,
    ...                  draw_theta=dw.kernels.hmc(logp_and_grad, path_length=1.5),
    ...                  draw_prior=lambda rng: np.array([rng.normal(0.0, 10.0)]))
    >>> model.draw_theta.name
    'hmc'
    """
    require_njit(logp_and_grad, "logp_and_grad", "(u, x) -> (logp, grad)")
    require_arity(logp_and_grad, "logp_and_grad", "(u, x) -> (logp, grad)", 2)
    initial = as_positive_float(step_size, "step_size")
    length = as_positive_float(path_length, "path_length")
    cap = as_count(max_steps, "max_steps")
    goal = as_positive_float(target, "target")
    if goal >= 1.0:
        raise ValueError(f"target must be an acceptance rate in (0, 1), got {target!r}")
    if (to_unconstrained is None) != (to_constrained is None):
        raise ValueError("to_unconstrained and to_constrained go together: give both or "
                         "neither")
    fwd = identity if to_unconstrained is None else require_njit(
        to_unconstrained, "to_unconstrained", "(theta) -> u")
    bwd = identity if to_constrained is None else require_njit(
        to_constrained, "to_constrained", "(u) -> theta")

    def init_state(theta) -> HmcState:
        d = np.asarray(theta).shape[0]
        state = HmcState(*(np.zeros(1) for _ in range(8)), np.ones(d), np.zeros(d),
                         np.zeros(d), np.zeros(d))
        _restart_dual_averaging(state, math.log(initial))
        state.log_eps_bar[0] = math.log(initial)
        state.window_end[0] = _FIRST_WINDOW
        return state

    @numba.njit(nogil=True)
    def step(rng, theta, x, stats, state, tuning):
        u0 = fwd(theta)
        d = u0.shape[0]
        inv_mass = state.inv_mass
        eps = math.exp(state.log_eps[0] if tuning else state.log_eps_bar[0])
        eps *= 0.8 + 0.4 * rng.random()
        n_steps = min(cap, max(1, int(math.ceil(length / eps))))
        p = rng.standard_normal(d) / np.sqrt(inv_mass)
        logp, grad = logp_and_grad(u0, x)
        grad0 = grad.copy()  # for the adaptation, should the step be rejected
        h0 = -logp + 0.5 * np.sum(inv_mass * p * p)
        u = u0.copy()
        ok = math.isfinite(logp)
        if ok:
            p += 0.5 * eps * grad
            for l in range(n_steps):
                u += eps * inv_mass * p
                logp, grad = logp_and_grad(u, x)
                if not math.isfinite(logp):
                    ok = False
                    break
                p += (0.5 if l == n_steps - 1 else 1.0) * eps * grad
        error = -(h0 + logp - 0.5 * np.sum(inv_mass * p * p)) if ok else math.inf
        a = acceptance_probability(-error) if ok else 0.0
        accepted = a >= 1.0 or rng.random() < a
        if tuning:
            _adapt(state, u if accepted else u0, grad if accepted else grad0, a, goal)
        diverging = 0.0 if error <= DIVERGENCE else 1.0
        return ((bwd(u) if accepted else theta.copy()),
                HmcInfo(a, diverging, eps, float(n_steps)))

    return Kernel(step, init_state, "hmc", HmcInfo._fields)
