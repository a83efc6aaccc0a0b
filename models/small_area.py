r"""Census-style counts: records in known areas, one category each; released are the
area-by-category counts and the same counts aggregated to a coarser geography, each level
with its own discrete Gaussian noise (zCDP).

.. math:: \alpha_c \sim \mathrm{Gamma}(a_0, b_0), \quad p_a \mid \alpha \sim
          \mathrm{Dirichlet}(\alpha), \quad x_i \mid p \sim \mathrm{Categorical}(p_{a(i)}),

    s_{dp} = \big(N_{ac} + z_{ac}\big)_{a,c} \cup \big(\textstyle\sum_{a \in r} N_{ac} +
    z'_{rc}\big)_{r,c}, \quad z \sim \mathcal N_{\mathbb Z}(0, \sigma_1^2),\
    z' \sim \mathcal N_{\mathbb Z}(0, \sigma_2^2),

with :math:`N_{ac}` the number of records of area :math:`a` in category :math:`c` and
:math:`r` the coarser regions (e.g. blocks ``a`` within tracts ``r``). The area sizes
:math:`n_a` are public, as in a census: a record is ``[area, category]`` and only its category
is imputed (the record proposal keeps the area and draws the category from
:math:`p_{a(i)}`), so the database the sampler starts from must hold the right areas: the
model builds it from the sizes (``dw.Model(start_database=...)``), and refuses an ``init_x``
with other area sizes or an ``n`` other than their sum.

Replacing one record moves two cells by one at each level, so each level's L2 sensitivity is
:math:`\sqrt2` (brute-forced in the tests) and level :math:`l` with budget :math:`\rho_l` has
:math:`\sigma_l = \sqrt2/\sqrt{2\rho_l} = 1/\sqrt{\rho_l}`; the release is
:math:`(\sum_l \rho_l)`-zCDP. The statistic is declared sparse (two cells per record), so a
record update costs the same whatever the number of areas.

theta is ``p`` (areas x categories) then ``log_alpha``. The theta step is collapsed:
``log_alpha`` by ``hyper_steps`` random-walk Metropolis steps on its posterior given the
counts with every ``p`` integrated out (Dirichlet-multinomial; acceptance from
:func:`dawrap.kernels.acceptance_probability`), then each area's ``p`` from its conjugate
Dirichlet given ``alpha``.

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

import functools
import math

import numba
import numpy as np

import dawrap as dw

from ._shared import closure_jit
from ._small_area_mechanism import LevelledDiscreteGaussian, discrete_gaussian, statistics
from ._small_area_exact import exact_posterior

__all__ = ["model", "records", "discrete_gaussian", "LevelledDiscreteGaussian",
           "exact_posterior", "statistics"]


def records(sizes, categories=None) -> np.ndarray:
    """The ``(n, 2)`` database ``[area, category]`` with ``sizes[a]`` records in area ``a``
    (categories 0, or the given ones): the start that fixes the public area sizes.

    Parameters
    ----------
    sizes : sequence of int
        Records per area.
    categories : array_like of length ``sum(sizes)``, optional
        Each record's category, records ordered by area.

    Returns
    -------
    ndarray of shape (sum(sizes), 2)

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
    return np.column_stack([area.astype(float), cat])


#: The most records an area, or all areas together, may hold: counts stay exact in float64
#: (the statistic and the database are floats) and in int64.
MAX_RECORDS = 2 ** 53


def _check_sizes(sizes) -> np.ndarray:
    arr = np.asarray(sizes)
    whole = arr.dtype.kind in "iu" or arr.dtype.kind == "f" and bool(
        np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)))
    if arr.ndim != 1 or arr.shape[0] < 1 or not whole or np.any(arr < 1) \
            or np.any(arr > MAX_RECORDS) or float(arr.astype(float).sum()) > MAX_RECORDS:
        raise ValueError(f"small_area: sizes must be a list of positive whole numbers (records "
                         f"per area), finite and adding up to at most 2**53, got "
                         f"{_short(sizes)}")
    return arr.astype(np.int64)


def _short(values) -> str:
    """``values`` for a message: at most 12 of them."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        return repr(values)
    text = ", ".join(str(v) for v in arr[:12].tolist())
    return f"[{text}{', ...' if arr.shape[0] > 12 else ''}] ({arr.shape[0]} areas)" \
        if arr.shape[0] > 12 else f"[{text}]"


def _start(sizes: np.ndarray, n: int, init_x) -> np.ndarray:
    """The database the chains start from (``dw.Model(start_database=...)``): the public
    area sizes with categories 0, or ``init_x`` once its areas are checked against them.
    The record proposal keeps each record's area, so a start with other sizes would
    silently replace the public sizes for the whole run."""
    total = int(sizes.sum())
    if n != total:
        raise ValueError(f"small_area: n = {n}, but the model's sizes add up to {total} "
                         f"records (sizes {_short(sizes)})")
    if init_x is None:
        return records(sizes)
    area = init_x[:, 0]
    if not np.all((area >= 0) & (area < len(sizes)) & (area == np.floor(area))):
        raise ValueError(f"init_x: the first column holds each record's area, an integer in "
                         f"0..{len(sizes) - 1}, got {_short(np.unique(area))}")
    held = np.bincount(area.astype(np.int64), minlength=len(sizes))
    if not np.array_equal(held, sizes):
        first = int(np.flatnonzero(held != sizes)[0])
        raise ValueError(f"init_x holds {_short(held)} records per area, but the model's "
                         f"sizes are {_short(sizes)} (area {first}: {held[first]}, not "
                         f"{sizes[first]}). The sampler keeps each record's area, so a start "
                         f"with other sizes would replace the public ones: leave init_x out "
                         f"(the model starts from its sizes) or pass "
                         f"init_x=small_area.records(sizes, categories)")
    return init_x


def _check_settings(categories, a0, b0, step, hyper_steps) -> None:
    """Each setting of :func:`model` by name: a wrong one is refused, never truncated."""
    def whole(v):  # 6 or 6.0, not 2.5, True or "6"
        return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
            v, bool) and math.isfinite(v) and v == round(v)

    def positive(v):
        return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
            v, bool) and math.isfinite(v) and v > 0

    if not whole(categories) or categories < 2:
        raise ValueError(f"small_area.model: categories must be an integer >= 2, got "
                         f"{categories!r}")
    if not whole(hyper_steps) or hyper_steps < 1:
        raise ValueError(f"small_area.model: hyper_steps must be an integer >= 1, got "
                         f"{hyper_steps!r}")
    for name, value in (("a0", a0), ("b0", b0), ("step", step)):
        if not positive(value):
            raise ValueError(f"small_area.model: {name} must be a finite number > 0, got "
                             f"{value!r}")


@numba.njit(nogil=True, cache=True)
def _log_target(eta, stats, areas, a0, b0):
    """log p(eta | N) up to a constant, eta = log alpha, with the areas' probabilities
    integrated out: the Gamma(a0, b0) prior on alpha with its Jacobian, times each area's
    Dirichlet-multinomial probability of its counts N_a. O(areas x categories)."""
    cats = eta.shape[0]
    alpha = np.exp(eta)
    total = alpha.sum()
    out = 0.0
    for c in range(cats):
        out += a0 * eta[c] - b0 * alpha[c]
    lg_total, lg_alpha = math.lgamma(total), np.empty(cats)
    for c in range(cats):
        lg_alpha[c] = math.lgamma(alpha[c])
    for a in range(areas):
        n_a = 0.0
        for c in range(cats):
            count = stats[a * cats + c]
            if count > 0.0:  # a zero count's terms cancel
                out += math.lgamma(alpha[c] + count) - lg_alpha[c]
                n_a += count
        out += lg_total - math.lgamma(total + n_a)
    return out


@functools.lru_cache(maxsize=16)
def _kernels(cum: tuple, areas: int, cats: int, a0: float, b0: float, step: float,
             hyper_steps: int):
    cumulative = np.array(cum)  # cumulative area shares, for simulated records
    acceptance = dw.kernels.acceptance_probability

    @numba.njit(nogil=True)
    def draw_record(rng, theta, out):
        a = min(np.searchsorted(cumulative, rng.random(), side="right"), areas - 1)
        out[0] = a
        out[1] = _category(rng, theta, a)

    @closure_jit()
    def _category(rng, theta, a):
        u, acc = rng.random(), 0.0
        for c in range(cats - 1):
            acc += theta[a * cats + c]
            if u < acc:
                return c
        return cats - 1

    @numba.njit(nogil=True)
    def propose_record(rng, theta, x_i, out):
        # The area is public: keep it, draw the category from its conditional prior.
        out[1] = _category(rng, theta, int(x_i[0]))
        return 0.0

    @numba.njit(nogil=True)
    def draw_theta(rng, theta, x, stats):
        # Collapsed: log_alpha given the counts with every p integrated out (random-walk
        # Metropolis), then each area's p given alpha and its counts (conjugate). Updating
        # alpha given p instead mixes slowly: 10^4 areas' p pin alpha down.
        out = theta.copy()
        eta = theta[areas * cats:].copy()
        current = _log_target(eta, stats, areas, a0, b0)
        for _ in range(hyper_steps):
            proposal = eta + step * rng.standard_normal(cats)
            candidate = _log_target(proposal, stats, areas, a0, b0)
            a = acceptance(candidate - current)
            if a >= 1.0 or rng.random() < a:
                eta, current = proposal, candidate
        alpha = np.exp(eta)
        g = np.empty(cats)
        for a in range(areas):
            for c in range(cats):
                g[c] = dw.random.gamma(rng, alpha[c] + stats[a * cats + c], 1.0)
            s = g.sum()
            for c in range(cats):
                out[a * cats + c] = g[c] / s
        out[areas * cats:] = eta
        return out

    @closure_jit()
    def on_simplex(theta):
        for a in range(areas):
            row = theta[a * cats:(a + 1) * cats]
            if np.any(row < 0.0) or abs(row.sum() - 1.0) > 1e-9:
                return False
        return True

    @closure_jit()
    def valid_record(x_i):
        return (0 <= x_i[0] < areas and x_i[0] == np.floor(x_i[0])
                and 0 <= x_i[1] < cats and x_i[1] == np.floor(x_i[1]))

    return draw_record, propose_record, draw_theta, on_simplex, valid_record


@dw.recipe
def model(sizes, categories: int, a0: float = 2.0, b0: float = 1.0, step: float | None = None,
          hyper_steps: int = 5) -> dw.Model:
    """The small-area model for areas of public ``sizes`` (records per area), ``categories``
    categories, hyperprior ``alpha_c ~ Gamma(a0, rate b0)``; ``step`` is the random-walk
    scale of ``log_alpha`` (default ``1 / sqrt(areas)``: each area's counts add
    information about ``log_alpha``, so its posterior sd shrinks as ``1 / sqrt(areas)``), ``hyper_steps`` its Metropolis steps per iteration.

    Parameters
    ----------
    sizes : sequence of int
        Records per area (public).
    categories : int
        Number of categories, at least 2.
    a0, b0 : float
        The Gamma hyperprior's shape and rate.
    step : float, optional
        Random-walk scale of ``log_alpha``.
    hyper_steps : int
        Metropolis steps of ``log_alpha`` per iteration.

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
    """
    sizes = _check_sizes(sizes)
    areas = len(sizes)
    step = 1.0 / math.sqrt(areas) if step is None else step
    _check_settings(categories, a0, b0, step, hyper_steps)
    cats = int(categories)
    cum = tuple(float(v) for v in np.cumsum(sizes) / sizes.sum())
    draw_record, propose_record, draw_theta, on_simplex, valid_record = _kernels(
        cum, areas, cats, float(a0), float(b0), float(step), int(hyper_steps))
    model_stat, _ = statistics(areas, cats, None)

    def draw_prior(rng):
        alpha = rng.gamma(a0, 1.0 / b0, cats)
        return {"p": rng.dirichlet(alpha, areas), "log_alpha": np.log(alpha)}

    return dw.Model(params={"p": (areas, cats), "log_alpha": (cats,)}, record_size=2,
                    draw_record=draw_record, propose_record=propose_record,
                    draw_theta=draw_theta, model_stat=model_stat, stat_size=areas * cats,
                    draw_prior=draw_prior, theta_support=on_simplex,
                    record_support=valid_record,
                    start_database=functools.partial(_start, sizes),
                    name=f"small_area(areas={areas}, categories={cats}, a0={a0}, b0={b0})")
