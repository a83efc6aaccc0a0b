r"""
census: nested geography, cross-classified persons, noisy tables per level
===========================================================================

.. math:: \alpha_c \sim \mathrm{Gamma}(a_0, b_0), \quad p^{(0)}_v \sim \mathrm{Dir}(\alpha),
          \quad p^{(l)}_v \sim \mathrm{Dir}\big(\kappa_l\, p^{(l-1)}_{a(v)}\big), \quad
          x_i \sim \mathrm{Categorical}\big(p^{(L-1)}_{a(u_i)}\big),

.. math:: s_{dp} = \big(T_q(x) + z_q\big)_q, \quad z_q \sim \mathcal N_{\mathbb Z}(0, 1/\rho_q).

A record is a person ``[unit, cell]``: the finest geography unit they live in and their cell
of the cross-classification (e.g. voting age x Hispanic origin x race). **Release
statistics**: one table per query (:func:`dawrap.models.census.query`), every unit of a level
tabulated over a marginal of the attributes (the detailed histogram, the total, by voting
age, ...). **Sensitivity**: replacing one person moves at most one cell of a query down and
one up, so each query's L2 sensitivity is :math:`\sqrt2` and budget :math:`\rho_q` gives
noise sd :math:`1/\sqrt{\rho_q}`; the release is :math:`\sum_q\rho_q`-zCDP. The totals of one
level are public exactly (the blocks' by default). With one level and one attribute it is
:mod:`dawrap.models.small_area`. Reference: :mod:`dawrap.models.census`.

Below: two blocks of one tract, persons by age x race (4 cells), blocks drawing their cells
from the tract's probabilities; released are the blocks by age, the tract by race and the
tract's total. The exact posterior sums over every table of the blocks' counts.
"""
import itertools
import os

import matplotlib.pyplot as plt
import numpy as np
from scipy import special

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import census
from dawrap.reference import BetaMixture, normalise_log_weights, relative_log_g

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

geo = census.Geography({"tract": [0, 0], "block": [0, 1]}, {"age": 2, "race": 2})
sizes, alpha = [2, 3], np.array([1.0, 0.5, 2.0, 1.5])
model = census.model(geo, sizes, levels=("tract",), alpha=alpha)
mech = census.discrete_gaussian(geo, [census.query("block", "age", rho=0.5),
                                      census.query("tract", "race", rho=0.5),
                                      census.query("tract", "total", rho=1.0)])
s_dp = mech.release(census.records([[1, 0, 0, 1], [0, 2, 1, 0]]), seed=2)
print(f"release: blocks by age {s_dp[:4]}, tract by race {s_dp[4:6]}, total {s_dp[6]:g}")
idata = dw.sample(model, mech, s_dp, n=5, draws=DRAWS, tune=1000, chains=4, seed=4,
                  databases=DRAWS, progress=False)   # every draw's database kept (5 persons)
p = diagnostics.group(idata, "posterior")["p"].values[:, :, 0].reshape(4, DRAWS, 4)

# %%
# The exact posterior: every table of the two blocks' counts, weighted by the release's
# density and the Dirichlet-multinomial prior; given a table, each cell's probability is Beta.
per_block = [[c for c in itertools.product(range(n + 1), repeat=4) if sum(c) == n]
             for n in sizes]
tables = np.array([np.array(t) for t in itertools.product(*per_block)], float)
tract = tables.sum(axis=1)
log_w = (relative_log_g(mech, s_dp, [mech.total(census.records(t)) for t in tables])
         + special.gammaln(alpha + tract).sum(1)
         + sum(special.gammaln(n + 1) - special.gammaln(tables[:, b] + 1).sum(1)
               for b, n in enumerate(sizes)))
w = normalise_log_weights(log_w)
fig, axes = plt.subplots(1, 4, figsize=(9, 2.6), sharey=True)
grid = np.linspace(0.001, 0.999, 300)
for cell, ax in enumerate(axes):
    exact = BetaMixture(w, alpha[cell] + tract[:, cell],
                        alpha.sum() - alpha[cell] + 5 - tract[:, cell])
    ax.hist(p[..., cell].ravel(), bins=40, density=True, alpha=0.5, label="dawrap")
    ax.plot(grid, exact.pdf(grid), "k", label="exact")
    ax.set(title=f"p[age {cell // 2}, race {cell % 2}]", xlabel="probability")
    print(f"cell {cell}: mean {p[..., cell].mean():.3f} (exact {exact.mean():.3f}), sd "
          f"{p[..., cell].std():.3f} (exact {exact.std():.3f})")
axes[0].legend()
fig.tight_layout()

# %%
# A district's counts
# -------------------
# A district is a set of blocks; :func:`dawrap.models.census.district` counts its persons in
# each kept database, draws of its confidential counts given the release. Here the district
# is the second block alone: its persons by age, and the probability that most are of age 1,
# against the same enumeration of tables.
counts = census.district(idata, geo, blocks=[1], marginal=("age",))   # (chain, database, 2)
older = counts[..., 1] / counts.sum(axis=-1)
block = tables[:, 1].reshape(-1, 2, 2).sum(axis=2)                   # exact: block 1 by age
print(f"block 1, persons of age 1: mean {counts[..., 1].mean():.3f} (exact "
      f"{w @ block[:, 1]:.3f}); P(share of age 1 > 0.5) = {(older > 0.5).mean():.3f} (exact "
      f"{w @ (block[:, 1] / block.sum(axis=1) > 0.5):.3f})")
