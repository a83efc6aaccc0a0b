"""The shared argument checks (dawrap._checks) that dw.sample and the method objects both use
(one as_count with an upper bound, one as_choice, instead of a copy in each module)."""
import numpy as np
import pytest

from dawrap._checks import MAX_COUNT, as_choice, as_count


def test_as_count_accepts_integers_within_the_bounds():
    assert as_count(np.int64(5), "n") == 5 and type(as_count(np.int64(5), "n")) is int
    assert as_count(0, "tune", minimum=0, maximum=MAX_COUNT) == 0
    assert as_count(2 ** 53, "n", maximum=MAX_COUNT) == 2 ** 53
    assert as_count(10 ** 30, "n") == 10 ** 30  # no maximum unless asked for


@pytest.mark.parametrize("value, kwargs, error, said", [
    (2 ** 53 + 1, dict(maximum=MAX_COUNT), ValueError,
     r"n must be an integer >= 1 and at most 2\*\*53, got 9007199254740993"),
    (7, dict(maximum=6), ValueError, r"n must be an integer >= 1 and at most 6, got 7"),
    (0, dict(maximum=6), ValueError, r"n must be an integer >= 1, got 0"),
    (True, dict(maximum=6), TypeError, r"n must be an integer >= 1, got True of type bool"),
    (2.0, {}, TypeError, r"n must be an integer >= 1, got 2.0 of type float"),
])
def test_as_count_names_the_argument_and_the_bounds(value, kwargs, error, said):
    with pytest.raises(error, match=said):
        as_count(value, "n", **kwargs)


def test_as_choice():
    assert as_choice("random", "scan", ("systematic", "random")) == "random"
    with pytest.raises(ValueError, match=r"scan must be 'systematic' or 'random', got 'Random'"):
        as_choice("Random", "scan", ("systematic", "random"))
    with pytest.raises(ValueError, match=r"variant must be one of \('a', 'b', 'c'\), got 'd'"):
        as_choice("d", "variant", ("a", "b", "c"))
    with pytest.raises(TypeError, match=r"scan must be 'systematic' or 'random', got .* of "
                                        r"type ndarray"):
        as_choice(np.array("random"), "scan", ("systematic", "random"))
