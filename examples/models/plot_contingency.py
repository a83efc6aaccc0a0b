r"""
contingency: released margins of a table
========================================

.. math:: p \sim \mathrm{Dirichlet}(\alpha), \quad x_i \mid p \sim \mathrm{Categorical}(p)
          \text{ over the cells of } L_1 \times \dots \times L_d,
          \quad s_{dp} = (M_m N + z_m)_m.

**Release statistic**: marginal tables of the records' full table of counts (e.g. the two
one-way margins of two attributes). **Sensitivity**: replacing one record moves at most two
cells of each margin by one, so each margin's L1 sensitivity is 2 and
``laplace(levels, margins, epsilon)`` adds Laplace noise of scale :math:`2/\epsilon_m` to
margin :math:`m` (the release is :math:`\sum_m \epsilon_m`-DP). The exact marginal
posteriors enumerate every full table (:func:`dawrap.models.contingency.exact_posterior`):
small ``n`` only. Reference: :mod:`dawrap.models.contingency`.
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import contingency

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

# %%
# A simulated release
# -------------------
# Two binary attributes (four joint cells); released are the two one-way margins, each with
# epsilon = 1. The joint table itself is never released: the margins leave its inner
# structure to the prior.
levels, margins = (2, 2), [(0,), (1,)]
model = contingency.model(levels, alpha=1.0)
mech = contingency.laplace(levels, margins, epsilon=[1.0, 1.0])
n = 12
truth = np.array([0.4, 0.1, 0.2, 0.3])
x = model.simulate({"p": truth}, n, seed=1)
s_dp = mech.release(x, seed=2)
print("margins", mech.total(x), "release", np.round(s_dp, 2))

# %%
# The private posterior
# ---------------------
# The record sampler against the exact marginal posteriors of the four cell probabilities.
idata = dw.sample(model, mech, s_dp, n, draws=DRAWS, tune=DRAWS // 2, chains=4, seed=3,
                  progress=False)
p = diagnostics.group(idata, "posterior")["p"].values.reshape(-1, 4)
exact = contingency.exact_posterior(mech, s_dp, n, levels, margins)
grid = np.linspace(0.001, 0.999, 300)
fig, axes = plt.subplots(1, 4, figsize=(10, 2.6), sharey=True)
for j, ax in enumerate(axes):
    print(f"p[{j}]: record mean {p[:, j].mean():.3f} sd {p[:, j].std():.3f}; "
          f"exact mean {exact[j].mean():.3f} sd {exact[j].std():.3f}")
    ax.plot(grid, exact[j].pdf(grid), "k", lw=2, label="exact")
    ax.hist(p[:, j], bins=40, density=True, histtype="step", label="record")
    ax.set(xlabel=f"p[{j}] (cell {np.unravel_index(j, levels)})")
axes[0].legend(fontsize=8)
fig.tight_layout()
