r"""Exponential records with a Gamma prior on the rate; the truncated total is released.

.. math:: \lambda \sim \mathrm{Gamma}(\alpha, \text{rate } \beta),\quad
          x_i \mid \lambda \sim \mathrm{Exponential}(\text{rate } \lambda),\quad
          s_{dp} = \textstyle\sum_i 1_{[a,b]}(x_i)\, x_i + \text{noise}.

The statistic :math:`t(x) = x` is unbounded, so the release drops records outside the bounds
``[a, b]`` chosen by the analyst in advance (never from the data); its L1 sensitivity is
``max(|a|, |b|, b - a) = b``. Both samplers accept this release.

Dropping records makes the expected total rise and then fall in :math:`\lambda` (to 0 as
:math:`\lambda \to 0`, every record beyond ``b``, and as :math:`\lambda \to \infty`,
every record small), so a release below its peak has two explanations and the posterior
may have two modes: with prior Gamma(1, 1), bounds [0, 10], epsilon = 1 and n = 100, a
release of 0 puts 31% of the mass below 0.05 and the rest around 3-5. ``dw.sample`` finds
such modes before sampling (:mod:`dawrap.runner.modes`), starts a chain in each and, through
the non-centred map :math:`x_i = z_i / \lambda`, :math:`z_i \sim \mathrm{Exponential}(1)`,
interweaves with jumps that carry :math:`\lambda` and every record from one mode to the
other (``docs/kernels.md``); it warns when a run misses a mode. :func:`exact_posterior`
tabulates both modes.

Examples
--------
>>> import dawrap as dw
>>> from dawrap.models import gamma_exponential
>>> model = gamma_exponential.model(alpha=2, beta=1)
>>> mech = gamma_exponential.laplace(epsilon=1.0, lower=0.0, upper=3.0)
"""
from __future__ import annotations

import functools
import math
import warnings
from typing import NamedTuple

import numba
import numpy as np

import dawrap as dw

from ._shared import (gamma_rate_model, gamma_rate_noncentred, nearest_nonnegative_total,
                      nonnegative_total, positive, truncated_laplace)

__all__ = ["model", "value", "draw_record", "laplace", "family", "exact_posterior"]


@numba.njit(nogil=True, cache=True)
def draw_record(rng, theta, out):
    """One Exponential(rate lam) record.

    Parameters
    ----------
    rng, theta, out
        As for :func:`dawrap.models.beta_binomial.draw_record`, with ``theta = [lam]``.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import gamma_exponential
    >>> out = np.empty(1)
    >>> gamma_exponential.draw_record(np.random.default_rng(0), np.array([2.0]), out)
    >>> bool(out[0] > 0.0)
    True
    """
    out[0] = rng.exponential(1.0 / theta[0])


@numba.njit(nogil=True, cache=True)
def value(x_i, out):
    """The sufficient statistic t(x) = x: writes the record ``x_i`` (shape (1,)) into ``out``
    (shape (1,)), as :func:`dawrap.models.beta_binomial.count` does;
    :func:`laplace` releases its total over the records inside the bounds.

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import gamma_exponential
    >>> out = np.empty(1); gamma_exponential.value(np.array([0.25]), out); out
    array([0.25])
    """
    out[0] = x_i[0]


@numba.njit(nogil=True, cache=True)
def conjugate_draw(rng, alpha, beta, total, n):
    """lam | x ~ Gamma(alpha + n, rate beta + sum x)."""
    return np.array([dw.random.gamma(rng, alpha + n, 1.0 / (beta + total))])


@numba.njit(nogil=True, cache=True)
def record_from_noise(theta, z_i, out):
    """The non-centred map x_i = z_i / lam (z_i ~ Exponential(1))."""
    out[0] = z_i[0] / theta[0]


@numba.njit(nogil=True, cache=True)
def noise_from_record(rng, theta, x_i, z_out):
    """z_i = lam x_i, the one noise value that gives the record back."""
    z_out[0] = x_i[0] * theta[0]


@numba.njit(nogil=True, cache=True)
def non_negative(x_i):
    """A record is >= 0."""
    return x_i[0] >= 0.0


@numba.njit(nogil=True, cache=True)
def natural(theta):
    return -theta[0]


@numba.njit(nogil=True, cache=True)
def log_partition(eta):
    """A(eta) = -log(-eta) (rate -eta)."""
    return -math.log(-eta[0])


@numba.njit(nogil=True, cache=True)
def mean_cov(theta):
    lam = theta[0]
    return np.array([1.0 / lam]), np.array([[1.0 / lam ** 2]])


@numba.njit(nogil=True, cache=True)
def cdf(x, eta):
    """P(X <= x) = 1 - exp(eta x) for rate -eta."""
    return -math.expm1(eta * x) if x > 0.0 else 0.0


@numba.njit(nogil=True, cache=True)
def sf(x, eta):
    """P(X >= x) = exp(eta x)."""
    return math.exp(eta * x) if x > 0.0 else 1.0


@functools.lru_cache(maxsize=64)
def _kernels(alpha: float, beta: float):
    @numba.njit(nogil=True, cache=True)
    def draw_theta(rng, theta, x, stats):
        return conjugate_draw(rng, alpha, beta, stats[0], x.shape[0])

    @numba.njit(nogil=True, cache=True)
    def posterior_draw(rng, s, n):
        return conjugate_draw(rng, alpha, beta, s[0], n)

    return draw_theta, posterior_draw


@functools.lru_cache(maxsize=64)
def family(alpha: float = 1.0, beta: float = 1.0) -> dw.ExponentialFamily:
    """The exponential family description (natural parameter -lam).

    Parameters
    ----------
    alpha, beta : float
        The Gamma prior's shape and rate.

    Returns
    -------
    dawrap.ExponentialFamily
        Cached per prior; its ``truncated_statistic`` builds the release of :func:`laplace`.

    Examples
    --------
    >>> from dawrap.models import gamma_exponential
    >>> fam = gamma_exponential.family(alpha=2.0, beta=1.0)
    >>> fam.bounded, fam.discrete          # an unbounded, continuous statistic
    (False, False)
    """
    return dw.ExponentialFamily(value, 1, mean_cov, _kernels(alpha, beta)[1],
                                nonnegative_total, bounded=False, natural=natural, cdf=cdf,
                                sf=sf, log_partition=log_partition,
                                project=nearest_nonnegative_total)


@dw.recipe
def model(alpha: float = 1.0, beta: float = 1.0) -> dw.Model:
    """Exponential records, prior ``Gamma(alpha, rate=beta)`` on the parameter ``lam``.

    Parameters
    ----------
    alpha, beta : float
        The Gamma prior's shape and rate (positive).

    Returns
    -------
    dawrap.Model
        A conjugate ``draw_theta``, the family and the non-centred map ``x_i = z_i / lam``.

    Examples
    --------
    >>> from dawrap.models import gamma_exponential
    >>> gamma_exponential.model(alpha=2, beta=1)
    Model(gamma_exponential(alpha=2, beta=1); params {lam: ()}, record_size=1)
    """
    alpha, beta = positive("alpha", alpha), positive("beta", beta)
    # x_i = z_i / lam with z_i ~ Exponential(1): every record scales with 1 / lam. Measured
    # crossover of the move against plain record sweeps on truncated releases with one
    # mode: 0.83x at missing information 0.42, 1.16x at 0.62 (median of three releases
    # each; benchmarks/results/modes.md).
    noncentred = gamma_rate_noncentred(record_from_noise, noise_from_record, alpha, beta,
                                       threshold=0.5)
    return gamma_rate_model("gamma_exponential", alpha, beta, draw_record=draw_record,
                            draw_theta=_kernels(alpha, beta)[0], model_stat=value,
                            family=family(alpha, beta), record_support=non_negative,
                            noncentred=noncentred)


@dw.recipe
def laplace(epsilon: float, lower: float, upper: float) -> dw.Laplace:
    """The total of records inside ``[lower, upper]`` with Laplace noise (epsilon-DP).

    Parameters
    ----------
    epsilon : float
        The privacy budget; the noise scale is the sensitivity over it.
    lower, upper : float
        The bounds, chosen in advance (never from the data); the sensitivity is
        ``max(|lower|, |upper|, upper - lower)``, ``upper`` for ``0 <= lower``.

    Returns
    -------
    dawrap.Laplace
        With ``truncation=(lower, upper)``; :func:`exact_posterior` is its exact posterior.

    Examples
    --------
    >>> from dawrap.models import gamma_exponential
    >>> mech = gamma_exponential.laplace(epsilon=1.0, lower=0.0, upper=3.0)
    >>> mech
    Laplace(truncated, epsilon=1, sensitivity=3, scale=3, size=1)
    >>> mech.total([1.0, 4.0, 2.5])                        # 4.0 is dropped
    array([3.5])
    """
    return truncated_laplace(family(), epsilon, lower, upper)


class _Release(NamedTuple):
    """What :func:`_inversion_chunk` integrates: ``n`` records' total inside ``[lower,
    upper]`` released as ``s_dp`` with Laplace noise of scale ``scale`` (``laplace``) or
    Gaussian noise of sd ``scale``."""
    n: float
    lower: float
    upper: float
    s_dp: float
    laplace: bool
    scale: float


@numba.njit(nogil=True, cache=True)
def _inversion_chunk(lam, outside, release, h, start, size, total, tail):
    r"""One chunk of :func:`_release_density`'s trapezoid sum, for each rate ``lam[r]``:
    adds :math:`\sum_k \mathrm{Re}[(\varphi(\omega_k)^n - (1-q)^n)\,\psi(\omega_k)
    e^{-i\omega_k s_{dp}}]` over :math:`\omega_k = kh`, ``start <= k < start + size``, to
    ``total[r]``, and puts in ``tail[r]`` the largest modulus of the bracket over the
    chunk's last eighth. ``psi`` is the noise's characteristic function (``release``, a
    :class:`_Release`).

    The three oscillating factors :math:`e^{i\omega b}`, :math:`e^{i\omega a}` and
    :math:`e^{-i\omega s_{dp}}` are rotations by a fixed angle from one :math:`\omega_k`
    to the next: computed exactly at the chunk's start and carried by one complex product
    each per step (the rounding after the 4096 steps of a chunk is about 1e-13 of their
    modulus, 1, far below the 1e-7 to which the caller resolves the likelihood). That leaves
    a complex logarithm and exponential (:math:`\varphi^n = e^{n \log\varphi}`) per term,
    where the same sums in NumPy took three complex exponentials more and a temporary array
    per operation."""
    n, lower, upper, s_dp, laplace, scale = release
    last = size - size // 8
    rot_b, rot_a, rot_s = (complex(math.cos(h * upper), math.sin(h * upper)),
                           complex(math.cos(h * lower), math.sin(h * lower)),
                           complex(math.cos(h * s_dp), -math.sin(h * s_dp)))
    w = start * h
    first_b, first_a, first_s = (complex(math.cos(w * upper), math.sin(w * upper)),
                                 complex(math.cos(w * lower), math.sin(w * lower)),
                                 complex(math.cos(w * s_dp), -math.sin(w * s_dp)))
    for r in range(lam.shape[0]):
        la, out = lam[r], outside[r]
        atom = out ** n
        eb, ea = math.exp(-la * upper), math.exp(-la * lower)
        at_b, at_a, at_s = first_b, first_a, first_s
        acc, top = 0.0, 0.0
        for k in range(size):
            w = (start + k) * h
            z = complex(-la, w)
            phi = out + la * (eb * at_b - ea * at_a) / z
            if laplace:
                cf = 1.0 / (1.0 + (scale * w) ** 2)
            else:
                cf = math.exp(-0.5 * (scale * w) ** 2)
            body = (np.exp(n * np.log(phi)) - atom) * cf
            acc += (body * at_s).real
            if k >= last:
                top = max(top, abs(body))
            at_b, at_a, at_s = at_b * rot_b, at_a * rot_a, at_s * rot_s
        total[r] += acc
        tail[r] = top


def _release_density(lam, s_dp, n, lower, upper, noise, spread, atom, prior=None):
    r"""``p(s_dp | lam)`` without the all-outside atom, for each rate in ``lam``, by Fourier
    inversion (see :func:`exact_posterior`); ``noise`` is ``("laplace", scale)`` or
    ``("gaussian", sd)``; ``spread`` bounds the width of the release's
    distribution (the step in omega is chosen so that aliasing at period ``2 pi / h`` cannot
    reach it); ``atom`` is the atom's part of the density, which the caller adds (it sets
    the accuracy needed: where nearly every record falls outside, the atom is nearly all of
    the likelihood and the rest need not be resolved to 1e-7 of itself). ``prior``, the
    prior density at ``lam`` (any scale), sets where a rate's likelihood matters: one the
    prior makes negligible next to the largest posterior density needs no precision."""
    lam = np.asarray(lam, dtype=float)
    q = np.exp(-lam * lower) - np.exp(-lam * upper)
    outside = np.maximum(1.0 - q, 0.0)  # P(a record contributes 0)
    h = math.pi / spread
    zero = 1.0 - outside ** n  # the noise's characteristic function is 1 at omega = 0
    release = _Release(float(n), float(lower), float(upper), float(s_dp),
                       noise[0] == "laplace", float(noise[1]))
    total = np.zeros(lam.shape[0])
    # Chunks of omega until what is left is negligible for every rate: |phi|^n falls like
    # exp(-n var omega^2 / 2) for large n q, but only like 1/omega where few records fall
    # inside (one contribution's density jumps at a and b), so with Laplace noise the
    # integrand can fall as slowly as omega^-3, whose tail beyond Omega is Omega / 2 times the
    # integrand there. A rate is done when that bound is below 1e-7 of its likelihood, atom
    # included, or of 1e-8 of the largest posterior density over the prior's density there
    # (a rate whose posterior density is below 1e-15 of the largest does not matter: before,
    # rates of prior density e^-175, where a record falls inside once in a thousand and the
    # integrand decays like omega^-3, took minutes).
    weight = np.ones(lam.shape[0]) if prior is None else np.asarray(prior, dtype=float)
    weight = weight / np.max(weight)
    active = np.arange(lam.shape[0])
    start, size = 1, 4096
    while active.size and start < 4_000_000:
        part, part_tail = total[active], np.zeros(active.size)
        # phi^n without the all-outside atom (1 - q)^n, whose transform does not decay; the
        # atom's contribution, (1 - q)^n times the noise density at s_dp, is added exactly
        # by the caller.
        _inversion_chunk(lam[active], outside[active], release, h, start, size, part,
                         part_tail)
        total[active] = part
        start += size
        density = h / math.pi * (0.5 * zero + total)
        w_end = (start - 1) * h
        tail = part_tail * w_end / (2.0 * math.pi)
        likelihood = np.abs(density + atom)
        with np.errstate(divide="ignore"):
            floor = np.maximum(likelihood[active],
                               1e-8 * np.max(weight * likelihood) / weight[active])
        active = active[tail > 1e-7 * floor]
    if active.size:
        warnings.warn(f"exact_posterior: the Fourier inversion did not converge for "
                      f"{active.size} rate(s) (e.g. lam = {lam[active[0]]:.3g}); the "
                      f"reference may be inaccurate there", RuntimeWarning, stacklevel=3)
    # Trapezoid rule on [0, inf) for (1/pi) int Re[...] d omega; the omega = 0 term is 1 -
    # (1 - q)^n (the body at zero), counted with weight 1/2.
    density = h / math.pi * (0.5 * zero + total)
    return density


def exact_posterior(mechanism: dw.Mechanism, s_dp, n: int, alpha: float = 1.0,
                    beta: float = 1.0, points: int = 1500):
    r"""The exact posterior of ``lam`` given a truncated release (Laplace or Gaussian noise).

    The released total :math:`\hat s = \sum_i 1_{[a,b]}(x_i)\, x_i` has characteristic
    function :math:`\varphi(\omega)^n`, with one record's

    .. math:: \varphi(\omega) = 1 - q + \lambda\,\frac{e^{(i\omega-\lambda)b}
              - e^{(i\omega-\lambda)a}}{i\omega - \lambda},\qquad
              q = e^{-\lambda a} - e^{-\lambda b},

    so the release's density is the inversion
    :math:`p(s_{dp}\mid\lambda) = \frac1\pi\int_0^\infty \mathrm{Re}\big[\varphi^n
    e^{-i\omega s_{dp}}\big]\,\psi(\omega)\,d\omega` with :math:`\psi` the noise's
    characteristic function (:math:`1/(1+b^2\omega^2)` Laplace, :math:`e^{-\sigma^2\omega^2/2}`
    Gaussian). The atom at :math:`\hat s = 0` (every record outside, probability
    :math:`(1-q)^n`) is added in closed form; the rest is integrated by the trapezoid rule with
    a step small enough that aliasing (period :math:`2\pi/h`) cannot reach the release's
    range. The posterior is tabulated, times the ``Gamma(alpha, rate=beta)`` prior, where its
    mass is (:func:`dawrap.reference.positive_grid`: a release near zero puts a narrow mode
    near ``lam = 0``, every record beyond the bound, besides the wide one). No central-limit
    approximation anywhere: this is the reference against which ``method="suffstat"`` is
    tested on truncated releases.

    Parameters
    ----------
    mechanism : dawrap.Laplace or dawrap.Gaussian
        A truncated release's mechanism (:func:`laplace`).
    s_dp : float
        The release.
    n : int
        Number of records.
    alpha, beta
        As for :func:`model`.
    points : int
        Points per region of the grid (fewer is faster and coarser).

    Returns
    -------
    dawrap.reference.Grid
        Both modes tabulated, each on its own grid.

    Examples
    --------
    >>> from dawrap.models import gamma_exponential
    >>> mech = gamma_exponential.laplace(epsilon=1.0, lower=0.0, upper=3.0)
    >>> exact = gamma_exponential.exact_posterior(mech, 10.0, n=20, alpha=2, beta=1,
    ...                                           points=300)
    >>> round(exact.mean(), 2), round(exact.std(), 2)
    (1.96, 1.03)
    """
    from scipy import stats

    from dawrap.reference import positive_grid

    if mechanism.truncation is None:
        raise ValueError("exact_posterior needs a truncated release (gamma_exponential.laplace)")
    lower, upper = mechanism.truncation
    s_dp = float(np.asarray(s_dp, dtype=float).ravel()[0])
    family = None if mechanism.noise is None else mechanism.noise.family
    if family == "laplace":
        scale = float(mechanism.noise.scale[0])

        noise = ("laplace", scale)

        def noise_log_pdf(x):
            return -abs(x) / scale - math.log(2.0 * scale)
        reach = 60.0 * scale
    elif family == "gaussian":
        sigma = float(mechanism.noise.scale[0])

        noise = ("gaussian", sigma)

        def noise_log_pdf(x):
            return stats.norm.logpdf(x, 0.0, sigma)
        reach = 40.0 * sigma
    else:
        raise ValueError(f"exact_posterior supports Laplace and Gaussian noise (a continuous "
                         f"noise law, mechanism.noise), got {mechanism.name}")
    spread = n * upper + reach + abs(s_dp)

    def log_posterior(lam):
        q = np.exp(-lam * lower) - np.exp(-lam * upper)
        with np.errstate(divide="ignore"):
            atom = np.exp(n * np.log1p(-q) + noise_log_pdf(s_dp))
        log_prior = stats.gamma.logpdf(lam, alpha, scale=1.0 / beta)
        dens = _release_density(lam, s_dp, n, lower, upper, noise, spread, atom,
                                prior=np.exp(log_prior - np.max(log_prior))) + atom
        with np.errstate(divide="ignore", invalid="ignore"):
            log_lik = np.where(dens > 0, np.log(np.maximum(dens, 1e-300)), -np.inf)
        return log_prior + log_lik

    # The mass may sit in two places of very different widths (a release near zero: a mode
    # at lam ~ 0.003 where every record falls beyond the bound, one at lam ~ 3.5 where they
    # all fall inside and are small): an evenly spaced grid over the prior's range put one
    # point on the first and doubled its mass (issue 30). positive_grid finds both on a
    # log-spaced pass and tabulates each.
    smallest, largest = stats.gamma.ppf([1e-12, 1.0 - 1e-12], alpha, scale=1.0 / beta)
    return positive_grid(log_posterior, smallest, largest, points=points)
