r"""Theta kernels for models without a conjugate update: random-walk Metropolis, fixed or
adapted during warm-up.

The record sampler needs a Markov kernel that leaves :math:`p(\theta \mid x)` invariant for
the *current* imputed database. Given the log density of the complete-data posterior,

.. math:: \log p(\theta) + \log f(x \mid \theta) \quad (\text{up to a constant}),

written as a ``numba.njit`` function ``log_density(theta, x, stats) -> float`` (``stats`` are
the model's running sums, so an exponential-family model costs O(1); otherwise use ``x``),
:func:`metropolis` makes one Gaussian random-walk step per iteration. :func:`adaptive_metropolis`
also learns the proposal during warm-up (``tune``) only and then freezes it, so the kept draws
come from a fixed, exact Metropolis-within-Gibbs chain.

>>> import numba, numpy as np, dawrap as dw
>>> @numba.njit
... def log_density(theta, x, stats):      # logistic regression, N(0, 2^2) prior
...     eta = x[:, 1:] @ theta
...     return -0.125 * theta @ theta + np.sum(x[:, 0] * eta - np.log1p(np.exp(eta)))
>>> @numba.njit
... def draw_record(rng, theta, out):      # a record (y, 1, z), z ~ N(0, 1)
...     out[1], out[2] = 1.0, rng.standard_normal()
...     out[0] = 1.0 if rng.random() < 1.0 / (1.0 + np.exp(-(theta[0] + theta[1] * out[2]))) else 0.0
>>> kernel = dw.kernels.adaptive_metropolis(log_density, initial_scale=0.1)
>>> model = dw.Model(params={"beta": (2,)}, record_size=3, draw_record=draw_record,
...                  draw_theta=kernel, draw_prior=lambda rng: rng.normal(0.0, 2.0, 2))

A kernel is a :class:`Kernel`: a compiled ``step(rng, theta, x, stats, state, tuning) ->
(theta, accept_prob)`` plus ``init_state(theta)``, the per-chain state it may update in place
while ``tuning``: a float64 array or, with named fields, a NamedTuple of float64 arrays
(:class:`RandomWalkState`; a scalar is an array of one value, so that it can change in
place). The sampler keeps that state with the chain, and checkpoints it flattened
(:func:`dawrap.samplers.arrays.flatten_state`).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from ..compile import templates as _templates
from .._checks import require_njit, scale_vector
from ..model.protocols import Kernel, no_state
from .acceptance import acceptance_probability
from .hmc import hmc

__all__ = ["Kernel", "metropolis", "adaptive_metropolis", "as_kernel",
           "acceptance_probability", "rw_propose", "rw_adapt", "rw_init_state",
           "RandomWalkState", "hmc"]


#: The slot the templates below read, bound per model by :func:`as_kernel`.
DRAW_THETA = _templates.slot("(rng, theta, x, stats) -> theta, or (theta, accept_prob)")


def theta_step(rng, theta, x, stats, state, tuning):
    """A ``draw_theta`` that returns ``(theta, accept_prob)``, as a kernel step."""
    return DRAW_THETA(rng, theta, x, stats)


def theta_step_no_accept(rng, theta, x, stats, state, tuning):
    """A ``draw_theta`` that returns ``theta``, as a kernel step."""
    return DRAW_THETA(rng, theta, x, stats), np.nan


def as_kernel(draw_theta, returns_accept: bool) -> Kernel:
    """A user's ``draw_theta(rng, theta, x, stats)`` (returning ``theta`` or ``(theta,
    accept_prob)``) as a stateless :class:`Kernel` (a template bound to it, so that a
    built-in model's loads from numba's disk cache).

    Parameters
    ----------
    draw_theta : numba.njit function
        The model's ``draw_theta``.
    returns_accept : bool
        Whether it returns ``(theta, accept_prob)``; if not, the kernel reports NaN.

    Returns
    -------
    Kernel
        The same for the same function, so that the sampler compiles one step per
        ``draw_theta``.

    Examples
    --------
    >>> import numba
    >>> import numpy as np
    >>> import dawrap as dw
    >>> @numba.njit
    ... def draw_theta(rng, theta, x, stats):     # p | x ~ Beta(1 + k, 1 + n - k)
    ...     return np.array([rng.beta(1 + stats[0], 1 + x.shape[0] - stats[0])])
    >>> kernel = dw.kernels.as_kernel(draw_theta, returns_accept=False)
    >>> theta, accept_prob = kernel.step(np.random.default_rng(1), np.array([0.5]),
    ...                                  np.zeros((10, 1)), np.array([3.0]), np.empty(0), False)
    >>> theta.shape, accept_prob
    ((1,), nan)
    """
    template = theta_step if returns_accept else theta_step_no_accept
    step = getattr(_templates.bind((template,), {"DRAW_THETA": draw_theta}), template.__name__)
    return Kernel(step, no_state, getattr(draw_theta, "__name__", "draw_theta"))


def check_scale_length(scale: np.ndarray, theta: np.ndarray, name: str) -> None:
    """A proposal scale has one entry, or one per theta entry (checked when a chain starts,
    the first time theta's size is known)."""
    if scale.shape[0] not in (1, theta.shape[0]):
        raise ValueError(f"{name} has {scale.shape[0]} entries for a theta of "
                         f"{theta.shape[0]}")


def metropolis(log_density, scale) -> Kernel:
    r"""Gaussian random-walk Metropolis: propose :math:`\theta^\star = \theta + s \odot z`,
    :math:`z \sim N(0, I)`, accept with probability :math:`\min\{1, p(\theta^\star \mid x) /
    p(\theta \mid x)\}`.

    Parameters
    ----------
    log_density : numba.njit function
        ``(theta, x, stats) -> float``: log prior plus complete-data log likelihood, up to a
        constant; ``-inf`` outside the parameter space (such proposals are rejected).
    scale : float or array
        Proposal standard deviation, one value or one per theta entry.

    Returns
    -------
    Kernel
        For ``dw.Model(draw_theta=...)``.

    Examples
    --------
    One step on a standard normal target, called from Python (the sampler calls it from
    compiled code, with the imputed database ``x`` and the model's sums ``stats``):

    >>> import numba
    >>> import numpy as np
    >>> import dawrap as dw
    >>> @numba.njit
    ... def log_density(theta, x, stats):
    ...     return -0.5 * theta @ theta
    >>> kernel = dw.kernels.metropolis(log_density, scale=1.0)
    >>> theta = np.zeros(1)
    >>> state = kernel.init_state(theta)
    >>> theta, accept_prob = kernel.step(np.random.default_rng(0), theta, np.empty((0, 1)),
    ...                                  np.empty(0), state, False)
    >>> theta.shape, bool(0.0 <= accept_prob <= 1.0)
    ((1,), True)
    """
    require_njit(log_density, "log_density", "(theta, x, stats) -> float")
    scale = scale_vector(scale, "scale")

    def init_state(theta) -> np.ndarray:
        check_scale_length(scale, theta, "scale")
        return np.empty(0)

    @numba.njit(nogil=True)
    def step(rng, theta, x, stats, state, tuning):
        d = theta.shape[0]
        proposal = theta + scale * rng.standard_normal(d) if scale.shape[0] == d \
            else theta + scale[0] * rng.standard_normal(d)
        a = acceptance_probability(log_density(proposal, x, stats)
                                   - log_density(theta, x, stats))
        if a >= 1.0 or rng.random() < a:
            return proposal, a
        return theta.copy(), a

    return Kernel(step, init_state, "metropolis")


class RandomWalkState(NamedTuple):
    """The adaptive random walk's per-chain state (:func:`rw_init_state`), updated in place
    during warm-up by :func:`rw_adapt`. The scalars are arrays of one value, so that the
    compiled step can update them in place; a checkpoint stores the fields flattened in this
    order (:func:`dawrap.samplers.arrays.flatten_state`).

    Examples
    --------
    >>> import numpy as np
    >>> import dawrap as dw
    >>> state = dw.kernels.rw_init_state(np.array([1.0, 2.0]), np.array([0.1]))
    >>> dw.kernels.rw_adapt(state, np.array([1.5, 2.0]), 0.5, -1.0, 100, np.array([0.1]))
    >>> state.iterations, state.mean          # one warm-up iteration: the running mean moved
    (array([1.]), array([1.5, 2. ]))
    """
    log_step: np.ndarray    # (1,) log of the global step (Robbins-Monro)
    iterations: np.ndarray  # (1,) warm-up iterations seen
    accept_sum: np.ndarray  # (1,) sum of their acceptance probabilities
    estimated: np.ndarray   # (1,) 1.0 once the estimated covariance is in use
    mean: np.ndarray        # (d,) running mean of theta (Welford)
    scatter: np.ndarray     # (d, d) its sum of squared deviations
    factor: np.ndarray      # (d, d) lower Cholesky factor of the proposal covariance


@numba.njit(nogil=True, cache=True)
def _initial_sd(initial, j):
    return initial[j] if initial.shape[0] > 1 else initial[0]


@numba.njit(nogil=True, cache=True)
def rw_propose(rng, theta, state, initial, adapt_after):
    r"""A Gaussian random-walk proposal from the adaptive state ``state``: sd ``initial`` per
    entry until warm-up has learned a covariance (see :func:`rw_adapt`), then covariance
    :math:`(2.38^2/d)\,\hat\Sigma` through its stored Cholesky factor; both times scaled by
    the global step :math:`\exp(\text{state}[0])`.

    Parameters
    ----------
    rng : numpy.random.Generator
    theta : ndarray of shape (d,)
    state : RandomWalkState
        The adaptive state (:func:`rw_init_state`, updated by :func:`rw_adapt`).
    initial : ndarray
        The initial proposal sd, one value or ``d``.
    adapt_after : int
        Unused here; kept so that the proposal and the adaptation take the same arguments.

    Returns
    -------
    ndarray of shape (d,)

    Examples
    --------
    Before adaptation, the proposal is ``theta + initial * z``:

    >>> import numpy as np
    >>> import dawrap as dw
    >>> theta, initial = np.array([1.0, 2.0]), np.array([0.1])
    >>> state = dw.kernels.rw_init_state(theta, initial)
    >>> proposal = dw.kernels.rw_propose(np.random.default_rng(3), theta, state, initial, 100)
    >>> np.allclose(proposal, theta + 0.1 * np.random.default_rng(3).standard_normal(2))
    True
    """
    d = theta.shape[0]
    step = math.exp(state.log_step[0])
    z = rng.standard_normal(d)
    proposal = theta.copy()
    if state.estimated[0] > 0.0:
        factor = state.factor
        for j in range(d):
            shift = 0.0
            for k in range(j + 1):
                shift += factor[j, k] * z[k]
            proposal[j] += step * shift
    else:
        for j in range(d):
            proposal[j] += step * _initial_sd(initial, j) * z[j]
    return proposal


@numba.njit(nogil=True, cache=True)
def _proposal_factor(scatter, count, factor, initial):
    r"""``factor`` := the Cholesky factor of :math:`(2.38^2/d)\,\hat\Sigma`, with
    :math:`\hat\Sigma` = scatter / (count - 1) and its diagonal lifted by a relative 1e-10.
    An entry the chain has never moved gets the variance :math:`(2.38^2/d)\,s_j^2` from its
    ``initial`` sd :math:`s_j` (there is nothing to learn from); should rounding still leave a
    pivot <= 0, the diagonal of the same matrix is used."""
    d = scatter.shape[0]
    c = 2.38 * 2.38 / d
    cov = scatter * (c / max(count - 1.0, 1.0))
    for j in range(d):
        if scatter[j, j] > 0.0:
            cov[j, j] *= 1.0 + 1e-10
        else:
            cov[j, j] = c * _initial_sd(initial, j) ** 2
    factor[:, :] = 0.0
    for j in range(d):
        pivot = cov[j, j]
        for k in range(j):
            pivot -= factor[j, k] * factor[j, k]
        if not pivot > 0.0:
            factor[:, :] = 0.0
            for i in range(d):
                factor[i, i] = math.sqrt(cov[i, i])
            return
        factor[j, j] = math.sqrt(pivot)
        for i in range(j + 1, d):
            total = cov[i, j]
            for k in range(j):
                total -= factor[i, k] * factor[j, k]
            factor[i, j] = total / factor[j, j]


@numba.njit(nogil=True, cache=True)
def rw_adapt(state, theta, accept_prob, target, adapt_after, initial):
    r"""One warm-up update of the adaptive state: Robbins-Monro on the log step towards
    ``target`` (0.44 in one dimension, 0.234 otherwise, if ``target`` <= 0), Welford on the
    mean and covariance of the chain's ``theta``, and the proposal's Cholesky factor (O(d^3),
    warm-up only) once the estimate is in use.

    The estimate replaces the ``initial`` scale after ``adapt_after`` iterations *and* at
    least :math:`2d + 10` expected acceptances: a chain that has barely moved (an initial
    scale far too wide) has a near-singular sample covariance, and a proposal built on it
    would keep the chain from ever learning the missing directions.

    Parameters
    ----------
    state : RandomWalkState
        The adaptive state, updated in place.
    theta : ndarray of shape (d,)
        The chain's theta after this iteration's step.
    accept_prob : float
        The step's acceptance probability.
    target : float
        Target acceptance rate; <= 0 for the default.
    adapt_after : int
        Warm-up iterations before the estimated covariance may be used.
    initial : ndarray
        The initial proposal sd.

    Examples
    --------
    With acceptance 0.3 against the target 0.234 (two dimensions), the log step grows by
    0.066 after the first iteration:

    >>> import numpy as np
    >>> import dawrap as dw
    >>> theta, initial = np.array([1.0, 2.0]), np.array([0.1])
    >>> state = dw.kernels.rw_init_state(theta, initial)
    >>> dw.kernels.rw_adapt(state, theta, 0.3, -1.0, 100, initial)
    >>> state.log_step.round(3), state.iterations, state.accept_sum
    (array([0.066]), array([1.]), array([0.3]))
    """
    d = theta.shape[0]
    goal = target if target > 0 else (0.44 if d == 1 else 0.234)
    count = state.iterations[0] + 1.0
    state.log_step[0] += (accept_prob - goal) / count ** 0.6
    state.accept_sum[0] += accept_prob
    mean, scatter, factor = state.mean, state.scatter, state.factor
    before = theta - mean
    for j in range(d):
        mean[j] += before[j] / count
    for j in range(d):
        after = theta[j] - mean[j]
        for k in range(d):
            scatter[j, k] += before[k] * after
    state.iterations[0] = count
    if state.estimated[0] == 0.0 and count >= adapt_after and state.accept_sum[0] >= 2.0 * d + 10.0:
        state.estimated[0] = 1.0
        state.log_step[0] = 0.0  # the estimated covariance replaces the initial scale: restart
    if state.estimated[0] > 0.0:
        _proposal_factor(scatter, count, factor, initial)


def rw_init_state(theta, initial) -> RandomWalkState:
    """The adaptive state at the start of warm-up.

    Parameters
    ----------
    theta : ndarray of shape (d,)
        The chain's starting theta.
    initial : ndarray
        The initial proposal sd, one value or ``d`` (checked).

    Returns
    -------
    RandomWalkState
        Log step, iterations, sum of acceptances and covariance flag 0; the mean started at
        ``theta``; the scatter matrix and the Cholesky factor 0.

    Examples
    --------
    >>> import numpy as np
    >>> import dawrap as dw
    >>> state = dw.kernels.rw_init_state(np.array([1.0, 2.0]), np.array([0.1]))
    >>> state.mean, state.factor.shape
    (array([1., 2.]), (2, 2))
    """
    check_scale_length(initial, theta, "initial_scale")
    d = theta.shape[0]
    return RandomWalkState(np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1),
                           np.array(theta, dtype=np.float64), np.zeros((d, d)),
                           np.zeros((d, d)))


def adaptive_metropolis(log_density, initial_scale=0.1, target: float | None = None,
                        adapt_after: int = 100) -> Kernel:
    r"""Random-walk Metropolis whose proposal is learned during warm-up, then frozen.

    While tuning: the running mean and covariance :math:`\hat\Sigma` of theta are accumulated
    (Welford), and the global log step :math:`\log\lambda` follows the Robbins-Monro recursion
    :math:`\log\lambda \mathrel{+}= (a_t - a^\ast) / t^{0.6}` towards the acceptance rate
    :math:`a^\ast` (0.44 in one dimension, 0.234 otherwise; Roberts & Rosenthal 2001). For the
    first ``adapt_after`` warm-up iterations, and until the chain has made about 2d + 10
    accepted moves, the proposal is :math:`\lambda\, s \odot z` with :math:`s` the
    ``initial_scale``; afterwards it is :math:`N(0, \lambda^2 (2.38^2/d)
    \hat\Sigma)` (Haario et al. 2001), full covariance, so a posterior whose parameters are
    strongly correlated is crossed along its long axis rather than at the pace of its narrowest
    direction (the Cholesky factor is refreshed each warm-up iteration, O(d^3)).
    After warm-up nothing changes, so the kept draws are exact (the chain is an ordinary
    Metropolis-within-Gibbs chain from then on). Each chain adapts on its own.

    Parameters
    ----------
    log_density : numba.njit function
        ``(theta, x, stats) -> float``, as for :func:`metropolis`.
    initial_scale : float or array
        Proposal sd before the covariance estimate takes over.
    target : float, optional
        Target acceptance rate.
    adapt_after : int
        Warm-up iterations before the proposal may use the estimated covariance.

    Returns
    -------
    Kernel
        For ``dw.Model(draw_theta=...)``.

    Examples
    --------
    Started with a step far too small for a standard normal target, warm-up learns one
    that accepts near the 0.44 target:

    >>> import numba
    >>> import numpy as np
    >>> import dawrap as dw
    >>> @numba.njit
    ... def log_density(theta, x, stats):
    ...     return -0.5 * theta @ theta
    >>> kernel = dw.kernels.adaptive_metropolis(log_density, initial_scale=0.01)
    >>> rng, theta, x, stats = np.random.default_rng(0), np.zeros(1), np.empty((0, 1)), np.empty(0)
    >>> state = kernel.init_state(theta)
    >>> for _ in range(2000):                                  # warm-up: tuning
    ...     theta, accept_prob = kernel.step(rng, theta, x, stats, state, True)
    >>> kept = []
    >>> for _ in range(2000):                                  # frozen: an exact chain
    ...     theta, accept_prob = kernel.step(rng, theta, x, stats, state, False)
    ...     kept.append(accept_prob)
    >>> bool(0.3 < np.mean(kept) < 0.6)                        # 0.999 at the initial 0.01
    True
    """
    require_njit(log_density, "log_density", "(theta, x, stats) -> float")
    initial = scale_vector(initial_scale, "initial_scale")
    if target is not None and not 0.0 < float(target) < 1.0:
        raise ValueError(f"target must be an acceptance rate in (0, 1), got {target!r}")
    if not isinstance(adapt_after, int) or adapt_after < 2:
        raise ValueError(f"adapt_after must be an integer >= 2, got {adapt_after!r}")
    fixed_target = -1.0 if target is None else float(target)

    @numba.njit(nogil=True)
    def step(rng, theta, x, stats, state, tuning):
        proposal = rw_propose(rng, theta, state, initial, adapt_after)
        a = acceptance_probability(log_density(proposal, x, stats)
                                   - log_density(theta, x, stats))
        out = proposal if (a >= 1.0 or rng.random() < a) else theta.copy()
        if tuning:
            rw_adapt(state, out, a, fixed_target, adapt_after, initial)
        return out, a

    return Kernel(step, lambda theta: rw_init_state(theta, initial), "adaptive_metropolis")
