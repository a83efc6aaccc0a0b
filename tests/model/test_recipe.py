"""Objects built by a recipe pickle as the call that built them (dawrap.model.recipe): the
stamp, the rebuild once per process, and the refusal of an object built otherwise."""
import pickle

import numpy as np
import pytest

import dawrap as dw
from dawrap.model.recipe import rebuild, reduce_by_recipe
from dawrap.models import beta_binomial


class Built:
    """Something a factory returns (any object that takes attributes)."""


def test_a_recipe_stamps_what_it_builds_with_the_call():
    def factory(a, *, b=2):
        return Built()

    decorated = dw.recipe(factory)
    assert decorated.is_recipe and decorated.__name__ == "factory"
    obj = decorated(1, b=3)
    assert obj._recipe == (__name__, factory.__qualname__, (1,), {"b": 3})
    assert reduce_by_recipe(obj) == (rebuild, obj._recipe)


def test_an_object_without_a_recipe_is_refused_with_advice():
    with pytest.raises(TypeError, match=r"cannot be sent to another process.*@dw.recipe.*"
                                        r"executor='threads'"):
        reduce_by_recipe(Built())


def test_a_model_and_a_mechanism_travel_as_their_recipes_and_are_rebuilt_once():
    model, mech = beta_binomial.model(a=2.0, b=3.0), beta_binomial.laplace(epsilon=0.7)
    for obj in (model, mech):
        data = pickle.dumps(obj)
        assert len(data) < 1000  # the call, not compiled code
        again = pickle.loads(data)
        assert again is pickle.loads(data)  # rebuilt once per process, then reused
        assert again._recipe == obj._recipe
    assert pickle.loads(pickle.dumps(model)).name == model.name
    rebuilt = pickle.loads(pickle.dumps(mech))
    assert rebuilt.fingerprint == mech.fingerprint and rebuilt.scale == mech.scale


def test_rebuild_calls_the_factory_by_its_import_path():
    mech = rebuild("dawrap.models.beta_binomial", "laplace", (0.25,), {})
    assert mech.scale == 4.0 and mech.epsilon == 0.25
    assert rebuild("dawrap.models.beta_binomial", "laplace", (0.25,), {}) is mech
    assert rebuild("dawrap.models.beta_binomial", "laplace", (0.5,), {}) is not mech
    assert np.isclose(rebuild("dawrap.models.beta_binomial", "laplace", (0.5,), {}).scale, 2.0)


def test_the_fingerprint_holds_every_array_value_exactly():
    """numpy's repr rounds to 8 digits and elides long arrays: two priors that differ in the
    ninth digit, or in the middle of a long array, printed alike, so a stored study of one
    resumed for the other. Small arrays are written by value, large ones by digest."""
    from dawrap.models import dirichlet_multinomial
    near = [dirichlet_multinomial.model(alpha=np.array([1.0, 1.0, a])).fingerprint
            for a in (1.0, 1.0 + 1e-9)]
    assert near[0] != near[1] and "1.000000001" in near[1]
    assert near[0] == dirichlet_multinomial.model(alpha=np.array([1.0, 1.0, 1.0])).fingerprint
    long = np.ones(5000)
    edited = long.copy()
    edited[2500] = 2.0
    prints = [dirichlet_multinomial.model(alpha=a).fingerprint for a in (long, edited)]
    assert prints[0] != prints[1] and "sha256=" in prints[0] and "..." not in prints[0]
    assert prints[0] == dirichlet_multinomial.model(alpha=long.copy()).fingerprint
    # numpy scalars keep their value and type; lists and plain floats stay as Python writes them
    assert "float64(0.1)" in dirichlet_multinomial.model(alpha=[np.float64(0.1)] * 3).fingerprint
    assert dirichlet_multinomial.model(alpha=[0.5, 0.5]).fingerprint.endswith(
        "model(*(), **{'alpha': [0.5, 0.5]})")
