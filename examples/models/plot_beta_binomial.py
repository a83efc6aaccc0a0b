r"""
beta_binomial: a released count
===============================

.. math:: p \sim \mathrm{Beta}(a, b), \quad x_i \mid p \sim \mathrm{Bernoulli}(p), \quad
          s_{dp} = \textstyle\sum_i x_i + \text{noise}.

**Release statistic**: the count :math:`\sum_i x_i`. **Sensitivity**: 1 (changing one
record moves the count by at most one), so ``laplace(epsilon)`` adds Laplace noise of scale
:math:`1/\epsilon` and ``geometric(epsilon)`` its integer analogue (publishable with
``release(x, secure=True)``). The exact posterior sums the count out
(:func:`dawrap.models.beta_binomial.exact_posterior`): a mixture of Betas.
Reference: :mod:`dawrap.models.beta_binomial`.
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

model = beta_binomial.model(a=1, b=1)
mech = beta_binomial.laplace(epsilon=0.1)
n = 100
x = model.simulate({"p": 0.3}, n, seed=1)
s_dp = mech.release(x, seed=2)
print(f"count {x.sum():g}, release {s_dp[0]:.2f}")

exact = beta_binomial.exact_posterior(mech, s_dp, n)
fig, ax = plt.subplots(figsize=(6, 3.2))
grid = np.linspace(0.001, 0.999, 400)
ax.plot(grid, exact.pdf(grid), "k", lw=2, label="exact")
for method in ("record", "suffstat", "naive"):
    idata = dw.sample(model, mech, s_dp, n, method=method, draws=DRAWS, tune=DRAWS // 2,
                      chains=4, seed=3, progress=False)
    draws = diagnostics.group(idata, "posterior")["p"].values
    print(f"{method:9s} mean {draws.mean():.3f}  sd {draws.std():.3f}   "
          f"(exact: mean {exact.mean():.3f}, sd {exact.std():.3f})")
    ax.hist(draws.ravel(), bins=40, density=True, histtype="step", label=method)
ax.axvline(0.3, color="grey", ls="--", label="true p")
ax.set(xlabel="p", title="beta_binomial, n = 100, epsilon = 0.1")
ax.legend()
fig.tight_layout()

# %%
# The record and sufficient-statistic samplers agree with the exact posterior; the naive
# posterior (the release taken for the count) is about three times too narrow.
