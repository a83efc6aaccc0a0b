r"""
small_area: census-style counts in areas of public size
=======================================================

.. math:: \alpha_c \sim \mathrm{Gamma}(a_0, b_0), \quad p_a \mid \alpha \sim
          \mathrm{Dirichlet}(\alpha), \quad x_i \mid p \sim \mathrm{Categorical}(p_{a(i)}).

**Release statistic**: the area-by-category counts and the same counts summed over coarser
regions (blocks within tracts), each level with discrete Gaussian noise.
**Sensitivity**: replacing one record moves two cells by one at each level, so each
level's L2 sensitivity is :math:`\sqrt 2`; ``discrete_gaussian(regions, categories, rho)``
gives level :math:`l` the noise :math:`\sigma_l = 1/\sqrt{\rho_l}` and the release is
:math:`\sum_l \rho_l`-zCDP. The area sizes are public: the sampler starts from
``init_x=small_area.records(sizes)``. The exact posterior of ``p[0, 0]``
(:func:`dawrap.models.small_area.exact_posterior`) sums over every table: tiny problems
only. Reference: :mod:`dawrap.models.small_area`.
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import small_area

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

# %%
# A simulated release
# -------------------
# Three blocks of 4, 3 and 5 records in two tracts, two categories, rho = 0.5 per level.
sizes, tracts, categories = [4, 3, 5], [0, 0, 1], 2
model = small_area.model(sizes, categories)
mech = small_area.discrete_gaussian(tracts, categories, rho=(0.5, 0.5))
x = small_area.records(sizes, [0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1, 0])
s_dp = mech.release(x, seed=2)
print("block counts", mech.total(x)[:6], "release", s_dp[:6])

# %%
# The private posterior
# ---------------------
# The record sampler against the exact posterior of block 0's share of category 0.
idata = dw.sample(model, mech, s_dp, n=sum(sizes), init_x=small_area.records(sizes),
                  draws=DRAWS, tune=DRAWS // 2, chains=4, seed=3, progress=False)
p00 = diagnostics.group(idata, "posterior")["p"].values[:, :, 0, 0].ravel()
exact, _, _ = small_area.exact_posterior(mech, s_dp, sizes, categories, grid=30)
print(f"p[0, 0]: record mean {p00.mean():.3f} sd {p00.std():.3f}; "
      f"exact mean {exact.mean():.3f} sd {exact.std():.3f}")
grid = np.linspace(0.001, 0.999, 300)
fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(grid, exact.pdf(grid), "k", lw=2, label="exact")
ax.hist(p00, bins=40, density=True, histtype="step", label="record")
ax.set(xlabel="p[0, 0]", title="small_area, 3 blocks, 2 tracts, rho = 0.5 per level")
ax.legend()
fig.tight_layout()
