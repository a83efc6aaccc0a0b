"""The small-area release: area-by-category and region-by-category counts, discrete Gaussian
noise per level (see :mod:`dawrap.models.small_area`)."""
from __future__ import annotations

import functools
import math

import numba
import numpy as np

import dawrap as dw
from dawrap.mechanisms import additive, separable

__all__ = ["statistics", "discrete_gaussian", "LevelledDiscreteGaussian"]


@functools.lru_cache(maxsize=16)
def statistics(areas: int, cats: int, regions: tuple | None):
    """``(statistic, size)``: the statistic of the area-by-category counts (``regions``
    None: the model's statistic) or of those counts followed by the region-by-category
    counts, ``regions[a]`` the region of area ``a``, and its length; each declared sparse
    (one or two cells per record).

    Parameters
    ----------
    areas, cats : int
        Numbers of areas and categories.
    regions : tuple of int or None
        The region of each area.

    Returns
    -------
    (numba.njit function, int)
        The statistic ``(x_i, out)`` and its length (cached per arguments).

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import small_area
    >>> statistic, size = small_area.statistics(3, 2, None)
    >>> out = np.empty(size)
    >>> statistic(np.array([1.0, 1.0]), out)                  # area 1, category 1
    >>> out
    array([0., 0., 0., 1., 0., 0.])
    """
    region = np.array(regions if regions is not None else [0], dtype=np.int64)
    levels = 1 if regions is None else 2
    offset = areas * cats

    @numba.njit(nogil=True)
    def entries(x_i, index, value):
        a, c = int(x_i[0]), int(x_i[1])
        index[0] = a * cats + c
        value[0] = 1.0
        if levels == 2:
            index[1] = offset + region[a] * cats + c
            value[1] = 1.0
        return levels

    size = offset + (0 if regions is None else (int(region.max()) + 1) * cats)

    @numba.njit(nogil=True)
    def statistic(x_i, out):
        for j in range(out.shape[0]):
            out[j] = 0.0
        a, c = int(x_i[0]), int(x_i[1])
        out[a * cats + c] = 1.0
        if levels == 2:
            out[offset + region[a] * cats + c] = 1.0

    dw.declare_sparse(statistic, entries, nnz=levels)
    return statistic, size


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
        self.rho = tuple(float(r) for r in rho)
        if len(self.rho) != len(self.sizes) or not all(r > 0 and math.isfinite(r)
                                                         for r in self.rho):
            raise ValueError(f"LevelledDiscreteGaussian: one positive finite rho per level "
                             f"({len(self.sizes)}), got {rho!r}")
        self.sensitivity = float(sensitivity)
        self.sigmas = tuple(self.sensitivity / math.sqrt(2.0 * r) for r in self.rho)
        inverse = np.concatenate([np.full(s, 1.0 / sg) for s, sg in zip(self.sizes,
                                                                          self.sigmas)])
        norm = sum(s * additive.discrete_gaussian_log_normaliser(sg)
                   for s, sg in zip(self.sizes, self.sigmas))
        super().__init__(statistic, additive._gaussian_log_density, size=sum(self.sizes),
                         params=np.r_[inverse, -norm], draw_release=self._draw,
                         name="LevelledDiscreteGaussian",
                         coordinate_log_density=separable.gaussian_coordinate)
        self.integer_statistic = True

    def _draw(self, rng, t):
        from dawrap.mechanisms.discrete import discrete_gaussian

        source = additive._NumpyIntegers(rng)
        sigma = np.repeat(self.sigmas, self.sizes)
        return np.array([v + discrete_gaussian(s, source) for v, s in zip(t, sigma)],
                        dtype=np.float64)

    @property
    def privacy(self) -> dict:
        out = {f"rho_{l}": r for l, r in enumerate(self.rho)}
        return {**out, "rho": sum(self.rho), "sensitivity": self.sensitivity}

    def noise_variance(self) -> np.ndarray:
        return np.repeat([additive.discrete_gaussian_variance(s) for s in self.sigmas],
                         self.sizes)


@dw.recipe
def discrete_gaussian(regions, categories: int, rho) -> LevelledDiscreteGaussian:
    """Area-by-category counts (areas ``0..len(regions)-1``) and region-by-category counts
    (``regions[a]`` the region of area ``a``), with discrete Gaussian noise of budgets
    ``rho = (rho_areas, rho_regions)``; each level's L2 sensitivity is sqrt(2).

    Parameters
    ----------
    regions : sequence of int
        The region of each area.
    categories : int
        Number of categories.
    rho : (float, float)
        The budgets of the area level and the region level.

    Returns
    -------
    LevelledDiscreteGaussian

    Examples
    --------
    Two areas in one region, two categories: the area counts, then the region's.

    >>> from dawrap.models import small_area
    >>> mech = small_area.discrete_gaussian([0, 0], categories=2, rho=(0.5, 0.5))
    >>> mech.total(small_area.records([2, 1], categories=[1, 0, 1]))
    array([1., 1., 0., 1., 1., 2.])
    """
    regions = tuple(int(r) for r in regions)
    if min(regions) < 0:
        raise ValueError("small_area.discrete_gaussian: regions must be indices >= 0")
    statistic, size = statistics(len(regions), int(categories), regions)
    areas_size = len(regions) * int(categories)
    return LevelledDiscreteGaussian(statistic, [areas_size, size - areas_size], rho,
                                    math.sqrt(2.0))
