r"""Calibration of posterior samplers by repeated simulation (Cook, Gelman & Rubin 2006).

Draw :math:`\theta_i \sim p(\theta)`, a database :math:`x_i \sim p(x \mid \theta_i)` and a
release :math:`s_i` from the mechanism; run a sampler on :math:`s_i` and record the posterior
quantile :math:`U_i` of :math:`\theta_i` among its draws. For a calibrated sampler the
:math:`U_i` are uniform; the Kolmogorov-Smirnov statistic against the uniform measures the
miscalibration (Bernstein & Sheldon 2018, Figure 1a).

Every trial's randomness is spawned from one ``SeedSequence``, so a study is reproducible and
its trials are independent of the order they run in.
"""
from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from scipy import stats

from . import _arviz
from ._checks import as_count
from .mechanisms import Mechanism
from .model import Model
from .sampling import METHODS, sample

__all__ = ["posterior_quantiles", "ks_uniform"]


def posterior_quantiles(model: Model, mechanism: Mechanism | Callable, n: int,
                        methods: Sequence[str], *, trials: int, seed: int,
                        parameter: str | None = None, index: int = 0,
                        sample_kwargs: dict | None = None, store=None) -> dict:
    """Posterior quantiles of the true parameter over simulated trials, per method.

    Parameters
    ----------
    model, mechanism
        The model and the mechanism releasing each simulated database.
    n : int
        Records per database.
    methods : sequence of str
        ``dw.sample`` methods; ``"suffstat:printed"`` runs the printed Algorithm 2 variant.
    trials, seed : int
        Number of simulated datasets, and the root seed.
    parameter, index
        Which scalar is checked: the parameter name (default the first) and, for a vector
        parameter, the flat index.
    sample_kwargs : dict
        Passed to every ``dw.sample`` call (draws, tune, chains, ...).
    store : str or path, optional
        A file (JSON lines) where each completed trial is appended and flushed to disk. A
        study restarted with the same ``store`` and settings skips the trials already there,
        so a stopped study loses at most the trial in progress.

    Returns
    -------
    dict of str -> ndarray
        ``U`` (length ``trials``) per method; also ``"theta"``, the true values.
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a dawrap.Model, got {type(model).__name__}")
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a dawrap.Mechanism, got {type(mechanism).__name__}")
    n, trials = as_count(n, "n"), as_count(trials, "trials")
    seed = as_count(seed, "seed", minimum=0)
    if isinstance(methods, str) or not methods:
        raise TypeError(f"methods must be a non-empty list of method names, got {methods!r}")
    for method in methods:
        name, _, variant = str(method).partition(":")
        if name not in METHODS or variant not in ("", "gibbs", "printed"):
            raise ValueError(f"methods: {method!r} is not one of {METHODS} (or "
                             f"'suffstat:printed')")
    parameter = parameter or next(iter(model.params))
    if parameter not in model.params:
        raise ValueError(f"parameter must be one of {list(model.params)}, got {parameter!r}")
    size = int(np.prod(model.params[parameter]))
    if not isinstance(index, (int, np.integer)) or not 0 <= index < size:
        raise ValueError(f"index must be an integer in [0, {size}) for {parameter!r}, "
                         f"got {index!r}")
    if sample_kwargs is not None and not isinstance(sample_kwargs, dict):
        raise TypeError(f"sample_kwargs must be a dict, got {type(sample_kwargs).__name__}")
    kwargs = {"draws": 1000, "tune": 500, "chains": 2, **(sample_kwargs or {})}
    out = {m: np.empty(trials) for m in methods}
    truth = np.empty(trials)
    index = int(index)
    settings = {"model": model.name, "mechanism": mechanism.fingerprint, "n": n,
                "methods": list(methods), "seed": seed, "parameter": parameter,
                "index": index, "sample_kwargs": {k: repr(v) for k, v in kwargs.items()}}
    done = _load_store(store, settings) if store is not None else {}
    for t, (theta_t, us) in done.items():
        if t < trials:
            truth[t] = theta_t
            for m in methods:
                out[m][t] = us[m]
    for t, child in enumerate(np.random.SeedSequence(seed).spawn(trials)):
        if t in done:
            continue
        data_seed, *method_seeds = child.spawn(1 + len(methods))
        rng = np.random.default_rng(data_seed)
        theta = model.pack(model.draw_prior(rng))
        x = model.simulate(theta, n, seed=rng)
        s_dp = mechanism.release(x, seed=rng)
        true_value = model.unpack(theta[None])[parameter].reshape(-1)[index]
        truth[t] = true_value
        for method, method_seed in zip(methods, method_seeds):
            name, _, variant = method.partition(":")
            with warnings.catch_warnings():
                # Short chains in a study may draw R-hat warnings; the KS statistic is the
                # verdict here.
                warnings.simplefilter("ignore", RuntimeWarning)
                idata = sample(model, mechanism, s_dp, n, method=name, seed=method_seed,
                               confidential=x, variant=variant or "gibbs", **kwargs)
            draws = _arviz.group(idata, "posterior")[parameter].values
            draws = draws.reshape(draws.shape[0] * draws.shape[1], -1)[:, index]
            out[method][t] = np.mean(draws < true_value)
        if store is not None:
            _append(store, {"trial": t, "theta": float(true_value),
                            "U": {m: float(out[m][t]) for m in methods}})
    out["theta"] = truth
    return out


def _load_store(store, settings: dict) -> dict:
    """Completed trials in ``store`` (creating it with a settings header if new)."""
    path = Path(store)
    if not path.exists() or path.stat().st_size == 0:
        # The header is written to a temporary file and renamed: a store either has its
        # settings line or does not exist.
        tmp = path.with_name(path.name + ".tmp")
        tmp.unlink(missing_ok=True)
        _append(tmp, {"settings": settings})
        os.replace(tmp, path)
        return {}
    done = {}
    with open(path) as f:
        text = f.read()
    if text and not text.endswith("\n"):
        with open(path, "a") as f:  # end a line cut short, so new rows start clean
            f.write("\n")
    lines = text.splitlines()
    header = json.loads(lines[0])
    if header.get("settings") != settings:
        raise ValueError(f"store {path} holds a study with other settings: "
                         f"{header.get('settings')}; use a new file for this one")
    for line in lines[1:]:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut short when the study was stopped
            continue
        done[int(row["trial"])] = (row["theta"], row["U"])
    return done


def _append(path, row: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()
        os.fsync(f.fileno())


def ks_uniform(u: np.ndarray) -> tuple[float, float]:
    """Kolmogorov-Smirnov statistic and p-value of ``u`` against the uniform on [0, 1]."""
    result = stats.kstest(np.asarray(u, dtype=float), "uniform")
    return float(result.statistic), float(result.pvalue)
