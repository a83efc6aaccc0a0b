r"""
A model of your own, beyond the Quickstart
==========================================

The Quickstart's registration (a record draw, the record's statistic, a theta step) is all
the default record sampler needs. Two further descriptions of the same model open the other
methods, and a vector release needs its sensitivity worked out. This page does both for the
Quickstart's Bernoulli model and checks each method against the exact posterior; the
:doc:`guide page </guide/own_model>` explains each piece.
"""
import math
import os

import matplotlib.pyplot as plt
import numba
import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial   # only for its exact posterior, to check against

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"   # reduced size for CI
DRAWS = 1000 if FAST else 4000
A, B = 1.0, 1.0                                     # the Beta(A, B) prior of p

# %%
# The Quickstart's model
# ----------------------


@numba.njit
def draw_record(rng, theta, out):          # x_i ~ Bernoulli(p)
    out[0] = 1.0 if rng.random() < theta[0] else 0.0


@numba.njit
def count(x_i, out):                       # the record's contribution to the count
    out[0] = x_i[0]


@numba.njit
def draw_theta(rng, theta, x, stats):      # p | x ~ Beta(A + k, B + n - k)
    return np.array([rng.beta(A + stats[0], B + x.shape[0] - stats[0])])


# %%
# The exponential family: for ``method="suffstat"`` and the baselines
# -------------------------------------------------------------------
# The sufficient-statistic sampler replaces the n records by their total's law: it needs
# the statistic's mean and covariance under theta (a normal, CLT, approximation of the
# total), the conjugate draw given a total, and which totals are possible. ``natural`` and
# ``log_partition`` (:math:`\eta = \log(p / (1 - p))`, :math:`A(\eta) = \log(1 + e^\eta)`)
# enable its marginal kernel; ``project`` gives the naive baseline the nearest possible
# total.


@numba.njit
def mean_cov(theta):                       # E t(x) and Var t(x) of one record
    p = theta[0]
    return np.array([p]), np.array([[p * (1.0 - p)]])


@numba.njit
def conjugate_draw(rng, s, n):             # p | total s of n records
    return np.array([rng.beta(A + s[0], B + n - s[0])])


@numba.njit
def valid(s, n):                           # a count of n records lies in [0, n]
    return 0.0 <= s[0] <= n


@numba.njit
def project(s, n):
    return np.array([min(max(s[0], 0.0), n)])


@numba.njit
def natural(theta):
    return math.log(theta[0]) - math.log1p(-theta[0])


@numba.njit
def log_partition(eta):
    e = eta[0]
    return e + math.log1p(math.exp(-e)) if e > 0.0 else math.log1p(math.exp(e))


family = dw.ExponentialFamily(count, 1, mean_cov, conjugate_draw, valid, bounded=True,
                              natural=natural, log_partition=log_partition, project=project)

# %%
# The non-centred map: for ``interweave``
# ---------------------------------------
# A record as a function of theta and noise that does not depend on theta:
# :math:`x_i = 1[u_i < p]`, :math:`u_i \sim U(0, 1)`. Given a record and p, the noise is
# uniform on :math:`[0, p)` for a 1 and on :math:`[p, 1)` for a 0. The interweaving move
# proposes a new p with every :math:`u_i` held fixed, so all records move with it.


@numba.njit
def record_from_noise(theta, z_i, out):
    out[0] = 1.0 if z_i[0] < theta[0] else 0.0


@numba.njit
def noise_from_record(rng, theta, x_i, z_out):
    p = theta[0]
    z_out[0] = p * rng.random() if x_i[0] == 1.0 else p + (1.0 - p) * rng.random()


@numba.njit
def log_prior(theta):
    p = theta[0]
    if not 0.0 < p < 1.0:
        return -np.inf
    return (A - 1.0) * math.log(p) + (B - 1.0) * math.log1p(-p)


noncentred = dw.NonCentred(record_from_noise, noise_from_record, log_prior, noise_size=1,
                           initial_scale=0.02)
model = dw.Model(params={"p": ()}, record_size=1, draw_record=draw_record,
                 draw_theta=draw_theta, model_stat=count, stat_size=1,
                 draw_prior=lambda rng: np.array([rng.beta(A, B)]),
                 family=family, noncentred=noncentred)

# %%
# Every method on one release
# ---------------------------
# 100 records, epsilon = 0.1: the noise hides most of the information.
mech = dw.Laplace(count, epsilon=0.1, sensitivity=1.0)
n = 100
x = model.simulate({"p": 0.3}, n, seed=1)
s_dp = mech.release(x, seed=2)
exact = beta_binomial.exact_posterior(mech, s_dp, n, A, B)
print(f"count {x.sum():g}, release {s_dp[0]:.2f}; exact posterior mean {exact.mean():.3f} "
      f"sd {exact.std():.3f}")
runs = {"record, interweave": dict(method="record", interweave=True),
        "suffstat": dict(method="suffstat"), "naive": dict(method="naive")}
grid = np.linspace(0.001, 0.999, 400)
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.plot(grid, exact.pdf(grid), "k", lw=2, label="exact")
for label, kwargs in runs.items():
    idata = dw.sample(model, mech, s_dp, n, draws=DRAWS, tune=DRAWS // 2, chains=4, seed=3,
                      progress=False, **kwargs)
    p = diagnostics.group(idata, "posterior")["p"].values
    print(f"{label:20s} mean {p.mean():.3f} sd {p.std():.3f} "
          f"(Monte Carlo se of the mean {diagnostics.mcse(p):.3f})")
    ax.hist(p.ravel(), bins=50, density=True, histtype="step", label=label)
ax.set(xlabel="p", title="one registration, every method (n = 100, epsilon = 0.1)")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# The sensitivity of a vector statistic
# -------------------------------------
# A release of two sums per record, e.g. of measurements clamped to :math:`[0, B]`: the
# clamped value and its square. Replacing one record moves the first sum by at most
# :math:`B` and the second by at most :math:`B^2`, both at once (from 0 to B), so the L1
# sensitivity is :math:`B + B^2` (and the same under add/remove neighbours).
# :func:`dawrap.box_sensitivity` computes it for any statistic that is monotone on the box,
# and refuses one that is not: on :math:`[-B, B]` the square is not monotone, the vertices
# (2B) miss the true :math:`(B + 1/2)^2`, and the sensitivity must be derived by hand.
BOUND = 3.0


@numba.njit
def clamped_value_and_square(x_i, out):
    v = min(max(x_i[0], 0.0), BOUND)
    out[0], out[1] = v, v * v


sensitivity = dw.box_sensitivity(clamped_value_and_square, 2, [0.0], [BOUND])
print(f"records in [0, {BOUND:g}]: L1 sensitivity {sensitivity:g} (B + B^2 = "
      f"{BOUND + BOUND ** 2:g})")
release = dw.Laplace(clamped_value_and_square, epsilon=1.0, sensitivity=sensitivity, size=2)
print(release)


@numba.njit
def value_and_square_signed(x_i, out):    # records in [-B, B]: the square is not monotone
    v = min(max(x_i[0], -BOUND), BOUND)
    out[0], out[1] = v, v * v


try:
    dw.box_sensitivity(value_and_square_signed, 2, [-BOUND], [BOUND])
except ValueError as err:
    print(f"records in [-{BOUND:g}, {BOUND:g}]: refused ({err}); by hand: (B + 1/2)^2 = "
          f"{(BOUND + 0.5) ** 2:g}")
