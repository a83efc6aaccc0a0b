r"""Naive-Bayes log-linear model for categorical records; the class-feature co-occurrence
counts are released (Ju, Awan, Gong & Rao 2022, Sec. 4 and supplement S-4, after Karwa et
al. 2016).

.. math::
   \pi \sim \mathrm{Dirichlet}(\alpha), \qquad
   p^k_{i\cdot} \sim \mathrm{Dirichlet}(\alpha^k_{i\cdot}) \quad (k = 1..K,\ i = 1..I),

   y \mid \pi \sim \mathrm{Categorical}(\pi), \qquad
   x_k \mid y = i \sim \mathrm{Categorical}(p^k_{i\cdot})
   \ \text{independently over } k,

   s_{dp} = \big(n^k_{ij}\big)_{k,i,j} + \text{noise}, \qquad
   n^k_{ij} = \#\{\text{records with } y = i,\ x_k = j\}.

**Records.** ``record_size = 1 + K`` floats ``[y, x_1, ..., x_K]`` holding 0-based codes:
``y`` in ``0..I-1`` and ``x_k`` in ``0..J_k-1`` (the paper's ``1..I`` and ``1..J_k`` minus
one). Record column ``k`` is feature ``k``.

**Parameters** (what ArviZ shows): ``pi``, shape ``(I,)``, the class probabilities, and one
parameter per feature, ``p1, ..., pK``, with ``pk`` of shape ``(I, J_k)`` and
``pk[i, j] = P(x_k = j | y = i)`` (ArviZ dimensions ``pk_dim_0`` = class, ``pk_dim_1`` =
level). One parameter per feature, rather than one array padded to ``max J_k``, because
with unequal ``J_k`` padding would put structural zeros among the draws: ArviZ would report
them as parameters with zero variance and undefined R-hat and ESS, and every user would have
to know which entries to ignore. Per-feature parameters contain only real probabilities,
each row a simplex.

**The release.** ``s_dp`` has length ``I * (J_1 + ... + J_K)``: K blocks, block ``k`` the
``I x J_k`` table ``n^k`` flattened row-major (class-major), so ``n^k_{ij}`` sits at
``I (J_1 + ... + J_{k-1}) + i J_k + j``. The flat ``theta`` is ``pi`` followed by
``p1.ravel(), ..., pK.ravel()``: the same layout as the release, so the conjugate update adds
the counts to the prior concentrations element by element. The class counts are not released
separately: they are implied, ``n_i = sum_j n^k_{ij}`` for every ``k`` (and the release
carries them K times, each with independent noise).

**Sensitivity.** Replacing a record ``(y, x)`` by ``(y', x')`` (the neighbouring relation of
a sampler that keeps ``n`` fixed) lowers ``n^k_{y, x_k}`` by one and raises
``n^k_{y', x'_k}`` by one for each feature ``k``, unless those are the same cell, when the
table does not change. So the L1 change is ``2 #{k : (y, x_k) != (y', x'_k)} <= 2K``, with
equality whenever ``y != y'``: the L1 sensitivity is exactly ``2K`` (``I >= 2``), and Laplace
noise of scale ``2K / epsilon`` per count makes the release epsilon-DP, as in the paper.
(Under add/remove neighbours it would be ``K``.)

**Cost.** The model statistic is the mechanism's statistic (the record's ``K`` co-occurrence
indicators), so the engine keeps one running sum, and the theta step is an exact conjugate
draw from it: O(I sum J_k) per iteration, independent of ``n``.

Examples
--------
>>> import dawrap as dw
>>> from dawrap.models import naive_bayes
>>> model = naive_bayes.model(I=3, J=[2, 4], alpha=2.0, alpha_feature=2.0)
>>> mech = naive_bayes.laplace(epsilon=1.0, I=3, J=[2, 4])   # scale 2K / epsilon = 4
>>> x = model.simulate(naive_bayes.draw_parameters(3, [2, 4], seed=0), n=200, seed=1)
>>> s_dp = mech.release(x, seed=2)
>>> s_dp.shape                                   # I * (J_1 + J_2) counts
(18,)
>>> idata = dw.sample(model, mech, s_dp, n=200, seed=3)  # doctest: +SKIP
"""
from __future__ import annotations

import functools
import numbers

import numba
import numpy as np

import dawrap as dw

from ._shared import (check_memory, closure_jit, compositions, log_dirichlet_multinomial,
                      positive)

__all__ = ["model", "counts", "laplace", "sensitivity", "nonprivate_posterior",
           "exact_posterior", "draw_parameters", "published_parameters", "PUBLISHED"]

#: The published simulation settings (Ju et al. 2022, Sec. 4): N records, I classes, K
#: features with J_k = 3 levels each, Dirichlet(2, ..., 2) priors on every probability
#: vector, epsilon grid, 100 releases per epsilon, 10000 iterations of which 5000 burn-in,
#: 90% credible intervals, and the true class probabilities of Table 1 (drawn by the authors
#: from the prior and printed to three decimals).
PUBLISHED = {
    "N": 100, "I": 5, "K": 5, "J": (3, 3, 3, 3, 3), "alpha": 2.0, "alpha_feature": 2.0,
    "epsilons": (0.1, 0.3, 1.0, 3.0, 10.0), "replicates": 100, "iterations": 10000,
    "burn_in": 5000, "interval": 0.90, "pi": (0.097, 0.148, 0.145, 0.446, 0.163),
}


# -- compiled leaf functions (disk-cached); the layout is passed as (I, J) ----------------------

@numba.njit(nogil=True, cache=True)
def _categorical(rng, probs):
    """An index drawn with probabilities ``probs`` (inverse CDF; the last index absorbs
    rounding, so probabilities summing to 1 - 1e-16 are fine)."""
    u = rng.random()
    cumulative = 0.0
    for j in range(probs.shape[0] - 1):
        cumulative += probs[j]
        if u < cumulative:
            return j
    return probs.shape[0] - 1


@numba.njit(nogil=True, cache=True)
def draw_nb_record(rng, theta, I, J, out):
    """One record ``[y, x_1, ..., x_K]``: the class from ``pi``, then each feature from its
    row of ``p^k`` for that class."""
    y = _categorical(rng, theta[:I])
    out[0] = y
    start = I
    for k in range(J.shape[0]):
        row = start + y * J[k]
        out[1 + k] = _categorical(rng, theta[row:row + J[k]])
        start += I * J[k]


@numba.njit(nogil=True, cache=True)
def nb_tables(theta, I, J, guides):
    """The categorical tables of ``pi`` and of every row of every ``p^k``, built once per
    record sweep (:func:`dawrap.random.fill_categorical_table`): the running sums in theta's
    layout, and the guides one after another (``guides[0]`` long for ``pi``, then
    ``guides[1 + k]`` long for each row of ``p^k``)."""
    cumulative = np.empty(theta.shape[0])
    size = guides[0]
    for k in range(J.shape[0]):
        size += I * guides[1 + k]
    guide = np.empty(size, dtype=np.int32)
    dw.random.fill_categorical_table(theta[:I], cumulative[:I], guide[:guides[0]])
    start, g = I, guides[0]
    for k in range(J.shape[0]):
        for _ in range(I):
            dw.random.fill_categorical_table(theta[start:start + J[k]],
                                             cumulative[start:start + J[k]],
                                             guide[g:g + guides[1 + k]])
            start += J[k]
            g += guides[1 + k]
    return cumulative, guide


@numba.njit(nogil=True, cache=True)
def draw_nb_from_tables(rng, table, I, J, guides, out):
    """:func:`draw_nb_record` from :func:`nb_tables`: O(K) per record whatever the levels,
    and the same record for the same generator state (one uniform per categorical, each the
    scan's index, :func:`dawrap.random.categorical`)."""
    cumulative, guide = table
    y = dw.random.categorical(rng, cumulative[:I], guide[:guides[0]])
    out[0] = y
    start, g = I, guides[0]
    for k in range(J.shape[0]):
        row, g_row = start + y * J[k], g + y * guides[1 + k]
        out[1 + k] = dw.random.categorical(rng, cumulative[row:row + J[k]],
                                           guide[g_row:g_row + guides[1 + k]])
        start += I * J[k]
        g += I * guides[1 + k]


@numba.njit(nogil=True, cache=True)
def is_nb_record(x_i, I, J):
    """A record holds an integer class code in ``0..I-1`` and feature codes in ``0..J_k-1``."""
    if not (0.0 <= x_i[0] < I and x_i[0] == np.floor(x_i[0])):
        return False
    for k in range(J.shape[0]):
        v = x_i[1 + k]
        if not (0.0 <= v < J[k] and v == np.floor(v)):
            return False
    return True


@numba.njit(nogil=True, cache=True)
def cooccurrence(x_i, I, J, out):
    """The record's contribution to the release: a one in cell ``(y, x_k)`` of each table.

    A code out of range (1-based codes, say) makes the whole contribution NaN rather than a
    write out of bounds, so a bad database cannot be released or sampled silently. Only the
    range is checked here, in the hot loop; ``record_support`` checks the rest.
    """
    for c in range(out.shape[0]):
        out[c] = 0.0
    y = x_i[0]
    in_range = 0.0 <= y < I
    start = 0
    for k in range(J.shape[0]):
        v = x_i[1 + k]
        in_range &= 0.0 <= v < J[k]
        if in_range:
            out[start + int(y) * J[k] + int(v)] = 1.0
        start += I * J[k]
    if not in_range:
        for c in range(out.shape[0]):
            out[c] = np.nan


@numba.njit(nogil=True, cache=True)
def _dirichlet_into(rng, alpha, counts, out):
    """``out ~ Dirichlet(alpha + counts)``, by normalised Gamma draws."""
    total = 0.0
    for j in range(out.shape[0]):
        out[j] = dw.random.gamma(rng, alpha[j] + counts[j], 1.0)
        total += out[j]
    for j in range(out.shape[0]):
        out[j] /= total


@numba.njit(nogil=True, cache=True)
def conjugate_draw(rng, alpha, alpha_feature, I, J, counts):
    """theta | counts: ``pi ~ Dir(alpha + n_i)`` and ``p^k_i ~ Dir(alpha^k_i + n^k_i.)``.

    ``counts`` are the co-occurrence tables in the release layout; the class counts are the
    row sums of the first table. Zero counts give a prior draw.
    """
    theta = np.empty(I + counts.shape[0])
    class_counts = np.zeros(I)
    for i in range(I):
        for j in range(J[0]):
            class_counts[i] += counts[i * J[0] + j]
    _dirichlet_into(rng, alpha, class_counts, theta[:I])
    start = 0
    for k in range(J.shape[0]):
        for i in range(I):
            lo = start + i * J[k]
            hi = lo + J[k]
            _dirichlet_into(rng, alpha_feature[lo:hi], counts[lo:hi], theta[I + lo:I + hi])
        start += I * J[k]
    return theta


@numba.njit(nogil=True, cache=True)
def _is_simplex(p):
    total = 0.0
    for j in range(p.shape[0]):
        if not p[j] >= 0.0:
            return False
        total += p[j]
    return abs(total - 1.0) < 1e-9


@numba.njit(nogil=True, cache=True)
def on_simplices(theta, I, J):
    """``pi`` and every row of every ``p^k`` are probability vectors."""
    if not _is_simplex(theta[:I]):
        return False
    start = I
    for k in range(J.shape[0]):
        for i in range(I):
            if not _is_simplex(theta[start:start + J[k]]):
                return False
            start += J[k]
    return True


# -- closures over the layout and the hyperparameters (cached, so the same arguments give the
#    same compiled functions: the engine then reuses its compiled chain) ----------------------

@functools.lru_cache(maxsize=64)
def _record_functions(I: int, J: tuple):
    J_arr = np.array(J, dtype=np.int64)
    guides = np.array([dw.random.guide_size(v) for v in (I, *J)], dtype=np.int64)

    @closure_jit(J_arr)
    def draw_record(rng, theta, out):
        draw_nb_record(rng, theta, I, J_arr, out)

    @closure_jit(J_arr, guides)
    def prepare(theta):
        return nb_tables(theta, I, J_arr, guides)

    @closure_jit(J_arr, guides)
    def draw_from_tables(rng, theta, table, out):
        draw_nb_from_tables(rng, table, I, J_arr, guides, out)

    prepared = dw.PreparedDraw(prepare, draw_from_tables)

    @closure_jit(J_arr)
    def cooccurrence_counts(x_i, out):
        cooccurrence(x_i, I, J_arr, out)

    @closure_jit(J_arr)
    def cooccurrence_entries(x_i, index, value):
        # One cell per feature table (the sparse path: O(K) per record whatever the tables'
        # sizes); a code out of range gives -1, which the engine reports as bad entries.
        y, start = x_i[0], 0
        if not 0.0 <= y < I:
            return -1
        for k in range(J_arr.shape[0]):
            v = x_i[1 + k]
            if not 0.0 <= v < J_arr[k]:
                return -1
            index[k] = start + int(y) * J_arr[k] + int(v)
            value[k] = 1.0
            start += I * J_arr[k]
        return J_arr.shape[0]

    dw.declare_sparse(cooccurrence_counts, cooccurrence_entries, nnz=len(J))

    @closure_jit(J_arr)
    def theta_support(theta):
        return on_simplices(theta, I, J_arr)

    @closure_jit(J_arr)
    def record_support(x_i):
        return is_nb_record(x_i, I, J_arr)

    return draw_record, cooccurrence_counts, theta_support, record_support, prepared


@functools.lru_cache(maxsize=64)
def _kernels(I: int, J: tuple, alpha: tuple, alpha_feature: tuple):
    J_arr = np.array(J, dtype=np.int64)
    alpha_arr, feature_arr = np.array(alpha), np.array(alpha_feature)
    no_counts = np.zeros(len(alpha_feature))

    @closure_jit(alpha_arr, feature_arr, J_arr)
    def draw_theta(rng, theta, x, stats):
        return conjugate_draw(rng, alpha_arr, feature_arr, I, J_arr, stats)

    @closure_jit(alpha_arr, feature_arr, J_arr, no_counts)
    def draw_prior(rng):
        return conjugate_draw(rng, alpha_arr, feature_arr, I, J_arr, no_counts)

    return draw_theta, draw_prior


# -- argument checks ---------------------------------------------------------------------------

def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _check_layout(I, J) -> tuple[int, tuple]:
    if not _is_int(I):
        raise TypeError(f"I (the number of classes) must be an integer, got {I!r}")
    if I < 2:
        raise ValueError(f"I (the number of classes) must be >= 2, got {I}")
    if isinstance(J, (str, bytes)) or not hasattr(J, "__len__") \
            or not all(_is_int(j) for j in J):
        raise TypeError(f"J must be a list of integers, the number of levels J_k of each "
                        f"feature, got {J!r}")
    if len(J) == 0 or any(j < 2 for j in J):
        raise ValueError(f"J must list at least one feature, each with J_k >= 2 levels, "
                         f"got {list(J)!r}")
    # theta, the release and the prior's concentrations each hold I * sum(J) numbers
    check_memory(int(I) * sum(int(j) for j in J),
                 f"I = {I} classes and sum(J) = {sum(int(j) for j in J)} levels give "
                 f"I * sum(J) = {int(I) * sum(int(j) for j in J)} co-occurrence counts")
    return int(I), tuple(int(j) for j in J)


def _as_floats(value, name: str) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be numbers, got {value!r}") from None


def _is_scalar(value) -> bool:
    return np.isscalar(value) or (isinstance(value, np.ndarray) and value.ndim == 0)


def _check_prior(alpha, alpha_feature, I: int, J: tuple) -> tuple[tuple, tuple]:
    """``alpha`` as I floats; ``alpha_feature`` flat in the release layout."""
    if _is_scalar(alpha):
        alpha = (positive("alpha", alpha),) * I
    else:
        arr = _as_floats(alpha, "alpha")
        if arr.shape != (I,) or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise ValueError(f"alpha must be a number > 0 or {I} numbers > 0 (one per "
                             f"class), got {alpha!r}")
        alpha = tuple(float(a) for a in arr)
    if _is_scalar(alpha_feature):
        value = positive("alpha_feature", alpha_feature)
        return alpha, (value,) * (I * sum(J))
    if not hasattr(alpha_feature, "__len__") or len(alpha_feature) != len(J):
        raise ValueError(f"alpha_feature must be a number > 0 or a list of one array per "
                         f"feature ({len(J)}), each broadcastable to (I, J_k); got "
                         f"{alpha_feature!r}")
    blocks = []
    for k, (a, jk) in enumerate(zip(alpha_feature, J)):
        try:
            block = np.broadcast_to(_as_floats(a, f"alpha_feature[{k}]"), (I, jk))
        except ValueError:
            raise ValueError(f"alpha_feature[{k}] must broadcast to (I, J_k) = ({I}, {jk}), "
                             f"got shape {np.shape(a)}") from None
        if not np.all(np.isfinite(block)) or np.any(block <= 0):
            raise ValueError(f"alpha_feature[{k}] must be numbers > 0, got {a!r}")
        blocks.append(block.ravel())
    return alpha, tuple(float(v) for v in np.concatenate(blocks))


def _short(values: tuple):
    """A hyperparameter for labels: one number when all are equal."""
    return f"{values[0]:g}" if len(set(values)) == 1 else [float(v) for v in values]


def _param_shapes(I: int, J: tuple) -> dict:
    return {"pi": (I,), **{f"p{k + 1}": (I, jk) for k, jk in enumerate(J)}}


# -- public API --------------------------------------------------------------------------------

def counts(I: int, J) -> numba.core.registry.CPUDispatcher:
    """The released statistic for ``I`` classes and features with ``J = [J_1, ..., J_K]``
    levels: a compiled ``(x_i, out)`` writing the record's co-occurrence indicators (length
    ``I * sum(J)``, layout in the module docstring). The same function object is returned for
    the same layout, and it is also the model's sufficient statistic.

    Parameters
    ----------
    I : int
        Number of classes.
    J : list of int
        Number of levels of each feature.

    Returns
    -------
    numba.njit function
        ``(x_i, out)``, the statistic :func:`laplace` releases and the model's.

    Examples
    --------
    Two classes, features of 2 and 3 levels: the record ``[y=1, x_1=0, x_2=2]`` sets cell
    (1, 0) of the first table (index 2) and cell (1, 2) of the second (index 4 + 3 + 2).

    >>> import numpy as np
    >>> from dawrap.models import naive_bayes
    >>> out = np.empty(10)
    >>> naive_bayes.counts(2, [2, 3])(np.array([1.0, 0.0, 2.0]), out)
    >>> np.flatnonzero(out)
    array([2, 9])
    """
    I, J = _check_layout(I, J)
    return _record_functions(I, J)[1]


def sensitivity(J) -> float:
    """L1 sensitivity of the co-occurrence counts under replacement of one record: ``2K``.

    Parameters
    ----------
    J : list of int
        Number of levels of each feature.

    Returns
    -------
    float
        :func:`laplace` adds noise of scale ``2K / epsilon`` to each count.

    Examples
    --------
    >>> from dawrap.models import naive_bayes
    >>> naive_bayes.sensitivity([2, 4])
    4.0
    """
    _, J = _check_layout(2, J)  # the sensitivity does not depend on I (>= 2)
    return 2.0 * len(J)


@dw.recipe
def model(I: int, J, alpha=2.0, alpha_feature=2.0) -> dw.Model:
    """The naive-Bayes model with ``I`` classes and features of ``J = [J_1, ..., J_K]`` levels.

    Parameters
    ----------
    I : int
        Number of classes (>= 2).
    J : list of int
        Number of levels of each feature (each >= 2); ``K = len(J)``.
    alpha : float or array_like of shape (I,)
        Dirichlet concentration of the class probabilities ``pi``. Default 2, the paper's.
    alpha_feature : float or list of K arrays, each broadcastable to (I, J_k)
        Dirichlet concentrations of the rows ``p^k_{i.}``; ``alpha_feature[k][i]`` is the
        concentration of row ``i`` of feature ``k``. Default 2, the paper's.

    Returns
    -------
    dawrap.Model
        Parameters ``pi`` (I,) and ``p1..pK`` (I, J_k); records ``[y, x_1..x_K]``.

    Examples
    --------
    >>> from dawrap.models import naive_bayes
    >>> naive_bayes.model(I=3, J=[2, 4]).params
    {'pi': (3,), 'p1': (3, 2), 'p2': (3, 4)}
    """
    I, J = _check_layout(I, J)
    alpha, alpha_feature = _check_prior(alpha, alpha_feature, I, J)
    draw_record, statistic, theta_support, record_support, prepared = _record_functions(I, J)
    draw_theta, draw_prior = _kernels(I, J, alpha, alpha_feature)
    return dw.Model(params=_param_shapes(I, J), record_size=1 + len(J),
                    draw_record=draw_record, prepared=prepared, draw_theta=draw_theta,
                    draw_prior=draw_prior,
                    model_stat=statistic, stat_size=I * sum(J), theta_support=theta_support,
                    record_support=record_support,
                    name=f"naive_bayes(I={I}, J={list(J)}, alpha={_short(alpha)}, "
                         f"alpha_feature={_short(alpha_feature)})")


@dw.recipe
def laplace(epsilon: float, I: int, J) -> dw.Laplace:
    """All co-occurrence counts with Laplace noise of scale ``2K / epsilon`` each (epsilon-DP).

    Parameters
    ----------
    epsilon : float
        The privacy budget.
    I, J
        As for :func:`counts`.

    Returns
    -------
    dawrap.Laplace
        Of the statistic :func:`counts`, one noisy count per cell of the K tables.

    Examples
    --------
    >>> from dawrap.models import naive_bayes
    >>> naive_bayes.laplace(1.0, I=3, J=[2, 4])
    Laplace(cooccurrence_counts, epsilon=1, sensitivity=4, scale=4, size=18)
    """
    I, J = _check_layout(I, J)
    return dw.Laplace(counts(I, J), epsilon=epsilon, sensitivity=sensitivity(J),
                      size=I * sum(J))


def _check_records(x, I: int, J: tuple) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"x must be an array of numeric codes, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != 1 + len(J) or arr.shape[0] < 1:
        raise ValueError(f"x must have shape (n, 1 + K) = (n, {1 + len(J)}), got {arr.shape}")
    arr = arr.astype(float)
    ok = np.isfinite(arr) & (arr == np.floor(arr)) & (arr >= 0) & (arr < np.array([I, *J]))
    if not ok.all():
        row = int(np.argwhere(~ok)[0, 0])
        raise ValueError(f"x[{row}] = {arr[row]} is not a record: codes must be integers "
                         f"y in 0..{I - 1} and x_k in 0..J_k - 1 with J = {list(J)}")
    return arr.astype(np.int64)


def nonprivate_posterior(x, I: int, J, alpha=2.0, alpha_feature=2.0) -> dict:
    r"""The conjugate posterior given the confidential records ``x``.

    Returns the Dirichlet concentrations, keyed and shaped like the model's parameters:
    ``"pi"``: :math:`\alpha + n_\cdot` (I,), and ``"pk"``: :math:`\alpha^k + n^k` (I, J_k),
    each row one Dirichlet. The marginal of one probability is a Beta:
    ``scipy.stats.beta(c[..., j], c.sum(-1) - c[..., j])``.

    Parameters
    ----------
    x : array_like of shape (n, 1 + K)
        The records, integer codes.
    I, J, alpha, alpha_feature
        As for :func:`model`.

    Returns
    -------
    dict of str -> ndarray
        The concentrations ``pi`` and ``p1..pK`` (above).

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import naive_bayes
    >>> x = np.array([[0, 1, 2], [1, 0, 0], [1, 1, 2]])
    >>> posterior = naive_bayes.nonprivate_posterior(x, I=2, J=[2, 3])
    >>> posterior["pi"]                           # 2 + class counts (1, 2)
    array([3., 4.])
    >>> posterior["p1"]                           # 2 + the class-by-x_1 table
    array([[2., 3.],
           [3., 3.]])
    """
    I, J = _check_layout(I, J)
    alpha, alpha_feature = _check_prior(alpha, alpha_feature, I, J)
    x = _check_records(x, I, J)
    out = {"pi": np.array(alpha) + np.bincount(x[:, 0], minlength=I)}
    feature = np.array(alpha_feature)
    start = 0
    for k, jk in enumerate(J):
        table = np.zeros((I, jk))
        np.add.at(table, (x[:, 0], x[:, 1 + k]), 1.0)
        out[f"p{k + 1}"] = feature[start:start + I * jk].reshape(I, jk) + table
        start += I * jk
    return out


def draw_parameters(I: int, J, alpha=2.0, alpha_feature=2.0, seed=None) -> dict:
    """A draw of all parameters from the prior, as a dict for ``Model.simulate``.

    Parameters
    ----------
    I, J, alpha, alpha_feature
        As for :func:`model`.
    seed : int, numpy.random.SeedSequence or None
        Randomness.

    Returns
    -------
    dict of str -> ndarray
        ``pi`` of shape (I,) and ``pk`` of shape (I, J_k), for ``Model.simulate``.

    Examples
    --------
    >>> from dawrap.models import naive_bayes
    >>> theta = naive_bayes.draw_parameters(3, [2, 4], seed=0)
    >>> {name: value.shape for name, value in theta.items()}
    {'pi': (3,), 'p1': (3, 2), 'p2': (3, 4)}
    """
    prior = model(I, J, alpha, alpha_feature)
    return prior.unpack(prior.draw_prior(np.random.default_rng(seed)))


def published_parameters(seed=2022) -> dict:
    """True parameters for the published setting (``PUBLISHED``).

    ``pi`` is Table 1's (its three-decimal values sum to 0.999, so they are renormalised).
    The paper draws the ``p^k`` from the prior too but does not print them (they are in an
    R data file of the authors' repository), so each row ``p^k_{i.}`` is drawn here from
    Dirichlet(2, 2, 2) with a fixed ``seed``. They barely matter for inference on ``pi``.

    Parameters
    ----------
    seed : int
        The seed of the feature probabilities.

    Returns
    -------
    dict of str -> ndarray
        Keyed like a draw of :func:`draw_parameters`, for ``Model.simulate``.

    Examples
    --------
    >>> from dawrap.models import naive_bayes
    >>> theta = naive_bayes.published_parameters()
    >>> theta["pi"].round(3), theta["p1"].shape          # Table 1's pi; 5 classes x 3 levels
    (array([0.097, 0.148, 0.145, 0.446, 0.163]), (5, 3))
    """
    rng = np.random.default_rng(seed)
    pi = np.array(PUBLISHED["pi"])
    out = {"pi": pi / pi.sum()}
    for k, jk in enumerate(PUBLISHED["J"]):
        out[f"p{k + 1}"] = rng.dirichlet(np.full(jk, PUBLISHED["alpha_feature"]),
                                         size=PUBLISHED["I"])
    return out


def exact_posterior(mechanism: dw.Mechanism, s_dp, n: int, I: int, J, alpha=2.0,
                    alpha_feature=2.0) -> dict:
    r"""Exact marginal posteriors of every probability, by summing out the count tables.

    Given the class counts :math:`c`, the rows :math:`r_{ki} = n^k_{i\cdot}` are independent,
    :math:`r_{ki} \sim \mathrm{DirMult}(c_i, \alpha^k_i)`, and the noise density factorises
    over cells, so

    .. math:: p(c \mid s_{dp}) \propto \mathrm{DirMult}(c; n, \alpha)
              \prod_{k,i} Z_{ki}(c_i), \quad
              Z_{ki}(m) = \sum_{|r| = m} \mathrm{DirMult}(r; m, \alpha^k_i)\,
              \prod_j g_{kij}(s_{dp}, r_j),

    and :math:`p(r_{ki} \mid c, s_{dp}) \propto \mathrm{DirMult}(r; c_i, \alpha^k_i)
    \prod_j g_{kij}(r_j)`. Given all tables the parameters are Dirichlet, so each marginal is
    a :class:`dawrap.reference.BetaMixture`. The work is C(n + I - 1, I - 1) class-count vectors
    plus sum_k I C(n + J_k, J_k) rows: keep ``n``, ``I`` and ``J_k`` small.

    ``mechanism`` must have a density that is a product over coordinates (``dw.Laplace``,
    ``dw.Geometric``, ``dw.Gaussian``, ``dw.DiscreteGaussian``). Returns a dict keyed like the
    model's parameters of object arrays of the same shapes holding the marginals.

    Parameters
    ----------
    mechanism : dawrap.Mechanism
        The mechanism that released the counts.
    s_dp : array_like of shape (I * sum(J),)
        The release.
    n : int
        Number of records.
    I, J, alpha, alpha_feature
        As for :func:`model`.

    Returns
    -------
    dict of str -> ndarray of dawrap.reference.BetaMixture
        The marginal posterior of each probability, keyed and shaped like the parameters.

    Examples
    --------
    Two classes, one binary feature, five records:

    >>> from dawrap.models import naive_bayes
    >>> mech = naive_bayes.laplace(1.0, I=2, J=[2])
    >>> exact = naive_bayes.exact_posterior(mech, [2.4, 0.7, 0.2, 1.9], n=5, I=2, J=[2])
    >>> exact["pi"].shape, exact["p1"].shape
    ((2,), (2, 2))
    >>> round(sum(b.mean() for b in exact["pi"]), 6)         # the class means sum to 1
    1.0
    """
    from dawrap.reference import BetaMixture, normalise_log_weights, relative_log_g
    from scipy.special import logsumexp

    I, J = _check_layout(I, J)
    alpha, alpha_feature = _check_prior(alpha, alpha_feature, I, J)
    if getattr(mechanism, "noise", None) is None:  # its density factorises over the cells
        raise TypeError(f"mechanism must add independent noise of a declared law to each count "
                        f"(mechanism.noise: dw.Laplace, dw.Geometric, dw.Gaussian, "
                        f"dw.DiscreteGaussian), got {type(mechanism).__name__}")
    size = I * sum(J)
    if mechanism.size != size:
        raise ValueError(f"mechanism must release I * sum(J) = {size} counts, it releases "
                         f"{mechanism.size}")
    if not _is_int(n) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    s = mechanism.check_release(s_dp)
    alpha_c, alpha_f = np.array(alpha), np.array(alpha_feature)

    # h[c, v]: log g contribution of count v in cell c (the density factorises over cells),
    # up to a constant per cell, which cancels in every weight. Computed from differences
    # between counts (relative_log_g), so a release far outside [0, n] keeps its answer.
    h = np.empty((size, n + 1))
    for c in range(size):
        t = np.zeros((n + 1, size))
        t[:, c] = np.arange(n + 1)
        h[c] = relative_log_g(mechanism, s, t)

    # For each row (k, i) and each total m: every row r, its log DirMult * g, and log Z(m).
    rows, log_joint = {}, {}
    log_z = np.empty((len(J), I, n + 1))
    start = 0
    for k, jk in enumerate(J):
        for i in range(I):
            cells = start + i * jk + np.arange(jk)
            for m in range(n + 1):
                r = compositions(m, jk)
                lj = log_dirichlet_multinomial(r, alpha_f[cells]) + h[cells, r].sum(1)
                rows[k, i, m], log_joint[k, i, m] = r, lj
                log_z[k, i, m] = logsumexp(lj)
        start += I * jk

    classes = compositions(n, I)
    log_w = log_dirichlet_multinomial(classes, alpha_c)
    for k in range(len(J)):
        for i in range(I):
            log_w += log_z[k, i, classes[:, i]]
    w = normalise_log_weights(log_w)

    shapes = _param_shapes(I, J)
    out = {name: np.empty(shape, dtype=object) for name, shape in shapes.items()}
    total_c = alpha_c.sum()
    for i in range(I):
        out["pi"][i] = BetaMixture(w, alpha_c[i] + classes[:, i],
                                   total_c + n - alpha_c[i] - classes[:, i])
    start = 0
    for k, jk in enumerate(J):
        for i in range(I):
            p_total = np.bincount(classes[:, i], weights=w, minlength=n + 1)
            r = np.vstack([rows[k, i, m] for m in range(n + 1)])
            weight = np.concatenate([p_total[m] * np.exp(log_joint[k, i, m] - log_z[k, i, m])
                                     for m in range(n + 1)])
            a = alpha_f[start + i * jk + np.arange(jk)]
            for j in range(jk):
                out[f"p{k + 1}"][i, j] = BetaMixture(weight, a[j] + r[:, j],
                                                     a.sum() + r.sum(1) - a[j] - r[:, j])
        start += I * jk
    return out
