r"""Exact samplers for integer-valued noise (Canonne, Kamath & Steinke 2020).

Floating-point noise leaks: the set of doubles a naive Laplace sampler can output depends on
the value it is added to (Mironov 2012). These samplers use only integer arithmetic on exact
rationals and uniform integers, from the operating system's cryptographic source by default,
so a release made with them carries exactly the stated guarantee:

* :func:`discrete_laplace`: :math:`P(z) \propto e^{-|z|/\text{scale}}` (the two-sided
  geometric of ``dw.Geometric``; OpenDP's Laplace on integers);
* :func:`discrete_gaussian`: :math:`P(z) \propto e^{-z^2/(2\sigma^2)}` (``dw.DiscreteGaussian``;
  OpenDP's Gaussian on integers).

Parameters are converted to exact fractions from their decimal representation
(``Fraction(str(x))``), so ``0.1`` means exactly one tenth.

Only the parameters (scale, sigma) enter the arithmetic, never the value the noise is added
to: a draw's running time and every error depend on the parameters and the random source
alone, and a release adds the draw to the confidential integer afterwards.
"""
from __future__ import annotations

import math
import secrets
from fractions import Fraction

import numpy as np

__all__ = ["discrete_laplace", "discrete_gaussian", "as_fraction"]

_SYSTEM = secrets.SystemRandom()


def as_fraction(value) -> Fraction:
    """An exact positive fraction from a number's decimal representation.

    Parameters
    ----------
    value : float, int, str or Fraction
        A finite positive number; a string such as ``"1/3"`` is read exactly.

    Returns
    -------
    fractions.Fraction

    Examples
    --------
    >>> from dawrap.mechanisms.discrete import as_fraction
    >>> as_fraction(0.1), as_fraction("1/3")        # 0.1 is one tenth, not the double
    (Fraction(1, 10), Fraction(1, 3))
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"expected a positive number, got {value!r}")
    try:  # a string such as "1/3" is taken exactly, as Fraction reads it
        fraction = value if isinstance(value, Fraction) else Fraction(str(value))
    except (ValueError, ZeroDivisionError):  # "nan", "inf", "1/0", not a number
        raise ValueError(f"expected a finite positive number, got {value!r}") from None
    if fraction <= 0:
        raise ValueError(f"expected a positive number, got {value!r}")
    return fraction


def _bernoulli(p: Fraction, rng) -> bool:
    return rng.randrange(p.denominator) < p.numerator


def _bernoulli_exp_small(gamma: Fraction, rng) -> bool:
    """Bernoulli(exp(-gamma)) for 0 <= gamma <= 1 (von Neumann's method, exact)."""
    k = 1
    while _bernoulli(gamma / k, rng):
        k += 1
    return k % 2 == 1


def _bernoulli_exp(gamma: Fraction, rng) -> bool:
    """Bernoulli(exp(-gamma)) for any gamma >= 0."""
    while gamma > 1:
        if not _bernoulli_exp_small(Fraction(1), rng):
            return False
        gamma -= 1
    return _bernoulli_exp_small(gamma, rng)


def discrete_laplace(scale, rng=None) -> int:
    """One draw with :math:`P(z) \\propto e^{-|z|/\\text{scale}}` (Algorithm 2 of Canonne et al.).

    Parameters
    ----------
    scale : float, int, str or Fraction
        The noise scale, taken exactly (:func:`as_fraction`).
    rng : random.Random or secrets.SystemRandom, optional
        The source of uniform integers (its ``randrange``); by default the operating
        system's cryptographic source. A seeded ``random.Random`` is for tests only.

    Returns
    -------
    int

    Examples
    --------
    The mean is 0 and the variance :math:`2a/(1-a)^2`, :math:`a = e^{-1/\\text{scale}}`
    (7.83 at scale 2):

    >>> import random
    >>> import numpy as np
    >>> from dawrap.mechanisms.discrete import discrete_laplace
    >>> rng = random.Random(1)
    >>> z = np.array([discrete_laplace(2, rng) for _ in range(4000)])
    >>> bool(abs(z.mean()) < 4 * np.sqrt(7.83 / 4000))
    True
    >>> isinstance(discrete_laplace(2), int)            # the cryptographic source
    True
    """
    rng = rng or _SYSTEM
    scale = as_fraction(scale)
    # Lap_Z(t / s) in the paper's notation: scale = t / s.
    t, s = scale.numerator, scale.denominator
    while True:
        u = rng.randrange(t)
        if not _bernoulli_exp(Fraction(u, t), rng):
            continue
        v = 0
        while _bernoulli_exp(Fraction(1), rng):
            v += 1
        y = (u + t * v) // s
        negative = _bernoulli(Fraction(1, 2), rng)
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(sigma, rng=None) -> int:
    """One draw with :math:`P(z) \\propto e^{-z^2/(2\\sigma^2)}` (Algorithm 3 of Canonne et al.).

    Parameters
    ----------
    sigma : float, int, str or Fraction
        The scale, taken exactly (:func:`as_fraction`).
    rng : random.Random or secrets.SystemRandom, optional
        As for :func:`discrete_laplace`.

    Returns
    -------
    int

    Examples
    --------
    >>> import random
    >>> import numpy as np
    >>> from dawrap.mechanisms.discrete import discrete_gaussian
    >>> rng = random.Random(1)
    >>> z = np.array([discrete_gaussian(1.5, rng) for _ in range(4000)])
    >>> bool(abs(z.mean()) < 4 * 1.5 / np.sqrt(4000))    # variance about sigma^2 = 2.25
    True
    """
    rng = rng or _SYSTEM
    sigma2 = as_fraction(sigma) ** 2
    # t = floor(sigma) + 1 is the efficient choice; any t >= 1 gives the exact distribution
    # (the acceptance step corrects for it). The float square root is kept, so seeded draws
    # do not change; where sigma^2 is beyond float64 the exact integer square root is used
    # (floor(sqrt(floor(a))) = floor(sqrt(a))).
    try:
        t = int(sigma2 ** 0.5) + 1
    except OverflowError:
        t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    while True:
        y = discrete_laplace(Fraction(t), rng)
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if _bernoulli_exp(gamma, rng):
            return y
