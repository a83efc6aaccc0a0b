"""Pieces the ready-made models share: hyperparameter checks, the valid region of a
non-negative total (Poisson and exponential records), the Gamma prior of a rate (Poisson and
exponential records), the Laplace release of a truncated total, the closures' compiler and
the memory check of a model's arrays, and the enumeration of count vectors behind the
exact posteriors of the categorical models."""
import functools
import itertools
import math
import numbers
import os

import numba
import numpy as np

import dawrap as dw
from dawrap.extend import closure_jit  # noqa: F401  (the models' closures compile with it)


def positive(name: str, value) -> float:
    """``value`` as a finite float > 0, or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not 0 < float(value) < math.inf:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


@numba.njit(nogil=True, cache=True)
def positive_rate(theta):
    """The parameter space of a rate: lam > 0."""
    return theta[0] > 0.0


def gamma_rate_model(name: str, alpha: float, beta: float, *, draw_record, draw_theta,
                     model_stat, family, record_support, noncentred) -> dw.Model:
    """A model of one-float records whose parameter is a rate ``lam`` with prior
    ``Gamma(alpha, rate=beta)`` (``poisson_gamma``, ``gamma_exponential``): the prior's draw,
    the parameter space and the model's name ``name(alpha=..., beta=...)`` from the checked
    hyperparameters; the records' functions, the family and the non-centred map from the
    model (:class:`dawrap.Model`'s arguments of those names)."""
    return dw.Model(params={"lam": ()}, record_size=1, draw_record=draw_record,
                    draw_theta=draw_theta, model_stat=model_stat, stat_size=1,
                    draw_prior=lambda rng: np.array([rng.gamma(alpha, 1.0 / beta)]),
                    family=family, theta_support=positive_rate,
                    record_support=record_support, noncentred=noncentred,
                    name=f"{name}(alpha={alpha:g}, beta={beta:g})")


@functools.lru_cache(maxsize=64)
def gamma_rate_noncentred(record_from_noise, noise_from_record, alpha: float, beta: float,
                          threshold: float) -> dw.NonCentred:
    """The non-centred parameterisation of a rate ``lam`` with prior ``Gamma(alpha,
    rate=beta)``: the model's map (``record_from_noise``, ``noise_from_record``), the prior's
    log density and a first random-walk scale of a tenth of the prior's sd; ``threshold`` is
    the missing information from which ``dw.sample`` interweaves (what the map costs).
    Cached: the same arguments give the same compiled functions."""

    @numba.njit(nogil=True, cache=True)
    def log_prior(theta):
        lam = theta[0]
        if not lam > 0.0:
            return -np.inf
        return (alpha - 1.0) * math.log(lam) - beta * lam

    return dw.NonCentred(record_from_noise, noise_from_record, log_prior, noise_size=1,
                         initial_scale=0.1 * math.sqrt(alpha) / beta, threshold=threshold)


def truncated_laplace(family, epsilon: float, lower: float, upper: float) -> dw.Laplace:
    """The total of the records inside ``[lower, upper]`` (the others dropped) with Laplace
    noise: ``family``'s truncated statistic and its sensitivity, with
    ``truncation=(lower, upper)`` (the Bernstein-Sheldon release both samplers accept)."""
    return dw.Laplace(family.truncated_statistic(lower, upper), epsilon=epsilon,
                      sensitivity=family.truncated_sensitivity(lower, upper),
                      truncation=(lower, upper))


@numba.njit(nogil=True, cache=True)
def nonnegative_total(s, n):
    """A total of non-negative records is >= 0."""
    return s[0] >= 0.0


@numba.njit(nogil=True, cache=True)
def nearest_nonnegative_total(s, n):
    """The nearest valid total: negative values become 0."""
    return np.array([max(s[0], 0.0)])


def compositions(total: int, parts: int) -> np.ndarray:
    """Every vector of ``parts`` non-negative integers summing to ``total`` (stars and bars),
    one per row, in lexicographic order.

    Examples
    --------
    >>> from dawrap.models._shared import compositions
    >>> compositions(2, 3)
    array([[0, 0, 2],
           [0, 1, 1],
           [0, 2, 0],
           [1, 0, 1],
           [1, 1, 0],
           [2, 0, 0]])
    """
    bars = list(itertools.combinations(range(total + parts - 1), parts - 1))
    bars = np.array(bars, dtype=np.int64).reshape(len(bars), parts - 1)
    edges = np.hstack([np.full((bars.shape[0], 1), -1), bars,
                       np.full((bars.shape[0], 1), total + parts - 1)])
    return np.diff(edges, axis=1) - 1


def log_dirichlet_multinomial(counts: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """The log Dirichlet-multinomial pmf of each row of ``counts`` (its total the row's sum)
    under the concentrations ``alpha``."""
    from scipy.special import gammaln

    m = counts.sum(1)
    return (gammaln(m + 1) - gammaln(counts + 1).sum(1) + gammaln(alpha.sum())
            - gammaln(alpha.sum() + m) + (gammaln(alpha + counts) - gammaln(alpha)).sum(1))


#: Bytes a model may need per entry of its largest hyperparameter or statistic array: the
#: Python tuple that keys the factory's cache (a float object and a slot, about 32 bytes),
#: the arrays made from it and the compiled chain's copies.
BYTES_PER_ENTRY = 64


def check_memory(entries: int, what: str) -> None:
    """Refuse, before anything is allocated, a model whose arrays of ``entries`` numbers
    cannot fit in this machine's memory (a mistyped size must not run for a minute and be
    killed, or end in a bare MemoryError). ``what`` names the argument and the arrays."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not known here: nothing to compare with
        return
    need = BYTES_PER_ENTRY * entries
    if need > total:
        raise ValueError(f"{what}: about {need / 1e9:.3g} GB of memory, more than this "
                         f"machine's {total / 1e9:.3g} GB")
