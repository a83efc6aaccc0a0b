r"""
naive_bayes: released co-occurrence counts
==========================================

The naive-Bayes log-linear model of Ju et al. (2022, Sec. 4): a class ``y`` with
probabilities :math:`\pi`, and ``K`` categorical features independent given the class, with
:math:`P(x_k = j \mid y = i) = p^k_{ij}`; Dirichlet priors on everything.

**Release statistic**: every class-by-level co-occurrence count :math:`n^k_{ij}`.
**Sensitivity**: :math:`2K` in L1 (replacing one record moves one count up and one down in
each of the ``K`` tables), so ``laplace(epsilon, I, J)`` adds Laplace noise of scale
:math:`2K/\epsilon` to each count. The exact marginals are available for small ``n``
(:func:`dawrap.models.naive_bayes.exact_posterior`).
Reference: :mod:`dawrap.models.naive_bayes`.
"""
import os

import matplotlib.pyplot as plt
import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import naive_bayes

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

# %%
# A simulated release
# -------------------
# A confidential database drawn from the model, and its release (``release(x, seed=...)``
# is for simulations only).
I, J = 2, [2, 2]
model = naive_bayes.model(I, J)
mech = naive_bayes.laplace(epsilon=2.0, I=I, J=J)
n = 20
truth = naive_bayes.draw_parameters(I, J, seed=7)
x = model.simulate(truth, n, seed=1)
s_dp = mech.release(x, seed=2)

# %%
# The private posterior
# ---------------------
# The record sampler against the exact posterior of ``pi[0]``.
idata = dw.sample(model, mech, s_dp, n, draws=DRAWS, tune=DRAWS // 2, chains=4, seed=3,
                  progress=False)
pi = diagnostics.group(idata, "posterior")["pi"].values.reshape(-1, I)
exact = naive_bayes.exact_posterior(mech, s_dp, n, I, J)
print(f"pi[0]: record mean {pi[:, 0].mean():.3f} sd {pi[:, 0].std():.3f}; "
      f"exact mean {exact['pi'][0].mean():.3f} sd {exact['pi'][0].std():.3f} "
      f"(true {truth['pi'][0]:.3f})")

grid = np.linspace(0.001, 0.999, 300)
fig, ax = plt.subplots(figsize=(6, 3.2))
ax.plot(grid, exact["pi"][0].pdf(grid), "k", lw=2, label="exact")
ax.hist(pi[:, 0], bins=40, density=True, histtype="step", label="record")
ax.axvline(truth["pi"][0], color="grey", ls="--", label="true")
ax.set(xlabel="pi[0]", title="naive_bayes, I = 2, J = [2, 2], n = 20, epsilon = 2")
ax.legend()
fig.tight_layout()
