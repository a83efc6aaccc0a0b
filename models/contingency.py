r"""Records with several categorical attributes; released are marginal tables of their counts.

.. math:: p \sim \mathrm{Dirichlet}(\alpha), \quad x_i \mid p \sim \mathrm{Categorical}(p)
          \text{ over the cells of } L_1 \times \dots \times L_d,
          \quad s_{dp} = (M_m N + z_m)_{m}, \quad z_m \sim \mathrm{Laplace}(2/\epsilon_m),

with :math:`N` the full table of counts and :math:`M_m N` its margin over the attribute
subset :math:`S_m` (e.g. all two-way margins of age group x sex x race). A record is its
attribute levels ``[a_1, ..., a_d]`` (floats); theta is ``p`` over the full joint cells in
C order (the last attribute varies fastest).

Replacing one record moves at most two cells of each margin by one (one down, one up), so
each margin's L1 sensitivity is 2 (brute-forced in the tests) and margin :math:`m` with noise
scale :math:`2/\epsilon_m` is :math:`\epsilon_m`-DP; the release is
:math:`(\sum_m \epsilon_m)`-DP. A record contributes one cell to each margin: the statistic
is declared sparse (``nnz`` = number of margins) and the Laplace density is separable, so a
record update does not depend on the size of the tables.

Examples
--------
>>> import dawrap as dw
>>> from dawrap.models import contingency
>>> levels, margins = (4, 2, 3), [(0, 1), (0, 2), (1, 2)]
>>> model = contingency.model(levels, alpha=1.0)
>>> mech = contingency.laplace(levels, margins, epsilon=[0.5, 0.5, 0.5])
"""
from __future__ import annotations

import functools
import itertools
import math
import numbers

import numba
import numpy as np

import dawrap as dw

from ._shared import check_memory, closure_jit, compositions, log_dirichlet_multinomial
from dawrap.extend import laplace_coordinate, stated_budget
from dawrap.extend import laplace_log_density
from dawrap.models import dirichlet_multinomial as _dm

__all__ = ["model", "laplace", "margin_matrix", "exact_posterior"]


def _integers(values, what: str) -> tuple:
    """``values`` as a tuple of ints, refusing any that is not a whole number (2.7 must not
    become 2) or not a number at all."""
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"contingency: {what} must be a list of integers, got "
                        f"{values!r}") from None
    out = []
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) \
                or not math.isfinite(v) or v != int(v):
            raise ValueError(f"contingency: {what} must be whole numbers, got {v!r} in "
                             f"{values!r}")
        out.append(int(v))
    return tuple(out)


def _check_levels(levels) -> tuple:
    lv = _integers(levels, "levels")
    if len(lv) < 1 or min(lv) < 2:
        raise ValueError(f"contingency: levels must list at least 2 levels per attribute, got "
                         f"{levels!r}")
    check_memory(math.prod(lv), f"contingency: levels {list(lv)} give {math.prod(lv)} cells")
    return lv


def _check_margins(levels: tuple, margins) -> tuple:
    out = []
    for m in margins:
        m = _integers(m, "each margin")
        if len(m) < 1 or len(set(m)) != len(m) or min(m) < 0 or max(m) >= len(levels):
            raise ValueError(f"contingency: margin {m!r} must list distinct attributes in "
                             f"0..{len(levels) - 1}")
        out.append(m)
    if not out:
        raise ValueError("contingency: at least one margin is needed")
    return tuple(out)


def _per_item(value, count: int, name: str, per: str) -> np.ndarray:
    """``value`` (one number, or ``count`` numbers: one per ``per``) as ``count`` floats."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != count):
        raise ValueError(f"contingency: {name} must be one number or {count} numbers (one "
                         f"per {per}), got shape {arr.shape}")
    return np.broadcast_to(arr, (count,))


@functools.lru_cache(maxsize=32)
def _functions(levels: tuple, margins: tuple):
    """``(cell_of, statistic, entries, size)`` for records of ``levels`` and ``margins``."""
    d = len(levels)
    strides = np.array([int(np.prod(levels[k + 1:])) for k in range(d)], dtype=np.int64)
    # Per margin: the stride of each attribute inside the margin's table (0 if left out),
    # and the margin's offset in the release.
    mstride = np.zeros((len(margins), d), dtype=np.int64)
    offsets = np.zeros(len(margins), dtype=np.int64)
    at = 0
    for m, attrs in enumerate(margins):
        for k, a in enumerate(attrs):
            mstride[m, a] = int(np.prod([levels[b] for b in attrs[k + 1:]]))
        offsets[m] = at
        at += int(np.prod([levels[a] for a in attrs]))
    size, count = at, len(margins)

    @closure_jit(strides, mstride, offsets)
    def entries(x_i, index, value):
        for m in range(count):
            j = offsets[m]
            for a in range(d):
                j += mstride[m, a] * int(x_i[a])
            index[m] = j
            value[m] = 1.0
        return count

    @closure_jit(strides, mstride, offsets)
    def statistic(x_i, out):
        for j in range(out.shape[0]):
            out[j] = 0.0
        for m in range(count):
            j = offsets[m]
            for a in range(d):
                j += mstride[m, a] * int(x_i[a])
            out[j] += 1.0

    @closure_jit(strides)
    def cell_of(x_i):
        j = 0
        for a in range(d):
            j += strides[a] * int(x_i[a])
        return j

    dw.declare_sparse(statistic, entries, nnz=count)
    return cell_of, statistic, size, strides


@functools.lru_cache(maxsize=32)
def _model_functions(levels: tuple, alpha: tuple):
    cell_of, _, _, strides = _functions(levels, ((0,),))
    cells, d = len(alpha), len(levels)
    alpha_arr, lv = np.array(alpha), np.array(levels, dtype=np.int64)

    @closure_jit(strides, lv)
    def draw_record(rng, theta, out):
        u, acc, j = rng.random(), 0.0, cells - 1
        for c in range(cells - 1):
            acc += theta[c]
            if u < acc:
                j = c
                break
        for a in range(d):
            out[a] = (j // strides[a]) % lv[a]

    @closure_jit(strides, lv)
    def draw_from_table(rng, theta, table, out):
        # the cell in O(1) from the sweep's table: the scan's cell, bit for bit
        j = dw.random.categorical(rng, table[0], table[1])
        for a in range(d):
            out[a] = (j // strides[a]) % lv[a]

    prepared = dw.PreparedDraw(_dm.prepare_categorical, draw_from_table)

    @numba.njit(nogil=True)
    def joint_stat(x_i, out):
        for j in range(cells):
            out[j] = 0.0
        out[cell_of(x_i)] = 1.0

    @numba.njit(nogil=True)
    def joint_entries(x_i, index, value):
        index[0] = cell_of(x_i)
        value[0] = 1.0
        return 1

    dw.declare_sparse(joint_stat, joint_entries, nnz=1)

    @closure_jit(alpha_arr)
    def draw_theta(rng, theta, x, stats):
        return _dm.conjugate_draw(rng, alpha_arr, stats, x.shape[0])

    @closure_jit(lv)
    def valid(x_i):
        for a in range(d):
            if not (0 <= x_i[a] < lv[a] and x_i[a] == np.floor(x_i[a])):
                return False
        return True

    return draw_record, prepared, joint_stat, draw_theta, valid


@dw.recipe
def model(levels, alpha=1.0) -> dw.Model:
    """Records of ``len(levels)`` categorical attributes; ``Dirichlet(alpha)`` prior on the
    joint cell probabilities ``p`` (``alpha`` one value or one per cell).

    Parameters
    ----------
    levels : sequence of int
        The number of levels of each attribute.
    alpha : float or sequence of float
        The Dirichlet concentrations.

    Returns
    -------
    dawrap.Model
        One parameter ``p`` over the joint cells in C order; a record per row of attribute
        levels.

    Examples
    --------
    >>> from dawrap.models import contingency
    >>> model = contingency.model((2, 3), alpha=1.0)
    >>> model
    Model(contingency(levels=[2, 3]); params {p: (6,)}, record_size=2)
    >>> model.simulate({"p": [1, 0, 0, 0, 0, 0]}, n=2, seed=0)      # every record in cell (0, 0)
    array([[0., 0.],
           [0., 0.]])
    """
    levels = _check_levels(levels)
    cells = int(np.prod(levels))
    a = _per_item(alpha, cells, "alpha", "joint cell")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"contingency.model: alpha must be positive, got {alpha!r}")
    alpha = tuple(float(v) for v in a)
    draw_record, prepared, joint_stat, draw_theta, valid = _model_functions(levels, alpha)
    alpha_arr = np.array(alpha)
    return dw.Model(params={"p": (cells,)}, record_size=len(levels), draw_record=draw_record,
                    prepared=prepared,
                    draw_theta=draw_theta, model_stat=joint_stat, stat_size=cells,
                    draw_prior=lambda rng: rng.dirichlet(alpha_arr), record_support=valid,
                    name=f"contingency(levels={list(levels)})")


@dw.recipe
def laplace(levels, margins, epsilon) -> dw.Mechanism:
    """The margins' counts, margin ``m`` with Laplace noise of scale ``2 / epsilon[m]``
    (``epsilon`` one value per margin); the release is ``sum(epsilon)``-DP.

    Parameters
    ----------
    levels : sequence of int
        The number of levels of each attribute.
    margins : sequence of tuple of int
        The attribute subsets whose tables are released.
    epsilon : float or sequence of float
        One budget per margin.

    Returns
    -------
    dawrap.Mechanism
        The margins concatenated, each flattened in C order.

    Examples
    --------
    The two one-way margins of two binary attributes:

    >>> from dawrap.models import contingency
    >>> mech = contingency.laplace((2, 2), [(0,), (1,)], epsilon=[1.0, 1.0])
    >>> mech.size, mech.epsilon
    (4, 2.0)
    >>> mech.total([[0, 1], [1, 1], [1, 0]])        # attribute 0: 1, 2; attribute 1: 1, 2
    array([1., 2., 1., 2.])
    """
    levels = _check_levels(levels)
    margins = _check_margins(levels, margins)
    eps = _per_item(epsilon, len(margins), "epsilon", "margin")
    if not np.all(np.isfinite(eps)) or np.any(eps <= 0):
        raise ValueError(f"contingency.laplace: epsilon must be positive, got {epsilon!r}")
    _, statistic, size, _ = _functions(levels, margins)
    lengths = [int(np.prod([levels[a] for a in m])) for m in margins]
    margin_scale = 2.0 / eps  # a record moves two cells of each margin by one: L1 = 2
    scale = np.repeat(margin_scale, lengths)
    params = np.r_[1.0 / scale, -np.sum(np.log(2.0 * scale))]
    # The guarantee from the noise actually added (each margin's 2 / scale), composed.
    mech = dw.Mechanism(statistic, laplace_log_density, size=size, params=params,
                        epsilon=stated_budget(2.0 / margin_scale), name="ContingencyLaplace",
                        coordinate_log_density=laplace_coordinate,
                        draw_release=lambda rng, t: t + rng.laplace(0.0, scale),
                        noise=dw.NoiseLaw.of("laplace", scale))
    return mech


def margin_matrix(levels, margins) -> np.ndarray:
    """The ``(release size, cells)`` 0/1 matrix taking the full table to the margins.

    Parameters
    ----------
    levels : sequence of int
    margins : sequence of tuple of int
        As for :func:`laplace`.

    Returns
    -------
    ndarray of shape (release size, cells)
        Row ``r`` has a 1 in every full-table cell that margin entry ``r`` adds up.

    Examples
    --------
    >>> from dawrap.models import contingency
    >>> contingency.margin_matrix((2, 2), [(0,), (1,)])
    array([[1., 1., 0., 0.],
           [0., 0., 1., 1.],
           [1., 0., 1., 0.],
           [0., 1., 0., 1.]])
    """
    levels = _check_levels(levels)
    _, statistic, size, strides = _functions(levels, _check_margins(levels, margins))
    out = np.empty((size, int(np.prod(levels))))
    for j, cell in enumerate(itertools.product(*(range(v) for v in levels))):
        statistic(np.array(cell, dtype=float), out[:, j])
    return out


def exact_posterior(mechanism, s_dp, n: int, levels, margins, alpha=1.0):
    """Exact marginal posterior of each joint cell probability (one
    :class:`dawrap.reference.BetaMixture` per cell), by enumerating every full table of
    ``n`` records: C(n + cells - 1, cells - 1) tables, keep n and the cells small.

    Parameters
    ----------
    mechanism : dawrap.Mechanism
        The mechanism that released the margins (:func:`laplace`).
    s_dp : array_like
        The release.
    n : int
        Number of records.
    levels, margins
        As for :func:`laplace`.
    alpha : float or sequence of float
        The Dirichlet concentrations.

    Returns
    -------
    list of dawrap.reference.BetaMixture
        One per joint cell.

    Examples
    --------
    >>> from dawrap.models import contingency
    >>> levels, margins = (2, 2), [(0,), (1,)]
    >>> mech = contingency.laplace(levels, margins, epsilon=[1.0, 1.0])
    >>> cells = contingency.exact_posterior(mech, [2.3, 1.1, 0.8, 2.4], 3, levels, margins)
    >>> len(cells), round(sum(c.mean() for c in cells), 6)      # the means sum to 1
    (4, 1.0)
    """
    from dawrap.reference import BetaMixture, normalise_log_weights, relative_log_g

    levels = _check_levels(levels)
    cells = int(np.prod(levels))
    a = np.broadcast_to(np.asarray(alpha, dtype=float), (cells,))
    counts = compositions(n, cells).astype(float)
    log_dm = log_dirichlet_multinomial(counts, a)
    totals = counts @ margin_matrix(levels, margins).T
    w = normalise_log_weights(log_dm + relative_log_g(mechanism, s_dp, totals))
    return [BetaMixture(w, a[j] + counts[:, j], a.sum() + n - a[j] - counts[:, j])
            for j in range(cells)]
