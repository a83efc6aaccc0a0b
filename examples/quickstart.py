"""Quickstart: register a model from scratch and sample the exact private posterior.

The same code as the README's quickstart, plus a simulated release so it runs on its own:
    python examples/quickstart.py
"""
import arviz as az
import numba
import numpy as np

import dawrap as dw


@numba.njit
def draw_record(rng, theta, out):          # x_i ~ f(. | theta): one Bernoulli(p) record
    out[0] = 1.0 if rng.random() < theta[0] else 0.0


@numba.njit
def count(x_i, out):                       # the record's contribution to the statistic
    out[0] = x_i[0]


@numba.njit
def draw_theta(rng, theta, x, stats):      # the non-private sampler: p | x ~ Beta(1 + k, 1 + n - k)
    return np.array([rng.beta(1 + stats[0], 1 + x.shape[0] - stats[0])])


def main(n: int = 1000, draws: int = 2000, tune: int = 1000):
    model = dw.Model(params={"p": ()}, record_size=1, draw_record=draw_record,
                     draw_theta=draw_theta, model_stat=count, stat_size=1,
                     draw_prior=lambda rng: np.array([rng.beta(1, 1)]))
    mech = dw.Laplace(count, epsilon=0.5, sensitivity=1.0)

    x = model.simulate({"p": 0.31}, n, seed=1)       # the curator's confidential data
    s_dp = mech.release(x, seed=2)                   # what gets published
    idata = dw.sample(model, mech, s_dp, n=n, draws=draws, tune=tune, chains=4, seed=0)
    print(az.summary(idata))
    return idata


if __name__ == "__main__":
    main()
