r"""Compiled random draws for conjugate updates that return NaN instead of hanging.

numba's ``Generator.beta`` never returns for a NaN or a tiny shape (below about 1e-10; it
rejects almost every proposal), and ``Generator.gamma`` never returns for NaN, where NumPy
returns at once. A conjugate update whose arguments went bad (a corrupted database, a prior
hyperparameter of 1e-20) would freeze the whole run inside compiled code, beyond the reach of
Ctrl-C. These versions, for use inside ``numba.njit`` kernels such as ``draw_theta``, return
NaN for invalid arguments, which the sampler reports as a non-finite theta naming
``draw_theta`` and the iteration, and draw tiny shapes exactly in log space. For valid,
ordinary arguments they are the generator's own draws, bit for bit.

Examples
--------
>>> import numba
>>> import numpy as np
>>> import dawrap as dw
>>> @numba.njit
... def draw_theta(rng, theta, x, stats):          # p | x ~ Beta(1 + k, 1 + n - k)
...     return np.array([dw.random.beta(rng, 1 + stats[0], 1 + x.shape[0] - stats[0])])
"""
from __future__ import annotations

import math

import numba

__all__ = ["beta", "gamma"]

#: Below this shape the beta draw goes through log-gamma draws: numba's own algorithm slows
#: down sharply there (0.006 s per draw at 1e-8) and never ends below about 1e-10.
SMALL_SHAPE = 1e-3


@numba.njit(nogil=True, cache=True)
def _log_gamma_draw(rng, shape):
    """``log G`` for ``G ~ Gamma(shape, 1)``, accurate for any ``shape > 0``: for ``shape < 1``
    by ``G = G' U^{1/shape}``, ``G' ~ Gamma(shape + 1, 1)`` (Marsaglia & Tsang 2000), whose
    logarithm does not underflow when ``G`` itself would."""
    if shape >= 1.0:
        return math.log(rng.gamma(shape, 1.0))
    return math.log(rng.gamma(shape + 1.0, 1.0)) + math.log(rng.random()) / shape


@numba.njit(nogil=True, cache=True)
def beta(rng, a, b):
    """One ``Beta(a, b)`` draw; NaN unless ``a`` and ``b`` are finite and positive.

    Parameters
    ----------
    rng : numpy.random.Generator
        Inside compiled code, the generator the sampler passes to ``draw_theta``.
    a, b : float
        The shapes.

    Returns
    -------
    float
        ``rng.beta(a, b)`` for shapes of at least 1e-3; below, an exact draw in log space.

    Examples
    --------
    It is callable from Python too:

    >>> import numpy as np
    >>> import dawrap as dw
    >>> draw = dw.random.beta(np.random.default_rng(5), 2.0, 3.0)
    >>> draw == np.random.default_rng(5).beta(2.0, 3.0)       # the generator's own draw
    True
    >>> dw.random.beta(np.random.default_rng(5), np.nan, 3.0)
    nan
    """
    if not (0.0 < a < math.inf and 0.0 < b < math.inf):
        return math.nan
    if a >= SMALL_SHAPE and b >= SMALL_SHAPE:
        return rng.beta(a, b)
    # X = Ga / (Ga + Gb) = 1 / (1 + exp(log Gb - log Ga)), in log space for tiny shapes.
    diff = _log_gamma_draw(rng, b) - _log_gamma_draw(rng, a)
    if diff > 0.0:
        e = math.exp(-diff)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(diff))


@numba.njit(nogil=True, cache=True)
def gamma(rng, shape, scale):
    """One ``Gamma(shape, scale)`` draw; NaN unless both are finite and positive.

    Parameters
    ----------
    rng : numpy.random.Generator
    shape, scale : float

    Returns
    -------
    float
        ``rng.gamma(shape, scale)``, or NaN.

    Examples
    --------
    >>> import numpy as np
    >>> import dawrap as dw
    >>> draw = dw.random.gamma(np.random.default_rng(5), 2.0, 0.5)
    >>> draw == np.random.default_rng(5).gamma(2.0, 0.5)       # the generator's own draw
    True
    >>> dw.random.gamma(np.random.default_rng(5), -1.0, 0.5)
    nan
    """
    if not (0.0 < shape < math.inf and 0.0 < scale < math.inf):
        return math.nan
    return rng.gamma(shape, scale)
