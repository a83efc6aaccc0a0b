"""Sparse statistics and coordinate-separable densities (dawrap.mechanisms.separable): the
per-coordinate terms give the dense density's differences, a declaration is checked and
found again, and the total through the entries is the dense total or says it is not."""
import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap.mechanisms import separable
from dawrap.mechanisms.gaussian import gaussian_log_density
from dawrap.mechanisms.laplace import laplace_log_density

SIZE = 5


@numba.njit
def one_hot(x_i, out):
    out[:] = 0.0
    out[int(x_i[0])] = 1.0


@numba.njit
def one_hot_entries(x_i, index, value):
    index[0] = int(x_i[0])
    value[0] = 1.0
    return 1


@numba.njit
def too_many_entries(x_i, index, value):
    index[0] = int(x_i[0])
    value[0] = 1.0
    return 2  # more pairs than the declared nnz = 1


@numba.njit
def entries_past_the_end(x_i, index, value):
    index[0] = int(x_i[0]) + SIZE  # an index outside the statistic
    value[0] = 1.0
    return 1


dw.declare_sparse(one_hot, one_hot_entries, nnz=1)


@pytest.mark.parametrize("coordinate, dense", [
    (separable.laplace_coordinate, laplace_log_density),
    (separable.gaussian_coordinate, gaussian_log_density),
], ids=["laplace", "gaussian"])
def test_the_coordinate_terms_sum_to_the_dense_density_differences(coordinate, dense):
    """The sparse record update uses sum_j l_j(T*_j) - l_j(T_j) over the changed
    coordinates; it must be the dense log density's difference (the constant cancels)."""
    rng = np.random.default_rng(3)
    params = np.r_[1.0 / rng.uniform(0.5, 3.0, SIZE), -7.25]
    s_dp = rng.normal(10.0, 4.0, SIZE)
    for _ in range(20):
        t = rng.integers(0, 20, SIZE).astype(float)
        moved = t.copy()
        changed = rng.choice(SIZE, size=2, replace=False)
        moved[changed[0]] -= 1.0
        moved[changed[1]] += 1.0
        sparse = sum(coordinate(s_dp[j], moved[j], j, params)
                     - coordinate(s_dp[j], t[j], j, params) for j in changed)
        assert sparse == pytest.approx(dense(s_dp, moved, params) - dense(s_dp, t, params),
                                       rel=1e-12, abs=1e-12)


def test_a_declaration_is_found_again_and_taken_by_the_mechanisms():
    form = separable.sparse_form(one_hot)
    assert form == separable.SparseForm(one_hot_entries, 1)
    assert repr(form) == "SparseForm(one_hot_entries, nnz=1)"
    assert dw.Laplace(one_hot, 1.0, size=SIZE).sparse is not None


def test_an_undeclared_statistic_has_no_sparse_form():
    @numba.njit
    def dense(x_i, out):
        out[0] = x_i[0]

    assert separable.sparse_form(dense) is None


@pytest.mark.parametrize("entries, nnz, error, said", [
    (lambda x_i, index, value: 1, 1, TypeError, "entries must be a numba.njit"),
    (numba.njit(lambda x_i, index: 1), 1, TypeError, r"entries must take \(x_i, index, value\)"),
    (one_hot_entries, 0, ValueError, "nnz must be an integer >= 1"),
    (one_hot_entries, 1.5, TypeError, "nnz must be an integer"),
])
def test_a_bad_declaration_is_refused_naming_the_argument(entries, nnz, error, said):
    @numba.njit
    def statistic(x_i, out):
        out[0] = x_i[0]

    with pytest.raises(error, match=said):
        dw.declare_sparse(statistic, entries, nnz)
    assert separable.sparse_form(statistic) is None  # nothing half-declared


def test_the_total_through_the_entries_is_the_dense_total():
    x = np.array([[0.0], [3.0], [3.0], [4.0], [1.0], [3.0]])
    entries = separable.entries_given_release(one_hot_entries)
    assert separable.entries_given_release(one_hot_entries) is entries  # compiled once
    total, ok = separable.total_from_entries(x, np.zeros(SIZE), entries, 1, SIZE)
    dense = np.zeros(SIZE)
    for row in x:
        out = np.empty(SIZE)
        one_hot(row, out)
        dense += out
    assert ok and np.array_equal(total, dense)
    assert dense.tolist() == [1.0, 1.0, 0.0, 3.0, 1.0]


@pytest.mark.parametrize("bad", [too_many_entries, entries_past_the_end],
                         ids=["count above nnz", "index outside"])
def test_entries_that_break_the_declaration_are_reported(bad):
    x = np.array([[0.0], [2.0]])
    _, ok = separable.total_from_entries(x, np.zeros(SIZE),
                                         separable.entries_given_release(bad), 1, SIZE)
    assert not ok


def test_a_misspelt_entries_slot_is_named():
    """Issue 28, item 1: the entries templates read declared slots (ENTRIES, NNZ, SIZE: a
    ``None`` and two zeros once, so a misspelt ``NZZ`` compiled ``NNZ = 0`` in, and every
    record's pairs were refused as too many). A misspelt name is refused naming the slot
    meant, a missing one naming the slot and what it holds; the names spelt right bind."""
    from dawrap.compile import templates as _templates
    entries = separable.entries_given_release(one_hot_entries)
    with pytest.raises(_templates.SlotError,
                       match="'NZZ' is not a slot .*mechanisms.separable; did you mean 'NNZ'"):
        _templates.bind((separable.total_of_entries,),
                        {"ENTRIES": entries, "NZZ": 1, "SIZE": SIZE})
    with pytest.raises(_templates.SlotError,
                       match="total_of_entries reads the slot 'NNZ' \\(int: most pairs"):
        _templates.bind((separable.total_of_entries,), {"ENTRIES": entries, "SIZE": SIZE})
    with pytest.raises(_templates.SlotError, match="'ENTRY' .*did you mean 'ENTRIES'"):
        _templates.bind((separable.entries_with_release,), {"ENTRY": one_hot_entries})
    x = np.array([[1.0], [3.0], [1.0]])
    total, ok = _templates.bind((separable.total_of_entries,), {
        "ENTRIES": entries, "NNZ": 1, "SIZE": SIZE}).total_of_entries(x, np.zeros(SIZE))
    assert ok and total.tolist() == [0.0, 2.0, 0.0, 1.0, 0.0]
