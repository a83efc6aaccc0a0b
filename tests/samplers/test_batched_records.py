"""Batched record draws, ``dw.Model(draw_records=...)``: the sweep is Algorithm 1 with its
proposals drawn ahead in blocks (draw for draw against a plain NumPy sweep), the posterior is
the exact one and the same as with one record per call, and a bad ``draw_records`` is named."""
import math

import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial, dirichlet_multinomial as dm, poisson_gamma
from dawrap.samplers import record

Z = 4.0  # as tests/conftest.py: agreement within 4 Monte Carlo standard errors


@numba.njit
def bernoulli_records(rng, theta, out):
    for i in range(out.shape[0]):
        beta_binomial.draw_record(rng, theta, out[i])


@numba.njit
def poisson_records(rng, theta, out):
    for i in range(out.shape[0]):
        poisson_gamma.draw_record(rng, theta, out[i])


@numba.njit
def categorical_records(rng, theta, out):
    for i in range(out.shape[0]):
        dm.draw_record(rng, theta, out[i])


def batched(model, draw_records) -> dw.Model:
    """``model`` with ``draw_records`` added."""
    return dw.Model(params=model.params, record_size=model.record_size,
                    draw_record=model.draw_record, draw_theta=model.draw_theta,
                    draw_prior=model.draw_prior, model_stat=model.user_model_stat,
                    stat_size=model.stat_size or None, draw_records=draw_records)


def reference_sweep(rng, theta, x, stats, total, log_g, s_dp, model, mech, random_scan):
    """One sweep of Ju et al. Algorithm 1, plain NumPy, its proposals drawn ahead: the next
    min(BLOCK, records left) of them whenever a block is used up."""
    x, stats, total = x.copy(), stats.copy(), total.copy()
    stat, n = mech.sampler_statistic.py_func, x.shape[0]
    block, taken, accepted = None, record.BLOCK, 0
    for visit in range(n):
        i = rng.integers(0, n) if random_scan else visit
        if taken == record.BLOCK:
            block = np.empty((min(record.BLOCK, n - visit), x.shape[1]))
            for row in block:
                model.draw_record.py_func(rng, theta, row)
            taken = 0
        proposal = block[taken].copy()
        taken += 1
        t_old, t_new = np.empty(mech.size), np.empty(mech.size)
        stat(x[i], s_dp, t_old)
        stat(proposal, s_dp, t_new)
        total_new = total + (t_new - t_old)
        log_alpha = mech.log_density.py_func(s_dp, total_new, mech.params) - log_g
        if log_alpha >= 0 or rng.random() < math.exp(log_alpha):
            s_old, s_new = np.empty(model.stat_size), np.empty(model.stat_size)
            model.model_stat.py_func(x[i], s_old)
            model.model_stat.py_func(proposal, s_new)
            stats += s_new - s_old
            x[i], total, log_g = proposal, total_new, log_g + log_alpha
            accepted += 1
    return x, stats, total, accepted / n


@pytest.mark.slow
@pytest.mark.parametrize("model, mech, draw_records, theta, n, random_scan", [
    # 600 = two full blocks and 88; 300 = one block and 44
    (beta_binomial.model(), beta_binomial.laplace(0.3), bernoulli_records, {"p": 0.4}, 600,
     False),
    (poisson_gamma.model(2, 1), poisson_gamma.laplace(0.8, c=3), poisson_records,
     {"lam": 2.0}, 300, False),
    (beta_binomial.model(), beta_binomial.laplace(0.3), bernoulli_records, {"p": 0.4}, 300,
     True),
])
def test_batched_sweep_is_algorithm_1_with_proposals_drawn_ahead(model, mech, draw_records,
                                                                theta, n, random_scan):
    theta = model.pack(theta)
    x = model.simulate(theta, n, seed=1)
    s_dp = mech.release(model.simulate(theta, n, seed=2), seed=3)
    fns = record.RecordFunctions(model.draw_record, model.propose_record, model.model_stat,
                                 mech.sampler_statistic, mech.log_density,
                                 draw_records=draw_records)
    chain = record.bind_chain(fns, record.SweepOptions(
        model.record_size, mech.size, model.stat_size, batched=True, random_scan=random_scan))
    inputs = record.Inputs(s_dp, mech.params, 1)
    state = chain.init(theta, x.copy(), inputs, np.empty(0), np.empty(0))
    expected = reference_sweep(np.random.default_rng(9), theta, x, state.stats, state.total,
                               state.log_g, s_dp, model, mech, random_scan)
    new, info = chain.sweep(np.random.default_rng(9), state, s_dp, mech.params)
    assert np.array_equal(new.x, expected[0])
    assert np.allclose(new.stats, expected[1], rtol=1e-12, atol=0)
    assert np.allclose(new.total, expected[2], rtol=1e-12, atol=0)
    assert info.accept_rate == expected[3] and 0 < info.accept_rate < 1


@pytest.mark.slow
def test_batched_posterior_is_exact_and_the_same_as_one_record_per_call(check_posterior):
    base, n = beta_binomial.model(2, 3), 600  # two full blocks and 88 per sweep
    mech = beta_binomial.laplace(0.1)
    s_dp = mech.release(base.simulate({"p": 0.3}, n, seed=4), seed=5)
    exact = beta_binomial.exact_posterior(mech, s_dp, n, 2, 3)
    draws = {}
    for name, model, seed in (("batched", batched(base, bernoulli_records), 6),
                              ("one per call", base, 7)):
        idata = dw.sample(model, mech, s_dp, n, draws=4000, tune=500, chains=4, seed=seed,
                          interweave=False, progress=False)
        draws[name] = diagnostics.group(idata, "posterior")["p"].values
        check_posterior(draws[name], exact)
    a, b = draws["batched"], draws["one per call"]
    for what, fa, fb in [("mean", a.mean(), b.mean()), ("sd", a.std(ddof=1), b.std(ddof=1))]:
        se = np.hypot(diagnostics.mcse(a, what), diagnostics.mcse(b, what))
        assert abs(fa - fb) < Z * se, f"{what}: {fa:.5f} vs {fb:.5f} (se {se:.2g})"


@pytest.mark.slow
def test_batched_sparse_sweep_matches_enumeration(check_posterior):
    # the entries path (one-hot counts, Laplace): 8 cells, 5 records, as in test_entries_path.py
    alpha, n = [0.5] * 8, 5
    mech = dw.Laplace(dm.one_hot, epsilon=1.0, sensitivity=2.0, size=8)
    assert mech.sparse is not None
    s_dp = mech.release(np.array([[0.0], [0.0], [3.0], [3.0], [5.0]]), seed=11)
    exact = dm.exact_posterior(mech, s_dp, n, alpha)
    idata = dw.sample(batched(dm.model(alpha), categorical_records), mech, s_dp, n, seed=1,
                      draws=3000, tune=300, chains=4, progress=False)
    p = diagnostics.group(idata, "posterior")["p"].values
    for j in (0, 3, 7):
        check_posterior(p[..., j], exact[j])


# Bad batched draws. Each writes at most one float past out: the guards catch that without
# corrupting memory.

@numba.njit
def one_row_too_many(rng, theta, out):
    for i in range(out.shape[0] + 1):  # no bounds check: row m is the float after out
        out[i, 0] = 1.0 if rng.random() < theta[0] else 0.0


@numba.njit
def first_row_only(rng, theta, out):
    out[0, 0] = 1.0 if rng.random() < theta[0] else 0.0


@numba.njit
def not_a_number(rng, theta, out):
    for i in range(out.shape[0]):
        out[i, 0] = math.nan


@numba.njit
def two_valued(rng, theta, out):
    for i in range(out.shape[0]):
        out[i, 0] = 2.0


@numba.njit
def past_out_in_a_full_block(rng, theta, out):
    """Right on the probes' small outs, one float past out on a block of 256."""
    for i in range(out.shape[0] + (1 if out.shape[0] == record.BLOCK else 0)):
        out[i, 0] = 1.0 if rng.random() < theta[0] else 0.0


@numba.njit
def nan_in_a_full_block(rng, theta, out):
    for i in range(out.shape[0]):
        out[i, 0] = math.nan if i == 200 else (1.0 if rng.random() < theta[0] else 0.0)


@numba.njit
def _binary(x_i):
    return x_i[0] == 0.0 or x_i[0] == 1.0


def _sample(draw_records, record_support=None):
    base = beta_binomial.model()
    model = dw.Model(params=base.params, record_size=1, draw_record=base.draw_record,
                     draw_theta=base.draw_theta, draw_prior=base.draw_prior,
                     model_stat=base.user_model_stat, stat_size=1,
                     record_support=record_support, draw_records=draw_records)
    dw.sample(model, beta_binomial.laplace(1.0), 30.0, 100, draws=10, tune=0, chains=1,
              seed=0, progress=False, interweave=False)


@pytest.mark.parametrize("draw_records, record_support, match", [
    (one_row_too_many, None, r"draw_records writes past the end of out: out, of shape "
                             r"\(m, record_size\) = \(1, 1\)"),
    (first_row_only, None, r"draw_records must fill out, of shape \(m, record_size\) = "
                           r"\(5, 1\), with finite values"),
    (not_a_number, None, "draw_records must fill out.*finite values"),
    (two_valued, _binary, r"draw_records wrote the record \[2\.\], which record_support "
                          r"rejects"),
])
def test_a_bad_draw_records_is_named_before_sampling(draw_records, record_support, match):
    with pytest.raises(ValueError, match=match):
        _sample(draw_records, record_support)


@pytest.mark.slow
@pytest.mark.parametrize("draw_records, match", [
    (past_out_in_a_full_block, r"draw_records writes past the end of out: out, of shape "
                               r"\(m, record_size\) = \(256, 1\)"),
    (nan_in_a_full_block, "draw_records wrote a non-finite value"),
])
def test_a_draw_records_failing_only_on_a_full_block_is_caught(draw_records, match):
    with pytest.raises(ValueError, match=match):
        _sample(draw_records)
