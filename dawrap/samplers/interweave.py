r"""Interweaving a centred and a non-centred augmentation (ASIS; Yu & Meng 2011).

Record-level data augmentation is *centred*: theta moves given the imputed database
:math:`x`. When the release pins down :math:`T(x)` tightly, :math:`x` and theta are strongly
coupled and the chain crawls (Ju et al. 2022, Sec. 6). Write each record through a noise
variable, :math:`x_i = h(\theta, z_i)` with :math:`z_i` independent of theta (e.g.
:math:`x_i = \mu + \sigma z_i`, or :math:`x_i = 1[u_i < p]`). In the *non-centred*
coordinates :math:`(\theta, z)` the joint posterior is

.. math:: p(\theta, z \mid s_{dp}) \propto p(\theta)\, p(z)\, g\big(s_{dp},
          T(h(\theta, z))\big),

and a theta move with :math:`z` fixed moves every record at once, keeping :math:`T` near what
the release says. One iteration interweaves the two:

1. :math:`\theta' \sim K(\cdot \mid x)`: the model's own kernel (centred);
2. :math:`z \sim p(z \mid x, \theta')`: deterministic for continuous records
   (:math:`z_i = (x_i - \mu)/\sigma`), a draw from p(z_i) restricted to the preimage of
   :math:`x_i` for discrete ones (a uniform for :math:`x_i = 1[u_i < p]`);
3. :math:`\theta''`: a random-walk Metropolis step on :math:`p(\theta \mid z, s_{dp}) \propto
   p(\theta)\, g(s_{dp}, T(h(\theta, z)))` (O(n) per proposal), its full covariance
   adapted during warm-up only (:func:`dawrap.samplers.kernels.rw_adapt`; theta's coordinates are
   often strongly correlated under the release); then :math:`x = h(\theta'', z)`;
4. the record sweep(s).

Each step leaves :math:`p(\theta, x \mid s_{dp})` invariant (steps 2-3 are a Gibbs draw and
a Metropolis step in the equivalent :math:`(\theta, z)` coordinates), so the sampler stays
exact. Register the map with ``Model(noncentred=dw.NonCentred(...))``.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numba
import numpy as np

from ..compile import templates as _templates
from .arrays import all_finite
from .record import RecordState
from .status import OK, BAD_RATIO, BAD_RECORD
from ..model.protocols import NonCentred
from .kernels import (RandomWalkState, acceptance_probability, rw_adapt, rw_init_state,
                      rw_propose)

__all__ = ["NonCentred", "make_move", "JumpMixture", "MixtureState", "MoveState",
           "AUTO_THRESHOLD", "DEFAULT_STEPS"]


#: Warm-up steps of the move (iterations times steps per iteration) before it may use the
#: estimated theta covariance
#: (:func:`dawrap.samplers.kernels.rw_adapt`).
ADAPT_AFTER = 100


# The slots the templates below read, bound per model by make_move (dawrap._templates
# checks the names against them).
RECORD_FROM_NOISE = _templates.slot("(theta, z_i, out): the model's NonCentred map")
NOISE_FROM_RECORD = _templates.slot("(rng, theta, x_i, z_out): a noise that maps to x_i")
LOG_PRIOR = _templates.slot("(theta) -> log p(theta)")
MECH_STAT = _templates.slot("(x_i, s_dp, out): the mechanism's statistic of a record")
MODEL_STAT = _templates.slot("(x_i, out): the model's statistic of a record")
LOG_DENSITY = _templates.slot("(s_dp, t, params) -> log g(s_dp | t)")
THETA_SUPPORT = _templates.slot("(theta) -> bool")
NOISE_SIZE = _templates.slot("int: floats of noise per record")
MECH_STAT_SIZE = _templates.slot("int: floats of the mechanism's statistic")
STEPS = _templates.slot("int: non-centred steps per move")
JUMPS = _templates.slot("bool: each step is followed by a jump (an independence proposal)")
INITIAL = _templates.slot("tuple: the proposal sd before warm-up has learned one (one "
                          "value, or one each)")


def try_theta(rng, state, s_dp, params, proposal, log_q_ratio):
    """Step 2, then the Metropolis-Hastings test of step 3 for ``proposal`` (``log_q_ratio``:
    the proposal's log density ratio, reverse over forward): ``(state, accept_prob,
    accepted, status)``, the records mapped with theta when it is accepted."""
    theta, x, stats = state.theta, state.x, state.stats
    n, d, m = x.shape[0], theta.shape[0], stats.shape[0]
    a = 0.0
    x_new = np.empty((0, x.shape[1]))
    total, stats_new, log_g = np.zeros(MECH_STAT_SIZE), np.zeros(m), state.log_g
    if THETA_SUPPORT(proposal):
        # One pass: z_i | x_i, theta, then the record h(proposal, z_i) it maps to, with
        # the totals the proposal would have. z is never stored.
        x_new = np.empty_like(x)
        z, t, s_i = np.empty(NOISE_SIZE), np.empty(MECH_STAT_SIZE), np.empty(m)
        for i in range(n):
            NOISE_FROM_RECORD(rng, theta, x[i], z)
            RECORD_FROM_NOISE(proposal, z, x_new[i])
            MECH_STAT(x_new[i], s_dp, t)
            for j in range(MECH_STAT_SIZE):
                total[j] += t[j]
            if m > 0:
                MODEL_STAT(x_new[i], s_i)
                for j in range(m):
                    stats_new[j] += s_i[j]
        log_g = LOG_DENSITY(s_dp, total, params)
        if log_g != log_g:  # NaN: reported as the record sweep reports it, not rejected
            return state, 0.0, False, BAD_RATIO
        # x = h(theta, z) (exactly for discrete records, to rounding for continuous
        # ones), so the current log g is the cached one.
        a = acceptance_probability(LOG_PRIOR(proposal) - LOG_PRIOR(theta) + log_g
                                   - state.log_g + log_q_ratio)
    accepted = a >= 1.0 or (a > 0.0 and rng.random() < a)
    if not accepted:
        return state, a, False, OK
    if not all_finite(x_new):
        return state, a, True, BAD_RECORD
    for j in range(d):
        theta[j] = proposal[j]
    x[:] = x_new
    stats[:] = stats_new
    state.total[:] = total
    return RecordState(theta, x, stats, state.total, log_g, state.kernel_state,
                       state.move_state, state.clock, state.cells), a, True, OK


def one_step(rng, state, s_dp, params, tuning):
    """Steps 2-3 above once, with the random-walk proposal: ``(state, accept_prob,
    status)``."""
    initial = np.array(INITIAL)
    proposal = rw_propose(rng, state.theta, state.move_state.walk, initial, ADAPT_AFTER)
    state, a, accepted, status = try_theta(rng, state, s_dp, params, proposal, 0.0)
    if tuning:  # a rejected proposal left state.theta where it was
        rw_adapt(state.move_state.walk, proposal if accepted else state.theta, a, -1.0,
                 ADAPT_AFTER, initial)
    return state, a, status


def jump(rng, state, s_dp, params):
    """Steps 2-3 above once with an independence proposal from the mixture kept in the
    move's state (:class:`MoveState`): ``(state, accept_prob, status)``."""
    theta = state.theta
    d = theta.shape[0]
    mixture = state.move_state.mixture
    proposal = mixture_draw(rng, mixture, d)
    log_q_ratio = mixture_log_density(mixture, theta) - mixture_log_density(mixture, proposal)
    state, a, _, status = try_theta(rng, state, s_dp, params, proposal, log_q_ratio)
    return state, a, status


def move(rng, state, s_dp, params, tuning):
    """``STEPS`` non-centred steps, each followed by a jump with ``JUMPS``: ``(state, mean
    accept_prob of the random-walk steps, status)``."""
    # Each step redraws z given the current records (a Gibbs step), so every step is on
    # its own a kernel that leaves the posterior invariant.
    mean_accept = 0.0
    for _ in range(STEPS):
        state, a, status = one_step(rng, state, s_dp, params, tuning)
        mean_accept += a / STEPS
        if status != OK:
            return state, mean_accept, status
        if JUMPS:
            state, _, status = jump(rng, state, s_dp, params)
            if status != OK:
                return state, mean_accept, status
    return state, mean_accept, OK


def make_move(nc: NonCentred, fns, size: int, steps: int = 1, mixture=None):
    """The compiled non-centred move (steps 2-3 above, ``steps`` times over) for the model's
    map ``nc`` and its functions ``fns`` (a :class:`dawrap.samplers.record.RecordFunctions`),
    and its state's initialiser. It returns the mean acceptance probability of its
    random-walk steps. With ``mixture`` (a :class:`JumpMixture`), each step is followed by an
    independence proposal from it (:func:`jump`). Bound per model
    (:mod:`dawrap._templates`): equal arguments reuse the compiled move."""
    initial = tuple(float(v) for v in np.atleast_1d(nc.initial_scale))
    bound = _templates.bind((try_theta, one_step, jump, move), dict(
        RECORD_FROM_NOISE=nc.record_from_noise, NOISE_FROM_RECORD=nc.noise_from_record,
        LOG_PRIOR=nc.log_prior, NOISE_SIZE=nc.noise_size, MECH_STAT=fns.mech_stat,
        MODEL_STAT=fns.model_stat, LOG_DENSITY=fns.log_density,
        THETA_SUPPORT=fns.theta_support, MECH_STAT_SIZE=size, STEPS=steps, INITIAL=initial,
        JUMPS=mixture is not None))
    return bound.move, functools.partial(init_state, initial=np.array(initial),
                                         mixture=mixture)


def init_state(theta, initial, mixture) -> MoveState:
    """The move's state: the random walk's (:func:`dawrap.samplers.kernels.rw_init_state`)
    and the jumps' mixture (:meth:`JumpMixture.state`; no components without jumps)."""
    d = theta.shape[0]
    jumps = (MixtureState(np.zeros(0), np.zeros((0, d)), np.zeros((0, d, d)))
             if mixture is None else mixture.state())
    return MoveState(rw_init_state(theta, initial), jumps)


class MixtureState(NamedTuple):
    r"""The jumps' mixture as the compiled move reads it (:meth:`JumpMixture.state`): ``K``
    components in ``d`` dimensions, :math:`q(\theta) = \sum_k e^{l_k} N(\theta; m_k,
    L_k L_k^T)`. Fixed during the run; a checkpoint stores it flattened
    (:func:`dawrap.samplers.arrays.flatten_state`). ``K`` is 0 without jumps.

    Attributes
    ----------
    log_weights : ndarray of shape (K,)
        :math:`l_k`, the log of the normalised weights.
    means : ndarray of shape (K, d)
    factors : ndarray of shape (K, d, d)
        Lower-triangular Cholesky factors :math:`L_k` (the upper triangle is zero).
    """
    log_weights: np.ndarray
    means: np.ndarray
    factors: np.ndarray


class MoveState(NamedTuple):
    """The move's per-chain state: its random walk's (adapted during warm-up) and the jumps'
    fixed mixture (:class:`MixtureState`; no components without jumps)."""
    walk: RandomWalkState
    mixture: MixtureState


class JumpMixture(NamedTuple):
    r"""A Gaussian mixture :math:`q(\theta) = \sum_k w_k N(\theta; m_k, L_k L_k^T)`, the
    independence proposal of the jumps: fixed before the chain starts (so the jump is a
    Metropolis-Hastings step with a fixed proposal, exact), built from the release-weighted
    prior draws that separate the posterior's modes (:mod:`dawrap.runner.modes`).

    Attributes
    ----------
    weights : ndarray of shape (K,)
    means : ndarray of shape (K, d)
    factors : ndarray of shape (K, d, d)
        Lower-triangular Cholesky factors of the components' covariances.
    """
    weights: np.ndarray
    means: np.ndarray
    factors: np.ndarray

    def state(self) -> MixtureState:
        """The mixture as :func:`mixture_draw` and :func:`mixture_log_density` read it:
        normalised log weights, float64 means and lower-triangular factors, each array the
        chain's own (a fresh copy per call).

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.samplers.interweave import JumpMixture
        >>> mixture = JumpMixture(np.array([1.0, 3.0]), np.array([[0.0], [2.0]]),
        ...                       np.array([[[1.0]], [[0.5]]]))
        >>> np.exp(mixture.state().log_weights)
        array([0.25, 0.75])
        """
        w = np.asarray(self.weights, dtype=np.float64)
        k = w.shape[0]
        return MixtureState(np.array([math.log(w[c] / w.sum()) for c in range(k)]),
                            np.array(self.means, dtype=np.float64),
                            np.tril(np.asarray(self.factors, dtype=np.float64)))


@numba.njit(nogil=True, cache=True)
def mixture_draw(rng, mixture, d):
    """A draw from the mixture (a :class:`MixtureState`)."""
    u, c, cumulative = rng.random(), 0, 0.0
    for c in range(mixture.log_weights.shape[0]):
        cumulative += math.exp(mixture.log_weights[c])
        if u < cumulative:
            break
    mean, factor = mixture.means[c], mixture.factors[c]
    z = rng.standard_normal(d)
    out = mean.copy()
    for j in range(d):
        for i in range(j + 1):
            out[j] += factor[j, i] * z[i]
    return out


@numba.njit(nogil=True, cache=True)
def mixture_log_density(mixture, theta):
    """The mixture's (a :class:`MixtureState`) log density at ``theta``, up to the constant
    -d log(2 pi) / 2."""
    d = theta.shape[0]
    k = mixture.log_weights.shape[0]
    terms = np.empty(k)
    r = np.empty(d)
    for c in range(k):
        mean, factor = mixture.means[c], mixture.factors[c]
        quad, log_det = 0.0, 0.0
        for j in range(d):  # forward substitution: r = L^-1 (theta - mean)
            v = theta[j] - mean[j]
            for i in range(j):
                v -= factor[j, i] * r[i]
            r[j] = v / factor[j, j]
            quad += r[j] * r[j]
            log_det += math.log(factor[j, j])
        terms[c] = mixture.log_weights[c] - log_det - 0.5 * quad
    top = np.max(terms)
    return top + math.log(np.sum(np.exp(terms - top)))


#: Non-centred steps per iteration for ``interweave=True`` and the automatic choice: chosen
#: by measurement (``benchmarks/ess_per_second.py``; numbers in docs/kernels.md).
DEFAULT_STEPS = 2

#: ``interweave=None`` turns the move on when the estimated fraction of missing information
#: is at least this: where plain data augmentation already mixes well the move's extra passes
#: over the records cost more than they gain (measured crossover; see docs/kernels.md).
AUTO_THRESHOLD = 0.3
