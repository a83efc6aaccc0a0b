"""The user-function protocols, written once: the theta :class:`Kernel`, the non-centred
parameterisation :class:`NonCentred`, the record draw with a per-sweep table
:class:`PreparedDraw`, the defaults a :class:`dawrap.Model` fills in for the functions a user
leaves out, and the compiled helpers that apply a model's functions to a whole database.

The signatures (compiled with ``numba.njit`` unless marked Python; ``out`` arguments are
written in place):

====================  ==========================================  ==========================
function              signature                                   role
====================  ==========================================  ==========================
``draw_record``       ``(rng, theta, out)``                       a record from f(. | theta)
``draw_records``      ``(rng, theta, out)``, ``out`` of shape     m independent records from
                      ``(m, record_size)``                        f(. | theta) (optional)
``propose_record``    ``(rng, theta, x_i, out) -> log_ratio``     a record proposal q
``prepared``          :class:`PreparedDraw`: ``prepare(theta) ->  draw_record (and
                      table``, ``draw_record(rng, theta, table,   propose_record) with a
                      out)``, optional ``propose_record(rng,      table built once per sweep
                      theta, table, x_i, out) -> log_ratio``      (optional)
``model_stat``        ``(x_i, out)``                              running sums for draw_theta
``draw_theta``        ``(rng, theta, x, stats) -> theta`` or      the non-private update (may
                      ``(theta, accept_prob)``, or a Kernel       be Python)
``draw_prior``        ``(rng) -> theta``                          a prior draw (Python)
``theta_support``     ``(theta) -> bool``                         the parameter space
``record_support``    ``(x_i) -> bool``                           the record space
``start_database``    ``(rng, theta, n, mechanism, s_dp,          a chain's starting
                      init_x) -> x`` (Python)                     database (optional)
``records_move``      :class:`Move`: ``step(rng, state, s_dp,     a further move each
                      params, tuning) -> (state, accept_prob,     iteration (optional)
                      status)``, or a :class:`MoveBuilder`
====================  ==========================================  ==========================
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numba
import numpy as np

from ..compile import templates as _templates
from .._checks import as_count, require_arity, require_njit, scale_vector

__all__ = ["Kernel", "NonCentred", "PreparedDraw", "Move", "Moves", "MoveBuilder", "no_state", "anywhere",
           "no_statistic", "no_proposal", "no_records", "no_prepare", "no_prepared_draw",
           "no_prepared_proposal", "draw_database", "database_drawer", "prepared_names",
           "first_outside"]


class Kernel(NamedTuple):
    """A theta kernel with per-chain state: a compiled ``step(rng, theta, x, stats, state,
    tuning) -> (theta, info)`` and ``init_state(theta)``, the per-chain state that
    ``step`` may update in place while ``tuning`` (see :mod:`dawrap.kernels`): a float64
    array, or a NamedTuple of float64 arrays (typed fields, as the built-in kernels'
    ``RandomWalkState`` and ``HmcState``; a checkpoint stores them flattened).

    Attributes
    ----------
    step : numba.njit function
        ``(rng, theta, x, stats, state, tuning) -> (theta, info)``: ``info`` the step's
        acceptance probability (NaN for a kernel that always moves), or a tuple of floats,
        one per name in ``stats`` (e.g. HMC's acceptance probability, divergence, step size
        and leapfrog steps).
    init_state : callable
        ``(theta) -> state``: a chain's state at the start of warm-up (a float64 array or a
        NamedTuple of them).
    name : str
        A label stored with results.
    stats : tuple of str
        The names of ``info``'s values: each becomes a variable of the result's
        ``sample_stats`` (default: the acceptance probability alone, ``theta_accept``).

    Examples
    --------
    A conjugate Beta draw that counts the warm-up iterations in its state:

    >>> import numba
    >>> import numpy as np
    >>> import dawrap as dw
    >>> @numba.njit
    ... def step(rng, theta, x, stats, state, tuning):
    ...     if tuning:
    ...         state[0] += 1.0
    ...     return np.array([rng.beta(1 + stats[0], 1 + x.shape[0] - stats[0])]), np.nan
    >>> kernel = dw.kernels.Kernel(step, lambda theta: np.zeros(1), name="counted_beta")
    >>> state = kernel.init_state(np.array([0.5]))
    >>> theta, accept_prob = kernel.step(np.random.default_rng(0), np.array([0.5]),
    ...                                  np.zeros((10, 1)), np.array([3.0]), state, True)
    >>> state
    array([1.])
    """
    step: object                     # njit (rng, theta, x, stats, state, tuning) -> (theta, info)
    init_state: Callable             # (theta) -> float64 array or NamedTuple of them
    name: str = "kernel"
    stats: tuple = ("theta_accept",)  # the names of info's values (sample stats)


def no_state(theta) -> np.ndarray:
    """The state of a kernel that keeps none."""
    return np.empty(0)


class NonCentred(NamedTuple):
    """A model's non-centred parameterisation (all ``numba.njit``).

    Attributes
    ----------
    record_from_noise : ``(theta, z_i, out) -> None``
        Writes :math:`x_i = h(\\theta, z_i)` into ``out``.
    noise_from_record : ``(rng, theta, x_i, z_out) -> None``
        Writes a draw of :math:`z_i \\sim p(z_i \\mid x_i, \\theta)` into ``z_out``; for every
        such draw ``record_from_noise(theta, z_i)`` must give back ``x_i``.
    log_prior : ``(theta) -> float``
        :math:`\\log p(\\theta)` up to a constant; ``-inf`` outside the parameter space.
    noise_size : int
        Floats per record's noise.
    initial_scale : float or array
        Random-walk proposal sd for theta before warm-up has learned one.
    threshold : float, optional
        The estimated fraction of missing information from which ``interweave=None`` turns
        the move on for mixing; default :data:`dawrap.samplers.interweave.AUTO_THRESHOLD`,
        measured for maps that cost about what a record update does. A costlier map breaks
        even later (``poisson_gamma``'s, which sums the Poisson CDF, at about 0.85). The
        automatic choice turns the move on regardless where the release has separate modes
        (:mod:`dawrap.runner.modes`).

    Examples
    --------
    Normal records with known sd 2 and a N(0, 1) prior on the mean ``mu``:
    :math:`x_i = \\mu + 2 z_i`, :math:`z_i \\sim N(0, 1)`, and given the record the noise is
    determined, :math:`z_i = (x_i - \\mu) / 2`.

    >>> import numba
    >>> import dawrap as dw
    >>> @numba.njit
    ... def record_from_noise(theta, z_i, out):
    ...     out[0] = theta[0] + 2.0 * z_i[0]
    >>> @numba.njit
    ... def noise_from_record(rng, theta, x_i, z_out):
    ...     z_out[0] = (x_i[0] - theta[0]) / 2.0
    >>> @numba.njit
    ... def log_prior(theta):
    ...     return -0.5 * theta[0] ** 2
    >>> noncentred = dw.NonCentred(record_from_noise, noise_from_record, log_prior,
    ...                            initial_scale=0.2)

    ``dw.Model(..., noncentred=noncentred)`` then enables ``dw.Record(interweave=...)``.
    """
    record_from_noise: object
    noise_from_record: object
    log_prior: object
    noise_size: int = 1
    initial_scale: object = 0.1
    threshold: float | None = None

    def checked(self) -> "NonCentred":
        """This parameterisation with its functions checked (compiled with ``numba.njit``)
        and its sizes normalised: what :class:`dawrap.Model` stores.

        Returns
        -------
        NonCentred
            ``noise_size`` an int, ``initial_scale`` a tuple of floats (hashable, so that the
            interweaving move compiles once per parameterisation).

        Raises
        ------
        TypeError
            Naming the function that is not compiled with ``numba.njit``.

        Examples
        --------
        >>> import dawrap as dw
        >>> dw.NonCentred(print, print, print).checked()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: record_from_noise must be a numba.njit-compiled function (theta, z_i, out)...
        """
        require_njit(self.record_from_noise, "record_from_noise", "(theta, z_i, out)")
        require_njit(self.noise_from_record, "noise_from_record", "(rng, theta, x_i, z_out)")
        require_njit(self.log_prior, "log_prior", "(theta) -> float")
        scale = scale_vector(self.initial_scale, "initial_scale")
        threshold = self.threshold
        if threshold is not None:
            if isinstance(threshold, (bool, np.bool_)) or not isinstance(
                    threshold, (int, float, np.integer, np.floating)) or not 0 <= threshold:
                raise ValueError(f"threshold must be None or a fraction of missing information "
                                 f">= 0 (above 1: never for mixing), got {threshold!r}")
            threshold = float(threshold)
        # A tuple, so that the parameterisation is hashable and its move compiled once.
        return self._replace(noise_size=as_count(self.noise_size, "noise_size"),
                             initial_scale=tuple(float(v) for v in scale), threshold=threshold)


class Move(NamedTuple):
    """A model's records move, run each iteration between theta's step and the record
    sweeps (``Model(records_move=...)``), and what a chain needs to know of it.

    Attributes
    ----------
    step : numba.njit function
        ``(rng, state, s_dp, params, tuning) -> (state, accept_prob, status)``: the move on
        the whole database, leaving the joint posterior invariant.
    name : str
        How messages name it (say how to turn it off).
    group : dawrap.extend.GroupMove, optional
        Its form that runs in every group of a grouped chain at once
        (:mod:`dawrap.samplers.group_moves`); without one, a chain on threads runs it on the
        whole database between the grouped sweeps, and a chain on a cluster is refused (a
        chain without the move would be another chain: the user turns it off by name).
    frees_shared_cells : bool
        It changes records while keeping the totals of coarse cells (e.g. the census
        model's exchange of two persons' cells within a coarse unit), so precise cells shared
        by the groups of a grouped chain do not stall it, and ``dw.sample`` does not warn
        about them (:func:`dawrap.samplers.parallel.warn_pinned_pieces`); on threads it then
        runs on the whole database when the shared cells' pieces are pinned (in a group it
        could not change a group's part of them).

    Examples
    --------
    >>> import numba
    >>> from dawrap.model.protocols import Move
    >>> @numba.njit
    ... def stay(rng, state, s_dp, params, tuning):
    ...     return state, 1.0, 0
    >>> Move(stay, "stay").parts[0].name
    'stay'
    """
    step: object
    name: str = "records_move"
    group: object = None
    frees_shared_cells: bool = False

    @property
    def parts(self) -> tuple:
        """The moves it runs, in order: itself."""
        return (self,)


class Moves(NamedTuple):
    """Records moves run one after another (:meth:`of`): each leaves the posterior
    invariant, so their sequence does. A grouped chain runs each part on its own (in its
    groups where it has a group form); the compiled ``step`` runs them all on the whole
    database, reporting the acceptance rate of the last part that proposed.

    Examples
    --------
    >>> import numba
    >>> from dawrap.model.protocols import Move, Moves
    >>> @numba.njit
    ... def stay(rng, state, s_dp, params, tuning):
    ...     return state, 1.0, 0
    >>> both = Moves.of(Move(stay, "a"), Move(stay, "b"))
    >>> both.name, len(both.parts)
    ('a; b', 2)
    """
    parts: tuple
    step: object

    @classmethod
    def of(cls, *moves) -> "Move | Moves":
        """The sequence of ``moves`` (each a :class:`Move` or a :class:`Moves`), flattened;
        a single move is returned as it is."""
        parts = tuple(part for move in moves for part in move.parts)
        if len(parts) == 1:
            return parts[0]
        step = parts[0].step
        for part in parts[1:]:
            step = _in_sequence(step, part.step)
        return cls(parts, step)

    @property
    def name(self) -> str:
        """The parts' names."""
        return "; ".join(part.name for part in self.parts)

    @property
    def frees_shared_cells(self) -> bool:
        """When some part does."""
        return any(part.frees_shared_cells for part in self.parts)


def _in_sequence(a, b):
    """The compiled move running ``a`` then ``b`` (the rate of the last that proposed)."""
    # cached on disk only if both moves are (one over a large array cannot be, and numba
    # would warn on each run that the sequence calling it cannot either)
    @numba.njit(nogil=True, cache=getattr(a, "disk_cached", False)
                and getattr(b, "disk_cached", False))
    def move(rng, state, s_dp, params, tuning):
        state, rate_a, status = a(rng, state, s_dp, params, tuning)
        if status != 0:  # (dawrap.samplers.status.OK)
            return state, rate_a, status
        state, rate_b, status = b(rng, state, s_dp, params, tuning)
        return state, (rate_a if rate_b != rate_b else rate_b), status

    return move


class MoveBuilder(NamedTuple):
    """A model's ``records_move`` that depends on the run's mechanism (its statistic's
    entries and its density, e.g. a move that changes two records at once and must weigh the
    cells both touch): ``build(mechanism)`` returns the :class:`Move` (or :class:`Moves`),
    or None for no move with this mechanism. Called once per run, when the chain is set up.

    Examples
    --------
    >>> from dawrap.model.protocols import MoveBuilder
    >>> def build(mechanism):  # a move only for mechanisms with a sparse statistic
    ...     return None if mechanism.sparse is None else ...
    >>> MoveBuilder(build, "pairs").name
    'pairs'
    """
    build: object
    name: str = "records_move"

    @classmethod
    def in_turn(cls, *builders) -> "MoveBuilder | None":
        """One builder running the moves of ``builders`` (None entries skipped) one after
        another (:meth:`Moves.of`); a builder that builds None for a mechanism drops out.

        Examples
        --------
        >>> from dawrap.model.protocols import MoveBuilder
        >>> MoveBuilder.in_turn(None, MoveBuilder(lambda m: None, "b")).name
        'b'
        """
        builders = [b for b in builders if b is not None]
        if len(builders) <= 1:
            return builders[0] if builders else None

        def build(mechanism):
            built = [b.build(mechanism) for b in builders]
            built = [move for move in built if move is not None]
            return Moves.of(*built) if built else None

        return cls(build, "; ".join(b.name for b in builders))


class PreparedDraw(NamedTuple):
    r"""A model's record draw split in two: a table built from theta once per record sweep
    (all ``numba.njit``), and draws that use it. theta is fixed during a sweep, so whatever
    a draw from :math:`f(\cdot \mid \theta)` needs (the running sums of a categorical, a
    Cholesky factor) need not be rebuilt for each of the ``n`` records.

    The sampler calls ``prepare`` at the start of each record sweep, and to draw a database
    (a chain's start, :meth:`dawrap.Model.simulate`), then the draws below for every record.
    They must follow exactly the distributions of the model's own ``draw_record`` and
    ``propose_record``, which stay the reference (used once per probe and where a single
    record is drawn).

    Attributes
    ----------
    prepare : ``(theta) -> table``
        The table: a float or int array of any fixed number of dimensions (one row per area,
        say), or a tuple of arrays; the same types for every theta. The draws only read it.
    draw_record : ``(rng, theta, table, out) -> None``
        Writes :math:`x_i \sim f(\cdot \mid \theta)` into ``out``: the same distribution
        as the model's ``draw_record``.
    propose_record : ``(rng, theta, table, x_i, out) -> log_ratio``, optional
        The model's ``propose_record`` with the table: the same proposal and log ratio. Without
        it a model with ``propose_record`` proposes without a table.

    Examples
    --------
    A categorical record drawn in O(1) from running sums and a guide table
    (:func:`dawrap.random.categorical_table`), the same draws as the O(K) scan of
    ``dirichlet_multinomial.draw_record``:

    >>> import numba
    >>> import numpy as np
    >>> import dawrap as dw
    >>> @numba.njit
    ... def prepare(theta):
    ...     return dw.random.categorical_table(theta)
    >>> @numba.njit
    ... def draw_from_table(rng, theta, table, out):
    ...     out[0] = dw.random.categorical(rng, table[0], table[1])
    >>> prepared = dw.PreparedDraw(prepare, draw_from_table)
    >>> theta, out = np.array([0.2, 0.3, 0.5]), np.empty(1)
    >>> prepared.draw_record(np.random.default_rng(0), theta, prepared.prepare(theta), out)
    >>> out
    array([2.])

    ``dw.Model(..., prepared=prepared)`` then draws every record of a sweep this way.
    """
    prepare: object
    draw_record: object
    propose_record: object = None

    def checked(self) -> "PreparedDraw":
        """This prepared draw with its functions checked: compiled with ``numba.njit`` and of
        the right arity (what :class:`dawrap.Model` stores).

        Raises
        ------
        TypeError
            Naming the function that is not compiled or takes the wrong arguments.

        Examples
        --------
        >>> import dawrap as dw
        >>> dw.PreparedDraw(print, print).checked()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        TypeError: prepared.prepare must be a numba.njit-compiled function (theta) -> table...
        """
        functions = [(self.prepare, "prepare", "(theta) -> table", 1),
                     (self.draw_record, "draw_record", "(rng, theta, table, out)", 4)]
        if self.propose_record is not None:
            functions.append((self.propose_record, "propose_record",
                              "(rng, theta, table, x_i, out) -> log_ratio", 5))
        for func, name, signature, count in functions:
            require_njit(func, f"prepared.{name}", signature)
            require_arity(func, f"prepared.{name}", signature, count)
        return self


@numba.njit(nogil=True, cache=True)
def anywhere(value):
    """Default support: everything finite is allowed."""
    return True


@numba.njit(nogil=True, cache=True)
def no_statistic(x_i, out):
    """Placeholder model statistic for models that keep no running sums."""


@numba.njit(nogil=True, cache=True)
def no_proposal(rng, theta, x_i, out):
    """Placeholder record proposal: the sampler proposes from ``draw_record`` instead."""
    return 0.0


@numba.njit(nogil=True, cache=True)
def no_records(rng, theta, out):
    """Placeholder batched record draw: the sampler draws one record at a time with
    ``draw_record`` instead (never called)."""


@numba.njit(nogil=True, cache=True)
def no_prepare(theta):
    """Placeholder per-sweep table: the model has no :class:`PreparedDraw` (never called)."""
    return theta


@numba.njit(nogil=True, cache=True)
def no_prepared_draw(rng, theta, table, out):
    """Placeholder prepared record draw (never called)."""


@numba.njit(nogil=True, cache=True)
def no_prepared_proposal(rng, theta, table, x_i, out):
    """Placeholder prepared record proposal (never called)."""
    return 0.0


# The slots of the templates below, bound per model (dawrap._templates checks them).
DRAW_RECORD = _templates.slot("(rng, theta, out): one record from f(. | theta)")
RECORD_SUPPORT = _templates.slot("(x_i) -> bool")
PREPARE = _templates.slot("(theta) -> table: the PreparedDraw's table")
DRAW_PREPARED = _templates.slot("(rng, theta, table, out)")
RECORD_SIZE = _templates.slot("int: floats per record")
PREPARED = _templates.slot("bool: the model has a PreparedDraw (PREPARE, DRAW_PREPARED)")


def draw_database(rng, theta, n):
    """``n`` records from ``f(. | theta)``: the default initial database. A template
    (:mod:`dawrap._templates`): binds ``DRAW_RECORD`` and ``RECORD_SIZE``, and with
    ``PREPARED`` draws through ``PREPARE`` (once) and ``DRAW_PREPARED``."""
    x = np.empty((n, RECORD_SIZE))
    if PREPARED:
        table = PREPARE(theta)
        for i in range(n):
            DRAW_PREPARED(rng, theta, table, x[i])
    else:
        for i in range(n):
            DRAW_RECORD(rng, theta, x[i])
    return x


def database_drawer(draw_record, record_size: int, prepared: PreparedDraw | None = None):
    """The compiled ``draw_database(rng, theta, n)`` for a model's ``draw_record``, or its
    ``prepared`` draw when it has one."""
    return _templates.bind((draw_database,), dict(prepared_names(prepared),
                                                  DRAW_RECORD=draw_record,
                                                  RECORD_SIZE=record_size)).draw_database


def prepared_names(prepared: PreparedDraw | None) -> dict:
    """The template names of a model's prepared draw: ``PREPARED``, ``PREPARE``,
    ``DRAW_PREPARED`` (placeholders when it has none)."""
    if prepared is None:
        return {"PREPARED": False, "PREPARE": no_prepare, "DRAW_PREPARED": no_prepared_draw}
    return {"PREPARED": True, "PREPARE": prepared.prepare,
            "DRAW_PREPARED": prepared.draw_record}


def first_outside(x):
    """Index of the first row of ``x`` outside ``RECORD_SUPPORT``, or -1. A template
    (:mod:`dawrap._templates`)."""
    for i in range(x.shape[0]):
        if not RECORD_SUPPORT(x[i]):
            return i
    return -1
