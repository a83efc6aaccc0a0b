"""Every built-in model that declares a prepared record draw (``Model.prepared``, a table
built once per sweep): it draws the records its plain ``draw_record`` draws, and their
frequencies are the model's exact record probabilities.

A new model with a prepared draw gets an entry in ``CASES``: its factory, a theta, and the
exact probability of every record (with the record -> cell map)."""
import numpy as np
import pytest
from scipy import stats

from dawrap.model.protocols import database_drawer
from dawrap.models import contingency, dirichlet_multinomial, naive_bayes

I, J, LEVELS = 3, (2, 5, 3), (2, 3, 4)


def _naive_bayes_probabilities(theta: dict) -> np.ndarray:
    """P(y, x_1, x_2, x_3) = pi_y prod_k p^k[y, x_k], over the records in C order."""
    pi, (p1, p2, p3) = theta["pi"], (theta[f"p{k}"] for k in (1, 2, 3))
    return (pi[:, None, None, None] * p1[:, :, None, None] * p2[:, None, :, None]
            * p3[:, None, None, :]).ravel()


def _sparse_cells(k: int, seed: int) -> np.ndarray:
    """Probabilities with zeros and tiny cells among large ones."""
    p = np.random.default_rng(seed).dirichlet(np.full(k, 0.3))
    p[[1, 4]] = 0.0
    p[2] = 1e-4
    return p / p.sum()


#: model name -> (the model, theta, exact record probabilities, record -> cell index)
CASES = {
    "dirichlet_multinomial": (
        lambda: dirichlet_multinomial.model(np.ones(9)), {"p": _sparse_cells(9, 0)},
        lambda theta: theta["p"], lambda x: x[:, 0].astype(int)),
    "contingency": (
        lambda: contingency.model(LEVELS), {"p": _sparse_cells(24, 1)},
        lambda theta: theta["p"],
        lambda x: np.ravel_multi_index(x.T.astype(int), LEVELS)),
    "naive_bayes": (
        lambda: naive_bayes.model(I, list(J)), naive_bayes.draw_parameters(I, list(J), seed=2),
        _naive_bayes_probabilities,
        lambda x: np.ravel_multi_index(x.T.astype(int), (I, *J))),
}

N = 200_000


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_prepared_draw_is_the_plain_draw(name):
    factory, theta, _, _ = CASES[name]
    model = factory()
    assert model.prepared is not None
    theta = model.pack(theta)
    plain = database_drawer(model.draw_record, model.record_size)
    # the tables' draws are the scans' for the same uniforms: the same records, bit for bit
    assert np.array_equal(model.simulate(theta, 20_000, seed=3),
                          plain(np.random.default_rng(3), theta, 20_000))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_prepared_draws_have_the_exact_record_probabilities(name):
    factory, theta, probabilities, cell = CASES[name]
    model = factory()
    exact = probabilities(theta)
    assert np.isclose(exact.sum(), 1.0)
    counts = np.bincount(cell(model.simulate(theta, N, seed=4)), minlength=exact.size)
    assert counts.size == exact.size and np.all(counts[exact == 0] == 0)
    # Pearson's chi-square over the possible records; the threshold fails a correct draw
    # with probability 1e-6 (the seed is fixed, so the run is deterministic either way).
    positive = exact > 0
    df = positive.sum() - 1
    threshold = stats.chi2.ppf(1 - 1e-6, df)

    def chi_square(p):
        expected = N * p[positive]
        return np.sum((counts[positive] - expected) ** 2 / expected)

    assert chi_square(exact) < threshold
    # The test can fail: probabilities moved 2% of the way towards uniform are rejected.
    moved = 0.98 * exact + 0.02 * positive / positive.sum()
    assert chi_square(moved) > threshold
