"""Ready-made models, written only against dawrap's public API.

Each module doubles as an example of registering a model: record sampler, conjugate theta
kernel, prior, the statistic(s) it releases, and factories for its canonical DP releases.
"""
from . import (beta_binomial, dirichlet_multinomial, gamma_exponential, linear_regression,
               naive_bayes, normal_mean, poisson_gamma)

__all__ = ["beta_binomial", "poisson_gamma", "normal_mean", "dirichlet_multinomial",
           "gamma_exponential", "naive_bayes", "linear_regression"]
