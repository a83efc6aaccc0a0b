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
import numbers
import types

import numba
import numpy as np

import dawrap as dw
from dawrap.extend import read_only
from dawrap.extend import stated_budget

from .._shared import closure_jit

__all__ = ["Noise", "MarginalRelease", "table_statistic", "KINDS"]

#: The noise kinds, and whether each adds integers.
KINDS = {"laplace": False, "geometric": True, "gaussian": False, "discrete_gaussian": True}
#: The kinds whose guarantee is pure epsilon-DP (the others' is rho-zCDP).
PURE_KINDS = ("laplace", "geometric")
#: L1 sensitivity of one table under replace-one neighbours (its L2 sensitivity is
#: sqrt(2), so a zCDP budget is 2 / (2 sigma^2)).
L1_SENSITIVITY = 2.0
#: How closely a budget given to :class:`Noise` must agree with the one its scale gives
#: (relative): float rounding of the derivation passes, another budget does not.
BUDGET_TOLERANCE = 1e-9


class Noise:
    r"""The noise added to every cell of one table.

    ``kind`` is ``"laplace"`` (density :math:`e^{-|z|/b}/2b`), ``"geometric"`` (integers,
    :math:`P(z) \propto e^{-|z|/b}`), ``"gaussian"`` (:math:`N(0, \sigma^2)`) or
    ``"discrete_gaussian"`` (integers, :math:`P(z) \propto e^{-z^2/2\sigma^2}`); ``scale``
    is ``b`` or :math:`\sigma`. Build it from the scale that was used (what OpenDP, AIM and
    MST record) or from a budget with :meth:`laplace`, :meth:`geometric`, :meth:`gaussian`,
    :meth:`discrete_gaussian`.

    The guarantee is a function of the scale alone: :attr:`budget` is derived from it, never
    stored beside it, so no budget can be stated that the noise does not give. A ``budget``
    given to the constructor is only checked against the scale (a ValueError naming both
    unless they agree to :data:`BUDGET_TOLERANCE`). A noise is immutable (its kind and scale
    cannot be set once built); equal noises are those of the same kind and scale.

    Parameters
    ----------
    kind : str
        One of :data:`KINDS`.
    scale : float
        ``b`` or :math:`\sigma`, finite and > 0.
    budget : float, optional
        The epsilon (Laplace, geometric) or rho (Gaussian, discrete Gaussian) the scale is
        meant to give: checked, not stored.

    Examples
    --------
    >>> from dawrap.models.marginals import Noise
    >>> Noise.laplace(epsilon=0.5)                  # scale 2 / epsilon: L1 sensitivity 2
    Noise(kind='laplace', scale=4.0, budget=0.5)
    >>> Noise.gaussian(rho=0.25).privacy()          # sigma = 1 / sqrt(rho)
    {'rho': 0.25}
    >>> Noise("discrete_gaussian", 0.001, budget=0.01)      # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Noise('discrete_gaussian', scale=0.001, budget=0.01): ... gives rho = 1 / scale^2 = 1000000.0, not 0.01...
    """

    # No __slots__: a run's fingerprint (dawrap.runner.fingerprint) digests a dawrap object
    # by its __dict__, and a checkpointed run must stay verifiable.

    def __init__(self, kind: str, scale: float, budget: float | None = None):
        if not isinstance(kind, str) or kind not in KINDS:
            raise ValueError(f"noise kind must be one of {tuple(KINDS)}, got {kind!r}")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "scale", _positive(scale, "noise scale"))
        if budget is not None:
            stated = _positive(budget, "noise budget")
            if not math.isclose(stated, self._exact_budget(), rel_tol=BUDGET_TOLERANCE):
                name, formula = self._formula()
                raise ValueError(
                    f"Noise({kind!r}, scale={scale!r}, budget={budget!r}): {kind} noise of "
                    f"scale {self.scale!r} gives {name} = {formula} = {self._exact_budget()!r}, "
                    f"not {stated!r} (replace-one neighbours, L1 sensitivity 2, L2 sqrt(2)): "
                    f"give the scale alone, or build the noise from its budget with "
                    f"Noise.{kind}({name}=...)")

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"Noise objects are immutable: {name!r} cannot be set (the "
                             f"guarantee follows from the kind and the scale); build a new "
                             f"Noise instead")

    def __delattr__(self, name: str) -> None:
        self.__setattr__(name, None)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Noise):
            return NotImplemented
        return (self.kind, self.scale) == (other.kind, other.scale)

    def __hash__(self) -> int:
        return hash((Noise, self.kind, self.scale))

    def __reduce__(self):
        return Noise, (self.kind, self.scale)

    def __repr__(self) -> str:
        return f"Noise(kind={self.kind!r}, scale={self.scale!r}, budget={self.budget!r})"

    @classmethod
    def _of_budget(cls, kind: str, budget: float, name: str) -> "Noise":
        """Noise of ``kind`` making one table ``budget``-DP (``name`` epsilon: scale ``2 /
        epsilon``) or -zCDP (``name`` rho: sigma ``1 / sqrt(rho)``)."""
        value = _positive(budget, name)
        return cls(kind, L1_SENSITIVITY / value if kind in PURE_KINDS else
                   1.0 / math.sqrt(value))

    @classmethod
    def laplace(cls, epsilon: float) -> "Noise":
        """Laplace noise making one table ``epsilon``-DP (scale ``2 / epsilon``).

        Examples
        --------
        >>> from dawrap.models.marginals import Noise
        >>> Noise.laplace(1.0).scale
        2.0
        """
        return cls._of_budget("laplace", epsilon, "epsilon")

    @classmethod
    def geometric(cls, epsilon: float) -> "Noise":
        """Two-sided geometric noise making one table ``epsilon``-DP (scale ``2/epsilon``):
        integers, the same law as Laplace noise on the lattice.

        Examples
        --------
        >>> Noise.geometric(0.5) == Noise("geometric", 4.0)
        True
        """
        return cls._of_budget("geometric", epsilon, "epsilon")

    @classmethod
    def gaussian(cls, rho: float) -> "Noise":
        """Gaussian noise making one table ``rho``-zCDP (sigma ``1 / sqrt(rho)``).

        Examples
        --------
        >>> Noise.gaussian(rho=0.25)
        Noise(kind='gaussian', scale=2.0, budget=0.25)
        """
        return cls._of_budget("gaussian", rho, "rho")

    @classmethod
    def discrete_gaussian(cls, rho: float) -> "Noise":
        """Discrete Gaussian noise making one table ``rho``-zCDP (sigma ``1/sqrt(rho)``):
        integers.

        Examples
        --------
        >>> [Noise.discrete_gaussian(rho).scale for rho in (1.0, 4.0)]
        [1.0, 0.5]
        """
        return cls._of_budget("discrete_gaussian", rho, "rho")

    @property
    def pure(self) -> bool:
        """Whether the guarantee is pure epsilon-DP (Laplace, geometric), else rho-zCDP."""
        return self.kind in PURE_KINDS

    def _formula(self) -> tuple[str, str]:
        return ("epsilon", "2 / scale") if self.pure else ("rho", "1 / scale^2")

    def _exact_budget(self) -> float:
        """epsilon = 2 / b, or rho = (sqrt 2)^2 / (2 sigma^2) = 1 / sigma^2: from the scale."""
        return L1_SENSITIVITY / self.scale if self.pure else 1.0 / self.scale ** 2

    @property
    def budget(self) -> float:
        """The guarantee of one table with this noise, derived from the scale: epsilon for
        Laplace and geometric noise, rho for the Gaussian kinds (float rounding of the
        derivation removed, :func:`dawrap.mechanisms.noise.stated_budget`).

        Examples
        --------
        >>> from dawrap.models.marginals import Noise
        >>> Noise("geometric", 4.0).budget, Noise.gaussian(0.1).budget
        (0.5, 0.1)
        """
        return stated_budget([self._exact_budget()])

    def privacy(self) -> dict:
        r"""The guarantee of one table with this noise (replace-one neighbours): epsilon
        :math:`= 2 / b`, or rho :math:`= (\sqrt 2)^2 / 2\sigma^2 = 1/\sigma^2`.

        Examples
        --------
        >>> from dawrap.models.marginals import Noise
        >>> Noise("geometric", 4.0).privacy(), Noise("gaussian", 2.0).privacy()
        ({'epsilon': 0.5}, {'rho': 0.25})
        """
        return {self._formula()[0]: self.budget}


def _positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    out = float(value)
    if not 0.0 < out < math.inf:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return out


def table_statistic(levels: tuple, tables: tuple):
    """``(statistic, sizes)``: the compiled statistic writing a record's one-hot cell of each
    table in ``tables`` (attribute index tuples; each table flattened in C order over its
    attributes in the order given), declared sparse (one entry per table), and the
    tables' sizes.

    A record of another length, or with a code outside ``[0, levels[a])`` (negative, too
    large, NaN), contributes nothing: it can never be counted in a cell of another table or
    beyond its own. (A fractional code inside the range is read as its integer part here;
    :meth:`MarginalRelease.check_records` refuses it wherever records enter a release, and
    records the sampler imputes are the model's, always whole numbers.) The check is two
    comparisons per attribute without branches, and a valid record's cells are those it
    always had."""
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
    upper = np.array(levels, dtype=np.float64)
    attributes = len(levels)
    jit = closure_jit(attr, stride, offset, length, upper)

    @numba.njit(nogil=True, cache=True, inline="always")  # upper: one float an attribute
    def in_range(x_i):
        # every attribute, not only the tables': a record is counted in all its tables or
        # in none (NaN fails the comparisons too). Without branches, inlined: about a
        # nanosecond a record update (an integrality test here would cost five times more)
        if x_i.shape[0] != attributes:
            return False
        ok = True
        for a in range(attributes):
            v = x_i[a]
            ok &= (0.0 <= v) & (v < upper[a])
        return ok

    @jit
    def entries(x_i, index, value):
        if not in_range(x_i):
            return 0
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
        if not in_range(x_i):
            return
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


def _table_budget(part: dw.Mechanism) -> float:
    r"""One table's epsilon (Laplace, geometric: :math:`2/b`) or rho (Gaussian, discrete
    Gaussian: :math:`1/\sigma^2`), from the scale of the noise its mechanism draws."""
    scale = float(part.noise.scale[0])
    if part.noise.family in PURE_KINDS:
        return L1_SENSITIVITY / scale
    return 1.0 / scale ** 2


def _composed(parts: tuple, noises: tuple) -> types.MappingProxyType:
    """The guarantee of the tables together (:attr:`MarginalRelease.privacy`)."""
    epsilons = [_table_budget(p) for p, n in zip(parts, noises) if n.pure]
    rhos = [_table_budget(p) for p, n in zip(parts, noises) if not n.pure]
    out = {}
    if epsilons:
        out["epsilon"] = stated_budget(epsilons)
    if rhos:
        out["rho"] = stated_budget(rhos)
    if epsilons and rhos:  # pure epsilon-DP tables are (eps^2 / 2)-zCDP
        out["rho_total"] = stated_budget(rhos + [e * e / 2.0 for e in epsilons])
    return types.MappingProxyType(out)


class MarginalRelease(dw.Mechanism):
    """Marginal tables of categorical records, each with its own noise (module docstring);
    built by :func:`dawrap.models.marginals.mechanism`. Records are checked
    (:meth:`check_records`) wherever the release or its total is computed from them.

    Examples
    --------
    >>> from dawrap.models import marginals
    >>> mech = marginals.laplace({"a": 2, "b": 3}, [("a",), ("a", "b")], epsilon=1.0)
    >>> mech.sizes, mech.size, mech.privacy
    ((2, 6), 8, {'epsilon': 2.0})
    >>> mech.total([[0, 2], [1, 2]])                 # the tables' true counts
    array([1., 1., 0., 0., 1., 0., 0., 1.])
    """

    def __init__(self, levels: tuple, tables: tuple, noises: tuple, attributes: tuple):
        self.levels, self.tables, self.attributes = levels, tables, attributes
        noises = tuple(noises)
        if len(noises) != len(tables) or not all(isinstance(n, Noise) for n in noises):
            raise TypeError(f"MarginalRelease: noises must hold one Noise per table "
                            f"({len(tables)}), got {noises!r}")
        self.noises = noises
        statistic, self.sizes = table_statistic(levels, tables)
        parts = []
        for m, (table, noise, size) in enumerate(zip(tables, self.noises, self.sizes)):
            one, _ = table_statistic(levels, (table,))
            parts.append(_part(one, noise, size))
        self._parts = tuple(parts)
        self._privacy = _composed(parts, self.noises)
        inverse = np.concatenate([p.params[:-1] for p in parts])
        form = np.concatenate([np.full(s, 0.0 if n.pure else 1.0)
                               for n, s in zip(self.noises, self.sizes)])
        pure = all(n.pure for n in self.noises)
        # the exact sum (privacy shows it with float rounding removed)
        epsilon = math.fsum(_table_budget(p) for p in parts) if pure else None
        super().__init__(statistic, mixed_log_density, size=sum(self.sizes),
                         params=np.r_[inverse, form, sum(p.params[-1] for p in parts)],
                         draw_release=self._draw, epsilon=epsilon,
                         name="MarginalRelease", coordinate_log_density=mixed_coordinate,
                         noise_variance=np.concatenate([p.noise_variance() for p in parts]))
        self.integer_statistic = all(KINDS[n.kind] for n in self.noises)
        self._integer = read_only(np.concatenate([np.full(s, KINDS[n.kind])
                                                  for n, s in zip(self.noises, self.sizes)]))

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
        r"""The release's guarantee under replace-one neighbours, computed when it was built
        from the noise each table's mechanism draws: ``epsilon``, the sum over the Laplace
        and geometric tables of :math:`2/b`; ``rho``, the sum over the Gaussian ones of
        :math:`1/\sigma^2`; with both, ``rho_total``, the zCDP of the whole (an
        :math:`\epsilon`-DP table is :math:`\epsilon^2/2`-zCDP). The sums are shown with
        their float rounding removed (:func:`dawrap.mechanisms.noise.stated_budget`: 0.05 +
        0.1 is 0.15); :attr:`epsilon` keeps the exact float sum.

        Examples
        --------
        >>> from dawrap.models import marginals
        >>> marginals.laplace([2, 2], [(0,), (1,)], epsilon=[0.05, 0.1]).privacy
        {'epsilon': 0.15}
        """
        return dict(self._privacy)

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
        # the base's total (its docstring) of the records checked (the class docstring)
        return super().total(self.check_records(x), s_dp)

    def release(self, x, seed=None, *, secure: bool = False) -> np.ndarray:
        """A release of the records ``x``: simulated (``seed``) or, with ``secure=True`` and
        integer noise on every table, for publication (each table through its own
        :class:`dawrap.Geometric` or :class:`dawrap.DiscreteGaussian` with a one-hot
        contribution domain).

        Either way the records are checked first (:meth:`check_records`): a record that is
        not one level code per attribute, each a whole number in its attribute's range, is
        refused with a ValueError naming its row and attribute, before any noise is drawn
        and before anything is released, so that no table counts it in a wrong cell. (The
        error is the curator's, who holds the records; it is not part of any release.)

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
        >>> marginals.geometric({"a": 2, "b": 3}, [("a",)], 1.0).release([[0, 3]], secure=True)
        Traceback (most recent call last):
        ...
        ValueError: x[0, 1] = 3.0 is not a level of attribute 'b' (0..2)
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
        x = self.check_records(x)
        return np.concatenate([p.release(x, secure=True) for p in self._parts])

    def __repr__(self) -> str:
        names = ["x".join(self.attributes[a] for a in t) for t in self.tables]
        args = ", ".join(f"{k}={v:g}" for k, v in self.privacy.items())
        return f"MarginalRelease({len(self.tables)} tables: {', '.join(names[:4])}" \
               f"{', ...' if len(names) > 4 else ''}; {args}, size={self.size})"
