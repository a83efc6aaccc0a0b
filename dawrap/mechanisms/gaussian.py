r"""The Gaussian noise family (:data:`GAUSSIAN`) and mechanism, and the Gaussian-form log
density it shares with the discrete Gaussian one:
:math:`\log g(s, t) = c - \sum_j (s_j - t_j)^2 / (2\sigma_j^2)`."""
from __future__ import annotations

import math
import types

import numba
import numpy as np

from .._checks import as_count, as_positive_float
from . import separable
from .base import Mechanism
from .families import ContinuousNoise, NoiseFamily, Split, nearest_totals, register
from .noise import LARGEST_SCALE, NoiseLaw, inverse_scale_params, usable_scale

__all__ = ["Gaussian", "gaussian_log_density", "GaussianFamily", "GAUSSIAN"]


@numba.njit(nogil=True, cache=True)
def gaussian_log_density(s_dp, t, params):
    r""":math:`c - \tfrac12 \sum_j ((s_j - t_j) w_j)^2` with ``params = [w_1, ..., w_m, c]``
    (the inverse sigmas, then the log normaliser): the log density of Gaussian and discrete
    Gaussian noise.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.mechanisms.gaussian import gaussian_log_density
    >>> float(gaussian_log_density(np.array([3.0]), np.array([1.0]), np.array([0.5, -1.0])))
    -1.5
    """
    out = params[-1]
    for j in range(s_dp.shape[0]):
        z = (s_dp[j] - t[j]) * params[j]
        out -= 0.5 * z * z
    return out


class GaussianFamily(NoiseFamily):
    r"""Gaussian-form noise, :math:`P(z_j) \propto e^{-z_j^2/(2\sigma_j^2)}` (``params[j]``
    is :math:`1/\sigma_j`): infinitely divisible, so a grouped chain splits a shared cell
    into Gaussian pieces (:attr:`split`). The discrete Gaussian family is its integer
    version (:class:`~dawrap.mechanisms.discrete_gaussian.DiscreteGaussianFamily`).

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.mechanisms.gaussian import GAUSSIAN
    >>> GAUSSIAN.split, GAUSSIAN.continuous_noise(3.0, 9.0)
    (<Split.PIECES: 'Gaussian pieces'>, ContinuousNoise(laplace_scale=0.0, gaussian_variance=9.0))
    """

    split = Split.PIECES

    def variance(self, scale: np.ndarray) -> np.ndarray:
        return scale ** 2

    def log_shape(self, z: float) -> float:
        return -0.5 * z * z

    def relative_log_density(self, s: np.ndarray, t: np.ndarray,
                             inverse_scale: np.ndarray) -> np.ndarray:
        # (s - t)^2 - (s - m)^2 = (m - t)(2s - t - m): a product of representable numbers,
        # not a difference of squares (which overflow at 1e155 and lose every unit below)
        w, nearest = inverse_scale, nearest_totals(s, t)
        with np.errstate(over="ignore", invalid="ignore"):
            terms = (w * (nearest - t)) * (w * (2.0 * s - t - nearest))
            # 0 * inf is NaN only where t equals the nearest total: that term is exactly 0.
            terms[(t == nearest) & ~np.isfinite(terms)] = 0.0
        return -0.5 * terms.sum(axis=1)

    def continuous_noise(self, scale: float, variance: float) -> ContinuousNoise:
        return ContinuousNoise(0.0, scale ** 2)


#: The Gaussian family (real-valued noise).
GAUSSIAN = register(GaussianFamily("gaussian", integer=False, log_density=gaussian_log_density,
                                   coordinate_log_density=separable.gaussian_coordinate))


class Gaussian(Mechanism):
    r"""The Gaussian mechanism :math:`s_{dp} = T + N(0, \sigma^2 I)`.

    Build it from ``sigma`` directly, or from a privacy guarantee with an L2 sensitivity
    :math:`\Delta_2`: :meth:`from_zcdp` (:math:`\rho`-zCDP, :math:`\sigma = \Delta_2/\sqrt{2\rho}`)
    or :meth:`from_gdp` (:math:`\mu`-GDP, :math:`\sigma = \Delta_2/\mu`).

    Parameters
    ----------
    statistic : numba.njit function
        ``(x_i, out)``: the record's contribution.
    sigma : float
        The noise standard deviation, in [1e-150, 1e150].
    size : int
        Length of the released vector.
    truncation : (float, float), optional
        As for :class:`Mechanism`.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> mech = dw.Gaussian(beta_binomial.count, sigma=2.0)
    >>> mech, mech.noise_variance()
    (Gaussian(count, sigma=2, size=1), array([4.]))
    """

    #: The largest usable sigma (see ``LARGEST_SCALE``).
    _largest_sigma = LARGEST_SCALE
    #: The family of the noise law it declares (:class:`~dawrap.mechanisms.NoiseLaw`).
    _noise_family = GAUSSIAN

    def __init__(self, statistic, sigma: float, *, size: int = 1,
                 truncation: tuple | None = None):
        self.sigma = usable_scale(as_positive_float(sigma, "sigma"), f"sigma = {sigma!r}",
                                  "sigma", self._largest_sigma, f"dw.{type(self).__name__}")
        self._guarantee = types.MappingProxyType({})  # set by from_zcdp / from_gdp
        size = as_count(size, "size")
        family = self._noise_family
        super().__init__(statistic, family.log_density, size=size,
                         params=inverse_scale_params(1.0 / self.sigma, size,
                                                     -self._log_normaliser()),
                         name=type(self).__name__, truncation=truncation,
                         draw_release=self._draw,
                         coordinate_log_density=family.coordinate_log_density)
        self.noise = NoiseLaw.of(self._noise_family, self.sigma, self._variance(), size=size)

    def _log_normaliser(self) -> float:
        return math.log(self.sigma) + 0.5 * math.log(2.0 * math.pi)

    def _variance(self) -> float:
        return self.sigma ** 2

    def _draw(self, rng, t):
        return t + rng.normal(0.0, self.sigma, t.shape)

    @classmethod
    def _sigma_for(cls, rho_or_mu: str, value, sensitivity) -> tuple[float, float, float]:
        """Checked (value, sensitivity, sigma) for a zCDP or GDP budget, naming the arguments
        when sigma falls outside the usable range."""
        value = as_positive_float(value, rho_or_mu)
        sensitivity = as_positive_float(sensitivity, "sensitivity")
        if rho_or_mu == "rho":
            sigma, formula = sensitivity / math.sqrt(2.0 * value), "sensitivity / sqrt(2 rho)"
        else:
            sigma, formula = sensitivity / value, "sensitivity / mu"
        usable_scale(sigma, f"{rho_or_mu} = {value!r} with sensitivity = {sensitivity!r}",
                     f"sigma = {formula}", cls._largest_sigma, f"dw.{cls.__name__}")
        return value, sensitivity, sigma

    @classmethod
    def from_zcdp(cls, statistic, rho: float, sensitivity: float, *, size: int = 1) -> "Gaussian":
        """The Gaussian mechanism satisfying ``rho``-zCDP for L2 sensitivity ``sensitivity``.

        Parameters
        ----------
        statistic : numba.njit function
            ``(x_i, out)``: the record's contribution.
        rho, sensitivity : float
            The zCDP budget and the L2 sensitivity: sigma = sensitivity / sqrt(2 rho).
        size : int
            Length of the released vector.

        Returns
        -------
        Gaussian

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Gaussian.from_zcdp(beta_binomial.count, rho=0.5, sensitivity=1.0).privacy
        {'sigma': 1.0, 'rho': 0.5, 'sensitivity': 1.0}
        """
        rho, sensitivity, sigma = cls._sigma_for("rho", rho, sensitivity)
        mech = cls(statistic, sigma, size=size)
        mech._state_guarantee("rho", rho, sensitivity)
        return mech

    @classmethod
    def from_gdp(cls, statistic, mu: float, sensitivity: float, *, size: int = 1) -> "Gaussian":
        """The Gaussian mechanism satisfying ``mu``-GDP for L2 sensitivity ``sensitivity``.

        Parameters
        ----------
        statistic : numba.njit function
            ``(x_i, out)``: the record's contribution.
        mu, sensitivity : float
            The GDP parameter and the L2 sensitivity: sigma = sensitivity / mu.
        size : int
            Length of the released vector.

        Returns
        -------
        Gaussian

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Gaussian.from_gdp(beta_binomial.count, mu=0.5, sensitivity=1.0).privacy
        {'sigma': 2.0, 'mu': 0.5, 'sensitivity': 1.0}
        """
        mu, sensitivity, sigma = cls._sigma_for("mu", mu, sensitivity)
        mech = cls(statistic, sigma, size=size)
        mech._state_guarantee("mu", mu, sensitivity)
        return mech

    def _state_guarantee(self, rho_or_mu: str, value: float, sensitivity: float) -> None:
        """Record the budget that ``from_zcdp`` / ``from_gdp`` derived sigma from: the one
        change after construction, allowed once and only for a budget giving this sigma."""
        _, _, sigma = self._sigma_for(rho_or_mu, value, sensitivity)
        if self._guarantee or sigma != self.sigma:
            raise AttributeError(f"{type(self).__name__}: a guarantee is stated once, by "
                                 f"from_zcdp or from_gdp, and only for the sigma it gives")
        object.__setattr__(self, "_guarantee", types.MappingProxyType(
            {rho_or_mu: value, "sensitivity": sensitivity}))

    @property
    def privacy(self) -> dict:
        return {"sigma": self.sigma, **self._guarantee}
