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

import numba
import numpy as np

from .. import _templates
from .arrays import all_finite
from .record import RecordState
from .status import OK, BAD_RATIO, BAD_RECORD
from ..model.protocols import NonCentred
from .kernels import acceptance_probability, rw_adapt, rw_init_state, rw_propose

__all__ = ["NonCentred", "make_move", "AUTO_THRESHOLD",
           "DEFAULT_STEPS"]


#: Warm-up steps of the move (iterations times steps per iteration) before it may use the
#: estimated theta covariance
#: (:func:`dawrap.samplers.kernels.rw_adapt`).
ADAPT_AFTER = 100


# The names the templates below call, bound per model by make_move (placeholders here).
RECORD_FROM_NOISE = NOISE_FROM_RECORD = LOG_PRIOR = None  # the model's NonCentred map
MECH_STAT = MODEL_STAT = LOG_DENSITY = THETA_SUPPORT = None  # as in dawrap.samplers.record
NOISE_SIZE = SIZE = STEPS = 0
INITIAL = (0.1,)  # the proposal sd before warm-up has learned one (one value, or one each)


def one_step(rng, state, s_dp, params, tuning):
    """Steps 2-3 above once: ``(state, accept_prob, status)``."""
    theta, x, stats = state.theta, state.x, state.stats
    n, d, m = x.shape[0], theta.shape[0], stats.shape[0]
    initial = np.array(INITIAL)
    proposal = rw_propose(rng, theta, state.move_state, initial, ADAPT_AFTER)
    a = 0.0
    if THETA_SUPPORT(proposal):
        # One pass: z_i | x_i, theta, then the record h(proposal, z_i) it maps to, with
        # the totals the proposal would have. z is never stored.
        x_new = np.empty_like(x)
        z, t = np.empty(NOISE_SIZE), np.empty(SIZE)
        total, stats_new, s_i = np.zeros(SIZE), np.zeros(m), np.empty(m)
        for i in range(n):
            NOISE_FROM_RECORD(rng, theta, x[i], z)
            RECORD_FROM_NOISE(proposal, z, x_new[i])
            MECH_STAT(x_new[i], s_dp, t)
            for j in range(SIZE):
                total[j] += t[j]
            if m > 0:
                MODEL_STAT(x_new[i], s_i)
                for j in range(m):
                    stats_new[j] += s_i[j]
        log_g = LOG_DENSITY(s_dp, total, params)
        if log_g != log_g:  # NaN: reported as the record sweep reports it, not rejected
            return state, 0.0, BAD_RATIO
        # x = h(theta, z) (exactly for discrete records, to rounding for continuous
        # ones), so the current log g is the cached one.
        a = acceptance_probability(LOG_PRIOR(proposal) - LOG_PRIOR(theta) + log_g
                                   - state.log_g)
    accepted = a >= 1.0 or (a > 0.0 and rng.random() < a)
    if tuning:
        rw_adapt(state.move_state, proposal if accepted else theta, a, -1.0, ADAPT_AFTER,
                 initial)
    if not accepted:
        return state, a, OK
    if not all_finite(x_new):
        return state, a, BAD_RECORD
    for j in range(d):
        theta[j] = proposal[j]
    x[:] = x_new
    stats[:] = stats_new
    state.total[:] = total
    return RecordState(theta, x, stats, state.total, log_g, state.kernel_state,
                       state.move_state, state.cells), a, OK


def move(rng, state, s_dp, params, tuning):
    """``STEPS`` non-centred steps: ``(state, mean accept_prob, status)``."""
    # Each step redraws z given the current records (a Gibbs step), so every step is on
    # its own a kernel that leaves the posterior invariant.
    mean_accept = 0.0
    for _ in range(STEPS):
        state, a, status = one_step(rng, state, s_dp, params, tuning)
        mean_accept += a / STEPS
        if status != OK:
            return state, mean_accept, status
    return state, mean_accept, OK


def make_move(nc: NonCentred, fns, size: int, steps: int = 1):
    """The compiled non-centred move (steps 2-3 above, ``steps`` times over) for the model's
    map ``nc`` and its functions ``fns`` (a :class:`dawrap.samplers.record.RecordFunctions`),
    and its state's initialiser. It returns the mean acceptance probability of its steps.
    Bound per model (:mod:`dawrap._templates`): equal arguments reuse the compiled move."""
    initial = tuple(float(v) for v in np.atleast_1d(nc.initial_scale))
    bound = _templates.bind((one_step, move), dict(
        RECORD_FROM_NOISE=nc.record_from_noise, NOISE_FROM_RECORD=nc.noise_from_record,
        LOG_PRIOR=nc.log_prior, NOISE_SIZE=nc.noise_size, MECH_STAT=fns.mech_stat,
        MODEL_STAT=fns.model_stat, LOG_DENSITY=fns.log_density,
        THETA_SUPPORT=fns.theta_support, SIZE=size, STEPS=steps, INITIAL=initial))
    return bound.move, functools.partial(rw_init_state, initial=np.array(initial))


#: Non-centred steps per iteration for ``interweave=True`` and the automatic choice: chosen
#: by measurement (``benchmarks/ess_per_second.py``; numbers in docs/kernels.md).
DEFAULT_STEPS = 2

#: ``interweave=None`` turns the move on when the estimated fraction of missing information
#: is at least this: where plain data augmentation already mixes well the move's extra passes
#: over the records cost more than they gain (measured crossover; see docs/kernels.md).
AUTO_THRESHOLD = 0.3
