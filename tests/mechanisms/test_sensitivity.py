"""box_sensitivity against brute force: the supremum over a fine grid of the box (which holds
the vertices) equals the helper's value for monotone statistics, and a statistic whose
supremum lies inside the box is refused."""
import itertools

import numpy as np
import pytest

from dawrap.mechanisms import box_sensitivity


def value_and_square(x_i, out):
    out[0], out[1] = x_i[0], x_i[0] ** 2


def products(x_i, out):                     # a regression's sums: x1, x2, x1 x2
    out[0], out[1], out[2] = x_i[0], x_i[1], x_i[0] * x_i[1]


def mixed_directions(x_i, out):             # increasing in x1, decreasing in x2
    out[0], out[1], out[2] = x_i[0], -x_i[1], x_i[0] - 2.0 * x_i[1]


def _brute_force(statistic, size, lower, upper, norm, neighbours, points=41):
    axes = [np.linspace(a, b, points) for a, b in zip(lower, upper)]
    grid = np.array(list(itertools.product(*axes)))
    t = np.empty((len(grid), size))
    for row, x in zip(t, grid):
        statistic(x, row)
    if neighbours == "add/remove":
        return np.linalg.norm(t, ord=norm, axis=1).max()
    return max(np.linalg.norm(t - t[i], ord=norm, axis=1).max() for i in range(len(t)))


@pytest.mark.parametrize("statistic, size, lower, upper", [
    (value_and_square, 2, [0.0], [0.3]),
    (value_and_square, 2, [0.0], [3.0]),
    (value_and_square, 2, [1.0], [2.5]),
    (products, 3, [0.0, 0.0], [1.0, 1.0]),
    (products, 3, [0.5, 1.0], [2.0, 3.0]),
    (mixed_directions, 3, [-1.0, 0.0], [2.0, 1.5]),
])
@pytest.mark.parametrize("norm", [1, 2])
def test_replace_one_sensitivity_is_the_supremum_over_the_box(statistic, size, lower, upper,
                                                              norm):
    exact = box_sensitivity(statistic, size, lower, upper, norm=norm)
    assert exact == pytest.approx(_brute_force(statistic, size, lower, upper, norm, "replace"),
                                  rel=1e-12)


@pytest.mark.parametrize("B", [0.3, 1.0, 3.0])
def test_clamped_value_and_square_on_zero_to_b(B):
    """The guide's example: records in [0, B], statistic (x, x^2): B + B^2 in L1 under either
    neighbouring relation, sqrt(B^2 + B^4) in L2."""
    for neighbours in ("replace", "add/remove"):
        assert box_sensitivity(value_and_square, 2, [0.0], [B], neighbours=neighbours) == \
            pytest.approx(B + B ** 2, rel=1e-12)
        assert box_sensitivity(value_and_square, 2, [0.0], [B], norm=2,
                               neighbours=neighbours) == pytest.approx(np.hypot(B, B * B))
    assert box_sensitivity(products, 3, [0.0, 0.0], [B, B], neighbours="add/remove") == \
        pytest.approx(_brute_force(products, 3, [0, 0], [B, B], 1, "add/remove"))


def test_a_supremum_inside_the_box_is_refused():
    """(x, x^2) on [-B, B]: the vertices give 2B, the true replace-one L1 sensitivity is
    (B + 1/2)^2 (x = B against x' = -1/2), so the helper must refuse."""
    B = 3.0
    vertices = _brute_force(value_and_square, 2, [-B], [B], 1, "replace", points=2)
    truth = _brute_force(value_and_square, 2, [-B], [B], 1, "replace", points=601)
    assert vertices == pytest.approx(2 * B) and truth == pytest.approx((B + 0.5) ** 2)
    with pytest.raises(ValueError, match="not monotone in record coordinate 0"):
        box_sensitivity(value_and_square, 2, [-B], [B])


def test_add_remove_needs_monotone_absolute_values():
    def shifted(x_i, out):
        out[0] = x_i[0] - 1.0

    assert box_sensitivity(shifted, 1, [0.0], [3.0]) == pytest.approx(3.0)   # replace: fine
    with pytest.raises(ValueError, match="in absolute value"):
        box_sensitivity(shifted, 1, [0.0], [3.0], neighbours="add/remove")


def test_coordinates_monotone_in_no_common_order_are_refused():
    def sum_and_difference(x_i, out):
        out[0], out[1] = x_i[0] + x_i[1], x_i[0] - x_i[1]

    with pytest.raises(ValueError, match="not in one common order"):
        box_sensitivity(sum_and_difference, 2, [0.0, 0.0], [1.0, 1.0])


@pytest.mark.parametrize("kwargs, message", [
    ({"norm": 3}, "norm must be 1 or 2"),
    ({"neighbours": "swap"}, "neighbours must be"),
    ({"lower": [1.0], "upper": [0.0]}, "lower < upper"),
    ({"lower": [0.0], "upper": [np.inf]}, "finite bounds"),
])
def test_bad_arguments_are_named(kwargs, message):
    args = {"lower": [0.0], "upper": [1.0], **kwargs}
    with pytest.raises(ValueError, match=message):
        box_sensitivity(value_and_square, 2, **args)
