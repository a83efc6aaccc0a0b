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

>>> @numba.njit
... def log_density(theta, x, stats):      # logistic regression, N(0, 2^2) prior
...     eta = x[:, 1:] @ theta
...     return -0.125 * theta @ theta + np.sum(x[:, 0] * eta - np.log1p(np.exp(eta)))
>>> model = dw.Model(params={"beta": (2,)}, record_size=3, draw_record=draw_record,
...                  draw_theta=dw.kernels.adaptive_metropolis(log_density, 0.1), ...)

A kernel is a :class:`Kernel`: a compiled ``step(rng, theta, x, stats, state, tuning) ->
(theta, accept_prob)`` plus ``init_state(theta)``, the per-chain state it may update in place
while ``tuning``. The engine keeps that state with the chain (and in checkpoints).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import numba
import numpy as np

from ._checks import require_njit

__all__ = ["Kernel", "metropolis", "adaptive_metropolis", "engine_form",
           "acceptance_probability", "rw_propose", "rw_adapt", "rw_init_state"]


class Kernel(NamedTuple):
    """A theta kernel with per-chain state (see the module docstring)."""
    step: object                     # njit (rng, theta, x, stats, state, tuning) -> (theta, a)
    init_state: Callable             # (theta) -> float64 array
    name: str = "kernel"


def no_state(theta) -> np.ndarray:
    """The state of a kernel that keeps none."""
    return np.empty(0)


@functools.lru_cache(maxsize=None)
def engine_form(draw_theta, returns_accept: bool) -> Kernel:
    """A user's ``draw_theta(rng, theta, x, stats)`` (returning ``theta`` or ``(theta,
    accept_prob)``) as a stateless :class:`Kernel`."""
    if returns_accept:
        @numba.njit(nogil=True)
        def step(rng, theta, x, stats, state, tuning):
            return draw_theta(rng, theta, x, stats)
    else:
        @numba.njit(nogil=True)
        def step(rng, theta, x, stats, state, tuning):
            return draw_theta(rng, theta, x, stats), np.nan
    return Kernel(step, no_state, getattr(draw_theta, "__name__", "draw_theta"))


@numba.njit(nogil=True, cache=True)
def acceptance_probability(log_ratio):
    """``min(1, exp(log_ratio))``, and 0 for NaN."""
    if log_ratio != log_ratio:  # NaN: the proposal is rejected
        return 0.0
    return 1.0 if log_ratio >= 0.0 else math.exp(log_ratio)


def scale_vector(scale, name: str) -> np.ndarray:
    """A positive proposal scale: one value, or one per theta entry."""
    arr = np.atleast_1d(np.asarray(scale, dtype=np.float64))
    if arr.ndim != 1 or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ValueError(f"{name} must be a positive number or a vector of positive numbers "
                         f"(one per theta entry), got {scale!r}")
    return arr


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


@numba.njit(nogil=True, cache=True)
def rw_propose(rng, theta, state, initial, adapt_after):
    """A Gaussian random-walk proposal from the adaptive state ``state`` (layout: log step,
    warm-up iterations seen, running mean (d), running sum of squares (d))."""
    d = theta.shape[0]
    count = state[1]
    proposal = theta.copy()
    for j in range(d):
        if count >= adapt_after:
            base = 2.38 / math.sqrt(d) * math.sqrt(state[2 + d + j] / (count - 1.0) + 1e-12)
        else:
            base = initial[j] if initial.shape[0] == d else initial[0]
        proposal[j] += math.exp(state[0]) * base * rng.standard_normal()
    return proposal


@numba.njit(nogil=True, cache=True)
def rw_adapt(state, theta, accept_prob, target, adapt_after):
    """One warm-up update of the adaptive state: Robbins-Monro on the log step towards
    ``target`` (0.44 in one dimension, 0.234 otherwise, if ``target`` <= 0), Welford on the
    mean and variance of the chain's ``theta``."""
    d = theta.shape[0]
    goal = target if target > 0 else (0.44 if d == 1 else 0.234)
    count = state[1] + 1.0
    state[0] += (accept_prob - goal) / count ** 0.6
    for j in range(d):
        delta = theta[j] - state[2 + j]
        state[2 + j] += delta / count
        state[2 + d + j] += delta * (theta[j] - state[2 + j])
    state[1] = count
    if count == adapt_after:
        state[0] = 0.0  # the estimated scale replaces the initial one: restart the step


def rw_init_state(theta, initial) -> np.ndarray:
    """The adaptive state at the start of warm-up."""
    check_scale_length(initial, theta, "initial_scale")
    return np.concatenate(([0.0, 0.0], theta, np.zeros(theta.shape[0])))


def adaptive_metropolis(log_density, initial_scale=0.1, target: float | None = None,
                        adapt_after: int = 100) -> Kernel:
    r"""Random-walk Metropolis whose proposal is learned during warm-up, then frozen.

    While tuning: the running mean and variance of theta are accumulated (Welford), and the
    global log step :math:`\log\lambda` follows the Robbins-Monro recursion
    :math:`\log\lambda \mathrel{+}= (a_t - a^\ast) / t^{0.6}` towards the acceptance rate
    :math:`a^\ast` (0.44 in one dimension, 0.234 otherwise; Roberts & Rosenthal 2001). The
    proposal sd of entry :math:`j` is :math:`\lambda\, s_j`, with :math:`s_j` the
    ``initial_scale`` for the first ``adapt_after`` warm-up iterations and
    :math:`2.38\,\hat\sigma_j / \sqrt{d}` afterwards (Haario et al. 2001, diagonal form).
    After warm-up nothing changes, so the kept draws are exact (the chain is an ordinary
    Metropolis-within-Gibbs chain from then on). Each chain adapts on its own.

    Parameters
    ----------
    log_density : numba.njit function
        ``(theta, x, stats) -> float``, as for :func:`metropolis`.
    initial_scale : float or array
        Proposal sd before the variance estimate takes over.
    target : float, optional
        Target acceptance rate.
    adapt_after : int
        Warm-up iterations before the proposal uses the estimated variances.
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
            rw_adapt(state, out, a, fixed_target, adapt_after)
        return out, a

    return Kernel(step, lambda theta: rw_init_state(theta, initial), "adaptive_metropolis")
