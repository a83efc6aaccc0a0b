r"""Exact posteriors as small distribution objects, for checking samplers and for plots.

The record sampler is exact; these objects are how that claim is tested. Two forms cover the
built-in models:

* :class:`BetaMixture`, as arises when the confidential statistic is discrete and can be
  summed out:
  :math:`p(\theta\mid s_{dp}) = \sum_k w_k\, p(\theta \mid T = k)`,
  :math:`w_k \propto p(T = k)\, g(s_{dp}, k)`;
* :class:`Grid`: a density tabulated on a fine grid (trapezoid rule), for everything else.

Both are computed in log space and shifted by the largest log weight, so that a release far
outside anything the model can produce still gives its (well-defined) answer instead of the
prior or 0/0: :func:`relative_log_g` keeps the differences of :math:`\log g(s_{dp}, t)`
between confidential totals exact for the declared noise laws however large the release.
"""
from __future__ import annotations

import numpy as np
from scipy import optimize, special

__all__ = ["BetaMixture", "Grid", "normalise_log_weights", "relative_log_g"]


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


class BetaMixture:
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
        """The mean.

        Returns
        -------
        float

        Examples
        --------
        >>> from dawrap.reference import BetaMixture
        >>> beta = BetaMixture([1.0], a=[2.0], b=[3.0])          # one component: Beta(2, 3)
        >>> round(beta.mean(), 6)                                # 2 / 5
        0.4
        """
        return float(self.weights @ (self.a / (self.a + self.b)))

    def var(self) -> float:
        """The variance.

        Returns
        -------
        float

        Examples
        --------
        >>> from dawrap.reference import BetaMixture
        >>> beta = BetaMixture([1.0], a=[2.0], b=[3.0])          # one component: Beta(2, 3)
        >>> round(beta.var(), 6)                                 # 2 * 3 / (5**2 * 6)
        0.04
        """
        a, b = self.a, self.b
        second = (a * (a + 1)) / ((a + b) * (a + b + 1))
        return float(self.weights @ second - self.mean() ** 2)

    def std(self) -> float:
        """The standard deviation.

        Returns
        -------
        float

        Examples
        --------
        >>> from dawrap.reference import BetaMixture
        >>> beta = BetaMixture([1.0], a=[2.0], b=[3.0])          # one component: Beta(2, 3)
        >>> round(beta.std(), 6)
        0.2
        """
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
        >>> from dawrap.reference import BetaMixture
        >>> beta = BetaMixture([1.0], a=[2.0], b=[3.0])          # one component: Beta(2, 3)
        >>> beta.pdf([0.5])                                       # 12 x (1 - x)^2
        array([1.5])
        """
        x = np.atleast_1d(np.asarray(x, dtype=float))
        log_pdf = ((self.a - 1)[:, None] * np.log(x) + (self.b - 1)[:, None] * np.log1p(-x)
                   - special.betaln(self.a, self.b)[:, None])
        return self.weights @ np.exp(log_pdf)

    def cdf(self, x):
        """The distribution function at ``x`` (a scalar or an array).

        Parameters
        ----------
        x : float or array_like

        Returns
        -------
        numpy.ndarray

        Examples
        --------
        >>> from dawrap.reference import BetaMixture
        >>> beta = BetaMixture([1.0], a=[2.0], b=[3.0])          # one component: Beta(2, 3)
        >>> beta.cdf([0.5])
        array([0.6875])
        """
        x = np.atleast_1d(np.asarray(x, dtype=float))
        return self.weights @ special.betainc(self.a[:, None], self.b[:, None], x[None, :])

    def ppf(self, q: float) -> float:
        """The quantile of probability ``q`` (the inverse of :meth:`cdf`).

        Parameters
        ----------
        q : float
            A probability in (0, 1).

        Returns
        -------
        float

        Examples
        --------
        >>> from dawrap.reference import BetaMixture
        >>> beta = BetaMixture([1.0], a=[2.0], b=[3.0])          # one component: Beta(2, 3)
        >>> round(beta.ppf(0.6875), 6)
        0.5
        """
        return float(optimize.brentq(lambda x: self.cdf(x)[0] - q, 0.0, 1.0, xtol=1e-14))


class Grid:
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
        """The mean.

        Returns
        -------
        float

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.reference import Grid
        >>> x = np.linspace(-8.0, 8.0, 4001)
        >>> normal = Grid(x, -0.5 * x ** 2)                      # N(0, 1)
        >>> round(normal.mean(), 6) + 0.0
        0.0
        """
        return float(np.trapezoid(self.grid * self.density, self.grid))

    def var(self) -> float:
        """The variance.

        Returns
        -------
        float

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.reference import Grid
        >>> x = np.linspace(-8.0, 8.0, 4001)
        >>> normal = Grid(x, -0.5 * x ** 2)                      # N(0, 1)
        >>> round(normal.var(), 6)
        1.0
        """
        m = self.mean()
        return float(np.trapezoid((self.grid - m) ** 2 * self.density, self.grid))

    def std(self) -> float:
        """The standard deviation.

        Returns
        -------
        float

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.reference import Grid
        >>> x = np.linspace(-8.0, 8.0, 4001)
        >>> normal = Grid(x, -0.5 * x ** 2)                      # N(0, 1)
        >>> round(normal.std(), 6)
        1.0
        """
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
        >>> import numpy as np
        >>> from dawrap.reference import Grid
        >>> x = np.linspace(-8.0, 8.0, 4001)
        >>> normal = Grid(x, -0.5 * x ** 2)                      # N(0, 1)
        >>> normal.pdf([0.0]).round(6)                           # 1 / sqrt(2 pi)
        array([0.398942])
        """
        return np.interp(x, self.grid, self.density, left=0.0, right=0.0)

    def cdf(self, x):
        """The distribution function at ``x`` (a scalar or an array).

        Parameters
        ----------
        x : float or array_like

        Returns
        -------
        numpy.ndarray

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.reference import Grid
        >>> x = np.linspace(-8.0, 8.0, 4001)
        >>> normal = Grid(x, -0.5 * x ** 2)                      # N(0, 1)
        >>> normal.cdf([0.0])
        array([0.5])
        """
        return np.interp(x, self.grid, self._cdf, left=0.0, right=1.0)

    def ppf(self, q: float) -> float:
        """The quantile of probability ``q`` (the inverse of :meth:`cdf`).

        Parameters
        ----------
        q : float
            A probability in (0, 1).

        Returns
        -------
        float

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.reference import Grid
        >>> x = np.linspace(-8.0, 8.0, 4001)
        >>> normal = Grid(x, -0.5 * x ** 2)                      # N(0, 1)
        >>> round(normal.ppf(0.975), 3)
        1.96
        """
        # Invert the piecewise-quadratic CDF of the piecewise-linear density.
        j = int(np.clip(np.searchsorted(self._cdf, q) - 1, 0, len(self.grid) - 2))
        x0, x1 = self.grid[j], self.grid[j + 1]
        return float(optimize.brentq(lambda x: self._cdf_exact(x, j) - q, x0, x1, xtol=1e-14))

    def _cdf_exact(self, x, j):
        x0, h = self.grid[j], self.grid[j + 1] - self.grid[j]
        d0, d1 = self.density[j], self.density[j + 1]
        u = x - x0
        return self._cdf[j] + d0 * u + 0.5 * (d1 - d0) / h * u * u
