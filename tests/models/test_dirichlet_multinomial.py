"""Vector parameters and a vector release: the record sampler against exact enumeration."""
import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import dirichlet_multinomial


@pytest.mark.slow
def test_record_sampler_is_exact_for_each_marginal(check_posterior):
    alpha, n = [1.0, 2.0, 1.5], 40
    model, mech = dirichlet_multinomial.model(alpha), dirichlet_multinomial.laplace(0.5, 3)
    s_dp = mech.release(model.simulate({"p": np.array([0.2, 0.5, 0.3])}, n, seed=1), seed=2)
    idata = dw.sample(model, mech, s_dp, n, seed=3, draws=4000, tune=500)
    p = diagnostics.group(idata, "posterior")["p"].values
    assert p.shape == (4, 4000, 3) and np.allclose(p.sum(-1), 1)
    for j, exact in enumerate(dirichlet_multinomial.exact_posterior(mech, s_dp, n, alpha)):
        check_posterior(p[..., j], exact)


@pytest.mark.slow
def test_one_hot_and_records():
    model = dirichlet_multinomial.model([1, 1, 1, 1])
    x = model.simulate({"p": np.array([0.1, 0.2, 0.3, 0.4])}, 20000, seed=0)
    counts = np.bincount(x[:, 0].astype(int), minlength=4) / 20000
    # Multinomial sd of each frequency <= 0.0035: 5 sd.
    assert np.allclose(counts, [0.1, 0.2, 0.3, 0.4], atol=0.018)
    assert np.array_equal(dirichlet_multinomial.laplace(1.0, 4).total(x)[0:4],
                          np.bincount(x[:, 0].astype(int), minlength=4).astype(float))
