"""The record chain on the one step protocol (issue 28 item 2): ``chain.step(rng, state,
inputs) -> (state, RecordInfo)``, its sample stats declared by RecordInfo's fields, and the
one run loop (dawrap.samplers.loop) storing its draws, for a compiled theta kernel and for a
plain Python one alike."""
import math

import numpy as np
import pytest

from dawrap.models import beta_binomial
from dawrap.samplers import loop, record
from dawrap.samplers.kernels import as_kernel

MODEL, MECH = beta_binomial.model(1.0, 1.0), beta_binomial.laplace(0.5)
FNS = record.RecordFunctions(MODEL.draw_record, MODEL.propose_record, MODEL.model_stat,
                             MECH.sampler_statistic, MECH.log_density)


OPTIONS = record.SweepOptions(MODEL.record_size, MECH.size, MODEL.stat_size,
                              shared=MODEL.user_model_stat is MECH.statistic)


def _setup(n=60):
    x = MODEL.simulate({"p": 0.3}, n, seed=1)
    s_dp = MECH.release(x, seed=2)
    return x, s_dp, record.Inputs(s_dp, MECH.params, 2)


@pytest.fixture(scope="module")
def compiled():
    """The chain with the model's compiled conjugate draw as its theta kernel."""
    return record.bind_chain(FNS, OPTIONS, kernel_step=as_kernel(MODEL.draw_theta, False).step)


def _trace(draws, keep_total=True):
    return record.Trace(np.full((draws, MODEL.theta_size), np.nan),
                        np.full((draws, len(record.SAMPLE_STATS)), np.nan),
                        np.full((draws if keep_total else 0, MECH.size), np.nan))


def test_the_sample_stats_are_the_info_fields():
    """SAMPLE_STATS (what the runner names sample_stats after, for the default kernel info)
    is RecordInfo's declaration with the kernel's info in its place, in the order the loop
    stores the columns."""
    fields = loop.sample_stat_names(record.RecordInfo)
    assert fields == ("accept_rate", "min_accept_prob", "kernel", "move_accept")
    assert record.sample_stats() == tuple(record.SAMPLE_STATS)
    assert record.RecordInfo._fields[0] == "status"


def test_run_keeps_what_the_steps_report(compiled):
    """``chain.run`` over iterations 0..5 with 2 of warm-up keeps, row for row, the theta,
    the info's sample stats and the running total that ``schedule`` + ``step`` give by hand
    from the same generator: the loop adds nothing of its own to an iteration."""
    x, s_dp, inputs = _setup()
    tune, stop = 2, 6
    by_loop = compiled.init(MODEL.pack({"p": 0.3}), x.copy(), inputs, np.empty(0), np.empty(0))
    trace = _trace(stop - tune)
    by_loop, done, status = compiled.run(np.random.default_rng(7), by_loop, inputs, 0, stop,
                                         tune, *trace)
    assert (done, status) == (stop, record.OK)

    state = compiled.init(MODEL.pack({"p": 0.3}), x.copy(), inputs, np.empty(0), np.empty(0))
    rng = np.random.default_rng(7)
    for it in range(stop):
        record.schedule(state, it, tune)
        state, info = compiled.step(rng, state, inputs)
        assert isinstance(info, record.RecordInfo) and info.status == record.OK
        if it >= tune:
            row = it - tune
            assert np.array_equal(trace.theta[row], state.theta)
            flat = [info.accept_rate, info.min_accept_prob, *info.kernel, info.move_accept]
            assert np.array_equal(trace.stats[row], np.array(flat), equal_nan=True)
            assert np.array_equal(trace.total[row], state.total)
    assert np.array_equal(by_loop.x, state.x)
    assert 0.0 < trace.stats[:, 0].min() and trace.stats[:, 0].max() <= 1.0  # accept_rate
    assert np.all(np.isnan(trace.stats[:, 2:]))  # no theta acceptance, no move reported


def test_a_failed_step_stops_the_loop_before_keeping_its_draw(compiled):
    """A kernel that returns a non-finite theta: the loop returns the iteration and the
    step's status, and the row stays unwritten."""
    x, s_dp, inputs = _setup()
    state = compiled.init(MODEL.pack({"p": 0.3}), x.copy(), inputs, np.empty(0), np.empty(0))
    given = record.bind_chain(FNS, OPTIONS)
    state = state._replace(kernel_state=record.given_theta_state(np.array([np.nan])))
    trace = _trace(3)
    _, done, status = given.run(np.random.default_rng(0), state, inputs, 0, 3, 0, *trace)
    assert (done, status) == (0, record.BAD_THETA)
    assert np.all(np.isnan(trace.theta))


def test_a_python_draw_theta_runs_through_the_same_loop():
    """The kernel of a plain Python ``draw_theta`` (``given_theta``, bind_chain's default)
    takes the theta and acceptance probability the runner wrote into the kernel state: the
    iteration keeps exactly them, and sweeps the records at that theta."""
    x, s_dp, inputs = _setup()
    chain = record.bind_chain(FNS, OPTIONS)
    theta = MODEL.pack({"p": 0.3})
    state = chain.init(theta, x.copy(), inputs, record.given_theta_state(theta), np.empty(0))
    trace = _trace(2)
    for it, (p, accept) in enumerate([(0.25, 0.5), (0.75, math.nan)]):
        state.kernel_state[:-1], state.kernel_state[-1] = [p], accept
        state, done, status = chain.run(np.random.default_rng(it), state, inputs, it, it + 1,
                                        0, *trace)
        assert (done, status) == (it + 1, record.OK)
        assert trace.theta[it].tolist() == [p]
        assert np.array_equal(trace.stats[it, 2], accept, equal_nan=True)  # theta_accept
    assert trace.total[1, 0] == state.total[0]  # the kept statistic: the running total
