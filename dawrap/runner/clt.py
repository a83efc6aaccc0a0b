"""What the central-limit approximation of the release's likelihood, as the release-informed
starts (:mod:`dawrap.runner.starts`) and the mode landscape (:mod:`dawrap.runner.modes`) use
it, takes from the mechanism: the variance of its noise per coordinate (:func:`noise_variance`,
which the missing information and the plausibility check use too), and the length of release
up to which the statistic's full covariance is used (:data:`FULL_COVARIANCE_UP_TO`). Below
both modules, so that the starts can build on the landscape.
"""
from __future__ import annotations

import warnings

import numpy as np

__all__ = ["noise_variance", "FULL_COVARIANCE_UP_TO"]

#: Releases longer than this are weighed with the covariance's diagonal only (the full one
#: costs O(size^2) per record and O(size^3) per candidate).
FULL_COVARIANCE_UP_TO = 32


def noise_variance(mechanism, rng=None, draws: int = 1000) -> np.ndarray | None:
    """Variance of each coordinate of the mechanism's noise: the closed form when the
    mechanism has one (:meth:`dawrap.Mechanism.noise_variance`), else estimated from ``draws``
    noise draws (``rng`` defaults to a fixed seed). ``None`` when the mechanism cannot draw
    releases, its statistic depends on the release or its release is not the statistic plus
    noise (``mechanism.additive``)."""
    if mechanism.depends_on_release or not mechanism.additive:
        return None
    known = mechanism.noise_variance()
    if known is not None:
        return np.asarray(known, dtype=np.float64).reshape(mechanism.size)
    if not mechanism.can_draw_releases:
        return None
    rng = np.random.default_rng(20220101) if rng is None else rng
    zero = np.zeros(mechanism.size)
    try:
        return np.var([mechanism.release_given_total(rng, zero) for _ in range(draws)], axis=0)
    except Exception as err:  # noqa: BLE001 - the user's draw_release, called on a zero total
        # Only a starting value and the interweaving decision rest on this estimate: a
        # draw_release that cannot take a zero total must not stop a run that never needed it.
        warnings.warn(f"could not estimate the noise variance from draw_release at a zero "
                      f"total ({type(err).__name__}: {err}); chains start at prior draws and "
                      f"interweaving stays off unless asked for", RuntimeWarning, stacklevel=2)
        return None
