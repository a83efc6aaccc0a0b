r"""The user's non-private Bayesian model, registered piece by piece.

dawrap needs exactly what the analyst already has for confidential data:

* ``draw_record(rng, theta, out)``: one record :math:`x_i \sim f(\cdot \mid \theta)`;
* ``draw_theta(rng, theta, x, stats) -> theta``: a Markov kernel leaving
  :math:`p(\theta \mid x)` invariant (a conjugate draw, or one MH step);
* ``draw_prior(rng) -> theta``: a prior draw, for initialisation and simulation studies;
* optionally ``model_stat(x_i, out)``: the per-record sufficient statistic whose sum the sampler
  keeps current and hands to ``draw_theta`` as ``stats``, so a conjugate kernel costs O(1).
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping

import numba
import numpy as np

from ..compile import templates as _templates
from .._checks import as_count, n_positional, require_arity, require_njit, shown
from .labels import check_labels, posterior_variables
from .protocols import (Kernel, Move, MoveBuilder, Moves, NonCentred, PreparedDraw, anywhere,
                        database_drawer, first_outside, no_proposal, no_statistic)
from .recipe import reduce_by_recipe

__all__ = ["Model"]


def _as_shape(shape, name: str) -> tuple:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, tuple) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 1 for d in shape):
        raise TypeError(f"params[{name!r}] must be a shape: () for a scalar or a tuple of "
                        f"positive ints, got {shape!r}")
    return tuple(int(d) for d in shape)


class Model:
    r"""A Bayesian model for the confidential records.

    Parameters
    ----------
    params : dict of str -> tuple
        Parameter names and shapes (``()`` for a scalar). The sampler's ``theta`` is the
        float64 concatenation of the flattened parameters in this order.
    record_size : int
        Floats per record; the imputed database is an ``(n, record_size)`` float64 array.
    draw_record : numba.njit function
        ``(rng, theta, out) -> None``: writes :math:`x_i \sim f(\cdot \mid \theta)` into ``out``.
    draw_theta : callable or dawrap.kernels.Kernel
        ``(rng, theta, x, stats) -> theta`` or ``-> (theta, accept_prob)``: a Markov kernel
        leaving :math:`p(\theta \mid x)` invariant. Compiled with ``numba.njit``, the whole
        chain runs in compiled code; a plain Python function also works, at a per-iteration
        call cost. Without a conjugate update, build one from a log density with
        :func:`dawrap.samplers.kernels.metropolis` or :func:`~dawrap.samplers.kernels.adaptive_metropolis`.
    draw_prior : callable
        ``(rng) -> theta``: a draw from the prior :math:`p(\theta)`.
    model_stat : numba.njit function, optional
        ``(x_i, out) -> None``: the per-record sufficient statistic; ``stats`` passed to
        ``draw_theta`` is its sum over records, kept current in O(1) per accepted record
        (or recounted once per iteration: ``stat_every``).
    stat_size : int
        Length of ``model_stat``'s output (required with ``model_stat``).
    stat_every : {"record", "iteration"}
        When ``stats`` is brought up to date. ``"record"`` (default): the sweep moves it by
        :math:`t(x_i^\star) - t(x_i)` at every accepted record, O(1) each. ``"iteration"``:
        the sweep does no work for it, and it is recounted from the records once per
        iteration, after the record sweeps, as :math:`\sum_i t(x_i)` (through the
        statistic's sparse entries when it is declared with :func:`dawrap.declare_sparse`):
        cheaper when most proposals are accepted and the recount is a fast pass (the census
        model's counts), and the same ``stats`` for ``draw_theta``, which reads it only at
        the start of the next iteration. On threads and on a dask cluster each group
        recounts its own records (:mod:`dawrap.samplers.parallel`). A ``model_stat`` that
        is the mechanism's statistic function is recounted too, not carried along with the
        mechanism's running total.
    propose_record : numba.njit function, optional
        The general record proposal of Ju et al., supplement Algorithm 2:
        ``(rng, theta, x_i, out) -> log_ratio`` writes a proposal :math:`x_i^\star \sim
        q(\cdot \mid x_i, \theta)` into ``out`` and returns
        :math:`\log\frac{f(x_i^\star\mid\theta)\, q(x_i \mid x_i^\star, \theta)}
        {f(x_i\mid\theta)\, q(x_i^\star \mid x_i, \theta)}`; the sampler multiplies in the
        mechanism ratio. By default records are proposed from ``draw_record`` (Algorithm 1),
        for which that log ratio is zero.
    draw_records : numba.njit function, optional
        ``(rng, theta, out) -> None``: writes ``m`` independent records
        :math:`x_1, \dots, x_m \sim f(\cdot \mid \theta)` into ``out``, of shape
        ``(m, record_size)``, for any ``m >= 1``: the same distribution as ``m`` calls of
        ``draw_record``. When given (and records are proposed from ``f``, not from
        ``propose_record``), the record sweep draws its proposals in blocks through it. For a
        draw with a fixed cost per call (a PyTensor function, say) that is much cheaper; a
        hand-written njit ``draw_record`` gains nothing from it.
    prepared : dawrap.PreparedDraw, optional
        ``draw_record`` (and ``propose_record``) in two parts: ``prepare(theta) -> table``,
        called once per record sweep (theta is fixed during a sweep), and
        ``draw_record(rng, theta, table, out)`` (and ``propose_record(rng, theta, table, x_i,
        out) -> log_ratio``), which follow exactly the same distributions with the table's
        help. The sweep, the chains' starting databases and :meth:`simulate` then draw their
        records through it: a categorical over ``K`` cells costs O(1) per record instead of
        O(K) (:func:`dawrap.random.categorical_table`; the Examples below). Not with
        ``draw_records``.
    theta_support : numba.njit function, optional
        ``(theta) -> bool``: whether theta is in the parameter space. Prior draws, starting
        values and every kernel output are checked against it (a kernel leaving the space
        stops the run with an error naming the iteration).
    record_support : numba.njit function, optional
        ``(x_i) -> bool``: whether a record is possible under the model. Starting databases
        (``init_x``), confidential data given to the baselines and the record sampler's output
        are checked against it.
    noncentred : dawrap.NonCentred, optional
        The records written through noise, :math:`x_i = h(\theta, z_i)`, and the log prior:
        enables the interweaving move of :mod:`dawrap.samplers.interweave` (``dw.sample(...,
        interweave=True)``), which moves theta and all records together.
    family : dawrap.ExponentialFamily, optional
        The model's exponential-family description, which enables the sufficient-statistic
        sampler (``method="suffstat"``) and the baselines on the same registration.
    name : str, optional
        A label stored with results.
    dims : dict of str -> tuple of str, optional
        Dimension names of each parameter's axes (or a deterministic's), as PyMC's ``dims``:
        ``{"a": ("group",)}``; the result's posterior carries them.
    coords : dict of str -> sequence, optional
        Labels of the named dimensions, ``{"group": ["north", "south"]}``.
    start_database : callable, optional
        ``(rng, theta, n, mechanism, s_dp, init_x) -> x``: the ``(n, record_size)`` database
        a record-sampler chain starts from, for a model whose records are not independent
        draws given theta alone (e.g. known group sizes): it checks the user's ``init_x``
        (or builds a database when ``init_x`` is None, possibly from the release ``s_dp``)
        and raises ``ValueError`` naming what does not fit. Without it, the chain starts
        from ``init_x`` or from ``n`` draws of ``draw_record``.
    partition : callable, optional
        ``(x, mechanism) -> dawrap.parallel.Partition``: the model's own split of the records of a
        chain starting from ``x`` into groups that touch disjoint cells of ``mechanism``'s
        statistic (shared cells marked), for the within-chain parallel sweep
        (``dw.Record(threads=...)``, :mod:`dawrap.samplers.parallel`); the census and
        small-area models give one. Unused otherwise.
    deterministics : callable, optional
        ``(params) -> dict``: further posterior variables computed from the kept draws after
        sampling; ``params`` maps each parameter to its draws, shape ``(chain, draw, *shape)``,
        and each returned array leads with ``(chain, draw)`` too. Called once here, on one
        prior draw, to check it (:mod:`dawrap.model.labels`).
    records_move : numba.njit function or dawrap.model.protocols.MoveBuilder, optional
        ``(rng, state, s_dp, params, tuning) -> (state, accept_prob, status)``: a further
        move of the records (and theta) once per iteration, after theta's kernel and before
        the record sweeps, leaving the joint posterior invariant (e.g. the census model's
        exchange of two records' cells, :mod:`dawrap.models.census.pairs`); a
        :class:`~dawrap.model.protocols.MoveBuilder` when it needs the run's mechanism.
    remedies : sequence of str, optional
        What else may make this model's record-sampler chains mix, beyond what follows from
        its other arguments: each a short phrase naming the setting and what it does, e.g.
        the census model's ``"census.model(..., collapsed_moves=4): more collapsed steps
        per person and iteration (this model makes 2), for a unit's rare cells"``. When a
        run's chains have not mixed, ``dw.sample``'s warning lists them after the remedies
        that apply to every model (more draws and tune) and those that follow from the
        model's capabilities (``interweave=True`` where it has ``noncentred``; for
        ``method="suffstat"``, ``variant="marginal"`` where its ``family`` allows it). Only
        advice: not part of what the model computes (a checkpoint's fingerprint leaves it
        out).
    for_release : callable, optional
        ``(mechanism, s_dp, n) -> dawrap.Model``: the model a release resolves to, for a prior
        set from the release itself (an empirical-Bayes choice, e.g. the marginals model's
        ``centre="release"``). :meth:`resolve` calls it; ``dw.sample`` resolves the model
        once, before anything is drawn, for every method that reads the release. The model
        it returns must have the same parameters and record size, and no hook of its own.

    Examples
    --------
    >>> import numba
    >>> import numpy as np
    >>> import dawrap as dw
    >>> @numba.njit
    ... def draw_record(rng, theta, out):
    ...     out[0] = 1.0 if rng.random() < theta[0] else 0.0
    >>> @numba.njit
    ... def count(x_i, out):
    ...     out[0] = x_i[0]
    >>> @numba.njit
    ... def draw_theta(rng, theta, x, stats):
    ...     return np.array([rng.beta(1 + stats[0], 1 + x.shape[0] - stats[0])])
    >>> model = dw.Model(params={"p": ()}, record_size=1, draw_record=draw_record,
    ...                  draw_theta=draw_theta, model_stat=count, stat_size=1,
    ...                  draw_prior=lambda rng: np.array([rng.beta(1, 1)]))

    Categorical records over ``K`` cells, drawn in O(1) from a table that each sweep builds
    once from theta (``PreparedDraw``): the same records as the O(K) scan of ``draw_record``.

    >>> from dawrap.models import dirichlet_multinomial
    >>> @numba.njit
    ... def prepare(theta):                          # O(K), once per sweep
    ...     return dw.random.categorical_table(theta)
    >>> @numba.njit
    ... def draw_from_table(rng, theta, table, out):  # O(1) per record
    ...     out[0] = dw.random.categorical(rng, table[0], table[1])
    >>> @numba.njit
    ... def draw_p(rng, theta, x, stats):            # p | x ~ Dirichlet(1 + counts)
    ...     g = np.array([rng.gamma(1.0 + c) for c in stats])
    ...     return g / g.sum()
    >>> K = 1000
    >>> categorical = dw.Model(params={"p": (K,)}, record_size=1,
    ...                        draw_record=dirichlet_multinomial.draw_record,
    ...                        prepared=dw.PreparedDraw(prepare, draw_from_table),
    ...                        draw_theta=draw_p, model_stat=dirichlet_multinomial.one_hot,
    ...                        stat_size=K, draw_prior=lambda rng: rng.dirichlet(np.ones(K)))
    >>> x = categorical.simulate(np.full(K, 1 / K), n=5, seed=0)
    >>> bool(np.array_equal(x, dirichlet_multinomial.model(np.ones(K)).simulate(
    ...     np.full(K, 1 / K), n=5, seed=0)))                  # the scan's draws
    True
    """

    def __init__(self, params: Mapping[str, tuple], record_size: int, draw_record,
                 draw_theta: Callable, draw_prior: Callable, *, model_stat=None,
                 stat_size: int | None = None, propose_record=None, draw_records=None,
                 prepared=None, family=None,
                 theta_support=None, record_support=None,
                 noncentred=None,
                 name: str | None = None, dims: Mapping | None = None,
                 coords: Mapping | None = None, deterministics: Callable | None = None,
                 start_database: Callable | None = None, partition: Callable | None = None,
                 records_move=None, stat_every: str = "record", remedies=(),
                 for_release: Callable | None = None):
        self._set_params(params)
        self.record_size = as_count(record_size, "record_size")
        self._set_draws(draw_record, draw_theta, draw_prior)
        self._set_statistic(model_stat, stat_size, stat_every)
        self._set_proposals(propose_record, draw_records, prepared)
        from .family import ExponentialFamily

        if family is not None and not isinstance(family, ExponentialFamily):
            raise TypeError(f"family must be a dawrap.ExponentialFamily, got "
                            f"{type(family).__name__}")
        self.family = family
        self.theta_support = _optional_njit(theta_support, "theta_support", "(theta) -> bool",
                                            1, anywhere)
        self.record_support = _optional_njit(record_support, "record_support",
                                             "(x_i) -> bool", 1, anywhere)
        if noncentred is not None and not isinstance(noncentred, NonCentred):
            raise TypeError(f"noncentred must be a dawrap.NonCentred, got "
                            f"{type(noncentred).__name__}")
        self.noncentred = None if noncentred is None else noncentred.checked()
        self.name = name or getattr(draw_record, "__module__", "model")
        self.dims, self.coords = check_labels(dims, coords, self.params)
        self.start_database = _optional_callable(
            start_database, "start_database", "(rng, theta, n, mechanism, s_dp, init_x) -> x")
        self.records_move = _records_move(records_move)
        self.partition = _optional_callable(partition, "partition",
                                            "(x, mechanism) -> dawrap.parallel.Partition")
        self.deterministics = _optional_callable(deterministics, "deterministics",
                                                 "(params) -> dict of draws")
        if not isinstance(remedies, (tuple, list)) or not all(
                isinstance(r, str) and r.strip() for r in remedies):
            raise TypeError(f"remedies must be a sequence of non-empty strings (one remedy "
                            f"each), got {remedies!r}")
        self.remedies = tuple(remedies)
        self.for_release = _optional_callable(for_release, "for_release",
                                              "(mechanism, s_dp, n) -> dawrap.Model")
        # a wrong name or shape is reported now, not after the chains have run
        self.posterior_variables(np.zeros((1, 1, self.theta_size)) if deterministics is None
                                 else self.pack(draw_prior(np.random.default_rng(0)),
                                                "draw_prior(rng)")[None, None])

    def _set_params(self, params) -> None:
        """The parameters' shapes and their slices of the flat theta."""
        if not isinstance(params, Mapping) or not params:
            raise TypeError(f"params must be a non-empty dict of name -> shape, got {params!r}")
        self.params = {}
        for key, shape in params.items():
            if not isinstance(key, str) or not key.isidentifier():
                raise ValueError(f"params keys must be identifiers, got {key!r}")
            self.params[key] = _as_shape(shape, key)
        self.slices, start = {}, 0
        for key, shape in self.params.items():
            size = math.prod(shape)
            self.slices[key] = slice(start, start + size)
            start += size
        self.theta_size = start

    def _set_draws(self, draw_record, draw_theta, draw_prior) -> None:
        """The record draw, theta's kernel and the prior draw, checked. Every user function's
        arity is checked here: a wrong one would otherwise surface inside dw.sample as a
        numba typing error naming neither function nor signature."""
        self.draw_record = require_njit(draw_record, "draw_record", "(rng, theta, out)")
        require_arity(draw_record, "draw_record", "(rng, theta, out)", 3)
        if isinstance(draw_theta, Kernel):  # e.g. dw.kernels.adaptive_metropolis(...)
            require_njit(draw_theta.step, "draw_theta.step",
                         "(rng, theta, x, stats, state, tuning) -> (theta, info)")
            self.theta_compiled = True
        else:
            if not callable(draw_theta):
                raise TypeError("draw_theta must be callable (rng, theta, x, stats) -> theta "
                                "or a dawrap.kernels.Kernel")
            self.theta_compiled = isinstance(draw_theta, numba.core.registry.CPUDispatcher)
            if n_positional(draw_theta) != 4:
                raise TypeError("draw_theta must take exactly (rng, theta, x, stats)")
        self.draw_theta = draw_theta
        if not callable(draw_prior):
            raise TypeError("draw_prior must be callable (rng) -> theta")
        require_arity(draw_prior, "draw_prior", "(rng) -> theta", 1)
        self.draw_prior = draw_prior

    def _set_statistic(self, model_stat, stat_size, stat_every) -> None:
        """The model's statistic (its running sum reaches draw_theta) and when it moves."""
        if model_stat is None:
            if stat_size not in (None, 0):
                raise ValueError("stat_size was given without model_stat")
            self.model_stat, self.stat_size = no_statistic, 0
        else:
            self.model_stat = require_njit(model_stat, "model_stat", "(x_i, out)")
            if stat_size is None:
                raise ValueError("stat_size is required with model_stat: the length of its output")
            require_arity(model_stat, "model_stat", "(x_i, out)", 2)
            self.stat_size = as_count(stat_size, "stat_size")
        self.user_model_stat = model_stat
        if stat_every not in ("record", "iteration"):
            raise ValueError(f"stat_every must be 'record' (stats moved at every accepted "
                             f"record) or 'iteration' (recounted once per iteration), got "
                             f"{stat_every!r}")
        if stat_every == "iteration" and model_stat is None:
            raise ValueError("stat_every='iteration' recounts the model's statistic: give "
                             "model_stat (and stat_size)")
        self.stat_every = stat_every

    def _set_proposals(self, propose_record, draw_records, prepared) -> None:
        """How the sweep proposes a record: a general proposal, a block of draws from f, or
        draws through a table built once per sweep."""
        self.propose_record = _optional_njit(propose_record, "propose_record",
                                             "(rng, theta, x_i, out) -> log_ratio", 4,
                                             no_proposal)
        self.general_proposal = propose_record is not None
        # None when absent: the sweep's flag (dawrap.samplers.record) is whether it is given.
        self.draw_records = _optional_njit(draw_records, "draw_records", "(rng, theta, out) "
                                           "with out of shape (m, record_size)", 3, None)
        if prepared is not None and not isinstance(prepared, PreparedDraw):
            raise TypeError(f"prepared must be a dawrap.PreparedDraw, got "
                            f"{type(prepared).__name__}")
        self.prepared = None if prepared is None else prepared.checked()
        if prepared is not None and draw_records is not None:
            raise ValueError("give draw_records or prepared, not both: each is a way for the "
                             "sweep to draw its proposals from f, and it takes one")
        if prepared is not None and prepared.propose_record is not None \
                and propose_record is None:
            raise ValueError("prepared.propose_record was given without propose_record: "
                             "give the proposal without the table too (the reference, with "
                             "the same distribution)")

    @property
    def fingerprint(self) -> str:
        """What a checkpoint or a stored study is checked against on restart: the factory
        call that built the model (every hyperparameter, exactly) when a :func:`dawrap.recipe`
        built it, else its name."""
        stamp = getattr(self, "_recipe", None)
        if stamp is None:
            return self.name
        module, qualname, args, kwargs = stamp
        return (f"{module}.{qualname}(*{_exact(args)}, "
                f"**{_exact(dict(sorted(kwargs.items())))})")

    def resolve(self, mechanism, s_dp, n: int) -> "Model":
        """The model for the release ``s_dp`` of ``mechanism`` from ``n`` records: this model,
        unless its prior is set from the release (``for_release``), which then builds it.

        Examples
        --------
        >>> from dawrap.models import beta_binomial
        >>> model = beta_binomial.model(a=1, b=1)
        >>> model.resolve(beta_binomial.laplace(epsilon=1.0), 3.2, 10) is model
        True
        """
        if self.for_release is None:
            return self
        resolved = self.for_release(mechanism, s_dp, n)
        if not isinstance(resolved, Model) or resolved.for_release is not None:
            raise TypeError(f"for_release of {self.name} must return a dawrap.Model without a "
                            f"for_release of its own, got {shown(resolved)}")
        if resolved.params != self.params or resolved.record_size != self.record_size:
            raise ValueError(f"for_release of {self.name} returned a model with other "
                             f"parameters ({resolved.params}, record_size "
                             f"{resolved.record_size}) than {self.params}, record_size "
                             f"{self.record_size}")
        return resolved

    def __reduce__(self):
        # Pickled by the recipe that built it (dawrap.recipe): compiled functions and
        # closures cannot be pickled by value.
        return reduce_by_recipe(self)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}: {v}" for k, v in self.params.items())
        return f"Model({self.name}; params {{{shapes}}}, record_size={self.record_size})"

    # -- theta layout --------------------------------------------------------------------------
    def pack(self, theta, name: str = "theta") -> np.ndarray:
        """A flat float64 theta, checked against the model's parameters and support.

        Parameters
        ----------
        theta : dict of str -> array_like, or array_like
            The parameters by name (each of its declared shape), or a flat array of shape
            ``(theta_size,)`` (a scalar too when ``theta_size`` is 1).
        name : str
            How errors name ``theta``.

        Returns
        -------
        ndarray of shape (theta_size,)
            The parameters flattened in the order of ``params``.

        Examples
        --------
        >>> from dawrap.models import dirichlet_multinomial
        >>> model = dirichlet_multinomial.model(alpha=[1, 1, 1])
        >>> model.pack({"p": [0.2, 0.3, 0.5]})
        array([0.2, 0.3, 0.5])
        >>> model.pack([0.2, 0.3], name="init_theta")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: init_theta must have 3 value(s) (parameters {'p': (3,)}) ... got shape (2,)
        """
        if isinstance(theta, Mapping):
            missing = set(self.params) - set(theta)
            extra = set(theta) - set(self.params)
            if missing or extra:
                raise ValueError(f"{name} must have exactly the parameters {list(self.params)}; "
                                 f"missing {sorted(missing)}, unexpected {sorted(extra)}")
            parts = []
            for key, shape in self.params.items():
                value = np.asarray(theta[key], dtype=np.float64)
                if value.shape != shape:
                    raise ValueError(f"{name}[{key!r}] must have shape {shape}, got {value.shape}")
                parts.append(value.ravel())
            flat = np.concatenate(parts)
        else:
            arr = np.asarray(theta)
            if arr.dtype.kind not in "iuf":
                raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
            # Only a flat vector (or a scalar for a one-value theta) is a theta: flattening
            # anything else, e.g. a 1x1 matrix from a kernel, would hide a bug in the kernel.
            size = self.theta_size
            if arr.shape != (size,) and not (size == 1 and arr.shape == ()):
                raise ValueError(f"{name} must have {size} value(s) (parameters "
                                 f"{dict(self.params)}) as an array of shape ({size},)"
                                 f"{' or a scalar' if size == 1 else ''}, got shape {arr.shape}")
            flat = np.atleast_1d(arr.astype(np.float64))
        if not np.all(np.isfinite(flat)):
            raise ValueError(f"{name} must be finite, got {flat}")
        flat = np.ascontiguousarray(flat)
        if not self.theta_support(flat):
            raise ValueError(f"{name} is outside the model's parameter space: {flat}")
        return flat

    def check_records(self, x: np.ndarray, name: str) -> None:
        """Raise naming ``name`` if any row of ``x`` is outside ``record_support``.

        Parameters
        ----------
        x : ndarray of shape (n, record_size)
            A database.
        name : str
            How the error names ``x`` (e.g. ``"init_x"``).

        Raises
        ------
        ValueError
            Naming the first record the model's ``record_support`` rejects.

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.models import beta_binomial
        >>> model = beta_binomial.model()
        >>> model.check_records(np.array([[0.0], [1.0]]), "init_x")      # Bernoulli records
        >>> model.check_records(np.array([[0.0], [0.5]]), "init_x")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: init_x[1] = [0.5] is not a possible record under the model ...
        """
        bad = _templates.bind((first_outside,), {"RECORD_SUPPORT": self.record_support}
                              ).first_outside(x)
        if bad >= 0:
            raise ValueError(f"{name}[{bad}] = {x[bad]} is not a possible record under the "
                             f"model (record_support is False)")

    def simulate(self, theta, n: int, seed=None) -> np.ndarray:
        r"""``n`` records drawn from ``f(. | theta)``: a confidential database for simulations.

        Parameters
        ----------
        theta : dict of str -> array_like, or array_like
            The parameters (see :meth:`pack`).
        n : int
            Number of records.
        seed : int, numpy.random.Generator or None
            Randomness; a Generator is used (and advanced) as it is.

        Returns
        -------
        ndarray of shape (n, record_size)
            The records, drawn independently from :math:`f(\cdot \mid \theta)`.

        Examples
        --------
        >>> from dawrap.models import beta_binomial
        >>> x = beta_binomial.model().simulate({"p": 0.3}, n=1000, seed=1)
        >>> x.shape, bool(abs(x.mean() - 0.3) < 0.05)
        ((1000, 1), True)
        """
        theta = self.pack(theta)
        n = as_count(n, "n")
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        return database_drawer(self.draw_record, self.record_size, self.prepared)(rng, theta,
                                                                                 n)

    def posterior_variables(self, draws: np.ndarray) -> dict:
        """The posterior group of a result: :meth:`unpack` of ``(chain, draw, theta_size)``
        draws, plus the ``deterministics`` (checked against ``dims`` and ``coords``).

        Parameters
        ----------
        draws : ndarray of shape (chain, draw, theta_size)
            Flat thetas.

        Returns
        -------
        dict of str -> ndarray
            Each parameter and deterministic, of shape ``(chain, draw, *shape)``.

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.models import beta_binomial
        >>> variables = beta_binomial.model().posterior_variables(np.full((2, 3, 1), 0.3))
        >>> {name: value.shape for name, value in variables.items()}
        {'p': (2, 3)}
        """
        return posterior_variables(self.unpack(draws), draws.shape[:-1], self.deterministics,
                                   self.dims, self.coords)

    def unpack(self, draws: np.ndarray) -> dict:
        """Split ``(..., theta_size)`` draws into a dict of ``(..., *shape)`` arrays.

        Parameters
        ----------
        draws : ndarray of shape (..., theta_size)
            Flat thetas, e.g. ``(chain, draw, theta_size)``.

        Returns
        -------
        dict of str -> ndarray
            Each parameter, of shape ``(..., *shape)``: the inverse of :meth:`pack`.

        Examples
        --------
        >>> import numpy as np
        >>> from dawrap.models import dirichlet_multinomial
        >>> model = dirichlet_multinomial.model(alpha=[1, 1, 1])
        >>> model.unpack(np.full((2, 4, 3), 1 / 3))["p"].shape          # (chain, draw, 3)
        (2, 4, 3)
        """
        lead = draws.shape[:-1]
        return {key: draws[..., self.slices[key]].reshape(lead + shape)
                for key, shape in self.params.items()}


#: Arrays of at most this many values appear in a fingerprint by value, larger ones by digest.
_SHOWN_VALUES = 64


def _exact(value) -> str:
    """``repr(value)`` with every numpy array and scalar written exactly: numpy's own repr
    rounds to 8 digits and elides arrays of over 1000 values, so two priors that differ in
    the ninth digit, or in the middle of a long array of block totals, once printed alike
    and a stored study of one was resumed for the other. A small array shows its values
    (Python's float repr round-trips), a larger one its shape, type and a SHA-256 of its
    bytes, the same in every process."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return f"array({_exact(value.tolist())})"
        if value.size <= _SHOWN_VALUES:
            return f"array({value.tolist()!r}, dtype={value.dtype.str!r})"
        data = np.ascontiguousarray(value)
        return (f"array(shape={value.shape}, dtype={value.dtype.str!r}, "
                f"sha256={hashlib.sha256(data.tobytes()).hexdigest()})")
    if isinstance(value, np.generic):
        return f"{type(value).__name__}({value.item()!r})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_exact(k)}: {_exact(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple) and hasattr(value, "_fields"):      # a NamedTuple
        return f"{type(value).__name__}(" + ", ".join(
            f"{name}={_exact(getattr(value, name))}" for name in value._fields) + ")"
    if isinstance(value, (list, tuple)):
        items = ", ".join(_exact(v) for v in value)
        if isinstance(value, list):
            return f"[{items}]"
        return f"({items}{',' if len(value) == 1 else ''})"
    return repr(value)


def _records_move(records_move):
    """``Model(records_move=...)`` checked: a :class:`~dawrap.model.protocols.Move`,
    ``Moves`` or ``MoveBuilder``, or None; a bare compiled move is taken as ``Move(step)``."""
    if records_move is None or isinstance(records_move, Moves):
        return records_move
    if isinstance(records_move, MoveBuilder):
        if not callable(records_move.build):
            raise TypeError("records_move: MoveBuilder.build must be callable (mechanism) "
                            "-> a dawrap Move or None")
        return records_move
    move = records_move if isinstance(records_move, Move) else Move(records_move)
    signature = "(rng, state, s_dp, params, tuning) -> (state, accept_prob, status)"
    require_njit(move.step, "records_move", f"{signature}, a dawrap Move or a MoveBuilder")
    require_arity(move.step, "records_move", signature, 5)
    return move


def _optional_njit(function, name: str, signature: str, arity: int, default):
    """An optional user function: ``default`` when None, else checked compiled with ``arity``
    positional arguments (a TypeError naming ``name`` and its ``signature`` otherwise)."""
    if function is None:
        return default
    checked = require_njit(function, name, signature)
    require_arity(function, name, signature, arity)
    return checked


def _optional_callable(function, name: str, signature: str):
    """An optional Python callable, None or callable (a TypeError naming it otherwise)."""
    if function is not None and not callable(function):
        raise TypeError(f"{name} must be callable {signature}")
    return function
