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
from numba import types
from numba.extending import overload

from ..compile import templates as _templates
from .._checks import as_count, require_njit

__all__ = ["ExponentialFamily", "require_family", "truncated_moments", "interval_probability",
           "moments_from_log_partition"]


# The slots the templates below read, bound per family (dawrap._templates checks them).
CDF = _templates.slot("(x, eta) -> P(X <= x)")
SF = _templates.slot("(x, eta) -> P(X >= x)")


def interval_mass(eta, v, w, discrete):
    r""":math:`P(v \le x \le w)` under natural parameter ``eta``, with ``CDF(x) = P(X <= x)``
    and ``SF(x) = P(X >= x)``; ``v = -inf`` or ``w = inf`` allowed. For a finite interval the
    form is chosen so no small probability is a difference of numbers close to 1."""
    if v == -math.inf:
        return CDF(w, eta)
    if w == math.inf:
        return SF(v, eta)
    upper_tail = SF(v, eta)  # P(X >= v)
    if upper_tail < 0.5:
        above = SF(w + 1.0, eta) if discrete else SF(w, eta)  # P(X > w)
        return upper_tail - above
    below = CDF(v - 1.0, eta) if discrete else CDF(v, eta)  # P(X < v)
    return CDF(w, eta) - below


def log_interval_mass(eta, v, w, discrete):
    return math.log(interval_mass(eta, v, w, discrete))


def truncated_moments_of(eta, mean, var, v, w, discrete):
    r"""``(q, mean_hat, var_hat)`` of a univariate statistic truncated to ``[v, w]`` (Lemma 1).

    ``q = P(x in [v, w])``; ``mean``/``var`` are the untruncated moments of ``t(x)`` at natural
    parameter ``eta``. Derivatives of ``log q`` in ``eta`` by fourth-order central differences
    with step ``h = 1e-3 / sd(t)``: a change of ``eta`` by ``1/sd`` moves the mean of ``t`` by
    one sd, so that is the scale on which ``log q`` varies (truncation error O(h^4) on that
    scale; rounding error about 1e-16 / h^2 relative to ``var``).
    """
    q = interval_mass(eta, v, w, discrete)
    if not q > 0.0:
        return 0.0, 0.0, 0.0
    h = 1e-3 / math.sqrt(var) if var > 0.0 else 1e-3 * max(abs(eta), 1.0)
    f0 = math.log(q)
    fp1 = log_interval_mass(eta + h, v, w, discrete)
    fm1 = log_interval_mass(eta - h, v, w, discrete)
    fp2 = log_interval_mass(eta + 2 * h, v, w, discrete)
    fm2 = log_interval_mass(eta - 2 * h, v, w, discrete)
    d1 = (-fp2 + 8.0 * fp1 - 8.0 * fm1 + fm2) / (12.0 * h)
    d2 = (-fp2 + 16.0 * fp1 - 30.0 * f0 + 16.0 * fm1 - fm2) / (12.0 * h * h)
    return q, mean + d1, max(var + d2, 0.0)


#: The templates above, bound with a family's ``cdf`` and ``sf`` (also by the suffstat
#: sampler's groups, which call ``truncated_moments_of``).
TRUNCATION_TEMPLATES = (interval_mass, log_interval_mass, truncated_moments_of)


def interval_probability(cdf, sf, eta: float, v: float, w: float, discrete: bool) -> float:
    r""":math:`P(v \le x \le w)` under natural parameter ``eta`` (:func:`interval_mass` bound
    to ``cdf`` and ``sf``)."""
    return _templates.bind(TRUNCATION_TEMPLATES, {"CDF": cdf, "SF": sf}).interval_mass(
        eta, v, w, discrete)


def truncated_moments(cdf, sf, eta: float, mean: float, var: float, v: float, w: float,
                      discrete: bool) -> tuple:
    r"""``(q, mean_hat, var_hat)`` of a univariate statistic truncated to ``[v, w]`` (Lemma 1;
    :func:`truncated_moments_of` bound to ``cdf`` and ``sf``)."""
    return _templates.bind(TRUNCATION_TEMPLATES, {"CDF": cdf, "SF": sf}).truncated_moments_of(
        eta, mean, var, v, w, discrete)


def _as_vector(value):
    """A float or an array as a 1-d float64 array (compiled-code helper)."""


@overload(_as_vector)
def _as_vector_impl(value):
    if isinstance(value, (types.Float, types.Integer)):
        return lambda value: np.array([float(value)])
    if isinstance(value, types.Array):
        return lambda value: np.ascontiguousarray(value.ravel()).astype(np.float64)
    return None


@numba.njit(nogil=True)  # function argument: not disk-cacheable (see record.py)
def moments_from_log_partition(log_partition, eta):
    r"""Mean and covariance of :math:`t(x)` as the gradient and Hessian of :math:`A(\eta)`
    (Eq. 1 of Bernstein & Sheldon), by central differences with steps
    ``h_j = 1e-3 max(1, |eta_j|)``: fourth order on the gradient and the diagonal, second order
    off the diagonal (relative error about 1e-6 there)."""
    d = eta.shape[0]
    h = np.empty(d)
    for j in range(d):
        h[j] = 1e-3 * max(1.0, abs(eta[j]))
    a0 = log_partition(eta)
    grad = np.empty(d)
    hess = np.empty((d, d))
    e = eta.copy()
    for j in range(d):
        vals = np.empty(4)
        for m, step in enumerate((2.0, 1.0, -1.0, -2.0)):
            e[j] = eta[j] + step * h[j]
            vals[m] = log_partition(e)
        e[j] = eta[j]
        grad[j] = (-vals[0] + 8.0 * vals[1] - 8.0 * vals[2] + vals[3]) / (12.0 * h[j])
        hess[j, j] = (-vals[0] + 16.0 * vals[1] - 30.0 * a0 + 16.0 * vals[2] - vals[3]) / (
            12.0 * h[j] * h[j])
        for k in range(j):
            total = 0.0
            for sj, sk, sign in ((1.0, 1.0, 1.0), (1.0, -1.0, -1.0), (-1.0, 1.0, -1.0),
                                 (-1.0, -1.0, 1.0)):
                e[j] = eta[j] + sj * h[j]
                e[k] = eta[k] + sk * h[k]
                total += sign * log_partition(e)
            e[j], e[k] = eta[j], eta[k]
            hess[j, k] = hess[k, j] = total / (4.0 * h[j] * h[k])
    return grad, hess


@functools.lru_cache(maxsize=None)
def _mean_cov_of_cells(cell_probabilities):
    @numba.njit(nogil=True)
    def mean_cov(theta):
        p = cell_probabilities(theta)
        return p.copy(), np.diag(p) - np.outer(p, p)

    return mean_cov


@functools.lru_cache(maxsize=None)
def _mean_cov_from(natural, log_partition):
    @numba.njit(nogil=True)
    def mean_cov(theta):
        return moments_from_log_partition(log_partition, _as_vector(natural(theta)))

    return mean_cov


class ExponentialFamily:
    r"""What the sufficient-statistic sampler and the baselines need to know about a model.

    Parameters
    ----------
    statistic : numba.njit function
        ``(x_i, out)``: the sufficient statistic :math:`t(x_i)` (length ``stat_size``).
    stat_size : int
        Length of :math:`t`.
    mean_cov : numba.njit function or None
        ``(theta) -> (mu, Sigma)``: mean vector and covariance matrix of :math:`t(x)`, in
        closed form where known. ``None``: derived from ``log_partition`` (gradient and
        Hessian in ``eta``, numerically), which then needs ``natural`` too.
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
        ``(theta) -> eta``: the natural parameter (a float for a univariate model, as the
        truncated moments of an unbounded statistic need; else an array).
    log_partition : numba.njit function, optional
        ``(eta) -> A(eta)`` with ``eta`` a float64 array: the log-partition function, used when
        ``mean_cov`` is ``None``. With ``natural`` it also enables the suffstat sampler's
        marginal kernel (``variant="marginal"``), whose Metropolis-Hastings ratio needs
        theta's part of the conjugate likelihood, :math:`\eta(\theta)^T s - n A(\eta(\theta))`
        (so that it must be the same parameterisation as ``conjugate_draw``: the
        conjugate posterior is :math:`\propto p(\theta)\, e^{\eta(\theta)^T s -
        n A(\eta(\theta))}`).
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
    cell_probabilities : numba.njit function, optional
        ``(theta) -> p``: declares the statistic one-hot, every record in exactly one of the
        ``stat_size`` cells, cell ``j`` with probability ``p[j]`` (summing to 1). Then
        :math:`\mu = p` and :math:`\Sigma = \mathrm{diag}(p) - pp^T`, diagonal minus rank
        one, and the sufficient-statistic sampler uses that structure
        (:mod:`dawrap.samplers.suffstat_multinomial`): O(``stat_size``) per iteration
        instead of O(stat_size^3), and no size limit. ``mean_cov`` may then be
        ``None`` (derived from ``p``). ``conjugate_draw(rng, s, n)`` must accept any
        non-negative counts ``s`` of ``n = sum(s)`` records.

    Examples
    --------
    The Dirichlet-multinomial (``dawrap.models.dirichlet_multinomial``): one-hot records,
    theta the cell probabilities themselves.

    >>> import numba, numpy as np
    >>> import dawrap as dw
    >>> from dawrap.models import dirichlet_multinomial as dm
    >>> @numba.njit
    ... def draw(rng, s, n):
    ...     return dm.conjugate_draw(rng, np.ones(s.shape[0]), s, n)
    >>> @numba.njit
    ... def identity(theta):
    ...     return theta
    >>> family = dw.ExponentialFamily(dm.one_hot, 4, None, draw, dm.valid, bounded=True,
    ...                               cell_probabilities=identity)
    >>> float(family.mean_cov(np.array([0.1, 0.2, 0.3, 0.4]))[1][0, 1])   # -p_0 p_1
    -0.020000000000000004
    """

    def __init__(self, statistic, stat_size: int, mean_cov, conjugate_draw, valid, *,
                 bounded: bool, natural=None, cdf=None, sf=None, discrete: bool = False,
                 log_partition=None, project=None, ops_draw=None,
                 cell_probabilities=None):
        self.statistic = require_njit(statistic, "statistic", "(x_i, out)")
        self.stat_size = as_count(stat_size, "stat_size")
        self.cell_probabilities = None
        if cell_probabilities is not None:
            self.cell_probabilities = require_njit(cell_probabilities, "cell_probabilities",
                                                   "(theta) -> p")
            if not bounded or self.stat_size < 2:
                raise ValueError(f"cell_probabilities declares a one-hot statistic: it needs "
                                 f"bounded=True and stat_size >= 2 cells, got bounded="
                                 f"{bounded}, stat_size={self.stat_size}")
            if mean_cov is None:
                mean_cov = _mean_cov_of_cells(self.cell_probabilities)
        self.natural = None if natural is None else require_njit(natural, "natural",
                                                                 "(theta) -> eta")
        self.log_partition = None if log_partition is None else require_njit(
            log_partition, "log_partition", "(eta) -> float")
        if mean_cov is None:
            if self.natural is None or self.log_partition is None:
                raise ValueError("mean_cov=None needs natural and log_partition, from which "
                                 "the mean and covariance of t(x) are derived")
            mean_cov = _mean_cov_from(self.natural, self.log_partition)
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
            self.cdf = require_njit(cdf, "cdf", "(x, eta) -> float")
            self.sf = require_njit(sf, "sf", "(x, eta) -> float")
        else:
            self.cdf = self.sf = None
        self.project = None if project is None else require_njit(
            project, "project", "(s, n) -> s")
        self.ops_draw = None if ops_draw is None else require_njit(
            ops_draw, "ops_draw", "(rng, s, n, epsilon) -> theta")

    def truncated_statistic(self, lower: float, upper: float):
        """The released record statistic :math:`1_{[a,b]}(x)\\,t(x)` (compiled, cached).

        Parameters
        ----------
        lower, upper : float
            The truncation bounds :math:`a < b`, finite.

        Returns
        -------
        numba.njit function
            ``(x_i, out)``: ``t(x_i)`` inside ``[lower, upper]``, 0 outside: a statistic of
            bounded sensitivity (:meth:`truncated_sensitivity`) to release.

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.models import gamma_exponential
        >>> truncated = gamma_exponential.family().truncated_statistic(0.0, 3.0)
        >>> out = np.empty(1)
        >>> truncated(np.array([4.0]), out); float(out[0])     # outside [0, 3]: 0
        0.0
        >>> truncated(np.array([2.5]), out); float(out[0])
        2.5
        """
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
        the total by at most that (a record may move in or out of the bounds).

        Parameters
        ----------
        lower, upper : float
            The truncation bounds.

        Returns
        -------
        float
            The sensitivity to give the mechanism that releases the truncated total.

        Examples
        --------
        >>> from dawrap.models import gamma_exponential
        >>> gamma_exponential.family().truncated_sensitivity(0.0, 3.0)
        3.0
        """
        lower, upper = float(lower), float(upper)
        return max(abs(lower), abs(upper), upper - lower)


@numba.njit(nogil=True, cache=True)
def no_natural(theta):
    """Placeholder for bounded families (never called)."""
    return 0.0


@numba.njit(nogil=True, cache=True)
def no_log_partition(eta):
    """Placeholder for the Gibbs kernels (never called)."""
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


def require_family(model, method: str) -> ExponentialFamily:
    """``model.family``, or an error saying that ``method`` needs one."""
    family = model.family
    if family is None:
        raise ValueError(f"method={method!r} needs model.family: register the model with "
                         f"family=dawrap.ExponentialFamily(...)")
    return family
