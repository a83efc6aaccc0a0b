r"""The Laplace mechanism, and the Laplace-form log density it shares with the geometric one:
:math:`\log g(s, t) = c - \sum_j |s_j - t_j| / b_j`."""
from __future__ import annotations

import math

import numba

from .._checks import as_count, as_positive_float
from . import separable
from .base import Mechanism
from .noise import LARGEST_SCALE, NoiseLaw, inverse_scale_params, usable_scale

__all__ = ["Laplace", "laplace_log_density"]


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
        super().__init__(statistic, laplace_log_density, size=size,
                         params=inverse_scale_params(1.0 / self.scale, size,
                                                     -math.log(2.0 * self.scale)),
                         epsilon=epsilon, name="Laplace", truncation=truncation,
                         coordinate_log_density=separable.laplace_coordinate,
                         draw_release=lambda rng, t: t + rng.laplace(0.0, self.scale, t.shape))
        self.noise = NoiseLaw.of("laplace", self.scale, 2.0 * self.scale ** 2, size=size)

    @property
    def privacy(self) -> dict:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity, "scale": self.scale}
