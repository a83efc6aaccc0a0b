"""
Tutorial: your logistic-regression sampler, made private
========================================================

Run it with ``python examples/gallery/plot_private_logistic_regression.py``.

The story. You model a binary outcome y with two covariates x by logistic regression, and you
already have a random-walk Metropolis sampler for the non-private posterior (part 1 below,
ordinary numba code). Now the data curator will no longer give you the records: it publishes
only the sufficient-looking statistics sum_i y_i clamp(x_i) and sum_i y_i with Laplace noise
(epsilon-DP). Part 2 turns your sampler into one for p(beta | release) with dawrap: the same
log density, plus a model for the covariates and the mechanism. The sampler is exact
(Ju et al. 2022): it imputes the confidential records one at a time, accepting with the
mechanism's density ratio, and moves beta with your Metropolis step given the imputed data.
"""
import os

import arviz as az
import numba
import numpy as np

import dawrap as dw

P = 2            # covariates
PRIOR_SD = 2.0   # beta ~ N(0, 2^2 I)

# %%
# Part 1: what you already had (non-private)
# ------------------------------------------
# The log posterior of beta given the records, and a random-walk Metropolis sampler on it.


@numba.njit
def log_posterior(beta, records, stats):
    """log N(beta; 0, PRIOR_SD^2 I) + sum_i log Bernoulli(y_i; logistic(x_i . beta)).

    ``records`` rows are (y, x_1, x_2). ``stats`` is unused here: logistic regression has no
    low-dimensional sufficient statistic, so each call reads all n records (O(n)).
    """
    out = -0.5 * np.sum(beta * beta) / PRIOR_SD ** 2
    for i in range(records.shape[0]):
        eta = records[i, 1] * beta[0] + records[i, 2] * beta[1]
        # log sigma(eta) if y = 1, log(1 - sigma(eta)) if y = 0, computed stably
        out += records[i, 0] * eta - max(eta, 0.0) - np.log1p(np.exp(-abs(eta)))
    return out


def nonprivate_sampler(records, draws=4000, seed=0):
    """Your existing sampler: random-walk Metropolis on the confidential records."""
    rng = np.random.default_rng(seed)
    beta, lp, out = np.zeros(P), log_posterior(np.zeros(P), records, np.zeros(0)), []
    for _ in range(draws):
        proposal = beta + 0.15 * rng.standard_normal(P)
        lp_new = log_posterior(proposal, records, np.zeros(0))
        if np.log(rng.random()) < lp_new - lp:
            beta, lp = proposal, lp_new
        out.append(beta)
    return np.array(out)


# %%
# Part 2: the private version
# ---------------------------
# A model of a whole record (the covariates too: the sampler imputes them), the statistic the
# curator releases, and the same log density as the theta step.


@numba.njit
def draw_record(rng, beta, out):
    """One record from the model: x ~ N(0, I), y | x ~ Bernoulli(logistic(x . beta)). A data
    augmentation sampler imputes records, so the covariates need a model too."""
    out[1], out[2] = rng.standard_normal(), rng.standard_normal()
    eta = out[1] * beta[0] + out[2] * beta[1]
    out[0] = 1.0 if rng.random() < 1.0 / (1.0 + np.exp(-eta)) else 0.0


@numba.njit
def released(record, out):
    """What the curator sums and releases: y clamp(x_j, -1, 1) for each j, and y."""
    out[0] = record[0] * min(max(record[1], -1.0), 1.0)
    out[1] = record[0] * min(max(record[2], -1.0), 1.0)
    out[2] = record[0]


def private_model():
    return dw.Model(
        params={"beta": (P,)}, record_size=1 + P, draw_record=draw_record,
        # the line that reuses your sampler: the same log density, in an adaptive Metropolis
        # step that tunes its proposal during warm-up and is then frozen (so it stays exact)
        draw_theta=dw.kernels.adaptive_metropolis(log_posterior, initial_scale=0.15),
        draw_prior=lambda rng: rng.normal(0.0, PRIOR_SD, P))


def mechanism(epsilon):
    # Replacing one record moves each y clamp(x_j) by at most 2 and y by at most 1: L1
    # sensitivity 2 P + 1.
    return dw.Laplace(released, epsilon=epsilon, sensitivity=2 * P + 1, size=P + 1)


# %%
# Run: simulate a release, sample its private posterior, compare
# --------------------------------------------------------------


def main(n=500, epsilon=1.0, draws=2000, tune=1000, seed=2022):
    true_beta = np.array([1.0, -0.5])
    model, mech = private_model(), mechanism(epsilon)
    records = model.simulate({"beta": true_beta}, n, seed=seed)   # the confidential data
    s_dp = mech.release(records, seed=seed + 1)                   # all that is published
    print(f"n = {n} records, true beta = {true_beta}; published {mech!r}:\n  s_dp = {s_dp}")

    idata = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=4, seed=seed + 2,
                      progress=False)
    print("\nPrivate posterior p(beta | s_dp) (record-level data augmentation):")
    print(az.summary(idata).to_string())

    reference = nonprivate_sampler(records, draws=4 * draws, seed=seed + 3)[tune:]
    print("\nFor comparison, the non-private posterior (only the curator could compute it):")
    for j in range(P):
        print(f"  beta[{j}]: mean {reference[:, j].mean():.3f}, sd {reference[:, j].std():.3f}")
    print("The private posterior is wider: it accounts for the Laplace noise and for what the "
          "release does not say.")
    return idata, reference


if __name__ == "__main__":
    # DAWRAP_DOCS_FAST=1: the reduced size the documentation build uses in CI
    main(**({"draws": 500, "tune": 300} if os.environ.get("DAWRAP_DOCS_FAST") == "1" else {}))
