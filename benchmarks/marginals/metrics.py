"""What the benchmark measures: marginal error, the downstream regression, combining rules.

* ``tv``: total-variation distance 0.5 * sum |p - q| between two marginal distributions.
* ``logistic_regression``: maximum likelihood by Newton's method, standard errors from the
  inverse observed information (what ``statsmodels.GLM(..., Binomial()).fit()`` reports).
* ``downstream_design``: NAPSU-MQ's downstream analysis on Adult (experiments repository,
  ``adult_reduced_problem.py``): income > 50K on an intercept, age (the midpoint of its
  bin), race (dummies, White the reference) and gender (Male); coefficients in that order.
* Combining rules for m synthetic datasets with estimates q_i and variance estimates u_i,
  q_bar = mean q_i, b = sample variance of q_i (ddof 1), u_bar = mean u_i:

  - ``fully_synthetic`` (Raghunathan, Reiter & Rubin 2003, J. Official Statistics 19(1)):
    T = (1 + 1/m) b - u_bar, t interval with nu = (m - 1) (1 - u_bar / ((1 + 1/m) b))^2.
    When T <= 0 the adjusted variance T* = (n_syn / n) u_bar (Reiter 2002, J. Official
    Statistics 18(4)) is used, as NAPSU-MQ does (Räisä et al. 2023, twinify's
    ``rubins_rules.conf_int_distribution(use_nonnegative_variance=True)``), with the same nu.
    Valid for datasets drawn afresh from the posterior predictive (each from its own
    posterior draw of the distribution), NAPSU-MQ's synthetic data.
  - ``missing_data`` (Rubin 1987): T = u_bar + (1 + 1/m) b, nu = (m - 1) (1 + u_bar /
    ((1 + 1/m) b))^2: for imputations of the confidential records themselves, targeting the
    population parameter.
  - ``posterior_draws``: T = (1 + 1/m) b, nu = m - 1: for imputations of the confidential
    records, targeting the confidential data's own estimate (the q_i are then posterior draws
    of it).
  - ``as_if_real``: one dataset analysed as if it were the confidential data (the naive
    analysis): q_1 with variance u_1 (rescaled by n_syn / n when the sizes differ), normal
    interval.
"""
from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["tv", "logistic_regression", "downstream_design", "COEFFICIENTS", "combine",
           "RULES"]

RACE_LEVELS = ("Amer-Indian-Eskimo", "Asian-Pac-Islander", "Black", "Other")
COEFFICIENTS = ("intercept", "age") + tuple(f"race={r}" for r in RACE_LEVELS) + ("gender=Male",)
RULES = ("fully_synthetic", "missing_data", "posterior_draws", "as_if_real")


def tv(p: np.ndarray, q: np.ndarray) -> float:
    """Total-variation distance between two distributions (each normalised to sum 1)."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    return 0.5 * float(np.abs(p / p.sum() - q / q.sum()).sum())


def downstream_design(codes: np.ndarray, attributes, levels):
    """(X, y) of NAPSU-MQ's logistic regression from integer-coded Adult records."""
    from adult import interval_midpoint

    col = {a: codes[:, attributes.index(a)] for a in ("income", "age", "race", "gender")}
    lv = {a: levels[attributes.index(a)] for a in ("income", "age", "race", "gender")}
    y = (col["income"] == lv["income"].index(">50K")).astype(np.float64)
    age = np.array([interval_midpoint(s) for s in lv["age"]])[col["age"]]
    race = [(col["race"] == lv["race"].index(r)).astype(np.float64) for r in RACE_LEVELS]
    male = (col["gender"] == lv["gender"].index("Male")).astype(np.float64)
    X = np.column_stack([np.ones(len(y)), age] + race + [male])
    return X, y


def logistic_regression(X: np.ndarray, y: np.ndarray, max_iter: int = 100):
    """MLE and standard errors; NaNs if Newton's method does not converge (e.g. separation)."""
    beta = np.zeros(X.shape[1])
    for _ in range(max_iter):
        eta = X @ beta
        p = 1.0 / (1.0 + np.exp(-eta))
        w = p * (1.0 - p)
        info = X.T @ (X * w[:, None])
        try:
            step = np.linalg.solve(info, X.T @ (y - p))
        except np.linalg.LinAlgError:
            break
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10 * (1.0 + np.max(np.abs(beta))):
            cov = np.linalg.inv(info)
            if np.all(np.isfinite(cov)) and np.max(np.abs(beta)) < 30:
                return beta, np.sqrt(np.diag(cov))
            break
    return np.full(X.shape[1], np.nan), np.full(X.shape[1], np.nan)


def combine(q: np.ndarray, u: np.ndarray, rule: str, n_syn: int, n: int):
    """Estimate, variance and degrees of freedom of one coefficient under ``rule``.

    ``q`` and ``u`` hold the m estimates and variance estimates (datasets where the
    regression failed are dropped before, and counted by the caller).
    """
    q = np.asarray(q, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    m = q.size
    if rule == "as_if_real":
        return float(q[0]), float(u[0]) * n_syn / n, np.inf
    if m < 2:
        raise ValueError(f"rule {rule!r} needs m >= 2 datasets, got {m}")
    qbar, b, ubar = q.mean(), q.var(ddof=1), u.mean()
    if rule == "fully_synthetic":
        T = (1 + 1 / m) * b - ubar
        nu = (m - 1) * (1 - ubar / ((1 + 1 / m) * b)) ** 2
        if T <= 0:
            T = n_syn / n * ubar
        return float(qbar), float(T), float(nu)
    if rule == "missing_data":
        T = ubar + (1 + 1 / m) * b
        return float(qbar), float(T), float((m - 1) * (1 + ubar / ((1 + 1 / m) * b)) ** 2)
    if rule == "posterior_draws":
        return float(qbar), float((1 + 1 / m) * b), float(m - 1)
    raise ValueError(f"rule must be one of {RULES}, got {rule!r}")


def interval(estimate: float, variance: float, nu: float, level: float) -> tuple[float, float]:
    """Central ``level`` interval of a t (normal when nu is infinite) with that scale."""
    z = stats.norm.ppf(0.5 + level / 2) if not np.isfinite(nu) else stats.t.ppf(0.5 + level / 2, nu)
    half = z * np.sqrt(variance)
    return estimate - half, estimate + half
