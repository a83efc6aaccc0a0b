r"""Exact posteriors as small distribution objects, for checking samplers and for plots.

The record sampler is exact; these objects are how that claim is tested. Two forms cover the
built-in models:

* :class:`BetaMixture`, as arises when the confidential statistic is discrete and can be
  summed out:
  :math:`p(\theta\mid s_{dp}) = \sum_k w_k\, p(\theta \mid T = k)`,
  :math:`w_k \propto p(T = k)\, g(s_{dp}, k)`;
* :class:`Grid`: a density tabulated on a fine grid (trapezoid rule), for everything else;
  :func:`positive_grid` places the grid for a positive parameter, whose posterior may have
  a narrow mode near zero besides a wide one (a truncated release near zero: issue 30).

:class:`WeightedDraws` is the independent check of both: draws from the prior weighted by
the exact likelihood of the release (importance sampling), with Monte Carlo errors from the
weights' effective sample size.

Both are computed in log space and shifted by the largest log weight, so that a release far
outside anything the model can produce still gives its (well-defined) answer instead of the
prior or 0/0: :func:`relative_log_g` keeps the differences of :math:`\log g(s_{dp}, t)`
between confidential totals exact for the declared noise laws however large the release.

Examples
--------
One posterior of each form, which the examples of their methods use: Beta(2, 3) as a
mixture of one component, N(0, 1) on a grid, and three draws of equal weight.

>>> import numpy as np
>>> from dawrap.reference import BetaMixture, Grid, WeightedDraws
>>> beta = BetaMixture([1.0], a=[2.0], b=[3.0])
>>> x = np.linspace(-8.0, 8.0, 4001)
>>> normal = Grid(x, -0.5 * x ** 2)
>>> even = WeightedDraws([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
"""
from __future__ import annotations

import numpy as np
from scipy import optimize, special

__all__ = ["BetaMixture", "Grid", "WeightedDraws", "normalise_log_weights", "relative_log_g",
           "positive_grid"]


def normalise_log_weights(log_w: np.ndarray) -> np.ndarray:
    """Weights from log weights, computed stably (shifted by the largest).

    Parameters
    ----------
    log_w : array_like
        Log weights, up to a common constant; ``-inf`` is a zero weight.

    Returns
    -------
    numpy.ndarray
        Weights summing to 1.

    Raises
    ------
    ValueError
        When a log weight is NaN or none is finite: the weights are then undefined (0/0),
        and returning NaN weights would pass silently through every summary.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.reference import normalise_log_weights
    >>> normalise_log_weights([1000.0, 1000.0 + np.log(3.0)])    # exp(1000) overflows
    array([0.25, 0.75])
    """
    log_w = np.asarray(log_w, dtype=float)
    if np.any(np.isnan(log_w)):
        raise ValueError("a log weight is NaN: the exact posterior is undefined")
    top = np.max(log_w)
    if not np.isfinite(top):
        raise ValueError(f"no log weight is finite (the largest is {top}): the release has "
                         f"zero density under every confidential total, or the weights "
                         f"overflowed")
    return np.exp(log_w - special.logsumexp(log_w))


def relative_log_g(mechanism, s_dp, totals) -> np.ndarray:
    r"""``log g(s_dp, t_k) - max_k log g(s_dp, t_k)`` for each row ``t_k`` of ``totals``.

    Only these differences enter an exact posterior, and they must not be computed as
    differences of the log densities themselves: at ``s_dp = 1e300`` every
    :math:`|s_{dp} - t_k|` rounds to the same number, and a sum over the totals returns the
    prior. For a mechanism that declares its noise law (``mechanism.noise``, a
    :class:`dawrap.mechanisms.NoiseLaw`: every built-in one does) they are computed without
    that cancellation (:meth:`~dawrap.mechanisms.NoiseLaw.relative_log_density`):

    * Laplace form (``dw.Laplace``, ``dw.Geometric``): :math:`-\sum_j w_j |s_j - t_{kj}|`.
      For :math:`s_j` beyond every total, :math:`|s_j - t_{kj}| = |s_j - e_j| + |e_j - t_{kj}|`
      with :math:`e_j` the nearest extreme total, and the first term is common to all
      :math:`k`: so :math:`s_j` is replaced by its clip to :math:`[\min_k t_{kj}, \max_k
      t_{kj}]`, which changes every log density by the same constant and nothing else.
    * Gaussian form (``dw.Gaussian``, ``dw.DiscreteGaussian``):
      :math:`(s - t)^2 - (s - r)^2 = (r - t)(2s - t - r)` with :math:`r` the clip of
      :math:`s`, a product of two representable numbers rather than a difference of two
      squares (which overflow at 1e155 and lose every unit below that). Every term is >= 0,
      so an overflow gives ``-inf``: a weight that is zero to double precision.

    A mechanism without a noise law is evaluated through ``mechanism.log_g`` and shifted by
    the maximum.

    Parameters
    ----------
    mechanism : dawrap.Mechanism
        The mechanism that released ``s_dp``.
    s_dp : float or array_like
        The release (validated by ``mechanism.check_release``).
    totals : array_like
        Candidate confidential totals, shape ``(K, mechanism.size)`` (or ``(K,)`` for a
        scalar release).

    Returns
    -------
    numpy.ndarray
        Shape ``(K,)``; the largest entry is 0.

    Raises
    ------
    ValueError
        When no candidate total has a finite log density (the release is impossible, or so
        extreme that every weight underflows), or a log density is NaN.

    Examples
    --------
    Laplace noise of scale 2 on a count of 0..3: at ``s_dp = 1e300`` the differences are
    those at any release above 3.

    >>> import numpy as np
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> from dawrap.reference import relative_log_g
    >>> mech = dw.Laplace(beta_binomial.count, epsilon=0.5)
    >>> relative_log_g(mech, 1e300, np.arange(4))
    array([-1.5, -1. , -0.5,  0. ])
    """
    s = mechanism.check_release(s_dp)
    t = np.asarray(totals, dtype=np.float64).reshape(-1, mechanism.size)
    if mechanism.noise is not None:  # the law's form, exact at any release
        log_g = mechanism.noise.relative_log_density(s, t)
    else:
        log_g = np.array([mechanism.log_g(s, row) for row in t], dtype=np.float64)
    if np.any(np.isnan(log_g)):
        raise ValueError(f"log g(s_dp, t) is NaN for some candidate total at s_dp = {s}")
    top = np.max(log_g)
    if not np.isfinite(top):
        raise ValueError(f"s_dp = {s} has zero density (log g = {top}) under every "
                         f"confidential total the model can produce, or its log density "
                         f"underflows everywhere: the exact posterior cannot be computed")
    return log_g - top


class _ScalarPosterior:
    """What every exact posterior here gives of a scalar parameter (:class:`BetaMixture`,
    :class:`Grid`, :class:`WeightedDraws`): :meth:`mean`, :meth:`std`, :meth:`cdf` and
    :meth:`ppf`, documented once here and computed by each form in its own way."""

    def mean(self) -> float:
        """The posterior mean.

        Returns
        -------
        float

        Examples
        --------
        >>> round(beta.mean(), 6), even.mean()                   # 2 / 5; (1 + 2 + 3) / 3
        (0.4, 2.0)
        """
        raise NotImplementedError  # each form computes its own

    def std(self) -> float:
        """The posterior standard deviation.

        Returns
        -------
        float

        Examples
        --------
        >>> round(float(normal.std()), 4), round(even.std(), 4)   # 1; sqrt(2 / 3)
        (1.0, 0.8165)
        """
        raise NotImplementedError

    def cdf(self, x):
        """The distribution function at ``x`` (a scalar or an array); for
        :class:`WeightedDraws`, the weighted share of draws at or below ``x``.

        Parameters
        ----------
        x : float or array_like

        Returns
        -------
        numpy.ndarray

        Examples
        --------
        >>> normal.cdf([0.0])
        array([0.5])
        """
        raise NotImplementedError

    def ppf(self, q: float) -> float:
        """The quantile of probability ``q`` (the inverse of :meth:`cdf`); for
        :class:`WeightedDraws`, the smallest draw whose weighted share at or below it reaches
        ``q``.

        Parameters
        ----------
        q : float
            A probability in (0, 1).

        Returns
        -------
        float

        Examples
        --------
        >>> round(normal.ppf(0.975), 3)
        1.96
        """
        raise NotImplementedError


class _PosteriorDensity(_ScalarPosterior):
    """A posterior with a density (:class:`BetaMixture`, :class:`Grid`): also :meth:`var` and
    :meth:`pdf`, and the standard deviation from the variance."""

    def var(self) -> float:
        """The posterior variance.

        Returns
        -------
        float

        Examples
        --------
        >>> round(beta.var(), 6)                                 # 2 * 3 / (5**2 * 6)
        0.04
        """
        raise NotImplementedError

    def std(self) -> float:
        return float(np.sqrt(self.var()))

    def pdf(self, x):
        """The density at ``x`` (a scalar or an array).

        Parameters
        ----------
        x : float or array_like

        Returns
        -------
        numpy.ndarray

        Examples
        --------
        >>> beta.pdf([0.25, 0.5])                                 # 12 x (1 - x)^2
        array([1.6875, 1.5   ])
        """
        raise NotImplementedError


class BetaMixture(_PosteriorDensity):
    """A mixture of Beta(a_k, b_k) with weights w_k, vectorised (thousands of components).

    Parameters
    ----------
    weights, a, b : array_like
        Component weights (normalised here) and Beta parameters.

    Examples
    --------
    >>> from dawrap.reference import BetaMixture
    >>> mixture = BetaMixture([1.0, 1.0], a=[2.0, 5.0], b=[2.0, 1.0])   # Beta(2,2), Beta(5,1)
    >>> round(mixture.mean(), 4)                                        # (1/2 + 5/6) / 2
    0.6667
    >>> mixture.cdf([0.5])                                             # (1/2 + 1/32) / 2
    array([0.265625])
    >>> round(mixture.ppf(0.265625), 6)
    0.5
    """

    def __init__(self, weights, a, b):
        w = np.asarray(weights, dtype=float)
        # NaN or negative weights would otherwise be dropped silently and leave an empty
        # mixture whose mean is 0.
        if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) or not w.max() > 0:
            raise ValueError("weights must be finite, >= 0 and not all 0")
        keep = w > 1e-300 * w.max()
        self.weights = w[keep] / w[keep].sum()
        self.a = np.asarray(a, dtype=float)[keep]
        self.b = np.asarray(b, dtype=float)[keep]

    def mean(self) -> float:
        return float(self.weights @ (self.a / (self.a + self.b)))

    def var(self) -> float:
        a, b = self.a, self.b
        second = (a * (a + 1)) / ((a + b) * (a + b + 1))
        return float(self.weights @ second - self.mean() ** 2)

    def pdf(self, x):
        x = np.atleast_1d(np.asarray(x, dtype=float))
        log_pdf = ((self.a - 1)[:, None] * np.log(x) + (self.b - 1)[:, None] * np.log1p(-x)
                   - special.betaln(self.a, self.b)[:, None])
        return self.weights @ np.exp(log_pdf)

    def cdf(self, x):
        x = np.atleast_1d(np.asarray(x, dtype=float))
        return self.weights @ special.betainc(self.a[:, None], self.b[:, None], x[None, :])

    def ppf(self, q: float) -> float:
        return float(optimize.brentq(lambda x: self.cdf(x)[0] - q, 0.0, 1.0, xtol=1e-14))


class Grid(_PosteriorDensity):
    """A univariate density known up to a constant on an increasing grid.

    Parameters
    ----------
    grid : array_like
        Increasing points covering (essentially) all the posterior mass.
    log_density : array_like
        Unnormalised log density at ``grid``.

    Examples
    --------
    The posterior of a normal mean under a N(0, 1) prior after one observation 1.0 of unit
    variance is N(0.5, 0.5):

    >>> import numpy as np
    >>> from dawrap.reference import Grid
    >>> mu = np.linspace(-6.0, 7.0, 5001)
    >>> posterior = Grid(mu, -0.5 * mu ** 2 - 0.5 * (1.0 - mu) ** 2)
    >>> round(posterior.mean(), 6), round(posterior.var(), 6)
    (0.5, 0.5)
    >>> posterior.pdf([0.5]).round(6)                         # 1 / sqrt(pi)
    array([0.56419])
    """

    def __init__(self, grid, log_density):
        self.grid = np.asarray(grid, dtype=float)
        log_density = np.asarray(log_density, dtype=float)
        if np.any(np.isnan(log_density)) or not np.isfinite(np.max(log_density)):
            raise ValueError("log_density must be finite somewhere and never NaN")
        dens = np.exp(log_density - np.max(log_density))
        self.density = dens / np.trapezoid(dens, self.grid)
        steps = np.diff(self.grid) * 0.5 * (self.density[1:] + self.density[:-1])
        self._cdf = np.concatenate([[0.0], np.cumsum(steps)])

    def mean(self) -> float:
        return float(np.trapezoid(self.grid * self.density, self.grid))

    def var(self) -> float:
        m = self.mean()
        return float(np.trapezoid((self.grid - m) ** 2 * self.density, self.grid))

    def pdf(self, x):
        return np.interp(x, self.grid, self.density, left=0.0, right=0.0)

    def cdf(self, x):
        return np.interp(x, self.grid, self._cdf, left=0.0, right=1.0)

    def ppf(self, q: float) -> float:
        # Invert the piecewise-quadratic CDF of the piecewise-linear density.
        j = int(np.clip(np.searchsorted(self._cdf, q) - 1, 0, len(self.grid) - 2))
        x0, x1 = self.grid[j], self.grid[j + 1]
        return float(optimize.brentq(lambda x: self._cdf_exact(x, j) - q, x0, x1, xtol=1e-14))

    def _cdf_exact(self, x, j):
        x0, h = self.grid[j], self.grid[j + 1] - self.grid[j]
        d0, d1 = self.density[j], self.density[j + 1]
        u = x - x0
        return self._cdf[j] + d0 * u + 0.5 * (d1 - d0) / h * u * u


#: positive_grid extends its range while the mass at an end is within this many nats of the
#: largest.
EDGE_NATS = 40.0
#: positive_grid adds log-spaced points within this many even steps of a region's lower end,
#: and keeps them where they change the region's mass by more than RESOLVED (relative).
NEAR_ZERO_STEPS, RESOLVED = 64, 1e-4


def _runs(keep: np.ndarray) -> list:
    """``(first, last)`` index of each run of True in ``keep``."""
    edges = np.diff(np.concatenate(([0], keep.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1))


def positive_grid(log_density, lower: float, upper: float, points: int = 1500,
                  coarse: int = 400, cut: float = 28.0) -> Grid:
    r"""An unnormalised log density of a positive parameter, tabulated where its mass is.

    A coarse pass on a log-spaced grid over ``[lower, upper]`` (extended, by factors of 1000
    down and 2 up, while the mass per unit of log theta at an end is within
    :data:`EDGE_NATS` of its largest value: an extreme release can pull the posterior far
    into the prior's tail) finds the regions where the
    mass per unit of :math:`\log\theta`, :math:`p(\theta)\,\theta`, is within ``cut`` + 2
    nats of its largest value; each region gets ``points`` points: half evenly spaced, half
    log-spaced within :data:`NEAR_ZERO_STEPS` even steps of its lower end
    (the first resolve a wide mode, the second one of width 0.001 near zero), twice, the
    second time narrowed to where the mass is within ``cut`` nats. The log-spaced points are
    kept only where they change the region's mass (:data:`RESOLVED`): on evenly spaced points
    alone the trapezoid rule is far more accurate for a smooth density.
    Elsewhere the density is taken as 0. An evenly spaced grid over the whole range (as the
    models' references used before) puts one or two points on a mode at 0.003 next to one
    at 3.5, and its trapezoid rule then misjudges that mode's mass by a factor of two or
    more; a density that diverges at 0 (a Gamma prior of shape below 1) it misjudges without
    bound.

    Parameters
    ----------
    log_density : callable
        Vectorised: an array of positive values to their log density (up to a constant;
        ``-inf`` allowed).
    lower, upper : float
        The range searched first, ``0 < lower < upper`` (e.g. the prior's 1e-12 and
        1 - 1e-12 quantiles).
    points, coarse : int
        Points per region and per pass; points of the coarse pass.
    cut : float
        Nats below the largest mass per unit of log theta beyond which the density is 0.

    Returns
    -------
    Grid

    Examples
    --------
    A mixture of two Gammas, 30% at shape 1, rate 500 (mean 0.002) and 70% at shape 30,
    rate 10 (mean 3): the mean is 0.3 * 0.002 + 0.7 * 3 = 2.1006.

    >>> import numpy as np
    >>> from scipy import special, stats
    >>> from dawrap.reference import positive_grid
    >>> def log_density(x):
    ...     return special.logsumexp([np.log(0.3) + stats.gamma.logpdf(x, 1, scale=1 / 500),
    ...                               np.log(0.7) + stats.gamma.logpdf(x, 30, scale=0.1)],
    ...                              axis=0)
    >>> grid = positive_grid(log_density, 1e-12, 100.0, points=3000)
    >>> round(grid.mean(), 4), round(float(grid.cdf([0.05])[0]), 4)
    (2.1006, 0.3)
    """
    if not 0.0 < lower < upper:
        raise ValueError(f"need 0 < lower < upper, got lower={lower!r}, upper={upper!r}")

    def mass(theta):
        with np.errstate(divide="ignore", invalid="ignore"):
            lp = np.asarray(log_density(theta), dtype=float)
        lp = np.where(np.isnan(lp), -np.inf, lp)
        return lp, lp + np.log(theta)

    for _ in range(200):  # the range grows while its ends hold mass
        grid = np.geomspace(lower, upper, coarse)
        lp, m = mass(grid)
        if not np.isfinite(np.max(m)):
            raise ValueError(f"log_density is not finite anywhere on [{lower:g}, {upper:g}] "
                             f"(-inf or NaN everywhere, or +inf somewhere)")
        low, high = m[0] > np.max(m) - EDGE_NATS, m[-1] > np.max(m) - EDGE_NATS
        if low and lower > 1e-290:
            lower *= 1e-3
        elif high and upper < 1e290:
            upper *= 2.0
        else:
            break
    else:
        raise ValueError("the mass of log_density does not fall off within [1e-290, 1e290]: "
                         "is the density integrable?")
    if m[0] > np.max(m) - EDGE_NATS or m[-1] > np.max(m) - EDGE_NATS:
        raise ValueError("the mass of log_density does not fall off within [1e-290, 1e290]: "
                         "is the density integrable?")
    margin = cut + 2.0
    for _ in range(3):  # the coarse pass, then two passes over the regions found
        lp, m = mass(grid)
        regions = []
        for first, last in _runs(m > np.max(m) - margin):
            a, b = grid[max(first - 1, 0)], grid[min(last + 1, grid.size - 1)]
            if a == b:
                a, b = a * (1.0 - 1e-9), b * (1.0 + 1e-9)
            even = np.linspace(a, b, points - points // 2)
            top = even[min(NEAR_ZERO_STEPS, even.size - 1)]
            # Twelve decades of log-spaced points below the top (a density that diverges
            # like x^-1/2 has 2e-6 of the mass below them; a mode narrower than 1e-12 of the
            # steps is beyond any release's resolution).
            near = np.geomspace(max(a, 1e-12 * top), top, points // 2)
            regions.append((even, near))
        grid = np.unique(np.concatenate([p for region in regions for p in region]))
        margin = cut
    lp, m = mass(grid)
    keep = m > np.max(m) - cut
    log_density_at = dict(zip(grid, np.where(keep, lp, -np.inf)))
    # Each region's evenly spaced points alone, unless the log-spaced ones near its lower end
    # change its mass: the trapezoid rule on an even grid is far more accurate than its h^2
    # bound for a smooth density that vanishes at both ends (the Euler-Maclaurin terms
    # cancel), which extra points near one end undo (by 3e-6 of the mean on poisson_gamma's
    # edge release); but a mode near zero narrower than a step needs them.
    chosen = []
    for even, near in regions:
        both = np.union1d(even, near)
        on_even = np.trapezoid(np.exp([log_density_at[t] for t in even]), even)
        on_both = np.trapezoid(np.exp([log_density_at[t] for t in both]), both)
        resolved = abs(on_both - on_even) <= RESOLVED * max(on_both, 1e-300)
        chosen.append(even if resolved else both)
    grid = np.unique(np.concatenate(chosen))
    return Grid(grid, np.array([log_density_at[t] for t in grid]))


class WeightedDraws(_ScalarPosterior):
    r"""A posterior as weighted draws: draws :math:`\theta_k` from the prior with weights
    :math:`w_k \propto p(s_{dp} \mid \theta_k)` (importance sampling), and the Monte Carlo
    error of each estimate from the weights.

    The self-normalised estimate :math:`\hat\mu = \sum_k \bar w_k f(\theta_k)` has standard
    error :math:`\big(\sum_k \bar w_k^2 (f(\theta_k) - \hat\mu)^2\big)^{1/2}` (delta
    method; :math:`\bar w` normalised); the effective sample size is
    :math:`1 / \sum_k \bar w_k^2`.

    Parameters
    ----------
    draws : array_like of shape (K,)
        Prior draws of a scalar parameter.
    log_weights : array_like of shape (K,)
        Their log likelihoods (up to a constant).

    Examples
    --------
    Prior N(0, 1), one observation 1.0 of unit variance: the posterior is N(0.5, 0.5).

    >>> import numpy as np
    >>> from dawrap.reference import WeightedDraws
    >>> theta = np.random.default_rng(0).standard_normal(200_000)
    >>> post = WeightedDraws(theta, -0.5 * (1.0 - theta) ** 2)
    >>> bool(abs(post.mean() - 0.5) < 4 * post.mcse(theta))
    True
    >>> round(post.ess / theta.size, 2)         # sqrt(3) exp(-1/6) / 2 of the draws' worth
    0.73

    Three draws of equal weight:

    >>> even = WeightedDraws([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
    >>> even.cdf([2.5]), even.ppf(0.5)
    (array([0.66666667]), 2.0)
    """

    def __init__(self, draws, log_weights):
        self.draws = np.asarray(draws, dtype=float).ravel()
        self.weights = normalise_log_weights(np.asarray(log_weights, dtype=float).ravel())
        if self.weights.shape != self.draws.shape:
            raise ValueError(f"draws and log_weights differ in length: {self.draws.size} "
                             f"and {self.weights.size}")
        order = np.argsort(self.draws, kind="stable")
        self._sorted, self._cdf = self.draws[order], np.cumsum(self.weights[order])
        #: The effective sample size of the weights.
        self.ess = float(1.0 / np.sum(self.weights ** 2))

    def expect(self, values) -> float:
        """The weighted mean of ``values`` (one per draw).

        Parameters
        ----------
        values : array_like of shape (K,)

        Returns
        -------
        float

        Examples
        --------
        >>> round(even.expect([1.0, 4.0, 9.0]), 6)               # the mean of the squares
        4.666667
        """
        return float(self.weights @ np.asarray(values, dtype=float))

    def mcse(self, values) -> float:
        """The Monte Carlo standard error of :meth:`expect` of ``values``.

        Parameters
        ----------
        values : array_like of shape (K,)

        Returns
        -------
        float

        Examples
        --------
        >>> round(even.mcse(even.draws), 4)                      # sqrt(2 / 3) / sqrt(3)
        0.4714
        """
        values = np.asarray(values, dtype=float)
        return float(np.sqrt(np.sum(self.weights ** 2 * (values - self.expect(values)) ** 2)))

    def mean(self) -> float:
        return self.expect(self.draws)

    def std(self) -> float:
        return float(np.sqrt(self.expect((self.draws - self.mean()) ** 2)))

    def cdf(self, x):
        x = np.asarray(x, dtype=float)
        at = np.searchsorted(self._sorted, x, side="right")
        return np.where(at > 0, self._cdf[np.maximum(at - 1, 0)], 0.0)

    def ppf(self, q: float) -> float:
        return float(self._sorted[min(np.searchsorted(self._cdf, q), self._sorted.size - 1)])
