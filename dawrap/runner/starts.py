r"""Release-informed starting values for the record sampler.

A chain started at a prior draw can settle in a region the release rules out and stay there:
the Laplace mechanism's exponential tails make :math:`p(s_{dp} \mid \theta)` fall off only
linearly in the misfit, so a theta that explains every released coordinate but one is a
local mode, and record-level augmentation, which moves theta by about its complete-data
posterior sd per iteration, may not leave it in any affordable run. (On the Ju et al.
regression at n = 10000, a prior start with beta_1 of the wrong sign stayed there for 6000
iterations, 40 nats of misfit away from the release.)

So, unless the user gives ``init_theta``, each chain starts from a sampling-importance-
resampling draw: ``candidates`` prior draws :math:`\theta_k`, weighted by the central-limit
approximation of the release's likelihood,

.. math:: s_{dp} \mid \theta \approx N\big(n\, \mu(\theta),\ n\, \Sigma(\theta) + V\big),

with :math:`\mu, \Sigma` the mean and covariance of one record's statistic (from ``records``
records simulated with common random numbers across candidates, so the weights are smooth in
theta; only the diagonal of :math:`\Sigma` for releases of more than
:data:`FULL_COVARIANCE_UP_TO` coordinates) and :math:`V` the noise covariance (diagonal: the
mechanism's closed form, or estimated from draws of the noise), and one of them drawn in
proportion to its weight. It costs milliseconds per chain for the built-in models (6-17 ms;
0.09 s for a 500-category count vector), and is skipped (a plain prior draw) for
mechanisms that cannot draw their noise or whose statistic depends on the release. In many
dimensions 64 prior draws are all far from the posterior, and the start is merely the best
of them; warm-up does the rest. This only chooses where a chain begins; the kept
draws are exact either way, and chains start apart because each resamples its own prior draws.
"""
from __future__ import annotations

import warnings

import numba
import numpy as np

from ..mechanisms.base import as_records
from ..compile import templates as _templates
from ..model.protocols import database_drawer
from ..samplers import entries_path
from .clt import FULL_COVARIANCE_UP_TO, noise_variance  # both part of this module's API too
from .modes import landscape, spread_start

__all__ = ["initial_values", "release_informed_theta", "noise_variance", "statistic_moments",
           "moments_from_entries", "record_variances",
           "simulated_contributions", "SUMMARISED_ABOVE", "CANDIDATES", "RECORDS",
           "FULL_COVARIANCE_UP_TO"]

#: Releases longer than this get a min / max summary from simulated_contributions.
SUMMARISED_ABOVE = 1024
#: Prior draws weighed per chain, and records simulated per draw.
CANDIDATES, RECORDS = 64, 1000


# The slots of the templates below (_templates.bind checks every binding against them):
# the mechanism's statistic (moments), or its entries (entry_moments), and their sizes.
STATISTIC = _templates.slot("(x_i, s_dp, out): the mechanism's statistic of a record")
ENTRIES = _templates.slot("(x_i, s_dp, index, value) -> count: the mechanism's statistic "
                          "as (index, value) pairs")
SIZE = _templates.slot("int: floats of the mechanism's statistic")
NNZ = _templates.slot("int: most pairs ENTRIES writes")


def moments(x, s_dp, full):
    """One pass of Welford's updates over the records: mean, scatter / n and variances."""
    size = SIZE
    t, mean, var = np.empty(size), np.zeros(size), np.zeros(size)
    scatter = np.zeros((size, size) if full else (1, 1))
    for i in range(x.shape[0]):
        STATISTIC(x[i], s_dp, t)
        count = i + 1.0
        before = t - mean
        for j in range(size):
            mean[j] += before[j] / count
        for j in range(size):
            if full:
                for k in range(size):
                    scatter[j, k] += before[j] * (t[k] - mean[k])
            var[j] += before[j] * (t[j] - mean[j])
    return mean, scatter / x.shape[0], var / x.shape[0]


def statistic_moments(x, s_dp, statistic, size: int, full: bool):
    """Mean and covariance over the records ``x`` of the mechanism's per-record statistic;
    with ``full`` False the variances only, as a vector (O(size) memory: no size x size
    array)."""
    bound = _templates.bind((moments,), {"STATISTIC": statistic, "SIZE": size})
    mean, cov, var = bound.moments(x, s_dp, full)
    return mean, (cov if full else var)


def moments_from_entries(x, s_dp, entries, nnz: int, size: int, mechanism=None,
                   where: str = "the records"):
    """Mean and variance of each coordinate of a sparse statistic (its ``entries``), O(records
    nnz + size): the statistic's values are small counts, so the one-pass sums of values and
    squares lose nothing to cancellation.

    Every call of ``entries`` is checked before its pairs are used (the count, the pairs
    written, each index): one that breaks its contract on record ``i`` of ``x`` raises
    :class:`~dawrap.samplers.entries_path.EntriesError`, with the message the record sampler's own
    check gives (naming ``mechanism`` and ``where`` the records came from)."""
    bound = _templates.bind((entry_moments,), {"ENTRIES": entries, "NNZ": nnz, "SIZE": size})
    mean, var, bad, why = bound.entry_moments(x, s_dp)
    if bad >= 0:
        raise entries_path.EntriesError(entries_path.entries_error(bad, 2, why, where, mechanism))
    return mean, var


def entry_moments(x, s_dp):
    """The template of :func:`moments_from_entries`: ``(mean, var, -1, 0)``, or the first record
    whose entries break their contract and why
    (:func:`~dawrap.samplers.entries_path.broken_pairs`),
    checked before any of its pairs is used: numba checks no index, and an index outside the
    statistic (or a count above ``nnz``) would otherwise read and write unrelated memory."""
    size, nnz = SIZE, NNZ
    first, second = np.zeros(size), np.zeros(size)
    index_buf, value_buf = entries_path.guarded_pairs(nnz)
    index, value, cell = index_buf[:nnz], value_buf[:nnz], np.zeros(size)
    for i in range(x.shape[0]):
        entries_path.arm_pairs(index_buf, value_buf, nnz)
        count = ENTRIES(x[i], s_dp, index, value)
        why = entries_path.broken_pairs(count, index_buf, value_buf, nnz, size)
        if why != 0:
            return first, second, i, why
        for a in range(count):  # a repeated index adds up before squaring
            cell[index[a]] += value[a]
        for a in range(count):
            j = index[a]
            if cell[j] != 0.0:
                first[j] += cell[j]
                second[j] += cell[j] * cell[j]
                cell[j] = 0.0
    mean = first / x.shape[0]
    return mean, np.maximum(second / x.shape[0] - mean * mean, 0.0), -1, 0


def record_variances(x, s_dp, mechanism, where: str = "the records drawn from the model"):
    """Mean and variance of each coordinate of the mechanism's statistic over the records
    ``x``: through the sparse entries when declared (O(records nnz + size), every call of
    them checked: :func:`moments_from_entries`), else densely."""
    if mechanism.sparse is not None:
        return moments_from_entries(x, s_dp, mechanism.sparse.entries, mechanism.sparse.nnz,
                              mechanism.size, mechanism, where)
    return statistic_moments(x, s_dp, mechanism.sampler_statistic, mechanism.size, False)


def simulated_contributions(model, mechanism, s_dp: np.ndarray, thetas: int = 8,
                            records: int = 16, seed: int = 20220102) -> np.ndarray | None:
    """The mechanism's statistic for ``records`` records from each of ``thetas`` prior draws,
    as a ``(thetas * records, size)`` array; ``None`` when any user function fails or
    misbehaves on the way (the run's own probe of the user's functions reports that with
    its name; this is only evidence for :func:`dawrap.sampling.sample`'s plausibility check).

    Uses its own generator (``seed``), never the chains': a run's draws do not depend on it.
    It calls the compiled functions directly, as the record sampler's probe does, so it
    compiles nothing that sampler would not; about 2 ms for 128 records. Every output buffer
    has four NaN guard entries beyond its end, where a function writing slightly past ``out``
    lands (and is caught) instead of corrupting memory.

    Releases longer than :data:`SUMMARISED_ABOVE` coordinates get two rows instead, each
    coordinate's smallest and largest contribution (all the plausibility check uses), so
    that memory stays O(size).
    """
    rng = np.random.default_rng(seed)
    size, record_size = mechanism.size, model.record_size
    summary = size > SUMMARISED_ABOVE
    out = np.empty((2 if summary else thetas * records, size))
    if summary:
        out[0], out[1] = np.inf, -np.inf
    x, t = np.full(record_size + 4, np.nan), np.full(size + 4, np.nan)
    record_, stat = x[:record_size], t[:size]
    # (through cached wrappers: a user's functions then load from the disk cache)
    draw_record = _templates.cached_caller(model.draw_record, 3)
    statistic = _templates.cached_caller(mechanism.sampler_statistic, 3)
    try:
        for a in range(thetas):
            theta = model.pack(model.draw_prior(rng), "the theta returned by draw_prior")
            for b in range(records):
                draw_record(rng, theta, record_)
                statistic(record_, s_dp, stat)
                if summary:
                    np.minimum(out[0], stat, out=out[0])
                    np.maximum(out[1], stat, out=out[1])
                else:
                    out[a * records + b] = stat
    except Exception:  # noqa: BLE001 - the user's functions; the run's probe names the culprit
        return None
    # A write past the end lands in the NaN guards (checked once, at the end: it is cheap).
    if not (np.all(np.isnan(x[record_size:])) and np.all(np.isnan(t[size:]))
            and np.all(np.isfinite(out))):
        return None
    return out


def _clt_log_likelihood(model, mechanism, s_dp, n, theta, noise, seed, records) -> float:
    x = database_drawer(model.draw_record, model.record_size, model.prepared)(
        np.random.default_rng(seed), theta, records)
    full = mechanism.size <= FULL_COVARIANCE_UP_TO
    if full:
        mean, cov = statistic_moments(x, s_dp, mechanism.sampler_statistic, mechanism.size, True)
    else:
        mean, var = record_variances(
            x, s_dp, mechanism, f"the {records} records drawn from the model for a "
                                f"release-informed start")
    # An extreme release or candidate overflows to inf or NaN, which the caller treats as
    # "never chosen": no warning is due.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        misfit = s_dp - n * mean
        if not full:
            var = n * var + noise
            return -0.5 * float(np.sum(misfit ** 2 / var + np.log(var)))
        total_cov = n * cov + np.diag(noise)
        sign, logdet = np.linalg.slogdet(total_cov)
        if sign <= 0 or not np.all(np.isfinite(mean)):
            return -np.inf
        return -0.5 * (misfit @ np.linalg.solve(total_cov, misfit) + logdet)


def release_informed_theta(rng, model, mechanism, s_dp, n: int, noise: np.ndarray | None,
                           candidates: int = CANDIDATES, records: int = RECORDS,
                           chain: int | None = None):
    """One chain's start: a prior draw resampled by its approximate release likelihood
    (module docstring), or ``None`` when ``noise`` is ``None`` (no approximation available).
    Uses ``rng``, so starts are reproducible from the chain's seed.

    Given the chain's index ``chain``, a release that two or more separate modes explain
    (:func:`dawrap.runner.modes.landscape`) starts chain ``c`` in mode ``c mod K`` instead
    (:func:`dawrap.runner.modes.spread_start`): resampling from the prior would start every
    chain in the mode that has most prior mass, where they agree and R-hat stays quiet."""
    if noise is None:
        return None
    if chain is not None:
        found = landscape(model, mechanism, s_dp, n)
        if found is not None and found.multimodal:
            return spread_start(found, rng, chain)
    thetas = [model.pack(model.draw_prior(rng), "the theta returned by draw_prior")
              for _ in range(candidates)]
    seed = int(rng.integers(2 ** 63))  # common random numbers for every candidate
    try:
        log_w = np.array([_clt_log_likelihood(model, mechanism, s_dp, n, theta, noise, seed,
                                              records) for theta in thetas], dtype=np.float64)
    except entries_path.EntriesError:
        raise  # the user's entries are wrong: no run can use them
    except (ArithmeticError, ValueError, np.linalg.LinAlgError) as err:
        # Only where the chain begins is at stake: say so and begin at a prior draw.
        warnings.warn(f"the release-informed start failed ({err}); starting at a prior "
                      f"draw instead", RuntimeWarning, stacklevel=2)
        return thetas[0]
    log_w[~np.isfinite(log_w)] = -np.inf  # NaN too: such a candidate is never chosen
    if not np.any(np.isfinite(log_w)):
        return thetas[0]
    weights = np.exp(log_w - np.max(log_w))
    return thetas[int(rng.choice(candidates, p=weights / weights.sum()))]


def initial_values(model, chains: int, n: int, init_theta, init_x):
    """Per-chain starting thetas and databases from ``sample``'s ``init_theta`` /
    ``init_x`` (``None`` where not given), validated and packed."""
    thetas = None
    if init_theta is not None:
        # One start per chain: a list of dicts, or an array of shape (chains, theta_size).
        per_chain = (isinstance(init_theta, (list, tuple)) and init_theta
                     and all(isinstance(t, dict) for t in init_theta)) or \
            (np.ndim(init_theta) == 2)
        if per_chain:
            if len(init_theta) != chains:
                raise ValueError(f"init_theta has {len(init_theta)} starts for {chains} chains")
            thetas = [model.pack(t, f"init_theta[{c}]") for c, t in enumerate(init_theta)]
        else:
            thetas = [model.pack(init_theta, "init_theta")] * chains
    x = None
    if init_x is not None:
        x = as_records(init_x, "init_x")
        if x.shape != (n, model.record_size):
            raise ValueError(f"init_x must have shape (n, record_size) = "
                             f"({n}, {model.record_size}), got {x.shape}")
    return thetas, None if x is None else [x] * chains
