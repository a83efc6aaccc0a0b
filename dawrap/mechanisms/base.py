r"""The base class :class:`Mechanism`: any record-additive mechanism.

A mechanism is record additive (Ju et al. 2022, Assumption 2) when its density factorises as

.. math:: \eta(s_{dp} \mid x) = g\big(s_{dp},\ \textstyle\sum_{i=1}^n t(x_i, s_{dp})\big),

so replacing one record changes the sum ``T`` in O(1) and the sampler's acceptance ratio
``g(s_dp, T*) / g(s_dp, T)`` costs O(1). Every mechanism is described by

* ``statistic``: a ``numba.njit`` function ``(x_i, out)`` (or ``(x_i, s_dp, out)`` when the
  contribution depends on the release) writing the record's contribution ``t(x_i)``;
* ``log_density``: a ``numba.njit`` function ``(s_dp, t, params) -> float`` returning
  ``log g(s_dp, t)``, normalised, evaluated in log space;
* ``params``: the float64 array handed to ``log_density`` (inverse scales and the log
  normaliser, for the built-in ones), so that changing epsilon recompiles nothing.

Releases made with ``release`` use NumPy's floating-point samplers: they are for simulations and
demos, not for publishing real data (floating-point Laplace noise leaks, Mironov 2012).
``release(x, secure=True)`` is for publication (:mod:`dawrap.mechanisms.publication`): the
integer mechanisms (``Geometric``, ``DiscreteGaussian``) declare each record's *contribution
domain* (:mod:`dawrap.mechanisms.domains`), whose diameter is checked against the stated
sensitivity at construction; the secure release projects every record's contribution onto
the integer points of that domain before any noise is drawn, so it is differentially private
for every input and raises nothing that depends on the confidential values.
"""
from __future__ import annotations

import json

import numpy as np

from ..compile import templates as _templates
from .._checks import (as_count, as_float_vector, as_positive_float, n_positional, require_arity,
                      require_njit)
from ..model.recipe import reduce_by_recipe
from . import publication, separable
from ._immutable import Immutable, read_only
from .noise import NoiseLaw

__all__ = ["Mechanism", "as_records", "sum_statistic", "with_release_argument"]


# The slots of the templates below, bound per statistic (dawrap._templates checks every
# binding against them).
STATISTIC = _templates.slot("(x_i, s_dp, out) in total_of, (x_i, out) in "
                            "statistic_given_release: one record's contribution t(x_i)")
SIZE = _templates.slot("int: floats of the statistic")


def sum_statistic(x, s_dp, statistic, size: int) -> np.ndarray:
    """``sum_i t(x_i, s_dp)`` over the rows of ``x`` (compiled)."""
    return _templates.bind((total_of,), {"STATISTIC": statistic, "SIZE": size}
                           ).total_of(x, s_dp)


def total_of(x, s_dp):
    """The template of :func:`sum_statistic`."""
    total = np.zeros(SIZE)
    buf = np.empty(SIZE)
    for i in range(x.shape[0]):
        STATISTIC(x[i], s_dp, buf)
        for j in range(SIZE):
            total[j] += buf[j]
    return total


def statistic_given_release(x_i, s_dp, out):
    """A ``(x_i, out)`` statistic in the sampler's ``(x_i, s_dp, out)`` form (a template)."""
    STATISTIC(x_i, out)


def with_release_argument(statistic):
    """Adapt a ``(x_i, out)`` statistic to the sampler's ``(x_i, s_dp, out)`` form (the same
    user function always maps to the same compiled wrapper)."""
    return _templates.bind((statistic_given_release,), {"STATISTIC": statistic}
                           ).statistic_given_release


def as_truncation(truncation):
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



class Mechanism(Immutable):
    r"""Any record-additive mechanism :math:`g(s_{dp}, \sum_i t(x_i, s_{dp}))`; the base
    class, and the contract a new mechanism follows.

    The samplers, the runners and the exact posteriors ask a mechanism only for what is listed
    here, by these attributes and methods, never by its type.

    **What every mechanism provides** (the record-level sampler needs nothing else):

    * ``statistic`` and ``size``: a ``numba.njit`` function writing one record's contribution
      :math:`t(x_i)` to ``out`` of length ``size``;
    * ``log_density`` and ``params``: a ``numba.njit`` function ``(s_dp, t, params) ->
      float``, :math:`\log g(s_{dp}, t)` for a total ``t`` (normalised, ``-inf`` where the
      density is zero, never NaN), and the float array it takes (numbers in ``params``, not in
      the code, so that another epsilon recompiles nothing).

    **What it may provide**, each enabling more:

    * ``draw_release``: simulated releases (:meth:`release`), hence calibration studies and
      release-informed starting values;
    * ``noise``: a :class:`~dawrap.mechanisms.NoiseLaw` saying the noise is additive,
      independent per coordinate, of a registered noise family (Laplace, geometric,
      Gaussian, discrete Gaussian or a user's, :mod:`dawrap.mechanisms.families`), with
      its scales: needed by the sufficient-statistic sampler (``method="suffstat"``); the
      exact posteriors of :mod:`dawrap.reference` then stay exact at releases far outside
      the statistic's range, and :meth:`noise_variance` follows from it. It is checked
      against ``log_density`` when given;
    * ``noise_variance``: each coordinate's noise variance in closed form, for
      release-informed starts without simulating (when there is no ``noise`` law);
    * ``epsilon``: the pure epsilon-DP guarantee, stored with the results;
    * ``coordinate_log_density`` (and the statistic's sparse form, ``entries`` and ``nnz``
      or :func:`dawrap.declare_sparse`): a record update in O(nnz) rather than O(size)
      (:mod:`dawrap.mechanisms.separable`);
    * ``truncation``: what the sufficient-statistic sampler needs of a truncated statistic.

    **A release that is not the statistic plus noise** (a selection, as the exponential
    mechanism's, :class:`~dawrap.mechanisms.quantiles.Quantiles`): a subclass sets the class
    attribute ``additive = False`` and, after this constructor, ``release_size`` (the
    length of ``s_dp``, by default ``size``). The record sampler and the exact posteriors
    need nothing more; what reads the release as a noisy total (release-informed starts,
    the plausibility check, ``method="naive"`` and ``"suffstat"``) then stays out of the way
    or refuses.

    A subclass (one module per noise family, beside the family's
    :class:`~dawrap.mechanisms.families.NoiseFamily`: :mod:`dawrap.mechanisms.laplace` is
    the model to follow) checks its own arguments, calls this constructor with the
    family's densities, then sets its own attributes, and overrides :attr:`privacy` to
    report its parameters. The publication path
    (``release(x, secure=True)``, :mod:`dawrap.mechanisms.publication`) is the built-in
    integer mechanisms' alone: it needs exact integer noise from a cryptographic source and
    a contribution domain (:mod:`dawrap.mechanisms.domains`).

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
    coordinate_log_density : numba.njit function, optional
        ``(s_j, t_j, j, params) -> float``: declares the density separable, :math:`\log g =
        c + \sum_j \ell_j(s_j, t_j)`, with this function the term :math:`\ell_j` (up to a
        constant). With a sparse statistic the record sampler then updates a record in
        O(nnz) instead of O(size) (:mod:`dawrap.mechanisms.separable`).
    entries, nnz : numba.njit function and int, optional
        The statistic's sparse form, ``(x_i, index, value) -> count`` with at most ``nnz``
        pairs; by default the one declared with :func:`dawrap.declare_sparse`, if any. Only
        a separable mechanism can use it.
    noise : NoiseLaw, optional
        The law of the noise, when it is of a registered noise family
        (:class:`~dawrap.mechanisms.NoiseLaw`, built with ``NoiseLaw.of``). A ValueError
        if ``log_density`` does not change as the law says; an integer family makes the
        releases integers.
    noise_variance : array_like, optional
        The variance of each coordinate's noise, when known in closed form and no ``noise``
        law is given (returned by :meth:`noise_variance`; without either, release-informed
        starts estimate it from ``draw_release``).

    Notes
    -----
    A mechanism is immutable once built, as are those of its subclasses: setting or deleting
    any attribute raises ``AttributeError`` (its guarantee and noise were checked for the
    values it was built with), and :attr:`params` is handed out as a copy.

    Examples
    --------
    A uniform-noise mechanism, ``s_dp = sum_i x_i + U(-h, h)``: a statistic, a log density
    and its parameters are all the record sampler needs.

    >>> import math
    >>> import numba
    >>> import numpy as np
    >>> import dawrap as dw
    >>> @numba.njit
    ... def identity(x_i, out):
    ...     out[0] = x_i[0]
    >>> @numba.njit
    ... def log_uniform(s_dp, t, params):
    ...     return -math.log(2 * params[0]) if abs(s_dp[0] - t[0]) < params[0] else -math.inf
    >>> mech = dw.Mechanism(identity, log_uniform, params=[5.0], name="Uniform",
    ...                     draw_release=lambda rng, t: t + rng.uniform(-5.0, 5.0, t.shape))
    >>> mech.log_g(s_dp=12.0, t=10.0) == -math.log(10.0)
    True

    Laplace noise of its own scale on each of two counts, declared as such (``noise``), so
    that ``method="suffstat"`` and the exact posteriors know it:

    >>> from dawrap.mechanisms import NoiseLaw
    >>> @numba.njit
    ... def pair(x_i, out):
    ...     out[0], out[1] = x_i[0], x_i[1]
    >>> @numba.njit
    ... def log_laplace(s_dp, t, params):        # params: 1 / scale_j, then log normaliser
    ...     out = params[-1]
    ...     for j in range(s_dp.shape[0]):
    ...         out -= abs(s_dp[j] - t[j]) * params[j]
    ...     return out
    >>> scale = np.array([1.0, 4.0])
    >>> mech = dw.Mechanism(pair, log_laplace, size=2,
    ...                     params=np.r_[1 / scale, -np.log(2 * scale).sum()],
    ...                     noise=NoiseLaw.of("laplace", scale),
    ...                     draw_release=lambda rng, t: t + rng.laplace(0.0, scale))
    >>> mech.noise_variance()                           # 2 scale^2, from the law
    array([ 2., 32.])
    """

    #: Whether the release is the statistic's total plus noise, coordinate by coordinate
    #: (every built-in mechanism but :class:`~dawrap.mechanisms.quantiles.Quantiles`).
    additive = True

    def __init__(self, statistic, log_density, *, size: int = 1, params=(),
                 draw_release=None, epsilon: float | None = None, name: str = "Mechanism",
                 truncation: tuple | None = None, coordinate_log_density=None, entries=None,
                 nnz: int | None = None, noise: NoiseLaw | None = None, noise_variance=None):
        require_njit(statistic, "statistic", "(x_i, out) or (x_i, s_dp, out)")
        require_njit(log_density, "log_density", "(s_dp, t, params) -> float")
        # A wrong arity would otherwise fail only inside dw.sample, as a numba typing error.
        require_arity(log_density, "log_density", "(s_dp, t, params) -> float", 3)
        arity = n_positional(statistic)
        if arity not in (2, 3):
            raise TypeError(f"statistic must take (x_i, out) or (x_i, s_dp, out), "
                            f"it takes {arity} positional arguments")
        self.statistic = statistic
        self.depends_on_release = arity == 3
        # The statistic in the form the compiled samplers call, (x_i, s_dp, out), whichever
        # form the user wrote.
        self.sampler_statistic = statistic if arity == 3 else with_release_argument(statistic)
        self.log_density = log_density
        self.size = as_count(size, "size")
        #: The length of the release ``s_dp``: ``size``, unless the mechanism is not
        #: additive (a subclass then sets it after this constructor).
        self.release_size = self.size
        self._density_params = read_only(
            np.atleast_1d(np.asarray(params, dtype=np.float64)).copy())
        if not np.all(np.isfinite(self._density_params)):
            raise ValueError(f"params must be finite, got {self._density_params}")
        self._noise_variance = None if noise_variance is None else read_only(
            as_float_vector(noise_variance, "noise_variance", self.size).copy())
        if self._noise_variance is not None and np.any(self._noise_variance < 0):
            raise ValueError(f"noise_variance must be >= 0, got {noise_variance!r}")
        #: The declared law of the noise (:class:`~dawrap.mechanisms.NoiseLaw`), or None.
        self.noise = self._checked_noise(noise, log_density, noise_variance)
        #: Releases and record contributions must be integers (discrete mechanisms).
        self.integer_statistic = self.noise is not None and self.noise.integer
        if draw_release is not None and not callable(draw_release):
            raise TypeError("draw_release must be callable (rng, t) -> s_dp")
        self._draw_release = draw_release
        self.epsilon = None if epsilon is None else as_positive_float(epsilon, "epsilon")
        self.name = name
        self.truncation = as_truncation(truncation)
        #: The declared per-record contribution domain (:class:`Box`, :class:`Sparse`), which
        #: secure releases project onto; only the integer mechanisms take one.
        self.contribution = None
        self._declare_sparse(coordinate_log_density, entries, nnz)

    def _checked_noise(self, noise, log_density, noise_variance) -> NoiseLaw | None:
        """A user's ``noise`` law, checked for this mechanism's size and against its
        ``log_density`` (the built-in families set theirs after construction, unchecked: their
        densities are of their law by construction)."""
        if noise is None:
            return None
        if not isinstance(noise, NoiseLaw):
            raise TypeError(f"noise must be a dawrap.mechanisms.NoiseLaw (NoiseLaw.of(family, "
                            f"scale)), got {noise!r}")
        if noise_variance is not None:
            raise TypeError("give noise or noise_variance, not both: the noise law has the "
                            "variance")
        noise = NoiseLaw.of(noise.family, noise.scale, noise.variance, size=self.size)
        problem = noise.disagreement(log_density, self._density_params)
        if problem is not None:
            raise ValueError(f"the declared noise law is not the log density's: {problem}. "
                             f"Declare the family and scale log_density implements, or no "
                             f"noise law")
        return noise

    def _declare_sparse(self, coordinate_log_density, entries, nnz) -> None:
        """Set ``coordinate_log_density`` (None: not separable) and ``sparse`` (the
        statistic's :class:`~dawrap.mechanisms.separable.SparseForm` in the sampler's
        ``(x_i, s_dp, index, value)`` form, or None: the dense path)."""
        self.coordinate_log_density = None
        if coordinate_log_density is not None:
            sig = "(s_j, t_j, j, params) -> float"
            require_njit(coordinate_log_density, "coordinate_log_density", sig)
            require_arity(coordinate_log_density, "coordinate_log_density", sig, 4)
            self.coordinate_log_density = coordinate_log_density
        if entries is None and nnz is not None:
            raise TypeError(f"{type(self).__name__}: nnz = {nnz!r} was given without entries")
        if entries is not None:
            if nnz is None:
                raise TypeError(f"{type(self).__name__}: entries needs nnz, the most (index, "
                                f"value) pairs one record has")
            if self.coordinate_log_density is None:
                raise ValueError(f"{type(self).__name__}: a sparse statistic (entries) needs a "
                                 f"separable density; give coordinate_log_density "
                                 f"(s_j, t_j, j, params) -> float, or leave entries out to use "
                                 f"the dense statistic")
            if self.depends_on_release:
                raise ValueError(f"{type(self).__name__}: entries are (x_i, index, value): a "
                                 f"statistic that depends on the release cannot be sparse")
            form = separable.SparseForm(require_njit(entries, "entries",
                                                     "(x_i, index, value) -> count"),
                                        as_count(nnz, "nnz"))
        else:
            form = separable.sparse_form(self.statistic)
        usable = (form is not None and self.coordinate_log_density is not None
                  and not self.depends_on_release)
        self.sparse = (separable.SparseForm(separable.entries_given_release(form.entries),
                                            form.nnz) if usable else None)

    # -- description -------------------------------------------------------------------------
    @property
    def params(self) -> np.ndarray:
        """The float parameters handed to ``log_density`` (a copy: changing it changes
        nothing).

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Laplace(beta_binomial.count, epsilon=0.5).params    # 1/scale, log normaliser
        array([ 0.5       , -1.38629436])
        """
        return self._density_params.copy()

    @property
    def privacy(self) -> dict:
        """The mechanism's parameters, stored as ``constant_data`` with each result."""
        out = {} if self.epsilon is None else {"epsilon": self.epsilon}
        return out

    def noise_variance(self) -> np.ndarray | None:
        """The variance of each coordinate's noise when it is known in closed form (from the
        :attr:`noise` law, as for the built-in mechanisms, or the ``noise_variance`` given to
        the constructor), else ``None`` (:mod:`dawrap.runner.starts` then estimates it from
        ``draw_release``).

        Returns
        -------
        ndarray of shape (size,) or None

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Laplace(beta_binomial.count, epsilon=0.5).noise_variance()   # 2 (1/0.5)^2
        array([8.])
        """
        if self._noise_variance is not None:
            return self._noise_variance.copy()
        return None if self.noise is None else self.noise.variance.copy()

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
        the integer mechanisms.

        Parameters
        ----------
        s_dp : float or array_like
            The release.

        Returns
        -------
        ndarray of shape (size,)
            The release as float64.

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Laplace(beta_binomial.count, epsilon=0.5).check_release(3.5)
        array([3.5])
        >>> dw.Geometric(beta_binomial.count, epsilon=0.5).check_release(3.5)
        Traceback (most recent call last):
        ...
        ValueError: s_dp must be integer-valued for the Geometric mechanism, got [3.5]
        """
        s = as_float_vector(s_dp, "s_dp", self.release_size)
        if self.integer_statistic and not np.all(s == np.round(s)):
            raise ValueError(f"s_dp must be integer-valued for the {self.name} mechanism, "
                             f"got {s}")
        return s

    def log_g(self, s_dp, t) -> float:
        """``log g(s_dp, t)`` for a release and a confidential total ``t``.

        Parameters
        ----------
        s_dp, t : float or array_like
            The release and the confidential total, each of length ``size``.

        Returns
        -------
        float
            The log density of the release given the total.

        Examples
        --------
        Laplace noise of scale 2: :math:`\\log g = -\\log 4 - |3.5 - 3| / 2`.

        >>> import math
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> mech = dw.Laplace(beta_binomial.count, epsilon=0.5)
        >>> math.isclose(mech.log_g(3.5, 3.0), -math.log(4.0) - 0.25)
        True
        """
        s = self.check_release(s_dp)
        return float(self.log_density(s, as_float_vector(t, "t", self.size), self.params))

    def total(self, x, s_dp=None) -> np.ndarray:
        """The confidential total ``sum_i t(x_i, s_dp)`` of a database ``x``.

        Parameters
        ----------
        x : array_like of shape (n, record_size) or (n,)
            The records (finite).
        s_dp : float or array_like, optional
            The release, needed only by a statistic that depends on it.

        Returns
        -------
        ndarray of shape (size,)

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> dw.Laplace(beta_binomial.count, epsilon=0.5).total([1.0, 0.0, 1.0, 1.0])
        array([3.])
        """
        x = as_records(x)
        if self.depends_on_release:
            if s_dp is None:
                raise ValueError("s_dp is required: this mechanism's statistic depends on it")
            s = self.check_release(s_dp)
        else:
            s = np.zeros(self.size)
        if self.sparse is not None:  # O(n nnz + size) rather than O(n size)
            total, ok = separable.total_from_entries(x, s, self.sparse.entries, self.sparse.nnz,
                                               self.size)
            if ok:
                return total
            # A record the entries reject: the dense statistic says what it contributes.
        return sum_statistic(x, s, self.sampler_statistic, self.size)

    # -- curator side ------------------------------------------------------------------------
    def release(self, x, seed=None, *, secure: bool = False) -> np.ndarray:
        """A release ``s_dp`` of the confidential database ``x``.

        By default NumPy's seeded floating-point noise: reproducible, for simulation studies
        and demos, **not** for publishing real data (floating-point noise leaks, Mironov 2012).
        The records must be finite, and with a declared contribution domain every record's
        contribution must lie in it (a simulation is refused, never silently clamped).

        ``secure=True`` is the path for publication, offered by the integer mechanisms
        (``Geometric``, ``DiscreteGaussian``) built with a ``contribution`` domain: each
        record's contribution is projected onto the integer points of that domain
        (:meth:`bounded_total`), then exact integer noise from the operating system's
        cryptographic source is added (:mod:`dawrap.mechanisms.discrete`; the whole path is
        :mod:`dawrap.mechanisms.publication`). Every input of a valid type and shape gets a
        release with the stated guarantee; nothing raised depends on the values. It takes no
        seed.

        Parameters
        ----------
        x : array_like of shape (n, record_size) or (n,)
            The confidential records.
        seed : int, numpy.random.Generator or None
            The simulated release's randomness (refused with ``secure=True``).
        secure : bool
            Publish: project the contributions, add cryptographically secure exact noise.

        Returns
        -------
        ndarray of shape (size,)
            The release ``s_dp``.

        Examples
        --------
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> x = beta_binomial.model().simulate({"p": 0.3}, n=100, seed=1)
        >>> mech = dw.Laplace(beta_binomial.count, epsilon=0.5)
        >>> s_dp = mech.release(x, seed=2)                   # for a simulation study
        >>> s_dp.shape
        (1,)
        >>> geometric = dw.Geometric(beta_binomial.count, epsilon=0.5, contribution=(0, 1))
        >>> s_dp = geometric.release(x, secure=True)         # for publication
        >>> bool(s_dp[0] == round(s_dp[0]))                   # an integer count
        True
        """
        if self.depends_on_release:
            raise NotImplementedError("a statistic that depends on s_dp has no release")
        if secure:
            return publication.publish(self, x, seed)
        if self._draw_release is None:
            raise NotImplementedError(f"{self.name} has no draw_release, so it cannot release")
        if self.contribution is not None:
            publication.refuse_outside_domain(self, as_records(x))
        return self.release_given_total(np.random.default_rng(seed), self.total(x))

    @property
    def can_draw_releases(self) -> bool:
        """Whether :meth:`release_given_total` can draw (the mechanism has a ``draw_release``
        and its statistic does not depend on the release)."""
        return self._draw_release is not None and not self.depends_on_release

    def release_given_total(self, rng: np.random.Generator, t: np.ndarray) -> np.ndarray:
        """A simulated release for a confidential total ``t``: ``t`` plus the mechanism's
        noise, drawn with ``rng`` (NumPy's floating-point noise: for simulation, never for
        publication). Release-informed starts estimate the noise from it.

        Parameters
        ----------
        rng : numpy.random.Generator
        t : ndarray of shape (size,)
            The confidential total.

        Returns
        -------
        ndarray of shape (size,)

        Examples
        --------
        >>> import numpy as np
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> mech = dw.Laplace(beta_binomial.count, epsilon=0.5)
        >>> draws = [mech.release_given_total(np.random.default_rng(i), np.array([30.0]))[0]
        ...          for i in range(2000)]
        >>> bool(abs(np.mean(draws) - 30.0) < 4 * np.sqrt(8.0 / 2000))   # noise var 8
        True
        """
        if self._draw_release is None:
            raise NotImplementedError(f"{self.name} has no draw_release, so it cannot release")
        return np.asarray(self._draw_release(rng, t), dtype=np.float64).reshape(
            self.release_size)

    #: One draw of exact integer noise from the cryptographic source, for the mechanisms that
    #: have a publication path (set by ``Geometric`` and ``DiscreteGaussian``).
    _secure_noise = None

    def bounded_total(self, x) -> list:
        """The confidential total a secure release adds noise to: the sum over records of each
        contribution projected onto the declared domain
        (:meth:`~dawrap.mechanisms.Box.project`), as exact Python integers
        (:mod:`dawrap.mechanisms.publication`).

        Checks only the type and shape of ``x``; NaN, infinite, fractional and out-of-range
        values are projected, never reported. The statistic runs as a bounds-checked copy
        (:mod:`dawrap.mechanisms.checked`): a record on which it raises, or indexes an array
        out of range (a category beyond ``out``, say), contributes as if every coordinate
        were NaN, i.e. the domain's value nearest zero (zero for
        :class:`~dawrap.mechanisms.Sparse`). Nothing outside ``out`` is ever read or written,
        whatever the records hold; a statistic whose copy cannot be checked is refused
        (TypeError) before any record is read.

        Parameters
        ----------
        x : array_like of shape (n, record_size) or (n,)
            The confidential records, any real values.

        Returns
        -------
        list of int
            One exact total per coordinate.

        Examples
        --------
        A 0/1 count: NaN contributes 0, 7 is clamped to 1 and 0.3 rounded to 0.

        >>> import numpy as np
        >>> import dawrap as dw
        >>> from dawrap.models import beta_binomial
        >>> mech = dw.Geometric(beta_binomial.count, epsilon=1.0, contribution=(0, 1))
        >>> mech.bounded_total([1.0, np.nan, 7.0, 0.3])
        [2]

        A one-hot count of 3 categories: the record of category 10**6 would index past
        ``out``; it contributes nothing.

        >>> from dawrap.models import dirichlet_multinomial
        >>> hist = dw.Geometric(dirichlet_multinomial.one_hot, epsilon=1.0, sensitivity=2.0,
        ...                     size=3, contribution=dw.mechanisms.Sparse(1))
        >>> hist.bounded_total([0.0, 2.0, 2.0, 1e6])
        [1, 0, 2]
        """
        return publication.bounded_total(self, x)

    def _integer_total(self, t: np.ndarray) -> list:
        if not np.all(t == np.round(t)):
            # The total itself is not shown: even a simulated database may be confidential.
            raise ValueError(f"the {self.name} mechanism releases integer statistics, but the "
                             f"statistic's total over x is not an integer")
        return [int(v) for v in np.round(t)]


