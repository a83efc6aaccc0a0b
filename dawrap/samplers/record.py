r"""The record-level data-augmentation sampler (Ju, Awan, Gong & Rao 2022), compiled.

One iteration (Algorithm 1; supplement Algorithm 2 with a user proposal):

1. :math:`\theta \leftarrow K(\theta, \cdot \mid x)`, the user's kernel for
   :math:`p(\theta \mid x)`;
2. for :math:`i = 1..n`: propose :math:`x_i^\star \sim f(\cdot\mid\theta)` (or
   :math:`q(\cdot \mid x_i, \theta)`; proposals from f may be drawn ahead in blocks, see
   :data:`BLOCK`, or from a table built once per sweep, :class:`dawrap.PreparedDraw`),
   update the running total
   :math:`T^\star = T - t(x_i) + t(x_i^\star)` in O(1) and accept with probability
   :math:`\min\{1, g(s_{dp}, T^\star)/g(s_{dp}, T)\}` (times the Hastings ratio of ``q``).

Written in the BlackJAX style: ``init`` builds a :class:`RecordState` and ``step`` advances
it by one iteration; what an iteration needs besides the state and the model's functions (the
release, the mechanism's parameters, the sweeps per iteration) is one :class:`Inputs` value.
The database ``x`` and the running sums live in arrays that the sweep updates in place, so
memory stays at one ``(n, record_size)`` array per chain whatever the number of draws.

The functions that call the model's functions are *templates* (:mod:`dawrap._templates`):
they call them by the global names below, and :func:`bind_chain` compiles one copy per model,
kernel and move, returned as a :class:`Chain`. A model's functions thus compile into one fused
loop, with its sizes and flags as compile-time constants, and the copy of a built-in model
loads from numba's disk cache in later processes instead of compiling again.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ..compile import templates as _templates
from ..compile.templates import slot
from ..model.protocols import (anywhere, draw_database, no_prepare, no_prepared_draw,
                               no_prepared_proposal, no_records)
from .arrays import add_into, all_finite, copy_into
from . import loop, entries_path
from .loop import as_floats
from .entries_path import (merge_entries, entries_sums, entries_consistency, prefetch,
                           PREFETCH_AHEAD, PREFETCH_FROM_CELLS)
from ..mechanisms.families import of_coordinate
from ..mechanisms.separable import no_coordinate, no_entries, no_model_entries

__all__ = ["RecordFunctions", "RecordState", "StepInfo", "RecordInfo", "Trace", "Inputs",
           "Chain", "SAMPLE_STATS", "sample_stats", "SweepOptions", "bind_chain", "prepared_fields", "no_move", "given_theta",
           "given_theta_state", "schedule", "running_total", "STATUS_MESSAGES",
           "REFRESH_EVERY", "BLOCK", "anywhere"]

# The slots of the templates below, bound per model by bind_chain (dawrap._templates checks
# every binding against them). The model's and the mechanism's functions (RecordFunctions'
# fields, in capitals):
DRAW_RECORD = slot("(rng, theta, out): one record from f(. | theta)")
PROPOSE_RECORD = slot("(rng, theta, x_i, out) -> log Hastings ratio")
MODEL_STAT = slot("(x_i, out): the model's statistic of a record")
MECH_STAT = slot("(x_i, s_dp, out): the mechanism's statistic of a record")
LOG_DENSITY = slot("(s_dp, t, params) -> log g(s_dp | t)")
DRAW_RECORDS = slot("(rng, theta, out): out.shape[0] records at once")
THETA_SUPPORT = slot("(theta) -> bool")
RECORD_SUPPORT = slot("(x_i) -> bool")
ENTRIES = slot("(x_i, s_dp, index, value) -> count: the mechanism's statistic as pairs")
MODEL_ENTRIES = slot("(x_i, index, value) -> count: the model's statistic as pairs")
COORDINATE_LOG_DENSITY = slot("(s_j, t_j, j, params) -> float")
PREPARE = slot("(theta) -> table: the PreparedDraw's table")
DRAW_PREPARED = slot("(rng, theta, table, out)")
PROPOSE_PREPARED = slot("(rng, theta, table, x_i, out) -> log Hastings ratio")
# Compile-time constants: floats per record, per mechanism statistic, per model statistic;
# the most (index, value) pairs of the entries path (0: dense); the sweep's flags.
RECORD_SIZE = slot("int: floats per record")
MECH_STAT_SIZE = slot("int: floats of the mechanism's statistic")
MODEL_STAT_SIZE = slot("int: floats of the model's statistic")
NNZ = slot("int: most pairs of ENTRIES (0: the dense path)")
MODEL_NNZ = slot("int: most pairs of MODEL_ENTRIES (0: dense)")
USER_PROPOSAL = slot("bool: propose with PROPOSE_RECORD (else draw from f)")
SAME_STATISTIC = slot("bool: the model's statistic is the mechanism's")
LAZY_STATS = slot("bool: the model's statistic is recounted from the records once per "
                  "iteration (Model(stat_every='iteration')), not moved per record")
RANDOM_SCAN = slot("bool: visit n records at random")
ON_STACK = slot("bool: the per-record buffers fit on the stack")
BATCHED = slot("bool: proposals from DRAW_RECORDS, BLOCK at a time")
PREPARED = slot("bool: the model has a PreparedDraw (databases are drawn through it)")
PREPARED_PROPOSALS = slot("bool: the sweep proposes through the PreparedDraw's table")
# The entries path's per-cell block (RecordState.cells): column 1 holds the mechanism's
# parameter of each cell (its coordinate density reads params[j] only: the built-in ones);
# column 3 holds the model's counts (stat_size == size).
CELL_PARAMS = slot("bool: the block holds the mechanism's parameter of each cell")
CELL_COUNTS = slot("bool: the block holds the model's counts")
# The chain's pieces: the record sweep given its table (pass) and the table, which
# update_records builds once per iteration; the extra theta move; the compiled theta kernel.
SWEEP_PASS = slot("(rng, state, s_dp, params, table) -> (state, StepInfo)")
SWEEP_TABLE = slot("(theta) -> table, or a placeholder without PREPARED_PROPOSALS")
MOVE = slot("(rng, state, s_dp, params, tuning) -> (state, accept_prob, status)")
RECOUNT_STATS = slot("(x, stats) -> status: the model's statistic recounted from x")
KERNEL_STEP = slot("(rng, theta, x, stats, kernel_state, tuning) -> (theta, accept_prob)")
REFRESH = slot("(state, s_dp, params) -> (state, status)")

#: Running totals are recomputed from ``x`` every this many iterations, so that floating-point
#: drift of the O(1) updates (continuous statistics) cannot accumulate over a long run.
REFRESH_EVERY = 1000

#: With a model's batched ``draw_records``, the sweep draws its proposals this many at a
#: time: one call per block amortises a draw's fixed cost per call, and the block's memory,
#: ``BLOCK * record_size`` floats, stays small whatever ``n`` (no second copy of the database).
BLOCK = 256

# One status enum for every compiled loop (dawrap.samplers.status).
from .status import (OK, BAD_THETA, BAD_THETA_SIZE, BAD_RATIO, BAD_RECORD,  # noqa: E402
                     BAD_STATS, BAD_SUPPORT, BAD_DRIFT, BAD_RECORD_SUPPORT, BAD_ENTRIES,
                     message)
#: The record sampler's failures (every code its loops can return), worded for draw_theta.
STATUS_MESSAGES = {code: message(code) for code in (
    BAD_THETA, BAD_THETA_SIZE, BAD_RATIO, BAD_RECORD, BAD_STATS, BAD_SUPPORT, BAD_DRIFT,
    BAD_RECORD_SUPPORT, BAD_ENTRIES)}


class RecordFunctions(NamedTuple):
    """The compiled pieces a chain is made of (all ``numba.njit``), bound by
    :func:`bind_chain` under the same names in capitals."""
    draw_record: object     # (rng, theta, out)
    propose_record: object  # (rng, theta, x_i, out) -> log Hastings ratio
    model_stat: object      # (x_i, out)
    mech_stat: object       # (x_i, s_dp, out)
    log_density: object     # (s_dp, t, params) -> log g
    theta_support: object = anywhere  # (theta) -> bool
    record_support: object = anywhere  # (x_i) -> bool, checked at every refresh
    # The entries path (dawrap.samplers.entries_path): the mechanism's and the model's
    # statistics as at most nnz / model_nnz (index, value) pairs (0: dense), and the
    # mechanism's density per coordinate.
    entries: object = no_entries  # (x_i, s_dp, index, value) -> count
    model_entries: object = no_model_entries  # (x_i, index, value) -> count
    coordinate_log_density: object = no_coordinate  # (s_j, t_j, j, params) -> float
    nnz: int = 0
    model_nnz: int = 0
    # (rng, theta, out) with out of shape (m, record_size): m records at once (optional)
    draw_records: object = no_records
    # The model's PreparedDraw (optional): (theta) -> table, once per sweep; then
    # (rng, theta, table, out) and (rng, theta, table, x_i, out) -> log ratio per record.
    prepare: object = no_prepare
    draw_prepared: object = no_prepared_draw
    propose_prepared: object = no_prepared_proposal


def prepared_fields(prepared) -> dict:
    """The :class:`RecordFunctions` fields of a model's :class:`dawrap.PreparedDraw` (none
    when it is None)."""
    if prepared is None:
        return {}
    fields = {"prepare": prepared.prepare, "draw_prepared": prepared.draw_record}
    if prepared.propose_record is not None:
        fields["propose_prepared"] = prepared.propose_record
    return fields


#: A state without the entries path's per-cell block (the dense path's, and one built by hand;
#: empty, so nothing can write to it, and writable, so its type is that of ``init``'s).
NO_CELLS = np.zeros((0, 4))


class RecordState(NamedTuple):
    """State of one chain. ``x``, ``stats`` and ``total`` are updated in place.

    On the entries path (:mod:`dawrap.samplers.entries_path`) ``cells`` holds, row ``j`` for cell
    ``j``, the release, the mechanism's parameter of that cell, the running total and the
    model's count (when ``stat_size == size``), and ``total`` and ``stats`` are views of its
    columns (:func:`arrange`): a record update reads and writes one row, one cache line, per
    cell it touches instead of one line in each of four arrays (at 10^6 cells the arrays
    outgrow the caches and every line is a miss: ``benchmarks/tables_locality.py``).
    """
    theta: np.ndarray   # (theta_size,)
    x: np.ndarray       # (n, record_size) imputed confidential database
    stats: np.ndarray   # (stat_size,) sum_i model_stat(x_i)
    total: np.ndarray   # (size,) T = sum_i t(x_i, s_dp), the mechanism's statistic
    log_g: float        # log g(s_dp, T), cached so no record update recomputes it
    kernel_state: np.ndarray  # the theta kernel's own state (e.g. an adapted step size)
    move_state: np.ndarray    # the extra theta move's state (see dawrap.interweave)
    clock: np.ndarray   # (2,) int64: the iteration and the warm-up's length, set in place
    #                     by schedule before each step (not saved: the loop sets it again)
    cells: np.ndarray = NO_CELLS  # (size, 4) on the entries path (above), else (0, 4)


class StepInfo(NamedTuple):
    """What one sweep (or an iteration's sweeps and move, :func:`update_records`) saw."""
    accept_rate: float      # fraction of record proposals accepted
    min_accept_prob: float  # smallest acceptance probability met in the sweep
    status: int             # OK, or the code of what went wrong (see STATUS_MESSAGES)
    move_accept: float      # acceptance probability of the extra theta move, if any


class RecordInfo(NamedTuple):
    """What one iteration reports (:func:`step`): its status, then the sample stats, in the
    order of :func:`sample_stats` (the loop stores them, :func:`dawrap.samplers.loop.keep`)."""
    status: int             # OK, or the code of what went wrong (see STATUS_MESSAGES)
    accept_rate: float      # fraction of record proposals accepted in the iteration's sweeps
    min_accept_prob: float  # smallest record acceptance probability met in the iteration
    kernel: tuple           # the theta kernel's info, its Kernel.stats (theta_accept: NaN, none)
    move_accept: float      # the extra theta move's (NaN: no move)


class Trace(NamedTuple):
    """Preallocated per-chain output, one row per kept draw: the run loop's outputs
    (:func:`dawrap.samplers.loop.run`, called as ``chain.run(..., *trace)``)."""
    theta: np.ndarray  # (draws, theta_size)
    stats: np.ndarray  # (draws, len(sample_stats(kernel))): RecordInfo's sample stats
    total: np.ndarray  # (draws, size), or (0, size) when not kept


class Inputs(NamedTuple):
    """What an iteration needs besides the chain's state and the model's functions (those
    are compiled into the :class:`Chain`): plain data, so its type is the same in every
    process and the chain can be cached."""
    s_dp: np.ndarray    # (size,) the release
    params: object      # the mechanism's parameters, passed to log_density
    sweeps: int         # record sweeps per theta update


class Chain(NamedTuple):
    """One model's compiled chain (from :func:`bind_chain`); each field is a dispatcher.

    ``init(theta, x, inputs, kernel_state, move_state) -> RecordState`` and
    ``step(rng, state, inputs) -> (state, RecordInfo)`` are the sampler (the protocol of
    :mod:`dawrap.samplers.loop`); ``run(rng, state, inputs, start, stop, tune, *trace) ->
    (state, done, status)`` is the one run loop bound to ``step`` and :func:`schedule`, and
    ``keep(row, state, info, *trace)`` its storing of one draw (the runner's parallel sweep,
    which loops in Python, stores through it); ``sweep(rng, state, s_dp, params)`` is one
    record sweep. The
    rest check a database: ``consistency(state, s_dp)``, ``refresh(state, s_dp, params)``,
    ``first_overflow(x, s_dp)``, ``draw_guarded(rng, theta, count)``,
    ``draw_database(rng, theta, n)``, ``check_entries(x, s_dp, compared)``,
    ``draw_batches_guarded(rng, theta, count)``; ``arrange(state, s_dp, params)`` gives a
    state restored from its saved fields the entries path's per-cell block.
    """
    init: object
    step: object
    run: object
    keep: object
    sweep: object
    update_records: object
    consistency: object
    refresh: object
    first_overflow: object
    draw_guarded: object
    draw_database: object
    check_entries: object
    draw_batches_guarded: object
    arrange: object


#: The per-iteration statistics the record sampler emits with the default theta kernel info
#: (the fields of :class:`RecordInfo` after its status, the kernel's expanded: each a column
#: of ``Trace.stats`` and a variable of the result's ``sample_stats``), with what they mean.
#: Those that are NaN throughout a run (no Metropolis theta kernel, no extra move) are left
#: out of the result.
SAMPLE_STATS = {
    "accept_rate": "fraction of record proposals accepted in the iteration's sweeps",
    "min_accept_prob": "smallest record acceptance probability met in the iteration",
    "theta_accept": "acceptance probability of the theta kernel (a Metropolis step)",
    "move_accept": "mean acceptance probability of the non-centred (interweaving) move",
}


def sample_stats(kernel_stats=("theta_accept",)) -> tuple:
    """The names of the record chain's sample stats, in column order, for a theta kernel
    whose info has the values ``kernel_stats`` (:attr:`dawrap.kernels.Kernel.stats`).

    Examples
    --------
    >>> from dawrap.samplers.record import sample_stats
    >>> sample_stats(("theta_accept", "divergent"))
    ('accept_rate', 'min_accept_prob', 'theta_accept', 'divergent', 'move_accept')
    >>> sample_stats(("accept_rate",))
    Traceback (most recent call last):
    ...
    ValueError: the theta kernel's stats ('accept_rate',) reuse a name of the record chain's own sample stats (accept_rate, min_accept_prob, move_accept) or repeat one: each name is one column of sample_stats, so one would silently replace the other; rename the kernel's
    """
    own = ("accept_rate", "min_accept_prob", "move_accept")
    kernel_stats = tuple(kernel_stats)
    if set(kernel_stats) & set(own) or len(set(kernel_stats)) != len(kernel_stats):
        raise ValueError(f"the theta kernel's stats {kernel_stats} reuse a name of the record "
                         f"chain's own sample stats ({', '.join(own)}) or repeat one: each "
                         f"name is one column of sample_stats, so one would silently replace "
                         f"the other; rename the kernel's")
    return ("accept_rate", "min_accept_prob", *kernel_stats, "move_accept")


def init(theta, x, inputs, kernel_state, move_state):
    """A chain's :class:`RecordState`: the running sums computed from ``x``, the cached
    ``log g``, and the theta kernel's and the extra move's initial states."""
    s_dp = inputs.s_dp
    if NNZ > 0:  # the entries path: O(n nnz + size); bad entries are checked before a run
        stats, total, _, _, _ = entries_sums(x, s_dp, False)
        return arrange(RecordState(theta, x, stats, total,
                                   LOG_DENSITY(s_dp, total, inputs.params), kernel_state,
                                   move_state, np.zeros(2, np.int64), np.zeros((0, 4))),
                       s_dp, inputs.params)
    stats = np.zeros(MODEL_STAT_SIZE)
    total = np.zeros(MECH_STAT_SIZE)     # not s_dp's length: a selection's release is shorter
    buf_s = np.empty(MODEL_STAT_SIZE)
    buf_t = np.empty(MECH_STAT_SIZE)
    for i in range(x.shape[0]):
        MODEL_STAT(x[i], buf_s)
        MECH_STAT(x[i], s_dp, buf_t)
        add_into(stats, buf_s)
        add_into(total, buf_t)
    return RecordState(theta, x, stats, total, LOG_DENSITY(s_dp, total, inputs.params),
                       kernel_state, move_state, np.zeros(2, np.int64), np.zeros((0, 4)))


def arrange(state, s_dp, params):
    """``state`` with the entries path's per-cell block (:class:`RecordState`): a new
    ``(size, 4)`` array holding the release, the parameters (``CELL_PARAMS``), the running
    total and the model's counts (``CELL_COUNTS``) of each cell, with ``total`` and
    ``stats`` views of its columns holding the values they held; O(size). The dense path's
    state is returned as it is. Used by ``init`` and to restore a saved state (a checkpoint
    holds the running sums, not the block), so a restored chain continues bit for bit."""
    if NNZ == 0:
        return state
    size = state.total.shape[0]
    cells = np.zeros((size, 4))
    fill_cells(cells, s_dp, params)
    for j in range(size):
        cells[j, 2] = state.total[j]
    if CELL_COUNTS:
        for j in range(size):
            cells[j, 3] = state.stats[j]
        stats = cells[:, 3]
    else:
        stats = state.stats
    return RecordState(state.theta, state.x, stats, cells[:, 2], state.log_g,
                       state.kernel_state, state.move_state, state.clock, cells)


@numba.njit(nogil=True, cache=True)
def _fill_cells(cells, s_dp, params, with_params):
    for j in range(cells.shape[0]):
        cells[j, 0] = s_dp[j]
        if with_params:  # a parameter the mechanism lacks is NaN: every ratio fails loudly
            cells[j, 1] = params[j] if j < params.shape[0] else math.nan


def fill_cells(cells, s_dp, params):
    """Copy the release and (``CELL_PARAMS``) the parameters into the per-cell block."""
    _fill_cells(cells, s_dp, params, CELL_PARAMS)


def move_model_stat(x_old, x_new, stats, s_old, s_new):
    """``stats += model_stat(x_new) - model_stat(x_old)`` (nothing with ``LAZY_STATS``: the
    statistic is recounted after the iteration's sweeps, :func:`recount_stats`)."""
    if MODEL_STAT_SIZE > 0 and not LAZY_STATS:
        MODEL_STAT(x_old, s_old)
        MODEL_STAT(x_new, s_new)
        for j in range(MODEL_STAT_SIZE):
            stats[j] += s_new[j] - s_old[j]


#: Per-record buffers of at most this many floats live on the stack (see dense_pass).
STACK_FLOATS = 16


@intrinsic
def _stack_floats(typingctx):
    """Pointer to ``STACK_FLOATS`` float64s on the calling function's stack."""

    def codegen(context, builder, signature, args):
        return cgutils.alloca_once(builder, context.get_value_type(types.float64),
                                   size=STACK_FLOATS)

    return types.CPointer(types.float64)(), codegen


def take_proposal(rng, theta, block, taken, left, proposal):
    r"""Copy the block's next record into ``proposal``, first drawing the next
    ``min(BLOCK, left)`` records into ``block`` with ``DRAW_RECORDS`` when all ``BLOCK`` have
    been taken; ``left`` counts the proposals the sweep still needs, this one included (so no
    draw is wasted at the end of a sweep). Returns how many of the block are taken now.

    Why drawing ahead is exact: under Algorithm 1 the proposals :math:`x_1^\star, \dots,
    x_n^\star` of a sweep are independent draws from :math:`f(\cdot \mid \theta)`,
    independent of the current records, of the running totals and of the acceptance
    uniforms, and theta is fixed during a sweep. Drawing a block of them before the uniforms
    of the records in between changes only the order in which the generator's stream is used,
    not the joint law of (proposals, uniforms, visited indices), so the sweep is the same
    Markov kernel. A block never outlives its sweep (theta may move before the next one),
    and it holds no more proposals than the sweep uses.
    """
    if taken == BLOCK:
        DRAW_RECORDS(rng, theta, block[:min(BLOCK, left)])
        taken = 0
    for j in range(RECORD_SIZE):
        proposal[j] = block[taken, j]
    return taken + 1


def recount_stats(x, stats):
    r"""``stats`` :math:`= \sum_i t(x_i)` from scratch, in record order, through the
    model's entries when it declares them (O(n model_nnz)), else densely: what a model with
    ``stat_every="iteration"`` (``LAZY_STATS``) has instead of the sweep's O(1) update per
    accepted record. Returns ``OK``, ``BAD_ENTRIES`` (a broken entries function) or
    ``BAD_STATS`` (a cell not finite).

    Why it is the same chain: the theta kernel is the only reader of ``stats``, and it runs
    at the start of the next iteration, after this recount; the extra move reads the records,
    not ``stats``. The kernel therefore sees :math:`\sum_i t(x_i)` of the current records
    either way; for an integer statistic (counts) the recount and the running sum are the
    same floats, so the draws are bit-identical.
    """
    for j in range(MODEL_STAT_SIZE):
        stats[j] = 0.0
    current = np.empty(RECORD_SIZE)
    index, value = np.empty(max(MODEL_NNZ, 1), np.int64), np.empty(max(MODEL_NNZ, 1))
    buf = np.empty(MODEL_STAT_SIZE)
    for i in range(x.shape[0]):
        for j in range(RECORD_SIZE):  # no view x[i]: see dense_pass
            current[j] = x[i, j]
        if MODEL_NNZ > 0:
            count = MODEL_ENTRIES(current, index, value)
            if count < 0 or count > MODEL_NNZ:
                return BAD_ENTRIES
            for a in range(count):
                j = index[a]
                if j < 0 or j >= MODEL_STAT_SIZE:
                    return BAD_ENTRIES
                stats[j] += value[a]
        else:
            MODEL_STAT(current, buf)
            for j in range(MODEL_STAT_SIZE):
                stats[j] += buf[j]
    return OK if all_finite(stats) else BAD_STATS


def sweep_table(theta):
    """The table a sweep proposes through (``PREPARED_PROPOSALS``: ``PREPARE(theta)``), else
    a placeholder nothing reads. theta is fixed over the sweeps of an iteration, so
    ``update_records`` builds it once per iteration, not once per sweep."""
    if PREPARED_PROPOSALS:
        return PREPARE(theta)
    return 0.0


def dense_sweep(rng, state, s_dp, params):
    """One sweep (:func:`dense_pass`) with its own table: ``Chain.sweep``."""
    return dense_pass(rng, state, s_dp, params, sweep_table(state.theta))


def entries_sweep(rng, state, s_dp, params):
    """One sweep (:func:`entries_pass`) with its own table: ``Chain.sweep``."""
    return entries_pass(rng, state, s_dp, params, sweep_table(state.theta))


def dense_pass(rng, state, s_dp, params, table):
    """Update every record once, in order (step 2 of Algorithm 1), or ``n`` records at
    random (``RANDOM_SCAN``); proposals through ``table`` (:func:`sweep_table` of the
    state's theta) with ``PREPARED_PROPOSALS``.

    With the sizes and flags compile-time constants, LLVM unrolls the small per-record loops
    and keeps the per-record buffers, which live on the stack, in registers. On the heap it
    must assume they may alias the database and the totals and reload after every write.
    Together that makes a record update markedly cheaper (``benchmarks/record_update.py``).
    For the same reason the running sums are worked on in stack copies, written back at the
    end of the sweep (nothing reads them meanwhile).
    """
    theta, x = state.theta, state.x
    n = x.shape[0]
    m, k = MECH_STAT_SIZE, MODEL_STAT_SIZE
    # The stack memory must belong to this function's own frame (a helper returning it
    # would hand back a dangling pointer), hence the allocations written out here.
    if ON_STACK:
        proposal = numba.carray(_stack_floats(), RECORD_SIZE)
        t_old = numba.carray(_stack_floats(), m)
        t_new = numba.carray(_stack_floats(), m)
        total_new = numba.carray(_stack_floats(), m)
        s_old = numba.carray(_stack_floats(), k)
        s_new = numba.carray(_stack_floats(), k)
        total = numba.carray(_stack_floats(), m)
        stats = numba.carray(_stack_floats(), k)
        current = numba.carray(_stack_floats(), RECORD_SIZE)
        copy_into(total, state.total)
        copy_into(stats, state.stats)
    else:
        total, stats = state.total, state.stats
        proposal, current = np.empty(RECORD_SIZE), np.empty(RECORD_SIZE)
        t_old, t_new, total_new = np.empty(m), np.empty(m), np.empty(m)
        s_old, s_new = np.empty(k), np.empty(k)
    if BATCHED:  # proposals from DRAW_RECORDS, BLOCK at a time (take_proposal)
        block = np.empty((BLOCK, RECORD_SIZE))
        taken = BLOCK
    log_g = state.log_g
    accepted = 0
    min_log_alpha = 0.0
    nan_seen = False
    for visit in range(n):
        i = rng.integers(0, n) if RANDOM_SCAN else visit
        # The record is read into a buffer of the sweep's own rather than taken as a view
        # x[i]: a view holds a reference to x, counted (an atomic add and subtract) at every
        # record, a tenth of the cost of a record update (benchmarks/record_update.py).
        for j in range(RECORD_SIZE):
            current[j] = x[i, j]
        # The proposal step: the same in entries_pass and parallel.group_pass. Three copies
        # on purpose: a template shared by the sweeps costs reference counts on its array
        # arguments per record (benchmarks/results/proposal_block_ab.md).
        if USER_PROPOSAL:
            # out starts as a copy of the record, so a proposal may change only some fields.
            for j in range(RECORD_SIZE):
                proposal[j] = current[j]
            if PREPARED_PROPOSALS:
                log_alpha = PROPOSE_PREPARED(rng, theta, table, current, proposal)
            else:
                log_alpha = PROPOSE_RECORD(rng, theta, current, proposal)
        elif BATCHED:
            taken = take_proposal(rng, theta, block, taken, n - visit, proposal)
            log_alpha = 0.0
        elif PREPARED_PROPOSALS:
            DRAW_PREPARED(rng, theta, table, proposal)
            log_alpha = 0.0
        else:
            DRAW_RECORD(rng, theta, proposal)
            log_alpha = 0.0
        MECH_STAT(current, s_dp, t_old)
        MECH_STAT(proposal, s_dp, t_new)
        unchanged = True
        for j in range(m):
            total_new[j] = total[j] + (t_new[j] - t_old[j])
            unchanged = unchanged and t_new[j] == t_old[j]
        if unchanged:
            # g is unchanged, so the mechanism ratio is 1 and (for proposals from f) the
            # record is accepted outright; discrete records land here most of the time.
            log_g_new = log_g
            if not USER_PROPOSAL:
                if not SAME_STATISTIC:
                    move_model_stat(current, proposal, stats, s_old, s_new)
                for j in range(RECORD_SIZE):
                    x[i, j] = proposal[j]
                accepted += 1
                continue
        else:
            log_g_new = LOG_DENSITY(s_dp, total_new, params)
        log_alpha += log_g_new - log_g
        # NaN fails every comparison below, so it is rejected; it is flagged without a
        # branch and reported after the sweep.
        nan_seen |= log_alpha != log_alpha
        if log_alpha < min_log_alpha:
            min_log_alpha = log_alpha
        # A ratio >= 1 is accepted without drawing a uniform.
        if log_alpha >= 0.0 or rng.random() < math.exp(log_alpha):
            if SAME_STATISTIC:
                for j in range(k):
                    stats[j] += t_new[j] - t_old[j]
            else:
                move_model_stat(current, proposal, stats, s_old, s_new)
            for j in range(m):
                total[j] = total_new[j]
            for j in range(RECORD_SIZE):
                x[i, j] = proposal[j]
            log_g = log_g_new
            accepted += 1
    if ON_STACK:
        copy_into(state.total, total)
        copy_into(state.stats, stats)
    # Checked once per sweep rather than per record: a vectorised scan is cheaper than a
    # branch in the hot loop, and the error is raised all the same.
    status = OK
    if nan_seen:
        status = BAD_RATIO
    elif not all_finite(x):
        status = BAD_RECORD
    elif not all_finite(stats):
        status = BAD_STATS
    info = StepInfo(accepted / n, math.exp(min_log_alpha), status, math.nan)
    return RecordState(theta, x, state.stats, state.total, log_g, state.kernel_state,
                       state.move_state, state.clock, state.cells), info


def move_model_stats(x_i, proposal, stats, index, value, touched, delta, s_old, s_new):
    """``stats += model_stat(proposal) - model_stat(x_i)`` through the model's entries when
    it has them (O(model_nnz)), else densely. Returns ``OK``, ``BAD_ENTRIES``, or
    ``BAD_STATS`` when a cell it moved is no longer finite (checked here, so that the sweep
    need not scan all ``stat_size`` cells: O(K) per sweep at a million cells). Nothing with
    ``LAZY_STATS`` (:func:`recount_stats`)."""
    if LAZY_STATS:
        return OK
    if MODEL_NNZ == 0:
        move_model_stat(x_i, proposal, stats, s_old, s_new)
        return OK  # the dense statistic is checked once per sweep
    used = merge_entries(MODEL_ENTRIES(x_i, index, value), index, value, -1.0, MODEL_NNZ,
                         MODEL_STAT_SIZE, touched, delta, 0)
    if used >= 0:
        used = merge_entries(MODEL_ENTRIES(proposal, index, value), index, value, 1.0,
                             MODEL_NNZ, MODEL_STAT_SIZE, touched, delta, used)
    if used < 0:
        return BAD_ENTRIES
    finite = True
    for b in range(used):
        stats[touched[b]] += delta[b]
        finite &= math.isfinite(stats[touched[b]])
    return OK if finite else BAD_STATS


def entries_pass(rng, state, s_dp, params, table):
    """The sweep of a sparse statistic with a separable density
    (:mod:`dawrap.samplers.entries_path`): each record update touches the union of the old and
    the new record's cells only."""
    theta, x, stats, total = state.theta, state.x, state.stats, state.total
    # The release and the parameters of cell j from row j of the per-cell block, beside its
    # total (one cache line); a state built without the block reads the arrays passed.
    arranged = state.cells.shape[0] == MECH_STAT_SIZE
    release = state.cells[:, 0] if arranged else s_dp
    scale = state.cells[:, 1] if arranged and CELL_PARAMS else params
    n = x.shape[0]
    nnz = max(NNZ, MODEL_NNZ)
    proposal, current = np.empty(RECORD_SIZE), np.empty(RECORD_SIZE)
    index, value = np.empty(nnz, np.int64), np.empty(nnz)
    touched, delta = np.empty(2 * nnz, np.int64), np.empty(2 * nnz)
    m_touched, m_delta = np.empty(2 * nnz, np.int64), np.empty(2 * nnz)
    s_old, s_new = np.empty(MODEL_STAT_SIZE), np.empty(MODEL_STAT_SIZE)
    if BATCHED:  # proposals from DRAW_RECORDS, BLOCK at a time (take_proposal)
        block = np.empty((BLOCK, RECORD_SIZE))
        taken = BLOCK
    log_g = state.log_g
    accepted = 0
    min_log_alpha = 0.0
    nan_seen = False
    stats_finite = True  # the cells the sweep moved (a scan of all of them is O(K))
    status = OK
    # Software pipelining (benchmarks/cell_layout.py, results/cell_layout.md): in a
    # systematic scan the record PREFETCH_AHEAD places on is known, so the block's rows of
    # its cells (and theta's entries of the same indices, which a model with one parameter
    # per cell reads there) are asked for now and have arrived by its turn. Hints only: no
    # value and no random number changes. Compiled in only for blocks larger than the
    # caches nearest the core (PREFETCH_FROM_CELLS; MECH_STAT_SIZE is a constant): below,
    # the rows are there already and the extra entries call would be pure cost.
    pipelined = (MECH_STAT_SIZE >= PREFETCH_FROM_CELLS and not RANDOM_SCAN
                 and state.cells.shape[0] == MECH_STAT_SIZE)
    theta_per_cell = theta.shape[0] == MECH_STAT_SIZE
    later = np.empty(RECORD_SIZE)
    for visit in range(n):
        i = rng.integers(0, n) if RANDOM_SCAN else visit
        if pipelined and i + PREFETCH_AHEAD < n:
            for j in range(RECORD_SIZE):
                later[j] = x[i + PREFETCH_AHEAD, j]
            # index is overwritten by the update's own entries below; a broken count is
            # caught there, so here it is only clipped (a prefetch never faults).
            for a in range(min(max(ENTRIES(later, s_dp, index, value), 0), NNZ)):
                prefetch(state.cells, index[a] * state.cells.shape[1])
                if theta_per_cell:
                    prefetch(theta, index[a])
        for j in range(RECORD_SIZE):  # no view x[i]: see dense_pass
            current[j] = x[i, j]
        # The proposal step and the entries' merge: as in dense_pass and
        # parallel.group_pass, copied on purpose (see dense_pass).
        if USER_PROPOSAL:
            for j in range(RECORD_SIZE):
                proposal[j] = current[j]
            if PREPARED_PROPOSALS:
                log_alpha = PROPOSE_PREPARED(rng, theta, table, current, proposal)
            else:
                log_alpha = PROPOSE_RECORD(rng, theta, current, proposal)
        elif BATCHED:
            taken = take_proposal(rng, theta, block, taken, n - visit, proposal)
            log_alpha = 0.0
        elif PREPARED_PROPOSALS:
            DRAW_PREPARED(rng, theta, table, proposal)
            log_alpha = 0.0
        else:
            DRAW_RECORD(rng, theta, proposal)
            log_alpha = 0.0
        used = merge_entries(ENTRIES(current, s_dp, index, value), index, value, -1.0, NNZ,
                             MECH_STAT_SIZE, touched, delta, 0)
        if used >= 0:
            used = merge_entries(ENTRIES(proposal, s_dp, index, value), index, value, 1.0, NNZ,
                                 MECH_STAT_SIZE, touched, delta, used)
        if used < 0:
            status = BAD_ENTRIES
            break
        change = 0.0
        for b in range(used):
            if delta[b] != 0.0:
                j = touched[b]
                change += (COORDINATE_LOG_DENSITY(release[j], total[j] + delta[b], j, scale)
                           - COORDINATE_LOG_DENSITY(release[j], total[j], j, scale))
        log_alpha += change
        nan_seen |= log_alpha != log_alpha
        if log_alpha < min_log_alpha:
            min_log_alpha = log_alpha
        if log_alpha >= 0.0 or rng.random() < math.exp(log_alpha):
            if SAME_STATISTIC:
                for b in range(used):
                    stats[touched[b]] += delta[b]
                    stats_finite &= math.isfinite(stats[touched[b]])
            else:
                moved = move_model_stats(current, proposal, stats, index, value, m_touched,
                                         m_delta, s_old, s_new)
                if moved == BAD_ENTRIES:
                    status = BAD_ENTRIES
                    break
                stats_finite &= moved == OK
            for b in range(used):
                total[touched[b]] += delta[b]
            for j in range(RECORD_SIZE):
                x[i, j] = proposal[j]
            # The cached log g drifts by rounding only; refresh recomputes it.
            log_g += change
            accepted += 1
    if status == OK:
        if nan_seen:
            status = BAD_RATIO
        elif not all_finite(x):
            status = BAD_RECORD
        elif not stats_finite or (MODEL_NNZ == 0 and not SAME_STATISTIC and not all_finite(stats)):
            status = BAD_STATS
    info = StepInfo(accepted / n, math.exp(min_log_alpha), status, math.nan)
    return RecordState(theta, x, stats, total, log_g, state.kernel_state,
                       state.move_state, state.clock, state.cells), info


@numba.njit(nogil=True, cache=True)
def set_theta(state, theta_new):
    """Copy a kernel's output into the state's theta buffer, checking size and finiteness."""
    theta = state.theta
    if theta_new.size != theta.shape[0]:
        return BAD_THETA_SIZE
    flat = theta_new.ravel()
    for j in range(theta.shape[0]):
        if not np.isfinite(flat[j]):
            return BAD_THETA
        theta[j] = flat[j]
    return OK


@numba.njit(nogil=True, cache=True)
def no_move(rng, state, s_dp, params, tuning):
    """The default extra move: none. A move returns ``(state, accept_prob, status)``."""
    return state, math.nan, OK


def update_records(rng, state, inputs, tuning):
    """After theta's kernel: the extra theta move (e.g. the non-centred move of
    :mod:`dawrap.samplers.interweave`), then ``inputs.sweeps`` record sweeps. Returns the
    state and a :class:`StepInfo` over all sweeps."""
    s_dp, params = inputs.s_dp, inputs.params
    state, move_accept, status = MOVE(rng, state, s_dp, params, tuning)
    if status != OK:
        return state, StepInfo(0.0, 0.0, status, move_accept)
    accepted, min_accept = 0.0, 1.0
    table = SWEEP_TABLE(state.theta)  # theta is fixed from here to the iteration's end
    for _ in range(inputs.sweeps):
        state, info = SWEEP_PASS(rng, state, s_dp, params, table)
        if info.status != OK:
            return state, info
        accepted += info.accept_rate
        min_accept = min(min_accept, info.min_accept_prob)
    if LAZY_STATS:  # the model's statistic, once per iteration (recount_stats)
        status = RECOUNT_STATS(state.x, state.stats)
        if status != OK:
            return state, StepInfo(accepted / inputs.sweeps, min_accept, status, move_accept)
    return state, StepInfo(accepted / inputs.sweeps, min_accept, OK, move_accept)


@numba.njit(nogil=True, cache=True)
def schedule(state, it, tune):
    """What the iteration number changes (the loop's ``SCHEDULE``): the state's clock, from
    which :func:`step` reads whether it is warm-up and whether the refresh is due."""
    state.clock[0] = it
    state.clock[1] = tune


@numba.njit(nogil=True, cache=True)
def running_total(state):
    """What the record chain keeps with a draw (the loop's ``KEPT_STATISTIC``): ``T``."""
    return state.total


@numba.njit(nogil=True, cache=True)
def given_theta(rng, theta, x, stats, kernel_state, tuning):
    """The kernel step of a plain Python ``draw_theta``, which cannot run in compiled code:
    the runner draws theta in Python and writes it, and its acceptance probability last,
    into the kernel state (:func:`given_theta_state`) before running the iteration."""
    return kernel_state[:-1], kernel_state[-1]


def given_theta_state(theta):
    """The kernel state :func:`given_theta` reads: theta, then the acceptance probability."""
    return np.append(np.asarray(theta, dtype=np.float64), np.nan)


def step(rng, state, inputs):
    """One iteration (BlackJAX's ``step``, the protocol of :mod:`dawrap.samplers.loop`):
    theta from ``KERNEL_STEP``, checked and stored in the state, the extra move and the
    record sweeps (:func:`update_records`), and every :data:`REFRESH_EVERY` iterations the
    refresh of the running sums. Returns ``(state, RecordInfo)``; the loop keeps the draw.

    ``KERNEL_STEP(rng, theta, x, stats, kernel_state, tuning) -> (theta, accept_prob)`` is
    the step of a :class:`dawrap.samplers.kernels.Kernel` (:func:`given_theta` for a plain
    Python ``draw_theta``); it may update ``kernel_state`` in place while tuning. Whether
    this is warm-up, and the iteration number, are on the state's clock (:func:`schedule`).
    """
    it = state.clock[0]
    tuning = it < state.clock[1]
    # A copy of the running statistic: a kernel that modifies its input cannot corrupt it.
    theta_new, kernel_info = KERNEL_STEP(rng, state.theta, state.x, state.stats.copy(),
                                          state.kernel_state, tuning)
    status = set_theta(state, theta_new)
    if status == OK and not THETA_SUPPORT(state.theta):
        status = BAD_SUPPORT
    if status != OK:
        return state, RecordInfo(status, math.nan, math.nan, as_floats(kernel_info), math.nan)
    state, info = update_records(rng, state, inputs, tuning)
    if info.status == OK and (it + 1) % REFRESH_EVERY == 0:
        state, status = REFRESH(state, inputs.s_dp, inputs.params)
        info = StepInfo(info.accept_rate, info.min_accept_prob, status, info.move_accept)
    return state, RecordInfo(info.status, info.accept_rate, info.min_accept_prob,
                             as_floats(kernel_info), info.move_accept)


#: Running sums may differ from a recomputation by rounding only: at most this fraction of
#: the sum of the absolute contributions (O(1) updates accumulate about 1e-13 of it over
#: REFRESH_EVERY sweeps); an integer statistic agrees exactly.
DRIFT_TOLERANCE = 1e-8


@numba.njit(nogil=True, cache=True)
def _agrees(running, fresh, magnitude):
    for j in range(running.shape[0]):
        if not abs(running[j] - fresh[j]) <= DRIFT_TOLERANCE * magnitude[j]:
            return False
    return True


def consistency(state, s_dp):
    """Recompute the running sums from ``x`` and check them and every record.

    Returns ``(stats, total, status)``: the fresh sums, and ``BAD_RECORD_SUPPORT`` when a
    record is outside ``record_support``, ``BAD_DRIFT`` when the running sums disagree with
    the recomputation beyond rounding (something wrote to ``x`` behind the sweep's back), else
    ``OK``. One pass over the records, like the refresh it is part of.
    """
    if NNZ > 0:  # the entries path: O(n nnz + size)
        return entries_consistency(state, s_dp, DRIFT_TOLERANCE)
    x = state.x
    k, m = state.stats.shape[0], state.total.shape[0]
    stats, total = np.zeros(k), np.zeros(m)
    stats_abs, total_abs = np.ones(k), np.ones(m)
    buf_s, buf_t = np.empty(k), np.empty(m)
    status = OK
    for i in range(x.shape[0]):
        if status == OK and not RECORD_SUPPORT(x[i]):
            status = BAD_RECORD_SUPPORT
        MODEL_STAT(x[i], buf_s)
        MECH_STAT(x[i], s_dp, buf_t)
        for j in range(k):
            stats[j] += buf_s[j]
            stats_abs[j] += abs(buf_s[j])
        for j in range(m):
            total[j] += buf_t[j]
            total_abs[j] += abs(buf_t[j])
    if status == OK and not (_agrees(state.stats, stats, stats_abs)
                             and _agrees(state.total, total, total_abs)):
        status = BAD_DRIFT
    return stats, total, status


def refresh(state, s_dp, params):
    """Recompute the running sums from ``x`` (guards against floating-point drift), after
    checking them (``consistency``). Returns ``(state, status)``."""
    stats, total, status = consistency(state, s_dp)
    copy_into(state.stats, stats)
    copy_into(state.total, total)
    if NNZ > 0 and state.cells.shape[0] == MECH_STAT_SIZE:  # the block's copies follow the inputs
        fill_cells(state.cells, s_dp, params)
    # The fresh total (contiguous) holds the values of state.total, which may be a view.
    return RecordState(state.theta, state.x, state.stats, state.total,
                       LOG_DENSITY(s_dp, total, params), state.kernel_state,
                       state.move_state, state.clock, state.cells), status


#: Floats after the end of each ``out`` buffer that ``first_overflow`` watches.
GUARD = 16
_SENTINEL = -7.0e307  # what the guard holds; a user function will not write exactly this


@numba.njit(nogil=True, cache=True)
def _guard_intact(buf, size):
    for j in range(size, buf.shape[0]):
        if buf[j] != _SENTINEL:
            return False
    return True


@numba.njit(nogil=True, cache=True)
def _arm(buf, size):
    for j in range(size, buf.shape[0]):
        buf[j] = _SENTINEL


def first_overflow(x, s_dp):
    """The first record of ``x`` on which ``model_stat`` (``which`` 1) or the mechanism's
    statistic (``which`` 2) writes past the end of its ``out`` (into a guard zone of
    :data:`GUARD` floats), as ``(index, which)``; ``(-1, 0)`` when none does.

    The compiled sweep trusts these functions to write exactly their sizes: a write past
    ``out`` would silently corrupt memory. Checking every record of the starting database
    catches what a single probe misses (a record type the first probe did not draw).
    """
    buf_s, buf_t = np.empty(MODEL_STAT_SIZE + GUARD), np.empty(MECH_STAT_SIZE + GUARD)
    for i in range(x.shape[0]):
        _arm(buf_s, MODEL_STAT_SIZE)
        _arm(buf_t, MECH_STAT_SIZE)
        MODEL_STAT(x[i], buf_s[:MODEL_STAT_SIZE])
        if not _guard_intact(buf_s, MODEL_STAT_SIZE):
            return i, 1
        MECH_STAT(x[i], s_dp, buf_t[:MECH_STAT_SIZE])
        if not _guard_intact(buf_t, MECH_STAT_SIZE):
            return i, 2
    return -1, 0


def draw_guarded(rng, theta, count):
    """``count`` records from ``draw_record`` (with ``PREPARED``, the prepared draw, which
    the sweep and the starts use) written into guarded buffers: returns the records and the
    index of the first draw that wrote past ``record_size`` values (-1)."""
    x = np.empty((count, RECORD_SIZE))
    buf = np.empty(RECORD_SIZE + GUARD)
    if PREPARED:
        table = PREPARE(theta)
    for i in range(count):
        _arm(buf, RECORD_SIZE)
        if PREPARED:
            DRAW_PREPARED(rng, theta, table, buf[:RECORD_SIZE])
        else:
            DRAW_RECORD(rng, theta, buf[:RECORD_SIZE])
        if not _guard_intact(buf, RECORD_SIZE):
            return x, i
        for j in range(RECORD_SIZE):
            x[i, j] = buf[j]
    return x, -1


def draw_batches_guarded(rng, theta, count):
    """``count`` records from ``DRAW_RECORDS`` in the calls the sweep makes (``BLOCK`` rows,
    then the rest), each into an ``out`` followed by a guard zone: returns the records and the
    first row of the first call that wrote past its ``out`` (-1: none did)."""
    x = np.empty((count, RECORD_SIZE))
    buf = np.empty(BLOCK * RECORD_SIZE + GUARD)
    start = 0
    while start < count:
        m = min(BLOCK, count - start)
        _arm(buf, m * RECORD_SIZE)
        out = buf[:m * RECORD_SIZE].reshape((m, RECORD_SIZE))
        DRAW_RECORDS(rng, theta, out)
        if not _guard_intact(buf, m * RECORD_SIZE):
            return x, start
        for i in range(m):
            for j in range(RECORD_SIZE):
                x[start + i, j] = out[i, j]
        start += m
    return x, -1


#: The templates of a model's records, sweep and chain (bound in that order, each group
#: reusing the groups before it, so that another kernel or move recompiles only the chain).
RECORD_TEMPLATES = (init, arrange, fill_cells, consistency, refresh, first_overflow,
                    draw_guarded, draw_database,
                    draw_batches_guarded, entries_path.entries_sums,
                    entries_path.entries_consistency, entries_path.check_entries)
SWEEP_TEMPLATES = (move_model_stat, move_model_stats, take_proposal, sweep_table,
                   recount_stats)
CHAIN_TEMPLATES = (update_records, step)
#: The chain's layers compiled into their callers rather than on their own: the run loop
#: (:func:`dawrap.samplers.loop.run`, bound to ``step``) holds ``step``, which holds
#: ``update_records`` (numba's ``inline="always"`` is the callee's option, so it applies
#: across the two bindings), so each is optimised once, not once more in every caller
#: (``benchmarks/compile_profile.py``: the chain's compile time 19.7 s -> 9.1 s at load 12).
#: ``step`` called from Python compiles on its own. Inlining the sweep's pass too costs
#: numba's typing more than it saves LLVM.
CHAIN_INLINED = ("update_records", "step")


class SweepOptions(NamedTuple):
    """The sizes and compile-time flags of one model's record sweep (:func:`bind_chain`,
    :func:`dawrap.samplers.parallel.bind_groups`): each flag is a constant of the compiled
    code, whose branches for the other value are pruned."""
    #: Floats per record, per mechanism statistic and per model statistic.
    record_size: int
    size: int
    stat_size: int
    #: Propose with ``propose_record`` (supplement Algorithm 2) instead of ``draw_record``.
    general: bool = False
    #: The model statistic is the mechanism's statistic, so its running sum moves by the
    #: same difference and is not computed twice.
    shared: bool = False
    #: Visit ``n`` records drawn uniformly with replacement instead of each record in turn
    #: (both leave the posterior invariant; systematic scan is the paper's).
    random_scan: bool = False
    #: Draw the proposals from ``f`` with ``fns.draw_records``, :data:`BLOCK` at a time
    #: (ignored with ``general``).
    batched: bool = False
    #: The model has a :class:`dawrap.PreparedDraw` (``fns.prepare``, ``fns.draw_prepared``
    #: and, for ``general``, ``fns.propose_prepared``): each sweep builds its table once and
    #: proposes through it (with ``general``, only when the model gives
    #: ``propose_prepared``), and databases are drawn through it.
    prepared: bool = False
    #: The model's statistic is recounted from the records once per iteration, after the
    #: sweeps (:func:`recount_stats`; ``Model(stat_every="iteration")``), instead of moved
    #: by every accepted record; not with ``shared``.
    lazy_stats: bool = False


def bind_chain(fns: RecordFunctions, options: SweepOptions, move=no_move,
               kernel_step=given_theta) -> Chain:
    """Compile the record sampler for one model, mechanism, theta kernel and move.

    Parameters
    ----------
    fns : RecordFunctions
        The model's and the mechanism's compiled functions.
    options : SweepOptions
        The sizes and the sweep's compile-time flags.
    move : dispatcher
        The extra theta move, ``(rng, state, s_dp, params, tuning) -> (state, accept_prob,
        status)`` (:func:`dawrap.samplers.interweave.make_move`), or :func:`no_move`.
    kernel_step : dispatcher
        The compiled theta kernel's step (:class:`dawrap.samplers.kernels.Kernel`), or
        :func:`given_theta` when ``draw_theta`` is plain Python.

    Returns
    -------
    Chain
        Compiled on first call; for a built-in model, loaded from numba's disk cache in
        later processes (:mod:`dawrap._templates`). The entries path
        (:mod:`dawrap.samplers.entries_path`) is taken when ``fns.nnz > 0``.
    """
    (record_size, size, stat_size, general, shared, random_scan, batched, prepared,
     lazy_stats) = options
    if lazy_stats and shared:
        raise ValueError("bind_chain: lazy_stats needs a model statistic of its own (not "
                         "shared with the mechanism's, which the sweep keeps anyway)")
    if prepared and (fns.prepare is no_prepare or fns.draw_prepared is no_prepared_draw):
        raise ValueError("bind_chain: prepared=True needs fns.prepare and fns.draw_prepared "
                         "(record.prepared_fields of the model's PreparedDraw)")
    names = {name.upper(): value for name, value in fns._asdict().items()}
    names.update(RECORD_SIZE=record_size, MECH_STAT_SIZE=size, MODEL_STAT_SIZE=stat_size,
                 PREPARED=prepared, LAZY_STATS=lazy_stats,
                 # A noise family's coordinate density reads params[j] for cell j alone:
                 # its parameters can live in the per-cell block.
                 CELL_PARAMS=fns.nnz > 0 and of_coordinate(
                     fns.coordinate_log_density) is not None,
                 CELL_COUNTS=fns.nnz > 0 and stat_size == size)
    records = _templates.bind(RECORD_TEMPLATES, names)
    sweep_template, pass_template = ((entries_sweep, entries_pass) if fns.nnz > 0
                                     else (dense_sweep, dense_pass))
    sweeps = _templates.bind(SWEEP_TEMPLATES + (sweep_template, pass_template), dict(
        names, USER_PROPOSAL=general, SAME_STATISTIC=shared, RANDOM_SCAN=random_scan,
        BATCHED=batched and not general,
        PREPARED_PROPOSALS=prepared and (not general
                                         or fns.propose_prepared is not no_prepared_proposal),
        ON_STACK=max(record_size, size, stat_size) <= STACK_FLOATS))
    sweep = getattr(sweeps, sweep_template.__name__)
    chain = _templates.bind(CHAIN_TEMPLATES, dict(
        SWEEP_PASS=getattr(sweeps, pass_template.__name__),
        SWEEP_TABLE=sweeps.sweep_table, MOVE=move, KERNEL_STEP=kernel_step,
        RECOUNT_STATS=sweeps.recount_stats, LAZY_STATS=lazy_stats,
        REFRESH=records.refresh,
        THETA_SUPPORT=fns.theta_support), inline=CHAIN_INLINED)
    looped = loop.bind(chain.step, schedule, running_total)  # the one run loop
    return Chain(records.init, chain.step, looped.run, looped.keep, sweep,
                 chain.update_records, records.consistency, records.refresh,
                 records.first_overflow, records.draw_guarded, records.draw_database,
                 records.check_entries, records.draw_batches_guarded, records.arrange)
