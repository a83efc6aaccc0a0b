"""``dw.sample``: one entry point for every method, one labelled ArviZ output.

This layer validates what all methods share, spawns one ``numpy.random.Generator`` per chain
from one ``SeedSequence`` (so a chain's draws depend only on the seed and its index), hands
over to the method's driver and labels the result.
"""
from __future__ import annotations

import os
import threading
import time
import warnings
from typing import NamedTuple

import numpy as np

from . import diagnostics
from ._checks import MAX_COUNT, as_count
from .runner.chains import deferred_interrupt
from .mechanisms import Mechanism
from .methods import METHODS as _METHOD_CLASSES, RunOptions, as_method
from .model.model import Model
from .runner import memory, plausibility
from .runner.modes import warn_if_missed

__all__ = ["sample", "METHODS"]

#: ``method`` names: the exact record-level sampler, the Bernstein-Sheldon sampler, and the
#: baselines of Foulds et al. (:mod:`dawrap.methods`).
METHODS = tuple(_METHOD_CLASSES)


#: Largest ``chains``: spawning one generator costs about 26 us and 1 KB, and each chain a
#: start of milliseconds, so 10**5 chains already take seconds before the first draw; more is
#: a mistake (``draws`` is how to get more draws), not a run.
MAX_CHAINS = 100_000


def _check_seed(seed) -> None:
    """``seed`` must be an int >= 0 (a NumPy integer too), a SeedSequence or None."""
    if isinstance(seed, (bool, np.bool_)) or (
            seed is not None and not isinstance(seed, (int, np.integer, np.random.SeedSequence))):
        # A bool is an int to Python, but seed=True is a mistake, not the seed 1.
        raise TypeError(f"seed must be an int >= 0, a numpy.random.SeedSequence or None, got "
                        f"{seed!r} of type {type(seed).__name__}")
    if isinstance(seed, (int, np.integer)) and seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")


def _generators(seed, chains: int):
    _check_seed(seed)
    if chains > MAX_CHAINS:  # before spawning: 10**9 chains would take minutes, then fail
        raise ValueError(f"chains must be at most {MAX_CHAINS}, got {chains}")
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return root, [np.random.Generator(np.random.PCG64(c)) for c in root.spawn(chains)]


def sample(model: Model, mechanism: Mechanism, s_dp, n: int, *, method="record",
           draws: int = 1000, tune: int = 1000, chains: int = 4, seed=None, init_theta=None,
           keep_stats: bool = False, cores: int | None = None, progress: bool | None = None,
           **options):
    r"""Sample :math:`p(\theta \mid s_{dp})` for a release of a confidential database.

    Parameters
    ----------
    model : dawrap.Model
        The non-private model of the confidential records.
    mechanism : dawrap.Mechanism
        The record-additive mechanism that produced ``s_dp``.
    s_dp : float or array_like
        The privatized release (integer or float, length ``mechanism.size``). May be ``None``
        for ``method="nonprivate"`` and ``"ops"``, which use ``confidential`` instead.
    n : int
        Number of records in the confidential database (at most 2**53, and for ``"record"``
        small enough that ``chains`` databases of ``n`` records fit in memory).
    method : str or dawrap method object
        A method object carries the options that apply to it alone
        (:mod:`dawrap.methods`): :class:`~dawrap.Record` (default), the exact record-level
        sampler (Ju et al. 2022); :class:`~dawrap.Suffstat`, sufficient-statistic Gibbs
        (Bernstein & Sheldon 2018), a CLT approximation whose cost does not grow with ``n``,
        needs ``model.family``; :class:`~dawrap.Naive`, the conjugate update on the projected
        noisy release (ignores the noise); :class:`~dawrap.NonPrivate`, the conjugate
        posterior from ``confidential`` records (studies only); :class:`~dawrap.OPS`,
        one-posterior-sample via the exponential mechanism from ``confidential``. The names
        ``"record"``, ``"suffstat"``, ``"naive"``, ``"nonprivate"`` and ``"ops"`` build the
        method from the keyword ``options`` below.
    draws, tune : int
        Kept iterations, and discarded warm-up iterations before them, per chain (the
        baselines draw independently and ignore ``tune``); at most 2**53.
    chains : int
        Independent chains, each with its own ``numpy.random.Generator`` spawned from ``seed``
        (at most :data:`MAX_CHAINS`).
    seed : int, numpy.random.SeedSequence or None
        Root of all randomness: the same seed gives bit-identical draws. An int must be
        >= 0; ``True``/``False`` are refused (a bool is not a seed).
    init_theta : array_like or dict, optional
        ``"record"`` and ``"suffstat"``: initial theta for every chain, or one per chain as a
        list of dicts or a ``(chains, theta_size)`` array. Default: ``"record"`` resamples
        64 prior draws per chain by the central-limit approximation of the release's
        likelihood (:mod:`dawrap.runner.starts`: each chain its own draws, so starts stay apart and
        R-hat can still reveal chains stuck apart, but none begins where the release rules
        theta out), or one chain per mode where the release allows separate modes
        (:mod:`dawrap.runner.modes`); mechanisms without noise draws or whose statistic
        depends on the release, and ``"suffstat"``, start at a prior draw.
    keep_stats : bool
        Also return the per-draw imputed confidential statistic (the noise-free release) in
        the group ``imputed_statistic`` (``"record"`` and ``"suffstat"``).
    cores : int, optional
        Threads running chains at once (default: all cores, at most ``chains``). Results do
        not depend on it.
    **options
        With ``method`` given by name, that method's own options (with a method object, give
        them to it instead). An option of another method raises an error unless it is at its
        default value (studies pass one set of options to every method).
    confidential : array_like, optional
        The confidential records, for ``"nonprivate"`` and ``"ops"``.
    init_x : array_like, optional
        ``"record"``: initial ``(n, record_size)`` database; default ``n`` draws from
        ``f(. | theta)``.
    variant : {None, "gibbs", "marginal", "printed"}
        ``"suffstat"``'s kernel (:class:`~dawrap.Suffstat`): ``None`` (default) picks
        ``"marginal"`` where the noise dominates and ``"gibbs"`` elsewhere; the kernel used is
        the result's attribute ``variant``.
    checkpoint : str or path, optional
        ``"record"``: a folder where each chain's complete state (database, running sums,
        generator state, draws so far) is written atomically every ``checkpoint_every``
        iterations.
    resume : str or path, optional
        ``"record"``: continue the run checkpointed in this folder (same arguments and seed).
        The draws are bit-identical to an uninterrupted run. New checkpoints go to the same
        folder.

    interweave : bool or int, optional
        ``"record"``: after theta's kernel, a non-centred theta move that shifts every record
        with theta (:mod:`dawrap.samplers.interweave`; needs ``Model(noncentred=...)``). ``True`` is
        :data:`~dawrap.samplers.interweave.DEFAULT_STEPS` Metropolis steps of it per iteration, an
        integer that many (each a pass over the records), ``False`` or 0 none. Default: on
        when the model has a non-centred parameterisation and the estimated fraction of
        missing information (:func:`dawrap.runner.information.missing_information`) is at least
        :data:`~dawrap.samplers.interweave.AUTO_THRESHOLD` (or the map's own threshold), where
        measurement says it pays, or the release allows separate modes of theta.
    jumps : bool, optional
        ``"record"`` with ``interweave``: independence proposals between the modes of the
        release (:mod:`dawrap.runner.modes`). Default: on where there are several.
    sweeps : int
        ``"record"``: record sweeps per theta update (default 1).
    databases : int
        ``"record"``: imputed databases kept per chain, at evenly spaced draws, for
        multiply-imputed synthetic data (:mod:`dawrap.studies.synthetic`; default 0).
    scan : {"systematic", "random"}
        ``"record"``: visit the records in order (default, as in Ju et al.) or ``n`` records
        drawn at random per sweep.
    progress : bool, optional
        ``"record"`` and ``"suffstat"``: a progress line on stderr. Default: shown only when stderr is a
        terminal; ``False`` silences it, ``True`` forces it (no other value is accepted).

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        Groups ``posterior``, ``sample_stats`` (``"record"``: ``accept_rate``,
        ``min_accept_prob``, ``theta_accept`` when the kernel reports it, ``move_accept``
        with ``interweave``; ``"suffstat"``: ``rejections``, or ``accept_prob`` for the
        marginal kernel), ``observed_data`` (``s_dp``), ``constant_data`` (``n`` and the mechanism's
        parameters), ``imputed_statistic`` with ``keep_stats``, and ``imputed_databases``
        with ``"record"``'s ``databases`` (:class:`~dawrap.Record`). Attributes: method,
        model, mechanism, seed, dawrap version, ``compile_time`` (seconds of the call spent
        compiling, or loading compiled code from numba's disk cache: mostly the first call
        of a model in a process) and ``sampling_time`` (seconds of the sampler's run less
        its compile time).

    Raises
    ------
    TypeError, ValueError
        For any invalid argument, naming it and what was expected; see the Notes for the
        memory and release checks.

    Notes
    -----
    Before anything is drawn, two checks protect the run: a run whose databases and draws
    would not fit in the available memory is refused, with the size it would need; and a
    release outside the range the confidential statistic can take under every theta (where
    the mechanism's contribution domain or sensitivity bounds it) by more than 40 nats of
    noise density draws a ``RuntimeWarning``, or a ``ValueError`` when double precision can
    no longer resolve one record's change at that release.

    Ctrl-C during ``"record"`` sampling returns the draws so far (with a warning) instead of
    losing them.

    After a ``"record"`` or ``"suffstat"`` run, one ``RuntimeWarning`` names the parameters
    whose rank-normalised split R-hat exceeds 1.01 or whose bulk ESS is below 100 per chain
    (:func:`dawrap.diagnostics.convergence`; the thresholds of ArviZ and PyMC).

    Examples
    --------
    A release of 1000 Bernoulli records' count with Laplace noise (epsilon 0.5), at a
    reduced size (the defaults are 4 chains of 1000 draws after 1000 warm-up iterations):

    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> model, mech = beta_binomial.model(a=1, b=1), beta_binomial.laplace(epsilon=0.5)
    >>> idata = dw.sample(model, mech, s_dp=312.4, n=1000, draws=500, tune=200, chains=1,
    ...                   seed=0, progress=False)
    >>> p = dw.diagnostics.group(idata, "posterior")["p"]
    >>> p.shape                                                  # (chain, draw)
    (1, 500)
    >>> exact = beta_binomial.exact_posterior(mech, 312.4, 1000)  # the count summed out
    >>> bool(abs(float(p.mean()) - exact.mean()) < 4 * dw.diagnostics.mcse(p.values))
    True
    >>> table = dw.diagnostics.summary(idata)       # arviz.summary: mean, sd, ESS, R-hat
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a dawrap.Model, got {type(model).__name__}")
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a dawrap.Mechanism, got {type(mechanism).__name__}")
    method = as_method(method, options)
    uses_release = method.uses_release
    if s_dp is None and uses_release:
        raise ValueError(f"s_dp (the release) is required for method={method.name!r}")
    if s_dp is not None:
        s_dp = mechanism.check_release(s_dp)
    n = as_count(n, "n", maximum=MAX_COUNT)
    if uses_release:  # a prior set from the release (Model(for_release=)): resolved once
        model = model.resolve(mechanism, s_dp, n)
    draws = as_count(draws, "draws", maximum=MAX_COUNT)
    tune = as_count(tune, "tune", minimum=0, maximum=MAX_COUNT)
    chains = as_count(chains, "chains", maximum=MAX_CHAINS)
    # More threads than chains would idle: any cores >= chains is the same run.
    cores = min(chains, os.cpu_count() or 1) if cores is None \
        else min(chains, as_count(cores, "cores"))
    if not isinstance(keep_stats, (bool, np.bool_)):
        raise TypeError(f"keep_stats must be True or False, got {keep_stats!r}")
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress must be True, False or None, got {progress!r}")
    progress = None if progress is None else bool(progress)
    _check_seed(seed)
    if not method.takes_init_theta and init_theta is not None:
        raise ValueError("init_theta applies to method='record' and 'suffstat' only")
    # Ctrl-C from here on never raises inside compiled code or numba's compiler (which can
    # crash the interpreter or be lost): it is deferred to the next safe point.
    stop = threading.Event()
    with deferred_interrupt(stop.set), _compile_timer() as compiling:
        # Before anything is allocated or drawn: the memory the run needs, and whether the
        # release is one the model could have produced.
        memory.check_memory(method.memory_needed(model, mechanism, n, draws, chains, cores,
                                                 keep_stats), chains,
                            advice="; method='suffstat' needs no memory for n"
                            if method.name == "record" else "")
        if uses_release:
            plausibility.check_plausible(model, mechanism, s_dp, n)
        method = method.prepare(model, mechanism, n, s_dp)  # automatic choices, folders
        resume = getattr(method, "resume", None)
        if resume is not None and seed is None:
            from .runner.checkpoint import saved_seed

            seed = saved_seed(resume)  # the run's own seed, so its fresh chains match too
        root, rngs = _generators(seed, chains)
        if stop.is_set():  # Ctrl-C during the checks above (some compile user functions)
            raise KeyboardInterrupt("sampling interrupted before the chains started: no "
                                    "draws to return")

        began, compiled_before = time.perf_counter(), _seconds(compiling)
        out = method.run(model, mechanism, s_dp, n, rngs,
                         RunOptions(draws, tune, keep_stats, cores, init_theta, progress,
                                str(root.entropy)))
        elapsed = time.perf_counter() - began
    compile_time = _seconds(compiling)
    # The sampler's own time: its run less the compilation inside it (the first chunk of a
    # chain compiles the chain, seconds to minutes, where a sweep takes microseconds).
    elapsed = max(0.0, elapsed - (compile_time - compiled_before))
    if stop.is_set():  # Ctrl-C during a baseline's (short) run: honoured now
        raise KeyboardInterrupt("sampling interrupted")
    if method.name in ("record", "suffstat"):
        _warn_if_unconverged(model, out.theta, method)
        warn_if_missed(model, mechanism, s_dp, n, out.theta)  # a mode no chain visited
    return _label(model, mechanism, s_dp, n, out,
                  _Run(method.name, str(root.entropy), elapsed, tune, draws,
                       {"compile_time": compile_time, **method.attrs()}))


def _compile_timer():
    """A context in which numba's compiler time is measured: the wall time during which any
    thread holds or waits for numba's compiler lock, which every compilation and every load
    from the disk cache takes (nested acquisitions counted once). Read it with
    :func:`_seconds`. Another thread compiling at the same time counts too."""
    from numba.core import event

    return event.install_listener("numba:compiler_lock", event.TimingListener())


def _seconds(timer) -> float:
    """Seconds measured so far by a :func:`_compile_timer`."""
    return timer.duration if timer.done else 0.0


#: A run warns when a parameter's rank-normalised split R-hat exceeds this, or its bulk ESS
#: is below ESS_PER_CHAIN per chain: the thresholds of Vehtari et al. (2021), which ArviZ's
#: summary and PyMC's sampler warnings use.
RHAT_WARNING, ESS_PER_CHAIN = 1.01, 100
#: Most draws x scalars checked (a few seconds of sorting): beyond it, evenly spaced scalars.
CHECK_BUDGET = 20_000_000
#: Draws x scalars checked at once (the check's memory is about ten times this in float64).
CHECK_BLOCK = 2_000_000
#: Parameters named in the warning, per check.
NAMED = 8


def _warn_if_unconverged(model: Model, theta: np.ndarray, method) -> None:
    """One warning after sampling when some parameter has R-hat above :data:`RHAT_WARNING`
    (two chains or more) or a bulk ESS below :data:`ESS_PER_CHAIN` per chain, naming them:
    a stuck or slowly mixing chain must not pass silently. Constant parameters (a fixed
    value) are not checked, nor runs of fewer than 4 draws per chain. ``method`` is the
    method object that ran (:mod:`dawrap.methods`); the warning advises only what applies
    to it and to ``model`` (:func:`_remedies`)."""
    chains, draws = theta.shape[0], theta.shape[1]
    if draws < 4 or theta.shape[2] == 0:
        return
    labels = _labels(model)
    columns = np.arange(theta.shape[2])
    if chains * draws * columns.size > CHECK_BUDGET:
        columns = np.unique(np.linspace(0, columns.size - 1,
                                        max(1, CHECK_BUDGET // (chains * draws))).astype(int))
    # in blocks of scalars: the check's temporaries (ranks, normal scores, padded FFTs) are
    # about ten times its input, 2.5 GB for the whole budget at once; per block, 25 MB
    block = max(1, CHECK_BLOCK // (chains * draws))
    parts = [diagnostics.convergence(theta[:, :, columns[a:a + block]])
             for a in range(0, columns.size, block)]
    rhat = np.concatenate([r for r, _ in parts])
    ess = np.concatenate([e for _, e in parts])
    checked = "" if columns.size == theta.shape[2] else \
        f" (checked {columns.size} of {theta.shape[2]} scalars, evenly spaced)"
    problems = []
    high = np.flatnonzero(rhat > RHAT_WARNING)
    if high.size:
        problems.append(f"R-hat above {RHAT_WARNING} for "
                        + _named([(labels[columns[j]], f"{rhat[j]:.3g}")
                                  for j in high[np.argsort(-rhat[high])]]))
    low = np.flatnonzero(ess < ESS_PER_CHAIN * chains)
    if low.size:
        problems.append(f"bulk ESS below {ESS_PER_CHAIN} per chain ({ESS_PER_CHAIN * chains} "
                        f"for {chains} chain{'s' * (chains > 1)} of {draws} draws) for "
                        + _named([(labels[columns[j]], f"{ess[j]:.0f}")
                                  for j in low[np.argsort(ess[low])]]))
    if not problems:
        return
    remedies = _remedies(model, method)
    advice = f"; for this model and method also: {'; '.join(remedies)}" if remedies else ""
    warnings.warn(f"R-hat and ESS: {' and '.join(problems)}{checked}. The chains have not "
                  f"mixed enough for reliable estimates (Vehtari et al. 2021). Run longer "
                  f"(draws, tune), start the chains closer to the posterior (init_theta), or "
                  f"check the model{advice}; dw.diagnostics.summary(result) shows R-hat and "
                  f"ESS per parameter", RuntimeWarning, stacklevel=3)


def _remedies(model: Model, method) -> list:
    """What may make ``method``'s chains on ``model`` mix, beyond running longer (which
    always applies): only what this model and method can do, so that the warning never
    advises a setting the model refuses.

    Derived from what the model declares it can do: the non-centred move for the record
    sampler where the model has a non-centred map (and the chain's records are in this
    process: not on a dask cluster); the marginal kernel for suffstat where the family
    allows it; then, for the record sampler, the model's own ``remedies``
    (:class:`~dawrap.Model`). A remedy the run already used is not repeated: a run that
    interweaved is advised more steps.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial, dirichlet_multinomial
    >>> _remedies(beta_binomial.model(), dw.Record())[0][:16]
    'interweave=True '
    >>> _remedies(dirichlet_multinomial.model(alpha=[1, 1]), dw.Record())
    []
    """
    from .runner.suffstat import has_marginal
    from .samplers.interweave import DEFAULT_STEPS

    remedies = []
    if method.name == "record":
        steps = method.interweave  # steps per iteration once prepared; None, True, False before
        if steps is None or isinstance(steps, (bool, np.bool_)):
            steps = DEFAULT_STEPS if steps else 0
        # As the automatic choice (Record.prepare): the non-centred move takes the one move
        # slot, so a model with its own records move is not advised to give it up.
        if (model.noncentred is not None and model.records_move is None
                and getattr(method.groups, "local", True)):
            remedies.append("interweave=True (the model's non-centred move, which moves "
                            "theta and every record together: it mixes far better when the "
                            "noise hides much of the data)" if not steps else
                            f"interweave={2 * steps} (more non-centred steps per iteration; "
                            f"this run made {steps})")
        remedies.extend(model.remedies)
    elif method.name == "suffstat" and model.family is not None \
            and has_marginal(model.family) and method.variant != "marginal":
        remedies.append("variant='marginal' (theta updated with the statistic integrated "
                        "out: it mixes better when the noise dominates)")
    return remedies


def _labels(model: Model) -> list:
    """The name of each scalar of theta: ``p``, or ``beta[1]`` for a vector parameter."""
    labels = [""] * model.theta_size
    for name, index in model.unpack(np.arange(model.theta_size, dtype=float)).items():
        index = np.asarray(index)
        for position in np.ndindex(index.shape):
            labels[int(index[position])] = name if not position else \
                f"{name}[{', '.join(map(str, position))}]"
    return labels


def _named(items: list) -> str:
    """``a (1.02), b (1.03)``, at most :data:`NAMED` of them."""
    shown = ", ".join(f"{label} ({value})" for label, value in items[:NAMED])
    return shown if len(items) <= NAMED else f"{shown} and {len(items) - NAMED} more"


class _Run(NamedTuple):
    """What a run adds to its result's attributes besides the model and mechanism."""

    method: str            # the method's name
    seed: str              # the root seed's entropy, from which every chain's is spawned
    sampling_time: float   # seconds of sampling, compilation excluded
    tune: int
    draws: int
    method_attrs: dict     # the compile time and the method's own (Method.attrs)


def _label(model, mech, s_dp, n, out, run: _Run):
    """The labelled ArviZ result of a run: its draws (``out``, the method's output) and the
    release, ``n`` and privacy as data; the run's settings (``run``) as attributes."""
    from . import __version__

    groups = {"posterior": model.posterior_variables(out.theta)}
    if out.sample_stats:
        groups["sample_stats"] = out.sample_stats
    if s_dp is not None:
        groups["observed_data"] = {"s_dp": s_dp}
    groups["constant_data"] = {"n": np.asarray(n),
                               **{k: np.asarray(v) for k, v in mech.privacy.items()}}
    if out.imputed is not None:
        groups["imputed_statistic"] = {"t": out.imputed}
    if out.databases is not None:
        groups["imputed_databases"] = {"x": out.databases, "draw": out.database_draws}
    attrs = {"method": run.method, "model": model.name, "mechanism": repr(mech),
             "seed": run.seed, "dawrap_version": __version__,
             "sampling_time": run.sampling_time, "tune": run.tune, "draws": run.draws,
             **run.method_attrs}
    return diagnostics.to_arviz(groups, attrs, model.dims, model.coords)
