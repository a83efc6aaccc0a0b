r"""The two-sided geometric (discrete Laplace) noise family (:data:`GEOMETRIC`) and mechanism
for integer statistics, with its publication path's exact noise."""
from __future__ import annotations

import math

import numpy as np

from .._checks import as_count, as_positive_float
from . import discrete
from .base import Mechanism
from .domains import as_contribution, check_sensitivity
from .families import ContinuousNoise, register
from .laplace import LAPLACE, LaplaceFamily
from .noise import LARGEST_INTEGER_SCALE, NoiseLaw, inverse_scale_params, usable_scale

__all__ = ["Geometric", "GeometricFamily", "GEOMETRIC"]


class GeometricFamily(LaplaceFamily):
    r"""Two-sided geometric noise, :math:`P(z) \propto e^{-|z|/b}` on the integers: the
    Laplace form (its normaliser does not depend on the integer total, so as a function of
    the records its density is the Laplace one), with its own variance, the sufficient-
    statistic sampler's Laplace noise of that variance, and an exact integer sampler.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.mechanisms.geometric import GEOMETRIC
    >>> GEOMETRIC.variance(np.array([2.0])).round(4)    # 2 a / (1 - a)^2, a = e^(-1/2)
    array([7.8354])
    """

    def variance(self, scale: np.ndarray) -> np.ndarray:
        # The difference of two geometric counts of failures, each a / (1 - a)^2.
        return 2.0 * np.exp(-1.0 / scale) / np.expm1(-1.0 / scale) ** 2

    def continuous_noise(self, scale: float, variance: float) -> ContinuousNoise:
        # Laplace noise of the same variance: scale sqrt(a) / (1 - a), within 1/(24 b) of b.
        return ContinuousNoise(math.sqrt(variance / 2.0), 0.0)

    def exact_noise(self, scale) -> int:
        return discrete.discrete_laplace(scale)


#: The two-sided geometric family (integer noise).
GEOMETRIC = register(GeometricFamily(
    "geometric", integer=True, log_density=LAPLACE.log_density,
    coordinate_log_density=LAPLACE.coordinate_log_density, continuous=LAPLACE))


class Geometric(Mechanism):
    r"""The two-sided geometric (discrete Laplace) mechanism for integer statistics:
    :math:`P(s_{dp} = T + z) = \frac{1-\alpha}{1+\alpha}\alpha^{|z|}`,
    :math:`\alpha = e^{-\epsilon/\Delta_1}`; pure :math:`\epsilon`-DP.

    Releases and confidential totals must be integers.

    Parameters
    ----------
    statistic : numba.njit function
        ``(x_i, out)``: the record's (integer) contribution.
    epsilon, sensitivity : float
        The guarantee and the L1 sensitivity; the noise scale ``sensitivity / epsilon`` must lie
        in [1e-150, 9.0e12] (2**53 / 1000: beyond, float64 cannot hold the releases exactly).
    size : int
        Length of the released vector.
    truncation : (float, float), optional
        As for :class:`Mechanism`.
    contribution : Box, Sparse or (lower, upper), optional
        The domain of one record's contribution, which the publication path
        (``release(x, secure=True)``) needs: each record's contribution is projected onto its
        integer points before noise is added. Its L1 diameter must not exceed
        ``sensitivity`` (checked here), which makes the stated epsilon-DP hold for every
        database.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> mech = dw.Geometric(beta_binomial.count, epsilon=1.0, contribution=(0, 1))
    >>> mech
    Geometric(count, epsilon=1, sensitivity=1, alpha=0.367879, size=1)
    >>> dw.Geometric(beta_binomial.count, epsilon=1.0, contribution=(0, 2))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: sensitivity = 1 is below the L1 diameter 2 of the declared contribution domain ...
    """

    def __init__(self, statistic, epsilon: float, sensitivity: float = 1.0, *, size: int = 1,
                 truncation: tuple | None = None, contribution=None):
        epsilon = as_positive_float(epsilon, "epsilon")
        self.sensitivity = as_positive_float(sensitivity, "sensitivity")
        usable_scale(self.sensitivity / epsilon, f"epsilon = {epsilon!r} with sensitivity = "
                     f"{self.sensitivity!r}", "the noise scale sensitivity / epsilon",
                     LARGEST_INTEGER_SCALE, "dw.Geometric")
        self.alpha = math.exp(-epsilon / self.sensitivity)
        size = as_count(size, "size")
        domain = as_contribution(contribution, size)
        if domain is not None:
            check_sensitivity(self.sensitivity, domain, 1, f"{epsilon:g}-DP")
        # log pmf = log((1 - a) / (1 + a)) - |z| epsilon / sensitivity: the Laplace form.
        log_alpha = -epsilon / self.sensitivity
        super().__init__(statistic, GEOMETRIC.log_density, size=size,
                         params=inverse_scale_params(
                             -log_alpha, size,
                             math.log(-math.expm1(log_alpha)) - math.log1p(self.alpha)),
                         epsilon=epsilon, name="Geometric", draw_release=self._draw,
                         truncation=truncation,
                         coordinate_log_density=GEOMETRIC.coordinate_log_density)
        self.integer_statistic = True
        self.contribution = domain
        # The difference of two geometric counts of failures, each of variance a / (1 - a)^2.
        self.noise = NoiseLaw.of(GEOMETRIC, self.sensitivity / epsilon,
                                 2.0 * self.alpha / self._success_probability() ** 2, size=size)

    @classmethod
    def from_scale(cls, statistic, scale: float, sensitivity: float = 1.0, *,
                   size: int = 1, contribution=None) -> "Geometric":
        """The mechanism adding discrete Laplace noise of ``scale``, :math:`P(z) \\propto
        e^{-|z|/\\text{scale}}`: epsilon = sensitivity / scale. This is how OpenDP's
        Laplace measurement on integers is described (``make_laplace(..., scale=s)``).
        ``scale`` must lie in [1e-150, 9.0e12]; ``contribution`` as for the constructor.

        Parameters
        ----------
        statistic : numba.njit function
            ``(x_i, out)``: the record's (integer) contribution.
        scale, sensitivity : float
            The noise scale and the L1 sensitivity.
        size : int
            Length of the released vector.
        contribution : Box, Sparse or (lower, upper), optional
            As for the constructor.

        Returns
        -------
        Geometric

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Geometric.from_scale(beta_binomial.count, scale=2.0).epsilon
        0.5
        """
        scale = usable_scale(as_positive_float(scale, "scale"), f"scale = {scale!r}",
                             "the noise scale", LARGEST_INTEGER_SCALE, "dw.Geometric")
        sensitivity = as_positive_float(sensitivity, "sensitivity")
        epsilon = sensitivity / scale
        if not 0.0 < epsilon < math.inf:
            raise ValueError(f"sensitivity = {sensitivity!r} with scale = {scale!r} gives "
                             f"epsilon = sensitivity / scale = {epsilon:g}, which float64 "
                             f"cannot hold")
        return cls(statistic, epsilon=epsilon, sensitivity=sensitivity, size=size,
                   contribution=contribution)

    def _success_probability(self) -> float:
        """``1 - alpha``, the success probability of the two geometric counts."""
        rate = self.epsilon / self.sensitivity
        # 1.0 - alpha is what seeded releases have always used, kept so that their draws do
        # not change; for rates below 1e-6 its rounding error exceeds 1e-10 relative (at the
        # smallest usable rate, 1e-13, it would be 1e-3), and expm1 is exact there.
        return 1.0 - self.alpha if rate >= 1e-6 else -math.expm1(-rate)

    def _draw(self, rng, t):
        self._integer_total(t)
        p = self._success_probability()
        return t + (rng.geometric(p, t.shape) - rng.geometric(p, t.shape))

    def _secure_noise(self) -> int:
        # The exact scale sensitivity / epsilon of the decimal parameters: no rounding.
        return GEOMETRIC.exact_noise(discrete.as_fraction(self.sensitivity)
                                     / discrete.as_fraction(self.epsilon))

    @property
    def privacy(self) -> dict:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity, "alpha": self.alpha}
