r"""
normal_mean: a clamped sum of measurements
==========================================

.. math:: \mu \sim N(\mu_0, s_0^2), \quad x_i \mid \mu \sim N(\mu, \sigma^2), \quad
          s_{dp} = \textstyle\sum_i \mathrm{clamp}(x_i, l, u) + \text{noise}.

**Release statistic**: the sum of the records clamped to ``[lower, upper]``.
**Sensitivity**: ``upper - lower``. ``gaussian(sigma)`` instead releases the *unclamped* sum
with Gaussian noise: that has no bounded sensitivity, so it is **not** differentially private;
it is there because its posterior has a closed form
(:func:`dawrap.models.normal_mean.exact_posterior_gaussian`), used below to check the sampler.
Reference: :mod:`dawrap.models.normal_mean`.
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import normal_mean

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

model = normal_mean.model(mu0=0, sd0=10, sigma=1)
n = 200
x = model.simulate({"mu": 1.5}, n, seed=1)

# A check against the closed form (simulation only: not DP).
gauss = normal_mean.gaussian(sigma=20.0)
s_gauss = gauss.release(x, seed=2)
exact = normal_mean.exact_posterior_gaussian(s_gauss, n, noise_sigma=20.0, mu0=0, sd0=10,
                                             sigma=1)
post = dw.sample(model, gauss, s_gauss, n, draws=DRAWS, tune=DRAWS // 2, chains=4, seed=3,
                 progress=False)
mu = diagnostics.group(post, "posterior")["mu"].values
print(f"Gaussian release: record mean {mu.mean():.3f} sd {mu.std():.3f}; "
      f"exact mean {exact.mean():.3f} sd {exact.std():.3f}")

# %%
# The differentially private release clamps to [-5, 5] (sensitivity 10).
mech = normal_mean.laplace(epsilon=1.0, lower=-5, upper=5)
s_dp = mech.release(x, seed=4)
dp = dw.sample(model, mech, s_dp, n, draws=DRAWS, tune=DRAWS // 2, chains=4, seed=5,
               progress=False)
mu_dp = diagnostics.group(dp, "posterior")["mu"].values
print(f"Laplace release (epsilon = 1): mean {mu_dp.mean():.3f} sd {mu_dp.std():.3f}")

fig, ax = plt.subplots(figsize=(6, 3.2))
grid = np.linspace(1.0, 2.0, 400)
ax.plot(grid, exact.pdf(grid), "k", lw=2, label="exact (Gaussian release)")
ax.hist(mu.ravel(), bins=40, density=True, histtype="step", label="record, Gaussian release")
ax.hist(mu_dp.ravel(), bins=40, density=True, histtype="step", label="record, Laplace eps=1")
ax.axvline(1.5, color="grey", ls="--", label="true mu")
ax.set(xlabel="mu", title="normal_mean, n = 200")
ax.legend(fontsize=8)
fig.tight_layout()
