"""A release of noisy marginal tables, the one object every method of the benchmark is given.

Imported by the orchestrator (dawrap's environment) and by the peer runners (their own
virtual environments), so it needs numpy only.

A release is a list of marginals, each an attribute subset with its own noise:

* ``gaussian``  : cell + N(0, scale^2)                                   (zCDP / (eps, delta))
* ``laplace``   : cell + Laplace(0, scale), density exp(-|z|/scale)/(2 scale)   (eps-DP)
* ``geometric`` : cell + two-sided geometric, P(z) proportional to exp(-|z|/scale) (eps-DP)

Neighbouring databases differ in one record's value (n is public, as in NAPSU-MQ and in
dawrap's record sampler): one record leaves one cell of each marginal and enters another, so
a marginal's L1 sensitivity is 2 and its L2 sensitivity is sqrt(2). Hence

* Gaussian marginals together are a Gaussian mechanism with sensitivity-to-noise ratio
  mu = sqrt(sum_j 2 / sigma_j^2) (mu-GDP, Dong, Roth & Su 2022): rho-zCDP with
  rho = mu^2 / 2 (Bun & Steinke 2016), and (eps, delta)-DP by the analytic Gaussian
  mechanism's delta(eps) (Balle & Wang 2018, Theorem 8), the formula NAPSU-MQ uses;
* Laplace and geometric marginals are eps-DP with eps = sum_j 2 / b_j (basic composition).

The file format is one ``.npz``: ``spec`` (a JSON string: attributes, levels, n, marginals
with attrs/noise/scale) and ``value_k`` (the k-th marginal's noisy cells, flattened in C
order over its attributes in the order given).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Marginal", "Release", "noise_variance", "draw_release", "marginal_counts",
           "gaussian_mu", "gaussian_delta", "gaussian_sigma_for", "privacy"]

NOISES = ("gaussian", "laplace", "geometric")


@dataclass(frozen=True)
class Marginal:
    """One released table: the attribute subset ``attrs`` with ``noise`` of ``scale``."""

    attrs: tuple[str, ...]
    noise: str
    scale: float

    def __post_init__(self):
        object.__setattr__(self, "attrs", tuple(self.attrs))
        if self.noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {self.noise!r}")
        if not self.scale > 0:
            raise ValueError(f"scale must be > 0, got {self.scale!r}")
        if len(set(self.attrs)) != len(self.attrs) or not self.attrs:
            raise ValueError(f"attrs must be distinct and non-empty, got {self.attrs!r}")


def noise_variance(noise: str, scale: float) -> float:
    """Variance of one cell's noise."""
    if noise == "gaussian":
        return scale**2
    if noise == "laplace":
        return 2.0 * scale**2
    q = math.exp(-1.0 / scale)  # two-sided geometric: difference of two Geometric(1 - q)
    return 2.0 * q / (1.0 - q) ** 2


@dataclass
class Release:
    """Noisy marginals of ``n`` records over ``attributes`` with ``levels`` each."""

    attributes: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]
    n: int
    marginals: list[Marginal]
    values: list[np.ndarray] = field(default_factory=list)

    def shape(self, attrs) -> tuple[int, ...]:
        return tuple(len(self.levels[self.attributes.index(a)]) for a in attrs)

    def save(self, path: str) -> None:
        spec = {"attributes": list(self.attributes), "levels": [list(l) for l in self.levels],
                "n": int(self.n),
                "marginals": [{"attrs": list(m.attrs), "noise": m.noise, "scale": m.scale}
                              for m in self.marginals]}
        arrays = {f"value_{k}": np.asarray(v, dtype=np.float64) for k, v in enumerate(self.values)}
        np.savez(path, spec=np.array(json.dumps(spec)), **arrays)

    @classmethod
    def load(cls, path: str) -> "Release":
        with np.load(path) as f:
            spec = json.loads(str(f["spec"]))
            margs = [Marginal(tuple(m["attrs"]), m["noise"], float(m["scale"]))
                     for m in spec["marginals"]]
            values = [f[f"value_{k}"] for k in range(len(margs))]
        return cls(tuple(spec["attributes"]), tuple(tuple(l) for l in spec["levels"]),
                   int(spec["n"]), margs, values)


def marginal_counts(codes: np.ndarray, attributes, levels, attrs) -> np.ndarray:
    """Counts of the records ``codes`` (n, d) over ``attrs``, flattened in C order."""
    idx = [list(attributes).index(a) for a in attrs]
    shape = tuple(len(levels[i]) for i in idx)
    flat = np.ravel_multi_index(tuple(codes[:, i] for i in idx), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).astype(np.float64)


def _draw_noise(rng: np.random.Generator, noise: str, scale: float, size: int) -> np.ndarray:
    if noise == "gaussian":
        return rng.normal(0.0, scale, size)
    if noise == "laplace":
        return rng.laplace(0.0, scale, size)
    p = -math.expm1(-1.0 / scale)
    return (rng.geometric(p, size) - rng.geometric(p, size)).astype(np.float64)


def draw_release(codes, attributes, levels, marginals, rng: np.random.Generator) -> Release:
    """The true marginals of ``codes`` plus fresh noise: one release."""
    values = [marginal_counts(codes, attributes, levels, m.attrs)
              + _draw_noise(rng, m.noise, m.scale, int(np.prod([len(levels[list(attributes).index(a)]) for a in m.attrs])))
              for m in marginals]
    return Release(tuple(attributes), tuple(tuple(l) for l in levels), int(codes.shape[0]),
                   list(marginals), values)


def gaussian_mu(marginals) -> float:
    """Sensitivity-to-noise ratio of the Gaussian marginals together (L2 sensitivity sqrt(2))."""
    return math.sqrt(sum(2.0 / m.scale**2 for m in marginals if m.noise == "gaussian"))


def gaussian_delta(epsilon: float, mu: float) -> float:
    """delta(eps) of a Gaussian mechanism with sensitivity/sigma = mu (Balle & Wang 2018)."""
    if mu <= 0:
        return 0.0
    return (0.5 * math.erfc((epsilon / mu - mu / 2) / math.sqrt(2))
            - 0.5 * math.exp(epsilon) * math.erfc((epsilon / mu + mu / 2) / math.sqrt(2)))


def _bisect(fn, target: float, lo: float, hi: float) -> float:
    """For fn monotone on [lo, hi]: the end of the final bracket on the side where fn <= target.

    That side is the private one: the largest mu, or the smallest epsilon, whose delta is
    at most the target.
    """
    ok_low = fn(lo) <= target
    for _ in range(200):
        mid = (lo + hi) / 2
        if (fn(mid) <= target) == ok_low:
            lo = mid
        else:
            hi = mid
    return lo if ok_low else hi


def gaussian_sigma_for(epsilon: float, delta: float, count: int) -> float:
    """sigma giving (epsilon, delta)-DP to ``count`` Gaussian marginals of equal noise.

    The calibration NAPSU-MQ uses (``privacy_accounting.sigma`` with sensitivity
    sqrt(2 * count)): mu solved from delta(eps, mu) = delta by bisection.
    """
    mu = _bisect(lambda m: gaussian_delta(epsilon, m), delta, 0.0, 50.0)
    return math.sqrt(2.0 * count) / mu


def privacy(marginals, delta: float | None = None) -> dict:
    """The guarantee of a list of marginals (see the module docstring)."""
    out = {}
    gauss = [m for m in marginals if m.noise == "gaussian"]
    pure = [m for m in marginals if m.noise != "gaussian"]
    if gauss:
        mu = gaussian_mu(gauss)
        out["gaussian_rho_zcdp"] = mu**2 / 2
        if delta is not None:
            out["gaussian_epsilon"] = _bisect(lambda e: gaussian_delta(e, mu), delta, 0.0, 100.0)
            out["delta"] = delta
    if pure:
        out["pure_epsilon"] = sum(2.0 / m.scale for m in pure)
    return out
