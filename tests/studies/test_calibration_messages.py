"""Messages a newcomer meets when calling calibrate and sample wrongly (issue 29 item 17):
each names the argument and says what to do, in a line or two."""
import pickle

import numpy as np
import pytest

import dawrap as dw
from dawrap.models import beta_binomial

MODEL, MECH = beta_binomial.model(), beta_binomial.laplace(0.5)


def test_sample_arguments_given_to_calibrate_point_to_sample_kwargs():
    with pytest.raises(TypeError, match=r"calibrate\(\) takes no draws, tune: pass "
                                        r"sample_kwargs=\{'draws': \.\.\., 'tune': \.\.\.\}"):
        dw.calibrate(MODEL, MECH, 20, ["naive"], trials=2, seed=0, draws=300, tune=100)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        dw.calibrate(MODEL, MECH, 20, ["naive"], trials=2, seed=0, bogus=1)


@pytest.mark.parametrize("call", [
    lambda n: dw.calibrate(MODEL, MECH, n, ["naive"], trials=2, seed=0),
    lambda n: dw.sample(MODEL, MECH, 3.0, n, method="naive"),
])
def test_an_array_passed_as_n_is_described_not_printed(call):
    with pytest.raises(TypeError) as error:
        call(np.arange(5000))
    message = str(error.value)
    assert message.startswith("n must be an integer >= 1, got an array of shape (5000,)")
    assert len(message) < 200


def test_the_pickling_error_names_the_decorator_as_users_write_it():
    handmade = dw.Model(params={"p": ()}, record_size=1, draw_record=beta_binomial.draw_record,
                        draw_theta=MODEL.draw_theta, model_stat=beta_binomial.count,
                        stat_size=1, draw_prior=lambda rng: np.array([rng.beta(1, 1)]))
    with pytest.raises(TypeError) as error:
        pickle.dumps(handmade)
    assert "@dw.recipe" in str(error.value) and "dawrap.recipe.recipe" not in str(error.value)
