"""
Quickstart: the first private posterior
=======================================

A data curator publishes the number of "yes" answers among ``n`` confidential records plus
Laplace noise. We register the ordinary Bayesian model (Bernoulli records, Beta prior), the
mechanism that produced the release, and let :func:`dawrap.sample` return the posterior of
``p`` given the release only, as an ArviZ object.
"""
import os

import arviz as az
import matplotlib.pyplot as plt
import numba
import numpy as np

import dawrap as dw
from dawrap import diagnostics

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"   # reduced size for CI
DRAWS, TUNE = (500, 300) if FAST else (2000, 1000)

# %%
# The user functions
# ------------------
# Three compiled functions describe the non-private model: how a record is drawn given
# ``theta``, each record's contribution to the statistic, and the non-private posterior
# update given a complete database (here conjugate: Beta(1 + k, 1 + n - k)).


@numba.njit
def draw_record(rng, theta, out):          # x_i ~ Bernoulli(p)
    out[0] = 1.0 if rng.random() < theta[0] else 0.0


@numba.njit
def count(x_i, out):                       # the record's contribution to the count
    out[0] = x_i[0]


@numba.njit
def draw_theta(rng, theta, x, stats):      # p | x ~ Beta(1 + k, 1 + n - k)
    return np.array([rng.beta(1 + stats[0], 1 + x.shape[0] - stats[0])])


model = dw.Model(params={"p": ()}, record_size=1, draw_record=draw_record,
                 draw_theta=draw_theta, model_stat=count, stat_size=1,
                 draw_prior=lambda rng: np.array([rng.beta(1, 1)]))
mech = dw.Laplace(count, epsilon=0.5, sensitivity=1.0)

# %%
# A release to analyse
# --------------------
# We simulate the curator's side: a confidential database and its release. ``release(x,
# seed=...)`` is for simulations only (see :doc:`/guide/mechanisms`).
n = 1000
x = model.simulate({"p": 0.31}, n, seed=1)
s_dp = mech.release(x, seed=2)
print(f"confidential count {x.sum():g}, published release {s_dp[0]:.2f}")

# %%
# The private posterior
# ---------------------
idata = dw.sample(model, mech, s_dp, n=n, draws=DRAWS, tune=TUNE, chains=4, seed=0,
                  progress=False)
print(az.summary(idata))

# %%
# Reading the output with ArviZ
# -----------------------------
# ``idata`` is an ``arviz.InferenceData`` (ArviZ 0.x) or ``xarray.DataTree`` (ArviZ 1.x);
# :mod:`dawrap.diagnostics` reads either. The record sampler also records the fraction of
# record proposals accepted per sweep.
draws = diagnostics.group(idata, "posterior")["p"].values     # (chain, draw)
print(f"ESS bulk {diagnostics.ess(draws):.0f} of {draws.size} draws, "
      f"R-hat {diagnostics.rhat(draws):.3f}")
print("record acceptance rate (mean):",
      round(float(np.mean(diagnostics.group(idata, "sample_stats")["accept_rate"])), 3))
fig, axes = plt.subplots(1, 2, figsize=(9, 3))
for chain in draws:
    axes[0].plot(chain, lw=0.5)
    axes[1].hist(chain, bins=40, histtype="step", density=True)
axes[0].set(title="trace of p (4 chains)", xlabel="draw")
axes[1].axvline(0.31, color="k", ls="--", label="true p")
axes[1].set(title="posterior of p", xlabel="p")
axes[1].legend()
fig.tight_layout()
