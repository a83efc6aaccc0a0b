"""The record sampler's driver: what it checks before and while the chains run (issue 18:
writes past out, a kernel that modifies x, records leaving the support, resumed state)."""
import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap.runner import checkpoint
from dawrap.samplers import record
from dawrap.models import beta_binomial, dirichlet_multinomial

KW = dict(draws=50, tune=10, chains=1, cores=1, seed=3, progress=False)


# A model of one's own, the Quickstart's: beta_binomial's record draw and count, and this
# conjugate draw of p.
@numba.njit
def _conjugate(rng, theta, x, stats):
    return np.array([rng.beta(1 + stats[0], 1 + x.shape[0] - stats[0])])


@numba.njit
def _modifies_x(rng, theta, x, stats):
    x[0, 0] = 1.0 - x[0, 0]  # writes to the imputed database: corrupts the posterior
    return np.array([rng.beta(1 + stats[0], 1 + x.shape[0] - stats[0])])


def _prior(rng):
    return np.array([rng.beta(1, 1)])


def _model(**kwargs):
    base = dict(params={"p": ()}, record_size=1, draw_record=beta_binomial.draw_record,
                draw_theta=_conjugate, model_stat=beta_binomial.count, stat_size=1,
                draw_prior=_prior)
    return dw.Model(**{**base, **kwargs})


def test_mismatched_layouts_are_refused_before_sampling():
    """The issue's example: a 5-category model with a 2-category release used to write past
    the mechanism's out and run to the end on some seeds."""
    model = dirichlet_multinomial.model(alpha=[1.0] * 5)
    mech = dirichlet_multinomial.laplace(epsilon=1, categories=2)
    for seed in (0, 5):
        with pytest.raises(ValueError, match="stat_size = 5 and the mechanism size = 2"):
            dw.sample(model, mech, [10.0, 10.0], 20, **{**KW, "seed": seed})


@numba.njit
def _one_hot_loose(x_i, out):  # trusts the record: category 3 writes out[3]
    for j in range(out.shape[0]):
        out[j] = 0.0
    out[int(x_i[0])] = 1.0


@numba.njit
def _draw_category(rng, theta, out):
    out[0] = 0.0 if rng.random() < 0.9 else 3.0  # mostly category 0, sometimes 3


@pytest.mark.slow
def test_a_statistic_writing_past_out_on_some_records_is_caught():
    """A single probe sees category 0 (90%); the full check of the starting database and of
    fresh draws finds the record that writes out[3] into an out of 2."""
    model = dw.Model(params={"p": ()}, record_size=1, draw_record=_draw_category,
                     draw_theta=_conjugate, draw_prior=_prior)
    mech = dw.Laplace(_one_hot_loose, epsilon=1.0, sensitivity=2.0, size=2)
    with pytest.raises(ValueError, match="statistic writes past the end of out"):
        dw.sample(model, mech, [10.0, 1.0], 20, **KW)
    x = np.zeros((20, 1))
    x[7] = 3.0
    model_quiet = dw.Model(params={"p": ()}, record_size=1,
                           draw_record=beta_binomial.draw_record,
                           draw_theta=_conjugate, draw_prior=_prior)
    with pytest.raises(ValueError, match=r"init_x\[7\]"):
        dw.sample(model_quiet, mech, [10.0, 1.0], 20, init_x=x, **KW)


@pytest.mark.slow
def test_a_kernel_that_modifies_x_fails_loudly():
    mech = dw.Laplace(beta_binomial.count, epsilon=1.0)
    with pytest.raises(ValueError, match="modified x outside the record sweep"):
        dw.sample(_model(draw_theta=_modifies_x), mech, 300.0, 1000, **KW)


@pytest.mark.slow
def test_a_python_kernel_gets_a_read_only_database():
    def modifies(rng, theta, x, stats):
        x[0, 0] = 0.5
        return np.array([rng.beta(1 + stats[0], 1 + x.shape[0] - stats[0])])

    with pytest.raises(ValueError, match="read-only"):
        dw.sample(_model(draw_theta=modifies), dw.Laplace(beta_binomial.count, epsilon=1.0),
                  300.0, 1000, **KW)


@numba.njit
def _draw_sometimes_two(rng, theta, out):
    u = rng.random()
    out[0] = 2.0 if u < 0.01 else (1.0 if u < theta[0] else 0.0)


@numba.njit
def _is_binary(x_i):
    return x_i[0] == 0.0 or x_i[0] == 1.0


@pytest.mark.slow
def test_records_leaving_the_support_during_the_sweep_fail_loudly():
    """The probe's first draw is binary; later draws of 2 used to bias the posterior with
    only an R-hat warning."""
    model = _model(draw_record=_draw_sometimes_two, record_support=_is_binary)
    with pytest.raises(ValueError, match="outside the model's record_support"):
        dw.sample(model, dw.Laplace(beta_binomial.count, epsilon=1.0), 300.0, 1000,
                  init_x=np.zeros((1000, 1)), **KW)


def test_consistency_tolerates_rounding_only():
    model, mech = beta_binomial.model(), beta_binomial.laplace(1.0)
    theta = np.array([0.3])
    x = model.simulate(theta, 200, seed=0)
    fns = record.RecordFunctions(model.draw_record, model.propose_record, model.model_stat,
                                 mech.sampler_statistic, mech.log_density)
    s_dp = np.array([60.0])
    chain = record.bind_chain(fns, record.SweepOptions(model.record_size, mech.size,
                                                       model.stat_size))
    state = chain.init(theta, x, record.Inputs(s_dp, mech.params, 1), np.empty(0), np.empty(0))
    assert chain.consistency(state, s_dp)[2] == record.OK
    state.total[0] += 1e-12 * x.sum()
    assert chain.consistency(state, s_dp)[2] == record.OK
    state.total[0] += 1.0
    assert chain.consistency(state, s_dp)[2] == record.BAD_DRIFT


def _checkpointed(tmp_path):
    model, mech = beta_binomial.model(), beta_binomial.laplace(0.5)
    folder = tmp_path / "run"
    dw.sample(model, mech, 300.0, 1000, checkpoint=folder, checkpoint_every=20, **KW)
    return model, mech, folder


def _tamper(folder, **changes):
    path = folder / "chain0.npz"
    with np.load(path) as data:
        saved = {k: data[k].copy() for k in data.files}
    for key, change in changes.items():
        change(saved[key])
    with open(path, "wb") as f:
        np.savez(f, **saved)


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_resuming_a_checkpoint_with_nan_records_is_an_error_not_a_hang(tmp_path):
    model, mech, folder = _checkpointed(tmp_path)
    _tamper(folder, x=lambda x: x.__setitem__((0, 0), np.nan))
    with pytest.raises(ValueError, match="chain0"):
        dw.sample(model, mech, 300.0, 1000, resume=folder, **KW)


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_resuming_inconsistent_running_sums_is_an_error(tmp_path):
    model, mech, folder = _checkpointed(tmp_path)
    _tamper(folder, stats=lambda s: s.__iadd__(7.0))
    with pytest.raises(ValueError, match="chain 0 .*inconsistent"):
        dw.sample(model, mech, 300.0, 1000, resume=folder, **KW)
    assert checkpoint.FORMAT >= 4


def test_a_model_start_database_builds_and_checks_every_chain_start():
    """Model(start_database=): called once per chain with the user's init_x (or None); its
    database is the chain's start, and what it raises reaches the caller."""
    calls = []

    def start(rng, theta, n, mechanism, s_dp, init_x):
        calls.append((n, init_x is None, mechanism.size, float(s_dp[0])))
        if init_x is not None and init_x.sum() != 7:
            raise ValueError("init_x must hold 7 ones")
        return np.r_[np.ones(7), np.zeros(n - 7)][:, None] if init_x is None else init_x

    model = _model(start_database=start)
    mech = beta_binomial.laplace(epsilon=1.0)
    idata = dw.sample(model, mech, 7.0, 20, **{**KW, "chains": 2, "keep_stats": True,
                                                "tune": 0, "draws": 1})
    assert calls == [(20, True, 1, 7.0)] * 2
    with pytest.raises(ValueError, match="init_x must hold 7 ones"):
        dw.sample(model, mech, 7.0, 20, init_x=np.zeros((20, 1)), **KW)
    assert dw.diagnostics.group(idata, "imputed_statistic")["t"].shape == (2, 1, 1)

    def wrong_shape(rng, theta, n, mechanism, s_dp, init_x):
        return np.zeros((n - 1, 1))

    with pytest.raises(ValueError, match=r"start_database returned a database of shape "
                                         r"\(19, 1\), not \(n, record_size\) = \(20, 1\)"):
        dw.sample(_model(start_database=wrong_shape), mech, 7.0, 20, **KW)
    with pytest.raises(TypeError, match="start_database must be callable"):
        _model(start_database=3)


@numba.njit
def _half_move(rng, state, s_dp, params, tuning):
    return state, 0.5, record.OK


def test_a_models_records_move_runs_every_iteration_in_the_move_slot():
    model = _model(records_move=_half_move)
    idata = dw.sample(model, beta_binomial.laplace(epsilon=1.0), 7.0, 20, **KW)
    accept = dw.diagnostics.group(idata, "sample_stats")["move_accept"].values
    assert accept.shape == (1, 50) and np.all(accept == 0.5)
    with pytest.raises(TypeError, match="records_move"):
        _model(records_move=lambda rng, state, s_dp, params, tuning: (state, 0.0, 0))


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_the_move_slot_is_the_models_move_unless_interweave_is_asked_for():
    """The chain has one records-move slot: the automatic interweave choice leaves it to the
    model's own move; interweave=True takes it, with a warning naming the move."""
    model = _model(records_move=_half_move, noncentred=beta_binomial.model().noncentred)
    mech = beta_binomial.laplace(epsilon=0.05)  # noise hides most: auto would interweave
    plain = _model(noncentred=beta_binomial.model().noncentred)
    auto_plain = dw.Record().prepare(plain, mech, 20, np.array([7.0]))
    assert auto_plain.interweave > 0
    idata = dw.sample(model, mech, 7.0, 20, **KW)
    assert dw.diagnostics.attrs(idata)["interweave"] == 0
    assert np.all(dw.diagnostics.group(idata, "sample_stats")["move_accept"].values == 0.5)
    with pytest.warns(UserWarning, match="own records move .* does not run"):
        idata = dw.sample(model, mech, 7.0, 20, interweave=True, **KW)
    assert not np.all(dw.diagnostics.group(idata, "sample_stats")["move_accept"].values == 0.5)


def test_a_kernels_stats_may_not_reuse_the_chains_names():
    assert record.sample_stats(("theta_accept", "step_size"))[2:4] == ("theta_accept",
                                                                       "step_size")
    for clash in (("accept_rate",), ("move_accept",), ("a", "a")):
        with pytest.raises(ValueError, match="reuse a name of the record chain's own"):
            record.sample_stats(clash)
