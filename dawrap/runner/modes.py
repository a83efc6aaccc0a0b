r"""Releases that two explanations fit: find the posterior's modes before sampling, start
chains in each, and warn when a run misses one.

A truncated statistic drops the records outside its bounds, so a release near zero is
explained both by "few, small records inside" and by "nearly every record beyond the
bound" (Bernstein & Sheldon's truncated exponential families); the exact posterior then has
two modes with a wall of implausible theta between them (issue 30: exponential records,
bounds [0, 10], n = 100, a release of 0 puts 31% of the mass of the rate below 0.05, the
rest around 3.5). Record-level augmentation cannot cross that wall: each record moves given
theta, and theta given the records. Chains started in one mode stay there, agree with each
other, and every diagnostic is quiet.

So, before sampling, the *landscape* of the release: ``POOL`` prior draws, each weighted
by the central-limit approximation of the release's likelihood (the one the release-informed
start uses, :mod:`dawrap.runner.starts`, with common random numbers so that it is smooth in
theta). Two well-weighted draws belong to different modes when the likelihood on the segment
between them falls more than ``VALLEY_NATS`` below its value at both ends: two explanations
with an implausible theta between them. (The approximation misjudges how much weight each
mode has where few records fall inside the bounds; it does see the wall, which is many
noise standard deviations high.) The modes found, with their weights and the weighted mean
and covariance of their draws, then serve three purposes:

* starts (:func:`spread_start`): chain ``c`` starts at a draw of mode ``c mod K``, heaviest
  first, so that the modes are all visited by some chain and disagreement shows in R-hat;
* jumps (:func:`jump_mixture`): a Gaussian mixture over the modes, the fixed independence
  proposal of the non-centred move (:mod:`dawrap.samplers.interweave`), which carries theta
  and every record from one mode to the other;
* a warning after sampling (:func:`warn_if_missed`) when a mode of non-negligible weight was
  visited by no chain, or when the chains never moved between modes.

It costs about ``POOL * RECORDS`` simulated records and as many again for the valley tests
(40-60 ms for beta_binomial, whatever ``n`` and the number of draws; its compiled template
loads from numba's disk cache for the built-in models, and compiles once per process, about
2 s, for a model of your own: ``benchmarks/results/modes.md``), uses its own fixed seed (so no chain's draws
depend on it, and the decision is reproducible), and is computed once per model, mechanism,
release and ``n``. Only releases
of at most :data:`LARGEST_THETA` parameters are examined: in more dimensions prior draws do
not cover the posterior, and a mode they miss is not found either way.
"""
from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from ..compile import templates as _templates
from .clt import FULL_COVARIANCE_UP_TO, noise_variance

__all__ = ["Mode", "Landscape", "landscape", "spread_start", "jump_mixture",
           "warn_if_missed", "POOL", "RECORDS", "VALLEY_NATS", "MIN_WEIGHT", "WARN_WEIGHT",
           "VISITED", "LARGEST_THETA"]

#: Prior draws weighed, and records simulated per likelihood evaluation.
POOL, RECORDS = 1024, 128
#: Depth of the likelihood's dip between two draws, in nats, that makes them separate modes.
VALLEY_NATS = 5.0
#: Modes lighter than this (share of the pool's weight) are ignored.
MIN_WEIGHT = 0.01
#: A mode at least this heavy that no chain visits draws a warning; a mode holding at most
#: VISITED of the draws counts as not visited. Every mode the landscape keeps: its weights
#: come from a central-limit approximation that can be off by a factor of two or more where
#: few records fall inside a truncation's bounds (a truncated normal release whose second
#: mode holds 4.3% of the exact posterior weighs 1.9% here: tests/runner/test_modes.py), so
#: a higher threshold would let a real mode of a few percent go unreported.
WARN_WEIGHT, VISITED = MIN_WEIGHT, 1e-3
#: Largest theta examined (see the module docstring).
LARGEST_THETA = 3
#: Draws tested against the modes found so far: the heaviest, and as many drawn by weight.
PROBES = 16
#: Points inside each segment at which the valley test evaluates the likelihood.
SEGMENT = np.linspace(0.0, 1.0, 9)[1:-1]
#: The pool's seed (fixed: the landscape depends on the problem only).
SEED = 20220103


class Mode(NamedTuple):
    """One mode of the release-weighted prior draws.

    Attributes
    ----------
    weight : float
        Its share of the pool's weight (an approximation of its posterior mass).
    peak : ndarray of shape (d,)
        Its best-weighted draw.
    mean, cov : ndarray
        Weighted mean ``(d,)`` and covariance ``(d, d)`` of its draws.
    members : ndarray of int
        Indices of its draws in the pool.
    """
    weight: float
    peak: np.ndarray
    mean: np.ndarray
    cov: np.ndarray
    members: np.ndarray


class Landscape(NamedTuple):
    """The release-weighted prior draws and the modes they separate into.

    Attributes
    ----------
    thetas : ndarray of shape (POOL, d)
    log_lik : ndarray of shape (POOL,)
        Central-limit approximation of each draw's release log likelihood.
    weights : ndarray of shape (POOL,)
        Normalised likelihood weights.
    modes : tuple of Mode
        Heaviest first; those of weight at least :data:`MIN_WEIGHT`.
    """
    thetas: np.ndarray
    log_lik: np.ndarray
    weights: np.ndarray
    modes: tuple

    @property
    def multimodal(self) -> bool:
        """Whether the release allows two or more separate modes."""
        return len(self.modes) >= 2


# The slots of the template below (_templates.bind checks every binding against them):
# the model's record draw, the mechanism's statistic and their sizes.
DRAW_RECORD = _templates.slot("(rng, theta, out): one record from f(. | theta)")
STATISTIC = _templates.slot("(x_i, s_dp, out): the mechanism's statistic of a record")
RECORD_SIZE = _templates.slot("int: floats per record")
SIZE = _templates.slot("int: floats of the mechanism's statistic")


def clt_log_likelihood(rng, theta, s_dp, n, noise, records):
    """The central-limit log likelihood of the release at ``theta`` (as in
    :mod:`dawrap.runner.starts`): ``records`` records from ``rng``, the mean and covariance
    of their statistic, then the normal log density of ``s_dp`` (``-inf`` where the
    covariance is not positive definite)."""
    size = SIZE
    x, t = np.empty(RECORD_SIZE), np.empty(size)
    mean, scatter = np.zeros(size), np.zeros((size, size))
    for i in range(records):
        DRAW_RECORD(rng, theta, x)
        STATISTIC(x, s_dp, t)
        count = i + 1.0
        before = t - mean
        for j in range(size):
            mean[j] += before[j] / count
        for j in range(size):
            for k in range(size):
                scatter[j, k] += before[j] * (t[k] - mean[k])
    cov = n * scatter / records
    for j in range(size):
        cov[j, j] += noise[j]
    misfit = s_dp - n * mean
    # Cholesky by hand: a covariance that is not positive definite gives -inf, not an error.
    factor, r = np.zeros((size, size)), np.empty(size)
    log_det, quad = 0.0, 0.0
    for j in range(size):
        pivot = cov[j, j]
        for k in range(j):
            pivot -= factor[j, k] * factor[j, k]
        if not pivot > 0.0:
            return -np.inf
        factor[j, j] = np.sqrt(pivot)
        for i in range(j + 1, size):
            total = cov[i, j]
            for k in range(j):
                total -= factor[i, k] * factor[j, k]
            factor[i, j] = total / factor[j, j]
        v = misfit[j]
        for k in range(j):
            v -= factor[j, k] * r[k]
        r[j] = v / factor[j, j]
        quad += r[j] * r[j]
        log_det += 2.0 * np.log(factor[j, j])
    return -0.5 * (quad + log_det)


_CACHE: OrderedDict = OrderedDict()
_LOCK = threading.Lock()


def landscape(model, mechanism, s_dp, n: int) -> Landscape | None:
    """The landscape of the release (module docstring), cached per model, mechanism,
    release and ``n``; ``None`` where it is not examined: a theta of more than
    :data:`LARGEST_THETA` entries, a release longer than the central-limit start handles
    with its full covariance, or a mechanism without noise draws."""
    if model.theta_size > LARGEST_THETA or mechanism.size > FULL_COVARIANCE_UP_TO:
        return None
    s_dp = np.ascontiguousarray(s_dp, dtype=np.float64)
    key = (model.fingerprint, mechanism.fingerprint, s_dp.tobytes(), int(n))
    with _LOCK:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    found = _landscape(model, mechanism, s_dp, n)
    with _LOCK:
        _CACHE[key] = found
        while len(_CACHE) > 16:
            _CACHE.popitem(last=False)
    return found


def _landscape(model, mechanism, s_dp, n) -> Landscape | None:
    noise = noise_variance(mechanism)
    if noise is None:
        return None
    rng = np.random.default_rng(SEED)
    # Common random numbers: every evaluation draws its records from the same generator
    # state, so that the likelihood is smooth in theta and a valley is not noise.
    records = np.random.default_rng(rng.integers(2 ** 63))
    common = records.bit_generator.state
    noise = np.asarray(noise, dtype=np.float64)

    def log_lik(theta):
        records.bit_generator.state = common
        return bound.clt_log_likelihood(records, theta, s_dp, float(n), noise, RECORDS)

    try:
        bound = _templates.bind((clt_log_likelihood,), dict(
            DRAW_RECORD=model.draw_record, STATISTIC=mechanism.sampler_statistic,
            RECORD_SIZE=model.record_size, SIZE=mechanism.size))
        thetas = np.array([model.pack(model.draw_prior(rng), "the theta returned by "
                                      "draw_prior") for _ in range(POOL)])
        with np.errstate(all="ignore"):
            ll = np.array([log_lik(theta) for theta in thetas], dtype=np.float64)
    except Exception:  # noqa: BLE001 - the user's functions; the run's probe names them
        return None
    ll[~np.isfinite(ll)] = -np.inf
    if not np.any(np.isfinite(ll)):
        return None
    weights = np.exp(ll - ll.max())
    weights /= weights.sum()
    peaks, owner = _separate(thetas, ll, weights, log_lik, rng)
    modes = []
    for m, peak in enumerate(peaks):
        members = np.flatnonzero(owner == m)
        w = weights[members]
        if w.sum() < MIN_WEIGHT:
            continue
        mean = w @ thetas[members] / w.sum()
        spread = thetas[members] - mean
        cov = (w[:, None] * spread).T @ spread / w.sum()
        modes.append(Mode(float(w.sum()), thetas[peak].copy(), mean, cov, members))
    modes.sort(key=lambda mode: -mode.weight)
    return Landscape(thetas, ll, weights, tuple(modes))


def _valley(log_lik, a, b, ll_a, ll_b, points=SEGMENT) -> bool:
    """Whether the likelihood dips more than VALLEY_NATS below both ends between a and b."""
    floor = min(ll_a, ll_b) - VALLEY_NATS
    with np.errstate(all="ignore"):
        for t in points:
            if not log_lik(a + t * (b - a)) >= floor:  # NaN counts as a dip
                return True
    return False


def _separate(thetas, ll, weights, log_lik, rng):
    """Mode peaks (pool indices) and each draw's mode (-1: negligible weight).

    Probes (the heaviest draws, draws resampled by weight, and draws spread over the
    plausible ones by farthest-point sampling) find the peaks: a probe joins
    the first mode (nearest peak first) with no valley between it and the peak, or starts a
    mode. With one mode every draw of non-negligible weight belongs to it; with several,
    each such draw joins the mode of the nearest probe it has no valley to (nearest first).
    """
    scale = np.sqrt(np.maximum(weights @ (thetas - weights @ thetas) ** 2, 1e-300))
    points = thetas / scale

    def distance(k, others):
        return np.sum((points[others] - points[k]) ** 2, axis=-1)

    order = np.argsort(-weights, kind="stable")
    drawn = rng.choice(weights.shape[0], size=PROBES, p=weights)
    relevant = np.flatnonzero(weights >= 1e-4 * weights.max())
    probes = sorted(set(order[:PROBES].tolist()) | set(drawn.tolist())
                    | set(_farthest(points[relevant], PROBES, relevant)),
                    key=lambda k: -weights[k])
    peaks, probe_mode = [], []
    for k in probes:
        mode = -1
        for m in np.argsort(distance(k, np.array(peaks, dtype=np.int64))) if peaks else ():
            p = peaks[m]
            if np.array_equal(thetas[k], thetas[p]) or \
                    not _valley(log_lik, thetas[p], thetas[k], ll[p], ll[k]):
                mode = int(m)
                break
        if mode < 0:
            peaks.append(k)
            mode = len(peaks) - 1
        probe_mode.append(mode)
    owner = np.full(weights.shape[0], -1)
    if len(peaks) == 1:
        owner[relevant] = 0
        return peaks, owner
    coarse = SEGMENT[1::2]  # three points: enough to tell which side of a wall a draw is on
    for k in relevant[np.argsort(-weights[relevant], kind="stable")]:
        near = np.argsort(distance(k, np.array(probes)))
        tried = set()
        for i in near:
            m = probe_mode[i]
            if m in tried:
                continue
            tried.add(m)
            p = probes[i]
            if not _valley(log_lik, thetas[p], thetas[k], ll[p], ll[k], coarse):
                owner[k] = m
                break
        else:  # a wall between this draw and every mode: a mode no probe found
            peaks.append(k)
            probes.append(k)
            probe_mode.append(len(peaks) - 1)
            owner[k] = len(peaks) - 1
    return peaks, owner


def _farthest(points, count, index):
    """``count`` of ``index`` chosen by farthest-point sampling of ``points`` (from the
    first): probes that reach every corner of the plausible draws, however light."""
    chosen = [0]
    gap = np.sum((points - points[0]) ** 2, axis=1)
    for _ in range(min(count, points.shape[0]) - 1):
        k = int(np.argmax(gap))
        if gap[k] == 0.0:
            break
        chosen.append(k)
        gap = np.minimum(gap, np.sum((points - points[k]) ** 2, axis=1))
    return index[chosen].tolist()


def spread_start(found: Landscape, rng, chain: int) -> np.ndarray:
    """Chain ``chain``'s start: a draw of mode ``chain mod K`` (heaviest first), chosen by
    weight with the chain's generator."""
    mode = found.modes[chain % len(found.modes)]
    w = found.weights[mode.members]
    return found.thetas[mode.members[int(rng.choice(w.shape[0], p=w / w.sum()))]].copy()


def jump_mixture(found: Landscape):
    """The jumps' proposal: a Gaussian per mode, at its weighted mean with twice its
    covariance (heavier than the mode: an independence proposal must not be lighter-tailed
    than its target), weights floored at 0.1 (the approximation misjudges the modes' masses);
    a covariance from too few draws is lifted to a tenth of the pool's spread."""
    from ..samplers.interweave import JumpMixture

    d = found.thetas.shape[1]
    pool_var = found.weights @ (found.thetas - found.weights @ found.thetas) ** 2
    weights, means, factors = [], [], []
    for mode in found.modes:
        cov = 2.0 * mode.cov
        floor = 1e-2 * np.maximum(pool_var, 1e-300)
        for j in range(d):
            if not cov[j, j] > 1e-6 * floor[j]:
                cov[j, j] = floor[j]
        cov += np.diag(1e-9 * np.diag(cov))
        weights.append(max(mode.weight, 0.1))
        means.append(mode.mean)
        factors.append(np.linalg.cholesky(cov))
    return JumpMixture(np.array(weights), np.array(means), np.array(factors))


def _label(model, j: int) -> str:
    """The name of flat theta entry ``j`` (``name`` or ``name[i, ...]``)."""
    start = 0
    for name, shape in model.params.items():
        size = int(np.prod(shape, dtype=np.int64))
        if j < start + size:
            if not shape:
                return name
            return f"{name}[{', '.join(map(str, np.unravel_index(j - start, shape)))}]"
        start += size
    return f"theta[{j}]"


def _visits(found: Landscape, draws: np.ndarray) -> np.ndarray:
    """Each draw's mode: that of the nearest draw of the pool that belongs to a mode (in
    units of the pool's spread). A Gaussian per mode would misplace a narrow mode's tail:
    a draw at 0.03 is 6 sds from a mode of sd 0.004 at 0.005, nearer in likelihood terms to
    a wide one at 4, yet it is the narrow mode's."""
    scale = _spread(found)
    members = np.concatenate([mode.members for mode in found.modes])
    owner = np.concatenate([np.full(mode.members.size, m) for m, mode in enumerate(found.modes)])
    points = found.thetas[members] / scale
    out = np.empty(draws.shape[0], dtype=np.int64)
    for start in range(0, draws.shape[0], 256):  # bounded memory: 256 x pool distances
        block = draws[start:start + 256] / scale
        nearest = np.argmin(np.sum((block[:, None, :] - points[None, :, :]) ** 2, axis=2),
                            axis=1)
        out[start:start + 256] = owner[nearest]
    return out


def _spread(found: Landscape) -> np.ndarray:
    """The weighted pool's standard deviation per entry (floored above 0)."""
    return np.sqrt(np.maximum(found.weights @ (found.thetas - found.weights @ found.thetas)
                              ** 2, 1e-300))


def warn_if_missed(model, mechanism, s_dp, n: int, theta: np.ndarray) -> None:
    """After sampling: warn when the release-weighted prior draws put at least
    :data:`WARN_WEIGHT` of their weight in a mode no chain visited, or when the chains stayed
    in separate modes; name the parameter that separates the modes and say what to try.
    Silent for a release with one mode (the common case) and where it is not examined.
    ``theta`` holds the draws, ``(chains, draws, theta_size)``."""
    if s_dp is None or theta.shape[1] == 0:
        return
    found = landscape(model, mechanism, s_dp, n)
    if found is None or not found.multimodal:
        return
    step = max(1, theta.shape[1] // 1000)
    chains = theta[:, ::step, :]
    owner = _visits(found, chains.reshape(-1, theta.shape[2])).reshape(chains.shape[:2])
    share = np.array([[np.mean(owner[c] == m) for m in range(len(found.modes))]
                      for c in range(owner.shape[0])])
    visited_by_all = share.mean(axis=0)
    visited = visited_by_all > VISITED  # a stray draw or two is not a visit
    missed = [m for m, mode in enumerate(found.modes)
              if mode.weight >= WARN_WEIGHT and not visited[m]]
    crossing = np.sum(share > 0.01, axis=1) >= 2  # chains that spent time in two modes
    reference = next(m for m in range(len(found.modes)) if visited[m]) \
        if visited.any() else 0
    advice = ("run more chains, start some with init_theta there, or use "
              "interweave=True with jumps=True" if model.noncentred is not None else
              "run more chains or start some with init_theta there (this model has no "
              "non-centred map, so its chains cannot cross between modes: "
              "Model(noncentred=dw.NonCentred(...)) enables the moves that do)")
    if missed:
        m = missed[0]
        where = _where(model, found, m, reference)
        warnings.warn(f"a mode may be missing from the posterior: the release is also "
                      f"explained by {where} (about {found.modes[m].weight:.0%} of the "
                      f"release-weighted prior draws, by a central-limit approximation), but "
                      f"no chain went there. The draws may describe one mode of a "
                      f"posterior with several; {advice}", RuntimeWarning, stacklevel=3)
    elif visited.sum() >= 2 and not crossing.any():
        first, second = (int(m) for m in np.argsort(-visited_by_all)[:2])
        warnings.warn(f"the chains stayed in separate modes of the posterior "
                      f"({_where(model, found, first, second)} and "
                      f"{_where(model, found, second, first)}): no chain moved between them, "
                      f"so their relative mass is not estimated by these draws; {advice}",
                      RuntimeWarning, stacklevel=3)


def _where(model, found: Landscape, m: int, other: int) -> str:
    """``lam near 0.0021`` for mode ``m``, naming the entry that separates it most from mode
    ``other`` (in units of the pool's spread)."""
    mode, ref = found.modes[m], found.modes[other]
    j = int(np.argmax(np.abs(mode.mean - ref.mean) / _spread(found))) if m != other else 0
    return f"{_label(model, j)} near {mode.mean[j]:.3g}"
