"""Driver of the sufficient-statistic sampler: check the release fits the family, run chains."""
from __future__ import annotations

import functools
import math
import threading
import time

import numpy as np

from ..mechanisms import Mechanism
from ..model.family import (ExponentialFamily, no_cdf, no_log_partition, no_natural,
                            require_family)
from ..model.model import Model
from ..samplers import loop, suffstat, suffstat_marginal, suffstat_multinomial
from ..samplers.output import Output
from ..samplers.suffstat_marginal_parts import PSEUDO_LOG_N, PSEUDO_STATS
from .._checks import call_user
from .chains import Chunks, deferred_interrupt, interrupted, run_parallel
from .progress import Progress
from .starts import initial_values

__all__ = ["run_suffstat", "choose_variant", "noise_model", "has_marginal", "structured",
           "VARIANTS", "AUTO_THRESHOLD", "PSEUDO_FRACTION"]

#: ``variant`` values: the Bernstein-Sheldon Gibbs sampler (with the corrections of
#: :mod:`dawrap.samplers.suffstat`), Algorithm 2 as printed, and the marginal kernel.
VARIANTS = ("gibbs", "printed", "marginal")
#: ``variant=None`` uses the marginal kernel when the estimated fraction of missing
#: information (:func:`dawrap.runner.information.missing_information`) is at least this,
#: and the family has ``natural`` and ``log_partition``: where the two kernels' ESS per
#: second cross (the Gibbs kernel's ESS per draw falls like (1 - f) / (1 + f), the marginal
#: kernel's does not, at about twice the cost per iteration; measured in benchmarks/results/
#: suffstat_mixing.md, summarised in docs/suffstat.md).
AUTO_THRESHOLD = 0.5
#: The marginal kernel's pseudo-sample starts at this fraction of the records' effective
#: number ``n (1 - f)`` (then adapted during warm-up).
PSEUDO_FRACTION = 1.0 / 3.0
#: Acceptance rate the marginal kernel's warm-up adaptation aims at.
TARGET_ACCEPT = 0.5
#: The marginal kernel's local (pseudo-data) Metropolis-Hastings steps per iteration.
MOVES = 1
#: Its independence steps per iteration (after warm-up), and their width.
INDEPENDENCE_MOVES = 1
INDEPENDENCE_WIDTH = 0.15


def _check_release_statistic(family: ExponentialFamily, mech: Mechanism) -> None:
    """The release must sum the family's statistic: whole when bounded, truncated otherwise."""
    if not mech.additive:
        raise ValueError(f"method='suffstat' needs a release of the statistic plus noise; the "
                         f"{mech.name} mechanism's release is not one: use method='record'")
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
        mech.sampler_statistic(np.array([value]), np.zeros(1), got)
        expected(np.array([value]), want)
        if got[0] != want[0]:
            raise ValueError(f"the mechanism's statistic is not the family's statistic "
                             f"truncated to {mech.truncation}: at x = {value} it gives "
                             f"{got[0]}, expected {want[0]}")


def noise_model(mech: Mechanism) -> tuple[float, float]:
    r"""``(laplace_scale, gaussian_variance)`` of the continuous noise the sampler assumes
    (exactly one is non-zero).

    The CLT treats the statistic as continuous, so integer noise is replaced by the
    continuous law of the same variance: two-sided geometric noise (``dw.Geometric``,
    variance :math:`2\alpha/(1-\alpha)^2`) by Laplace noise of scale
    :math:`\sqrt\alpha/(1-\alpha)` (within 1/(24 b) of ``b = sensitivity / epsilon``),
    discrete Gaussian noise by Gaussian noise of its variance (:math:`\sigma^2` to 1e-16
    for :math:`\sigma \ge 1`, less below). The likelihood of a total smooth on the unit
    scale (sd of ``s`` given theta of one count or more, which the CLT needs anyway) depends
    on the noise through its moments, so matching the variance leaves an error of the order
    of the fourth cumulants' difference over :math:`(n\Sigma)^2`; where the CLT sd of the
    statistic is below one count, neither approximation is meaningful.

    The law is the mechanism's declared ``noise`` (:class:`dawrap.mechanisms.NoiseLaw`),
    the same on every coordinate; its family says which continuous noise stands for it
    (:meth:`~dawrap.mechanisms.families.NoiseFamily.continuous_noise`).
    """
    law = mech.noise
    if law is None:
        raise ValueError(f"method='suffstat' needs the law of the noise (a mechanism with a "
                         f"noise= NoiseLaw: dw.Laplace, dw.Gaussian, dw.Geometric and "
                         f"dw.DiscreteGaussian declare theirs), got {mech.name}")
    if np.any(law.scale != law.scale[0]) or np.any(law.variance != law.variance[0]):
        raise ValueError(f"method='suffstat' needs the same noise on every coordinate; "
                         f"{mech.name}'s noise scales differ: {law.scale}")
    return law.kind.continuous_noise(float(law.scale[0]), float(law.variance[0]))


def structured(family: ExponentialFamily) -> bool:
    """Whether the family declares a one-hot statistic (``cell_probabilities``), for which the
    O(K) kernels of :mod:`dawrap.samplers.suffstat_multinomial` run instead of the dense
    ones."""
    return family.cell_probabilities is not None


def has_marginal(family: ExponentialFamily) -> bool:
    """Whether the family has what the marginal kernel needs: eta(theta) and A(eta), or
    (the O(K) kernel, whose conjugate likelihood is sum_j u_j log p_j) cell probabilities."""
    return structured(family) or (family.natural is not None
                                  and family.log_partition is not None)


def choose_variant(model: Model, mech: Mechanism, n: int, variant) -> str:
    """The kernel ``variant=None`` stands for: ``"marginal"`` where the release leaves at least
    :data:`AUTO_THRESHOLD` of the information missing and the family supports it, else
    ``"gibbs"``. An explicit choice is checked."""
    family = require_family(model, "suffstat")
    if variant is None:
        from .information import missing_information

        # The O(K) kernels: the Gibbs kernel mixes cell by cell, at each cell's own fraction,
        # while the marginal kernel moves all K cells at once, a random walk that slows as K
        # grows; so the typical cell decides, not the one the noise hides most (with a flat
        # prior over many cells, some cell always has f near 1).
        f = missing_information(model, mech, n,
                                cells="median" if structured(family) else "max")
        return "marginal" if (has_marginal(family) and f is not None
                              and f >= AUTO_THRESHOLD) else "gibbs"
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS} or None, got {variant!r}")
    if variant == "marginal" and not has_marginal(family):
        raise ValueError("variant='marginal' needs the family's natural parameter and log "
                         "partition function: ExponentialFamily(..., natural=..., "
                         "log_partition=...)")
    return variant


def _config(family, mech, s_dp, n, variant):
    scale, _ = noise_model(mech)
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    lower, upper = mech.truncation or (0.0, 0.0)
    truncated = mech.truncation is not None
    if variant == "marginal":
        # The support's basis is set by run_suffstat for the dense kernel; the O(K) kernel
        # needs none (no K x K array).
        basis = np.zeros((0, 0)) if structured(family) else np.eye(family.stat_size)
        return suffstat_marginal.MarginalInputs(
            float(n), s_dp, scale, truncated, lower, upper, family.discrete, basis, MOVES,
            TARGET_ACCEPT, INDEPENDENCE_MOVES, INDEPENDENCE_WIDTH)
    return suffstat.SuffstatInputs(float(n), s_dp, scale, truncated, lower, upper,
                                   family.discrete, variant == "printed")


def _initial_state(model, family, mech, config, rng, theta=None):
    if theta is None:
        theta = model.pack(model.draw_prior(rng), "the theta returned by draw_prior")
    else:
        theta = theta.copy()
    d = family.stat_size
    if structured(family):
        mu = _cell_probabilities(family, theta)
        variances = mu * (1.0 - mu)
    else:
        mu, cov = call_user(family.mean_cov, "mean_cov", theta)
        mu, cov = np.asarray(mu, dtype=float), np.asarray(cov, dtype=float)
        if mu.shape != (d,) or cov.shape != (d, d) or not (np.all(np.isfinite(mu))
                                                           and np.all(np.isfinite(cov))):
            raise ValueError(f"mean_cov must return a finite mean of shape ({d},) and "
                             f"covariance of shape ({d}, {d}); got shapes {mu.shape}, "
                             f"{cov.shape}")
        variances = np.diag(cov)
    s = config.n * mu
    scale, gaussian_var = noise_model(mech)
    noise = np.full(d, 2.0 * scale ** 2) if scale > 0 else np.full(d, gaussian_var)
    if not isinstance(config, suffstat_marginal.MarginalInputs):
        return suffstat.SuffstatState(theta, s.copy(), s.copy(), noise)
    # The marginal kernel's pseudo-sample: a fraction of the records' effective number
    # n (1 - f), f = V / (n Sigma + V) at the start (adapted during warm-up).
    spread = config.n * np.maximum(variances, 0.0)
    kept = float(np.mean(spread / (spread + noise))) if np.all(np.isfinite(spread)) else 1.0
    if structured(family):
        # The O(K) kernel's local step moves all K cells at once, like a random walk in K - 1
        # dimensions: the same acceptance needs a pseudo-sample about K - 1 times larger,
        # beyond n when K is large (suffstat_multinomial caps it at n K).
        pseudo_n = min(max(PSEUDO_FRACTION * config.n * kept * (d - 1), 1e-3), config.n * d)
    else:
        pseudo_n = min(max(PSEUDO_FRACTION * config.n * kept, 1e-3), config.n)
    pseudo = np.zeros(PSEUDO_STATS + 3 * d)
    pseudo[PSEUDO_LOG_N] = math.log(pseudo_n)
    # The O(K) kernel keeps no release moments between iterations (no K x K array).
    cached = 0 if structured(family) else d
    return suffstat_marginal.MarginalState(theta, s.copy(), s.copy(), noise, pseudo,
                                           np.zeros(cached), np.zeros((cached, cached)),
                                           np.zeros(2), np.zeros(1, dtype=np.int64))


def _cell_probabilities(family: ExponentialFamily, theta: np.ndarray) -> np.ndarray:
    """``family.cell_probabilities(theta)``, checked: K finite probabilities summing to 1."""
    p = np.asarray(call_user(family.cell_probabilities, "cell_probabilities", theta),
                   dtype=float)
    d = family.stat_size
    if p.shape != (d,) or not np.all(np.isfinite(p)) or np.any(p < 0) or not abs(
            p.sum() - 1.0) <= 1e-9:
        raise ValueError(f"cell_probabilities must return {d} non-negative probabilities "
                         f"summing to 1; got shape {p.shape}, sum {p.sum()!r}")
    return p


def _span(covariances) -> np.ndarray:
    """Orthonormal basis of the span of a sum of covariance matrices."""
    total = sum(covariances)
    values, vectors = np.linalg.eigh(0.5 * (total + total.T))
    keep = values > 1e-10 * max(float(values[-1]), 1e-300)
    return np.ascontiguousarray(vectors[:, keep])


def _support_basis(model: Model, family: ExponentialFamily, states) -> np.ndarray:
    """An orthonormal basis of the span of the statistic's covariance (its support: e.g. the
    hyperplane of counts that sum to n), where the marginal kernel's pseudo-totals live.

    From the covariances at the chains' starts; when those span less than the covariances at
    16 prior draws (a fixed seed: the chains' generators are not touched) and at their mean
    do (a start on the boundary of the parameter space, a probability of exactly 0), from
    all of them."""
    def cov_at(theta):
        cov = np.asarray(call_user(family.mean_cov, "mean_cov", theta)[1], dtype=float)
        return cov if np.all(np.isfinite(cov)) else np.zeros_like(cov)

    starts = _span([cov_at(st.theta) for st in states])
    rng = np.random.default_rng(20180101)
    draws = [model.pack(model.draw_prior(rng), "the theta returned by draw_prior")
             for _ in range(16)]
    wider = _span([cov_at(st.theta) for st in states]
                  + [cov_at(theta) for theta in draws + [np.mean(draws, axis=0)]])
    return starts if starts.shape[1] == wider.shape[1] else wider


def _run_chain(runner, state, config, rng, outputs, tune, stop, bar, chain):
    """One chain in chunks (``runner``: :func:`dawrap.samplers.loop.run` bound to the kernel)
    into ``outputs``, the loop's ``(out_theta, out_stats, out_s)`` of one row per kept draw;
    returns them and the iterations done (short of ``tune + draws`` only when ``stop`` was
    set by Ctrl-C)."""
    out_theta, out_stats, out_s = outputs
    done, total = 0, tune + out_theta.shape[0]
    chunks = Chunks()  # calls of about CHUNK_SECONDS: Ctrl-C is honoured promptly
    while done < total and not stop.is_set():
        start, end, began = done, chunks.stop(done, total), time.perf_counter()
        state, done, status = runner(rng, state, config, start, end, tune,
                                     out_theta, out_stats, out_s)
        chunks.timed(done - start, time.perf_counter() - began)
        bar.done[chain] = done
        if status != suffstat.OK:
            raise ValueError(f"{suffstat.STATUS_MESSAGES[status]} (iteration {done})")
    return out_theta, out_stats, out_s, done


def run_suffstat(model: Model, mechanism: Mechanism, s_dp: np.ndarray, n: int, rngs,
                 method, shared) -> Output:
    """Run one sufficient-statistic chain per generator in ``rngs``: ``method`` a
    :class:`dawrap.Suffstat` (its ``variant``: see :func:`choose_variant`), ``shared`` the
    :class:`dawrap.methods.RunOptions` of every method (draws, tune, cores, ...)."""
    draws, tune, keep_stats = shared.draws, shared.tune, shared.keep_stats
    variant = method.variant
    family = require_family(model, "suffstat")
    _check_release_statistic(family, mechanism)
    noise_model(mechanism)
    variant = choose_variant(model, mechanism, n, variant)
    config = _config(family, mechanism, s_dp, n, variant)
    marginal = variant == "marginal"
    if structured(family):
        fns = suffstat_multinomial.MultinomialFunctions(family.cell_probabilities,
                                                        family.conjugate_draw, family.valid)
        runner = (suffstat_multinomial.bind_marginal if marginal
                  else suffstat_multinomial.bind_gibbs)(fns)
    else:
        fns = suffstat.SuffstatFunctions(family.mean_cov, family.conjugate_draw, family.valid,
                                         family.natural if config.truncated else no_natural,
                                         family.cdf if config.truncated else no_cdf,
                                         family.sf if config.truncated else no_cdf,
                                         family.log_partition if marginal
                                         else no_log_partition,
                                         family.natural if marginal else no_natural)
        runner = (suffstat_marginal.bind_run if marginal else suffstat.bind_run)(fns)
    # The sample stats are the fields of the kernel's info (dawrap.samplers.loop).
    info = suffstat_marginal.MarginalInfo if marginal else suffstat.GibbsInfo
    stat_names = loop.sample_stat_names(info)
    thetas, _ = initial_values(model, len(rngs), n, shared.init_theta, None)
    states = [_initial_state(model, family, mechanism, config, rng, thetas and thetas[c])
              for c, rng in enumerate(rngs)]
    if marginal and not structured(family):
        config = config._replace(basis=_support_basis(model, family, states))
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
        runner(np.random.default_rng(0), states[0], config, 0, 0, 0,
               np.empty((0, model.theta_size)), np.empty((0, len(stat_names))),
               np.empty((0, d)))
        if stop.is_set():
            raise KeyboardInterrupt("sampling interrupted before the chains started: no "
                                    "draws to return")
        with Progress("dawrap suffstat", len(rngs), tune + draws,
                      enabled=shared.progress) as bar:
            results = run_parallel(
                [functools.partial(_run_chain, runner, st, config, rng, (
                    np.empty((draws, model.theta_size)), np.empty((draws, len(stat_names))),
                    np.empty((draws if keep_stats else 0, d))), tune, stop, bar, c)
                 for c, (st, rng) in enumerate(zip(states, rngs))], shared.cores,
                on_interrupt=stop.set)
    kept = [max(0, r[3] - tune) for r in results]
    if min(kept) < draws:  # interrupted: the chains that have draws, up to a common length
        results = [r for r, k in zip(results, kept) if k > 0]
        if not results:
            raise KeyboardInterrupt("sampling interrupted during warm-up: no draws to return")
        interrupted(f"sampling interrupted: returning the first {min(k for k in kept if k)} "
                    f"of {draws} draws of {len(results)} of {len(kept)} chains",
                    stacklevel=3)  # 1 here, 2 dw.sample, 3 the caller
    kept = min(max(0, r[3] - tune) for r in results)
    theta = np.stack([r[0][:kept] for r in results])
    per_draw = np.stack([r[1][:kept] for r in results])
    imputed = np.stack([r[2][:kept] for r in results]) if keep_stats else None
    stats = {name: np.ascontiguousarray(per_draw[:, :, k]) for k, name in enumerate(stat_names)}
    return Output(theta, stats, imputed)
