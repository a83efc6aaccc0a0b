"""Driver of the sufficient-statistic sampler: check the release fits the family, run chains."""
from __future__ import annotations

import functools
import threading
import warnings

import numpy as np

from ..samplers import suffstat
from ..samplers.output import Output
from .chains import deferred_interrupt, run_parallel
from .progress import Progress
from ..model.family import ExponentialFamily, no_cdf, no_natural, require_family
from ..mechanisms.additive import DiscreteGaussian, Gaussian, Laplace, Mechanism
from ..model.model import Model
from .._checks import call_user
from .starts import initial_values

__all__ = ["run_suffstat"]


def _check_release_statistic(family: ExponentialFamily, mech: Mechanism) -> None:
    """The release must sum the family's statistic: whole when bounded, truncated otherwise."""
    if mech.size != family.stat_size:
        raise ValueError(f"the mechanism releases {mech.size} value(s) but the family's "
                         f"statistic has stat_size {family.stat_size}")
    if family.bounded:
        if mech.truncation is not None or mech.statistic is not family.statistic:
            raise ValueError("method='suffstat' needs a release of the family's sufficient "
                             "statistic itself (mechanism statistic = family.statistic)")
        return
    if mech.truncation is None:
        raise ValueError("this family's statistic is unbounded: method='suffstat' needs a "
                         "release truncated to bounds [a, b] (a mechanism built with "
                         "truncation=(a, b) on family.truncated_statistic(a, b))")
    lower, upper = mech.truncation
    if family.discrete and not (lower == int(lower) and upper == int(upper)):
        raise ValueError(f"the family's records are integers: truncation bounds must be whole "
                         f"numbers (the regions are below a, a..b, above b), got "
                         f"{mech.truncation}")
    expected = family.truncated_statistic(lower, upper)
    probe = [lower - 1.0, lower, 0.5 * (lower + upper), upper, upper + 1.0]
    for value in probe:
        got, want = np.empty(1), np.empty(1)
        mech.engine_statistic(np.array([value]), np.zeros(1), got)
        expected(np.array([value]), want)
        if got[0] != want[0]:
            raise ValueError(f"the mechanism's statistic is not the family's statistic "
                             f"truncated to {mech.truncation}: at x = {value} it gives "
                             f"{got[0]}, expected {want[0]}")


def _config(family, mech, s_dp, n, variant) -> suffstat.SuffstatConfig:
    if isinstance(mech, Laplace):
        scale = mech.scale
    elif isinstance(mech, Gaussian):
        # A DiscreteGaussian counts as Gaussian noise of the same sigma: for sigma >= 1 its
        # variance is sigma^2 to within 1e-16 relative (Poisson summation); below, it is not.
        if isinstance(mech, DiscreteGaussian) and mech.sigma < 1.0:
            raise ValueError("method='suffstat' treats discrete Gaussian noise as Gaussian, "
                             f"which needs sigma >= 1; got sigma = {mech.sigma}")
        scale = 0.0
    else:
        raise ValueError(f"method='suffstat' supports the Laplace and Gaussian mechanisms, "
                         f"got {mech.name}")
    if variant not in ("gibbs", "printed"):
        raise ValueError(f"variant must be 'gibbs' or 'printed', got {variant!r}")
    lower, upper = mech.truncation or (0.0, 0.0)
    return suffstat.SuffstatConfig(float(n), s_dp, scale, mech.truncation is not None,
                                   lower, upper, family.discrete, variant == "printed")


def _initial_state(model, family, mech, config, rng, theta=None):
    if theta is None:
        theta = model.pack(model.draw_prior(rng), "the theta returned by draw_prior")
    else:
        theta = theta.copy()
    mu, cov = call_user(family.mean_cov, "mean_cov", theta)
    mu, cov = np.asarray(mu, dtype=float), np.asarray(cov, dtype=float)
    d = family.stat_size
    if mu.shape != (d,) or cov.shape != (d, d) or not (np.all(np.isfinite(mu))
                                                       and np.all(np.isfinite(cov))):
        raise ValueError(f"mean_cov must return a finite mean of shape ({d},) and covariance of "
                         f"shape ({d}, {d}); got shapes {mu.shape}, {cov.shape}")
    s = config.n * mu
    noise = (np.full(d, 2.0 * mech.scale ** 2) if config.laplace_scale > 0
             else np.full(d, mech.sigma ** 2))
    return suffstat.SuffstatState(theta, s.copy(), s.copy(), noise)


#: Iterations per compiled call: a fraction of a second, so Ctrl-C is honoured promptly; the
#: chunking does not change the draws (the state and generator carry over).
CHUNK = 20_000


def _run_chain(state, config, fns, rng, draws, tune, keep_stats, theta_size, d, stop, bar,
               chain):
    """One chain in chunks; returns its outputs and the iterations done (short of
    ``tune + draws`` only when ``stop`` was set by Ctrl-C)."""
    out_theta = np.empty((draws, theta_size))
    out_rejections = np.empty(draws)
    out_s = np.empty((draws if keep_stats else 0, d))
    done, total = 0, tune + draws
    while done < total and not stop.is_set():
        end = min(total, done + CHUNK)
        state, done, status = suffstat.run(rng, state, config, fns, done, end, tune,
                                           out_theta, out_rejections, out_s)
        bar.done[chain] = done
        if status != suffstat.OK:
            raise ValueError(f"{suffstat.STATUS_MESSAGES[status]} (iteration {done})")
    return out_theta, out_rejections, out_s, done


def run_suffstat(model: Model, mechanism: Mechanism, s_dp: np.ndarray, n: int, rngs, *,
                 draws: int, tune: int, keep_stats: bool, cores: int,
                 variant: str = "gibbs", init_theta=None,
                 progress: bool | None = None) -> Output:
    """Run one Bernstein-Sheldon chain per generator in ``rngs``."""
    family = require_family(model, "suffstat")
    _check_release_statistic(family, mechanism)
    config = _config(family, mechanism, s_dp, n, variant)
    fns = suffstat.SuffstatFunctions(family.mean_cov, family.conjugate_draw, family.valid,
                                     family.natural if config.truncated else no_natural,
                                     family.cdf if config.truncated else no_cdf,
                                     family.sf if config.truncated else no_cdf)
    thetas, _ = initial_values(model, len(rngs), n, init_theta, None)
    states = [_initial_state(model, family, mechanism, config, rng, thetas and thetas[c])
              for c, rng in enumerate(rngs)]
    probe = call_user(family.conjugate_draw, "conjugate_draw", np.random.default_rng(0),
                      states[0].s, config.n)
    model.pack(probe, "the theta returned by conjugate_draw")
    call_user(family.valid, "valid", states[0].s, config.n)
    d = family.stat_size
    stop = threading.Event()
    # Ctrl-C sets ``stop`` (never raises inside compiled code, which can crash the
    # interpreter); the chains end at their next chunk and the draws so far are returned.
    with deferred_interrupt(stop.set):
        # Compile here (zero iterations) before the chains start in threads.
        suffstat.run(np.random.default_rng(0), states[0], config, fns, 0, 0, 0,
                     np.empty((0, model.theta_size)), np.empty(0), np.empty((0, d)))
        if stop.is_set():
            raise KeyboardInterrupt("sampling interrupted before the chains started: no "
                                    "draws to return")
        with Progress("dawrap suffstat", len(rngs), tune + draws, enabled=progress) as bar:
            results = run_parallel(
                [functools.partial(_run_chain, st, config, fns, rng, draws, tune, keep_stats,
                                   model.theta_size, d, stop, bar, c)
                 for c, (st, rng) in enumerate(zip(states, rngs))], cores, on_interrupt=stop.set)
    kept = [max(0, r[3] - tune) for r in results]
    if min(kept) < draws:  # interrupted: the chains that have draws, up to a common length
        results = [r for r, k in zip(results, kept) if k > 0]
        if not results:
            raise KeyboardInterrupt("sampling interrupted during warm-up: no draws to return")
        warnings.warn(f"sampling interrupted: returning the first {min(k for k in kept if k)} "
                      f"of {draws} draws of {len(results)} of {len(kept)} chains",
                      UserWarning, stacklevel=3)  # 1 here, 2 dw.sample, 3 the caller
    kept = min(max(0, r[3] - tune) for r in results)
    theta = np.stack([r[0][:kept] for r in results])
    rejections = np.stack([r[1][:kept] for r in results])
    imputed = np.stack([r[2][:kept] for r in results]) if keep_stats else None
    return Output(theta, {"rejections": rejections}, imputed)
