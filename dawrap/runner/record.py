"""Driver of the record-level sampler: probe the user's functions, start and run the chains.

The compiled sampler is in :mod:`dawrap.samplers.record`; this module prepares its inputs once
(probing each user function, so one that does not compile or writes the wrong shape fails here
with its name, not deep inside compiled code), starts each chain from a release-informed prior
draw (:mod:`dawrap.runner.starts`; or ``init_theta`` / ``init_x``) and runs the chains in
parallel threads (the compiled loop releases the GIL).
"""
from __future__ import annotations

import functools
import threading
import time
import warnings

import numpy as np

from ..samplers import record, entries_path
from .._checks import call_user, is_real
from ..samplers.arrays import is_state, unflatten_state
from ..samplers.output import Output
from .chains import Chunks, deferred_interrupt, interrupted, run_parallel
from .progress import Progress
from .checkpoint import (SAVED_STATE, CheckpointWriteError, load_chains, lock, resumable,
                         save_chain)
from .fingerprint import run_fingerprint
from ..samplers.interweave import make_move
from ..samplers.kernels import Kernel, as_kernel, no_state
from ..mechanisms.base import Mechanism, as_records
from ..model.model import Model
from ..model.protocols import Move, MoveBuilder, no_records
from .modes import jump_mixture, landscape
from .grouped import GroupedChain
from .theta_output import theta_output
from .starts import initial_values, noise_variance, release_informed_theta

__all__ = ["run_record"]


def _probe_writer(func, name: str, size: int, *args, start=None):
    """Call ``func(*args, out)`` on a guarded buffer (NaN-filled, or ``start`` then NaN
    guards): it must leave exactly ``size`` finite values and return what it returns."""
    buf = np.full(size + 4, np.nan)
    if start is not None:
        buf[:size] = start
    result = call_user(func, name, *args, buf[:size])
    if not np.all(np.isnan(buf[size:])):
        raise ValueError(f"{name} writes past the end of out: out has {size} value(s) "
                         f"(record_size / stat_size / size), but it wrote more")
    if not np.all(np.isfinite(buf[:size])):
        raise ValueError(f"{name} must write {size} finite value(s) into out; it wrote "
                         f"{buf[:size]}")
    return buf[:size].copy(), result


#: What the errors call draw_records' out.
_BATCH_OUT = "out, of shape (m, record_size)"


def _probe_batches(model: Model, rng, theta: np.ndarray) -> None:
    """Call ``draw_records`` on guarded outs of 1 and 5 rows: it must fill each exactly, with
    finite records that ``record_support`` accepts."""
    size = model.record_size
    for m in (1, 5):
        buf = np.full(m * size + 4, np.nan)
        out = buf[:m * size].reshape(m, size)
        call_user(model.draw_records, "draw_records", rng, theta.copy(), out)
        if not np.all(np.isnan(buf[m * size:])):
            raise ValueError(f"draw_records writes past the end of out: {_BATCH_OUT} = "
                             f"({m}, {size}), but it wrote more")
        if not np.all(np.isfinite(out)):
            raise ValueError(f"draw_records must fill {_BATCH_OUT} = ({m}, {size}), with "
                             f"finite values; it left {out.tolist()} (NaN: not written)")
        for row in out:
            if not call_user(model.record_support, "record_support", row):
                raise ValueError(f"draw_records wrote the record {row}, which "
                                 f"record_support rejects")


def _probe_prepared(model: Model, rng, theta: np.ndarray, record_: np.ndarray) -> None:
    """Call the model's :class:`dawrap.PreparedDraw` once: the table, a record drawn with it
    (exactly ``record_size`` finite values that ``record_support`` accepts) and the proposal
    with it (a float log ratio)."""
    prepared, size = model.prepared, model.record_size
    table = call_user(prepared.prepare, "prepared.prepare", theta.copy())
    drawn, _ = _probe_writer(prepared.draw_record, "prepared.draw_record", size, rng,
                             theta.copy(), table)
    if not call_user(model.record_support, "record_support", drawn):
        raise ValueError(f"prepared.draw_record wrote {drawn}, which record_support rejects")
    if prepared.propose_record is not None:
        _, log_ratio = _probe_writer(prepared.propose_record, "prepared.propose_record", size,
                                     rng, theta.copy(), table, record_.copy(), start=record_)
        if not is_real(log_ratio):
            raise TypeError(f"prepared.propose_record must return a float log ratio, got "
                            f"{type(log_ratio).__name__}")


def _check_kernel_info(info, kernel) -> None:
    """A Kernel step's ``info``: a number (its acceptance probability, ``stats`` of one
    name) or a tuple of numbers, one per name of ``kernel.stats``."""
    values = info if isinstance(info, tuple) else (info,)
    if not all(is_real(v) for v in values):
        raise TypeError(f"draw_theta.step returned (theta, info) with info {info!r}; expected "
                        f"a float (the acceptance probability) or a tuple of floats")
    if len(values) != len(kernel.stats):
        raise ValueError(f"draw_theta.step's info has {len(values)} value(s) but the Kernel "
                         f"names {len(kernel.stats)} (stats={kernel.stats}): one name per value")


def _describe(state) -> str:
    """What a kernel state that is not one is, for the error."""
    if isinstance(state, np.ndarray):
        return f"an array of {state.dtype} with shape {state.shape}"
    return f"{type(state).__name__} {state!r}"[:200]


#: The sample stats of a theta kernel's info by default: its acceptance probability.
KERNEL_STATS = ("theta_accept",)
#: The chain's move slot when no move runs.
NO_MOVE = Move(record.no_move, "no move")


class _Setup:
    """Everything a chain needs that is shared by all chains."""

    def __init__(self, model: Model, mechanism: Mechanism, s_dp: np.ndarray, n: int,
                 interweave: int = 0, sweeps: int = 1, random_scan: bool = False,
                 jump_proposal=None):
        self.model, self.mechanism, self.s_dp, self.n = model, mechanism, s_dp, n
        self.params = mechanism.params
        self.fns = record.RecordFunctions(model.draw_record, model.propose_record,
                                          model.model_stat, mechanism.sampler_statistic,
                                          mechanism.log_density, model.theta_support,
                                          model.record_support,
                                          **entries_path.entries_fields(model, mechanism),
                                          **record.prepared_fields(model.prepared),
                                          draw_records=model.draw_records or no_records)
        # The model statistic rides on the mechanism's when they are the same function.
        if (model.user_model_stat is mechanism.statistic
                and model.stat_size != mechanism.size):
            name = getattr(mechanism.statistic, "__name__", "statistic")
            raise ValueError(
                f"the model's model_stat and the mechanism's statistic are the same function "
                f"({name}), but the model declares stat_size = {model.stat_size} and the "
                f"mechanism size = {mechanism.size}: they were built for different record "
                f"layouts (e.g. a different number of categories); build both for the same")
        # A statistic recounted once per iteration (stat_every="iteration") is the model's
        # own: the sweep then keeps only the mechanism's.
        self.lazy_stats = model.stat_every == "iteration"
        self.shared = (model.user_model_stat is mechanism.statistic
                       and not mechanism.depends_on_release
                       and model.stat_size == mechanism.size and not self.lazy_stats)
        if interweave:  # the number of non-centred steps per iteration
            step, self.init_move_state = make_move(model.noncentred, self.fns, mechanism.size,
                                                   interweave, jump_proposal)
            self.move = Move(step, "the non-centred move (interweave)")
        else:  # the model's own move, if any, in the same slot
            move = model.records_move
            if isinstance(move, MoveBuilder):  # built for this run's mechanism
                move = move.build(mechanism)
            self.move = NO_MOVE if move is None else move
            self.init_move_state = no_state
        self.random_scan = random_scan
        self.inputs = record.Inputs(s_dp, self.params, sweeps)
        # A plain Python kernel until probe_theta finds draw_theta compiled.
        self.kernel = Kernel(record.given_theta, record.given_theta_state, "draw_theta")
        self.compiled_kernel = False
        self.chain = self._bind()

    def _bind(self) -> record.Chain:
        """The compiled chain for this model, mechanism, kernel and move (compiled on first
        call, or loaded from numba's disk cache; see dawrap._templates)."""
        return record.bind_chain(self.fns, self.options, self.move.step, self.kernel.step)

    @property
    def options(self) -> record.SweepOptions:
        """The sweep's sizes and compile-time flags for this model and mechanism."""
        model = self.model
        return record.SweepOptions(
            model.record_size, self.mechanism.size, model.stat_size,
            general=model.general_proposal, shared=self.shared, random_scan=self.random_scan,
            batched=model.draw_records is not None, prepared=model.prepared is not None,
            lazy_stats=self.lazy_stats)

    @functools.cached_property
    def noise(self):
        """The mechanism's noise variances, for release-informed starts (None: none)."""
        return noise_variance(self.mechanism)

    def check_writes(self, theta: np.ndarray, x: np.ndarray, name: str) -> None:
        """Check that the user's record functions write exactly their sizes on every record of
        the starting database ``x`` and on 256 fresh draws at ``theta`` (compiled, one pass),
        and those of ``draw_records`` on the calls a sweep makes (two full blocks and a part):
        the sweep trusts them, and a write past ``out`` would silently corrupt memory."""
        model, mech = self.model, self.mechanism
        fresh, bad = self.chain.draw_guarded(np.random.default_rng(1), theta.copy(), 256)
        if bad >= 0:
            raise ValueError(f"{'prepared.' if model.prepared else ''}draw_record writes past "
                             f"the end of out: out has record_size = "
                             f"{model.record_size} value(s), but it wrote more")
        drawn = [(fresh, "a record drawn from the model", "256 records drawn from the model")]
        if model.draw_records is not None:
            batch, bad = self.chain.draw_batches_guarded(np.random.default_rng(2), theta.copy(),
                                                         2 * record.BLOCK + 7)
            if bad >= 0:
                rows = min(record.BLOCK, batch.shape[0] - bad)
                raise ValueError(f"draw_records writes past the end of out: {_BATCH_OUT} = "
                                 f"({rows}, {model.record_size}), but it wrote more")
            if not np.all(np.isfinite(batch)):
                raise ValueError("draw_records wrote a non-finite value (or left part of out "
                                 "unwritten) in one of its calls of a sweep")
            # the records of draw_records' calls, as a sweep makes them
            model.check_records(batch, "the records drawn by draw_records")
            drawn.append((batch, "a record drawn by draw_records",
                          "the records drawn by draw_records"))
        if self.fns.nnz > 0:  # O(n nnz): the dense check below costs O(n size)
            for records, where in [*((r, w) for r, _, w in drawn), (x, name)]:
                i, which, why = self.chain.check_entries(
                    records, self.s_dp, entries_path.compared_before_a_run(
                        records, mech.size + model.stat_size * (self.fns.model_nnz > 0)))
                if i >= 0:
                    raise ValueError(entries_path.entries_error(i, which, why, where, mech))
            x = x[:0]  # the dense check on the fresh draws only
        for records, label in [*((r, w) for r, w, _ in drawn), (x, None)]:
            i, which = self.chain.first_overflow(records, self.s_dp)
            if i >= 0:
                func, size = (("model_stat", f"stat_size = {model.stat_size}") if which == 1
                              else ("the mechanism's statistic", f"size = {mech.size}"))
                where = label or f"{name}[{i}] = {x[i]}"
                raise ValueError(f"{func} writes past the end of out on {where}: out has "
                                 f"{size} value(s), but it wrote more (are the model and the "
                                 f"mechanism built for the same record layout?)")

    def check_resumed(self, saved: dict, chain: int, folder) -> None:
        """A resumed chain's state must be one the sampler could have produced: finite,
        inside the model's supports, and with running sums that match its database. A
        corrupted checkpoint would otherwise hang a conjugate draw (numba's Generator.beta
        never returns on NaN) or silently bias the draws."""
        model, where = self.model, f"resume: chain {chain} in {folder}"
        x = saved["x"]
        if x.shape != (self.n, model.record_size) or not np.all(np.isfinite(x)):
            raise ValueError(f"{where}: the saved database is not a finite ({self.n}, "
                             f"{model.record_size}) array; delete chain{chain}.npz to restart "
                             f"that chain from its seed")
        try:
            model.pack(saved["theta"], "the saved theta")
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: {err}; delete chain{chain}.npz to restart that chain "
                             f"from its seed") from None
        state = record.RecordState(**{k: saved[k] for k in SAVED_STATE},
                                   clock=np.zeros(2, np.int64))
        _, _, status = self.chain.consistency(state, self.s_dp)
        if status != record.OK or not np.isfinite(saved["log_g"]):
            raise ValueError(f"{where}: the saved state is inconsistent (a record outside "
                             f"record_support, running sums that do not match the database, or "
                             f"a zero mechanism density); delete chain{chain}.npz to restart "
                             f"that chain from its seed")

    def resumed_state(self, saved: dict):
        """A saved chain's sampler state, its kernel's and move's states unflattened into
        the structure of fresh ones (a checkpoint holds them flat, :mod:`.checkpoint`)."""
        fields = {k: saved[k] for k in SAVED_STATE}
        theta = saved["theta"]
        for key, fresh in (("kernel_state", self.kernel.init_state(theta.copy())),
                           ("move_state", self.init_move_state(theta.copy()))):
            try:
                fields[key] = unflatten_state(saved[key], fresh)
            except ValueError as err:
                raise ValueError(f"resume: {err} ({key}); the file is from another run: "
                                 f"delete it to restart that chain from its seed") from None
        return record.RecordState(**fields, clock=np.zeros(2, np.int64))

    def probe_records(self, theta: np.ndarray) -> None:
        """Check the record-level functions once, on a throwaway generator."""
        model, mech = self.model, self.mechanism
        rng = np.random.default_rng(0)
        record_, _ = _probe_writer(model.draw_record, "draw_record", model.record_size,
                                   rng, theta.copy())
        if not call_user(model.record_support, "record_support", record_):
            raise ValueError(f"draw_record wrote {record_}, which record_support rejects")
        if model.draw_records is not None:
            _probe_batches(model, rng, theta)
        if model.prepared is not None:
            _probe_prepared(model, rng, theta, record_)
        if model.general_proposal:
            # The sweep hands propose_record an out that starts as a copy of x_i.
            _, log_ratio = _probe_writer(model.propose_record, "propose_record",
                                         model.record_size, rng, theta.copy(), record_.copy(),
                                         start=record_)
            if not is_real(log_ratio):
                raise TypeError(f"propose_record must return a float log ratio, got "
                                f"{type(log_ratio).__name__}")
        if model.stat_size:
            _probe_writer(model.model_stat, "model_stat", model.stat_size, record_)
        t, _ = _probe_writer(mech.sampler_statistic, "the mechanism's statistic", mech.size,
                             record_, self.s_dp)
        if mech.integer_statistic and not np.all(t == np.round(t)):
            raise ValueError(f"{mech.name} needs an integer-valued statistic, but a record "
                             f"drawn from the model contributes {t}")
        log_g = call_user(mech.log_density, "the mechanism's log_density", self.s_dp,
                          np.zeros(mech.size), self.params)
        if not is_real(log_g):
            raise TypeError(f"log_density must return a float, got {type(log_g).__name__}")

    def probe_theta(self, theta: np.ndarray, x: np.ndarray) -> None:
        """Check draw_theta once and pick the compiled kernel form, if it is compiled."""
        model = self.model
        rng = np.random.default_rng(0)
        state = self.fresh_state(theta.copy(), x)
        if isinstance(model.draw_theta, Kernel):
            kernel = model.draw_theta
            kernel_state = call_user(kernel.init_state, "draw_theta.init_state", theta.copy())
            if not isinstance(kernel_state, tuple):
                kernel_state = np.asarray(kernel_state)
            if not is_state(kernel_state):
                raise TypeError(f"draw_theta.init_state must return a float64 array or a "
                                f"NamedTuple of float64 arrays, got {_describe(kernel_state)}")
            out = call_user(kernel.step, "draw_theta.step", rng, state.theta, state.x,
                            state.stats, kernel_state, True)
            if not isinstance(out, tuple) or len(out) != 2:
                raise TypeError("draw_theta.step must return (theta, info)")
            _check_kernel_info(out[1], kernel)
            out = (out[0], np.nan)  # (its info checked)
        else:
            out = call_user(model.draw_theta, "draw_theta", rng, state.theta, state.x,
                            state.stats)
        theta_output(out, model, "draw_theta")
        if model.theta_compiled:
            theta_part = out[0] if isinstance(out, tuple) else out
            if not isinstance(theta_part, np.ndarray):
                raise TypeError(f"a compiled draw_theta must return a float array (or "
                                f"(array, accept_prob)), got {type(theta_part).__name__}")
            self.kernel = model.draw_theta if isinstance(model.draw_theta, Kernel) \
                else as_kernel(model.draw_theta, isinstance(out, tuple))
            self.compiled_kernel = True
            self.chain = self._bind()

    @property
    def sample_stats(self) -> tuple:
        """The chain's sample stats, in column order: the record sweeps' and the theta
        kernel's (its ``stats``: :func:`dawrap.samplers.record.sample_stats`)."""
        return record.sample_stats(self.kernel.stats)

    def fresh_state(self, theta, x):
        """A chain's starting state: running sums from ``x``, the kernel's initial state."""
        return self.chain.init(theta, x, self.inputs, self.kernel.init_state(theta),
                               self.init_move_state(theta))

    def initial_state(self, rng, init_theta, init_x, probe: bool, chain: int | None = None):
        """Theta (by default a release-informed prior draw, :mod:`dawrap.runner.starts`) and x (from
        f(. | theta) by default) for one chain; with ``probe``, the user's functions are
        checked along the way."""
        model = self.model
        if init_theta is None:
            theta = model.pack(model.draw_prior(rng), "the theta returned by draw_prior")
        else:
            theta = init_theta.copy()
        if probe:
            self.probe_records(theta)
        if init_theta is None:
            informed = release_informed_theta(rng, model, self.mechanism, self.s_dp, self.n,
                                              self.noise, chain=chain)
            theta = theta if informed is None else informed
        if model.start_database is not None:
            # The model knows what its records must satisfy (e.g. public group sizes): it
            # checks init_x, or builds the start.
            x = as_records(model.start_database(rng, theta.copy(), self.n, self.mechanism,
                                                self.s_dp, init_x), "start_database's database")
            if x.shape != (self.n, model.record_size):
                raise ValueError(f"start_database returned a database of shape {x.shape}, "
                                 f"not (n, record_size) = ({self.n}, {model.record_size})")
            if x is init_x:
                x = x.copy()
            if probe:
                model.check_records(x, "init_x" if init_x is not None else
                                    "start_database's database")
        elif init_x is None:
            x = self.chain.draw_database(rng, theta, self.n)
        else:
            x = init_x.copy()
            if probe:
                model.check_records(x, "init_x")
        if probe:
            self.probe_theta(theta, x)
        return theta, x


class Control:
    """What the chains share while running: when to stop, and where to checkpoint."""

    def __init__(self, checkpoint=None, every: int = 1000, settings=None, progress=None):
        self.stop = threading.Event()
        self.progress = progress  # a dawrap.runner.progress.Progress, or None
        self.checkpoint, self.every, self.settings = checkpoint, every, settings or {}
        self.checkpoint_error = None  # the first checkpoint write that failed, if any
        self.groups = None  # where each chain's groups run (dw.parallel.Threads or Dask)
        self.tune = 0  # warm-up iterations


def _new_traces(chains: int, draws: int, theta_size: int, size: int, keep_stats: bool,
                stat_count: int = len(record.SAMPLE_STATS)) -> record.Trace:
    """Every chain's output in one array per field, ``(chains, draws, ...)``: chain ``c``
    writes into its rows (:func:`_chain_trace`), and the result is these arrays, not a
    stacked copy of per-chain ones (the kept draws are the largest thing a run holds: at
    10^6 census records, 1.9 GB, held twice by the stack). ``stat_count`` sample stats a
    draw (:func:`dawrap.samplers.record.sample_stats`)."""
    return record.Trace(np.empty((chains, draws, theta_size)),
                        np.empty((chains, draws, stat_count)),
                        np.empty((chains, draws if keep_stats else 0, size)))


def _chain_trace(traces: record.Trace, chain: int) -> record.Trace:
    """Chain ``chain``'s rows of :func:`_new_traces`' arrays (contiguous views)."""
    return record.Trace(*(field[chain] for field in traces))


def _new_trace(draws: int, theta_size: int, size: int, keep_stats: bool,
               stat_count: int = len(record.SAMPLE_STATS)) -> record.Trace:
    """One chain's output on its own (a compile run, a benchmark)."""
    return _chain_trace(_new_traces(1, draws, theta_size, size, keep_stats, stat_count), 0)


def _advance(setup: _Setup, rng, state, start: int, stop: int, tune: int, trace,
             groups: GroupedChain | None = None):
    """Iterations ``start..stop-1``; returns the state (raises on a bad user function).

    A compiled theta kernel runs inside the compiled loop (:func:`dawrap.samplers.loop.run`
    bound to :func:`record.step`); a plain Python ``draw_theta`` is called here, once per
    iteration, its theta written into the kernel state that :func:`record.given_theta`
    reads, and the iteration is then the same compiled loop, run for one iteration. With
    ``groups`` (``dw.Record(groups=...)``), the iterations of :meth:`GroupedChain.advance`.
    """
    model, chain, inputs = setup.model, setup.chain, setup.inputs
    if groups is not None:
        state, done, status = groups.advance(rng, state, start, stop, tune, trace)
    elif setup.compiled_kernel:
        state, done, status = chain.run(rng, state, inputs, start, stop, tune, *trace)
    else:
        done, status = stop, record.OK
        # A read-only view: a Python kernel that writes to x fails at once, by name.
        x_view = state.x.view()
        x_view.flags.writeable = False
        for it in range(start, stop):
            out = model.draw_theta(rng, state.theta, x_view, state.stats.copy())
            given = state.kernel_state  # record.given_theta_state: theta, then accept_prob
            given[:-1], given[-1] = theta_output(out, model, "draw_theta")
            state, done, status = chain.run(rng, state, inputs, it, it + 1, tune, *trace)
            if status != record.OK:
                break
    if status == record.OK and stop == tune + trace.theta.shape[0]:
        # The chain's last iteration: the same check as every refresh, so that a run shorter
        # than REFRESH_EVERY iterations is checked too (one pass over x, once).
        if groups is not None:  # group by group (on a cluster x is on the workers)
            done, status = stop, groups.consistency(state)
        else:
            done, status = stop, chain.consistency(state, setup.s_dp)[2]
    if status != record.OK:
        raise ValueError(f"{record.STATUS_MESSAGES[status]} at iteration {done}")
    return state


def _run_chain(setup: _Setup, chain: int, rng, starts: list, control: Control,
               trace: record.Trace, resumed: dict | None = None,
               databases: np.ndarray | None = None, keep_at: tuple = ()):
    """Run one chain in chunks, its draws written into ``trace`` (its rows of the run's
    output, :func:`_chain_trace`, one per kept draw); returns ``(trace, iterations done)``,
    which is short of ``tune + draws`` only when the run was interrupted. ``starts[chain]``
    is its ``(theta, x)``, or a function building them (a cluster run's later chains); it is
    taken out of the list, so that a cluster run keeps no copy of the records it scattered.
    With ``databases`` (an array of ``(len(keep_at), n, record_size)``) the imputed database
    at the end of iteration ``keep_at[j]`` is copied into ``databases[j]``: a chunk ends
    there."""
    start, starts[chain] = starts[chain], None
    if callable(start):
        if control.stop.is_set():  # Ctrl-C before this chain began: nothing to build
            return trace, 0
        start = start()
        setup.check_writes(*start, f"the starting database of chain {chain}")
    theta, x = start
    del start
    if resumed is None:
        state = setup.fresh_state(theta, x)
        if not np.isfinite(state.log_g):
            raise ValueError(
                f"the initial database has zero mechanism density: log g(s_dp, T) = "
                f"{state.log_g} at T = {state.total} (Ju et al. condition A3 fails); pass "
                f"init_x with a confidential total the mechanism could have released s_dp from")
        done = 0
    else:
        # The saved fields, laid out as a fresh state is (the entries path's per-cell block).
        state = setup.chain.arrange(setup.resumed_state(resumed), setup.s_dp, setup.params)
        if control.groups is not None and control.groups.chains_in_turn:
            resumed.pop("x", None)  # the records go to the workers: no copy here
        for name, field in zip(record.Trace._fields, trace):
            field[:] = resumed[f"trace_{name}"]
        done = resumed["done"]
    tune = control.tune
    total_iterations = tune + trace.theta.shape[0]
    groups = None
    if control.groups is not None:  # the chain's groups, on threads or a cluster's workers
        groups = GroupedChain(setup, control.groups, rng, state, chain)
        state = groups.state  # on a cluster the records are on the workers (no copy here)
        x = None
    if groups is not None:
        groups.recount(state)
        if resumed is not None:
            if "group_rng_states" not in resumed:
                raise ValueError(f"resume: chain {chain}'s checkpoint was written without "
                                 f"groups (the serial sweep): resume it without groups")
            groups.restore(resumed["group_rng_states"])
    elif resumed is not None and "group_rng_states" in resumed:
        raise ValueError(f"resume: chain {chain}'s checkpoint was written with groups (whose "
                         f"generators it holds): resume it with dw.Record(groups=...), on "
                         f"threads or a cluster, any number of them")
    # Calls of about CHUNK_SECONDS (chains.Chunks), each ending at a checkpoint when one is
    # due: Ctrl-C waits for one call, not for thousands of costly iterations.
    chunks, every = Chunks(), control.every if control.checkpoint is not None else None
    try:
        while done < total_iterations and not control.stop.is_set():
            stop = chunks.stop(done, total_iterations, every)
            due = [it for it in keep_at if it >= done]
            if due:  # end the call at the next database to keep
                stop = min(stop, due[0] + 1)
            began = time.perf_counter()
            state = _advance(setup, rng, state, done, stop, tune, trace, groups)
            chunks.timed(stop - done, time.perf_counter() - began)
            if due and stop == due[0] + 1:  # the sweeps write x in place: a copy
                databases[keep_at.index(due[0])] = (state.x.copy() if groups is None
                                                    else groups.records())
            saved_before = done // control.every
            done = stop
            if control.progress is not None:
                control.progress.done[chain] = done
            if control.checkpoint is not None and (done // control.every > saved_before
                                                   or done == total_iterations):
                try:
                    save_chain(control.checkpoint, chain, done=done,
                               state=state if groups is None
                               else state._replace(x=groups.records()), rng=rng,
                               trace=trace, settings=control.settings,
                               group_states=None if groups is None
                               else groups.generator_states())
                except CheckpointWriteError as err:
                    # Keep the draws (like Ctrl-C): every chain stops at its next chunk and
                    # _finished returns what was sampled, saying why the checkpoint failed.
                    if control.checkpoint_error is None:
                        control.checkpoint_error = err
                    control.stop.set()
                    break
    except KeyboardInterrupt:
        control.stop.set()
    except BaseException:
        control.stop.set()  # one chain failed: the others stop at their next chunk
        raise
    finally:
        if groups is not None:
            groups.close()
    return trace, done


def _fingerprint_starts(init_theta, init_x) -> str:
    """A digest of the user's starting values (they decide a fresh chain's draws)."""
    import hashlib

    digest = hashlib.sha256()
    for value in (init_theta, init_x):
        if value is None:
            digest.update(b"none")
        elif isinstance(value, dict) or (isinstance(value, (list, tuple)) and value
                                         and isinstance(value[0], dict)):
            items = [value] if isinstance(value, dict) else value
            for item in items:
                for key in sorted(item):
                    digest.update(key.encode())
                    digest.update(np.ascontiguousarray(item[key], dtype=float).tobytes())
        else:
            digest.update(np.ascontiguousarray(value, dtype=float).tobytes())
    return digest.hexdigest()


def _compile(setup: _Setup, theta, x, keep_stats: bool) -> None:
    """Compile the chain in this thread before chains start in others: one iteration on a
    copy of a few records (same types; no copy of a large database). Its outcome is unused."""
    state = setup.fresh_state(theta.copy(), x[:8].copy())
    rng = np.random.default_rng(0)
    trace = _new_trace(1, theta.shape[0], setup.mechanism.size, keep_stats,
                       len(setup.sample_stats))
    setup.chain.run(rng, state, setup.inputs, 0, 1, 0, *trace)  # (a Python kernel: theta)


def run_record(model: Model, mechanism: Mechanism, s_dp: np.ndarray, n: int, rngs,
               method, shared) -> Output:
    """Run one record-level chain per generator in ``rngs``.

    ``method`` is a prepared :class:`dawrap.Record` (its kernel options, starting database,
    checkpoint and resume folders); ``shared`` the :class:`dawrap.methods.RunOptions` options of
    every method (draws, tune, chains' cores, ...). With ``method.checkpoint`` (a folder)
    each chain's complete state is saved every ``method.checkpoint_every`` iterations;
    ``method.resume`` continues such a run. Ctrl-C is deferred to the next chunk boundary on
    every path, one chain or many (:func:`dawrap.runner.chains.deferred_interrupt`): the
    chains stop there and the draws so far are returned, with a warning.
    """
    stop = threading.Event()
    with deferred_interrupt(stop.set):
        return _run_record(model, mechanism, s_dp, n, rngs, method, shared, stop)


def _partition_digest(partition) -> str:
    """A digest of an explicit partition's arrays (the same in every process)."""
    from .fingerprint import digest

    return digest(tuple(None if a is None else np.asarray(a) for a in
                        (partition.records, partition.cells, partition.stats)), "partition")


def _run_record(model, mechanism, s_dp, n, rngs, method, shared, stop) -> Output:
    draws, tune, keep_stats = shared.draws, shared.tune, shared.keep_stats
    init_theta, init_x = shared.init_theta, method.init_x
    checkpoint, resume = method.checkpoint, method.resume
    interweave, sweeps = int(method.interweave or 0), method.sweeps
    random_scan = method.scan == "random"
    chains = len(rngs)
    settings = {"model": model.fingerprint, "mechanism": mechanism.fingerprint, "n": n,
                "draws": draws, "kernel": getattr(model.draw_theta, "name", "draw_theta"),
                # a kernel's own sample stats (more columns of the trace's stats)
                **({"kernel_stats": list(model.draw_theta.stats)}
                   if isinstance(model.draw_theta, Kernel)
                   and tuple(model.draw_theta.stats) != KERNEL_STATS else {}),
                "tune": tune, "chains": chains, "keep_stats": bool(keep_stats),
                "s_dp": [float(v) for v in s_dp], "seed": shared.seed_entropy,
                # the running totals' length where it is not the release's (a selection,
                # dw.mechanisms.Quantiles): absent otherwise, so earlier files still resume
                **({"stat_size": mechanism.size} if mechanism.size != len(s_dp) else {}),
                "theta_size": model.theta_size, "record_size": model.record_size,
                "init": _fingerprint_starts(init_theta, init_x), "interweave": interweave,
                "sweeps": sweeps, "random_scan": random_scan,
                # every function and value the model and mechanism hold (for checkpoints)
                "code": None if checkpoint is None and resume is None
                else run_fingerprint(model, mechanism),
                **({"jumps": 1} if method.jumps else {}),
                # threads and a cluster make the same draws: either resumes the other
                **({"parallel": 1} if method.groups is not None else {}),
                # the groups decide the draws: another partition would resume a different
                # chain (a model's own partition is in its fingerprint)
                **({"partition": _partition_digest(method.groups.partition)}
                   if method.groups is not None and method.groups.partition is not None
                   else {})}
    bar = Progress("dawrap record", chains, tune + draws, enabled=shared.progress)
    control = Control(checkpoint if checkpoint is not None else resume,
                      method.checkpoint_every, settings, bar)
    control.stop = stop  # set by Ctrl-C (deferred_interrupt), polled between chunks
    control.groups, control.tune = method.groups, tune
    # The jumps' proposal: a Gaussian per mode of the release (dawrap.runner.modes).
    proposal = jump_mixture(landscape(model, mechanism, s_dp, n)) if method.jumps else None
    setup = _Setup(model, mechanism, s_dp, n, interweave, sweeps, random_scan, proposal)
    if resume is not None:
        # Chains that had saved nothing restart from their starts: the same init_theta /
        # init_x must be passed again (checked through the settings' fingerprint).
        resumed = load_chains(resume, chains, settings)  # an error if none saved anything
    else:
        resumed = [None] * chains
    thetas, xs = initial_values(model, chains, n, init_theta, init_x)
    starts, probed = [], False
    # On a cluster the chains run one after another and each scatters its records to the
    # workers: a chain's start is built when it begins (from its own generator: the same
    # draws), so the client holds one chain's database at a time, not every chain's.
    later = method.groups is not None and method.groups.chains_in_turn
    for c, (rng, saved) in enumerate(zip(rngs, resumed)):
        if saved is None and later and probed:
            starts.append(functools.partial(setup.initial_state, rng, thetas and thetas[c],
                                            xs and xs[c], False, chain=c))
        elif saved is None:  # a fresh chain (or one that had saved nothing when stopped)
            starts.append(setup.initial_state(rng, thetas and thetas[c], xs and xs[c],
                                              not probed, chain=c))
        else:
            setup.check_resumed(saved, c, resume)
            rng.bit_generator.state = saved["rng_state"]
            starts.append((saved["theta"], saved["x"]))
            if not probed:
                setup.probe_records(saved["theta"])
                setup.probe_theta(saved["theta"], saved["x"])
        probed = True
    for c in range(chains):
        if not callable(starts[c]):  # (a later one is checked when built, in _run_chain)
            setup.check_writes(*starts[c], "init_x" if init_x is not None else
                               f"the starting database of chain {c}")
    saved = None  # (no reference to a checkpoint's database beyond the chain's own)
    if shared.cores > 1 and chains > 1:
        _compile(setup, *starts[0], keep_stats)
    if control.stop.is_set():  # Ctrl-C while the functions were probed or compiled
        raise KeyboardInterrupt("sampling interrupted before the chains started: no draws "
                                "to return")
    # the kept draws (0-based) whose databases are kept: the last of each of k equal blocks
    count = method.databases
    if count > draws:
        raise ValueError(f"databases = {count} is more than draws = {draws}: at most one "
                         f"database is kept per draw")
    keep_draws = tuple((j + 1) * draws // count - 1 for j in range(count))
    databases = [np.empty((count, n, model.record_size)) if count else None
                 for _ in range(chains)]
    out = _new_traces(chains, draws, model.theta_size, mechanism.size, keep_stats,
                      len(setup.sample_stats))
    with lock(control.checkpoint), bar:  # no other run may write the checkpoint meanwhile
        results = run_parallel(
            [functools.partial(_run_chain, setup, c, rng, starts, control,
                               _chain_trace(out, c), saved, databases[c],
                               tuple(tune + d for d in keep_draws))
             for c, (rng, saved) in enumerate(zip(rngs, resumed))],
            # on a cluster the chains run one after another, each on every worker
            1 if later else shared.cores,
            on_interrupt=control.stop.set)
    traces, kept = _finished(results, tune, draws, control)
    reported = [c for c, (t, _) in enumerate(results) if any(t is u for u in traces)]

    def rows(field: np.ndarray) -> np.ndarray:
        # every chain and draw: the arrays themselves; after an interruption, a copy of
        # the draws every reported chain has
        return field if len(reported) == chains and kept == draws else \
            field[reported, :kept]

    sample_stats = {}
    stats = rows(out.stats)
    for column, name in enumerate(setup.sample_stats):  # those a run reports (not NaN
        values = stats[:, :, column]                    # throughout)
        if not np.all(np.isnan(values)):
            sample_stats[name] = values
    if count:  # after an interruption, the databases of the draws every chain reached
        reached = sum(d < kept for d in keep_draws)
        kept_databases = np.stack([databases[c][:reached] for c in reported])
        kept_at = np.array(keep_draws[:reached], dtype=np.int64)
    else:
        kept_databases = kept_at = None
    return Output(rows(out.theta), sample_stats, rows(out.total) if keep_stats else None,
                  kept_databases, kept_at)


def _finished(results, tune: int, draws: int, control: Control):
    """The traces to report and how many draws each: all of them, or after an interruption
    the draws every reported chain has (chains with none are left out)."""
    failed = control.checkpoint_error  # a checkpoint that was not written
    kept = [max(0, done - tune) for _, done in results]
    if min(kept) == draws:
        if failed is not None:
            warnings.warn(f"the checkpoint could not be written ({failed}); all draws are "
                          f"returned, but {control.checkpoint} does not hold the finished "
                          f"run", UserWarning, stacklevel=5)
        return [t for t, _ in results], draws
    usable = [(t, k) for (t, _), k in zip(results, kept) if k > 0]
    if not usable:
        if failed is not None:
            raise CheckpointWriteError(f"checkpoint: {failed}; sampling stopped during "
                                       f"warm-up, so there are no draws to return") from failed
        raise KeyboardInterrupt("sampling interrupted during warm-up: no draws to return")
    common = min(k for _, k in usable)
    # Only a checkpoint that exists can be resumed: the first save may be the one that failed.
    saved = resumable(control.checkpoint)
    if failed is not None:
        where = (f"the last checkpoint written to {control.checkpoint} can be resumed once "
                 f"that is fixed" if saved else f"no checkpoint was written to "
                 f"{control.checkpoint}, so nothing can be resumed: start again once that is "
                 f"fixed")
        warnings.warn(f"sampling stopped because the checkpoint could not be written "
                      f"({failed}): returning the first {common} of {draws} draws of "
                      f"{len(usable)} of {len(results)} chains; {where}",
                      UserWarning, stacklevel=5)
        return [t for t, _ in usable], common
    where = "" if control.checkpoint is None else (
        f"; the checkpoint in {control.checkpoint} can be resumed" if saved else
        f"; no checkpoint was written to {control.checkpoint} yet (one is written every "
        f"{control.every} iterations), so nothing can be resumed")
    interrupted(f"sampling interrupted: returning the first {common} of {draws} draws of "
                f"{len(usable)} of {len(results)} chains{where}", stacklevel=5)
    return [t for t, _ in usable], common
