"""``dw.sample``: one entry point for every method, one labelled ArviZ output.

This layer validates what all methods share, spawns one ``numpy.random.Generator`` per chain
from one ``SeedSequence`` (so a chain's draws depend only on the seed and its index), hands
over to the method's driver and labels the result.
"""
from __future__ import annotations

import numbers
import os
import time
import warnings

import numpy as np

from . import _arviz
from ._checks import as_count
from .baselines import run_naive, run_nonprivate, run_ops
from .interweave import AUTO_THRESHOLD, DEFAULT_STEPS, missing_information
from .mechanisms import Mechanism
from .model import Model
from .run_record import run_record
from .run_suffstat import run_suffstat

__all__ = ["sample", "METHODS"]

#: ``method`` values: the exact record-level sampler, the Bernstein-Sheldon sampler, and the
#: baselines of Foulds et al.
METHODS = ("record", "suffstat", "naive", "nonprivate", "ops")


def _generators(seed, chains: int):
    if seed is not None and not isinstance(seed, (int, np.integer, np.random.SeedSequence)):
        raise TypeError(f"seed must be an int, a numpy.random.SeedSequence or None, got "
                        f"{type(seed).__name__}")
    if isinstance(seed, (int, np.integer)) and seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return root, [np.random.Generator(np.random.PCG64(c)) for c in root.spawn(chains)]


def sample(model: Model, mechanism: Mechanism, s_dp, n: int, *, method: str = "record",
           draws: int = 1000, tune: int = 1000, chains: int = 4, seed=None, init_theta=None,
           init_x=None, keep_stats: bool = False, cores: int | None = None,
           confidential=None, variant: str = "gibbs", checkpoint=None,
           checkpoint_every: int = 1000, resume=None, progress: bool | None = None,
           interweave: bool | None = None, sweeps: int = 1, scan: str = "systematic"):
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
        Number of records in the confidential database.
    method : str
        ``"record"`` (default): record-level data augmentation (Ju et al. 2022), exact.
        ``"suffstat"``: sufficient-statistic Gibbs (Bernstein & Sheldon 2018), a CLT
        approximation whose cost does not grow with ``n``; needs ``model.family``.
        ``"naive"``: conjugate update on the projected noisy release (ignores the noise).
        ``"nonprivate"``: conjugate posterior from ``confidential`` (studies only).
        ``"ops"``: one-posterior-sample via the exponential mechanism, ``chains * draws``
        samples at ``mechanism.epsilon / (chains * draws)`` each, from ``confidential``.
    draws, tune : int
        Kept iterations, and discarded warm-up iterations before them, per chain (the
        baselines draw independently and ignore ``tune``).
    chains : int
        Independent chains, each with its own ``numpy.random.Generator`` spawned from ``seed``.
    seed : int, numpy.random.SeedSequence or None
        Root of all randomness: the same seed gives bit-identical draws.
    init_theta : array_like or dict, optional
        ``"record"`` and ``"suffstat"``: initial theta for every chain, or one per chain as a
        list of dicts or a ``(chains, theta_size)`` array. Default: ``"record"`` resamples
        64 prior draws per chain by the central-limit approximation of the release's
        likelihood (:mod:`dawrap.start`: each chain its own draws, so starts stay apart and
        R-hat can still reveal chains stuck apart, but none begins where the release rules
        theta out); mechanisms without noise draws or whose statistic depends on the
        release, and ``"suffstat"``, start at a prior draw.
    init_x : array_like, optional
        ``"record"``: initial ``(n, record_size)`` database; default ``n`` draws from
        ``f(. | theta)``.
    keep_stats : bool
        Also return the per-draw imputed confidential statistic (the noise-free release) in
        the group ``imputed_statistic`` (``"record"`` and ``"suffstat"``).
    cores : int, optional
        Threads running chains at once (default: all cores, at most ``chains``). Results do
        not depend on it.
    confidential : array_like, optional
        The confidential records, for ``"nonprivate"`` and ``"ops"``.
    variant : {"gibbs", "printed"}
        ``"suffstat"`` with a truncated release: the proper Gibbs update of the centre
        statistic (default) or Algorithm 2 line 10 as printed (see :mod:`dawrap.suffstat`).
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
        with theta (:mod:`dawrap.interweave`; needs ``Model(noncentred=...)``). ``True`` is
        :data:`~dawrap.interweave.DEFAULT_STEPS` Metropolis steps of it per iteration, an
        integer that many (each a pass over the records), ``False`` or 0 none. Default: on
        when the model has a non-centred parameterisation and the estimated fraction of
        missing information (:func:`dawrap.interweave.missing_information`) is at least
        :data:`~dawrap.interweave.AUTO_THRESHOLD`, where measurement says it pays.
    sweeps : int
        ``"record"``: record sweeps per theta update (default 1).
    scan : {"systematic", "random"}
        ``"record"``: visit the records in order (default, as in Ju et al.) or ``n`` records
        drawn at random per sweep.
    progress : bool, optional
        ``"record"``: a progress line on stderr. Default: shown only when stderr is a
        terminal; ``False`` silences it, ``True`` forces it.

    Ctrl-C during ``"record"`` sampling returns the draws so far (with a warning) instead of
    losing them.

    Returns
    -------
    arviz.InferenceData or xarray.DataTree
        Groups ``posterior``, ``sample_stats`` (``"record"``: ``accept_rate``,
        ``min_accept_prob``, ``theta_accept`` when the kernel reports it, ``move_accept``
        with ``interweave``; ``"suffstat"``: ``rejections``),
        ``observed_data`` (``s_dp``), ``constant_data`` (``n`` and the mechanism's
        parameters), and ``imputed_statistic`` with ``keep_stats``. Attributes: method,
        model, mechanism, seed, dawrap version, sampling time.

    Examples
    --------
    >>> from dawrap.models import beta_binomial
    >>> model, mech = beta_binomial.model(a=1, b=1), beta_binomial.laplace(epsilon=0.5)
    >>> idata = dw.sample(model, mech, s_dp=312.4, n=1000, seed=0)  # doctest: +SKIP
    >>> az.summary(idata)  # doctest: +SKIP
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a dawrap.Model, got {type(model).__name__}")
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a dawrap.Mechanism, got {type(mechanism).__name__}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    uses_release = method in ("record", "suffstat", "naive")
    if s_dp is None and uses_release:
        raise ValueError(f"s_dp (the release) is required for method={method!r}")
    if s_dp is not None:
        s_dp = mechanism.check_release(s_dp)
    n = as_count(n, "n")
    draws = as_count(draws, "draws")
    tune = as_count(tune, "tune", minimum=0)
    chains = as_count(chains, "chains")
    cores = min(chains, os.cpu_count() or 1) if cores is None else as_count(cores, "cores")
    if not isinstance(keep_stats, (bool, np.bool_)):
        raise TypeError(f"keep_stats must be True or False, got {keep_stats!r}")
    if method in ("nonprivate", "ops") and confidential is None:
        raise ValueError(f"method={method!r} needs confidential= (the confidential records)")
    if method not in ("record", "suffstat") and init_theta is not None:
        raise ValueError("init_theta applies to method='record' and 'suffstat' only")
    if method != "record" and init_x is not None:
        raise ValueError("init_x applies to method='record' only")
    if method != "record" and (checkpoint is not None or resume is not None):
        raise ValueError("checkpoint and resume apply to method='record' only")
    checkpoint_every = as_count(checkpoint_every, "checkpoint_every")
    sweeps = as_count(sweeps, "sweeps")
    if scan not in ("systematic", "random"):
        raise ValueError(f"scan must be 'systematic' or 'random', got {scan!r}")
    if method != "record" and (sweeps != 1 or scan != "systematic" or interweave is not None):
        raise ValueError("interweave, sweeps and scan apply to method='record' only")
    interweave = _interweave_steps(interweave, model, mechanism, n, method)
    if resume is not None and seed is None:
        from .checkpoint import saved_seed

        seed = saved_seed(resume)  # the run's own seed, so its fresh chains match too
    root, rngs = _generators(seed, chains)

    began = time.perf_counter()
    if method == "record":
        out = run_record(model, mechanism, s_dp, n, rngs, draws=draws, tune=tune,
                         keep_stats=keep_stats, cores=cores, init_theta=init_theta,
                         init_x=init_x, checkpoint=checkpoint,
                         checkpoint_every=checkpoint_every, resume=resume,
                         seed_entropy=str(root.entropy), progress=progress,
                         interweave=interweave, sweeps=sweeps,
                         random_scan=scan == "random")
    elif method == "suffstat":
        out = run_suffstat(model, mechanism, s_dp, n, rngs, draws=draws, tune=tune,
                           keep_stats=keep_stats, cores=cores, variant=variant,
                           init_theta=init_theta)
    elif method == "naive":
        out = run_naive(model, mechanism, s_dp, n, rngs, draws=draws)
    elif method == "nonprivate":
        out = run_nonprivate(model, confidential, n, rngs, draws=draws)
    else:
        out = run_ops(model, mechanism, confidential, n, rngs, draws=draws)
    elapsed = time.perf_counter() - began
    if method in ("record", "suffstat"):
        _warn_if_unconverged(model, out.theta)
    kernel = {"interweave": interweave, "sweeps": sweeps, "scan": scan} \
        if method == "record" else {}
    return _label(model, mechanism, s_dp, n, out, method, root, elapsed, tune, draws, kernel)


def _interweave_steps(interweave, model: Model, mechanism: Mechanism, n: int,
                      method: str) -> int:
    """Non-centred steps per iteration (0: no interweaving) for ``sample(interweave=...)``."""
    if interweave is None:
        on = model.noncentred is not None and method == "record" and (
            missing_information(model, mechanism, n) or 0.0) >= AUTO_THRESHOLD
        return DEFAULT_STEPS if on else 0
    if isinstance(interweave, (bool, np.bool_)):
        steps = DEFAULT_STEPS if interweave else 0
    elif isinstance(interweave, numbers.Integral) and interweave >= 0:
        steps = int(interweave)
    else:
        raise TypeError(f"interweave must be None, True, False or a number of non-centred "
                        f"steps per iteration (an integer >= 0), got {interweave!r}")
    if steps and model.noncentred is None:
        raise ValueError("interweave needs the model's non-centred parameterisation: "
                         "Model(noncentred=dw.NonCentred(...))")
    return steps


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
            r = _arviz.rhat(flat[:, :, j])
            if r > worst:
                worst, where = r, name if flat.shape[2] == 1 else f"{name}[{j}]"
    if worst > RHAT_WARNING:
        warnings.warn(f"R-hat = {worst:.3g} for {where}: the chains have not converged to the "
                      f"same distribution. Run longer (tune, draws), start the chains closer "
                      f"to the posterior (init_theta), or check the model", RuntimeWarning,
                      stacklevel=3)


def _label(model, mech, s_dp, n, out, method, root, elapsed, tune, draws, kernel):
    from . import __version__

    groups = {"posterior": model.unpack(out.theta)}
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
    return _arviz.to_arviz(groups, attrs)
