r"""The census model's theta step: one blocked, partially collapsed Gibbs pass over the
hierarchy given the imputed counts (see :mod:`dawrap.models.census` for the model).

With :math:`M^{(L-1)} = N`, the counts of the finest prior level, each iteration

1. goes up, for :math:`l = L-1, \dots, 1`: updates :math:`\log\kappa_l` by
   ``hyper_steps`` random-walk Metropolis steps on its conditional with the probabilities
   of level :math:`l` integrated out,

   .. math:: \pi(\kappa_l) \prod_v \frac{\Gamma(\kappa_l)}{\Gamma(\kappa_l + n_v)}
             \prod_c \frac{\Gamma(\kappa_l p_{a(v)c} + M^{(l)}_{vc})}
             {\Gamma(\kappa_l p_{a(v)c})},

   then draws each cell's table count :math:`m_{vc} \sim` Antoniak(:math:`M^{(l)}_{vc}`,
   :math:`\kappa_l p_{a(v)c}`) and adds them up by parent, :math:`M^{(l-1)}_{w c} =
   \sum_{a(v) = w} m_{vc}` (Teh et al. 2006): given the table counts the parent's
   probabilities enter only as :math:`\prod_c p_{wc}^{M^{(l-1)}_{wc}}`, a multinomial kernel;
2. updates :math:`\log\alpha` on :math:`\pi(\alpha)\prod_v \mathrm{DM}(M^{(0)}_v; \alpha)`
   (every probability integrated out): HMC with the digamma gradient, or random-walk
   Metropolis, each tuned during warm-up only;
3. goes down: :math:`p^{(0)}_v \sim \mathrm{Dir}(\alpha + M^{(0)}_v)` and
   :math:`p^{(l)}_v \sim \mathrm{Dir}(\kappa_l p^{(l-1)}_{a(v)} + M^{(l)}_v)`;
4. draws the unit shares :math:`w \sim \mathrm{Dir}(\gamma + n_u)` within each unit whose
   total is public, when the finest units' totals are not.

Why it is exact: define the joint of :math:`(N, p, \alpha, \kappa)` and the table counts
level by level so that, given :math:`N` and the table counts of the finer levels, level
:math:`l`'s probabilities are independent of its own table counts :math:`m^{(l)}`. Then every
draw in step 1 is a Gibbs draw (or a Metropolis step) from a conditional in which the levels
at and below :math:`l` are integrated out, and none of the integrated variables is conditioned
on before step 3 draws it afresh: a partially collapsed Gibbs sampler (van Dyk & Park 2008)
whose steps 1-3 together draw :math:`(\kappa, m, \alpha, p)` as one block given :math:`N`.
The table counts are drawn anew each iteration, so they are not part of theta. A cell's
probability is floored at 1e-300 where it is a Dirichlet parameter, so that one that
underflowed to 0 cannot make a density infinite.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

import dawrap as dw

from .draws import (compress_counts, dirichlet_into, dm_log_likelihood,
                    dm_log_likelihood_grad, table_count)
from .prior import Prior, theta_layout

__all__ = ["theta_kernel", "CensusKernelState", "kappa_state", "FLOOR"]

#: The smallest probability used as a Dirichlet parameter (a share that underflowed to 0).
FLOOR = 1e-300
RandomWalkState = dw.kernels.RandomWalkState


class CensusKernelState(NamedTuple):
    r"""The hierarchy kernel's per-chain state: ``alpha``, the state of the kernel of
    :math:`\log\alpha` (HMC's or the adaptive random walk's; a placeholder when alpha is
    fixed), and ``kappas``, the adaptive random walks of the levels' concentrations, one per
    level below the top, each field stacked along a first axis (:func:`kappa_state`)."""
    alpha: tuple
    kappas: RandomWalkState


@numba.njit(nogil=True, cache=True)
def kappa_state(kappas, l):
    """Level ``l + 1``'s random-walk state as views into the stacked ``kappas`` (updated in
    place by the warm-up, as the kernel's state must be)."""
    return RandomWalkState(kappas.log_step[l], kappas.iterations[l], kappas.accept_sum[l],
                           kappas.estimated[l], kappas.mean[l], kappas.scatter[l],
                           kappas.factor[l])
#: Warm-up steps before a random walk may use its learned covariance.
ADAPT_AFTER = 50


@numba.njit(nogil=True, cache=True)
def nonzero_cells(counts, start, units, cells):
    """Flat positions (relative to ``start``) of the positive cells of a level's counts, and
    each unit's total: the terms of :func:`kappa_log_target` that do not vanish."""
    positions = np.empty(units * cells, np.int64)
    totals = np.zeros(units)
    used = 0
    for v in range(units):
        for c in range(cells):
            m = counts[start + v * cells + c]
            if m > 0.0:
                positions[used] = v * cells + c
                used += 1
                totals[v] += m
    return positions[:used].copy(), totals


@numba.njit(nogil=True, cache=True)
def kappa_log_target(log_kappa, counts, positions, totals, probs, parents, cells, shape, rate):
    r"""Log of the conditional of :math:`\log\kappa` (Gamma(shape, rate) prior with its
    Jacobian) for one level's ``counts``, its probabilities integrated out (module docstring,
    step 1): O(positive cells + units). ``positions`` and ``totals`` are the level's
    :func:`nonzero_cells`, ``probs`` the parent level's probabilities and ``parents`` the
    parent of each of the level's units."""
    kappa = math.exp(log_kappa)
    out = shape * log_kappa - rate * kappa
    for a in range(positions.shape[0]):
        v, c = positions[a] // cells, positions[a] % cells
        b = kappa * max(probs[parents[v] * cells + c], 1e-300)
        out += math.lgamma(b + counts[positions[a]]) - math.lgamma(b)
    lg = math.lgamma(kappa)
    for v in range(totals.shape[0]):
        if totals[v] > 0.0:
            out += lg - math.lgamma(kappa + totals[v])
    return out


class _Hierarchy(NamedTuple):
    """The prior levels as the compiled step reads them (each field captured as a constant
    of the step's code)."""
    units: np.ndarray        # units per prior level, coarsest first
    parent: np.ndarray       # every level's parents, level l's from parent_off[l] on
    parent_off: np.ndarray
    alpha_fixed: np.ndarray  # alpha when fixed (ones when learned: not read)
    group_start: np.ndarray  # the finest units of each unit of public total (CSR), when
    group_units: np.ndarray  # latent (placeholders otherwise)


def _hierarchy(prior: Prior) -> _Hierarchy:
    levels = len(prior.units)
    parent = np.concatenate([np.zeros(1, np.int64)] + [np.asarray(prior.parents[l], np.int64)
                                                       for l in range(1, levels)])
    parent_off = np.zeros(levels, np.int64)
    for l in range(2, levels):
        parent_off[l] = parent_off[l - 1] + prior.units[l - 1]
    parent_off[1:] += 1
    alpha_fixed = np.ones(prior.cells) if prior.alpha is None else np.asarray(prior.alpha,
                                                                              float)
    placeholder = (np.zeros(1, np.int64), np.zeros(1, np.int64))
    group_start, group_units = prior.groups if prior.groups is not None else placeholder
    return _Hierarchy(np.array(prior.units, np.int64), parent, parent_off, alpha_fixed,
                      group_start, group_units)


def theta_kernel(prior: Prior, alpha_kernel: str, hyper_steps: int,
                 step: float | None) -> dw.kernels.Kernel:
    """The compiled theta step (module docstring) of ``prior``: ``log_alpha`` by
    ``alpha_kernel`` (``"hmc"`` or ``"metropolis"``), ``hyper_steps`` steps of each
    hyperparameter's kernel per iteration, random walks of scale ``step`` (None: adapted
    during warm-up)."""
    alpha_initial = np.array([0.1 if step is None else step])
    kappa_initial = np.array([0.3 if step is None else step])
    alpha = _alpha_target(prior.cells, prior.a0, prior.b0)
    hmc_kernel = dw.kernels.hmc(alpha.centred_logp_and_grad, step_size=0.1, path_length=1.5,
                                max_steps=32, to_unconstrained=alpha.to_centred,
                                to_constrained=alpha.from_centred)
    walk = _WalkSettings(hyper_steps, step is None)
    alpha_update = _alpha_update(alpha.logp, hmc_kernel.step, alpha_kernel == "hmc",
                                 walk._replace(initial=alpha_initial))
    kappa_update = _kappa_update(prior, walk._replace(initial=kappa_initial))
    init_state = _init_state(prior, hmc_kernel if alpha_kernel == "hmc" else None,
                             alpha_initial, kappa_initial)
    return dw.kernels.Kernel(_step(prior, kappa_update, alpha_update), init_state,
                             f"census_hierarchy({alpha_kernel})")


class _AlphaTarget(NamedTuple):
    logp: object                   # (log alpha, compressed counts) -> log density
    logp_and_grad: object          # ... and its gradient in log alpha
    to_centred: object             # log alpha -> the coordinates HMC moves in
    from_centred: object
    centred_logp_and_grad: object


def _alpha_target(cells: int, a0: float, b0: float) -> _AlphaTarget:
    """The conditional of ``log_alpha`` given the top level's (table) counts, every
    probability integrated out (module docstring, step 2), compiled."""

    @numba.njit(nogil=True)
    def alpha_logp_and_grad(u, rows):
        alpha = np.exp(u)
        if not (np.all(alpha > 0.0) and np.isfinite(alpha.sum())):  # outside: reject
            return -math.inf, np.zeros(cells)
        logp = a0 * u.sum() - b0 * alpha.sum() + dm_log_likelihood(alpha, rows)
        grad = a0 - b0 * alpha + dm_log_likelihood_grad(alpha, rows)
        return logp, grad

    @numba.njit(nogil=True)
    def alpha_logp(u, rows):
        return alpha_logp_and_grad(u, rows)[0]

    # HMC moves in v = (mean of log alpha, log alpha_c - that mean for c < cells - 1), a
    # linear map (no Jacobian term): the overall concentration, which the counts determine
    # far less well than the shares, gets its own coordinate, so the diagonal metric fits.
    @numba.njit(nogil=True)
    def to_centred(u):
        v = np.empty(cells)
        v[0] = u.mean()
        v[1:] = u[:cells - 1] - v[0]
        return v

    @numba.njit(nogil=True)
    def from_centred(v):
        u = np.empty(cells)
        u[:cells - 1] = v[0] + v[1:]
        u[cells - 1] = v[0] - v[1:].sum()
        return u

    @numba.njit(nogil=True)
    def centred_logp_and_grad(v, rows):
        logp, g = alpha_logp_and_grad(from_centred(v), rows)
        grad = np.empty(cells)
        grad[0] = g.sum()
        grad[1:] = g[:cells - 1] - g[cells - 1]
        return logp, grad

    return _AlphaTarget(alpha_logp, alpha_logp_and_grad, to_centred, from_centred,
                        centred_logp_and_grad)


class _WalkSettings(NamedTuple):
    """A hyperparameter's adaptive random walk: its steps per iteration, whether it adapts
    during warm-up, and its initial scale."""
    steps: int
    adapt: bool
    initial: np.ndarray | None = None


def _random_walk(log_target, settings: _WalkSettings):
    """``settings.steps`` adaptive random-walk Metropolis steps on ``log_target(point,
    data)``, compiled: ``(rng, point, data, state, tuning) -> (point, mean acceptance)``."""
    hyper_steps, adapt, initial = settings
    acceptance = dw.kernels.acceptance_probability
    rw_propose, rw_adapt = dw.kernels.rw_propose, dw.kernels.rw_adapt

    @numba.njit(nogil=True)
    def walk(rng, point, data, state, tuning):
        current = log_target(point, data)
        mean_accept = 0.0
        for _ in range(hyper_steps):
            proposal = rw_propose(rng, point, state, initial, ADAPT_AFTER)
            candidate = log_target(proposal, data)
            a = acceptance(candidate - current)
            if a >= 1.0 or rng.random() < a:
                point, current = proposal, candidate
            if tuning and adapt:
                rw_adapt(state, point, a, -1.0, ADAPT_AFTER, initial)
            mean_accept += a / hyper_steps
        return point, mean_accept

    return walk


def _kappa_update(prior: Prior, settings: _WalkSettings):
    """Level ``l``'s ``log kappa`` updated by its random walk on its conditional (module
    docstring, step 1), compiled: ``(rng, log_kappa, counts, l, probs, state, tuning) ->
    (log_kappa, mean acceptance)``."""
    cells, (kappa_shape, kappa_rate) = prior.cells, prior.kappa
    hierarchy, toff = _hierarchy(prior), theta_layout(prior).level_off
    U, parent, poff = hierarchy.units, hierarchy.parent, hierarchy.parent_off

    @numba.njit(nogil=True)
    def kappa_target(point, data):
        counts, positions, totals, probs, parents = data
        return kappa_log_target(point[0], counts, positions, totals, probs, parents, cells,
                                kappa_shape, kappa_rate)

    walk = _random_walk(kappa_target, settings)

    @numba.njit(nogil=True)
    def kappa_update(rng, log_kappa, counts, l, probs, state, tuning):
        start = toff[l]
        positions, totals = nonzero_cells(counts, start, U[l], cells)
        data = (counts[start:], positions, totals, probs[toff[l - 1]:],
                parent[poff[l]:poff[l] + U[l]])
        lk, mean_accept = walk(rng, np.array([log_kappa]), data, state, tuning)
        return lk[0], mean_accept

    return kappa_update


def _alpha_update(alpha_logp, hmc_step, hmc: bool, settings: _WalkSettings):
    """``log_alpha`` updated by ``settings.steps`` steps of HMC (``hmc``) or of its random
    walk (module docstring, step 2), compiled: ``(rng, u, rows, state, tuning) -> (u, mean
    acceptance)``."""
    hyper_steps = settings.steps
    walk = _random_walk(alpha_logp, settings)

    @numba.njit(nogil=True)
    def alpha_update(rng, u, rows, state, tuning):
        mean_accept = 0.0
        if hmc:
            for _ in range(hyper_steps):
                u, info = hmc_step(rng, u, rows, rows[:0, 0], state, tuning)
                mean_accept += info.theta_accept / hyper_steps
            return u, mean_accept
        return walk(rng, u, rows, state, tuning)

    return alpha_update


def _init_state(prior: Prior, hmc_kernel, alpha_initial, kappa_initial):
    """The kernel's ``init_state(theta) -> CensusKernelState``: ``log_alpha``'s kernel state
    (HMC's when ``hmc_kernel`` is given, else the random walk's), and the stacked random
    walks of the concentrations."""
    levels, cells, learn_alpha = len(prior.units), prior.cells, prior.alpha is None
    lay = theta_layout(prior)
    alpha_off, kappa_off = lay.alpha_off, lay.kappa_off

    def init_state(theta) -> CensusKernelState:
        if learn_alpha:
            u = np.asarray(theta[alpha_off:alpha_off + cells], float)
            alpha = hmc_kernel.init_state(u) if hmc_kernel is not None else \
                dw.kernels.rw_init_state(u, alpha_initial)
        else:  # not used: a placeholder of the right type
            alpha = dw.kernels.rw_init_state(np.zeros(1), alpha_initial)
        kappas = [dw.kernels.rw_init_state(
            np.asarray(theta[kappa_off + l - 1:kappa_off + l], float), kappa_initial)
            for l in range(1, levels)]
        # one random-walk state per level below the top, each field stacked along a first
        # axis of levels - 1 (kappa_state gives level l's as views, updated in place)
        stacked = RandomWalkState(*(
            np.stack([getattr(k, f) for k in kappas]) if kappas
            else np.zeros((0,) + getattr(dw.kernels.rw_init_state(np.zeros(1), kappa_initial),
                                         f).shape)
            for f in RandomWalkState._fields))
        return CensusKernelState(alpha, stacked)

    return init_state


def _step(prior: Prior, kappa_update, alpha_update):
    """The compiled step ``(rng, theta, x, stats, state, tuning) -> (theta, mean
    acceptance)``: steps 1-4 of the module docstring."""
    levels, cells, learn_alpha = len(prior.units), prior.cells, prior.alpha is None
    latent, share_prior = prior.groups is not None, prior.share_prior
    lay, hierarchy = theta_layout(prior), _hierarchy(prior)
    toff, alpha_off, kappa_off, share_off, fine = lay
    U, parent, poff, alpha_fixed, g_start, g_units = hierarchy

    @numba.njit(nogil=True)
    def step(rng, theta, x, stats, state, tuning):
        out = theta.copy()
        counts = np.zeros(alpha_off)  # each level's (pseudo-)counts, laid out as its p
        counts[toff[levels - 1]:toff[levels - 1] + fine] = stats[:fine]
        accept, accepts = 0.0, 0
        for l in range(levels - 1, 0, -1):  # 1. up: kappa_l, then table counts to level l-1
            st = kappa_state(state.kappas, l - 1)
            lk, a = kappa_update(rng, theta[kappa_off + l - 1], counts, l, theta, st, tuning)
            out[kappa_off + l - 1] = lk
            if not learn_alpha:
                accept += a
                accepts += 1
            kappa = math.exp(lk)
            for v in range(U[l]):
                w = parent[poff[l] + v]
                for c in range(cells):
                    m = counts[toff[l] + v * cells + c]
                    if m > 0.0:
                        b = kappa * max(theta[toff[l - 1] + w * cells + c], 1e-300)
                        counts[toff[l - 1] + w * cells + c] += table_count(rng, int(m), b)
        if learn_alpha:  # 2. alpha, every probability integrated out
            rows = compress_counts(counts[toff[0]:toff[0] + U[0] * cells], U[0], cells)
            u, a = alpha_update(rng, theta[alpha_off:alpha_off + cells].copy(), rows,
                                state.alpha, tuning)
            out[alpha_off:alpha_off + cells] = u
            alpha = np.exp(u)
            accept, accepts = a, 1
        else:
            alpha = alpha_fixed
        conc = np.empty(cells)
        for v in range(U[0]):  # 3. down
            for c in range(cells):
                conc[c] = alpha[c] + counts[toff[0] + v * cells + c]
            dirichlet_into(rng, conc, out[toff[0] + v * cells:toff[0] + (v + 1) * cells])
        for l in range(1, levels):
            kappa = math.exp(out[kappa_off + l - 1])
            for v in range(U[l]):
                w = parent[poff[l] + v]
                for c in range(cells):
                    conc[c] = kappa * max(out[toff[l - 1] + w * cells + c], 1e-300) + \
                        counts[toff[l] + v * cells + c]
                dirichlet_into(rng, conc, out[toff[l] + v * cells:toff[l] + (v + 1) * cells])
        if latent:  # 4. the finest units' shares within each unit of public total
            for g in range(g_start.shape[0] - 1):
                a, b = g_start[g], g_start[g + 1]
                conc_g, share = np.empty(b - a), np.empty(b - a)
                for j in range(a, b):
                    conc_g[j - a] = share_prior + stats[fine + g_units[j]]
                dirichlet_into(rng, conc_g, share)
                for j in range(a, b):
                    out[share_off + g_units[j]] = share[j - a]
        return out, (accept / accepts if accepts > 0 else math.nan)

    return step
