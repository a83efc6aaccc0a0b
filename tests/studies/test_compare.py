"""dw.compare (one release, several methods) and the MMD utility measure."""
import numpy as np
import pytest

import dawrap as dw
from dawrap.models import beta_binomial, dirichlet_multinomial


@pytest.mark.slow
def test_compare_tabulates_each_method_and_plots(tmp_path):
    model, mech, n = beta_binomial.model(1, 1), beta_binomial.laplace(0.5), 1000
    x = model.simulate({"p": 0.3}, n, seed=1)
    s_dp = mech.release(x, seed=2)
    cmp = dw.compare(model, mech, s_dp, n, methods=("record", "suffstat", "naive",
                                                    "nonprivate"),
                     draws=2000, tune=300, seed=3, confidential=x)
    t = cmp.table
    assert list(t["method"]) == ["record", "suffstat", "naive", "nonprivate"]
    assert set(t) == set(dw.compare.__globals__["COLUMNS"])
    exact = beta_binomial.exact_posterior(mech, s_dp, n, 1, 1)
    for k in range(2):  # the two exact-or-nearly samplers agree with the exact posterior
        assert abs(t["mean"][k] - exact.mean()) < 4 * t["sd"][k] / np.sqrt(t["ess_bulk"][k])
    assert np.all(t["ess_bulk"] > 100) and np.all(t["ess_per_second"] > 0)
    assert 0 < t["accept_rate"][0] <= 1 and np.isnan(t["accept_rate"][1])
    assert "record" in repr(cmp)
    path = cmp.plot(tmp_path / "overlay.png", exact={"p": exact})
    assert path.stat().st_size > 1000


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_compare_flattens_vector_parameters(tmp_path):
    model, mech = dirichlet_multinomial.model([1, 1, 1]), dirichlet_multinomial.laplace(1.0, 3)
    s_dp = mech.release(model.simulate({"p": np.array([0.2, 0.3, 0.5])}, 50, seed=1), seed=2)
    cmp = dw.compare(model, mech, s_dp, 50, methods=["suffstat"], draws=200, tune=50, seed=0)
    assert list(cmp.table["parameter"]) == ["p[0]", "p[1]", "p[2]"]
    assert cmp.plot(tmp_path / "p.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="methods must be"):
        dw.compare(model, mech, s_dp, 50, methods="suffstat")


def test_mmd2_is_unbiased_near_zero_for_equal_distributions_and_positive_otherwise():
    rng = np.random.default_rng(0)
    same = [dw.mmd2(rng.normal(size=300), rng.normal(size=300), bandwidth=1.0)
            for _ in range(40)]
    # Unbiased: the mean over replicates is zero within its standard error.
    assert abs(np.mean(same)) < 4 * np.std(same) / np.sqrt(len(same))
    shifted = dw.mmd2(rng.normal(size=300), rng.normal(0.5, size=300), bandwidth=1.0)
    assert shifted > 10 * np.std(same)
    two_d = dw.mmd2(rng.normal(size=(200, 2)), rng.normal(size=(200, 2)))
    assert abs(two_d) < 0.02
    with pytest.raises(ValueError, match="same dimension"):
        dw.mmd2(np.zeros((5, 2)), np.zeros(5))
    with pytest.raises(ValueError, match="finite"):
        dw.mmd2([0.0, np.nan], [0.0, 1.0])
