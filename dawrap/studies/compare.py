r"""Compare methods on one release: a tidy table, the ArviZ results, and an overlay plot.

>>> import os, tempfile
>>> import dawrap as dw
>>> from dawrap.models import beta_binomial
>>> model, mech, n = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5), 200
>>> s_dp = mech.release(model.simulate({"p": 0.3}, n, seed=1), seed=2)
>>> cmp = dw.compare(model, mech, s_dp, n, methods=("record", "suffstat", "naive"),
...                  draws=500, tune=250, seed=0, progress=False)
>>> len(cmp.table["ess_per_second"])       # one row per (method, scalar parameter)
3
>>> _ = cmp.plot(os.path.join(tempfile.mkdtemp(), "posteriors.png"),
...              exact={"p": beta_binomial.exact_posterior(mech, s_dp, n)})

Also :func:`mmd2`, the unbiased squared maximum mean discrepancy between two samples with a
Gaussian kernel (Gretton et al. 2012), the utility measure of Bernstein & Sheldon (2018).
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from .. import diagnostics
from .._checks import as_positive_float
from ..sampling import METHODS, sample

__all__ = ["compare", "Comparison", "mmd2"]

COLUMNS = ("method", "parameter", "mean", "sd", "q05", "q50", "q95", "ess_bulk", "ess_tail",
           "ess_per_second", "r_hat", "accept_rate", "wall_time")


class Comparison:
    """The outcome of :func:`compare`.

    Attributes
    ----------
    table : dict of str -> ndarray
        Columns :data:`COLUMNS`, one row per method and scalar parameter (vector parameters
        are flattened as ``name[i]``). ``accept_rate`` is the record sampler's mean record
        acceptance (NaN for other methods); ``wall_time`` and ``ess_per_second`` exclude
        compilation (a two-draw warm-up call compiles each method first).
    results : dict of str -> ArviZ object
        Each method's full output.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.5)
    >>> cmp = dw.compare(model, mech, 312.4, 1000, methods=("record", "naive"), draws=200,
    ...                  tune=100, chains=2, seed=0, progress=False)
    >>> cmp.table["method"].tolist(), cmp.table["parameter"].tolist()
    (['record', 'naive'], ['p', 'p'])
    >>> sorted(cmp.results)
    ['naive', 'record']

    Printed, it shows method, parameter, mean, sd, bulk ESS, ESS per second and R-hat. The
    example of :meth:`plot` continues this one.
    """

    def __init__(self, table: dict, results: dict):
        self.table, self.results = table, results

    def __repr__(self) -> str:
        head = f"{'method':12s}{'parameter':12s}{'mean':>10s}{'sd':>10s}{'ess_bulk':>10s}" \
               f"{'ess/s':>10s}{'r_hat':>7s}"
        rows = [f"{m:12s}{p:12s}{mu:10.4g}{sd:10.4g}{e:10.0f}{es:10.3g}{r:7.3f}"
                for m, p, mu, sd, e, es, r in zip(*(self.table[c] for c in (
                    "method", "parameter", "mean", "sd", "ess_bulk", "ess_per_second",
                    "r_hat")))]
        return "\n".join([head, *rows])

    def plot(self, path, exact: Mapping | None = None, bins: int = 60):
        """Overlay each method's posterior (histogram densities) per scalar parameter, with
        the exact density where ``exact`` gives one (``{name: object with .pdf}``). Needs
        matplotlib (``pip install matplotlib``). Writes ``path`` and returns it.

        Parameters
        ----------
        path : str or path
            The image to write.
        exact : dict of str -> distribution, optional
            Exact posteriors by parameter name, e.g. from a model's ``exact_posterior``.
        bins : int
            Histogram bins per method, over the range of its draws.

        Returns
        -------
        path

        Examples
        --------
        The posteriors of ``cmp``, the comparison of the :class:`Comparison` example, with
        the exact one:

        >>> import os, tempfile
        >>> exact = {"p": beta_binomial.exact_posterior(mech, 312.4, 1000)}
        >>> path = cmp.plot(os.path.join(tempfile.mkdtemp(), "posteriors.png"), exact=exact)
        >>> os.path.getsize(path) > 0
        True
        """
        from .plots import pyplot

        plt = pyplot()
        names = list(dict.fromkeys(self.table["parameter"]))
        fig, axes = plt.subplots(1, len(names), figsize=(4.5 * len(names), 3.4), squeeze=False)
        for ax, name in zip(axes[0], names):
            lows, highs = [], []
            for method, idata in self.results.items():
                draws = _scalar_draws(idata, name).ravel()
                lows.append(np.quantile(draws, 0.001))
                highs.append(np.quantile(draws, 0.999))
                ax.hist(draws, bins=bins, density=True, histtype="step", label=method)
            if exact and name in exact:
                grid = np.linspace(min(lows), max(highs), 400)
                ax.plot(grid, exact[name].pdf(grid), "k--", lw=1.2, label="exact")
            ax.set(title=name, xlabel=name, ylabel="posterior density")
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path


def _scalar_draws(idata, name: str) -> np.ndarray:
    base, _, index = name.partition("[")
    draws = diagnostics.group(idata, "posterior")[base].values
    draws = draws.reshape(draws.shape[0], draws.shape[1], -1)
    return draws[:, :, int(index[:-1]) if index else 0]


def compare(model, mechanism, s_dp, n: int, methods: Sequence[str] = ("record", "suffstat",
                                                                        "naive"),
            **sample_kwargs) -> Comparison:
    """Run each method on the same release and tabulate what it found.

    Parameters
    ----------
    model, mechanism, s_dp, n
        As for :func:`dawrap.sample`.
    methods : sequence of str
        Any of ``dawrap.METHODS``.
    **sample_kwargs
        Passed to every :func:`dawrap.sample` call (draws, tune, chains, seed, confidential).

    Returns
    -------
    Comparison

    Examples
    --------
    The README's demonstration: 100 records, epsilon 0.1 (noise sd 14 counts). The naive
    baseline, which takes the release for the count, is about three times too narrow:

    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> model, mech = beta_binomial.model(), beta_binomial.laplace(epsilon=0.1)
    >>> cmp = dw.compare(model, mech, 17.633, 100, methods=("record", "naive"), draws=500,
    ...                  tune=200, chains=2, seed=0, progress=False)
    >>> sd = dict(zip(cmp.table["method"].tolist(), cmp.table["sd"]))
    >>> bool(sd["naive"] < sd["record"] / 2)                   # exact sd 0.119, naive 0.038
    True
    """
    if isinstance(methods, str) or not methods or any(m not in METHODS for m in methods):
        raise ValueError(f"methods must be a non-empty list drawn from {METHODS}, got "
                         f"{methods!r}")
    results, rows = {}, []
    warm = {k: v for k, v in sample_kwargs.items()
            if k not in ("draws", "tune", "chains", "cores", "checkpoint", "resume")}
    for method in methods:
        # A tiny warm-up run compiles the method first, so ess_per_second measures sampling.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            sample(model, mechanism, s_dp, n, method=method, **{**warm, "draws": 2, "tune": 0,
                                                                 "chains": 1})
        began = time.perf_counter()
        idata = sample(model, mechanism, s_dp, n, method=method, **sample_kwargs)
        wall = time.perf_counter() - began
        results[method] = idata
        seconds = float(diagnostics.attrs(idata)["sampling_time"])
        stats = diagnostics.group(idata, "sample_stats") if "sample_stats" in \
            diagnostics.group_names(idata) else {}
        accept = float(stats["accept_rate"].values.mean()) if "accept_rate" in stats \
            else np.nan
        for name, shape in model.params.items():
            for i in range(int(np.prod(shape))):
                label = name if shape == () else f"{name}[{i}]"
                draws = _scalar_draws(idata, label)
                ess_bulk = diagnostics.ess(draws, "bulk")
                rows.append((method, label, draws.mean(), draws.std(ddof=1),
                             *np.quantile(draws, [0.05, 0.5, 0.95]), ess_bulk,
                             diagnostics.ess(draws, "tail"), ess_bulk / max(seconds, 1e-9),
                             diagnostics.rhat(draws) if draws.shape[0] > 1 else np.nan, accept,
                             wall))
    table = {c: np.array([r[k] for r in rows]) for k, c in enumerate(COLUMNS)}
    return Comparison(table, results)


def mmd2(p: np.ndarray, q: np.ndarray, bandwidth: float | None = None) -> float:
    r"""Unbiased estimate of :math:`\mathrm{MMD}^2(P, Q)` with a Gaussian kernel.

    .. math:: \frac{1}{m(m-1)}\sum_{i\ne j} k(p_i,p_j) + k(q_i,q_j) - k(p_i,q_j) - k(p_j,q_i)

    for equal-size samples (the longer one is cut to the shorter); ``k(a, b) =
    exp(-|a-b|^2 / (2 h^2))`` with ``h`` the median pairwise distance of the pooled sample by
    default (B&S use a standard normal kernel: pass ``bandwidth=1``). Zero in expectation when
    P = Q. Samples are ``(m,)`` or ``(m, d)``.

    Parameters
    ----------
    p, q : array_like of shape (m,) or (m, d)
        The two samples.
    bandwidth : float, optional
        The kernel's ``h``.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> import dawrap as dw
    >>> rng = np.random.default_rng(0)
    >>> p, p2, q = rng.normal(size=500), rng.normal(size=500), rng.normal(1.0, size=500)
    >>> bool(abs(dw.mmd2(p, p2)) < 0.01), bool(dw.mmd2(p, q) > 0.1)   # same law; shifted
    (True, True)
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    p = p[:, None] if p.ndim == 1 else p
    q = q[:, None] if q.ndim == 1 else q
    if p.ndim != 2 or q.ndim != 2 or p.shape[1] != q.shape[1]:
        raise ValueError(f"p and q must be samples of the same dimension, got shapes "
                         f"{p.shape} and {q.shape}")
    m = min(len(p), len(q))
    if m < 2:
        raise ValueError("p and q need at least 2 draws each")
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(q))):
        raise ValueError("p and q must be finite")
    p, q = p[:m], q[:m]
    if bandwidth is None:
        pooled = np.concatenate([p, q])
        sub = pooled[:: max(1, len(pooled) // 1000)]
        distances = np.sqrt(((sub[:, None, :] - sub[None, :, :]) ** 2).sum(-1))
        bandwidth = float(np.median(distances[np.triu_indices(len(sub), 1)])) or 1.0
    h = as_positive_float(bandwidth, "bandwidth")

    def kernel(a, b):
        return np.exp(-((a[:, None, :] - b[None, :, :]) ** 2).sum(-1) / (2 * h * h))

    kpp, kqq, kpq = kernel(p, p), kernel(q, q), kernel(p, q)
    off = ~np.eye(m, dtype=bool)
    return float((kpp[off].sum() + kqq[off].sum() - kpq[off].sum() - kpq.T[off].sum())
                 / (m * (m - 1)))
