r"""The Laplace noise family (:data:`LAPLACE`) and mechanism, and the Laplace-form log density
it shares with the geometric one: :math:`\log g(s, t) = c - \sum_j |s_j - t_j| / b_j`."""
from __future__ import annotations

import math

import numba
import numpy as np

from .._checks import as_count, as_positive_float
from . import separable
from .base import Mechanism
from .families import ContinuousNoise, NoiseFamily, Split, nearest_totals, register
from .noise import LARGEST_SCALE, NoiseLaw, inverse_scale_params, usable_scale

__all__ = ["Laplace", "laplace_log_density", "LaplaceFamily", "LAPLACE"]


@numba.njit(nogil=True, cache=True)
def laplace_log_density(s_dp, t, params):
    r""":math:`c - \sum_j |s_j - t_j| w_j` with ``params = [w_1, ..., w_m, c]`` (the inverse
    scales, then the log normaliser): the log density of Laplace and geometric noise.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.mechanisms.laplace import laplace_log_density
    >>> float(laplace_log_density(np.array([3.5]), np.array([3.0]), np.array([0.5, -1.0])))
    -1.25
    """
    out = params[-1]
    for j in range(s_dp.shape[0]):
        out -= abs(s_dp[j] - t[j]) * params[j]
    return out


class LaplaceFamily(NoiseFamily):
    r"""Laplace-form noise, :math:`P(z_j) \propto e^{-|z_j|/b_j}` (``params[j]`` is
    :math:`1/b_j`): a scale mixture of normals, so a grouped chain splits a shared cell
    through a latent variance (:attr:`split`), and beyond the totals' range the release
    changes no posterior (:attr:`flat_beyond_range`). The geometric family is its integer
    version (:class:`~dawrap.mechanisms.geometric.GeometricFamily`).

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.mechanisms.laplace import LAPLACE
    >>> LAPLACE.variance(np.array([2.0])), LAPLACE.continuous_noise(2.0, 8.0)
    (array([8.]), ContinuousNoise(laplace_scale=2.0, gaussian_variance=0.0))
    """

    split = Split.LATENT
    flat_beyond_range = True

    def variance(self, scale: np.ndarray) -> np.ndarray:
        return 2.0 * scale ** 2

    def log_shape(self, z: float) -> float:
        return -z

    def relative_log_density(self, s: np.ndarray, t: np.ndarray,
                             inverse_scale: np.ndarray) -> np.ndarray:
        # beyond the range, |s_j - t_j| = |s_j - m_j| + |m_j - t_j|: the first term is the
        # same for every row
        return -(np.abs(nearest_totals(s, t) - t) * inverse_scale).sum(axis=1)

    def continuous_noise(self, scale: float, variance: float) -> ContinuousNoise:
        return ContinuousNoise(scale, 0.0)


#: The Laplace family (real-valued noise).
LAPLACE = register(LaplaceFamily("laplace", integer=False, log_density=laplace_log_density,
                                 coordinate_log_density=separable.laplace_coordinate))


class Laplace(Mechanism):
    r"""The Laplace mechanism: :math:`s_{dp} = T + \mathrm{Laplace}(0, \Delta_1/\epsilon)` per
    coordinate, pure :math:`\epsilon`-DP when :math:`\Delta_1` bounds the L1 change of ``T``
    from replacing one record.

    Parameters
    ----------
    statistic : numba.njit function
        ``(x_i, out)``: the record's contribution.
    epsilon, sensitivity : float
        The guarantee and the L1 sensitivity :math:`\Delta_1`; the noise scale
        ``sensitivity / epsilon`` must lie in [1e-150, 1e150].
    size : int
        Length of the released vector.
    truncation : (float, float), optional
        As for :class:`Mechanism`.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> mech = dw.Laplace(beta_binomial.count, epsilon=0.5, sensitivity=1.0)
    >>> mech
    Laplace(count, epsilon=0.5, sensitivity=1, scale=2, size=1)
    >>> x = beta_binomial.model().simulate({"p": 0.3}, n=100, seed=1)
    >>> s_dp = mech.release(x, seed=1)         # the count plus Laplace(0, 2) noise
    """

    def __init__(self, statistic, epsilon: float, sensitivity: float = 1.0, *, size: int = 1,
                 truncation: tuple | None = None):
        epsilon = as_positive_float(epsilon, "epsilon")
        self.sensitivity = as_positive_float(sensitivity, "sensitivity")
        self.scale = usable_scale(
            self.sensitivity / epsilon, f"epsilon = {epsilon!r} with sensitivity = "
            f"{self.sensitivity!r}", "the noise scale sensitivity / epsilon", LARGEST_SCALE,
            "dw.Laplace")
        size = as_count(size, "size")
        super().__init__(statistic, LAPLACE.log_density, size=size,
                         params=inverse_scale_params(1.0 / self.scale, size,
                                                     -math.log(2.0 * self.scale)),
                         epsilon=epsilon, name="Laplace", truncation=truncation,
                         coordinate_log_density=LAPLACE.coordinate_log_density,
                         draw_release=lambda rng, t: t + rng.laplace(0.0, self.scale, t.shape))
        self.noise = NoiseLaw.of(LAPLACE, self.scale, 2.0 * self.scale ** 2, size=size)

    @property
    def privacy(self) -> dict:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity, "scale": self.scale}
