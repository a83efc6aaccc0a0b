"""The convergence warning advises only what the model and method can do (issue 41, item 10).

It advised ``interweave=True`` to every record-sampler run, the census model's too, which has
no non-centred map and refuses it; the census case study printed that advice. Now the
remedies follow from what the model declares: its non-centred map (``interweave``), its
family (suffstat's ``variant='marginal'``) and its own ``Model(remedies=...)``.
"""
import types
import warnings

import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap import sampling
from dawrap.models import beta_binomial, census, dirichlet_multinomial


@numba.njit
def _conjugate(rng, theta, x, stats):
    return np.array([rng.beta(1 + stats[0], 1 + x.shape[0] - stats[0])])


def _prior(rng):
    return np.array([rng.beta(1, 1)])


@numba.njit
def _stay(rng, state, s_dp, params, tuning):
    return state, 1.0, 0


def _warning(model, method) -> str:
    """The convergence warning for ``method`` after chains that have not mixed: independent
    random walks, R-hat far above 1.01 and bulk ESS far below 100 per chain."""
    theta = np.cumsum(np.random.default_rng(0).normal(size=(4, 400, model.theta_size)),
                      axis=1)
    if model.theta_size == 1:  # stay in (0, 1) for a probability
        theta = 1 / (1 + np.exp(-theta / 20))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sampling._warn_if_unconverged(model, theta, method)
    (message,) = [str(w.message) for w in caught if str(w.message).startswith("R-hat and ESS")]
    return message


@pytest.fixture(scope="module")
def geography():
    return census.Geography({"tract": [0, 0, 1], "block": [0, 1, 2]}, {"age": 2, "race": 2})


def test_the_census_warning_does_not_advise_interweave(geography):
    """The repro: census has no non-centred map (interweave=True is refused), so its warning
    must not advise it; it advises what the census model declares instead."""
    model = census.model(geography, totals=[10, 20, 5])
    assert model.noncentred is None
    message = _warning(model, dw.Record())
    assert "interweave" not in message
    assert "Run longer (draws, tune)" in message
    assert "census.model(..., collapsed_moves=4): more collapsed steps per person and " \
           "iteration (this model makes 2)" in message
    with pytest.raises(ValueError, match="interweave needs the model's non-centred"):
        dw.Record(interweave=True).prepare(model, None, 35)  # what the advice would do


def test_census_declares_the_collapsed_move_only_where_it_runs(geography):
    """With one prior level the collapsed move does not run (a unit's cells are not rare
    against a parent): nothing beyond the general advice."""
    one_level = census.model(geography, totals=[10, 20, 5], levels=["block"])
    assert one_level.remedies == ()
    assert "for this model and method" not in _warning(one_level, dw.Record())
    off = census.model(geography, totals=[10, 20, 5], collapsed_moves=0)
    assert off.remedies == ("census.model(..., collapsed_moves=2): more collapsed steps per "
                            "person and iteration (this model makes 0), for a unit's rare "
                            "cells",)
    assert census.model(geography, totals=[10, 20, 5], collapsed_moves=100).remedies == ()


def test_a_model_with_a_non_centred_map_is_advised_interweave():
    model = beta_binomial.model()
    assert model.noncentred is not None
    assert "interweave=True (the model's non-centred move" in _warning(model, dw.Record())
    # A run that interweaved already is advised more steps, not what it did
    message = _warning(model, dw.Record(interweave=3))
    assert "interweave=6 (more non-centred steps per iteration; this run made 3)" in message
    assert "interweave=True" not in message
    # A chain on a dask cluster cannot interweave (dw.Record refuses both): not advised
    on_cluster = types.SimpleNamespace(name="record", interweave=0,
                                       groups=types.SimpleNamespace(local=False))
    assert "interweave" not in _warning(model, on_cluster)
    # Nor a model whose own records move holds the move slot interweave would take
    with_move = dw.Model(params={"p": ()}, record_size=1,
                         draw_record=beta_binomial.draw_record, draw_theta=_conjugate,
                         model_stat=beta_binomial.count, stat_size=1, draw_prior=_prior,
                         noncentred=model.noncentred, records_move=_stay)
    assert "interweave" not in _warning(with_move, dw.Record())


def test_suffstat_is_advised_the_marginal_kernel_only_where_the_family_has_it():
    model = dirichlet_multinomial.model(alpha=[1, 1, 1])
    assert "variant='marginal'" in _warning(model, dw.Suffstat(variant="gibbs"))
    assert "variant='marginal'" not in _warning(model, dw.Suffstat(variant="marginal"))
    assert "interweave" not in _warning(model, dw.Suffstat(variant="gibbs"))
    # a family without the natural parameter and log partition: no marginal kernel
    family = model.family
    plain = types.SimpleNamespace(**{**vars(model), "family": types.SimpleNamespace(
        **{**vars(family), "natural": None, "log_partition": None,
           "cell_probabilities": None})})
    assert "variant='marginal'" not in sampling._remedies(plain, dw.Suffstat())


def test_declared_remedies_are_listed_for_the_record_sampler_only():
    base = beta_binomial.model()
    fields = dict(params={"p": ()}, record_size=1, draw_record=base.draw_record,
                  draw_theta=base.draw_theta, draw_prior=base.draw_prior,
                  model_stat=base.user_model_stat, stat_size=1, family=base.family)
    model = dw.Model(**fields, remedies=["my_model(steps=10): more theta steps"])
    assert model.remedies == ("my_model(steps=10): more theta steps",)
    message = _warning(model, dw.Record())
    assert "for this model and method also: my_model(steps=10): more theta steps;" in message
    assert "my_model" not in _warning(model, dw.Suffstat(variant="gibbs"))
    for bad in ("one string", [""], [3], 5):
        with pytest.raises(TypeError, match="remedies must be a sequence of non-empty strings"):
            dw.Model(**fields, remedies=bad)


def test_remedies_are_advice_not_part_of_the_fingerprint(geography):
    """A checkpoint resumes whatever the advice says: remedies are not fingerprinted."""
    from dawrap.runner.fingerprint import run_fingerprint

    model = census.model(geography, totals=[10, 20, 5])
    mech = census.discrete_gaussian(geography, [census.query("block", "total", rho=0.5)])
    assert model.remedies and "model.remedies" not in run_fingerprint(model, mech)


def test_a_run_that_has_not_mixed_is_advised_what_fits_what_ran():
    """End to end: a short record run of beta_binomial at epsilon 0.1 interweaves on its own
    (much missing information), and its warning advises more steps, not interweave=True."""
    model, mech = beta_binomial.model(), beta_binomial.laplace(0.1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        idata = dw.sample(model, mech, 30.0, 100, draws=60, tune=100, chains=2, seed=1,
                          progress=False)
    (message,) = [str(w.message) for w in caught if str(w.message).startswith("R-hat and ESS")]
    steps = int(dw.diagnostics.group(idata, "posterior").attrs["interweave"])
    assert steps > 0
    assert f"interweave={2 * steps} (more non-centred steps per iteration; this run made " \
           f"{steps})" in message and "interweave=True" not in message
