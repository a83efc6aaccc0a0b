r"""The law of a mechanism's additive noise (:class:`NoiseLaw`), declared by the mechanism for
what needs more than its log density; and what the built-in noise families share: the range
of noise scales float64 can represent, the layout of their density parameters.

A mechanism that adds independent noise to each coordinate of the total,
:math:`s_{dp} = T + z`, of a registered noise family (:mod:`dawrap.mechanisms.families`),
says so in its ``noise`` attribute. The built-in families:

* ``"laplace"``: :math:`\log g(s, t) = c - \sum_j |s_j - t_j| / b_j`, on the reals;
* ``"geometric"``: the same on the integers (two-sided geometric noise,
  :math:`\alpha_j = e^{-1/b_j}`);
* ``"gaussian"``: :math:`\log g(s, t) = c - \sum_j (s_j - t_j)^2 / (2\sigma_j^2)`, on the
  reals;
* ``"discrete_gaussian"``: the same on the integers (Canonne, Kamath & Steinke 2020);

with ``scale`` the :math:`b_j` or the :math:`\sigma_j` and ``variance`` each coordinate's
noise variance. The law holds the family's name (``law.family``) and hands out the family
itself (``law.kind``, a :class:`~dawrap.mechanisms.families.NoiseFamily`), which says
everything else. The sufficient-statistic sampler reads the law (it needs the noise, not just
its density), the exact posteriors of :mod:`dawrap.reference` use it to stay exact at releases
far outside the range of the statistic (:meth:`NoiseLaw.relative_log_density`), and
``dw.sample``'s plausibility check to say when such a release changes nothing.

Examples
--------
Laplace noise of scale 2 on each of three coordinates:

>>> from dawrap.mechanisms import NoiseLaw
>>> law = NoiseLaw.of("laplace", scale=2.0, size=3)
>>> law.family, law.scale, law.variance                 # variance 2 b^2
('laplace', array([2., 2., 2.]), array([8., 8., 8.]))
>>> law.kind
LaplaceFamily('laplace')
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._checks import as_count
from .families import NoiseFamily, family_named

__all__ = ["NoiseLaw", "SMALLEST_SCALE", "LARGEST_SCALE", "LARGEST_INTEGER_SCALE",
           "usable_scale", "inverse_scale_params", "stated_budget"]

# Usable noise scales (Laplace and geometric scale sensitivity / epsilon, Gaussian sigma).
# Inside [1e-150, 1e150] every constructor's arithmetic (the scale's square and inverse, the
# log normalisers, the noise variance) stays finite and normal in float64. The integer
# mechanisms stop at 2**53 / 1000 (9.0e12): noise beyond 2**53, above which float64 no longer
# holds every integer, then has probability below e^-1000 (Geometric) or far less
# (DiscreteGaussian), and NumPy's geometric sampler behind the simulated releases saturates
# at 2**63 for larger scales.
SMALLEST_SCALE = 1e-150
LARGEST_SCALE = 1e150
LARGEST_INTEGER_SCALE = 2.0 ** 53 / 1000.0


class NoiseLaw(NamedTuple):
    r"""Independent noise of a known family added to each coordinate of the total (module
    docstring). Build it with :meth:`of`, which checks it; a mechanism holds it read-only.

    Attributes
    ----------
    family : str
        The name of a registered noise family: ``"laplace"``, ``"geometric"``,
        ``"gaussian"``, ``"discrete_gaussian"`` or a user's (:attr:`kind` is the family).
    scale : ndarray of shape (size,)
        Each coordinate's :math:`b_j` (Laplace form: :math:`P(z_j) \propto e^{-|z_j|/b_j}`)
        or :math:`\sigma_j` (Gaussian form: :math:`P(z_j) \propto e^{-z_j^2/(2\sigma_j^2)}`).
    variance : ndarray of shape (size,)
        Each coordinate's noise variance.

    Examples
    --------
    The law a built-in mechanism declares:

    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> dw.Gaussian(beta_binomial.count, sigma=3.0).noise
    NoiseLaw(family='gaussian', scale=array([3.]), variance=array([9.]))
    """

    family: str
    scale: np.ndarray
    variance: np.ndarray

    @classmethod
    def of(cls, family: str | NoiseFamily, scale, variance=None, *,
           size: int | None = None) -> "NoiseLaw":
        r"""A checked law: ``family`` a registered noise family
        (:func:`~dawrap.mechanisms.families.registered`), ``scale`` (and ``variance``)
        positive and finite, one value or one per coordinate.

        Parameters
        ----------
        family : str or NoiseFamily
            ``"laplace"``, ``"geometric"``, ``"gaussian"``, ``"discrete_gaussian"``, the
            name of a family registered by the user, or a registered family itself.
        scale : float or array_like
            :math:`b_j` or :math:`\sigma_j` (see the class docstring).
        variance : float or array_like, optional
            Each coordinate's noise variance; by default the family's, from ``scale``
            (:meth:`~dawrap.mechanisms.families.NoiseFamily.variance`): :math:`2b^2`
            (Laplace), :math:`2\alpha/(1-\alpha)^2` with :math:`\alpha = e^{-1/b}`
            (geometric), :math:`\sigma^2` (Gaussian), the exact discrete Gaussian variance
            (:mod:`dawrap.mechanisms.discrete_gaussian`).
        size : int, optional
            The number of coordinates (single values are repeated); by default the length of
            ``scale``.

        Returns
        -------
        NoiseLaw
            With read-only arrays of length ``size``.

        Examples
        --------
        >>> from dawrap.mechanisms import NoiseLaw
        >>> NoiseLaw.of("gaussian", scale=[1.0, 2.0]).variance
        array([1., 4.])
        >>> NoiseLaw.of("cauchy", scale=1.0)                    # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: noise family must be one of ['laplace', 'geometric', ...], got 'cauchy'
        """
        kind = family_named(family)
        scale = _positive_vector(scale, "noise scale", size)
        size = scale.shape[0]
        if variance is None:
            variance = kind.variance(scale)
        # A variance may be 0 to double precision (geometric noise at epsilon 1e150, discrete
        # Gaussian at sigma 1e-150: the noise is 0 with probability 1 - 1e-300 and less).
        variance = _positive_vector(variance, "noise variance", size, zero_allowed=True)
        return cls(kind.name, scale, variance)

    @property
    def kind(self) -> NoiseFamily:
        """The noise family itself (:class:`~dawrap.mechanisms.families.NoiseFamily`), found
        in the registry by :attr:`family`, its name: what the samplers and the exact
        posteriors ask.

        Examples
        --------
        >>> from dawrap.mechanisms import NoiseLaw
        >>> NoiseLaw.of("geometric", scale=2.0).kind.continuous
        LaplaceFamily('laplace')
        """
        return family_named(self.family)

    @property
    def form(self) -> str:
        """``"laplace"`` or ``"gaussian"`` for the built-in families: the name of the
        continuous family of the same form of :math:`\\log g` in :math:`s - t`, shared by a
        continuous family and its integer version.

        Examples
        --------
        >>> from dawrap.mechanisms import NoiseLaw
        >>> NoiseLaw.of("geometric", scale=2.0).form
        'laplace'
        """
        return self.kind.continuous.name

    @property
    def integer(self) -> bool:
        """Whether the noise (and so the release) takes integer values.

        Examples
        --------
        >>> from dawrap.mechanisms import NoiseLaw
        >>> NoiseLaw.of("discrete_gaussian", scale=2.0).integer
        True
        """
        return self.kind.integer

    def relative_log_density(self, s_dp, totals) -> np.ndarray:
        r""":math:`\log g(s_{dp}, t)` for each row ``t`` of ``totals``, up to a constant the
        same for every row, computed so that it stays exact however far ``s_dp`` lies
        outside the totals (there, ``|1e300 - k|`` is one float for every count ``k``).

        The family computes it
        (:meth:`~dawrap.mechanisms.families.NoiseFamily.relative_log_density`). With
        :math:`m_j` the total nearest :math:`s_j` in each coordinate, the Laplace form is
        :math:`-\sum_j |m_j - t_j| / b_j` (the term :math:`|s_j - m_j|` is the same for every
        row), the Gaussian form :math:`-\tfrac12 \sum_j (m_j - t_j)(2s_j - t_j - m_j) /
        \sigma_j^2`.

        Parameters
        ----------
        s_dp : ndarray of shape (size,)
            The release.
        totals : ndarray of shape (K, size)
            Candidate confidential totals.

        Returns
        -------
        ndarray of shape (K,)

        Examples
        --------
        Laplace noise of scale 2 at a release far above the totals 0..3:

        >>> import numpy as np
        >>> from dawrap.mechanisms import NoiseLaw
        >>> law = NoiseLaw.of("laplace", scale=2.0)
        >>> relative = law.relative_log_density(np.array([1e300]), np.arange(4.0)[:, None])
        >>> relative - relative.max()                       # as exact as at s_dp = 4
        array([-1.5, -1. , -0.5,  0. ])
        """
        s = np.asarray(s_dp, dtype=np.float64)
        t = np.asarray(totals, dtype=np.float64).reshape(-1, self.scale.shape[0])
        return self.kind.relative_log_density(s, t, 1.0 / self.scale)

    def disagreement(self, log_density, params) -> str | None:
        """Where ``log_density(s_dp, t, params)`` is not of this law's form, as a sentence
        (None where it is): its change when ``t`` moves from ``s_dp = 0`` by about one
        scale in a few coordinates, against the law's. A check that a declared law is the
        mechanism's, not a proof.

        Parameters
        ----------
        log_density : numba.njit function
            ``(s_dp, t, params) -> float``.
        params : ndarray
            Its parameters.

        Returns
        -------
        str or None

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.mechanisms import NoiseLaw
        >>> from dawrap.models import beta_binomial
        >>> mech = dw.Laplace(beta_binomial.count, epsilon=0.5)      # scale 2
        >>> NoiseLaw.of("laplace", 2.0).disagreement(mech.log_density, mech.params) is None
        True
        >>> NoiseLaw.of("gaussian", 2.0).disagreement(mech.log_density, mech.params)
        'at t - s_dp = 2 in coordinate 0 the log density changes by -1, the gaussian law says -0.5'
        """
        size = self.scale.shape[0]
        origin = np.zeros(size)
        at_origin = float(log_density(origin, origin, params))
        for j in sorted({0, size // 2, size - 1}):
            step = max(1.0, round(self.scale[j])) if self.integer else float(self.scale[j])
            t = origin.copy()
            t[j] = step
            change = float(log_density(origin, t, params)) - at_origin
            z = step / self.scale[j]
            expected = self.kind.log_shape(z)
            if not math.isclose(change, expected, rel_tol=1e-9,
                                abs_tol=1e-9 * (1.0 + abs(at_origin))):
                return (f"at t - s_dp = {step:g} in coordinate {j} the log density changes by "
                        f"{change:.6g}, the {self.family} law says {expected:.6g}")
        return None


def _positive_vector(value, name: str, size: int | None, zero_allowed: bool = False
                     ) -> np.ndarray:
    """``value`` as a read-only float64 vector of ``size`` finite values > 0 (>= 0 if
    ``zero_allowed``; one value is repeated)."""
    arr = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if size is not None:
        size = as_count(size, "size")
        if arr.shape == (1,):
            arr = np.full(size, arr[0])
    if arr.ndim != 1 or arr.shape[0] < 1 or (size is not None and arr.shape[0] != size):
        raise ValueError(f"{name} must be one value or one per coordinate"
                         f"{'' if size is None else f' ({size})'}, got {value!r}")
    if not (np.all(np.isfinite(arr)) and np.all(arr >= 0 if zero_allowed else arr > 0)):
        raise ValueError(f"{name} must be finite and {'>=' if zero_allowed else '>'} 0, "
                         f"got {value!r}")
    arr = arr.copy()
    arr.flags.writeable = False
    return arr


def usable_scale(scale: float, source: str, what: str, highest: float, mechanism: str) -> float:
    """``scale`` if it lies in the usable range, else a ValueError saying which arguments
    produced it (``source``) and the range."""
    if not SMALLEST_SCALE <= scale <= highest:  # also False for NaN
        raise ValueError(f"{source} gives {what} = {scale:g}, outside the usable range "
                         f"[{SMALLEST_SCALE:g}, {highest:g}] of {mechanism}: beyond it the "
                         f"noise cannot be represented or drawn exactly in float64")
    return scale


def inverse_scale_params(inverse_scale: float, size: int, log_normaliser: float) -> np.ndarray:
    """``[1/scale, ..., 1/scale, size * log normaliser]``: the parameters the built-in log
    densities take. The normaliser is computed once, not per record update (a log costs as
    much as the rest)."""
    return np.r_[np.full(size, inverse_scale), size * log_normaliser]


#: Significant digits a stated budget is shown with when only float rounding lies beyond them.
BUDGET_DIGITS = 12


def stated_budget(values) -> float:
    """The privacy budget of the noises whose budgets are ``values``, summed (composition),
    as it is reported: their exact float sum (:func:`math.fsum`), shown with
    :data:`BUDGET_DIGITS` significant digits when that moves it by no more than the float
    rounding of the terms (4 ulps a term: each was derived from a noise scale, and each
    derivation rounds once or twice), else unchanged. ``0.05 + 0.1`` is then ``0.15``, not
    ``0.15000000000000002``, while a budget such as ``1/3`` keeps all its digits: the
    rounding never moves a budget by more than the floats it was computed from can resolve.

    Parameters
    ----------
    values : iterable of float
        The budgets (epsilons, or rhos), each derived from the noise actually added.

    Returns
    -------
    float

    Examples
    --------
    >>> from dawrap.mechanisms.noise import stated_budget
    >>> stated_budget([0.05, 0.1]), stated_budget([1 / 3])
    (0.15, 0.3333333333333333)
    """
    values = [float(v) for v in values]
    exact = math.fsum(values)
    shown = float(f"{exact:.{BUDGET_DIGITS}g}")
    return shown if abs(shown - exact) <= 4 * len(values) * math.ulp(exact) else exact
