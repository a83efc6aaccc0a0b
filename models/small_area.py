r"""Census-style counts in one geography level: records in known areas, one category each;
released are the area-by-category counts and the same counts aggregated to a coarser
geography, each level with its own discrete Gaussian noise (zCDP).

.. math:: \alpha_c \sim \mathrm{Gamma}(a_0, b_0), \quad p_a \mid \alpha \sim
          \mathrm{Dirichlet}(\alpha), \quad x_i \mid p \sim \mathrm{Categorical}(p_{a(i)}),

    s_{dp} = \big(N_{ac} + z_{ac}\big)_{a,c} \cup \big(\textstyle\sum_{a \in r} N_{ac} +
    z'_{rc}\big)_{r,c}, \quad z \sim \mathcal N_{\mathbb Z}(0, \sigma_1^2),\
    z' \sim \mathcal N_{\mathbb Z}(0, \sigma_2^2),

with :math:`N_{ac}` the number of records of area :math:`a` in category :math:`c` and
:math:`r` the coarser regions (e.g. blocks ``a`` within tracts ``r``). The area sizes
:math:`n_a` are public, as in a census: a record is ``[area, category]`` and only its category
is imputed.

This is the one-level, one-attribute case of :mod:`dawrap.models.census` (its geography
``{"area": ...}``, or ``{"region": regions, "area": ...}`` for the release, and one
attribute ``"category"``), which holds the sampler: ``log_alpha`` by HMC on its posterior
given the counts with every ``p`` integrated out (Dirichlet-multinomial), then each area's
``p`` from its conjugate Dirichlet; chains start from the release (each area's records drawn
to match its noisy counts, clipped at zero, within its size), and ``init_x`` must hold the
public sizes (checked). Each level's L2 sensitivity is :math:`\sqrt2` and level :math:`l`
with budget :math:`\rho_l` has :math:`\sigma_l = 1/\sqrt{\rho_l}`; the release is
:math:`(\sum_l \rho_l)`-zCDP.

theta is ``p`` (areas x categories) then ``log_alpha``.

Examples
--------
>>> import dawrap as dw
>>> from dawrap.models import small_area
>>> import numpy as np
>>> sizes, tracts = [120, 80, 100], [0, 0, 1]
>>> model = small_area.model(sizes, categories=6)
>>> mech = small_area.discrete_gaussian(tracts, categories=6, rho=(0.5, 0.5))
>>> x = small_area.records(sizes, np.random.default_rng(0).integers(0, 6, size=300))
>>> s_dp = mech.release(x, seed=1)           # 3 x 6 block counts, then 2 x 6 tract counts
>>> idata = dw.sample(model, mech, s_dp, n=300)  # doctest: +SKIP
"""
from __future__ import annotations

import math

import numpy as np

import dawrap as dw

from . import census
from ._small_area_exact import exact_posterior
from .census.levelled import LevelledDiscreteGaussian

__all__ = ["model", "records", "discrete_gaussian", "LevelledDiscreteGaussian",
           "exact_posterior", "statistics"]


def records(sizes, categories=None) -> np.ndarray:
    """The ``(n, 2)`` database ``[area, category]`` with ``sizes[a]`` records in area ``a``
    (categories 0, or the given ones): a start that holds the public area sizes.

    Parameters
    ----------
    sizes : sequence of int
        Records per area.
    categories : array_like of length ``sum(sizes)``, optional
        Each record's category, records ordered by area.

    Returns
    -------
    ndarray of shape (sum(sizes), 2)
        Rows ``[area, category]``, as floats.

    Examples
    --------
    >>> from dawrap.models import small_area
    >>> small_area.records([2, 1], categories=[1, 0, 1])
    array([[0., 1.],
           [0., 0.],
           [1., 1.]])
    """
    sizes = _check_sizes(sizes)
    area = np.repeat(np.arange(len(sizes)), sizes)
    cat = np.zeros(area.shape[0]) if categories is None else np.asarray(categories, float)
    if cat.shape != area.shape:
        raise ValueError(f"small_area.records: categories must give one category per record "
                         f"({area.shape[0]}), got shape {cat.shape}")
    return np.column_stack([area.astype(float), cat])


def _check_sizes(sizes) -> np.ndarray:
    try:
        checked = census.whole_numbers(sizes, "sizes", 1)
        # records are float64 rows: their number too must be exact in a double
        if sum(int(v) for v in checked) > 2 ** 53:
            raise ValueError
        return checked
    except ValueError:
        raise ValueError(f"small_area: sizes must be a list of positive whole numbers (records "
                         f"per area, in all at most 2**53), got {sizes!r}") from None


def _categories(categories) -> int:
    if isinstance(categories, bool) or not isinstance(categories, (int, np.integer)) \
            or categories < 2:
        raise ValueError(f"small_area: categories must be a whole number >= 2, got "
                         f"{categories!r}")
    return int(categories)


def _geography(areas: int, cats: int, regions=None) -> census.Geography:
    levels = {"area": np.arange(areas)}
    if regions is not None:
        levels = {"region": regions, **levels}
    return census.Geography(levels, {"category": cats})


def statistics(areas: int, cats: int, regions: tuple | None):
    """``(statistic, size)``: the statistic of the area-by-category counts (``regions``
    None) or of those counts followed by the region-by-category counts, ``regions[a]`` the
    region of area ``a``, and its length; declared sparse (one or two cells per record).

    Parameters
    ----------
    areas, cats : int
        Numbers of areas and categories.
    regions : tuple of int or None
        The region of each area.

    Returns
    -------
    (numba.njit function, int)
        The statistic ``(x_i, out)`` and its length.

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
    geo = _geography(areas, cats, regions)
    queries = [census.query("area")] + ([census.query("region")] if regions is not None
                                        else [])
    stat = census.statistic(geo, queries)
    return stat, stat.census_layout.size


@dw.recipe
def model(sizes, categories: int, a0: float = 2.0, b0: float = 1.0, step: float | None = None,
          hyper_steps: int | None = None, hyper_kernel: str = "hmc") -> dw.Model:
    """The small-area model for areas of public ``sizes`` (records per area), ``categories``
    categories and the hyperprior ``alpha_c ~ Gamma(a0, rate b0)``.

    Parameters
    ----------
    sizes : sequence of int
        Records per area (public).
    categories : int
        Number of categories, at least 2.
    a0, b0 : float
        The Gamma hyperprior's shape and rate.
    step : float, optional
        With ``hyper_kernel="metropolis"``: a fixed random-walk scale of ``log_alpha``
        (default: adapted during warm-up, then frozen).
    hyper_steps : int, optional
        Steps of ``log_alpha``'s kernel per iteration (default 2 for HMC, 10 for Metropolis).
    hyper_kernel : {"hmc", "metropolis"}
        ``log_alpha``'s kernel (:func:`dawrap.models.census.model`).

    Returns
    -------
    dawrap.Model
        Parameters ``p`` (areas x categories) and ``log_alpha`` (categories); a record per
        ``[area, category]``, whose proposal keeps the area.

    Examples
    --------
    >>> from dawrap.models import small_area
    >>> small_area.model([120, 80, 100], categories=6).params
    {'p': (3, 6), 'log_alpha': (6,)}
    >>> small_area.model([120, 80, float("inf")], categories=6)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: small_area: sizes must be a list of positive whole numbers ...
    """
    sizes = _check_sizes(sizes)
    cats = _categories(categories)
    if step is not None and hyper_kernel != "metropolis":
        raise ValueError(f"small_area.model: step is the random-walk scale of "
                         f"hyper_kernel='metropolis'; HMC ({hyper_kernel!r}) tunes its own")
    try:
        return census.model(_geography(len(sizes), cats), sizes, a0=a0, b0=b0,
                            hyper_kernel=hyper_kernel, hyper_steps=hyper_steps, step=step)
    except ValueError as err:
        raise ValueError(str(err).replace("census.model", "small_area.model")) from None


@dw.recipe
def discrete_gaussian(regions, categories: int, rho) -> LevelledDiscreteGaussian:
    """Area-by-category counts (areas ``0..len(regions)-1``) and region-by-category counts
    (``regions[a]`` the region of area ``a``; regions numbered in the sorted order of these
    codes), with discrete Gaussian noise of budgets ``rho = (rho_areas, rho_regions)``; each
    level's L2 sensitivity is sqrt(2).

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
        The area counts then the region counts, each level with its own noise.

    Examples
    --------
    Two areas in one region, two categories: the area counts, then the region's.

    >>> from dawrap.models import small_area
    >>> mech = small_area.discrete_gaussian([0, 0], categories=2, rho=(0.5, 0.5))
    >>> mech.total(small_area.records([2, 1], categories=[1, 0, 1]))
    array([1., 1., 0., 1., 1., 2.])
    """
    cats = _categories(categories)
    if not isinstance(rho, (tuple, list, np.ndarray)) or len(rho) != 2 or not all(
            isinstance(r, (int, float, np.number)) and 0 < r < math.inf for r in rho):
        raise ValueError(f"small_area.discrete_gaussian: one positive finite rho per level "
                         f"(2: areas, regions), got {rho!r}")
    regions = census.whole_numbers(regions, "small_area.discrete_gaussian: regions", 0)
    geo = _geography(len(regions), cats, regions)
    return census.discrete_gaussian(geo, [census.query("area", rho=float(rho[0])),
                                          census.query("region", rho=float(rho[1]))])
