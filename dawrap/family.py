r"""Exponential-family descriptions, for the sufficient-statistic sampler and the baselines.

A model's records follow :math:`p(x\mid\theta) = h(x)\exp(\eta(\theta)^T t(x) - A(\eta))`
with a conjugate prior. The sufficient-statistic Gibbs sampler of Bernstein & Sheldon (2018)
never touches records: it needs only

* the statistic :math:`t(x)` (the record statistic a release sums),
* the mean and covariance of :math:`t(x)` under :math:`\theta` (the CLT approximation
  :math:`s \mid \theta \approx N(n\mu, n\Sigma)`),
* a draw from the conjugate posterior :math:`p(\theta \mid s, n)`,
* the region of valid totals :math:`s` (for the rejection step),
* for unbounded univariate statistics, the CDF and survival function as functions of the
  natural parameter, from which the truncated moments of Lemma 1 follow:

.. math:: \hat\mu = \mu + \frac{d}{d\eta}\log\big(F(w;\eta) - F(v;\eta)\big),\qquad
          \hat\Sigma = \Sigma + \frac{d^2}{d\eta^2}\log\big(F(w;\eta) - F(v;\eta)\big).

There is no autodiff dependency: the derivatives are fourth-order central differences in
:math:`\eta`, tested against direct numerical integration of the truncated moments.
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np

from ._checks import as_count, require_njit

__all__ = ["ExponentialFamily", "truncated_moments", "interval_probability"]


@numba.njit(nogil=True)  # function arguments: not disk-cacheable (see record.py)
def interval_probability(cdf, sf, eta, v, w, discrete):
    r""":math:`P(v \le x \le w)` under natural parameter ``eta``, with ``cdf(x) = P(X <= x)``
    and ``sf(x) = P(X >= x)``; ``v = -inf`` or ``w = inf`` allowed. For a finite interval the
    form is chosen so no small probability is a difference of numbers close to 1."""
    if v == -math.inf:
        return cdf(w, eta)
    if w == math.inf:
        return sf(v, eta)
    upper_tail = sf(v, eta)  # P(X >= v)
    if upper_tail < 0.5:
        above = sf(w + 1.0, eta) if discrete else sf(w, eta)  # P(X > w)
        return upper_tail - above
    below = cdf(v - 1.0, eta) if discrete else cdf(v, eta)  # P(X < v)
    return cdf(w, eta) - below


@numba.njit(nogil=True)  # function arguments: not disk-cacheable (see record.py)
def _log_mass(cdf, sf, eta, v, w, discrete):
    return math.log(interval_probability(cdf, sf, eta, v, w, discrete))


@numba.njit(nogil=True)  # function arguments: not disk-cacheable (see record.py)
def truncated_moments(cdf, sf, eta, mean, var, v, w, discrete):
    r"""``(q, mean_hat, var_hat)`` of a univariate statistic truncated to ``[v, w]`` (Lemma 1).

    ``q = P(x in [v, w])``; ``mean``/``var`` are the untruncated moments of ``t(x)`` at natural
    parameter ``eta``. Derivatives of ``log q`` in ``eta`` by fourth-order central differences
    with step ``h = 1e-3 / sd(t)``: a change of ``eta`` by ``1/sd`` moves the mean of ``t`` by
    one sd, so that is the scale on which ``log q`` varies (truncation error O(h^4) on that
    scale; rounding error about 1e-16 / h^2 relative to ``var``).
    """
    q = interval_probability(cdf, sf, eta, v, w, discrete)
    if not q > 0.0:
        return 0.0, 0.0, 0.0
    h = 1e-3 / math.sqrt(var) if var > 0.0 else 1e-3 * max(abs(eta), 1.0)
    f0 = math.log(q)
    fp1 = _log_mass(cdf, sf, eta + h, v, w, discrete)
    fm1 = _log_mass(cdf, sf, eta - h, v, w, discrete)
    fp2 = _log_mass(cdf, sf, eta + 2 * h, v, w, discrete)
    fm2 = _log_mass(cdf, sf, eta - 2 * h, v, w, discrete)
    d1 = (-fp2 + 8.0 * fp1 - 8.0 * fm1 + fm2) / (12.0 * h)
    d2 = (-fp2 + 16.0 * fp1 - 30.0 * f0 + 16.0 * fm1 - fm2) / (12.0 * h * h)
    return q, mean + d1, max(var + d2, 0.0)


class ExponentialFamily:
    r"""What the sufficient-statistic sampler and the baselines need to know about a model.

    Parameters
    ----------
    statistic : numba.njit function
        ``(x_i, out)``: the sufficient statistic :math:`t(x_i)` (length ``stat_size``).
    stat_size : int
        Length of :math:`t`.
    mean_cov : numba.njit function
        ``(theta) -> (mu, Sigma)``: mean vector and covariance matrix of :math:`t(x)`.
    conjugate_draw : numba.njit function
        ``(rng, s, n) -> theta``: a draw from the conjugate posterior given the total ``s``
        (a float vector, possibly non-integer) of ``n`` records; the prior's hyperparameters
        are bound inside.
    valid : numba.njit function
        ``(s, n) -> bool``: whether ``s`` is a possible total of ``n`` records (e.g.
        ``0 <= s <= n`` for a count). Draws outside are rejected.
    bounded : bool
        Whether :math:`t` is bounded, so its total can be released as is. Unbounded statistics
        must be released truncated (see :meth:`truncated_statistic`).
    natural : numba.njit function, optional
        ``(theta) -> eta`` (float): natural parameter of a univariate model (unbounded only).
    cdf, sf : numba.njit functions, optional
        ``(x, eta) -> float``: :math:`P(X \le x)` and :math:`P(X \ge x)` at natural parameter
        ``eta`` (unbounded only). For a discrete family ``sf(x) = P(X >= x)``.
    discrete : bool
        Integer-valued records: truncation regions are ``{..., a-1}``, ``{a..b}``,
        ``{b+1, ...}``.
    project : numba.njit function, optional
        ``(s, n) -> s``: the nearest valid total (for the naive baseline, which plugs the
        noisy release into the conjugate update).
    ops_draw : numba.njit function, optional
        ``(rng, s, n, epsilon) -> theta``: one posterior sample by the exponential mechanism
        with budget ``epsilon`` (one-posterior-sample baseline), where the model supports it.
    """

    def __init__(self, statistic, stat_size: int, mean_cov, conjugate_draw, valid, *,
                 bounded: bool, natural=None, cdf=None, sf=None, discrete: bool = False,
                 project=None, ops_draw=None):
        self.statistic = require_njit(statistic, "statistic", "(x_i, out)")
        self.stat_size = as_count(stat_size, "stat_size")
        self.mean_cov = require_njit(mean_cov, "mean_cov", "(theta) -> (mu, Sigma)")
        self.conjugate_draw = require_njit(conjugate_draw, "conjugate_draw",
                                           "(rng, s, n) -> theta")
        self.valid = require_njit(valid, "valid", "(s, n) -> bool")
        self.bounded = bool(bounded)
        self.discrete = bool(discrete)
        if not self.bounded:
            if self.stat_size != 1:
                raise ValueError("unbounded statistics are supported for univariate models "
                                 "(stat_size = 1) only, as in Bernstein & Sheldon")
            for name, fn in (("natural", natural), ("cdf", cdf), ("sf", sf)):
                if fn is None:
                    raise ValueError(f"{name} is required for an unbounded statistic")
            self.natural = require_njit(natural, "natural", "(theta) -> eta")
            self.cdf = require_njit(cdf, "cdf", "(x, eta) -> float")
            self.sf = require_njit(sf, "sf", "(x, eta) -> float")
        else:
            self.natural = self.cdf = self.sf = None
        self.project = None if project is None else require_njit(
            project, "project", "(s, n) -> s")
        self.ops_draw = None if ops_draw is None else require_njit(
            ops_draw, "ops_draw", "(rng, s, n, epsilon) -> theta")

    def truncated_statistic(self, lower: float, upper: float):
        """The released record statistic :math:`1_{[a,b]}(x)\\,t(x)` (compiled, cached)."""
        if self.bounded:
            raise ValueError("this family's statistic is bounded: release it untruncated")
        lower, upper = float(lower), float(upper)
        if not (np.isfinite(lower) and np.isfinite(upper) and lower < upper):
            raise ValueError(f"truncation bounds must be finite with lower < upper, got "
                             f"[{lower}, {upper}]")
        return _truncated(self.statistic, lower, upper)

    def truncated_sensitivity(self, lower: float, upper: float) -> float:
        r"""L1 sensitivity of the truncated total (Bernstein & Sheldon, supplement C):
        :math:`\max\{\max_{[a,b]}|t(x)|, \max_{x,y\in[a,b]}|t(x)-t(y)|\}` for the identity
        statistic :math:`t(x) = x` of the built-in unbounded models: replacing a record moves
        the total by at most that (a record may move in or out of the bounds)."""
        lower, upper = float(lower), float(upper)
        return max(abs(lower), abs(upper), upper - lower)


@numba.njit(nogil=True, cache=True)
def no_natural(theta):
    """Placeholder for bounded families (never called)."""
    return 0.0


@numba.njit(nogil=True, cache=True)
def no_cdf(x, eta):
    """Placeholder for bounded families (never called)."""
    return 1.0


@functools.lru_cache(maxsize=None)
def _truncated(statistic, lower, upper):
    @numba.njit(nogil=True)
    def truncated(x_i, out):
        if lower <= x_i[0] <= upper:
            statistic(x_i, out)
        else:
            for j in range(out.shape[0]):
                out[j] = 0.0

    return truncated
