r"""Means released as a noisy clamped sum over a noisy count, as OpenDP's ``.dp.mean``
releases them: :class:`Means`.

For one mean of a column clamped to :math:`[L, U]`, with :math:`S = \sum_i
\min(\max(x_i, L), U)` and :math:`N` the number of records, OpenDP adds Laplace-form noise
to each (two-sided geometric on integers, of scales :math:`b_S` and :math:`b_N`), clamps the
noisy count at zero (it is unsigned) and releases the ratio
:math:`r = S' / N'` (a double-precision division). Given :math:`(S, N)` a finite :math:`r`
arises from every noisy count :math:`m \ge 1` and the noisy sum :math:`S' = r m`, so

.. math:: P(r \mid S, N) = \sum_{m \ge 1} P_N(m - N)\, p_S(r m - S)\, J_m,

with :math:`P_N` the count noise's probability, :math:`p_S` the sum noise's (a
probability on the integers, where only the integer :math:`S'` whose quotient by
:math:`m` rounds to :math:`r` counts, and :math:`J_m = 1`; a density on the reals, with
the Jacobian :math:`J_m = m`). The sum is taken over the noisy counts within 40 count
scales of :math:`N`: the noisy count lies there with probability :math:`1 - e^{-40}`, so
the likelihood is the one of a release whose count noise is that wide at most, and one
evaluation costs :math:`O(b_N)`. :math:`N` is the model's ``n``: it must be the number of
records the mean was computed over (a release no noisy count in that window explains has
zero density, and the run refuses it). The statistic is record additive (each record adds its clamped value and
1), the density is not separable, and the release is not the statistic plus noise
(``additive = False``): the record sampler runs it exactly.

A noisy count of zero releases :math:`\pm\infty` (or NaN): such a release is refused.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from .._checks import as_float_vector, as_positive_float
from .base import Mechanism

__all__ = ["Means"]

#: Count scales either side of the count within which the sum over noisy counts is taken
#: (the noisy count lies beyond with probability e^-40).
REACH = 40.0


def _compiled(columns, lower, upper):
    means = columns.shape[0]

    @numba.njit(nogil=True, cache=True)
    def statistic(x_i, out):
        for q in range(means):
            out[2 * q] = min(max(x_i[columns[q]], lower[q]), upper[q])
            out[2 * q + 1] = 1.0

    return statistic


@numba.njit(nogil=True, cache=True)
def _geometric_log_pmf(k, scale):
    # the two-sided geometric: P(k) = tanh(1 / 2b) e^{-|k| / b}
    return math.log(math.tanh(0.5 / scale)) - abs(k) / scale


@numba.njit(nogil=True, cache=True)
def means_log_density(s_dp, t, params):
    """``params``: per mean, the sum's scale, the count's scale, 1 for an integer sum."""
    out = 0.0
    for q in range(s_dp.shape[0]):
        r, total, count = s_dp[q], t[2 * q], t[2 * q + 1]
        b_sum, b_count, integer = params[3 * q], params[3 * q + 1], params[3 * q + 2]
        first = max(1.0, math.floor(count - REACH * b_count))
        last = math.ceil(count + REACH * b_count)
        top, terms = -np.inf, 0.0
        m = first
        while m <= last:                     # log-sum-exp in one pass
            term = _geometric_log_pmf(m - count, b_count)
            if integer == 1.0:
                noisy = float(round(r * m))
                if noisy / m != r:           # no integer sum over m gives r
                    m += 1.0
                    continue
                term += _geometric_log_pmf(noisy - total, b_sum)
            else:
                term += math.log(m) - math.log(2.0 * b_sum) - abs(r * m - total) / b_sum
            if term > top:
                terms = terms * math.exp(top - term) + 1.0
                top = term
            else:
                terms += math.exp(term - top)
            m += 1.0
        if terms == 0.0:
            return -np.inf
        out += top + math.log(terms)
    return out


class Means(Mechanism):
    r"""Means of columns, each released as a noisy clamped sum over a noisy count
    (module docstring): OpenDP's ``.dp.mean``, read from a query by
    :func:`dawrap.opendp.from_query`.

    Parameters
    ----------
    columns : sequence of int
        Each mean's element of a record.
    bounds : sequence of (float, float)
        Each mean's clamping bounds.
    sum_scale, count_scale : sequence of float
        The noise scales of each mean's sum and count.
    integer_sum : sequence of bool
        Whether each sum's noise is on the integers (an integer column) or the reals.

    Examples
    --------
    The mean of 0/1 records, 30 ones in 100, with the sum's and the count's noise of scale 2:

    >>> import numpy as np
    >>> from dawrap.mechanisms import Means
    >>> mech = Means([0], [(0.0, 1.0)], sum_scale=[2.0], count_scale=[2.0], integer_sum=[True])
    >>> t = mech.total(np.r_[np.ones(30), np.zeros(70)])
    >>> t
    array([ 30., 100.])
    >>> round(float(np.exp(mech.log_g([0.3], t))), 4)      # S' = 30, N' = 100, and more
    0.0602
    """

    additive = False

    def __init__(self, columns, bounds, sum_scale, count_scale, integer_sum):
        columns = list(columns)
        means = len(columns)
        if means == 0 or any(isinstance(c, bool) or not isinstance(c, (int, np.integer))
                             or c < 0 for c in columns):
            raise ValueError(f"columns must be non-negative record indices, one per mean, got "
                             f"{columns!r}")
        bounds = [tuple(float(v) for v in b) for b in bounds]
        if len(bounds) != means or any(len(b) != 2 or not b[0] < b[1] for b in bounds):
            raise ValueError(f"bounds must hold one (lower, upper) with lower < upper per "
                             f"mean, got {bounds!r}")
        sums = as_float_vector(sum_scale, "sum_scale", means)
        counts = as_float_vector(count_scale, "count_scale", means)
        for b in (*sums, *counts):
            as_positive_float(float(b), "a noise scale")
        integer = [bool(v) for v in integer_sum]
        if len(integer) != means:
            raise ValueError(f"integer_sum must hold one flag per mean, got {integer_sum!r}")
        params = np.array([[s, c, 1.0 if i else 0.0] for s, c, i in zip(sums, counts, integer)]
                          ).ravel()
        statistic = _compiled(np.array([int(c) for c in columns], dtype=np.int64),
                              np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds]))
        super().__init__(statistic, means_log_density, size=2 * means, params=params,
                         name="Means", draw_release=self._draw)
        self.release_size = means
        self.columns, self.bounds = tuple(int(c) for c in columns), tuple(bounds)
        self.sum_scale, self.count_scale = tuple(map(float, sums)), tuple(map(float, counts))
        self.integer_sum = tuple(integer)

    def check_release(self, s_dp) -> np.ndarray:
        """The release: one finite mean per mean (a noisy count of zero, which releases an
        infinite or undefined mean, is not represented).

        Examples
        --------
        >>> from dawrap.mechanisms import Means
        >>> Means([0], [(0, 1)], [1.0], [1.0], [True]).check_release(0.25)
        array([0.25])
        """
        return as_float_vector(s_dp, "s_dp", self.release_size)

    def _draw(self, rng, t):
        out = np.empty(self.release_size)
        for q in range(self.release_size):
            total, count = t[2 * q], t[2 * q + 1]
            noisy = [total + self._noise(rng, self.sum_scale[q], self.integer_sum[q]),
                     max(count + self._noise(rng, self.count_scale[q], True), 0.0)]
            with np.errstate(divide="ignore", invalid="ignore"):
                out[q] = np.float64(noisy[0]) / np.float64(noisy[1])
        return out

    @staticmethod
    def _noise(rng, scale: float, integer: bool) -> float:
        if not integer:
            return float(rng.laplace(0.0, scale))
        p = -math.expm1(-1.0 / scale)
        return float(rng.geometric(p) - rng.geometric(p))

    @property
    def privacy(self) -> dict:
        out = {}
        for q in range(self.release_size):
            out[f"sum_scale[{q}]"] = self.sum_scale[q]
            out[f"count_scale[{q}]"] = self.count_scale[q]
        return out

    @property
    def fingerprint(self) -> str:
        import json
        base = json.loads(super().fingerprint)
        base.update(columns=list(self.columns), bounds=[list(map(repr, b)) for b in self.bounds],
                    integer_sum=list(self.integer_sum))
        return json.dumps(base)

    def __repr__(self) -> str:
        return (f"Means(columns={list(self.columns)}, bounds={list(self.bounds)}, "
                f"sum_scale={list(self.sum_scale)}, count_scale={list(self.count_scale)})")
