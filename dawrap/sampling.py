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

import numpy as np

from . import diagnostics
from ._checks import as_count
from .runner.chains import deferred_interrupt
from .mechanisms.additive import Mechanism, _laplace_log_density
from .methods import METHODS as _METHOD_CLASSES, Shared, as_method
from .model.model import Model
from .runner.modes import warn_if_missed
from .runner.starts import noise_variance, simulated_contributions

__all__ = ["sample", "METHODS"]

#: ``method`` names: the exact record-level sampler, the Bernstein-Sheldon sampler, and the
#: baselines of Foulds et al. (:mod:`dawrap.methods`).
METHODS = tuple(_METHOD_CLASSES)


#: Largest ``n``, ``draws``, ``tune``, ``sweeps``, ``checkpoint_every`` and ``interweave``
#: accepted: 2**53, the largest count float64 holds exactly (the samplers compute with ``n`` as
#: a float) and far from int64 overflow in the compiled loops (``tune + draws`` iterations).
MAX_COUNT = 2 ** 53
#: Largest ``chains``: spawning one generator costs about 26 us and 1 KB, and each chain a
#: start of milliseconds, so 10**5 chains already take seconds before the first draw; more is
#: a mistake (``draws`` is how to get more draws), not a run.
MAX_CHAINS = 100_000
#: Bytes per chain besides its arrays: its generator, seed sequence and small state.
CHAIN_OVERHEAD = 2048


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


def _count(value, name: str, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """``value`` as an int in ``[minimum, maximum]`` (NumPy integers too, bools not), or an
    error naming ``name``."""
    value = as_count(value, name, minimum)
    if value > maximum:
        shown = "2**53" if maximum == MAX_COUNT else f"{maximum}"
        raise ValueError(f"{name} must be an integer >= {minimum} and at most {shown}, got "
                         f"{value}")
    return value


def _choice(value, name: str, options: tuple) -> str:
    """``value`` if it is one of the strings ``options``, else an error naming ``name`` (a
    NumPy array is refused too: ``in`` on it would be ambiguous)."""
    allowed = " or ".join(map(repr, options)) if len(options) == 2 else f"one of {options}"
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {allowed}, got {value!r} of type "
                        f"{type(value).__name__}")
    if value not in options:
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return str(value)


def available_memory() -> int | None:
    """Bytes this process can still allocate without swapping or being killed, as far as the
    system says: Linux's ``MemAvailable`` (else the free physical pages), capped by a cgroup
    (container) limit minus its usage. ``None`` when none of these can be read."""
    found = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    if not found:
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            try:
                found.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
            except (ValueError, OSError, AttributeError):
                pass
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                          "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit) as f, open(usage) as g:
                found.append(int(f.read().strip()) - int(g.read().strip()))
        except (OSError, ValueError):  # absent, or "max": no limit
            pass
    return min(found) if found else None


def _gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:.3g} GB"


def _check_memory(model: Model, mechanism: Mechanism, method: str, n: int, draws: int,
                  chains: int, cores: int, keep_stats: bool) -> None:
    """Refuse, naming ``n``, ``chains`` and ``draws``, a run whose arrays cannot fit in the
    available memory (:func:`available_memory`), before anything is allocated.

    The estimate counts what grows with the arguments, 8 bytes a float: ``"record"`` keeps
    every chain's imputed database (``chains x n x record_size``, all made before the first
    iteration) plus one more per running chain (the non-centred move's proposal, a
    checkpoint's copy); every method keeps ``chains x draws`` draws of theta and the
    sample statistics (and of the statistic with ``keep_stats``), twice (the traces and the
    stacked output). Without it, ``n = 2**31`` ran until the kernel killed the process at
    22 GB and ``n = 2**63`` failed with an OverflowError naming nothing.
    """
    record_floats = (chains + min(cores, chains)) * n * model.record_size \
        if method == "record" else 0
    per_draw = model.theta_size + (5 if method == "record" else 1) \
        + (mechanism.size if keep_stats else 0)
    draw_floats = 2 * chains * draws * per_draw
    need = 8 * (record_floats + draw_floats) + CHAIN_OVERHEAD * chains
    have = available_memory()
    if have is None or need <= have:
        return
    parts = []
    if record_floats:
        parts.append(f"{_gb(8 * record_floats)} for the imputed databases (chains={chains} "
                     f"(+{min(cores, chains)} running) x n={n} records x "
                     f"record_size={model.record_size} x 8 bytes)")
    parts.append(f"{_gb(8 * draw_floats)} for the draws (chains={chains} x draws={draws} x "
                 f"{per_draw} values x 8 bytes, twice)")
    advice = "; method='suffstat' needs no memory for n" if method == "record" else ""
    raise ValueError(f"this run would need about {_gb(need)} of memory ({' and '.join(parts)}) "
                     f"but about {_gb(max(have, 0))} is available: reduce n, chains or "
                     f"draws{advice}")


#: A release is implausible when some coordinate lies so far outside the range of the
#: confidential statistic that the noise needed to reach it has a density below
#: exp(-IMPLAUSIBLE_NATS) times its density at zero (see _check_plausible).
IMPLAUSIBLE_NATS = 40.0
#: Rounding error, in nats, of the mechanism's log density above which the samplers cannot
#: tell one confidential total from its neighbours at the release.
RESOLUTION_NATS = 1e-3


def _statistic_range(model: Model, mechanism: Mechanism, s_dp: np.ndarray, n: int):
    """Bounds ``(lower, upper, source)`` per coordinate on the confidential total that hold
    under every theta, or ``None`` when neither the mechanism nor the model gives one.

    One record's contribution is bounded by the mechanism's declared contribution domain
    (``mechanism.contribution``), or else by its stated sensitivity around simulated
    contributions: a replacement sensitivity D means every record's contribution lies within
    D of every other's in each coordinate, so within ``[max_r t_r - D, min_r t_r + D]`` over
    any records ``r``. Simulated records that contradict the declaration (outside the domain,
    or spread wider than D) mean it does not bound this model's records: no range is claimed.
    """
    domain = getattr(mechanism, "contribution", None)
    seen = simulated_contributions(model, mechanism, s_dp)
    if seen is None:
        return None
    if domain is not None and hasattr(domain, "lower") and hasattr(domain, "upper"):
        lower = np.broadcast_to(np.asarray(domain.lower, dtype=np.float64), mechanism.size)
        upper = np.broadcast_to(np.asarray(domain.upper, dtype=np.float64), mechanism.size)
        if np.all((seen >= lower) & (seen <= upper)):
            return n * lower, n * upper, f"the declared contribution domain {domain!r}"
        return None
    sensitivity = mechanism.privacy.get("sensitivity")
    if sensitivity is None:
        return None
    low, high = seen.min(axis=0), seen.max(axis=0)
    if np.any(high - low > sensitivity):
        return None
    return n * (high - sensitivity), n * (low + sensitivity), \
        f"sensitivity = {sensitivity:g} (each record's contribution within it of the others)"


def _check_plausible(model: Model, mechanism: Mechanism, s_dp: np.ndarray, n: int) -> None:
    r"""Warn, or refuse, when the release is implausible under every theta.

    Where the model and mechanism bound the confidential total ``T`` (each coordinate in
    ``[lower, upper]`` under every theta: :func:`_statistic_range`), the noise that produced
    coordinate ``j`` of the release is at least its distance :math:`d_j` from that range. Its
    cost in nats, :math:`\nu_j = \log g(s, s) - \log g(s, t^{(j)})` with :math:`t^{(j)}` the
    release moved to the range in coordinate ``j`` only, is :math:`d_j/b` for Laplace noise of
    scale ``b`` (``epsilon d_j / sensitivity`` for the geometric) and :math:`d_j^2/2\sigma^2`
    for Gaussian noise; for all the built-in mechanisms the probability of noise that large is
    at most :math:`e^{-\nu_j}`. Then, per coordinate (so that a long release of small counts,
    many slightly negative, stays quiet):

    * :math:`\nu_j >` :data:`IMPLAUSIBLE_NATS` (40 nats: 28 noise sds for Laplace, 8.9 for
      Gaussian, probability at most e^-40 = 4.2e-18 under every theta): a
      ``RuntimeWarning``. The posterior is still well defined and the samplers compute it
      (with Laplace noise it is the posterior for a release at the edge of the range), so
      refusing would withhold a correct answer; but such a release almost surely means a
      wrong ``n``, mechanism, scale or units.
    * the rounding error of the log density at the release, about :math:`\nu_j \cdot 2^{-52}`,
      above :data:`RESOLUTION_NATS`, or :math:`\nu_j` infinite (the density underflows): a
      ``ValueError``. Double precision can then no longer tell one confidential total from
      its neighbours (at ``s_dp = 1e18`` with epsilon = 0.5 the log density moves in steps of
      64 nats), so the samplers would return something close to the prior, or wrong in
      spread, without any sign of it: no output is better than that.

    Cheap: one pass over about a hundred simulated records
    (:func:`dawrap.runner.starts.simulated_contributions`) and O(size) arithmetic, plus two
    log-density evaluations per coordinate outside the range (none for an ordinary release).
    """
    bounds = _statistic_range(model, mechanism, s_dp, n)
    if bounds is None:
        return
    lower, upper, source = bounds
    nearest = np.clip(s_dp, lower, upper)
    outside = np.flatnonzero(nearest != s_dp)
    if outside.size == 0:
        return
    log_density, params = mechanism.log_density, mechanism.params
    with np.errstate(over="ignore", invalid="ignore"):
        at_zero = float(log_density(s_dp, s_dp, params))
        nats = np.empty(outside.size)
        for i, j in enumerate(outside):
            t = s_dp.copy()
            t[j] = nearest[j]
            nats[i] = at_zero - float(log_density(s_dp, t, params))
    bad = np.where(np.isnan(nats), np.inf, nats)
    worst = int(np.argmax(bad))
    j, cost = int(outside[worst]), float(bad[worst])
    if cost <= IMPLAUSIBLE_NATS:
        return
    where = f"s_dp[{j}] = {s_dp[j]:g}" if s_dp.shape[0] > 1 else f"s_dp = {s_dp[j]:g}"
    variance = noise_variance(mechanism)
    sds = "" if variance is None else \
        f" ({abs(s_dp[j] - nearest[j]) / np.sqrt(variance[j]):.3g} noise standard deviations)"
    what = (f"{where} lies outside [{lower[j]:g}, {upper[j]:g}], the range the confidential "
            f"statistic has under every theta with n = {n} (from {source}), by "
            f"{abs(s_dp[j] - nearest[j]):.6g}{sds}: noise that large has log density "
            f"{cost:.4g} nats below zero noise")
    if not np.isfinite(cost) or cost * 2.0 ** -52 > RESOLUTION_NATS:
        hint = ""
        if mechanism.log_density is _laplace_log_density:
            hint = (f"; with this mechanism's Laplace-form noise the posterior is the same "
                    f"for every release beyond the range, so s_dp = {nearest[j]:g} in that "
                    f"coordinate gives it exactly")
        raise ValueError(f"{what}; at this magnitude double precision cannot resolve the "
                         f"change of one record in the mechanism's log density (rounding "
                         f"error about {cost * 2.0 ** -52:.3g} nats), so no sampler can "
                         f"return the posterior. Check n, the mechanism and the units of "
                         f"s_dp{hint}")
    warnings.warn(f"{what}. The release is implausible under every theta (probability below "
                  f"e^-{IMPLAUSIBLE_NATS:g}): check n, the mechanism, its scale and the units "
                  f"of s_dp. Sampling the posterior given it anyway", RuntimeWarning,
                  stacklevel=3)


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
        parameters), and ``imputed_statistic`` with ``keep_stats``. Attributes: method,
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
    n = _count(n, "n")
    draws = _count(draws, "draws")
    tune = _count(tune, "tune", minimum=0)
    chains = _count(chains, "chains", maximum=MAX_CHAINS)
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
        _check_memory(model, mechanism, method.name, n, draws, chains, cores, keep_stats)
        if uses_release:
            _check_plausible(model, mechanism, s_dp, n)
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
                         Shared(draws, tune, keep_stats, cores, init_theta, progress,
                                str(root.entropy)))
        elapsed = time.perf_counter() - began
    compile_time = _seconds(compiling)
    # The sampler's own time: its run less the compilation inside it (the first chunk of a
    # chain compiles the chain, seconds to minutes, where a sweep takes microseconds).
    elapsed = max(0.0, elapsed - (compile_time - compiled_before))
    if stop.is_set():  # Ctrl-C during a baseline's (short) run: honoured now
        raise KeyboardInterrupt("sampling interrupted")
    if method.name in ("record", "suffstat"):
        _warn_if_unconverged(model, out.theta)
        warn_if_missed(model, mechanism, s_dp, n, out.theta)  # a mode no chain visited
    return _label(model, mechanism, s_dp, n, out, method.name, root, elapsed, tune, draws,
                  {"compile_time": compile_time, **method.attrs()})


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


#: Rank-normalised split R-hat above this draws a warning (Vehtari et al. 2021 suggest 1.01
#: for final results; 1.05 flags chains that plainly disagree without crying wolf on short runs).
RHAT_WARNING = 1.05


def _warn_if_unconverged(model: Model, theta: np.ndarray) -> None:
    """Warn when the chains disagree: a stuck or slowly mixing chain must not pass silently."""
    if theta.shape[0] < 2 or theta.shape[1] < 4:
        return
    worst, where = 0.0, ""
    for name, draws in model.unpack(theta).items():
        flat = draws.reshape(draws.shape[0], draws.shape[1], -1)
        for j in range(flat.shape[2]):
            if np.ptp(flat[:, :, j]) == 0:
                continue
            r = diagnostics.rhat(flat[:, :, j])
            if r > worst:
                worst, where = r, name if flat.shape[2] == 1 else f"{name}[{j}]"
    if worst > RHAT_WARNING:
        warnings.warn(f"R-hat = {worst:.3g} for {where}: the chains have not converged to the "
                      f"same distribution. Run longer (tune, draws), start the chains closer "
                      f"to the posterior (init_theta), or check the model", RuntimeWarning,
                      stacklevel=3)


def _label(model, mech, s_dp, n, out, method, root, elapsed, tune, draws, kernel):
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
    attrs = {"method": method, "model": model.name, "mechanism": repr(mech),
             "seed": str(root.entropy), "dawrap_version": __version__,
             "sampling_time": elapsed, "tune": tune, "draws": draws, **kernel}
    return diagnostics.to_arviz(groups, attrs, model.dims, model.coords)
