r"""Record-additive privacy mechanisms.

A mechanism is record additive (Ju et al. 2022, Assumption 2) when its density factorises as

.. math:: \eta(s_{dp} \mid x) = g\big(s_{dp},\ \textstyle\sum_{i=1}^n t(x_i, s_{dp})\big),

so replacing one record changes the sum ``T`` in O(1) and the sampler's acceptance ratio
``g(s_dp, T*) / g(s_dp, T)`` costs O(1). Every mechanism here is described by

* ``statistic``: a ``numba.njit`` function ``(x_i, out)`` (or ``(x_i, s_dp, out)`` when the
  contribution depends on the release) writing the record's contribution ``t(x_i)``;
* ``log_density``: a ``numba.njit`` function ``(s_dp, t, params) -> float`` returning
  ``log g(s_dp, t)``, normalised, evaluated in log space;
* ``params``: the float64 array handed to ``log_density`` (inverse scales and the log
  normaliser, for the built-in ones), so that changing epsilon recompiles nothing.

Releases made with ``release`` use NumPy's floating-point samplers: they are for simulations and
demos, not for publishing real data (floating-point Laplace noise leaks, Mironov 2012).
"""
from __future__ import annotations

import functools
import json
import math

import numba
import numpy as np

from ._checks import as_count, as_float_vector, as_positive_float, n_positional, require_njit
from .recipe import reduce_by_recipe

__all__ = ["Mechanism", "Laplace", "Gaussian", "Geometric", "DiscreteGaussian"]


# The built-in densities take ``params = [1/scale_1, ..., 1/scale_m, log normaliser]``: the
# normaliser is computed once, not per record update (a log costs as much as the rest).


@numba.njit(nogil=True, cache=True)
def _laplace_log_density(s_dp, t, params):
    out = params[-1]
    for j in range(s_dp.shape[0]):
        out -= abs(s_dp[j] - t[j]) * params[j]
    return out


@numba.njit(nogil=True, cache=True)
def _gaussian_log_density(s_dp, t, params):
    out = params[-1]
    for j in range(s_dp.shape[0]):
        z = (s_dp[j] - t[j]) * params[j]
        out -= 0.5 * z * z
    return out


def _params(inverse_scale: float, size: int, log_normaliser: float) -> np.ndarray:
    return np.r_[np.full(size, inverse_scale), size * log_normaliser]


@numba.njit(nogil=True)  # takes a function argument: not cacheable, see record.py
def sum_statistic(x, s_dp, statistic, size):
    """``sum_i t(x_i, s_dp)`` over the rows of ``x`` (compiled)."""
    total = np.zeros(size)
    buf = np.empty(size)
    for i in range(x.shape[0]):
        statistic(x[i], s_dp, buf)
        for j in range(size):
            total[j] += buf[j]
    return total


@functools.lru_cache(maxsize=None)
def _with_release_argument(statistic):
    """Adapt a ``(x_i, out)`` statistic to the engine's ``(x_i, s_dp, out)`` form (cached, so
    the same user function always maps to the same compiled wrapper)."""

    @numba.njit(nogil=True)
    def statistic_given_release(x_i, s_dp, out):
        statistic(x_i, out)

    return statistic_given_release


def _as_truncation(truncation):
    if truncation is None:
        return None
    try:
        lower, upper = (float(v) for v in truncation)
    except (TypeError, ValueError):
        raise TypeError(f"truncation must be a pair (lower, upper), got {truncation!r}") from None
    if not (np.isfinite(lower) and np.isfinite(upper) and lower < upper):
        raise ValueError(f"truncation must be finite with lower < upper, got {truncation!r}")
    return lower, upper


def as_records(x, name: str = "x") -> np.ndarray:
    """Records as a C-contiguous float64 array of shape ``(n, record_size)``."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of numbers, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(f"{name} must have shape (n, record_size) or (n,) with n >= 1, "
                         f"got shape {np.shape(x)}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


class Mechanism:
    r"""Any record-additive mechanism :math:`g(s_{dp}, \sum_i t(x_i, s_{dp}))`.

    Parameters
    ----------
    statistic : numba.njit function
        ``(x_i, out)`` or ``(x_i, s_dp, out)``: writes record ``i``'s contribution to ``out``
        (length ``size``).
    log_density : numba.njit function
        ``(s_dp, t, params) -> float``: ``log g(s_dp, t)``. Return ``-inf`` where the density
        is zero; never NaN.
    size : int
        Length of the released vector.
    params : array_like
        Float parameters passed to ``log_density``.
    draw_release : callable, optional
        ``(rng, t) -> s_dp``: draws a release given the confidential total ``t``; enables
        :meth:`release`.
    epsilon : float, optional
        The pure epsilon-DP guarantee, if the mechanism has one (then every acceptance
        probability of the record sampler is at least ``exp(-epsilon)``).
    name : str
        A label stored with the results.
    truncation : (float, float), optional
        Bounds ``(a, b)`` when the statistic is a truncated one, :math:`1_{[a,b]}(x)\,t(x)`
        (records outside contribute zero), as the sufficient-statistic sampler needs to know.

    Examples
    --------
    A uniform-noise mechanism, ``s_dp = sum_i x_i + U(-h, h)``:

    >>> @numba.njit
    ... def log_uniform(s_dp, t, params):
    ...     return -math.log(2 * params[0]) if abs(s_dp[0] - t[0]) < params[0] else -math.inf
    >>> mech = dw.Mechanism(identity, log_uniform, params=[5.0])  # doctest: +SKIP
    """

    def __init__(self, statistic, log_density, *, size: int = 1, params=(),
                 draw_release=None, epsilon: float | None = None, name: str = "Mechanism",
                 truncation: tuple | None = None):
        require_njit(statistic, "statistic", "(x_i, out) or (x_i, s_dp, out)")
        require_njit(log_density, "log_density", "(s_dp, t, params) -> float")
        arity = n_positional(statistic)
        if arity not in (2, 3):
            raise TypeError(f"statistic must take (x_i, out) or (x_i, s_dp, out), "
                            f"it takes {arity} positional arguments")
        self.statistic = statistic
        self.depends_on_release = arity == 3
        self.engine_statistic = statistic if arity == 3 else _with_release_argument(statistic)
        self.log_density = log_density
        self.size = as_count(size, "size")
        self.params = np.atleast_1d(np.asarray(params, dtype=np.float64)).copy()
        if not np.all(np.isfinite(self.params)):
            raise ValueError(f"params must be finite, got {self.params}")
        #: Releases and record contributions must be integers (discrete mechanisms).
        self.integer_statistic = False
        if draw_release is not None and not callable(draw_release):
            raise TypeError("draw_release must be callable (rng, t) -> s_dp")
        self._draw_release = draw_release
        self.epsilon = None if epsilon is None else as_positive_float(epsilon, "epsilon")
        self.name = name
        self.truncation = _as_truncation(truncation)

    # -- description -------------------------------------------------------------------------
    @property
    def privacy(self) -> dict:
        """The mechanism's parameters, stored as ``constant_data`` with each result."""
        out = {} if self.epsilon is None else {"epsilon": self.epsilon}
        return out

    def noise_variance(self) -> np.ndarray | None:
        """The variance of each coordinate's noise when it is known in closed form (the
        built-in mechanisms), else ``None`` (:mod:`dawrap.start` then estimates it from
        ``draw_release``)."""
        return None

    @property
    def fingerprint(self) -> str:
        """Everything that defines the mechanism, exactly (no rounding), as a string: what a
        checkpoint or a stored study is checked against on restart."""
        stat = getattr(self.statistic, "py_func", self.statistic)
        return json.dumps({"name": self.name, "size": self.size,
                           "statistic": f"{stat.__module__}.{stat.__qualname__}",
                           "params": [repr(float(v)) for v in self.params],
                           "truncation": None if self.truncation is None
                           else [repr(v) for v in self.truncation],
                           "privacy": {k: repr(float(v)) for k, v in self.privacy.items()}})

    def __reduce__(self):
        # Pickled by the recipe that built it (dawrap.recipe): compiled functions and
        # closures cannot be pickled by value.
        return reduce_by_recipe(self)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v:g}" for k, v in self.privacy.items())
        return f"{self.name}({self.statistic.__name__}{', ' if args else ''}{args}, size={self.size})"

    # -- inference side ----------------------------------------------------------------------
    def check_release(self, s_dp) -> np.ndarray:
        """Validate a release: a finite real scalar or vector of length ``size``, integers for
        the integer mechanisms."""
        s = as_float_vector(s_dp, "s_dp", self.size)
        if self.integer_statistic and not np.all(s == np.round(s)):
            raise ValueError(f"s_dp must be integer-valued for the {self.name} mechanism, "
                             f"got {s}")
        return s

    def log_g(self, s_dp, t) -> float:
        """``log g(s_dp, t)`` for a release and a confidential total ``t``."""
        s = self.check_release(s_dp)
        return float(self.log_density(s, as_float_vector(t, "t", self.size), self.params))

    def total(self, x, s_dp=None) -> np.ndarray:
        """The confidential total ``sum_i t(x_i, s_dp)`` of a database ``x``."""
        x = as_records(x)
        if self.depends_on_release:
            if s_dp is None:
                raise ValueError("s_dp is required: this mechanism's statistic depends on it")
            s = self.check_release(s_dp)
        else:
            s = np.zeros(self.size)
        return sum_statistic(x, s, self.engine_statistic, self.size)

    # -- curator side ------------------------------------------------------------------------
    def release(self, x, seed=None, *, secure: bool = False) -> np.ndarray:
        """A release ``s_dp`` of the confidential database ``x``.

        By default NumPy's seeded floating-point noise: reproducible, for simulation studies
        and demos, **not** for publishing real data (floating-point noise leaks, Mironov 2012).
        ``secure=True`` is the path for publication: exact integer noise from the operating
        system's cryptographic source (:mod:`dawrap.discrete`); only the integer mechanisms
        (``Geometric``, ``DiscreteGaussian``) offer it, and it takes no seed.
        """
        if self.depends_on_release:
            raise NotImplementedError("a statistic that depends on s_dp has no release")
        if secure:
            if seed is not None:
                raise ValueError("secure=True draws from the operating system's cryptographic "
                                 "source; a seed would make the noise predictable")
            t = self.total(x)
            return np.asarray(self._secure_release(t), dtype=np.float64).reshape(self.size)
        if self._draw_release is None:
            raise NotImplementedError(f"{self.name} has no draw_release, so it cannot release")
        t = self.total(x)
        rng = np.random.default_rng(seed)
        return np.asarray(self._draw_release(rng, t), dtype=np.float64).reshape(self.size)

    def _secure_release(self, t: np.ndarray) -> np.ndarray:
        raise ValueError(f"{self.name} has no safe release path: floating-point noise leaks "
                         f"(Mironov 2012). For integer statistics use dw.Geometric (discrete "
                         f"Laplace) or dw.DiscreteGaussian with secure=True")

    def _integer_total(self, t: np.ndarray) -> list:
        if not np.all(t == np.round(t)):
            raise ValueError(f"the {self.name} mechanism releases integer statistics; the "
                             f"confidential total is {t}")
        return [int(v) for v in np.round(t)]


class Laplace(Mechanism):
    r"""The Laplace mechanism: :math:`s_{dp} = T + \mathrm{Laplace}(0, \Delta_1/\epsilon)` per
    coordinate, pure :math:`\epsilon`-DP when :math:`\Delta_1` bounds the L1 change of ``T``
    from replacing one record.

    Examples
    --------
    >>> mech = dw.Laplace(beta_binomial.count, epsilon=0.5, sensitivity=1.0)
    >>> s_dp = mech.release(x, seed=1)  # doctest: +SKIP
    """

    def __init__(self, statistic, epsilon: float, sensitivity: float = 1.0, *, size: int = 1,
                 truncation: tuple | None = None):
        epsilon = as_positive_float(epsilon, "epsilon")
        self.sensitivity = as_positive_float(sensitivity, "sensitivity")
        self.scale = self.sensitivity / epsilon
        size = as_count(size, "size")
        super().__init__(statistic, _laplace_log_density, size=size,
                         params=_params(1.0 / self.scale, size, -math.log(2.0 * self.scale)),
                         epsilon=epsilon, name="Laplace", truncation=truncation,
                         draw_release=lambda rng, t: t + rng.laplace(0.0, self.scale, t.shape))

    @property
    def privacy(self) -> dict:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity, "scale": self.scale}

    def noise_variance(self) -> np.ndarray:
        return np.full(self.size, 2.0 * self.scale ** 2)


class Geometric(Mechanism):
    r"""The two-sided geometric (discrete Laplace) mechanism for integer statistics:
    :math:`P(s_{dp} = T + z) = \frac{1-\alpha}{1+\alpha}\alpha^{|z|}`,
    :math:`\alpha = e^{-\epsilon/\Delta_1}`; pure :math:`\epsilon`-DP.

    Releases and confidential totals must be integers.
    """

    def __init__(self, statistic, epsilon: float, sensitivity: float = 1.0, *, size: int = 1,
                 truncation: tuple | None = None):
        epsilon = as_positive_float(epsilon, "epsilon")
        self.sensitivity = as_positive_float(sensitivity, "sensitivity")
        self.alpha = math.exp(-epsilon / self.sensitivity)
        size = as_count(size, "size")
        # log pmf = log((1 - a) / (1 + a)) - |z| epsilon / sensitivity: the Laplace form.
        log_alpha = -epsilon / self.sensitivity
        super().__init__(statistic, _laplace_log_density, size=size,
                         params=_params(-log_alpha, size, math.log(-math.expm1(log_alpha))
                                        - math.log1p(self.alpha)),
                         epsilon=epsilon, name="Geometric", draw_release=self._draw,
                         truncation=truncation)
        self.integer_statistic = True

    @classmethod
    def from_scale(cls, statistic, scale: float, sensitivity: float = 1.0, *,
                   size: int = 1) -> "Geometric":
        """The mechanism adding discrete Laplace noise of ``scale``, :math:`P(z) \\propto
        e^{-|z|/\\text{scale}}`: epsilon = sensitivity / scale. This is how OpenDP's
        Laplace measurement on integers is described (``make_laplace(..., scale=s)``)."""
        scale = as_positive_float(scale, "scale")
        sensitivity = as_positive_float(sensitivity, "sensitivity")
        return cls(statistic, epsilon=sensitivity / scale, sensitivity=sensitivity, size=size)

    def _draw(self, rng, t):
        self._integer_total(t)
        p = 1.0 - self.alpha
        return t + (rng.geometric(p, t.shape) - rng.geometric(p, t.shape))

    def _secure_release(self, t):
        from .discrete import as_fraction, discrete_laplace

        scale = as_fraction(self.sensitivity) / as_fraction(self.epsilon)
        return [v + discrete_laplace(scale) for v in self._integer_total(t)]

    @property
    def privacy(self) -> dict:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity, "alpha": self.alpha}

    def noise_variance(self) -> np.ndarray:
        # The difference of two geometric counts of failures, each of variance a / (1 - a)^2.
        return np.full(self.size, 2.0 * self.alpha / (1.0 - self.alpha) ** 2)


class Gaussian(Mechanism):
    r"""The Gaussian mechanism :math:`s_{dp} = T + N(0, \sigma^2 I)`.

    Build it from ``sigma`` directly, or from a privacy guarantee with an L2 sensitivity
    :math:`\Delta_2`: :meth:`from_zcdp` (:math:`\rho`-zCDP, :math:`\sigma = \Delta_2/\sqrt{2\rho}`)
    or :meth:`from_gdp` (:math:`\mu`-GDP, :math:`\sigma = \Delta_2/\mu`).
    """

    def __init__(self, statistic, sigma: float, *, size: int = 1,
                 truncation: tuple | None = None):
        self.sigma = as_positive_float(sigma, "sigma")
        self._guarantee: dict = {}
        size = as_count(size, "size")
        super().__init__(statistic, _gaussian_log_density, size=size,
                         params=_params(1.0 / self.sigma, size, -self._log_normaliser()),
                         name=type(self).__name__, truncation=truncation,
                         draw_release=self._draw)

    def _log_normaliser(self) -> float:
        return math.log(self.sigma) + 0.5 * math.log(2.0 * math.pi)

    def _draw(self, rng, t):
        return t + rng.normal(0.0, self.sigma, t.shape)

    @classmethod
    def from_zcdp(cls, statistic, rho: float, sensitivity: float, *, size: int = 1) -> "Gaussian":
        """The Gaussian mechanism satisfying ``rho``-zCDP for L2 sensitivity ``sensitivity``."""
        rho = as_positive_float(rho, "rho")
        sensitivity = as_positive_float(sensitivity, "sensitivity")
        mech = cls(statistic, sensitivity / math.sqrt(2.0 * rho), size=size)
        mech._guarantee = {"rho": rho, "sensitivity": sensitivity}
        return mech

    @classmethod
    def from_gdp(cls, statistic, mu: float, sensitivity: float, *, size: int = 1) -> "Gaussian":
        """The Gaussian mechanism satisfying ``mu``-GDP for L2 sensitivity ``sensitivity``."""
        mu = as_positive_float(mu, "mu")
        sensitivity = as_positive_float(sensitivity, "sensitivity")
        mech = cls(statistic, sensitivity / mu, size=size)
        mech._guarantee = {"mu": mu, "sensitivity": sensitivity}
        return mech

    @property
    def privacy(self) -> dict:
        return {"sigma": self.sigma, **self._guarantee}

    def noise_variance(self) -> np.ndarray:
        return np.full(self.size, self.sigma ** 2)


def discrete_gaussian_variance(sigma: float) -> float:
    r"""Variance of the discrete Gaussian, :math:`\sum_k k^2 e^{-k^2/(2\sigma^2)} / \sum_k
    e^{-k^2/(2\sigma^2)}`: below :math:`\sigma^2` for small sigma (0.0077 against 0.09 at
    sigma = 0.3), :math:`\sigma^2(1 - 8\pi^2\sigma^2 e^{-2\pi^2\sigma^2})` to first order
    above (2e-7 relative at sigma = 1).

    For sigma >= 1 by Poisson summation, :math:`\sigma^2 \sum_m (1 - 4\pi^2\sigma^2m^2)
    q^{m^2} / \sum_m q^{m^2}` with :math:`q = e^{-2\pi^2\sigma^2}`; below, the direct sums.
    """
    if sigma >= 1.0:
        m = np.arange(1, 4)
        q = np.exp(-2 * math.pi ** 2 * sigma ** 2 * m * m)
        return float(sigma ** 2 * (1 + 2 * np.sum((1 - 4 * math.pi ** 2 * sigma ** 2 * m * m) * q))
                     / (1 + 2 * np.sum(q)))
    k = np.arange(1, int(40 * sigma) + 40)
    w = np.exp(-k * k / (2 * sigma * sigma))
    return float(2 * np.sum(k * k * w) / (1 + 2 * np.sum(w)))


def discrete_gaussian_log_normaliser(sigma: float) -> float:
    r""":math:`\log \sum_{k \in \mathbb Z} e^{-k^2/(2\sigma^2)}`, accurate at any sigma.

    For sigma >= 1, by Poisson summation: :math:`\sqrt{2\pi}\sigma\,(1 + 2\sum_{k\ge1}
    e^{-2\pi^2\sigma^2k^2})`, whose correction is below 1e-17 already; below, the direct sum,
    whose terms vanish after a few sigma.
    """
    if sigma >= 1.0:
        correction = sum(math.exp(-2 * math.pi ** 2 * sigma ** 2 * k * k) for k in range(1, 4))
        return 0.5 * math.log(2 * math.pi) + math.log(sigma) + math.log1p(2 * correction)
    k = np.arange(1, int(40 * sigma) + 40)
    return math.log1p(2 * np.exp(-k * k / (2 * sigma * sigma)).sum())


class DiscreteGaussian(Gaussian):
    r"""The discrete Gaussian mechanism for integer statistics (Canonne, Kamath & Steinke
    2020): :math:`P(s_{dp} = T + z) = e^{-z^2/(2\sigma^2)} / \sum_k e^{-k^2/(2\sigma^2)}`.

    It satisfies :math:`\tfrac12(\Delta_2/\sigma)^2`-zCDP; :meth:`from_zcdp` picks sigma from
    a budget (sigma = sensitivity / sqrt(2 rho), as OpenDP's Gaussian on integers). The log
    pmf is evaluated in log space with its exact normaliser, so it stays finite and correct
    far in the tails. ``release(x, secure=True)`` uses the exact sampler.
    """

    def __init__(self, statistic, sigma: float, *, size: int = 1,
                 truncation: tuple | None = None):
        super().__init__(statistic, sigma, size=size, truncation=truncation)
        self.integer_statistic = True

    def _log_normaliser(self) -> float:
        return discrete_gaussian_log_normaliser(self.sigma)

    def noise_variance(self) -> np.ndarray:
        return np.full(self.size, discrete_gaussian_variance(self.sigma))

    @classmethod
    def from_gdp(cls, statistic, mu, sensitivity, *, size=1):
        raise TypeError("DiscreteGaussian.from_gdp is not offered: build it from_zcdp, the "
                        "guarantee Canonne, Kamath & Steinke prove for it")

    def _draw(self, rng, t):
        """Simulation path: seeded, and exact in distribution (the same rational algorithm
        driven by NumPy's generator), but not for publication."""
        from .discrete import discrete_gaussian

        source = _NumpyIntegers(rng)
        return [v + discrete_gaussian(self.sigma, source) for v in self._integer_total(t)]

    def _secure_release(self, t):
        from .discrete import discrete_gaussian

        return [v + discrete_gaussian(self.sigma) for v in self._integer_total(t)]


class _NumpyIntegers:
    """``randrange`` backed by a NumPy generator, for reproducible simulated releases."""

    def __init__(self, rng):
        self.rng = rng

    def randrange(self, stop: int) -> int:
        if stop < 2 ** 62:
            return int(self.rng.integers(stop))
        bits = stop.bit_length()  # rejection from the smallest power of two above: unbiased
        while True:
            value = int.from_bytes(self.rng.bytes((bits + 7) // 8), "big") >> (-bits % 8)
            if value < stop:
                return value
