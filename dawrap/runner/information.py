"""How much the noise hides: the fraction of missing information behind the automatic
interweaving decision (``dw.Record(interweave=None)``).
"""
from __future__ import annotations

import numpy as np

from .starts import noise_variance, record_variances

__all__ = ["missing_information"]


def missing_information(model, mechanism, n: int, priors: int = 5,
                        records: int = 2000, cells: str = "max") -> float | None:
    r"""The fraction of information about the released statistic that the noise removes,

    .. math:: \max_j \frac{v_j}{n\, \mathrm{Var}(t_j(x_i)) + v_j},

    with :math:`v_j` the noise variance of coordinate :math:`j` and the per-record variance
    of the statistic the median over ``priors`` prior draws of theta (``records`` simulated
    records each; fixed seeds, so the decision is reproducible). It is the rate at which
    plain data augmentation mixes in the linear-Gaussian case (0: the release is the
    confidential total; near 1: the noise swamps it). ``None`` when the mechanism cannot
    draw releases (no noise variance to estimate). Only the variances are used (the
    diagonal of the statistic's covariance), in O(size) memory; a sparse statistic costs
    O(records nnz + size) per prior draw. ``cells="median"`` takes the median over the
    coordinates instead of the maximum (the typical cell of a long release).
    """
    rng = np.random.default_rng(20220101)
    noise = noise_variance(mechanism, rng)
    if noise is None:
        return None
    spread = []
    for _ in range(priors):
        theta = model.pack(model.draw_prior(rng), "the theta returned by draw_prior")
        x = model.simulate(theta, min(n, records), seed=rng)
        spread.append(record_variances(x, np.zeros(mechanism.size), mechanism)[1])
    per_record = np.median(spread, axis=0)
    fraction = noise / (n * per_record + noise)
    return float(np.median(fraction) if cells == "median" else np.max(fraction))
