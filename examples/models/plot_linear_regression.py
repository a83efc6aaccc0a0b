r"""
linear_regression: released cross-products
==========================================

The regression of Ju et al. (2022, Sec. 5 and S-5): Normal predictors, :math:`y_i = x_i^\top
\beta + \text{noise}`, a Normal prior on :math:`\beta`, and :math:`\sigma^2` known or
Inverse-Gamma.

**Release statistic**: every variable clamped to bounds fixed in advance and mapped onto
[-1, 1]; released are the distinct entries of :math:`\tilde x^\top \tilde x`,
:math:`\tilde x^\top \tilde y` and :math:`\tilde y^\top \tilde y`
(:func:`dawrap.models.linear_regression.clamped_products`). **Sensitivity**: the exact L1
sensitivity under replacement of one record, :math:`(p+1)(p+3)^2 / (2(p+2))` with an
intercept (9.375 for p = 2, :func:`dawrap.models.linear_regression.sensitivity`; the module
doc derives it and why the paper's 13 is loose). The non-private posterior is conjugate
(:func:`dawrap.models.linear_regression.nonprivate_posterior`).
Reference: :mod:`dawrap.models.linear_regression`.
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import linear_regression as lr

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

# %%
# A simulated release
# -------------------
# The exact sensitivity; a confidential database drawn from the model, and its release (``release(x, seed=...)``
# is for simulations only).
print("L1 sensitivity, p = 2 with intercept:", lr.sensitivity(2))
model = lr.model(p=2)                        # sigma2 = 2 and m = 0 known, Sigma = I
mech = lr.laplace(epsilon=1.0, p=2, bounds_x=3, bound_y=6)
n = 2000
x = model.simulate({"beta": [-1.0, 1.0, 0.5]}, n, seed=1)
s_dp = mech.release(x, seed=2)

# %%
# The private posterior
# ---------------------
# The record sampler against the non-private posterior of the confidential records.
idata = dw.sample(model, mech, s_dp, n, draws=DRAWS, tune=DRAWS // 2, chains=4, seed=3,
                  progress=False)
beta = diagnostics.group(idata, "posterior")["beta"].values.reshape(-1, 3)
exact_np = lr.nonprivate_posterior(x)["beta"]
fig, axes = plt.subplots(1, 3, figsize=(9, 2.8))
for j, ax in enumerate(axes):
    print(f"beta[{j}]: private mean {beta[:, j].mean():.3f} sd {beta[:, j].std():.3f}; "
          f"non-private mean {exact_np[j].mean():.3f} sd {exact_np[j].std():.3f}")
    ax.hist(beta[:, j], bins=40, density=True, histtype="step", label="private (record)")
    lo, hi = ax.get_xlim()
    grid = np.linspace(lo, hi, 200)
    ax.plot(grid, exact_np[j].pdf(grid), "k", label="non-private")
    ax.set(xlabel=f"beta[{j}]")
axes[0].legend(fontsize=8)
fig.tight_layout()
