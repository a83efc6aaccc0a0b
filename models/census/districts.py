r"""A district's counts from imputed census databases, without rerunning the chain.

A district (a legislative district, a school district, any area a user draws) is a set of
the finest units, the blocks. Its counts are the sums of its blocks' counts, a function of
the confidential database :math:`x`; each database the record sampler kept is a draw of
:math:`x` given the release, :math:`x^{(j)} \sim p(x \mid s_{dp})`, so the district's
counts computed on each are draws of the district's counts given the release:

.. math:: n_{D,c}^{(j)} = \#\{i : \text{unit}(x_i^{(j)}) \in D,\ \text{cell}(x_i^{(j)}) = c\}.

Any function of them is then a posterior draw of that function: a share, a difference
between districts, whether a share exceeds one half. Nothing is approximated: the draws are
as exact as the chain (no normal approximation, no variance formula), and a district may be
any set of blocks, drawn after the run. ``dw.sample(..., databases=k)`` keeps ``k``
databases per chain (each ``n x 2`` values; at :math:`5 \times 10^6` persons one database is
80 MB: keep as many as the questions need, 100 draws give a probability to about 0.05).
"""
from __future__ import annotations

import numpy as np

from dawrap import diagnostics

from .geography import Geography, Recode, check_marginal

__all__ = ["district"]


def _databases(databases) -> np.ndarray:
    """The databases as an array (..., n, 2): a result's kept ones (chain, database, n, 2),
    or an array of them (e.g. ``dw.synthetic.datasets``)."""
    try:
        groups = diagnostics.group_names(databases)
    except (AttributeError, TypeError):
        groups = None
    if groups is not None:
        if "imputed_databases" not in groups:
            raise ValueError("databases: the result holds no imputed databases: run dw.sample "
                             "with databases=k (the record sampler keeps k per chain)")
        return np.asarray(diagnostics.group(databases, "imputed_databases")["x"].values)
    arr = np.asarray(databases)
    if arr.dtype.kind not in "iuf" or arr.ndim < 2 or arr.shape[-1] != 2:
        got = f"shape {arr.shape}" if arr.dtype.kind in "iuf" else f"dtype {arr.dtype}"
        raise ValueError(f"databases must be a result of dw.sample (with databases=k) or an "
                         f"array of census databases of shape (..., n, 2), rows [unit, cell], "
                         f"got {got}")
    return arr


def _blocks(geography: Geography, blocks) -> np.ndarray:
    """The finest units named by their codes, as a boolean mask over the finest units."""
    codes = np.atleast_1d(np.asarray(blocks))
    if codes.ndim != 1 or codes.size == 0:
        raise ValueError(f"blocks must be a non-empty sequence of the codes of "
                         f"{geography.names[-1]!r} units, got shape {codes.shape}")
    labels = geography.labels[-1]            # sorted (np.unique): a binary search finds each
    try:
        at = np.searchsorted(labels, codes)
    except TypeError:                        # codes that cannot be ordered with the labels
        at = np.full(codes.size, labels.size)
    found = at < labels.size
    found[found] = np.asarray(labels[at[found]] == codes[found], dtype=bool)
    if not found.all():
        missing = codes[~found][:5].tolist()
        raise ValueError(f"blocks: {int((~found).sum())} code(s) are not units of the "
                         f"geography's finest level {geography.names[-1]!r}, e.g. {missing} "
                         f"(its codes are the values given for that level)")
    if np.unique(at).size != at.size:
        raise ValueError("blocks: a code is listed twice (a district counts a block once)")
    mask = np.zeros(labels.size, dtype=bool)
    mask[at] = True
    return mask


def district(databases, geography: Geography, blocks, marginal=None) -> np.ndarray:
    r"""The counts of persons in a district, one table per imputed database (module
    docstring): posterior draws of the district's confidential counts given the release.

    Parameters
    ----------
    databases : result of dw.sample, or array_like of shape (..., n, 2)
        A census model's result run with ``databases=k`` (its kept databases, ``(chain,
        database)``), or census databases (rows ``[unit, cell]``, as
        :func:`dawrap.models.census.records` builds them), e.g. from
        ``dw.synthetic.datasets(result, m)``.
    geography : Geography
        The model's geography.
    blocks : sequence
        The district: codes of units of the geography's finest level (the codes given to
        :class:`Geography` for that level), each once.
    marginal : sequence of str or Recode, optional
        The attributes to keep, in this order, each possibly grouped
        (:func:`dawrap.models.census.recode`); default: all of them; ``()``: the total.

    Returns
    -------
    ndarray of int64, of shape ``databases.shape[:-2]`` followed by the marginal table's
        The district's counts over the marginal's attributes in each database.

    Examples
    --------
    Two databases of three blocks (two in the district) of persons by voting age x minority:

    >>> import numpy as np
    >>> from dawrap.models import census
    >>> geo = census.Geography({"block": ["b1", "b2", "b3"]}, {"adult": 2, "minority": 2})
    >>> first = census.records([[1, 2, 0, 3], [0, 1, 2, 2], [4, 0, 0, 0]])
    >>> second = census.records([[1, 1, 1, 3], [0, 2, 2, 1], [3, 1, 0, 0]])
    >>> counts = census.district(np.stack([first, second]), geo, ["b1", "b2"])
    >>> counts.shape, counts[0].tolist()
    ((2, 2, 2), [[1, 3], [2, 5]])
    >>> adults = counts[:, 1, :]                        # adults by minority, per database
    >>> share = adults[:, 1] / adults.sum(axis=1)       # the minority share of adults
    >>> share.round(3).tolist(), float(np.mean(share > 0.5))
    ([0.714, 0.571], 1.0)

    With a result of ``dw.sample(model, mech, s_dp, n, databases=100)`` the same lines give
    the posterior of the share and the probability that it exceeds one half.
    """
    if not isinstance(geography, Geography):
        raise TypeError(f"geography must be a census.Geography, got "
                        f"{type(geography).__name__}")
    x = _databases(databases)
    mask = _blocks(geography, blocks)
    names = list(geography.attributes)
    marginal = tuple(names if marginal is None else
                     ([marginal] if isinstance(marginal, (str, Recode)) else marginal))
    unknown = [a for a in marginal if (a.attribute if isinstance(a, Recode) else a)
               not in names]
    if unknown or len(set(marginal)) != len(marginal):
        raise ValueError(f"marginal must name distinct attributes of the geography "
                         f"({names}), got {list(marginal)}")
    check_marginal(geography, marginal, "marginal")  # a recode's groups, as a query's
    index, size = geography.marginal_index(marginal)
    lead = x.shape[:-2]
    flat = x.reshape(-1, *x.shape[-2:])
    unit, cell = flat[..., 0].astype(np.int64), flat[..., 1].astype(np.int64)
    if flat.size and (unit.min() < 0 or unit.max() >= mask.size or cell.min() < 0
                      or cell.max() >= geography.cells):
        raise ValueError(f"databases: rows [unit, cell] must have units in 0..{mask.size - 1} "
                         f"and cells in 0..{geography.cells - 1}: these databases are not "
                         f"of this geography")
    out = np.zeros((flat.shape[0], size), dtype=np.int64)
    for d in range(flat.shape[0]):
        inside = mask[unit[d]]
        out[d] = np.bincount(index[cell[d][inside]], minlength=size)
    shape = tuple(a.size if isinstance(a, Recode) else geography.attributes[a]
                  for a in marginal)
    return out.reshape(lead + shape)
