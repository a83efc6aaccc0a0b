r"""A release of noisy marginal tables, each table with its own noise (see
:mod:`dawrap.models.marginals`): the mechanism and the noise of one table.

Neighbouring databases are those of dawrap's other mechanisms: the same ``n`` records, one
of them replaced (n is public). A record lies in exactly one cell of each table, so replacing
it moves at most two cells of every table by one: each table has L1 sensitivity 2 and L2
sensitivity :math:`\sqrt 2`. With noise of scale ``b`` (Laplace, geometric) a table is
:math:`2/b`-DP; with Gaussian or discrete Gaussian noise of sd :math:`\sigma` it is
:math:`(\sqrt2)^2 / (2\sigma^2) = 1/\sigma^2`-zCDP (Bun & Steinke 2016; Canonne, Kamath &
Steinke 2020). Tables compose: the epsilons add, the rhos add, and an
:math:`\epsilon`-DP table counts as :math:`\epsilon^2/2`-zCDP when both kinds are present.
"""
from __future__ import annotations

import json
import math
from typing import NamedTuple

import numba
import numpy as np

import dawrap as dw

from ._shared import closure_jit

__all__ = ["Noise", "MarginalRelease", "table_statistic", "KINDS"]

#: The noise kinds, and whether each adds integers.
KINDS = {"laplace": False, "geometric": True, "gaussian": False, "discrete_gaussian": True}
#: L1 sensitivity of one table under replace-one neighbours (its L2 sensitivity is
#: sqrt(2), so a zCDP budget is 2 / (2 sigma^2)).
L1_SENSITIVITY = 2.0


class Noise(NamedTuple):
    r"""The noise added to every cell of one table.

    ``kind`` is ``"laplace"`` (density :math:`e^{-|z|/b}/2b`), ``"geometric"`` (integers,
    :math:`P(z) \propto e^{-|z|/b}`), ``"gaussian"`` (:math:`N(0, \sigma^2)`) or
    ``"discrete_gaussian"`` (integers, :math:`P(z) \propto e^{-z^2/2\sigma^2}`); ``scale``
    is ``b`` or :math:`\sigma`. Build it from the scale that was used (what OpenDP, AIM and
    MST record) or from a budget with :meth:`laplace`, :meth:`geometric`, :meth:`gaussian`,
    :meth:`discrete_gaussian`.

    Examples
    --------
    >>> from dawrap.models.marginals import Noise
    >>> Noise.laplace(epsilon=0.5)                  # scale 2 / epsilon: L1 sensitivity 2
    Noise(kind='laplace', scale=4.0, budget=0.5)
    >>> Noise.gaussian(rho=0.25).privacy()          # sigma = 1 / sqrt(rho)
    {'rho': 0.25}
    """

    kind: str
    scale: float
    #: The budget the scale was derived from (epsilon or rho), reported as given; None when
    #: the noise was described by its scale (the budget then follows from it).
    budget: float | None = None

    @classmethod
    def laplace(cls, epsilon: float) -> "Noise":
        """Laplace noise making one table ``epsilon``-DP (scale ``2 / epsilon``).

        Examples
        --------
        >>> from dawrap.models.marginals import Noise
        >>> Noise.laplace(1.0).scale
        2.0
        """
        epsilon = _positive(epsilon, "epsilon")
        return cls("laplace", L1_SENSITIVITY / epsilon, epsilon)

    @classmethod
    def geometric(cls, epsilon: float) -> "Noise":
        """Two-sided geometric noise making one table ``epsilon``-DP (scale ``2/epsilon``).

        Examples
        --------
        >>> from dawrap.models.marginals import Noise
        >>> Noise.geometric(0.5).scale
        4.0
        """
        epsilon = _positive(epsilon, "epsilon")
        return cls("geometric", L1_SENSITIVITY / epsilon, epsilon)

    @classmethod
    def gaussian(cls, rho: float) -> "Noise":
        """Gaussian noise making one table ``rho``-zCDP (sigma ``1 / sqrt(rho)``).

        Examples
        --------
        >>> from dawrap.models.marginals import Noise
        >>> Noise.gaussian(0.25).scale
        2.0
        """
        rho = _positive(rho, "rho")
        return cls("gaussian", 1.0 / math.sqrt(rho), rho)

    @classmethod
    def discrete_gaussian(cls, rho: float) -> "Noise":
        """Discrete Gaussian noise making one table ``rho``-zCDP (sigma ``1/sqrt(rho)``).

        Examples
        --------
        >>> from dawrap.models.marginals import Noise
        >>> Noise.discrete_gaussian(4.0).scale
        0.5
        """
        rho = _positive(rho, "rho")
        return cls("discrete_gaussian", 1.0 / math.sqrt(rho), rho)

    def checked(self) -> "Noise":
        """This noise, its kind and scale checked (a ValueError naming what is wrong).

        Examples
        --------
        >>> from dawrap.models.marginals import Noise
        >>> Noise("uniform", 1.0).checked()
        Traceback (most recent call last):
        ...
        ValueError: noise kind must be one of ('laplace', 'geometric', 'gaussian', 'discrete_gaussian'), got 'uniform'
        """
        if self.kind not in KINDS:
            raise ValueError(f"noise kind must be one of {tuple(KINDS)}, got {self.kind!r}")
        budget = None if self.budget is None else _positive(self.budget, "noise budget")
        return Noise(self.kind, _positive(self.scale, "noise scale"), budget)

    def privacy(self) -> dict:
        r"""The guarantee of one table with this noise (replace-one neighbours): epsilon
        :math:`= 2 / b`, or rho :math:`= (\sqrt 2)^2 / 2\sigma^2 = 1/\sigma^2`.

        Examples
        --------
        >>> from dawrap.models.marginals import Noise
        >>> Noise("geometric", 4.0).privacy(), Noise("gaussian", 2.0).privacy()
        ({'epsilon': 0.5}, {'rho': 0.25})
        """
        if self.kind in ("laplace", "geometric"):
            value = L1_SENSITIVITY / self.scale
            return {"epsilon": value if self.budget is None else self.budget}
        value = 1.0 / self.scale ** 2
        return {"rho": value if self.budget is None else self.budget}


def _positive(value, name: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {value!r}") from None
    if not 0.0 < out < math.inf:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return out


def table_statistic(levels: tuple, tables: tuple):
    """``(statistic, sizes)``: the compiled statistic writing a record's one-hot cell of each
    table in ``tables`` (attribute index tuples; each table flattened in C order over its
    attributes in the order given), declared sparse (one entry per table), and the
    tables' sizes."""
    sizes = np.array([math.prod(levels[a] for a in t) for t in tables], dtype=np.int64)
    width = max(len(t) for t in tables)
    attr = np.full((len(tables), width), -1, dtype=np.int64)
    stride = np.zeros((len(tables), width), dtype=np.int64)
    offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    length = np.array([len(t) for t in tables], dtype=np.int64)
    for m, t in enumerate(tables):
        attr[m, :len(t)] = t
        for p in range(len(t)):
            stride[m, p] = math.prod(levels[a] for a in t[p + 1:])
    count = len(tables)
    jit = closure_jit(attr, stride, offset, length)

    @jit
    def entries(x_i, index, value):
        for m in range(count):
            j = offset[m]
            for p in range(length[m]):
                j += int(x_i[attr[m, p]]) * stride[m, p]
            index[m] = j
            value[m] = 1.0
        return count

    @jit
    def statistic(x_i, out):
        out[:] = 0.0
        for m in range(count):
            j = offset[m]
            for p in range(length[m]):
                j += int(x_i[attr[m, p]]) * stride[m, p]
            out[j] += 1.0

    dw.declare_sparse(statistic, entries, nnz=count)
    return statistic, tuple(int(s) for s in sizes)


# params = [1/scale per cell, form per cell (0: |z|/b, 1: z^2/2 sigma^2), log normaliser]
@numba.njit(nogil=True, cache=True)
def mixed_coordinate(s_j, t_j, j, params):
    """One cell's log density, without its constant: Laplace form or Gaussian form."""
    size = (params.shape[0] - 1) // 2
    z = (s_j - t_j) * params[j]
    if params[size + j] == 0.0:
        return -abs(z)
    return -0.5 * z * z


@numba.njit(nogil=True, cache=True)
def mixed_log_density(s_dp, t, params):
    """The release's log density: the sum of the cells' terms and the normaliser."""
    out = params[-1]
    for j in range(s_dp.shape[0]):
        out += mixed_coordinate(s_dp[j], t[j], j, params)
    return out


def _part(statistic, noise: Noise, size: int) -> dw.Mechanism:
    """One table's mechanism (its density's parameters, its noise draws, its secure path)."""
    if noise.kind == "laplace":
        return dw.Laplace(statistic, epsilon=L1_SENSITIVITY / noise.scale,
                          sensitivity=L1_SENSITIVITY, size=size)
    if noise.kind == "geometric":
        return dw.Geometric.from_scale(statistic, scale=noise.scale, sensitivity=L1_SENSITIVITY,
                                       size=size, contribution=dw.Sparse(cells=1))
    if noise.kind == "gaussian":
        return dw.Gaussian(statistic, sigma=noise.scale, size=size)
    return dw.DiscreteGaussian(statistic, sigma=noise.scale, size=size,
                               contribution=dw.Sparse(cells=1))


class MarginalRelease(dw.Mechanism):
    """Marginal tables of categorical records, each with its own noise (module docstring);
    built by :func:`dawrap.models.marginals.mechanism`.

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> mech = marginals.laplace({"a": 2, "b": 3}, [("a",), ("a", "b")], epsilon=1.0)
    >>> mech.sizes, mech.size, mech.privacy
    ((2, 6), 8, {'epsilon': 2.0})
    """

    def __init__(self, levels: tuple, tables: tuple, noises: tuple, attributes: tuple):
        self.levels, self.tables, self.attributes = levels, tables, attributes
        self.noises = tuple(n.checked() for n in noises)
        statistic, self.sizes = table_statistic(levels, tables)
        parts = []
        for m, (table, noise, size) in enumerate(zip(tables, self.noises, self.sizes)):
            one, _ = table_statistic(levels, (table,))
            parts.append(_part(one, noise, size))
        self._parts = tuple(parts)
        inverse = np.concatenate([p.params[:-1] for p in parts])
        form = np.concatenate([np.full(s, 0.0 if n.kind in ("laplace", "geometric") else 1.0)
                               for n, s in zip(self.noises, self.sizes)])
        pure = all(n.kind in ("laplace", "geometric") for n in self.noises)
        epsilon = sum(n.privacy().get("epsilon", 0.0) for n in self.noises)
        super().__init__(statistic, mixed_log_density, size=sum(self.sizes),
                         params=np.r_[inverse, form, sum(p.params[-1] for p in parts)],
                         draw_release=self._draw, epsilon=epsilon if pure else None,
                         name="MarginalRelease", coordinate_log_density=mixed_coordinate,
                         noise_variance=np.concatenate([p.noise_variance() for p in parts]))
        self.integer_statistic = all(KINDS[n.kind] for n in self.noises)
        self._integer = np.concatenate([np.full(s, KINDS[n.kind])
                                        for n, s in zip(self.noises, self.sizes)])

    @property
    def fingerprint(self) -> str:
        # the tables too: two releases of the same sizes and noise are different mechanisms
        base = json.loads(super().fingerprint)
        base.update(levels=list(self.levels), tables=[list(t) for t in self.tables])
        return json.dumps(base)

    def _draw(self, rng, t):
        bounds = np.cumsum((0,) + self.sizes)
        return np.concatenate([p.release_given_total(rng, t[a:b]) for p, a, b in
                               zip(self._parts, bounds, bounds[1:])])

    @property
    def privacy(self) -> dict:
        eps = sum(n.privacy().get("epsilon", 0.0) for n in self.noises)
        rho = sum(n.privacy().get("rho", 0.0) for n in self.noises)
        out = {}
        if eps > 0:
            out["epsilon"] = eps
        if rho > 0:
            out["rho"] = rho
        if eps > 0 and rho > 0:  # pure epsilon-DP tables are (eps^2 / 2)-zCDP
            out["rho_total"] = rho + sum(n.privacy().get("epsilon", 0.0) ** 2 / 2.0
                                         for n in self.noises)
        return out

    def check_release(self, s_dp) -> np.ndarray:
        s = super().check_release(s_dp)
        if not np.all(s[self._integer] == np.round(s[self._integer])):
            bad = int(np.flatnonzero(self._integer & (s != np.round(s)))[0])
            raise ValueError(f"s_dp[{bad}] = {float(s[bad])!r} must be an integer: its table has "
                             f"integer noise ({self.noises[self.table_of(bad)].kind})")
        return s

    def table_of(self, j: int) -> int:
        """The table the release's coordinate ``j`` belongs to.

        Examples
        --------
        >>> from dawrap.models import marginals
        >>> mech = marginals.laplace([2, 3], [(0,), (0, 1)], epsilon=1.0)
        >>> mech.table_of(1), mech.table_of(2)
        (0, 1)
        """
        return int(np.searchsorted(np.cumsum(self.sizes), j, side="right"))

    def split(self, s_dp) -> list:
        """The release ``s_dp`` cut into its tables, each shaped by its attributes' levels.

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.models import marginals
        >>> mech = marginals.laplace([2, 3], [(0,), (0, 1)], epsilon=1.0)
        >>> [t.shape for t in mech.split(np.arange(8.0))]
        [(2,), (2, 3)]
        """
        s = np.asarray(s_dp, dtype=np.float64).reshape(self.size)
        bounds = np.cumsum((0,) + self.sizes)
        return [s[a:b].reshape([self.levels[i] for i in t])
                for t, a, b in zip(self.tables, bounds, bounds[1:])]

    def check_records(self, x, name: str = "x") -> np.ndarray:
        """Records as a float array ``(n, attributes)``, every level a whole number inside
        its attribute's range (a ValueError naming ``name``, the row and the attribute).

        Parameters
        ----------
        x : array_like of shape (n, number of attributes)
            Records of level codes.
        name : str
            What the error calls ``x``.

        Returns
        -------
        ndarray of shape (n, number of attributes)

        Examples
        --------
        >>> from dawrap.models import marginals
        >>> mech = marginals.laplace({"a": 2, "b": 3}, [("a", "b")], epsilon=1.0)
        >>> mech.check_records([[0, 2], [1, 3]])
        Traceback (most recent call last):
        ...
        ValueError: x[1, 1] = 3.0 is not a level of attribute 'b' (0..2)
        """
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != len(self.levels):
            raise ValueError(f"{name} must have shape (n, {len(self.levels)}): one level code "
                             f"per attribute {self.attributes}, got shape {arr.shape}")
        bad = ~((arr >= 0) & (arr < np.array(self.levels)) & (arr == np.floor(arr)))
        if np.any(bad):
            i, a = (int(v[0]) for v in np.nonzero(bad))
            raise ValueError(f"{name}[{i}, {a}] = {float(arr[i, a])!r} is not a level of attribute "
                             f"{self.attributes[a]!r} (0..{self.levels[a] - 1})")
        return arr

    def total(self, x, s_dp=None) -> np.ndarray:
        """The tables' true counts (the release before noise) of the records ``x``.

        Parameters
        ----------
        x : array_like of shape (n, number of attributes)
            Records of level codes (checked: :meth:`check_records`).
        s_dp : ignored
            (The statistic does not depend on the release.)

        Returns
        -------
        ndarray of shape (size,)

        Examples
        --------
        >>> from dawrap.models import marginals
        >>> marginals.laplace({"a": 2, "b": 3}, [("b",)], epsilon=1.0).total([[0, 2], [1, 2]])
        array([0., 0., 2.])
        """
        return super().total(self.check_records(x), s_dp)

    def release(self, x, seed=None, *, secure: bool = False) -> np.ndarray:
        """A release of the records ``x``: simulated (``seed``) or, with ``secure=True`` and
        integer noise on every table, for publication (each table through its own
        :class:`dawrap.Geometric` or :class:`dawrap.DiscreteGaussian` with a one-hot
        contribution domain: records outside the levels count as nothing).

        Parameters
        ----------
        x : array_like of shape (n, number of attributes)
            The confidential records.
        seed : int, numpy.random.Generator or None
            The simulated release's randomness (refused with ``secure=True``).
        secure : bool
            Publish with exact integer noise from the operating system's secure source.

        Returns
        -------
        ndarray of shape (size,)

        Examples
        --------
        >>> from dawrap.models import marginals
        >>> mech = marginals.gaussian({"a": 2, "b": 3}, [("a",)], rho=1e6)   # sigma 0.001
        >>> mech.release([[0, 2], [1, 2], [1, 0]], seed=1).round(2)
        array([1., 2.])
        """
        if not secure:
            return super().release(x, seed)
        if seed is not None:
            raise ValueError("secure=True draws from the operating system's cryptographic "
                             "source; a seed would make the noise predictable")
        floating = [n.kind for n in self.noises if not KINDS[n.kind]]
        if floating:
            raise ValueError(f"secure=True needs integer noise on every table (geometric or "
                             f"discrete_gaussian): floating-point {floating[0]} noise leaks "
                             f"(Mironov 2012)")
        return np.concatenate([p.release(x, secure=True) for p in self._parts])

    def __repr__(self) -> str:
        names = ["x".join(self.attributes[a] for a in t) for t in self.tables]
        args = ", ".join(f"{k}={v:g}" for k, v in self.privacy.items())
        return f"MarginalRelease({len(self.tables)} tables: {', '.join(names[:4])}" \
               f"{', ...' if len(names) > 4 else ''}; {args}, size={self.size})"
