"""The record draw with a per-sweep table, ``dw.Model(prepared=dw.PreparedDraw(...))``: each
sweep proposes through it (dense and entries path, with and without a general proposal), a
chain of a built-in model gives the draws it gave without it, a hierarchical model with one
table row per area and a prepared proposal gives the exact posterior, and a bad prepared
draw is named before sampling."""
import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import dirichlet_multinomial as dm
from dawrap.samplers import record, entries_path

# -- the sweep proposes through the table ---------------------------------------------------
# Deliberately told apart: the plain draws write category PLAIN, the prepared ones the
# category the table holds (theta's largest cell), so the records after one sweep show which
# the sweep called.

PLAIN = 2.0


@numba.njit
def plain_draw(rng, theta, out):
    out[0] = PLAIN


@numba.njit
def plain_proposal(rng, theta, x_i, out):
    out[0] = PLAIN
    return 0.0


@numba.njit
def largest_cell(theta):
    return np.array([float(np.argmax(theta))])


@numba.njit
def draw_from_table(rng, theta, table, out):
    out[0] = table[0]


@numba.njit
def propose_from_table(rng, theta, table, x_i, out):
    out[0] = table[0]
    return 0.0


def one_sweep(mech, general, propose_prepared):
    """Records all in category 1, one sweep at a theta whose largest cell is 5, with a
    mechanism so noisy that nearly every proposal is accepted; returns the records after."""
    k, n = 8, 400
    theta = np.full(k, 0.5 / (k - 1))
    theta[5] = 0.5
    x = np.ones((n, 1))
    s_dp = np.full(k, n / k)
    fns = record.RecordFunctions(plain_draw, plain_proposal, dm.one_hot,
                                 mech.sampler_statistic, mech.log_density,
                                 **entries_path.entries_fields(dm.model(np.ones(k)), mech),
                                 prepare=largest_cell, draw_prepared=draw_from_table,
                                 **({"propose_prepared": propose_from_table}
                                    if propose_prepared else {}))
    chain = record.bind_chain(fns, record.SweepOptions(1, k, k, general=general, prepared=True))
    inputs = record.Inputs(s_dp, mech.params, 1)
    state = chain.init(theta, x, inputs, np.empty(0), np.empty(0))
    state, info = chain.sweep(np.random.default_rng(0), state, s_dp, mech.params)
    assert info.status == record.OK and info.accept_rate > 0.9
    return set(state.x[:, 0])


@numba.njit
def dense_one_hot(x_i, out):
    dm.one_hot(x_i, out)


@pytest.mark.slow
@pytest.mark.parametrize("path", ["sparse", "dense"])
@pytest.mark.parametrize("general, propose_prepared, proposed", [
    (False, False, 5.0),    # Algorithm 1: the prepared draw
    (True, True, 5.0),      # a general proposal with a prepared form: that form
    (True, False, PLAIN),   # a general proposal without one: the plain proposal
])
def test_each_sweep_proposes_through_the_table(path, general, propose_prepared, proposed):
    mech = (dm.laplace(1e-6, 8) if path == "sparse" else
            dw.Laplace(dense_one_hot, epsilon=1e-6, sensitivity=2.0, size=8))
    assert (mech.sparse is not None) == (path == "sparse")
    assert one_sweep(mech, general, propose_prepared) - {1.0} == {proposed}


# -- a built-in model: the same chain with and without the table -----------------------------

@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:R-hat")  # 50 draws: the draws are compared, not mixed
def test_dirichlet_multinomial_gives_the_draws_it_gave_without_the_table():
    # The table's draw is the scan's, uniform for uniform: the chain is bit for bit the same,
    # so the posterior is the one tests/models/test_dirichlet_multinomial.py checks.
    alpha, n = np.ones(12), 300
    model, mech = dm.model(alpha), dm.laplace(1.0, 12)
    assert model.prepared is dm.PREPARED
    plain = dw.Model(params=model.params, record_size=1, draw_record=dm.draw_record,
                     draw_theta=model.draw_theta, draw_prior=model.draw_prior,
                     model_stat=dm.one_hot, stat_size=12, theta_support=model.theta_support,
                     record_support=model.record_support)
    s_dp = mech.release(model.simulate({"p": np.random.default_rng(1).dirichlet(alpha)}, n,
                                       seed=2), seed=3)
    draws = [diagnostics.group(dw.sample(m, mech, s_dp, n, draws=50, tune=10, chains=2,
                                         seed=4, progress=False), "posterior")["p"].values
             for m in (model, plain)]
    assert np.array_equal(draws[0], draws[1])


# -- one table row per area, and a prepared proposal that keeps the area --------------------
# Areas of public sizes, each with its own categorical p_a ~ Dirichlet(1); the release is
# the (area, category) table with Laplace noise on each cell. The proposal keeps a record's
# area and draws its category from p_a (log Hastings ratio 0), as small_area's does. Given
# the areas' sizes the areas are independent, so each p_a's exact posterior is
# dirichlet_multinomial's for that area alone.

AREAS, CATS, SIZES = 2, 3, (9, 6)
SHARES = np.cumsum(SIZES) / sum(SIZES)


@numba.njit
def _category(rng, theta, a):
    u, acc = rng.random(), 0.0
    for c in range(CATS - 1):
        acc += theta[a * CATS + c]
        if u < acc:
            return c
    return CATS - 1


@numba.njit
def area_record(rng, theta, out):
    a = min(np.searchsorted(SHARES, rng.random(), side="right"), AREAS - 1)
    out[0] = a
    out[1] = _category(rng, theta, a)


@numba.njit
def keep_area(rng, theta, x_i, out):
    out[1] = _category(rng, theta, int(x_i[0]))
    return 0.0


@numba.njit
def area_tables(theta):
    cumulative = np.empty((AREAS, CATS))
    guide = np.empty((AREAS, dw.random.guide_size(CATS)), dtype=np.int32)
    for a in range(AREAS):
        dw.random.fill_categorical_table(theta[a * CATS:(a + 1) * CATS], cumulative[a],
                                         guide[a])
    return cumulative, guide


@numba.njit
def area_record_from_tables(rng, theta, table, out):
    a = min(np.searchsorted(SHARES, rng.random(), side="right"), AREAS - 1)
    out[0] = a
    out[1] = dw.random.categorical(rng, table[0][a], table[1][a])


@numba.njit
def keep_area_from_tables(rng, theta, table, x_i, out):
    a = int(x_i[0])
    out[1] = dw.random.categorical(rng, table[0][a], table[1][a])
    return 0.0


@numba.njit
def area_cell(x_i, out):
    out[:] = 0.0
    out[int(x_i[0]) * CATS + int(x_i[1])] = 1.0


@numba.njit
def draw_area_probabilities(rng, theta, x, stats):
    out = np.empty(AREAS * CATS)
    for a in range(AREAS):
        g = np.array([rng.gamma(1.0 + stats[a * CATS + c]) for c in range(CATS)])
        out[a * CATS:(a + 1) * CATS] = g / g.sum()
    return out


@numba.njit
def on_simplices(theta):
    for a in range(AREAS):
        row = theta[a * CATS:(a + 1) * CATS]
        if np.any(row < 0.0) or abs(row.sum() - 1.0) > 1e-9:
            return False
    return True


@pytest.mark.slow
def test_tables_per_area_with_a_prepared_proposal_give_the_exact_posterior(check_posterior):
    model = dw.Model(params={"p": (AREAS, CATS)}, record_size=2, draw_record=area_record,
                     propose_record=keep_area, model_stat=area_cell, stat_size=AREAS * CATS,
                     prepared=dw.PreparedDraw(area_tables, area_record_from_tables,
                                              keep_area_from_tables),
                     draw_theta=draw_area_probabilities, theta_support=on_simplices,
                     draw_prior=lambda rng: rng.dirichlet(np.ones(CATS), AREAS).ravel())
    mech = dw.Laplace(area_cell, epsilon=1.0, sensitivity=2.0, size=AREAS * CATS)
    n = sum(SIZES)
    x = np.array([[a, c] for a in range(AREAS) for c in
                  np.random.default_rng(5).integers(0, CATS, SIZES[a])], dtype=float)
    s_dp = mech.release(x, seed=6)
    idata = dw.sample(model, mech, s_dp, n, init_x=x, draws=3000, tune=300, chains=4,
                      seed=7, progress=False, interweave=False)
    p = diagnostics.group(idata, "posterior")["p"].values
    for a in range(AREAS):
        exact = dm.exact_posterior(dm.laplace(1.0, CATS), s_dp[a * CATS:(a + 1) * CATS],
                                   SIZES[a], np.ones(CATS))
        for c in range(CATS):
            check_posterior(p[..., a, c], exact[c])


# -- a bad prepared draw is named before sampling ---------------------------------------------
# Each writes at most one float past out: the probe's guards catch it.

@numba.njit
def past_out(rng, theta, table, out):
    out[0] = 1.0
    out[1] = 1.0  # record_size 1: the float after out


@numba.njit
def not_a_record(rng, theta, table, out):
    out[0] = 0.5


@numba.njit
def no_float(rng, theta, table, x_i, out):
    out[0] = x_i[0]  # and returns None


@numba.njit
def bad_table(theta):
    return theta + "a table"  # does not compile


@numba.njit
def _binary(x_i):
    return x_i[0] == 0.0 or x_i[0] == 1.0


@numba.njit
def bernoulli_table(theta):
    return theta.copy()


@numba.njit
def bernoulli_from_table(rng, theta, table, out):
    out[0] = 1.0 if rng.random() < table[0] else 0.0


@numba.njit
def flip(rng, theta, x_i, out):
    out[0] = 1.0 - x_i[0]
    return 0.0  # not Bernoulli's Hastings ratio: never run, the probe stops first


@pytest.mark.parametrize("prepared, propose, error, match", [
    (dw.PreparedDraw(bernoulli_table, past_out), None, ValueError,
     r"prepared.draw_record writes past the end of out: out has 1 value"),
    (dw.PreparedDraw(bernoulli_table, not_a_record), None, ValueError,
     r"prepared.draw_record wrote \[0\.5\], which record_support rejects"),
    (dw.PreparedDraw(bernoulli_table, bernoulli_from_table, no_float), flip, TypeError,
     r"prepared.propose_record must return a float log ratio, got NoneType"),
    (dw.PreparedDraw(bad_table, bernoulli_from_table), None, TypeError,
     r"prepared.prepare could not be compiled by numba"),
])
def test_a_bad_prepared_draw_is_named_before_sampling(prepared, propose, error, match):
    from dawrap.models import beta_binomial

    base = beta_binomial.model()
    model = dw.Model(params=base.params, record_size=1, draw_record=base.draw_record,
                     draw_theta=base.draw_theta, draw_prior=base.draw_prior,
                     model_stat=base.user_model_stat, stat_size=1, record_support=_binary,
                     propose_record=propose, prepared=prepared)
    with pytest.raises(error, match=match):
        dw.sample(model, beta_binomial.laplace(1.0), 30.0, 100, draws=10, tune=0, chains=1,
                  seed=0, progress=False, interweave=False)


def test_binding_a_prepared_sweep_without_the_table_functions_is_refused():
    # Placeholders would leave every proposal unwritten: refused before compiling.
    mech = dm.laplace(1.0, 8)
    fns = record.RecordFunctions(plain_draw, plain_proposal, dm.one_hot,
                                 mech.sampler_statistic, mech.log_density)
    with pytest.raises(ValueError, match="prepared=True needs fns.prepare"):
        record.bind_chain(fns, record.SweepOptions(1, 8, 8, prepared=True))


# -- the table is built once per iteration -------------------------------------------------
# theta's last cell counts the tables built: the counting prepare writes it (theta is the
# state's buffer), the kernel below keeps it.


@numba.njit
def counting_prepare(theta):
    theta[-1] += 1.0
    return np.array([1.0])


@numba.njit
def keep_theta(rng, theta, x, stats, kernel_state, tuning):
    return theta.copy(), np.nan


@pytest.mark.slow
@pytest.mark.parametrize("path", ["sparse", "dense"])
def test_the_table_is_built_once_per_iteration_whatever_the_sweeps(path):
    """theta is fixed over the sweeps of an iteration, so with ``sweeps = 3`` an iteration
    builds one table, not three; ``Chain.sweep`` alone builds its own."""
    k, n, iterations = 4, 30, 5
    if path == "sparse":
        mech = dm.laplace(1.0, k)
        fields = entries_path.entries_fields(dm.model(np.ones(k)), mech)
    else:
        mech, fields = dw.Laplace(dense_one_hot, epsilon=1.0, sensitivity=2.0, size=k), {}
    fns = record.RecordFunctions(plain_draw, plain_proposal, dm.one_hot,
                                 mech.sampler_statistic, mech.log_density, **fields,
                                 prepare=counting_prepare, draw_prepared=draw_from_table)
    chain = record.bind_chain(fns, record.SweepOptions(1, k, k, prepared=True),
                              kernel_step=keep_theta)
    s_dp = np.full(k, n / k)
    inputs = record.Inputs(s_dp, mech.params, 3)
    theta = np.array([0.25, 0.25, 0.25, 0.25, 0.0])  # the last cell: the tables built
    state = chain.init(theta, np.ones((n, 1)), inputs, np.empty(0), np.empty(0))
    trace = record.Trace(np.empty((iterations, k + 1)),
                         np.empty((iterations, len(record.SAMPLE_STATS))), np.empty((0, k)))
    state, done, status = chain.run(np.random.default_rng(0), state, inputs, 0, iterations,
                                    0, *trace)
    assert status == record.OK and done == iterations
    assert np.array_equal(trace.theta[:, -1], np.arange(1, iterations + 1))
    state, info = chain.sweep(np.random.default_rng(1), state, s_dp, mech.params)
    assert info.status == record.OK and state.theta[-1] == iterations + 1
