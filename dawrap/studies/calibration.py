r"""Simulation-based calibration of posterior samplers (Cook, Gelman & Rubin 2006; Talts et
al. 2018), as in the evaluation of Bernstein & Sheldon (2018).

Trial :math:`t` draws :math:`\theta_t \sim p(\theta)`, a database :math:`x_t \sim p(x \mid
\theta_t)` and a release :math:`s_t` from the mechanism, runs each sampler on :math:`s_t`, and
records where :math:`\theta_t` falls among the posterior draws. For a calibrated sampler:

* the rank of :math:`\theta_t` among :math:`L` draws *thinned by the effective sample size*
  is uniform on :math:`\{0, \dots, L\}` (unthinned, autocorrelated draws give a U-shaped
  histogram even for an exact sampler); with a uniform jitter, :math:`(r + V)/(L + 1)` is
  uniform on [0, 1], which the KS statistic and the ECDF band test;
* a central credible interval at level :math:`c` covers :math:`\theta_t` in a fraction
  :math:`c` of trials. The interval is read from the same ESS-thinned, jittered rank:
  :math:`|U - 1/2| \le c/2`, which has probability exactly :math:`c` for a calibrated
  sampler whatever the chain length, so the number of covering trials is
  :math:`\mathrm{Binomial}(M, c)` and is tested against it. The interval between the
  quantiles of the raw draws (also recorded, ``covered``) carries Monte Carlo error in its
  ends; with a few dozen effective draws per trial that error alone makes it cover less
  than :math:`c` (issue 16: 22 misses of the 95% interval in 200 trials with per-trial ESS
  down to 27), so it is reported but not tested.

The verdict (:meth:`Calibration.verdict`) is that a sampler is calibrated when its rank ECDF
stays inside the simultaneous band *and* its coverage passes the two-sided binomial test at
every level, with ``alpha`` split between the two checks and over the levels (Bonferroni:
band at ``alpha / 2``, each level at ``alpha / (2 levels)``), so that a calibrated sampler is
called miscalibrated with probability at most ``alpha``.

Trial :math:`t`'s randomness is ``SeedSequence(seed).spawn(trials)[t]`` whichever worker runs
it, so a study gives identical results serially, in threads, in processes or on a dask cluster.

>>> import os, tempfile
>>> import dawrap as dw
>>> from dawrap.models import beta_binomial
>>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
>>> cal = dw.calibrate(model, mech, n=50, methods=["record", "naive"], trials=20, seed=1,
...                    sample_kwargs={"draws": 200, "tune": 100, "chains": 2},
...                    executor="serial", progress=False)
>>> sorted(cal.ks())            # {method: (KS statistic, p-value)}
['naive', 'record']
>>> _ = cal.plot_ecdf(os.path.join(tempfile.mkdtemp(), "sbc.png"))   # needs matplotlib

(A real study uses a few hundred trials, as ``benchmarks/calibration.py`` does.)
"""
from __future__ import annotations

import contextlib
import functools
import math
import numbers
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .. import diagnostics
from . import trial_log
from .._checks import as_count, hint_misplaced
from .executors import run_tasks
from ..runner.chains import interruptions_raise
from ..runner.progress import Progress
from ..mechanisms.base import Mechanism
from ..model.model import Model
from ..sampling import METHODS, sample
from .calibration_results import Calibration, CoverageTest, ks_uniform

__all__ = ["calibrate", "Calibration", "CoverageTest", "run_trial", "ks_uniform"]

LEVELS = (0.5, 0.8, 0.9, 0.95)
#: dw.sample arguments a trial sets itself.
RESERVED = {"seed", "confidential", "variant", "method", "checkpoint", "resume", "init_x"}
#: dw.sample arguments that apply to the record sampler only (not passed to other methods).
RECORD_ONLY = {"interweave", "sweeps", "scan", "init_theta", "checkpoint_every"}


class Study(NamedTuple):
    """Everything a worker needs to run one trial (picklable when the model and mechanism
    were built by a :func:`dawrap.recipe`)."""
    model: Model
    mechanism: Mechanism
    n: int
    methods: tuple
    seed: int
    parameter: str
    index: int
    levels: tuple
    sample_kwargs: dict


def run_trial(study: Study, t: int) -> dict:
    """Trial ``t`` of ``study``: the true value and, per method, the ESS-thinned rank, the
    posterior quantile and interval coverage."""
    model = study.model
    data_seed, rank_seed, *method_seeds = np.random.SeedSequence(
        study.seed, spawn_key=(t,)).spawn(2 + len(study.methods))
    rng = np.random.default_rng(data_seed)
    theta = model.pack(model.draw_prior(rng))
    x = model.simulate(theta, study.n, seed=rng)
    s_dp = study.mechanism.release(x, seed=rng)
    truth = float(model.unpack(theta[None])[study.parameter].reshape(-1)[study.index])
    jitter = np.random.default_rng(rank_seed)
    row = {"trial": t, "theta": truth}
    for method, method_seed in zip(study.methods, method_seeds):
        name, _, variant = method.partition(":")
        kwargs = study.sample_kwargs if name == "record" else {
            k: v for k, v in study.sample_kwargs.items() if k not in RECORD_ONLY}
        with warnings.catch_warnings(), interruptions_raise():
            # Short chains in a study may draw R-hat warnings; calibration is the verdict.
            # Ctrl-C raises rather than returning truncated chains: a trial computed from
            # them would be stored as complete.
            warnings.simplefilter("ignore", RuntimeWarning)
            idata = sample(model, study.mechanism, s_dp, study.n, method=name,
                           seed=method_seed, confidential=x,
                           variant=(variant or None) if name == "suffstat" else None,
                           **kwargs)
        draws = diagnostics.group(idata, "posterior")[study.parameter].values
        draws = draws.reshape(draws.shape[0], draws.shape[1], -1)[:, :, study.index]
        ess = diagnostics.ess(draws, "bulk") if draws.shape[1] > 3 else float(draws.size)
        stride = max(1, math.ceil(draws.size / max(ess, 1.0)))
        thinned = draws[:, ::stride].ravel()
        below, ties = int(np.sum(thinned < truth)), int(np.sum(thinned == truth))
        rank = below + int(jitter.integers(0, ties + 1))  # ties broken at random
        flat = draws.ravel()
        bounds = np.quantile(flat, np.concatenate([(1 - np.array(study.levels)) / 2,
                                                   (1 + np.array(study.levels)) / 2]))
        k = len(study.levels)
        row[method] = {
            "rank": rank, "thinned": int(thinned.size), "ess": float(ess),
            "pit": (rank + float(jitter.random())) / (thinned.size + 1),
            "quantile": float((np.sum(flat < truth) + 0.5 * np.sum(flat == truth)) / flat.size),
            "covered": [bool(bounds[j] <= truth <= bounds[k + j]) for j in range(k)]}
    return row


# dw.sample's own arguments (draws=300) belong in sample_kwargs: say so, not "unexpected".
@hint_misplaced(sample, "sample_kwargs")
def calibrate(model: Model, mechanism: Mechanism, n: int, methods: Sequence[str], *,
              trials: int, seed: int, parameter: str | None = None, index: int = 0,
              levels: Sequence[float] = LEVELS, sample_kwargs: dict | None = None,
              store=None, executor=None, workers: int | None = None,
              progress: bool | None = None, overwrite: bool = False) -> Calibration:
    """Simulation-based calibration of ``methods`` over ``trials`` simulated releases.

    Parameters
    ----------
    model, mechanism
        The model, and the mechanism releasing each simulated database.
    n : int
        Records per database.
    methods : sequence of str
        ``dw.sample`` methods; ``"suffstat:gibbs"``, ``"suffstat:marginal"`` and
        ``"suffstat:printed"`` run that suffstat kernel (plain ``"suffstat"``: the default).
    trials, seed : int
        Number of simulated datasets, and the root seed.
    parameter, index
        The scalar checked: a parameter name (default the first) and, for a vector
        parameter, the flat index.
    levels : sequence of float
        Central credible-interval levels whose coverage is recorded.
    sample_kwargs : dict
        Passed to every ``dw.sample`` call (default 2 chains x 1000 draws, 500 tune, 1 core).
    store : str or path, optional
        A JSON-lines file to which each completed trial is appended and flushed. A study
        restarted with the same ``store`` and settings skips the trials already there. The
        store is locked while the study runs (a second study on it is an error, not a second
        copy of every trial); a symlink, device or folder is refused, never replaced; a
        damaged line, or two different results for one trial, is an error naming the file
        and line (a last line cut short by a stopped study is dropped and rerun).
    executor : {"processes", "threads", "serial"} or concurrent.futures.Executor
        Where trials run (default a local process pool, ``workers`` processes, default all
        cores); e.g. ``dask.distributed.Client(...).get_executor()`` for a cluster. Results
        do not depend on it.
    progress : bool, optional
        A progress line on stderr; by default only when stderr is a terminal.
    overwrite : bool
        With ``store`` holding a study of other settings: discard it and run this study in
        its place (default False: an error, so that no study is lost by mistake).

    Returns
    -------
    Calibration

    Examples
    --------
    A quick study of the naive baseline (a real one runs a few hundred trials, as
    ``benchmarks/calibration.py`` does), kept in a file and resumed from it:

    >>> import os, tempfile
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
    >>> store = os.path.join(tempfile.mkdtemp(), "trials.jsonl")
    >>> settings = dict(n=50, methods=["naive"], seed=1, executor="serial", store=store,
    ...                 sample_kwargs={"draws": 100, "chains": 1}, progress=False)
    >>> cal = dw.calibrate(model, mech, trials=10, **settings)
    >>> cal = dw.calibrate(model, mech, trials=20, **settings)    # runs trials 10 to 19 only
    >>> cal.theta.shape
    (20,)
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a dawrap.Model, got {type(model).__name__}")
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a dawrap.Mechanism, got {type(mechanism).__name__}")
    if model.for_release is not None:
        raise ValueError(f"model: {model.name} sets its prior from each release (e.g. the "
                         f"marginals model's centre='release' or alpha='auto'), but "
                         f"simulation-based calibration draws every trial's theta from one "
                         f"fixed prior; fix the prior (for the marginals model: centre=None "
                         f"or clique tables, and a number for alpha)")
    n, trials = as_count(n, "n"), as_count(trials, "trials")
    seed = as_count(seed, "seed", minimum=0)
    if isinstance(methods, str) or not methods:
        raise TypeError(f"methods must be a non-empty list of method names, got {methods!r}")
    for method in methods:
        name, _, variant = str(method).partition(":")
        if name not in METHODS or variant not in ("", "gibbs", "printed", "marginal") or (
                variant and name != "suffstat"):
            raise ValueError(f"methods: {method!r} is not one of {METHODS} (or "
                             f"'suffstat:gibbs', 'suffstat:marginal', 'suffstat:printed')")
    repeated = sorted({str(m) for m in methods if list(map(str, methods)).count(str(m)) > 1})
    if repeated:  # a method twice would be run twice and its rows overwrite each other
        raise ValueError(f"methods names {', '.join(map(repr, repeated))} more than once, "
                         f"got {list(methods)!r}")
    if workers is not None:
        workers = as_count(workers, "workers")
    parameter = parameter or next(iter(model.params))
    if parameter not in model.params:
        raise ValueError(f"parameter must be one of {list(model.params)}, got {parameter!r}")
    size = int(np.prod(model.params[parameter]))
    if not isinstance(index, (int, np.integer)) or not 0 <= index < size:
        raise ValueError(f"index must be an integer in [0, {size}) for {parameter!r}, "
                         f"got {index!r}")
    levels = tuple(float(c) for c in levels)
    if not levels or not all(0.0 < c < 1.0 for c in levels):
        raise ValueError(f"levels must be credible levels in (0, 1), got {levels!r}")
    if sample_kwargs is not None and not isinstance(sample_kwargs, dict):
        raise TypeError(f"sample_kwargs must be a dict, got {type(sample_kwargs).__name__}")
    reserved = set(sample_kwargs or ()) & RESERVED
    if reserved:
        raise ValueError(f"sample_kwargs may not set {sorted(reserved)}: each trial sets them "
                         f"itself (seeds are spawned per trial and method)")
    kwargs = {"draws": 1000, "tune": 500, "chains": 2, "cores": 1, "progress": False,
              **(sample_kwargs or {})}
    study = Study(model, mechanism, n, tuple(map(str, methods)), seed, parameter, int(index),
                  levels, kwargs)
    settings = {"model": model.fingerprint, "mechanism": mechanism.fingerprint, "n": n,
                "methods": list(study.methods), "seed": seed, "parameter": parameter,
                "index": study.index, "levels": list(levels), "version": 2,
                "sample_kwargs": {k: repr(v) for k, v in kwargs.items()}}
    if not isinstance(overwrite, (bool, np.bool_)):
        raise TypeError(f"overwrite must be True or False, got {overwrite!r}")
    # The store stays locked from reading it to the last row written: a second study on it
    # is refused rather than recomputing every trial into the same file.
    with (trial_log.Store(store, settings, functools.partial(_row_problem, study),
                       replace=bool(overwrite)) if store is not None
          else contextlib.nullcontext()) as kept:
        rows = dict(kept.rows) if kept is not None else {}
        todo = [t for t in range(trials) if t not in rows]

        def finished(t: int, row: dict) -> None:
            rows[t] = row
            if kept is not None:
                kept.append(row)
            bar.done[0] += 1

        with Progress("calibrate", 1, len(todo), enabled=progress, unit="trials") as bar, \
                warnings.catch_warnings():
            # Set here as well as in run_trial: catch_warnings is not thread-safe, so trials
            # in threads must find the filter already in place.
            warnings.simplefilter("ignore", RuntimeWarning)
            try:
                run_tasks(run_trial, (study,), todo, executor, finished, workers)
            except KeyboardInterrupt:
                raise KeyboardInterrupt(_interrupted(len(rows), trials, store)) from None
        if kept is not None:
            kept.verify(rows, trials)  # the file agrees with what is reported
        return Calibration([rows[t] for t in range(trials)], study.methods, levels, settings)


def _interrupted(complete: int, trials: int, store) -> str:
    """What an interrupted study kept: the trials it completed, none cut short."""
    if store is None:
        return (f"calibration interrupted: {complete} of {trials} trials were complete, and "
                f"none is kept (pass store= to keep completed trials and resume)")
    return (f"calibration interrupted: {complete} of {trials} trials are complete and kept in "
            f"{store} (a trial that was running is not); run the same study again to resume")


def _row_problem(study: Study, row: dict) -> str | None:
    """Why a trial row read from a store cannot be this study's (None if it can): every
    method's entries present, of the right types (a damaged row must not become a KeyError,
    or a zero, in the results)."""
    def real(v):
        return isinstance(v, numbers.Real) and not isinstance(v, bool)

    def count(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0

    if not real(row.get("theta")):
        return f"theta must be a number, got {row.get('theta')!r}"
    for method in study.methods:
        entry = row.get(method)
        if not isinstance(entry, dict):
            return f"no results for method {method!r}"
        for key, ok in (("rank", count), ("thinned", count), ("ess", real), ("pit", real),
                        ("quantile", real)):
            if not ok(entry.get(key)):
                return f"{method}.{key} is {entry.get(key)!r}"
        covered = entry.get("covered")
        if not (isinstance(covered, list) and len(covered) == len(study.levels)
                and all(isinstance(c, bool) for c in covered)):
            return f"{method}.covered must be {len(study.levels)} true/false values"
        if not 0.0 <= entry["pit"] <= 1.0 or not 0.0 <= entry["quantile"] <= 1.0:
            return f"{method}: pit and quantile must lie in [0, 1]"
    return None
