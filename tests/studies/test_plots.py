"""Every plot function writes a file (on the Agg backend, no display needed)."""
import numpy as np
import pytest

import dawrap as dw
from dawrap.models import beta_binomial
from dawrap.studies.plots import plot_ecdf_difference, plot_ranks, plot_trace


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_each_plot_writes_a_png(tmp_path):
    model, mech = beta_binomial.model(), beta_binomial.laplace(1.0)
    s_dp = mech.release(model.simulate({"p": 0.4}, 50, seed=1), seed=2)
    idata = dw.sample(model, mech, s_dp, 50, draws=100, tune=20, chains=2, seed=3)
    pit = {"a": np.random.default_rng(0).random(40), "b": np.linspace(0.01, 0.5, 40)}
    for name, draw in {"trace": lambda p: plot_trace(idata, p),
                       "ranks": lambda p: plot_ranks(pit, p),
                       "ecdf": lambda p: plot_ecdf_difference(pit, p)}.items():
        path = tmp_path / f"{name}.png"
        assert draw(path) == path and path.read_bytes()[:4] == b"\x89PNG", name
