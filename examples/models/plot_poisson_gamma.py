r"""
poisson_gamma: a clamped total of counts
========================================

.. math:: \lambda \sim \mathrm{Gamma}(\alpha, \beta), \quad
          x_i \mid \lambda \sim \mathrm{Poisson}(\lambda), \quad
          s_{dp} = \textstyle\sum_i \min(x_i, c) + \text{noise}.

**Release statistic**: the total of the counts clamped at ``c``, chosen before seeing the
data. **Sensitivity**: ``c`` (one record contributes between 0 and ``c``). The model's
conjugate update uses the unclamped total; the engine keeps both current. The exact
posterior is computed on a grid (:func:`dawrap.models.poisson_gamma.exact_posterior`).
Reference: :mod:`dawrap.models.poisson_gamma`.
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import poisson_gamma

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

# %%
# A simulated release
# -------------------
# A confidential database drawn from the model, and its release (``release(x, seed=...)``
# is for simulations only).
model = poisson_gamma.model(alpha=2, beta=1)
mech = poisson_gamma.laplace(epsilon=0.5, c=5)
n = 50
x = model.simulate({"lam": 2.0}, n, seed=1)
s_dp = mech.release(x, seed=2)
print(f"total {x.sum():g}, clamped total {np.minimum(x, 5).sum():g}, release {s_dp[0]:.2f}")

# %%
# The private posterior
# ---------------------
# The record sampler against the exact posterior (on a grid).
idata = dw.sample(model, mech, s_dp, n, draws=DRAWS, tune=DRAWS // 2, chains=4, seed=3,
                  progress=False)
draws = diagnostics.group(idata, "posterior")["lam"].values
exact = poisson_gamma.exact_posterior(mech, s_dp, n, c=5, alpha=2, beta=1)
print(f"record mean {draws.mean():.3f} sd {draws.std():.3f}; "
      f"exact mean {exact.mean():.3f} sd {exact.std():.3f}")

fig, ax = plt.subplots(figsize=(6, 3.2))
grid = np.linspace(1.0, 3.5, 400)
ax.plot(grid, exact.pdf(grid), "k", lw=2, label="exact (grid)")
ax.hist(draws.ravel(), bins=40, density=True, histtype="step", label="record sampler")
ax.axvline(2.0, color="grey", ls="--", label="true lambda")
ax.set(xlabel="lambda", title="poisson_gamma, n = 50, c = 5, epsilon = 0.5")
ax.legend()
fig.tight_layout()
