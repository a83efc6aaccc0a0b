r"""
gamma_exponential: a truncated total of waiting times
=====================================================

.. math:: \lambda \sim \mathrm{Gamma}(\alpha, \beta), \quad
          x_i \mid \lambda \sim \mathrm{Exponential}(\lambda), \quad
          s_{dp} = \textstyle\sum_i 1_{[a,b]}(x_i)\, x_i + \text{noise}.

**Release statistic**: the total of the records that fall inside ``[lower, upper]``, bounds
chosen in advance (the statistic :math:`t(x) = x` is unbounded, so it cannot be released as
is). **Sensitivity**: :math:`\max(|a|, |b|, b - a)` (= ``upper`` for ``lower = 0``). There is
no closed-form private posterior; the two exact samplers (record and sufficient-statistic)
are compared with each other and with the non-private posterior.
Reference: :mod:`dawrap.models.gamma_exponential`.
"""
import os

import matplotlib.pyplot as plt

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import gamma_exponential

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

# %%
# A simulated release
# -------------------
# A confidential database drawn from the model, and its release (``release(x, seed=...)``
# is for simulations only).
model = gamma_exponential.model(alpha=2, beta=1)
mech = gamma_exponential.laplace(epsilon=1.0, lower=0.0, upper=6.0)
n = 200
x = model.simulate({"lam": 1.0}, n, seed=1)
s_dp = mech.release(x, seed=2)
print(f"total {x.sum():.2f}, truncated total {x[x <= 6].sum():.2f}, release {s_dp[0]:.2f}")

# %%
# The private posterior
# ---------------------
# The record and sufficient-statistic samplers, and the non-private posterior for
# comparison.
fig, ax = plt.subplots(figsize=(6, 3.2))
for method, kwargs in (("record", {}), ("suffstat", {}),
                       ("nonprivate", {"confidential": x})):
    release = None if method == "nonprivate" else s_dp
    idata = dw.sample(model, mech, release, n, method=method, draws=DRAWS, tune=DRAWS // 2,
                      chains=4, seed=3, progress=False, **kwargs)
    lam = diagnostics.group(idata, "posterior")["lam"].values
    print(f"{method:10s} mean {lam.mean():.3f} sd {lam.std():.3f}")
    ax.hist(lam.ravel(), bins=40, density=True, histtype="step", label=method)
ax.axvline(1.0, color="grey", ls="--", label="true lambda")
ax.set(xlabel="lambda", title="gamma_exponential, n = 200, [0, 6], epsilon = 1")
ax.legend()
fig.tight_layout()
