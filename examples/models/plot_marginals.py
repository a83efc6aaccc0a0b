r"""
marginals: noisy marginal tables over a large domain
====================================================

.. math:: \theta \sim \text{hyper-Dirichlet}(a), \quad
          x_i \mid \theta \sim \frac{\prod_C p_C(x_C)}{\prod_S p_S(x_S)},
          \quad s_{dp} = \big(M_m(x) + z_m\big)_m.

**Release statistic**: any list of marginal tables (attribute subsets) of records of many
categorical attributes, each table with its own noise: Laplace or geometric
(:math:`\epsilon`-DP), Gaussian or discrete Gaussian (zCDP). **Sensitivity**: replacing one
record moves at most two cells of each table by one (L1 sensitivity 2, L2 sensitivity
:math:`\sqrt 2`), so Laplace noise of scale :math:`2/\epsilon_m` makes table :math:`m`
:math:`\epsilon_m`-DP and Gaussian noise of sd :math:`\sigma` makes it
:math:`1/\sigma^2`-zCDP. **Model**: theta is the clique marginals of a junction tree that
covers the released tables; nothing is ever as large as the domain. The exact posterior
enumerates every table of counts (:func:`dawrap.models.marginals.exact_posterior`): small
domains and ``n`` only. Reference: :mod:`dawrap.models.marginals`; the full guide with a
case study on Adult: :doc:`/marginals`.
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import marginals

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

# %%
# A small release, each table with its own noise
# ----------------------------------------------
# Three attributes; released are two 2-way tables with different noise. The tables share
# the attribute ``b``, so the junction tree has two cliques and ``a``, ``c`` are
# conditionally independent given ``b``. The prior (the default) is centred on the release's
# maximum-entropy fit, here with ``alpha = 2`` prior records; ``exact_posterior`` uses the
# same prior, set from the same release.
levels = {"a": 2, "b": 2, "c": 3}
tables = [("a", "b"), ("b", "c")]
model = marginals.model(levels, tables, alpha=2.0)
mech = marginals.mechanism(levels, tables, [marginals.Noise.laplace(epsilon=1.0),
                                            marginals.Noise.gaussian(rho=0.5)])
print(model)
print("privacy", mech.privacy)
x = np.array([[0, 0, 0], [0, 1, 2], [1, 1, 1], [1, 0, 0], [0, 1, 1], [1, 1, 2]])
n = len(x)
s_dp = mech.release(x, seed=3)
print("tables", mech.total(x), "\nrelease", np.round(s_dp, 2))

# %%
# The record sampler against the exact posterior
# ----------------------------------------------
# The exact posterior of every clique cell enumerates the tables of counts of 6 records.
idata = dw.sample(model, mech, s_dp, n, draws=DRAWS, tune=DRAWS // 2, chains=4, seed=2,
                  progress=False)
exact = marginals.exact_posterior(model, mech, s_dp, n)
post = diagnostics.group(idata, "posterior")
theta = np.concatenate([post[k].values.reshape(4 * DRAWS, -1) for k in model.params], -1)
grid = np.linspace(0.001, 0.999, 300)
fig, axes = plt.subplots(1, 4, figsize=(10, 2.6), sharey=True)
for j, ax in enumerate(axes):
    print(f"theta[{j}]: record mean {theta[:, j].mean():.3f} sd {theta[:, j].std():.3f}; "
          f"exact mean {exact.theta(j).mean():.3f} sd {exact.theta(j).std():.3f}")
    ax.plot(grid, exact.theta(j).pdf(grid), "k", lw=2, label="exact")
    ax.hist(theta[:, j], bins=40, density=True, histtype="step", label="record")
    ax.set(xlabel=f"p_a_b{np.unravel_index(j, (2, 2))}")
axes[0].legend(fontsize=8)
fig.tight_layout()

# %%
# A marginal that was not released, and synthetic data
# -----------------------------------------------------
# ``a x c`` lies in no clique: its table follows from theta through the tree. Synthetic
# datasets are the imputed confidential databases (``databases=k``) or posterior-predictive
# databases: both are post-processing of the release.
ac = marginals.marginal(idata, model, ("a", "c"))
print("P(a, c), posterior mean:\n", np.round(ac.mean(axis=(0, 1)), 3))
data = dw.synthetic.datasets(idata, m=5, kind="predictive", model=model, size=200, seed=4,
                             fields=list(levels))
frame = dw.synthetic.to_frames(data)[0].astype(int)
print(len(data), "datasets; the first:")
print(frame.value_counts().head())
