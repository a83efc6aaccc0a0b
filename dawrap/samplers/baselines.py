r"""Baselines of Foulds et al. (2016), on the same model registration.

* ``nonprivate``: the conjugate posterior given the true statistic (needs the confidential
  data; for simulation studies only).
* ``naive``: the conjugate posterior with the noisy release plugged in as if it were the
  statistic, after projecting it to the valid region. It ignores the noise, so it is
  over-confident when the noise is not negligible against sampling variability; given a
  truncated or clamped release it also takes that total for the full statistic (it ignores
  the truncation too, which is what naive means here).
* ``ops``: one-posterior-sample, the exponential mechanism on a truncated parameter space:
  ``k = chains * draws`` samples, each with budget ``epsilon / k``, so the whole release is
  epsilon-DP (as in Bernstein & Sheldon's experiments). The model's family supplies the
  tempered draw (``ops_draw``).

All draws are independent, so they line up with the MCMC methods in the same ArviZ structure.
"""
from __future__ import annotations

import numpy as np

from ..compile import templates as _templates
from .output import Output
from ..mechanisms.base import Mechanism, as_records, sum_statistic, with_release_argument
from ..model.model import Model
from ..model.family import require_family

__all__ = ["run_nonprivate", "run_naive", "run_ops", "confidential_statistic"]


#: The slot the templates below read: the family's draw, bound per model.
DRAW = _templates.slot("(rng, s, n[, epsilon]) -> theta")


def iid(rng, draws, theta_size, s, n):
    """``draws`` independent ``DRAW(rng, s, n)``, stacked (a template)."""
    out = np.empty((draws, theta_size))
    for i in range(draws):
        theta = DRAW(rng, s, n)
        for j in range(theta_size):
            out[i, j] = theta[j]
    return out


def iid_tempered(rng, draws, theta_size, s, n, epsilon):
    """``draws`` independent ``DRAW(rng, s, n, epsilon)``, stacked (a template)."""
    out = np.empty((draws, theta_size))
    for i in range(draws):
        theta = DRAW(rng, s, n, epsilon)
        for j in range(theta_size):
            out[i, j] = theta[j]
    return out


def _iid(rng, draw, draws: int, theta_size: int, *args) -> np.ndarray:
    """``draws`` independent ``draw(rng, *args)`` (compiled once per draw function; a
    built-in model's loads from numba's disk cache)."""
    template = iid if len(args) == 2 else iid_tempered
    bound = _templates.bind((template,), {"DRAW": draw})
    return getattr(bound, template.__name__)(rng, draws, theta_size, *args)


def confidential_statistic(model: Model, confidential) -> tuple[np.ndarray, int]:
    """The family's statistic summed over the confidential records, and their number."""
    family = require_family(model, "nonprivate")
    x = as_records(confidential, "confidential")
    if x.shape[1] != model.record_size:
        raise ValueError(f"confidential must have record_size = {model.record_size} columns, "
                         f"got shape {x.shape}")
    model.check_records(x, "confidential")
    return sum_statistic(x, np.zeros(family.stat_size), with_release_argument(family.statistic),
                         family.stat_size), x.shape[0]


def _check(theta: np.ndarray, name: str) -> np.ndarray:
    if not np.all(np.isfinite(theta)):
        raise ValueError(f"{name} produced a non-finite theta")
    return theta


def run_nonprivate(model: Model, confidential, n: int, rngs, *, draws: int) -> Output:
    family = require_family(model, "nonprivate")
    s, n_records = confidential_statistic(model, confidential)
    if n_records != n:
        raise ValueError(f"confidential has {n_records} records but n = {n}")
    theta = np.stack([_iid(rng, family.conjugate_draw, draws, model.theta_size, s, float(n))
                      for rng in rngs])
    return Output(_check(theta, "conjugate_draw"), {}, None)


def run_naive(model: Model, mechanism: Mechanism, s_dp: np.ndarray, n: int, rngs, *,
              draws: int) -> Output:
    family = require_family(model, "naive")
    if family.project is None:
        raise ValueError("method='naive' needs family.project (the nearest valid total)")
    if not mechanism.additive:
        raise ValueError(f"method='naive' reads the release as the noisy statistic, but the "
                         f"{mechanism.name} mechanism's release is not the statistic plus "
                         f"noise; use method='record'")
    if mechanism.size != family.stat_size:
        raise ValueError(f"the mechanism releases {mechanism.size} value(s) but the family's "
                         f"statistic has stat_size {family.stat_size}")
    s = np.asarray(family.project(s_dp, float(n)), dtype=float)
    theta = np.stack([_iid(rng, family.conjugate_draw, draws, model.theta_size, s, float(n))
                      for rng in rngs])
    return Output(_check(theta, "conjugate_draw"), {}, None)


def run_ops(model: Model, mechanism: Mechanism, confidential, n: int, rngs, *,
            draws: int) -> Output:
    family = require_family(model, "ops")
    if family.ops_draw is None:
        raise ValueError("method='ops' needs family.ops_draw; this model does not support "
                         "one-posterior sampling")
    if mechanism.epsilon is None:
        raise ValueError("method='ops' takes its privacy budget from mechanism.epsilon; this "
                         "mechanism has none")
    s, n_records = confidential_statistic(model, confidential)
    if n_records != n:
        raise ValueError(f"confidential has {n_records} records but n = {n}")
    k = len(rngs) * draws
    epsilon_each = mechanism.epsilon / k
    theta = np.stack([_iid(rng, family.ops_draw, draws, model.theta_size, s, float(n),
                           epsilon_each) for rng in rngs])
    return Output(_check(theta, "ops_draw"), {"ops_epsilon_each": np.full(
        theta.shape[:2], epsilon_each)}, None)
