"""The user-function protocols (dawrap.model.protocols): the checks of NonCentred and
PreparedDraw name the function at fault, and the compiled database draw is the model's record
draw repeated (with or without a per-sweep table)."""
import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap.model.protocols import Kernel, NonCentred, PreparedDraw, database_drawer, no_state
from dawrap.models import beta_binomial, dirichlet_multinomial


@numba.njit
def shift(theta, z_i, out):
    out[0] = theta[0] + z_i[0]


@numba.njit
def unshift(rng, theta, x_i, z_out):
    z_out[0] = x_i[0] - theta[0]


@numba.njit
def flat(theta):
    return 0.0


def test_noncentred_checked_normalises_its_sizes():
    checked = NonCentred(shift, unshift, flat, noise_size=np.int64(2),
                         initial_scale=np.array([0.5, 0.25])).checked()
    assert type(checked.noise_size) is int and checked.noise_size == 2
    assert checked.initial_scale == (0.5, 0.25)
    hash(checked)  # hashable: the interweaving move is compiled once per parameterisation
    assert NonCentred(shift, unshift, flat).checked().initial_scale == (0.1,)


@pytest.mark.parametrize("fields, error, said", [
    (dict(record_from_noise=print), TypeError, "record_from_noise must be a numba.njit"),
    (dict(noise_from_record=print), TypeError, "noise_from_record must be a numba.njit"),
    (dict(log_prior=print), TypeError, "log_prior must be a numba.njit"),
    (dict(noise_size=0), ValueError, "noise_size must be an integer >= 1"),
    (dict(noise_size=True), TypeError, "noise_size must be an integer"),
])
def test_noncentred_checked_names_what_is_wrong(fields, error, said):
    with pytest.raises(error, match=said):
        NonCentred(shift, unshift, flat)._replace(**fields).checked()


def test_prepared_draw_checked_names_the_function_and_its_arity():
    good = dirichlet_multinomial.PREPARED
    assert good.checked() is good

    @numba.njit
    def two(rng, theta):
        pass

    with pytest.raises(TypeError, match=r"prepared.draw_record must take \(rng, theta, table, "
                                        r"out\)"):
        PreparedDraw(good.prepare, two).checked()
    with pytest.raises(TypeError, match=r"prepared.propose_record must be a numba.njit"):
        PreparedDraw(good.prepare, good.draw_record, propose_record=print).checked()


def test_database_draw_is_the_record_draw_repeated():
    """The compiled database draw calls draw_record once per record, in order, on the same
    generator: the same records as a Python loop over draw_record."""
    theta = np.array([0.3])
    drawn = database_drawer(beta_binomial.draw_record, 1)(np.random.default_rng(5), theta, 50)
    rng, loop = np.random.default_rng(5), np.empty((50, 1))
    for i in range(50):
        beta_binomial.draw_record(rng, theta, loop[i])
    assert drawn.shape == (50, 1) and np.array_equal(drawn, loop)
    assert 0 < drawn.sum() < 50


def test_database_draw_with_a_table_builds_it_once_and_draws_the_same_records():
    """With a PreparedDraw the table is built once and every record drawn from it; the
    categorical table returns the scan's category, so the records are the plain draw's."""
    theta = np.array([0.1, 0.2, 0.3, 0.4])
    plain = database_drawer(dirichlet_multinomial.draw_record, 1)(
        np.random.default_rng(9), theta, 200)
    tabled = database_drawer(dirichlet_multinomial.draw_record, 1,
                             dirichlet_multinomial.PREPARED)(np.random.default_rng(9), theta, 200)
    assert np.array_equal(plain, tabled)
    assert set(np.unique(plain)) == {0.0, 1.0, 2.0, 3.0}


def test_a_kernel_defaults_and_no_state():
    kernel = Kernel(step=None, init_state=no_state)
    assert kernel.name == "kernel"
    assert kernel.init_state(np.ones(3)).shape == (0,)
    assert dw.kernels.Kernel is Kernel
