r"""Sparse record statistics and coordinate-separable mechanism densities.

A histogram release has many cells, but one record touches only a few of them. When the
record's contribution :math:`t(x_i)` has at most ``nnz`` non-zero coordinates and the
mechanism's log density is a sum over coordinates,

.. math:: \log g(s_{dp}, T) = c + \sum_{j=1}^{m} \ell_j(s_{dp,j}, T_j),

replacing a record changes :math:`T` only on the union :math:`J` of the old and the new
record's indices, and the acceptance ratio of the record sampler is

.. math:: \log \frac{g(s_{dp}, T^\star)}{g(s_{dp}, T)} = \sum_{j \in J}
          \ell_j(s_{dp,j}, T^\star_j) - \ell_j(s_{dp,j}, T_j),

an O(nnz) computation whatever the number of cells ``m``.

A statistic is declared sparse once, with :func:`declare_sparse`: its ``entries`` function
``(x_i, index, value) -> count`` writes the record's non-zero coordinates as ``count`` pairs
``(index[a], value[a])``, ``count <= nnz`` (an index may repeat: its values add up). Every
mechanism and model that uses that statistic then takes the entries path. The built-in
Laplace, Geometric, Gaussian and DiscreteGaussian mechanisms are separable; a custom
:class:`dawrap.Mechanism` declares itself separable by giving ``coordinate_log_density``
``(s_j, t_j, j, params) -> float``, the term :math:`\ell_j` (constants may be left out: only
differences are used).

Examples
--------
A record is a category ``0..3``; its contribution to the released histogram is one-hot:

>>> import numba
>>> import dawrap as dw
>>> @numba.njit
... def one_hot(x_i, out):
...     out[:] = 0.0
...     out[int(x_i[0])] = 1.0
>>> @numba.njit
... def one_hot_entries(x_i, index, value):
...     index[0] = int(x_i[0])
...     value[0] = 1.0
...     return 1
>>> dw.declare_sparse(one_hot, one_hot_entries, nnz=1) is one_hot
True
>>> dw.Laplace(one_hot, epsilon=1.0, sensitivity=2.0, size=4).sparse is not None
True
"""
from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ..compile import templates as _templates
from .._checks import as_count, require_arity, require_njit

__all__ = ["declare_sparse", "sparse_form", "laplace_coordinate", "gaussian_coordinate",
           "no_entries", "no_coordinate", "entries_given_release", "SparseForm",
           "total_from_entries"]

_ATTRIBUTE = "_dawrap_sparse"


class SparseForm(NamedTuple):
    """A statistic's sparse declaration: ``entries`` (compiled) and the most pairs ``nnz``
    (immutable, as the mechanism holding it)."""

    entries: object
    nnz: int

    def __repr__(self) -> str:
        return f"SparseForm({getattr(self.entries, '__name__', self.entries)}, nnz={self.nnz})"


def declare_sparse(statistic, entries, nnz: int):
    """Declare that ``statistic`` (``(x_i, out)``) writes at most ``nnz`` non-zero values,
    listed by ``entries(x_i, index, value) -> count``.

    Parameters
    ----------
    statistic : numba.njit function
        The dense statistic, as passed to :class:`dawrap.Model` (``model_stat``) or a
        mechanism.
    entries : numba.njit function
        ``(x_i, index, value) -> int``: writes the record's non-zero coordinates into the
        int64 array ``index`` and the float64 array ``value`` (both of length ``nnz``) and
        returns how many it wrote. It must agree with ``statistic``: the record sampler checks
        this before a run, on every distinct record it starts from, and at every refresh of
        its running sums, on records of the database it has imputed
        (:mod:`dawrap.samplers.entries_path`).
    nnz : int
        The most pairs one record has.

    Returns
    -------
    statistic
        The same function, now carrying the declaration (see :func:`sparse_form`).

    Examples
    --------
    >>> import numba
    >>> import dawrap as dw
    >>> @numba.njit
    ... def one_hot(x_i, out):              # a record is a category 0..3
    ...     out[:] = 0.0
    ...     out[int(x_i[0])] = 1.0
    >>> @numba.njit
    ... def one_hot_entries(x_i, index, value):
    ...     index[0] = int(x_i[0])
    ...     value[0] = 1.0
    ...     return 1
    >>> dw.declare_sparse(one_hot, one_hot_entries, nnz=1) is one_hot
    True
    >>> dw.Laplace(one_hot, epsilon=1.0, sensitivity=2.0, size=4).sparse.nnz   # the entries path
    1
    """
    require_njit(statistic, "statistic", "(x_i, out)")
    require_njit(entries, "entries", "(x_i, index, value) -> count")
    require_arity(entries, "entries", "(x_i, index, value) -> count", 3)
    setattr(statistic, _ATTRIBUTE, SparseForm(entries, as_count(nnz, "nnz")))
    return statistic


def sparse_form(statistic) -> SparseForm | None:
    """The :class:`SparseForm` declared for ``statistic``, or ``None`` (a dense statistic)."""
    return getattr(statistic, _ATTRIBUTE, None)


# The slots of the templates below, bound per statistic (dawrap._templates checks every
# binding against them).
ENTRIES = _templates.slot("(x_i, index, value) -> count in entries_with_release, "
                          "(x_i, s_dp, index, value) -> count in total_of_entries: the "
                          "statistic's nonzero coordinates as (index, value) pairs")
NNZ = _templates.slot("int: most pairs ENTRIES writes")
SIZE = _templates.slot("int: floats of the statistic")


def entries_with_release(x_i, s_dp, index, value):
    """``ENTRIES(x_i, index, value)`` in the sampler's form (a template)."""
    return ENTRIES(x_i, index, value)


def entries_given_release(entries):
    """Adapt ``(x_i, index, value)`` entries to the sampler's ``(x_i, s_dp, index, value)``
    (the same function always maps to the same compiled wrapper)."""
    return _templates.bind((entries_with_release,), {"ENTRIES": entries}).entries_with_release


@numba.njit(nogil=True, cache=True)
def no_entries(x_i, s_dp, index, value):
    """Placeholder: a dense statistic has no entries (never called on the dense path)."""
    return 0


@numba.njit(nogil=True, cache=True)
def no_model_entries(x_i, index, value):
    """Placeholder for a model statistic without a sparse declaration."""
    return 0


@numba.njit(nogil=True, cache=True)
def no_coordinate(s_j, t_j, j, params):
    """Placeholder: a non-separable mechanism has no per-coordinate term."""
    return 0.0


@numba.njit(nogil=True, cache=True)
def laplace_coordinate(s_j, t_j, j, params):
    r""":math:`-|s_j - t_j| / b_j` (``params[j]`` is :math:`1/b_j`): the Laplace and the
    geometric mechanisms' term, without the constant."""
    return -abs(s_j - t_j) * params[j]


@numba.njit(nogil=True, cache=True)
def gaussian_coordinate(s_j, t_j, j, params):
    r""":math:`-\tfrac12 (s_j - t_j)^2 / \sigma_j^2` (``params[j]`` is :math:`1/\sigma_j`):
    the Gaussian and discrete Gaussian term, without the constant."""
    z = (s_j - t_j) * params[j]
    return -0.5 * z * z


def total_from_entries(x, s_dp, entries, nnz: int, size: int):
    """``(sum_i t(x_i), ok)`` through the entries, O(n nnz + size); ``ok`` is False (and the
    sum incomplete) at the first count outside ``0..nnz`` or index outside the statistic."""
    bound = _templates.bind((total_of_entries,), {"ENTRIES": entries, "NNZ": nnz, "SIZE": size})
    return bound.total_of_entries(x, s_dp)


def total_of_entries(x, s_dp):
    """The template of :func:`total_from_entries`."""
    total = np.zeros(SIZE)
    nnz, size = NNZ, SIZE
    index, value = np.empty(nnz, np.int64), np.empty(nnz)
    for i in range(x.shape[0]):
        count = ENTRIES(x[i], s_dp, index, value)
        if count < 0 or count > nnz:
            return total, False
        for a in range(count):
            if index[a] < 0 or index[a] >= size:
                return total, False
            total[index[a]] += value[a]
    return total, True
