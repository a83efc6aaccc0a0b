"""The step protocol's run loop (dawrap.samplers.loop) and the flat form of kernel states
(dawrap.samplers.arrays)."""
from typing import NamedTuple

import numba
import numpy as np
import pytest

from dawrap.samplers import loop
from dawrap.samplers.arrays import flatten_state, is_state, unflatten_state
from dawrap.samplers.hmc import hmc
from dawrap.samplers.interweave import JumpMixture, MoveState
from dawrap.samplers.kernels import rw_init_state
from dawrap.samplers.status import BAD_THETA, OK


class Info(NamedTuple):
    status: int
    accepted: int
    value: float


class State(NamedTuple):
    theta: np.ndarray
    s_centre: np.ndarray


@numba.njit
def _counting_step(rng, state, inputs):
    """theta += inputs each iteration; a status of BAD_THETA once theta passes 10."""
    state.theta[0] += inputs
    state.s_centre[0] = -state.theta[0]
    if state.theta[0] > 10.0:
        return state, Info(BAD_THETA, 0, state.theta[0])
    return state, Info(OK, 1, 0.5 * state.theta[0])


@numba.njit
def _reset_at_tune(state, it, tune):
    if it == tune:
        state.theta[0] = 0.0


def _run(schedule, start, stop, tune, rows):
    run = loop.bind(_counting_step, schedule).run
    out = np.full((rows, 1), np.nan), np.full((rows, 2), np.nan), np.full((rows, 1), np.nan)
    state, done, status = run(np.random.default_rng(0), State(np.zeros(1), np.zeros(1)), 1.0,
                              start, stop, tune, *out)
    return state, done, status, out


def test_the_loop_keeps_theta_every_sample_stat_and_the_statistic_after_warm_up():
    _, done, status, (theta, stats, s) = _run(loop.unchanged, 0, 6, 3, 3)
    assert (done, status) == (6, OK)
    assert theta[:, 0].tolist() == [4.0, 5.0, 6.0]
    assert stats.tolist() == [[1.0, 2.0], [1.0, 2.5], [1.0, 3.0]]  # the fields after status
    assert s[:, 0].tolist() == [-4.0, -5.0, -6.0]


def test_the_schedule_runs_before_each_step_with_the_iteration():
    _, _, _, (theta, _, _) = _run(_reset_at_tune, 0, 6, 3, 3)
    assert theta[:, 0].tolist() == [1.0, 2.0, 3.0]  # reset to 0 just before iteration 3


def test_a_step_that_fails_stops_the_loop_at_its_iteration():
    _, done, status, (theta, _, _) = _run(loop.unchanged, 0, 20, 0, 20)
    assert (done, status) == (10, BAD_THETA)  # the 11th step (it = 10) failed
    assert np.isnan(theta[10:, 0]).all() and theta[9, 0] == 10.0


def test_the_sample_stats_are_the_info_fields_after_status():
    assert loop.sample_stat_names(Info) == ("accepted", "value")

    class NoStatus(NamedTuple):
        accepted: int

    with pytest.raises(TypeError, match="'status' as its first field"):
        loop.sample_stat_names(NoStatus)


def test_nested_states_flatten_in_field_order_and_come_back():
    walk = rw_init_state(np.array([1.0, 2.0]), np.array([0.1]))
    walk.factor[1, 0] = 7.0
    mixture = JumpMixture(np.array([2.0]), np.array([[3.0, 4.0]]),
                          np.array([[[1.0, 9.0], [0.5, 2.0]]])).state()
    state = MoveState(walk, mixture)
    flat = flatten_state(state)
    # 4 scalars, the mean, scatter and factor (row-major): the layout of the packed array the
    # walk's state replaced; then the mixture's log weight, mean and factor (upper triangle 0)
    assert flat.shape == (4 + 2 + 4 + 4 + 1 + 2 + 4,)
    assert flat[4:6].tolist() == [1.0, 2.0] and flat[12] == 7.0
    assert flat[-7:].tolist() == [0.0, 3.0, 4.0, 1.0, 0.0, 0.5, 2.0]
    fresh = MoveState(rw_init_state(np.zeros(2), np.array([0.1])),
                      JumpMixture(np.ones(1), np.zeros((1, 2)), np.ones((1, 2, 2))).state())
    again = unflatten_state(flat, fresh)
    assert type(again.walk).__name__ == "RandomWalkState" and again.walk.factor[1, 0] == 7.0
    assert type(again.mixture).__name__ == "MixtureState"
    assert again.mixture.factors[0].tolist() == [[1.0, 0.0], [0.5, 2.0]]
    assert np.array_equal(flatten_state(again), flat)
    flat[0] = 99.0  # the rebuilt state owns its arrays
    assert again.walk.log_step[0] == 0.0


def test_a_saved_state_of_another_size_is_refused():
    kernel = hmc(numba.njit(lambda u, x: (0.0, np.zeros(1))))
    with pytest.raises(ValueError, match="does not fit"):
        unflatten_state(np.zeros(13), kernel.init_state(np.zeros(1)))  # 8 + 4 d = 12


def test_what_counts_as_a_kernel_state():
    assert is_state(np.zeros(3)) and is_state(rw_init_state(np.zeros(1), np.array([0.1])))
    assert not is_state(np.zeros(3, dtype=np.int64))
    assert not is_state((np.zeros(1),))  # a plain tuple has no field names
