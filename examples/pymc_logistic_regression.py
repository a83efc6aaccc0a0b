"""Tutorial: the private logistic regression of gallery/plot_private_logistic_regression.py, with the model
written in PyMC.

    pip install "dawrap[pymc]"
    python examples/pymc_logistic_regression.py

You have a PyMC model of the confidential records: covariates x ~ N(0, I) (a data
augmentation sampler imputes whole records, so the covariates need a model too, written as an
observed variable) and y | x ~ Bernoulli(logistic(x . beta)). The curator publishes
sum_i y_i clamp(x_i) and sum_i y_i with Laplace noise. dawrap.pymc.from_pymc compiles the
PyMC model into a dawrap model (record draws, prior draws, and an HMC step on beta given the
imputed records); the release statistic and the mechanism are dawrap's. To check the result, run
the same release through the hand-written model of gallery/plot_private_logistic_regression.py: the two
posteriors agree within Monte Carlo error (tests/dawrap_pymc/test_pymc_posteriors.py does this).
"""
import numba
import numpy as np
import pymc as pm

import dawrap as dw
import dawrap.pymc

P = 2            # covariates
PRIOR_SD = 2.0   # beta ~ N(0, 2^2 I)


def pymc_model(n: int) -> pm.Model:
    """The non-private model. The observed arrays only fix the shapes: dawrap imputes them."""
    with pm.Model() as logistic:
        beta = pm.Normal("beta", 0.0, PRIOR_SD, shape=P)
        X = pm.Normal("X", 0.0, 1.0, observed=np.zeros((n, P)))
        pm.Bernoulli("y", logit_p=X @ beta, observed=np.zeros(n))
    return logistic


def private_model(n: int) -> dw.Model:
    # A record is (y, x_1, x_2): the layout the release statistic below reads.
    return dawrap.pymc.from_pymc(pymc_model(n), records=["y", "X"])


@numba.njit
def released(record, out):
    """What the curator sums and releases: y clamp(x_j, -1, 1) for each j, and y."""
    out[0] = record[0] * min(max(record[1], -1.0), 1.0)
    out[1] = record[0] * min(max(record[2], -1.0), 1.0)
    out[2] = record[0]


def mechanism(epsilon: float) -> dw.Laplace:
    # Replacing one record moves each y clamp(x_j) by at most 2 and y by at most 1.
    return dw.Laplace(released, epsilon=epsilon, sensitivity=2 * P + 1, size=P + 1)


def main(n=500, epsilon=1.0, draws=1000, tune=1000, seed=2022):
    import arviz as az

    model, mech = private_model(n), mechanism(epsilon)
    records = model.simulate({"beta": np.array([1.0, -0.5])}, n, seed=seed)  # confidential
    s_dp = mech.release(records, seed=seed + 1)                              # published
    idata = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=4, seed=seed + 2)
    print(f"s_dp = {s_dp}\nPrivate posterior p(beta | s_dp), PyMC model + HMC:")
    print(az.summary(idata).to_string())
    return idata


if __name__ == "__main__":
    main()
