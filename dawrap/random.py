r"""Compiled random draws for models: conjugate updates that return NaN instead of hanging,
and categorical draws in O(1) from a table prepared once per sweep.

numba's ``Generator.beta`` never returns for a NaN or a tiny shape (below about 1e-10; it
rejects almost every proposal), and ``Generator.gamma`` never returns for NaN, where NumPy
returns at once. A conjugate update whose arguments went bad (a corrupted database, a prior
hyperparameter of 1e-20) would freeze the whole run inside compiled code, beyond the reach of
Ctrl-C. These versions, for use inside ``numba.njit`` kernels such as ``draw_theta``, return
NaN for invalid arguments, which the sampler reports as a non-finite theta naming
``draw_theta`` and the iteration, and draw tiny shapes exactly in log space. For valid,
ordinary arguments they are the generator's own draws, bit for bit.

Examples
--------
A conjugate ``draw_theta`` whose statistic went bad returns NaN at once, where
``rng.beta`` would never return:

>>> import numba
>>> import numpy as np
>>> import dawrap as dw
>>> @numba.njit
... def draw_theta(rng, theta, x, stats):          # p | x ~ Beta(1 + k, 1 + n - k)
...     return np.array([dw.random.beta(rng, 1 + stats[0], 1 + x.shape[0] - stats[0])])
>>> rng, x = np.random.default_rng(0), np.zeros((10, 1))
>>> draw_theta(rng, np.array([0.5]), x, np.array([np.nan]))
array([nan])

**Categorical tables.** Drawing an index with probabilities ``p_0..p_{K-1}`` by scanning
their running sum costs O(K) per draw. When ``p`` stays fixed for many draws (theta during a
record sweep), :func:`categorical_table` builds once, in O(K), the running sums and a *guide
table* (Chen & Asau 1974; Devroye 1986, Sec. III.2.4): for each of ``G`` equal slices of
[0, 1), ``G`` the largest power of two <= K, the first index whose running sum exceeds the
slice's lower end. :func:`categorical` then jumps to the guide entry of its uniform's slice
and scans on from there: fewer than three comparisons on average, whatever ``p``. It returns
the index the scan would, for the same uniform, bit for bit: the same draws as the O(K) scan
(see :func:`categorical`). :class:`dawrap.PreparedDraw` puts such a table into the record
sweep.
"""
from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["beta", "gamma", "guide_size", "categorical_table", "fill_categorical_table",
           "categorical"]

#: Below this shape the beta draw goes through log-gamma draws: numba's own algorithm slows
#: down sharply there (0.006 s per draw at 1e-8) and never ends below about 1e-10.
SMALL_SHAPE = 1e-3


@numba.njit(nogil=True, cache=True)
def _log_gamma_draw(rng, shape):
    """``log G`` for ``G ~ Gamma(shape, 1)``, accurate for any ``shape > 0``: for ``shape < 1``
    by ``G = G' U^{1/shape}``, ``G' ~ Gamma(shape + 1, 1)`` (Marsaglia & Tsang 2000), whose
    logarithm does not underflow when ``G`` itself would."""
    if shape >= 1.0:
        return math.log(rng.gamma(shape, 1.0))
    return math.log(rng.gamma(shape + 1.0, 1.0)) + math.log(rng.random()) / shape


@numba.njit(nogil=True, cache=True)
def beta(rng, a, b):
    """One ``Beta(a, b)`` draw; NaN unless ``a`` and ``b`` are finite and positive.

    Parameters
    ----------
    rng : numpy.random.Generator
        Inside compiled code, the generator the sampler passes to ``draw_theta``.
    a, b : float
        The shapes.

    Returns
    -------
    float
        ``rng.beta(a, b)`` for shapes of at least 1e-3; below, an exact draw in log space.

    Examples
    --------
    It is callable from Python too:

    >>> import numpy as np
    >>> import dawrap as dw
    >>> draw = dw.random.beta(np.random.default_rng(5), 2.0, 3.0)
    >>> draw == np.random.default_rng(5).beta(2.0, 3.0)       # the generator's own draw
    True
    >>> dw.random.beta(np.random.default_rng(5), np.nan, 3.0)
    nan
    """
    if not (0.0 < a < math.inf and 0.0 < b < math.inf):
        return math.nan
    if a >= SMALL_SHAPE and b >= SMALL_SHAPE:
        return rng.beta(a, b)
    # X = Ga / (Ga + Gb) = 1 / (1 + exp(log Gb - log Ga)), in log space for tiny shapes.
    diff = _log_gamma_draw(rng, b) - _log_gamma_draw(rng, a)
    if diff > 0.0:
        e = math.exp(-diff)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(diff))


@numba.njit(nogil=True, cache=True)
def gamma(rng, shape, scale):
    """One ``Gamma(shape, scale)`` draw; NaN unless both are finite and positive.

    Parameters
    ----------
    rng : numpy.random.Generator
    shape, scale : float

    Returns
    -------
    float
        ``rng.gamma(shape, scale)``, or NaN.

    Examples
    --------
    >>> import numpy as np
    >>> import dawrap as dw
    >>> draw = dw.random.gamma(np.random.default_rng(5), 2.0, 0.5)
    >>> draw == np.random.default_rng(5).gamma(2.0, 0.5)       # the generator's own draw
    True
    >>> dw.random.gamma(np.random.default_rng(5), -1.0, 0.5)
    nan
    """
    if not (0.0 < shape < math.inf and 0.0 < scale < math.inf):
        return math.nan
    return rng.gamma(shape, scale)


@numba.njit(nogil=True, cache=True)
def guide_size(k):
    """The length ``G`` of a categorical table's guide for ``k`` categories: the largest power
    of two <= ``k`` (a power of two, so that ``u * G`` and ``g / G`` are exact in floating
    point; at most ``k``, so that the table is at most 1.5 times the size of ``p``).

    Examples
    --------
    >>> import dawrap as dw
    >>> dw.random.guide_size(5), dw.random.guide_size(8), dw.random.guide_size(1)
    (4, 8, 1)
    """
    size = 1
    while 2 * size <= k:
        size *= 2
    return size


@numba.njit(nogil=True, cache=True)
def fill_categorical_table(p, cumulative, guide):
    r"""Fill in place the table of the categorical distribution ``p`` that
    :func:`categorical` draws from: ``cumulative`` (same length as ``p``) its running sums,
    ``guide`` (length :func:`guide_size` of ``len(p)``) its guide. O(K). For tables in a
    larger array: one row per area of a 2-d array, or segments of a flat one.

    ``cumulative[j]`` is ``p[0] + ... + p[j]`` summed left to right, as the scan sums it;
    ``guide[g]`` is the first index ``j < K - 1`` with ``g / G < cumulative[j]``, else
    ``K - 1``. With ``p >= 0`` the sums do not decrease, so that index is the number of sums
    ``cumulative[j] <= g / G`` (``j < K - 1``): a histogram of ``ceil(G cumulative[j])``
    (exact, ``G`` a power of two) and its running sum, two passes without a data-dependent
    branch (a merge-like pass mispredicts about one branch per category: ten times slower
    at 10^5 categories). Otherwise (a negative or NaN entry) the merge-like pass, which holds
    for any sums: a comparison false at ``g`` is false at ``g + 1``, so the index does not
    decrease in ``g``.

    Parameters
    ----------
    p : ndarray of shape (K,)
        The probabilities (non-negative, summing to 1 up to rounding; the last index absorbs
        the rounding, as in the scan).
    cumulative : ndarray of shape (K,)
        Receives the running sums.
    guide : ndarray of shape (G,), int32 (or int64)
        Receives the guide, ``G = guide_size(K)``.

    Raises
    ------
    ValueError
        If ``K >= 2**31`` (the guide's indices are int32).

    Examples
    --------
    One table per row of a ``(areas, K)`` array of probabilities:

    >>> import numpy as np
    >>> import dawrap as dw
    >>> p = np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])
    >>> cumulative = np.empty(p.shape)
    >>> guide = np.empty((2, dw.random.guide_size(3)), dtype=np.int32)
    >>> for a in range(2):
    ...     dw.random.fill_categorical_table(p[a], cumulative[a], guide[a])
    >>> cumulative[1], guide[1]
    (array([0.1, 0.2, 1. ]), array([0, 2], dtype=int32))
    """
    k, size = p.shape[0], guide.shape[0]
    if k >= 2 ** 31:
        raise ValueError("a categorical table holds fewer than 2**31 categories")
    total, nonnegative = 0.0, True
    for j in range(k):
        nonnegative &= p[j] >= 0.0  # False for NaN
        total += p[j]
        cumulative[j] = total
    if nonnegative:
        guide_by_counting(cumulative, guide)
    else:
        guide_by_merging(cumulative, guide)


@numba.njit(nogil=True, cache=True)
def guide_by_counting(cumulative, guide):
    """The guide of non-decreasing running sums: ``guide[g]`` counts the sums
    ``cumulative[j] <= g / G``, ``j < K - 1``."""
    size = guide.shape[0]
    guide[:] = 0
    for j in range(cumulative.shape[0] - 1):
        top = cumulative[j] * size  # exact: size is a power of two
        if top <= size - 1:  # else no slice's lower end reaches cumulative[j]
            guide[int(math.ceil(top))] += 1
    below = 0
    for g in range(size):
        below += guide[g]
        guide[g] = below


@numba.njit(nogil=True, cache=True)
def guide_by_merging(cumulative, guide):
    """The guide of any running sums: for each slice in turn, the first ``j`` with
    ``g / G < cumulative[j]``, found from the previous slice's."""
    k, size = cumulative.shape[0], guide.shape[0]
    j = 0
    for g in range(size):
        lower = g / size  # exact
        while j < k - 1 and not lower < cumulative[j]:
            j += 1
        guide[g] = j


@numba.njit(nogil=True, cache=True)
def categorical_table(p):
    """The table of the categorical distribution ``p`` (O(K)) for :func:`categorical`.

    Parameters
    ----------
    p : ndarray of shape (K,)
        The probabilities.

    Returns
    -------
    tuple of ndarray
        ``(cumulative, guide)``: the running sums, shape ``(K,)``, and the guide, int32 of
        shape ``(guide_size(K),)`` (:func:`fill_categorical_table`).

    Examples
    --------
    >>> import numpy as np
    >>> import dawrap as dw
    >>> cumulative, guide = dw.random.categorical_table(np.array([0.2, 0.3, 0.5]))
    >>> cumulative, guide
    (array([0.2, 0.5, 1. ]), array([0, 2], dtype=int32))
    """
    cumulative = np.empty(p.shape[0])
    guide = np.empty(guide_size(p.shape[0]), dtype=np.int32)
    fill_categorical_table(p, cumulative, guide)
    return cumulative, guide


@numba.njit(nogil=True, cache=True)
def categorical(rng, cumulative, guide):
    r"""An index drawn from a categorical table (:func:`categorical_table`), O(1) on average.

    With ``u = rng.random()`` it returns the first ``j < K - 1`` with ``u < cumulative[j]``,
    else ``K - 1``: the index an O(K) scan of the running sums returns for the same ``u``.
    Why: ``u`` lies in slice ``g = floor(u G)`` (exact), so ``g / G <= u``; every
    ``j < guide[g]`` has ``not g / G < cumulative[j]``, hence ``not u < cumulative[j]``, and
    the scan from ``guide[g]`` on finds the first ``j`` that passes. So index ``j`` has
    probability ``cumulative[j] - cumulative[j - 1]``, the scan's: ``p[j]`` up to the
    rounding of the running sum. On average the scan from ``guide[g]`` takes fewer than
    ``1 + K / G < 3`` comparisons (the ``K`` running sums spread over ``G`` slices), and
    those after the first read the neighbours of the first running sum read.

    Parameters
    ----------
    rng : numpy.random.Generator
    cumulative, guide : ndarray
        A table (or one row or segment of a larger one), filled by
        :func:`fill_categorical_table`.

    Returns
    -------
    int
        The index, ``0..K-1``; one ``rng.random()`` used.

    Examples
    --------
    The same draws as the scan:

    >>> import numpy as np
    >>> import dawrap as dw
    >>> p = np.array([0.2, 0.3, 0.5])
    >>> cumulative, guide = dw.random.categorical_table(p)
    >>> rng = np.random.default_rng(1)
    >>> draws = [dw.random.categorical(rng, cumulative, guide) for _ in range(1000)]
    >>> u = np.random.default_rng(1).random(1000)
    >>> draws == [int(np.sum(u >= np.cumsum(p)[:-1])) for u in u]
    True
    """
    return lookup(rng.random(), cumulative, guide)


@numba.njit(nogil=True, cache=True)
def lookup(u, cumulative, guide):
    """The index :func:`categorical` returns for the uniform ``u`` in [0, 1)."""
    j = guide[int(u * guide.shape[0])]
    last = cumulative.shape[0] - 1
    while j < last and not u < cumulative[j]:
        j += 1
    return j
