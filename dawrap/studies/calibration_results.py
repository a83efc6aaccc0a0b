"""The outcome of a calibration study (:func:`dawrap.studies.calibration.calibrate`): ranks,
coverage, the binomial coverage tests and the verdict, as tables, an ``xarray.Dataset`` and
plots. The statistics are described in :mod:`dawrap.studies.calibration`.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy import stats

from .bands import ecdf_inside

__all__ = ["Calibration", "CoverageTest", "ks_uniform"]


class CoverageTest(NamedTuple):
    """Coverage of one sampler's central intervals, from the ESS-thinned ranks, tested against
    the nominal levels (two-sided exact binomial test, each level at ``alpha / len(levels)``).

    Examples
    --------
    Of the study ``cal`` of the :class:`Calibration` example:

    >>> test = cal.coverage_test()["naive"]
    >>> test.levels, test.trials, test.covered.shape
    ((0.5, 0.8, 0.9, 0.95), 20, (4,))
    """
    levels: tuple
    trials: int
    covered: np.ndarray     # trials whose interval covered the truth, per level
    coverage: np.ndarray    # covered / trials
    p_value: np.ndarray     # binomial test against the level
    passed: np.ndarray      # p_value >= alpha / len(levels)


class Calibration:
    """The outcome of :func:`calibrate`: per method and trial, the ESS-thinned rank of the
    true value (``rank`` of ``thinned`` draws), its jittered uniform version ``pit``, the
    unthinned posterior ``quantile``, the bulk ``ess`` and interval coverage (``covered``,
    one column per level); ``theta`` are the true values. ``dataset`` is the same as an
    ``xarray.Dataset`` (dims ``sampler``, ``trial``, ``level``; not ``method``, which would
    clash with the ``method=`` argument of xarray's ``sel``).

    Printed, it shows the table of KS statistics, coverage and verdicts. The examples of its
    methods continue the one below: ``cal`` is its 20-trial study.

    Parameters
    ----------
    rows : list of dict
        One per trial, as a study's store holds them (built by :func:`calibrate`).
    methods : sequence of str
        The methods studied.
    levels : sequence of float
        The credible levels.
    settings : dict
        The study's settings, kept as the dataset's attributes.

    Examples
    --------
    >>> import dawrap as dw
    >>> from dawrap.models import beta_binomial
    >>> cal = dw.calibrate(beta_binomial.model(), beta_binomial.laplace(epsilon=0.5), n=50,
    ...                    methods=["naive"], trials=20, seed=1, executor="serial",
    ...                    sample_kwargs={"draws": 100, "chains": 1}, progress=False)
    >>> cal.methods, cal.theta.shape, cal.pit["naive"].shape
    (['naive'], (20,), (20,))
    >>> cal.dataset["covered"].dims
    ('sampler', 'trial', 'level')
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()                 # for the files the examples below write
    """

    def __init__(self, rows: list, methods: Sequence[str], levels: Sequence[float],
                 settings: dict):
        self.methods, self.levels, self.settings = list(methods), tuple(levels), settings
        self.theta = np.array([r["theta"] for r in rows])
        for key, dtype in (("rank", int), ("thinned", int), ("ess", float), ("pit", float),
                           ("quantile", float), ("covered", bool)):
            setattr(self, key, {m: np.array([r[m][key] for r in rows], dtype=dtype)
                                for m in self.methods})

    def ks(self) -> dict:
        """``{method: (KS statistic, p-value)}`` of the thinned ranks against the uniform.

        Returns
        -------
        dict of str -> (float, float)

        Examples
        --------
        >>> statistic, p_value = cal.ks()["naive"]
        >>> bool(0.0 <= statistic <= 1.0 and 0.0 <= p_value <= 1.0)
        True
        """
        return {m: ks_uniform(self.pit[m]) for m in self.methods}

    def coverage(self) -> dict:
        """``{method: array}``: the fraction of trials whose central interval between the
        quantiles of the raw draws, at each of :attr:`levels`, covered the true value. Its
        ends carry Monte Carlo error, which lowers it below the level for short chains;
        :meth:`coverage_test` uses the thinned ranks instead.

        Returns
        -------
        dict of str -> ndarray of shape (levels,)

        Examples
        --------
        >>> cal.coverage()["naive"].shape                   # one per level
        (4,)
        """
        return {m: self.covered[m].mean(axis=0) for m in self.methods}

    def thinned_covered(self) -> dict:
        r"""``{method: (trials, levels) bool}``: whether the central interval at each level
        covered the truth, read from the ESS-thinned, jittered rank (:math:`|U - 1/2| \le
        c/2`): exactly Bernoulli(c) per trial for a calibrated sampler.

        Returns
        -------
        dict of str -> ndarray of shape (trials, levels), bool

        Examples
        --------
        >>> cal.thinned_covered()["naive"].shape
        (20, 4)
        """
        c = np.asarray(self.levels)
        return {m: np.abs(self.pit[m][:, None] - 0.5) <= c[None, :] / 2 for m in self.methods}

    def coverage_test(self, alpha: float = 0.05) -> dict:
        """``{method: CoverageTest}``: thinned-rank coverage per level, the exact two-sided
        binomial test against the level, and whether it passes at ``alpha / len(levels)``.

        Parameters
        ----------
        alpha : float
            The test's level, split over the credible levels (Bonferroni).

        Returns
        -------
        dict of str -> CoverageTest

        Examples
        --------
        >>> test = cal.coverage_test(alpha=0.05)["naive"]
        >>> test.trials, test.passed.shape                # passed: one per level
        (20, (4,))
        """
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        out = {}
        for m, covered in self.thinned_covered().items():
            trials = covered.shape[0]
            counts = covered.sum(axis=0)
            p = np.array([stats.binomtest(int(k), trials, c).pvalue if trials else 1.0
                          for k, c in zip(counts, self.levels)])
            out[m] = CoverageTest(self.levels, trials, counts, counts / max(trials, 1), p,
                                  p >= alpha / len(self.levels))
        return out

    def inside_band(self, alpha: float = 0.05) -> dict:
        """``{method: bool}``: whether the rank ECDF stays in the simultaneous band.

        Parameters
        ----------
        alpha : float
            One minus the band's simultaneous level.

        Returns
        -------
        dict of str -> bool

        Examples
        --------
        >>> sorted(cal.inside_band(alpha=0.05))
        ['naive']
        """
        return {m: ecdf_inside(self.pit[m], alpha) for m in self.methods}

    def verdict(self, alpha: float = 0.05) -> dict:
        """``{method: bool}``: calibrated by both checks, with ``alpha`` split between them:
        the rank ECDF inside the simultaneous ``1 - alpha/2`` band, and coverage passing at
        every level (:meth:`coverage_test` at ``alpha / 2``).

        Parameters
        ----------
        alpha : float
            The probability of calling a calibrated sampler miscalibrated (at most).

        Returns
        -------
        dict of str -> bool

        Examples
        --------
        >>> type(cal.verdict()["naive"])    # 20 trials: a demonstration, not a study
        <class 'bool'>
        """
        band, cover = self.inside_band(alpha / 2), self.coverage_test(alpha / 2)
        return {m: bool(band[m] and np.all(cover[m].passed)) for m in self.methods}

    def __repr__(self) -> str:
        alpha = 0.05
        levels = "".join(f"{f'cover {c:g}':>12s}" for c in self.levels)
        lines = [f"{'method':18s}{'KS':>7s}{'p':>9s}{levels}{'in band':>9s}  calibrated"]
        band, tests = self.inside_band(alpha / 2), self.coverage_test(alpha / 2)
        raw, verdict = self.coverage(), self.verdict(alpha)
        for m, (ks, p) in self.ks().items():
            t = tests[m]
            cells = "".join(f"{f'{c:.3f}' + ('' if ok else '*'):>12s}"
                            for c, ok in zip(t.coverage, t.passed))
            why = [] if band[m] else ["band"]
            why += [] if np.all(t.passed) else ["coverage"]
            lines.append(f"{m:18s}{ks:7.3f}{p:9.2g}{cells}{'yes' if band[m] else 'NO':>9s}  "
                         + ("yes" if verdict[m] else f"NO ({', '.join(why)})"))
        lines.append(f"Coverage from the ESS-thinned ranks; * fails the exact binomial test "
                     f"(p < {alpha / 2 / len(self.levels):.3g} per level). Verdict at "
                     f"{alpha:g}: ECDF band at {alpha / 2:g} and coverage, Bonferroni.")
        lines.append("Intervals between raw-draw quantiles (their ends carry Monte Carlo "
                     "error; not tested): " + "; ".join(
                         f"{m} " + " ".join(f"{c:.3f}" for c in raw[m]) for m in self.methods))
        return f"Calibration over {self.theta.size} trials\n" + "\n".join(lines)

    @property
    def dataset(self):
        import xarray as xr

        data = {"theta": ("trial", self.theta)}
        for key in ("rank", "thinned", "ess", "pit", "quantile"):
            data[key] = (("sampler", "trial"), np.stack([getattr(self, key)[m]
                                                        for m in self.methods]))
        data["covered"] = (("sampler", "trial", "level"),
                           np.stack([self.covered[m] for m in self.methods]))
        thinned, tests = self.thinned_covered(), self.coverage_test(0.025)
        verdict = self.verdict(0.05)
        data["thinned_covered"] = (("sampler", "trial", "level"),
                                   np.stack([thinned[m] for m in self.methods]))
        for key in ("coverage", "p_value", "passed"):
            data[f"coverage_{key}" if key != "coverage" else "coverage"] = (
                ("sampler", "level"), np.stack([getattr(tests[m], key) for m in self.methods]))
        data["calibrated"] = ("sampler", np.array([verdict[m] for m in self.methods]))
        return xr.Dataset(data, coords={"sampler": self.methods, "level": list(self.levels),
                                        "trial": np.arange(self.theta.size)},
                          attrs={**{k: str(v) for k, v in self.settings.items()},
                                 "verdict": "calibrated: ECDF band at 0.025 and coverage "
                                            "(exact binomial, 0.025 / levels) both pass"})

    def to_netcdf(self, path) -> None:
        """Write :attr:`dataset` to a netCDF file.

        Parameters
        ----------
        path : str or path
            The file to write.

        Examples
        --------
        >>> import xarray as xr
        >>> cal.to_netcdf(os.path.join(folder, "calibration.nc"))
        >>> xr.open_dataset(os.path.join(folder, "calibration.nc"))["pit"].shape
        (1, 20)
        """
        self.dataset.to_netcdf(path)

    def plot_ranks(self, path, bins: int = 20):
        """Rank histograms, one panel per method (needs matplotlib).

        Parameters
        ----------
        path : str or path
            The image to write (its suffix chooses the format).
        bins : int
            Bins of each method's histogram over [0, 1].

        Returns
        -------
        path

        Examples
        --------
        >>> path = cal.plot_ranks(os.path.join(folder, "ranks.png"), bins=10)  # 2 trials a bin
        >>> os.path.getsize(path) > 0
        True
        """
        from .plots import plot_ranks

        return plot_ranks(self.pit, path, bins)

    def plot_ecdf(self, path, alpha: float = 0.05):
        """ECDF-difference plot with simultaneous ``1 - alpha`` bands (needs matplotlib).

        Parameters
        ----------
        path : str or path
            The image to write.
        alpha : float
            One minus the bands' simultaneous level.

        Returns
        -------
        path

        Examples
        --------
        >>> path = cal.plot_ecdf(os.path.join(folder, "ecdf.png"))
        >>> os.path.getsize(path) > 0
        True
        """
        from .plots import plot_ecdf_difference

        return plot_ecdf_difference(self.pit, path, alpha)


def ks_uniform(u: np.ndarray) -> tuple[float, float]:
    """Kolmogorov-Smirnov statistic and p-value of ``u`` against the uniform on [0, 1].

    Parameters
    ----------
    u : array_like
        Values in [0, 1].

    Returns
    -------
    (float, float)

    Examples
    --------
    >>> from dawrap.studies.calibration_results import ks_uniform
    >>> round(ks_uniform([0.125, 0.375, 0.625, 0.875])[0], 3)      # the best a sample of 4 does
    0.125
    """
    result = stats.kstest(np.asarray(u, dtype=float), "uniform")
    return float(result.statistic), float(result.pvalue)
