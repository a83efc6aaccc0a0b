r"""Quantiles selected by the exponential mechanism among public candidates, as OpenDP
releases them (``.dp.quantile``, ``.dp.median``): :class:`Quantiles`.

For the ``alpha``-quantile of a column with increasing candidates :math:`c_1 < \dots < c_K`,
OpenDP (``make_quantile_score_candidates``, Smith 2011) scores each candidate by

.. math:: u_j = \big|(d - a)\,\min(L_j, \ell) - a\,\min(G_j, \ell)\big|,
   \qquad L_j = \#\{x_i < c_j\},\ G_j = \#\{x_i > c_j\},

with :math:`a/d` the fraction OpenDP makes of ``alpha`` (exact when its denominator is
small, else rounded on a grid: :func:`alpha_fraction`) and :math:`\ell` a size limit, and
releases the candidate of least *noisy* score: :math:`k = \arg\max_j(-u_j/b + Z_j)` with
:math:`Z_j` standard exponential (``ExponentialMin``, pure DP) or standard Gumbel
(``GumbelMin``, zCDP), :math:`b` the scale OpenDP reports. The probability of releasing
:math:`c_k` is

* Gumbel: :math:`e^{-u_k/b} / \sum_j e^{-u_j/b}`, the exponential mechanism's softmax;
* exponential (report-noisy-max with exponential noise, which is permute-and-flip, McKenna
  & Sheldon 2020): with :math:`\delta_j = (u_j - \min_i u_i)/b`,

  .. math:: P(k) = e^{-\delta_k} \int_0^1 \prod_{j \ne k} \big(1 - e^{-\delta_j} v\big)\, dv,

  the density of the largest noisy score integrated out (substitute :math:`v = e^{-y}`). The
  integrand is a polynomial of degree :math:`K - 1` in :math:`v`, so Gauss-Legendre
  quadrature with :math:`\lfloor K/2 \rfloor + 1` nodes (or more) is exact; factors with
  :math:`\delta_j > 40` equal 1 to within :math:`4\cdot10^{-18}` and are left out, which
  lowers the degree (and the nodes needed) to the candidates that compete.

The likelihood depends on the records only through :math:`L_j` and :math:`G_j`, so the
statistic is record additive: one record's contribution is a one-hot over the
:math:`2M + 1` cells :math:`(-\infty, c_1), \{c_1\}, (c_1, c_2), \dots, \{c_M\},
(c_M, \infty)` of the union of every quantile's candidates, and :math:`L_j`, :math:`G_j`
are sums of cells. The density is not separable (the normaliser couples the candidates):
a record update costs O(M) for the counts plus, per quantile, O(K) for the scores and
O(K' m) for the exponential form's quadrature, with :math:`K'` the competing candidates and
:math:`m \le K'/2 + 1` the nodes.

The release ``s_dp`` is the released candidate *values*, one per quantile: it is not the
statistic plus noise, so release-informed starts, the plausibility check, the naive and
the summary samplers do not apply (the record sampler does, exactly).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np

from .._checks import as_float_vector, as_positive_float
from ..compile.templates import closure_jit
from .base import Mechanism
from ._immutable import read_only

__all__ = ["Quantiles", "alpha_fraction", "NOISES"]

#: The selection noises: OpenDP's ``summarize()`` names them ``ExponentialMin`` and
#: ``GumbelMin``.
NOISES = {"exponential": 0, "gumbel": 1}

#: OpenDP's integers are u64; its size limit without a known size is this over the
#: denominator.
U64_MAX = 2 ** 64 - 1

#: A candidate whose noisy score needs more than this many scales to win contributes a
#: factor within exp(-40) = 4e-18 of 1 (left out of the quadrature).
NEGLIGIBLE = 40.0



def alpha_fraction(alpha: float, size_limit: int | None = None) -> tuple[int, int]:
    """The integer fraction ``(numerator, denominator)`` OpenDP scores the ``alpha``-quantile
    with: ``alpha``'s exact binary fraction when its denominator is below the grid's
    (:math:`10^4`, or :math:`\\lfloor (2^{64}-1)/\\ell \\rfloor` with a size limit
    :math:`\\ell`), else ``alpha`` rounded on that grid (OpenDP's
    ``score_candidates_constants``).

    Examples
    --------
    >>> from dawrap.mechanisms.quantiles import alpha_fraction
    >>> alpha_fraction(0.25), alpha_fraction(0.1)
    ((1, 4), (1000, 10000))
    """
    exact = Fraction(alpha)
    grid = 10_000 if size_limit is None else U64_MAX // int(size_limit)
    if exact.denominator < grid:
        return exact.numerator, exact.denominator
    return int(math.floor(alpha * float(grid) + 0.5)), grid


def _quadrature(largest: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes on [0, 1] and log weights of the rules of 1, 2, 4, ... nodes, up
    to the first of at least ``largest``: the rule of ``2**r`` nodes at ``[2**r - 1,
    2**(r + 1) - 1)``. A rule of m nodes is exact for every degree below 2m, so the
    smallest power of two at or above the nodes needed is exact too (O(log K) rules, not
    K: cheap to build and to compile in)."""
    nodes, log_weights, m = [], [], 1
    while True:
        v, w = np.polynomial.legendre.leggauss(m)
        nodes.append((v + 1.0) / 2.0)
        log_weights.append(np.log(w / 2.0))
        if m >= largest:
            return np.concatenate(nodes), np.concatenate(log_weights)
        m *= 2


def _compiled(union, column, cell, values, count, fraction, kind, nodes, log_weights):
    """The statistic and log density, closures over the candidates and constants."""
    cells_max = union.shape[0]
    quantiles = count.shape[0]
    jit = closure_jit(union, cell, values, count, fraction, kind, nodes, log_weights)

    @jit
    def statistic(x_i, out):
        out[:] = 0.0
        v = x_i[column]
        m = np.searchsorted(union, v)      # candidates below v (NaN: above every one)
        if m < cells_max and union[m] == v:
            out[2 * m + 1] = 1.0
        else:
            out[2 * m] = 1.0

    @jit
    def log_density(s_dp, t, params):
        below = np.empty(t.shape[0] + 1)   # below[c]: records in cells before c
        below[0] = 0.0
        for c in range(t.shape[0]):
            below[c + 1] = below[c] + t[c]
        n = below[t.shape[0]]
        largest = count.max()
        score = np.empty(largest)
        acc = np.empty(nodes.shape[0])
        out = 0.0
        for q in range(quantiles):
            k = -1
            for j in range(count[q]):
                if values[q, j] == s_dp[q]:
                    k = j
            if k < 0:
                return -np.inf
            num, den, limit = fraction[q, 0], fraction[q, 1], fraction[q, 2]
            least = np.inf
            for j in range(count[q]):
                lt = min(below[cell[q, j]], limit)
                gt = min(n - below[cell[q, j] + 1], limit)
                score[j] = abs((den - num) * lt - num * gt) / params[q]
                least = min(least, score[j])
            if kind[q] == 1:                # Gumbel: the softmax
                total = 0.0
                for j in range(count[q]):
                    total += math.exp(least - score[j])
                out += least - score[k] - math.log(total)
                continue
            competing = 0                   # exponential: the quadrature (module docstring)
            for j in range(count[q]):
                score[j] -= least
                if score[j] <= NEGLIGIBLE:
                    competing += 1
            m = 1                           # the rule of the first power of two >= needed
            while m < competing // 2 + 1:
                m *= 2
            start = m - 1
            top = -np.inf
            for i in range(m):
                v = nodes[start + i]
                a = log_weights[start + i]
                for j in range(count[q]):
                    if j != k and score[j] <= NEGLIGIBLE:
                        a += math.log1p(-math.exp(-score[j]) * v)
                acc[i] = a
                top = max(top, a)
            total = 0.0
            for i in range(m):
                total += math.exp(acc[i] - top)
            out += -score[k] + top + math.log(total)
        return out

    return statistic, log_density


class Quantiles(Mechanism):
    r"""Quantiles of one column, each selected among public candidates by the exponential
    mechanism (report-noisy-min of OpenDP's scores, module docstring): OpenDP's
    ``.dp.quantile`` and ``.dp.median``, read from a query by :func:`dawrap.opendp.from_query`.

    Parameters
    ----------
    alphas : sequence of float or (int, int)
        The quantiles' levels in [0, 1] (0.5 for the median), or OpenDP's integer fractions
        ``(numerator, denominator)``; a float becomes OpenDP's fraction
        (:func:`alpha_fraction`, given ``size_limit``).
    candidates : sequence of float, or one sequence per quantile
        The public candidates, strictly increasing.
    scale : float or sequence of float
        Each quantile's noise scale, in the units of OpenDP's integer scores (OpenDP's
        ``summarize()`` reports it).
    noise : {"exponential", "gumbel"}
        ``"exponential"`` for OpenDP's ``ExponentialMin`` (an epsilon budget),
        ``"gumbel"`` for ``GumbelMin`` (a rho budget).
    column : int
        Which element of a record the quantiles are of.
    size_limit : int, optional
        OpenDP's size limit :math:`\ell` (a margin's ``max_length``); by default OpenDP's
        for an unknown size, :math:`\lfloor (2^{64}-1)/d \rfloor` (never reached).

    Examples
    --------
    The median of 0..99 among four candidates, selected with scale 8:

    >>> import numpy as np
    >>> from dawrap.mechanisms import Quantiles
    >>> mech = Quantiles([0.5], [20.0, 40.0, 50.0, 80.0], scale=8.0)
    >>> t = mech.total(np.arange(100.0))
    >>> [round(float(np.exp(mech.log_g([c], t))), 4) for c in (20.0, 40.0, 50.0, 80.0)]
    [0.0003, 0.0527, 0.9467, 0.0003]
    """

    additive = False

    def __init__(self, alphas, candidates, scale, *, noise: str = "exponential",
                 column: int = 0, size_limit: int | None = None):
        alphas = list(alphas) if isinstance(alphas, (list, tuple, np.ndarray)) else [alphas]
        if not alphas:
            raise ValueError("alphas must hold at least one quantile level")
        if noise not in NOISES:
            raise ValueError(f"noise must be one of {sorted(NOISES)}, got {noise!r}")
        if isinstance(column, bool) or not isinstance(column, (int, np.integer)) or column < 0:
            raise ValueError(f"column must be a non-negative integer, got {column!r}")
        if size_limit is not None and (isinstance(size_limit, bool) or not isinstance(
                size_limit, (int, np.integer)) or size_limit < 1):
            raise ValueError(f"size_limit must be a positive integer, got {size_limit!r}")
        quantiles = len(alphas)
        per = self._candidates(candidates, quantiles)
        scales = np.broadcast_to(as_float_vector(scale, "scale"), (quantiles,)) \
            if np.ndim(scale) == 0 else as_float_vector(scale, "scale", quantiles)
        for b in scales:
            as_positive_float(float(b), "scale")
        fractions = [self._fraction(a, size_limit, q) for q, a in enumerate(alphas)]
        union = np.unique(np.concatenate(per))
        width = max(len(c) for c in per)
        values = np.full((quantiles, width), np.nan)
        cell = np.zeros((quantiles, width), dtype=np.int64)
        for q, c in enumerate(per):
            values[q, :len(c)] = c
            cell[q, :len(c)] = 2 * np.searchsorted(union, c) + 1
        fraction = np.array([[a, d, float(size_limit) if size_limit is not None
                              else float(U64_MAX // d)] for a, d in fractions])
        count = np.array([len(c) for c in per], dtype=np.int64)
        nodes, log_weights = _quadrature(width // 2 + 1)
        kind = np.full(quantiles, NOISES[noise], dtype=np.int64)
        statistic, log_density = _compiled(union, int(column), cell, values, count, fraction,
                                           kind, nodes, log_weights)
        super().__init__(statistic, log_density, size=2 * union.shape[0] + 1,
                         params=np.array(scales, dtype=np.float64), name="Quantiles",
                         draw_release=self._draw)
        self.release_size = quantiles
        self.alphas = tuple(float(a) / d for a, d in fractions)
        self.fractions = tuple(fractions)
        self.candidates = tuple(read_only(np.array(c)) for c in per)
        self.scale = tuple(float(b) for b in scales)
        self.noise_kind, self.column, self.size_limit = noise, int(column), size_limit
        self._cell = read_only(cell)

    @staticmethod
    def _candidates(candidates, quantiles: int) -> list:
        if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__len__") or \
                len(candidates) == 0:
            raise ValueError(f"candidates must be a non-empty sequence of numbers, or one per "
                             f"quantile, got {candidates!r}")
        nested = np.ndim(candidates[0]) == 1
        per = list(candidates) if nested else [candidates] * quantiles
        if len(per) != quantiles:
            raise ValueError(f"candidates must be one sequence, or one per quantile "
                             f"({quantiles}), got {len(per)}")
        out = []
        for q, c in enumerate(per):
            c = as_float_vector(c, f"candidates[{q}]" if nested else "candidates")
            if np.any(np.diff(c) <= 0):
                raise ValueError(f"candidates must be strictly increasing (as OpenDP requires), "
                                 f"got {c.tolist()}")
            out.append(c)
        return out

    @staticmethod
    def _fraction(alpha, size_limit, q: int) -> tuple[int, int]:
        if isinstance(alpha, tuple):
            if len(alpha) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(
                    v, bool) for v in alpha) or not 0 <= alpha[0] <= alpha[1] or alpha[1] < 1:
                raise ValueError(f"alphas[{q}] as a fraction must be (numerator, denominator) "
                                 f"integers with 0 <= numerator <= denominator, got {alpha!r}")
            return int(alpha[0]), int(alpha[1])
        if isinstance(alpha, bool) or not isinstance(alpha, (float, int, np.floating)) or \
                not 0.0 <= float(alpha) <= 1.0:
            raise ValueError(f"alphas[{q}] must be a level in [0, 1], got {alpha!r}")
        return alpha_fraction(float(alpha), size_limit)

    # -- the release ---------------------------------------------------------------------
    def check_release(self, s_dp) -> np.ndarray:
        """The release: one candidate value per quantile, each one of its candidates.

        Examples
        --------
        >>> from dawrap.mechanisms import Quantiles
        >>> Quantiles([0.5], [1.0, 2.0], scale=1.0).check_release(2)
        array([2.])
        """
        s = as_float_vector(s_dp, "s_dp", self.release_size)
        for q, (v, c) in enumerate(zip(s, self.candidates)):
            if not np.any(c == v):
                raise ValueError(f"s_dp[{q}] = {float(v)!r} is not one of quantile {q}'s candidates "
                                 f"{c.tolist()}: the release is the selected candidate's value")
        return s

    def scores(self, t) -> list:
        """OpenDP's integer scores of every candidate, one array per quantile, for a total
        ``t`` (:meth:`total`): the numbers the selection adds noise to, exactly.

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.mechanisms import Quantiles
        >>> mech = Quantiles([0.5], [2.0, 5.0], scale=1.0)
        >>> mech.scores(mech.total(np.array([1.0, 2.0, 3.0, 7.0])))   # |L - G|
        [[1, 2]]
        """
        t = [int(round(v)) for v in as_float_vector(t, "t", self.size)]
        n = sum(t)
        below = np.concatenate([[0], np.cumsum(t)]).astype(object)
        out = []
        for q, c in enumerate(self.candidates):
            num, den = self.fractions[q]
            limit = self.size_limit if self.size_limit is not None else U64_MAX // den
            row = []
            for j in range(len(c)):
                cell = int(self._cell[q, j])
                lt, gt = min(int(below[cell]), limit), min(n - int(below[cell + 1]), limit)
                row.append(abs((den - num) * lt - num * gt))
            out.append(row)
        return out

    def _draw(self, rng, t):
        out = np.empty(self.release_size)
        for q, (row, c, b) in enumerate(zip(self.scores(t), self.candidates, self.scale)):
            u = -np.array(row, dtype=np.float64) / b
            noise = rng.gumbel(size=u.shape) if self.noise_kind == "gumbel" \
                else rng.exponential(size=u.shape)
            out[q] = c[int(np.argmax(u + noise))]
        return out

    @property
    def privacy(self) -> dict:
        return {f"scale[{q}]": b for q, b in enumerate(self.scale)}

    @property
    def fingerprint(self) -> str:
        import json
        base = json.loads(super().fingerprint)
        base.update(candidates=[[repr(float(v)) for v in c] for c in self.candidates],
                    fractions=[list(f) for f in self.fractions], noise=self.noise_kind,
                    column=self.column, size_limit=self.size_limit)
        return json.dumps(base)

    def __repr__(self) -> str:
        levels = ", ".join(f"{a:g}" for a in self.alphas)
        return (f"Quantiles(alphas=[{levels}], noise={self.noise_kind!r}, "
                f"scale={list(self.scale)}, size={self.size})")
