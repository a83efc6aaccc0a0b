"""Discrete Gaussian noise with a sigma per block of coordinates: the release of
:mod:`dawrap.models.census` (one block per query) and :mod:`dawrap.models.small_area` (one
per level)."""
from __future__ import annotations

import math
import numbers
import types
from collections.abc import Iterable

import numpy as np

import dawrap as dw
from dawrap.extend import as_positive_float
from dawrap.extend import NoiseLaw, gaussian_coordinate
from dawrap.extend import discrete_gaussian_log_normaliser
from dawrap.extend import gaussian_log_density
from dawrap.extend import LARGEST_INTEGER_SCALE, stated_budget, usable_scale

__all__ = ["LevelledDiscreteGaussian", "discrete_gaussian_noise"]


class LevelledDiscreteGaussian(dw.Mechanism):
    r"""Discrete Gaussian noise with its own sigma per block of coordinates (a geography
    level), :math:`\sigma_l = \Delta_2/\sqrt{2\rho_l}`; the release is
    :math:`\sum_l \rho_l`-zCDP. Separable, so sparse statistics take the O(nnz) path.

    Parameters
    ----------
    statistic : numba.njit function
        ``(x_i, out)``, the levels' counts concatenated.
    sizes : sequence of int
        The length of each level's block.
    rho : sequence of float
        One zCDP budget per level.
    sensitivity : float
        The L2 sensitivity of each level.

    Examples
    --------
    >>> from dawrap.models import small_area
    >>> statistic, size = small_area.statistics(2, 2, (0, 0))      # 2 areas in 1 region
    >>> mech = small_area.LevelledDiscreteGaussian(statistic, [4, 2], rho=(0.5, 2.0),
    ...                                            sensitivity=2 ** 0.5)
    >>> [round(s, 4) for s in mech.sigmas], mech.privacy["rho"]
    ([1.4142, 0.7071], 2.5)
    """

    def __init__(self, statistic, sizes, rho, sensitivity: float):
        self.sizes = tuple(int(s) for s in sizes)  # tuples: immutable, as the mechanism
        given = None if isinstance(rho, (str, bytes)) or not isinstance(rho, Iterable) \
            else tuple(rho)
        if given is None or len(given) != len(self.sizes) or not all(
                isinstance(r, numbers.Real) and not isinstance(r, bool) and 0 < r < math.inf
                for r in given):  # NaN fails too
            raise ValueError(f"LevelledDiscreteGaussian: rho must hold one positive finite "
                             f"number per level ({len(self.sizes)}), got {rho!r}")
        self.rho = tuple(float(r) for r in given)
        self.sensitivity = as_positive_float(sensitivity, "sensitivity")
        self.sigmas = tuple(
            usable_scale(self.sensitivity / math.sqrt(2.0 * r), f"rho = {r!r} with sensitivity "
                         f"= {self.sensitivity!r}", "sigma = sensitivity / sqrt(2 rho)",
                         LARGEST_INTEGER_SCALE, "LevelledDiscreteGaussian")
            for r in self.rho)
        inverse = np.concatenate([np.full(s, 1.0 / sg) for s, sg in zip(self.sizes,
                                                                          self.sigmas)])
        norm = sum(s * discrete_gaussian_log_normaliser(sg)
                   for s, sg in zip(self.sizes, self.sigmas))
        super().__init__(statistic, gaussian_log_density, size=sum(self.sizes),
                         params=np.r_[inverse, -norm], draw_release=self._draw,
                         name="LevelledDiscreteGaussian",
                         coordinate_log_density=gaussian_coordinate,
                         # the declared law: integer releases, exact variances, suffstat
                         noise=NoiseLaw.of("discrete_gaussian",
                                           np.repeat(self.sigmas, self.sizes)))
        # the guarantee of the noise drawn, rho_l = sensitivity^2 / (2 sigma_l^2), computed
        # once from the sigmas (never from rho alone)
        levels = [self.sensitivity ** 2 / (2.0 * sg ** 2) for sg in self.sigmas]
        self._privacy = types.MappingProxyType(
            {**{f"rho_{l}": stated_budget([r]) for l, r in enumerate(levels)},
             "rho": stated_budget(levels), "sensitivity": self.sensitivity})

    def _draw(self, rng, t):
        return np.asarray(t, np.float64) + discrete_gaussian_noise(
            rng, np.repeat(self.sigmas, self.sizes))

    @property
    def privacy(self) -> dict:
        """Each level's budget ``rho_<l>`` and their sum ``rho`` (zCDP composes), computed
        from the sigma of the noise each level draws (float rounding removed,
        :func:`dawrap.mechanisms.noise.stated_budget`), and the sensitivity.

        Examples
        --------
        >>> from dawrap.models import small_area
        >>> small_area.discrete_gaussian([0, 0], categories=2, rho=(0.1, 0.2)).privacy
        {'rho_0': 0.1, 'rho_1': 0.2, 'rho': 0.3, 'sensitivity': 1.4142135623730951}
        """
        return dict(self._privacy)


def discrete_gaussian_noise(rng, sigma) -> np.ndarray:
    r"""Discrete Gaussian noise, one draw per entry of ``sigma``, for simulated releases:
    :math:`P(z) \propto e^{-z^2/(2\sigma^2)}` on the integers, by the rejection sampler of
    Canonne, Kamath & Steinke (2020, Algorithm 3) from the two-sided geometric of scale
    :math:`t = \lfloor\sigma\rfloor + 1` (a difference of two geometric draws), accepted
    with probability :math:`e^{-(|y| - \sigma^2/t)^2/(2\sigma^2)}`; vectorised over the
    entries. Exact in distribution up to the floating-point rounding of the geometric draws
    and the acceptance probabilities, hence for simulation only: a release for publication
    needs the exact integer sampler (:mod:`dawrap.mechanisms.discrete`).

    Parameters
    ----------
    rng : numpy.random.Generator
    sigma : array_like
        Scales > 0.

    Returns
    -------
    ndarray of int64, the shape of ``sigma``

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models.census.levelled import discrete_gaussian_noise
    >>> z = discrete_gaussian_noise(np.random.default_rng(0), np.full(100_000, 2.0))
    >>> bool(abs(z.var() - 4.0) < 0.1), z.dtype
    (True, dtype('int64'))
    """
    sigma = np.asarray(sigma, np.float64).reshape(-1)
    out = np.empty(sigma.shape[0], np.int64)
    todo = np.arange(sigma.shape[0])
    while todo.size:
        s = sigma[todo]
        t = np.floor(s) + 1.0
        p = -np.expm1(-1.0 / t)
        y = rng.geometric(p) - rng.geometric(p)
        keep = rng.random(todo.size) < np.exp(-(np.abs(y) - s * s / t) ** 2 / (2.0 * s * s))
        out[todo[keep]] = y[keep]
        todo = todo[~keep]
    return out.reshape(np.shape(sigma))
