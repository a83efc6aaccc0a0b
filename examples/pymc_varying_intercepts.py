"""Tutorial: a hierarchical model (varying intercepts by group) written in PyMC, released
through per-group counts and clamped sums.

    pip install "dawrap[pymc]"
    python examples/pymc_varying_intercepts.py

Each confidential record is (g, y): a group g in 0..G-1 (public group shares) and an outcome
y ~ N(mu + tau a_g, SIGMA^2) with SIGMA known, with the group effects a_g ~ N(0, 1) written non-centred (the
usual cure for the funnel of a centred hierarchy, and what HMC wants). The curator publishes,
for each group, the number of records and the sum of y clamped to [-C, C], with Laplace noise.
dawrap imputes the records; HMC moves (mu, tau, a) given them. (With sigma unknown, counts and
sums say almost nothing about it, and the record sampler then crawls along its prior: release
clamped sums of squares too, or fix it as here.)
"""
import numba
import numpy as np
import pymc as pm

import dawrap as dw
import dawrap.pymc

GROUPS = ["north", "east", "south", "west"]   # the groups' labels
G = len(GROUPS)
SHARES = np.full(G, 1.0 / G)    # public group shares
C = 4.0                         # clamping bound of the released sums
SIGMA = 1.0                     # known within-group sd


def pymc_model(n: int) -> pm.Model:
    """The non-private hierarchical model; the observed arrays only fix the shapes. The
    group effects carry the dimension "group" and its labels into the result, and the
    Deterministic "intercept" is computed from the draws after sampling."""
    with pm.Model(coords={"group": GROUPS}) as hierarchy:
        mu = pm.Normal("mu", 0.0, 2.0)
        tau = pm.HalfNormal("tau", 1.0)
        a = pm.Normal("a", 0.0, 1.0, dims="group")
        intercept = pm.Deterministic("intercept", mu + tau * a, dims="group")
        g = pm.Categorical("g", p=SHARES, observed=np.zeros(n, dtype=int))
        pm.Normal("y", intercept[g], SIGMA, observed=np.zeros(n))
    return hierarchy


def private_model(n: int) -> dw.Model:
    return dawrap.pymc.from_pymc(pymc_model(n), records=["g", "y"])   # record = (g, y)


@numba.njit
def released(record, out):
    """Per group k: out[2k] = 1[g = k], out[2k + 1] = 1[g = k] clamp(y, -C, C)."""
    out[:] = 0.0
    k = int(record[0])
    out[2 * k] = 1.0
    out[2 * k + 1] = min(max(record[1], -C), C)


def mechanism(epsilon: float) -> dw.Laplace:
    # Replacing one record moves two groups' counts by 1 and their clamped sums by at most C
    # each (or one group's sum by at most 2C): L1 sensitivity 2 + 2C.
    return dw.Laplace(released, epsilon=epsilon, sensitivity=2.0 + 2.0 * C, size=2 * G)


def main(n=400, epsilon=1.0, draws=3000, tune=1000, seed=7):
    import arviz as az

    model, mech = private_model(n), mechanism(epsilon)
    truth = {"mu": 1.0, "tau": 0.8, "a": np.array([-1.2, -0.3, 0.4, 1.1])}
    records = model.simulate(truth, n, seed=seed)                 # confidential
    s_dp = mech.release(records, seed=seed + 1)                   # published
    idata = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=4, seed=seed + 2)
    print(f"s_dp = {np.round(s_dp, 1)}\nTrue group intercepts mu + tau a_g: "
          f"{dict(zip(GROUPS, truth['mu'] + truth['tau'] * truth['a']))}")
    # The release speaks to the group intercepts mu + tau a_g; how they split into mu, tau
    # and the a_g only the prior decides, so those mix slowly (see their ESS) while the
    # intercepts mix well.
    print(az.summary(idata).to_string())   # a[north], ..., intercept[north], ...
    return idata


if __name__ == "__main__":
    main()
