"""Whether a release is plausible under any theta, checked before sampling: a release far
outside the range the confidential statistic can take draws a warning, one that double
precision cannot resolve is refused (:func:`check_plausible`).
"""
from __future__ import annotations

import warnings

import numpy as np

from ..mechanisms.base import Mechanism
from ..model.model import Model
from .starts import noise_variance, simulated_contributions

__all__ = ["check_plausible", "statistic_range", "IMPLAUSIBLE_NATS", "RESOLUTION_NATS"]

#: A release is implausible when some coordinate lies so far outside the range of the
#: confidential statistic that the noise needed to reach it has a density below
#: exp(-IMPLAUSIBLE_NATS) times its density at zero (see check_plausible).
IMPLAUSIBLE_NATS = 40.0
#: Rounding error, in nats, of the mechanism's log density above which the samplers cannot
#: tell one confidential total from its neighbours at the release.
RESOLUTION_NATS = 1e-3


def statistic_range(model: Model, mechanism: Mechanism, s_dp: np.ndarray, n: int):
    """Bounds ``(lower, upper, source)`` per coordinate on the confidential total that hold
    under every theta, or ``None`` when neither the mechanism nor the model gives one.

    One record's contribution is bounded by the mechanism's declared contribution domain
    (``mechanism.contribution``), or else by its stated sensitivity around simulated
    contributions: a replacement sensitivity D means every record's contribution lies within
    D of every other's in each coordinate, so within ``[max_r t_r - D, min_r t_r + D]`` over
    any records ``r``. Simulated records that contradict the declaration (outside the domain,
    or spread wider than D) mean it does not bound this model's records: no range is claimed.
    A release that is not the statistic plus noise (``mechanism.additive`` false) has no
    range to lie outside.
    """
    if not mechanism.additive:
        return None
    domain = getattr(mechanism, "contribution", None)
    seen = simulated_contributions(model, mechanism, s_dp)
    if seen is None:
        return None
    if domain is not None and hasattr(domain, "lower") and hasattr(domain, "upper"):
        lower = np.broadcast_to(np.asarray(domain.lower, dtype=np.float64), mechanism.size)
        upper = np.broadcast_to(np.asarray(domain.upper, dtype=np.float64), mechanism.size)
        if np.all((seen >= lower) & (seen <= upper)):
            return n * lower, n * upper, f"the declared contribution domain {domain!r}"
        return None
    sensitivity = mechanism.privacy.get("sensitivity")
    if sensitivity is None:
        return None
    low, high = seen.min(axis=0), seen.max(axis=0)
    if np.any(high - low > sensitivity):
        return None
    return n * (high - sensitivity), n * (low + sensitivity), \
        f"sensitivity = {sensitivity:g} (each record's contribution within it of the others)"


def check_plausible(model: Model, mechanism: Mechanism, s_dp: np.ndarray, n: int) -> None:
    r"""Warn, or refuse, when the release is implausible under every theta.

    Where the model and mechanism bound the confidential total ``T`` (each coordinate in
    ``[lower, upper]`` under every theta: :func:`statistic_range`), the noise that produced
    coordinate ``j`` of the release is at least its distance :math:`d_j` from that range. Its
    cost in nats, :math:`\nu_j = \log g(s, s) - \log g(s, t^{(j)})` with :math:`t^{(j)}` the
    release moved to the range in coordinate ``j`` only, is :math:`d_j/b` for Laplace noise of
    scale ``b`` (``epsilon d_j / sensitivity`` for the geometric) and :math:`d_j^2/2\sigma^2`
    for Gaussian noise; for all the built-in mechanisms the probability of noise that large is
    at most :math:`e^{-\nu_j}`. Then, per coordinate (so that a long release of small counts,
    many slightly negative, stays quiet):

    * :math:`\nu_j >` :data:`IMPLAUSIBLE_NATS` (40 nats: 28 noise sds for Laplace, 8.9 for
      Gaussian, probability at most e^-40 = 4.2e-18 under every theta): a
      ``RuntimeWarning``. The posterior is still well defined and the samplers compute it
      (with Laplace noise it is the posterior for a release at the edge of the range), so
      refusing would withhold a correct answer; but such a release almost surely means a
      wrong ``n``, mechanism, scale or units.
    * the rounding error of the log density at the release, about :math:`\nu_j \cdot 2^{-52}`,
      above :data:`RESOLUTION_NATS`, or :math:`\nu_j` infinite (the density underflows): a
      ``ValueError``. Double precision can then no longer tell one confidential total from
      its neighbours (at ``s_dp = 1e18`` with epsilon = 0.5 the log density moves in steps of
      64 nats), so the samplers would return something close to the prior, or wrong in
      spread, without any sign of it: no output is better than that.

    Cheap: one pass over about a hundred simulated records
    (:func:`dawrap.runner.starts.simulated_contributions`) and O(size) arithmetic, plus two
    log-density evaluations per coordinate outside the range (none for an ordinary release).
    """
    bounds = statistic_range(model, mechanism, s_dp, n)
    if bounds is None:
        return
    lower, upper, source = bounds
    nearest = np.clip(s_dp, lower, upper)
    outside = np.flatnonzero(nearest != s_dp)
    if outside.size == 0:
        return
    log_density, params = mechanism.log_density, mechanism.params
    with np.errstate(over="ignore", invalid="ignore"):
        at_zero = float(log_density(s_dp, s_dp, params))
        nats = np.empty(outside.size)
        for i, j in enumerate(outside):
            t = s_dp.copy()
            t[j] = nearest[j]
            nats[i] = at_zero - float(log_density(s_dp, t, params))
    bad = np.where(np.isnan(nats), np.inf, nats)
    worst = int(np.argmax(bad))
    j, cost = int(outside[worst]), float(bad[worst])
    if cost <= IMPLAUSIBLE_NATS:
        return
    where = f"s_dp[{j}] = {s_dp[j]:g}" if s_dp.shape[0] > 1 else f"s_dp = {s_dp[j]:g}"
    variance = noise_variance(mechanism)
    sds = "" if variance is None else \
        f" ({abs(s_dp[j] - nearest[j]) / np.sqrt(variance[j]):.3g} noise standard deviations)"
    what = (f"{where} lies outside [{lower[j]:g}, {upper[j]:g}], the range the confidential "
            f"statistic has under every theta with n = {n} (from {source}), by "
            f"{abs(s_dp[j] - nearest[j]):.6g}{sds}: noise that large has log density "
            f"{cost:.4g} nats below zero noise")
    if not np.isfinite(cost) or cost * 2.0 ** -52 > RESOLUTION_NATS:
        hint = ""
        if mechanism.noise is not None and mechanism.noise.kind.flat_beyond_range:
            hint = (f"; with this mechanism's {mechanism.noise.family} noise the posterior is "
                    f"the same for every release beyond the range, so s_dp = {nearest[j]:g} in "
                    f"that coordinate gives it exactly")
        raise ValueError(f"{what}; at this magnitude double precision cannot resolve the "
                         f"change of one record in the mechanism's log density (rounding "
                         f"error about {cost * 2.0 ** -52:.3g} nats), so no sampler can "
                         f"return the posterior. Check n, the mechanism and the units of "
                         f"s_dp{hint}")
    warnings.warn(f"{what}. The release is implausible under every theta (probability below "
                  f"e^-{IMPLAUSIBLE_NATS:g}): check n, the mechanism, its scale and the units "
                  f"of s_dp. Sampling the posterior given it anyway", RuntimeWarning,
                  stacklevel=3)
