r"""
dirichlet_multinomial: a released histogram
===========================================

.. math:: p \sim \mathrm{Dirichlet}(\alpha), \quad x_i \mid p \sim \mathrm{Categorical}(p),
          \quad s_{dp} = \textstyle\sum_i \mathrm{onehot}(x_i) + \text{noise}.

**Release statistic**: the vector of category counts (a record is its category index).
**Sensitivity**: 2 in L1 (replacing one record moves two counts by one each), so
``laplace(epsilon, categories)`` adds Laplace noise of scale :math:`2/\epsilon` to each
count. The exact marginal posteriors enumerate every count vector
(:func:`dawrap.models.dirichlet_multinomial.exact_posterior`): small ``n`` only.
Reference: :mod:`dawrap.models.dirichlet_multinomial`.
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import dirichlet_multinomial

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

# %%
# A simulated release
# -------------------
# A confidential database drawn from the model, and its release (``release(x, seed=...)``
# is for simulations only).
alpha = [1, 1, 1]
model = dirichlet_multinomial.model(alpha=alpha)
mech = dirichlet_multinomial.laplace(epsilon=1.0, categories=3)
n = 30
x = model.simulate({"p": np.array([0.5, 0.3, 0.2])}, n, seed=1)
s_dp = mech.release(x, seed=2)
print("counts", np.bincount(x[:, 0].astype(int), minlength=3), "release", np.round(s_dp, 2))

# %%
# The private posterior
# ---------------------
# The record sampler against the exact marginal posteriors.
idata = dw.sample(model, mech, s_dp, n, draws=DRAWS, tune=DRAWS // 2, chains=4, seed=3,
                  progress=False)
p = diagnostics.group(idata, "posterior")["p"].values.reshape(-1, 3)
exact = dirichlet_multinomial.exact_posterior(mech, s_dp, n, alpha)
grid = np.linspace(0.001, 0.999, 300)
fig, axes = plt.subplots(1, 3, figsize=(9, 2.8), sharey=True)
for j, ax in enumerate(axes):
    print(f"p[{j}]: record mean {p[:, j].mean():.3f} sd {p[:, j].std():.3f}; "
          f"exact mean {exact[j].mean():.3f} sd {exact[j].std():.3f}")
    ax.plot(grid, exact[j].pdf(grid), "k", lw=2, label="exact")
    ax.hist(p[:, j], bins=40, density=True, histtype="step", label="record")
    ax.set(xlabel=f"p[{j}]")
axes[0].legend()
fig.tight_layout()
