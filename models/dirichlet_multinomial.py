r"""Categorical records with a Dirichlet prior; the category counts are released.

.. math:: p \sim \mathrm{Dirichlet}(\alpha), \quad x_i \mid p \sim \mathrm{Categorical}(p),
          \quad s_{dp} = \textstyle\sum_i \mathrm{onehot}(x_i) + \text{noise}.

A record is its category index ``0..K-1`` (one float). Replacing one record moves two counts
by one each, so the L1 sensitivity of the count vector is 2.

Examples
--------
>>> import dawrap as dw
>>> from dawrap.models import dirichlet_multinomial
>>> model = dirichlet_multinomial.model(alpha=[1, 1, 1])
>>> mech = dirichlet_multinomial.laplace(epsilon=1.0, categories=3)
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np

import dawrap as dw

from ._shared import closure_jit, compositions, log_dirichlet_multinomial

__all__ = ["model", "one_hot", "one_hot_entries", "draw_record", "prepare_categorical",
           "draw_from_table", "PREPARED", "propose_uniform", "laplace", "exact_posterior"]


@numba.njit(nogil=True, cache=True)
def draw_record(rng, theta, out):
    """One category index drawn with probabilities ``theta``.

    Parameters
    ----------
    rng : numpy.random.Generator
    theta : ndarray of shape (K,)
        The category probabilities.
    out : ndarray of shape (1,)
        Receives the category index ``0..K-1`` as a float.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import dirichlet_multinomial
    >>> out = np.empty(1)
    >>> dirichlet_multinomial.draw_record(np.random.default_rng(0), np.array([0.0, 0.0, 1.0]),
    ...                                   out)
    >>> out
    array([2.])
    """
    u = rng.random()
    k = theta.shape[0]
    cumulative = 0.0
    for j in range(k - 1):
        cumulative += theta[j]
        if u < cumulative:
            out[0] = j
            return
    out[0] = k - 1


@numba.njit(nogil=True, cache=True)
def prepare_categorical(theta):
    """The table :func:`draw_from_table` draws from: running sums and a guide table,
    built in O(K) once per record sweep (:func:`dawrap.random.categorical_table`).

    Parameters
    ----------
    theta : ndarray of shape (K,)
        The category probabilities.

    Returns
    -------
    tuple of ndarray
        ``(cumulative, guide)``.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import dirichlet_multinomial
    >>> cumulative, guide = dirichlet_multinomial.prepare_categorical(np.array([0.2, 0.3, 0.5]))
    >>> cumulative
    array([0.2, 0.5, 1. ])
    """
    return dw.random.categorical_table(theta)


@numba.njit(nogil=True, cache=True)
def draw_from_table(rng, theta, table, out):
    """:func:`draw_record` in O(1) on average from the sweep's table
    (:func:`prepare_categorical`): the same category for the same generator state, bit for
    bit (:func:`dawrap.random.categorical`).

    Parameters
    ----------
    rng : numpy.random.Generator
    theta : ndarray of shape (K,)
        The category probabilities (the table is built from them).
    table : tuple of ndarray
        From :func:`prepare_categorical`.
    out : ndarray of shape (1,)
        Receives the category index ``0..K-1`` as a float.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import dirichlet_multinomial as dm
    >>> theta, out, scanned = np.array([0.2, 0.3, 0.5]), np.empty(1), np.empty(1)
    >>> dm.draw_from_table(np.random.default_rng(4), theta, dm.prepare_categorical(theta), out)
    >>> dm.draw_record(np.random.default_rng(4), theta, scanned)
    >>> out, scanned
    (array([2.]), array([2.]))
    """
    out[0] = dw.random.categorical(rng, table[0], table[1])


#: The prepared form of :func:`draw_record` (``dw.Model(prepared=...)``).
PREPARED = dw.PreparedDraw(prepare_categorical, draw_from_table)


@numba.njit(nogil=True, cache=True)
def propose_uniform(rng, theta, x_i, out):
    r"""A category drawn uniformly, an O(1) proposal whatever the number of categories;
    the log Hastings ratio is :math:`\log p_{new} - \log p_{old}`.

    Parameters
    ----------
    rng, theta
        As for :func:`draw_record`.
    x_i : ndarray of shape (1,)
        The current record.
    out : ndarray of shape (1,)
        Receives the proposed category.

    Returns
    -------
    float
        The log ratio ``log f(x*) q(x) / f(x) q(x*)``.

    Examples
    --------
    >>> import math
    >>> import numpy as np
    >>> from dawrap.models import dirichlet_multinomial
    >>> theta, out = np.array([0.2, 0.3, 0.5]), np.empty(1)
    >>> log_ratio = dirichlet_multinomial.propose_uniform(np.random.default_rng(0), theta,
    ...                                                   np.array([1.0]), out)
    >>> j = int(out[0])
    >>> math.isclose(log_ratio, math.log(theta[j]) - math.log(theta[1]))
    True
    """
    j = rng.integers(0, theta.shape[0])
    out[0] = j
    return math.log(theta[j]) - math.log(theta[int(x_i[0])])


@numba.njit(nogil=True, cache=True)
def one_hot(x_i, out):
    """The record's contribution to the count vector.

    Parameters
    ----------
    x_i : ndarray of shape (1,)
        A category index.
    out : ndarray of shape (K,)
        Receives the one-hot vector.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import dirichlet_multinomial
    >>> out = np.empty(3)
    >>> dirichlet_multinomial.one_hot(np.array([2.0]), out)
    >>> out
    array([0., 0., 1.])
    """
    for j in range(out.shape[0]):
        out[j] = 0.0
    out[int(x_i[0])] = 1.0


@numba.njit(nogil=True, cache=True)
def one_hot_entries(x_i, index, value):
    """:func:`one_hot` as its one non-zero entry (the sparse path: O(1) per record
    whatever the number of categories).

    Declared with :func:`dawrap.declare_sparse`, so that :func:`laplace` uses it.

    Parameters
    ----------
    x_i : ndarray of shape (1,)
        A category index.
    index : ndarray of shape (1,), int64
        Receives the non-zero coordinate.
    value : ndarray of shape (1,)
        Receives its value, 1.

    Returns
    -------
    int
        The number of entries written, 1.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import dirichlet_multinomial
    >>> index, value = np.empty(1, dtype=np.int64), np.empty(1)
    >>> dirichlet_multinomial.one_hot_entries(np.array([2.0]), index, value)
    1
    >>> index, value
    (array([2]), array([1.]))
    """
    index[0] = int(x_i[0])
    value[0] = 1.0
    return 1


dw.declare_sparse(one_hot, one_hot_entries, nnz=1)


@numba.njit(nogil=True, cache=True)
def conjugate_draw(rng, alpha, counts, n):
    """p | counts ~ Dirichlet(alpha + counts), by normalised gamma draws."""
    k = alpha.shape[0]
    g = np.empty(k)
    for j in range(k):
        g[j] = dw.random.gamma(rng, alpha[j] + counts[j], 1.0)
    return g / g.sum()


@numba.njit(nogil=True, cache=True)
def mean_cov(theta):
    """Mean and covariance of one one-hot record: p and diag(p) - p p^T (singular)."""
    return theta.copy(), np.diag(theta) - np.outer(theta, theta)


@numba.njit(nogil=True, cache=True)
def cell_probabilities(theta):
    """The probability of each category: theta itself (declares the statistic one-hot)."""
    return theta


@numba.njit(nogil=True, cache=True)
def natural(theta):
    """The natural parameter log p (overcomplete: A(log p) = log sum p = 0)."""
    return np.log(theta)


@numba.njit(nogil=True, cache=True)
def log_partition(eta):
    """A(eta) = log sum_j e^eta_j."""
    top = np.max(eta)
    return top + np.log(np.sum(np.exp(eta - top)))


@numba.njit(nogil=True, cache=True)
def valid(s, n):
    """Counts are non-negative (they sum to n by construction of the normal approximation)."""
    for j in range(s.shape[0]):
        if s[j] < 0.0:
            return False
    return True


@numba.njit(nogil=True, cache=True)
def project(s, n):
    """Non-negative counts summing to n: clip, then rescale (uniform if nothing is left)."""
    c = np.maximum(s, 0.0)
    total = c.sum()
    if total <= 0.0:
        return np.full(s.shape[0], n / s.shape[0])
    return c * (n / total)


@functools.lru_cache(maxsize=64)
def _kernels(alpha: tuple):
    alpha_arr = np.array(alpha)

    @closure_jit(alpha_arr)
    def draw_theta(rng, theta, x, stats):
        return conjugate_draw(rng, alpha_arr, stats, x.shape[0])

    @closure_jit(alpha_arr)
    def posterior_draw(rng, s, n):
        return conjugate_draw(rng, alpha_arr, s, n)

    k = len(alpha)

    @closure_jit()
    def on_simplex(theta):
        return np.all(theta >= 0.0) and abs(theta.sum() - 1.0) < 1e-9

    @closure_jit()
    def is_category(x_i):
        return 0.0 <= x_i[0] < k and x_i[0] == np.floor(x_i[0])

    return draw_theta, posterior_draw, on_simplex, is_category


def _check_alpha(alpha) -> tuple:
    arr = np.asarray(alpha, dtype=float)
    if arr.ndim != 1 or arr.shape[0] < 2 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"alpha must be a vector of at least 2 positive numbers, got {alpha!r}")
    return tuple(float(a) for a in arr)


@dw.recipe
def model(alpha, proposal: str = "prior") -> dw.Model:
    """The Dirichlet-multinomial model, prior ``Dirichlet(alpha)`` on the parameter ``p``.

    ``proposal="prior"`` proposes each record from ``Categorical(p)`` (Ju et al. Algorithm
    1), O(1) per record from a table each sweep builds once in O(K) (:data:`PREPARED`);
    ``"uniform"`` proposes a uniformly drawn category with its Hastings ratio (supplement
    Algorithm 2), O(1) per record without a table; the prior proposal is accepted more often
    where ``p`` is far from uniform. Starting databases are drawn from the table with
    either.

    Parameters
    ----------
    alpha : sequence of float
        The Dirichlet concentrations, at least two, positive; their number is ``K``.
    proposal : {"prior", "uniform"}
        The record proposal.

    Returns
    -------
    dawrap.Model
        One parameter ``p`` of shape ``(K,)``, a record per category index; with the family.

    Examples
    --------
    >>> from dawrap.models import dirichlet_multinomial
    >>> model = dirichlet_multinomial.model(alpha=[1, 1, 1], proposal="uniform")
    >>> model.params
    {'p': (3,)}
    """
    if proposal not in ("prior", "uniform"):
        raise ValueError(f"dirichlet_multinomial.model: proposal must be 'prior' or "
                         f"'uniform', got {proposal!r}")
    alpha = _check_alpha(alpha)
    k = len(alpha)
    draw_theta, posterior_draw, on_simplex, is_category = _kernels(alpha)
    # One-hot records with probabilities theta: the suffstat sampler runs in O(k).
    family = dw.ExponentialFamily(one_hot, k, mean_cov, posterior_draw, valid, bounded=True,
                                  natural=natural, log_partition=log_partition,
                                  project=project, cell_probabilities=cell_probabilities)
    alpha_arr = np.array(alpha)
    return dw.Model(params={"p": (k,)}, record_size=1, draw_record=draw_record,
                    draw_theta=draw_theta, model_stat=one_hot, stat_size=k,
                    draw_prior=lambda rng: rng.dirichlet(alpha_arr), family=family,
                    theta_support=on_simplex, record_support=is_category,
                    propose_record=propose_uniform if proposal == "uniform" else None,
                    prepared=PREPARED,  # the uniform proposal needs no table: only starts use it
                    name=f"dirichlet_multinomial(alpha={list(alpha)}"
                         + (", proposal='uniform')" if proposal == "uniform" else ")"))


@dw.recipe
def laplace(epsilon: float, categories: int) -> dw.Laplace:
    """The count vector with Laplace noise of scale ``2 / epsilon`` per count (epsilon-DP).

    Parameters
    ----------
    epsilon : float
        The privacy budget.
    categories : int
        ``K``, the release's length.

    Returns
    -------
    dawrap.Laplace
        Separable, with the sparse statistic :func:`one_hot_entries`: a record update costs
        O(1) whatever ``K``.

    Examples
    --------
    >>> from dawrap.models import dirichlet_multinomial
    >>> mech = dirichlet_multinomial.laplace(epsilon=1.0, categories=3)
    >>> mech
    Laplace(one_hot, epsilon=1, sensitivity=2, scale=2, size=3)
    >>> mech.total([0.0, 2.0, 2.0])                        # the category counts
    array([1., 0., 2.])
    """
    return dw.Laplace(one_hot, epsilon=epsilon, sensitivity=2.0, size=categories)


def exact_posterior(mechanism: dw.Mechanism, s_dp, n: int, alpha):
    r"""Exact marginal posteriors of each ``p_j``, by enumerating every count vector.

    :math:`p(p \mid s_{dp}) = \sum_k w_k \mathrm{Dirichlet}(\alpha + k)`,
    :math:`w_k \propto \mathrm{DirMult}(k; n, \alpha)\, g(s_{dp}, k)`; the marginal of ``p_j``
    under each component is a Beta. Returns one :class:`dawrap.reference.BetaMixture` per category.
    The number of count vectors is C(n + K - 1, K - 1): keep n and K small.

    Parameters
    ----------
    mechanism : dawrap.Mechanism
        The mechanism that released the counts.
    s_dp : array_like of shape (K,)
        The release.
    n : int
        Number of records.
    alpha : sequence of float
        The Dirichlet concentrations.

    Returns
    -------
    list of dawrap.reference.BetaMixture
        The marginal posterior of each ``p_j``.

    Examples
    --------
    The README's release of three noisy counts of 20 records:

    >>> from dawrap.models import dirichlet_multinomial
    >>> mech = dirichlet_multinomial.laplace(epsilon=1.0, categories=3)
    >>> marginals = dirichlet_multinomial.exact_posterior(mech, [3.2, 5.9, 11.4], n=20,
    ...                                                   alpha=[1, 1, 1])
    >>> [round(m.mean(), 3) for m in marginals]
    [0.182, 0.291, 0.528]
    """
    from dawrap.reference import BetaMixture, normalise_log_weights, relative_log_g

    alpha = np.array(_check_alpha(alpha))
    k = alpha.shape[0]
    total_alpha = alpha.sum()
    counts = compositions(n, k).astype(float)
    log_dm = log_dirichlet_multinomial(counts, alpha)
    # Differences of log g between count vectors, exact however extreme the release.
    log_g = relative_log_g(mechanism, s_dp, counts)
    w = normalise_log_weights(log_dm + log_g)
    return [BetaMixture(w, alpha[j] + counts[:, j], total_alpha + n - alpha[j] - counts[:, j])
            for j in range(k)]
