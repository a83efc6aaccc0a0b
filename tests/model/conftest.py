"""What the tests of ``dw.Model`` share: models to register whose draws never run."""
import numba
import pytest

import dawrap as dw


@numba.njit
def _normal_record(rng, theta, out):
    out[0] = theta[0] + rng.standard_normal()


@numba.njit
def _theta_kept(rng, theta, x, stats):
    return theta


@pytest.fixture
def registered():
    """``registered(**kw)``: ``dw.Model(**kw)`` with records of one value, normal about
    theta's first, and a theta draw that keeps theta: a model to build and inspect (no chain
    runs); ``kw`` gives the parameters and prior, and may replace the draws."""

    def model(**kw):
        return dw.Model(**{"record_size": 1, "draw_record": _normal_record,
                           "draw_theta": _theta_kept, **kw})

    return model
