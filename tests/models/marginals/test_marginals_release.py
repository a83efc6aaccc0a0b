"""Issue 41, marginal releases: the stated guarantee is always that of the noise added (every
way a noise is built or altered), budgets summed without float noise, bad records refused
before a secure release draws anything, a release over other attributes than the model's
refused before sampling (and its statistic never writing into another table's cells), and
unclear errors named."""
import copy
import math
import pickle

import numpy as np
import pytest

import dawrap as dw
from dawrap.mechanisms.separable import sparse_form
from dawrap.models import marginals
from dawrap.models.marginals.release import table_statistic
from dawrap.models.marginals import Noise

KINDS = ("laplace", "geometric", "gaussian", "discrete_gaussian")
PURE = {"laplace": True, "geometric": True, "gaussian": False, "discrete_gaussian": False}
LEVELS = {"a": 2, "b": 2, "c": 2}
TABLES = [("a", "b"), ("b", "c")]
#: Records of every cell, so that exact counts are recognisable.
X = np.array([[0, 0, 0]] * 5 + [[1, 1, 1]] * 3 + [[0, 1, 0]] * 2, float)


def exact_guarantee(kind: str, scale: float) -> dict:
    """The replace-one guarantee of one table (L1 sensitivity 2, L2 sqrt 2) with this noise."""
    return {"epsilon": 2.0 / scale} if PURE[kind] else {"rho": 1.0 / scale ** 2}


def drawn_guarantee(mech) -> list:
    """Each table's guarantee, from the noise law of the mechanism its noise is drawn by
    (what the simulated and the secure releases use), not from the Noise."""
    return [exact_guarantee(n.kind, float(p.noise.scale[0]))
            for n, p in zip(mech.noises, mech._parts)]


# --------------------------------------------------------------------------- item 1
@pytest.mark.parametrize("kind, scale, budget", [("discrete_gaussian", 0.001, 0.01),
                                                 ("geometric", 0.001, 0.1),
                                                 ("laplace", 4.0, 0.25),
                                                 ("gaussian", 2.0, 0.5)])
def test_a_budget_the_scale_does_not_give_is_refused_naming_both(kind, scale, budget):
    # the repro: Noise("discrete_gaussian", 0.001, 0.01) reported rho = 0.01 while a
    # secure release published the exact counts (sigma 0.001)
    name = "epsilon" if PURE[kind] else "rho"
    message = (rf"Noise\('{kind}', scale={scale}, budget={budget}\): .*gives {name} = .*, "
               rf"not {budget}")
    with pytest.raises(ValueError, match=message):
        Noise(kind, scale, budget)
    with pytest.raises(ValueError, match=message):
        Noise(kind=kind, scale=scale, budget=budget)
    with pytest.raises(ValueError, match=message):
        marginals.mechanism(LEVELS, TABLES, Noise(kind, scale, budget))


def test_a_budget_the_scale_gives_is_accepted_and_stated_from_the_scale():
    for kind in KINDS:
        for budget in (0.1, 0.3, 1.0, 7.0):
            scale = 2.0 / budget if PURE[kind] else 1.0 / math.sqrt(budget)
            built = getattr(Noise, kind)(budget)
            assert built == Noise(kind, scale) == Noise(kind, scale, budget)
            assert built.budget == budget                    # float rounding removed
            assert built.privacy() == {"epsilon" if PURE[kind] else "rho": budget}
            assert Noise(kind, scale, budget * (1 + 1e-12)) == built   # within 1e-9
            with pytest.raises(ValueError, match="not"):
                Noise(kind, scale, budget * (1 + 1e-6))


@pytest.mark.parametrize("kind", KINDS)
def test_a_noise_cannot_be_altered_once_built(kind):
    noise = getattr(Noise, kind)(0.01)
    assert not hasattr(noise, "_replace")          # Noise(...)._replace(scale=0.001) slipped by
    for name, value in (("scale", 0.001), ("kind", "laplace"), ("budget", 0.01), ("other", 1)):
        with pytest.raises(AttributeError, match="immutable"):
            setattr(noise, name, value)
        with pytest.raises(AttributeError, match="immutable"):
            delattr(noise, name)
    for again in (pickle.loads(pickle.dumps(noise)), copy.copy(noise), copy.deepcopy(noise)):
        assert again == noise and hash(again) == hash(noise)
        assert (again.kind, again.scale, again.budget) == (noise.kind, noise.scale, 0.01)
    assert repr(noise) == f"Noise(kind='{kind}', scale={noise.scale!r}, budget=0.01)"
    assert eval(repr(noise), {"Noise": Noise}) == noise
    assert noise != Noise(kind, noise.scale * 2) and noise != (kind, noise.scale, 0.01)


def test_a_noise_of_a_bad_kind_or_scale_is_refused_when_built():
    with pytest.raises(ValueError, match="noise kind must be one of"):
        Noise("cauchy", 1.0)
    for scale in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="noise scale must be finite and > 0"):
            Noise("laplace", scale)
    for budget in (0.0, math.nan):
        with pytest.raises(ValueError, match="noise budget must be finite and > 0"):
            Noise("laplace", 2.0, budget)
    for scale in ("2", None, True):
        with pytest.raises(TypeError, match="noise scale must be a number"):
            Noise("laplace", scale)


@pytest.mark.parametrize("build", [
    lambda: marginals.mechanism(LEVELS, TABLES, Noise("discrete_gaussian", 0.001)),
    lambda: marginals.mechanism(LEVELS, TABLES, Noise("geometric", 0.001)),
    lambda: marginals.mechanism(LEVELS, TABLES, [Noise(k, s) for k, s in
                                                 (("laplace", 3.0), ("gaussian", 0.7))]),
    lambda: marginals.mechanism(LEVELS, TABLES, [Noise.geometric(0.05),
                                                 Noise.discrete_gaussian(0.1)]),
    lambda: marginals.laplace(LEVELS, TABLES, [0.05, 0.1]),
    lambda: marginals.geometric(LEVELS, TABLES, 0.3),
    lambda: marginals.gaussian(LEVELS, TABLES, [0.1, 0.2]),
    lambda: marginals.discrete_gaussian(LEVELS, TABLES, 1e6),
    lambda: marginals.from_measurements(LEVELS, [(("a", "b"), 10.0), (("c",), 3.0)]),
    lambda: marginals.from_measurements(LEVELS, [(("a", "b"), 2.0)], kind="laplace"),
])
def test_every_release_states_the_guarantee_of_the_noise_it_draws(build):
    mech = build()
    tables = drawn_guarantee(mech)
    epsilon = math.fsum(t.get("epsilon", 0.0) for t in tables)
    rho = math.fsum(t.get("rho", 0.0) for t in tables)
    stated = mech.privacy
    assert stated.get("epsilon", 0.0) == pytest.approx(epsilon, rel=1e-12)
    assert stated.get("rho", 0.0) == pytest.approx(rho, rel=1e-12)
    if epsilon and rho:
        assert stated["rho_total"] == pytest.approx(rho + math.fsum(
            t["epsilon"] ** 2 / 2 for t in tables if "epsilon" in t), rel=1e-12)
    for noise, table in zip(mech.noises, tables):
        assert noise.privacy() == pytest.approx(table, rel=1e-12)


@pytest.mark.slow  # compiles the bounds-checked statistics of the secure path
def test_a_release_of_exact_counts_states_a_budget_to_match():
    # the repro, built the only way now left: the budget follows from sigma = 0.001
    for kind, key in (("discrete_gaussian", "rho"), ("geometric", "epsilon")):
        mech = marginals.mechanism(LEVELS, TABLES, Noise(kind, 0.001))
        assert np.array_equal(mech.release(X, secure=True), mech.total(X))
        assert mech.privacy[key] == pytest.approx(2 * (1e6 if key == "rho" else 2e3))


def test_the_guarantee_cannot_be_changed_after_the_release_is_built():
    mech = marginals.mechanism(LEVELS, TABLES, [Noise.laplace(0.5), Noise.gaussian(0.25)])
    before = mech.privacy
    mech.privacy["epsilon"] = 1e-9                 # a copy
    for name, value in (("noises", (Noise("laplace", 1e-3),) * 2), ("_privacy", {}),
                        ("_parts", ())):
        with pytest.raises(AttributeError, match="immutable once built"):
            setattr(mech, name, value)
    with pytest.raises(TypeError):
        mech._privacy["epsilon"] = 1e-9
    assert mech.privacy == before == {"epsilon": 0.5, "rho": 0.25, "rho_total": 0.375}


def test_a_run_with_a_marginal_release_stays_verifiable_on_resume():
    # a checkpoint resumes only the run that wrote it: the noises must have a digest
    from dawrap.runner.fingerprint import UNVERIFIABLE, run_fingerprint

    model = marginals.model(LEVELS, TABLES, centre=None)
    one = run_fingerprint(model, marginals.mechanism(LEVELS, TABLES, Noise.geometric(1.0)))
    assert not [k for k, v in one.items() if v.startswith(UNVERIFIABLE)]
    other = run_fingerprint(model, marginals.mechanism(LEVELS, TABLES, Noise.geometric(0.5)))
    assert one["mechanism.noises"] != other["mechanism.noises"]
    assert one["mechanism._privacy"] != other["mechanism._privacy"]


def test_summed_budgets_are_shown_without_float_rounding():
    # 0.05 + 0.1 printed 0.15000000000000002
    mech = marginals.laplace(LEVELS, TABLES, [0.05, 0.1])
    assert mech.privacy == {"epsilon": 0.15}
    assert repr(mech).endswith("epsilon=0.15, size=8)")
    assert mech.epsilon == math.fsum([0.05, 0.1])          # the exact sum, for accounting
    assert marginals.gaussian(LEVELS, TABLES, [0.1, 0.2]).privacy == {"rho": 0.3}
    # a budget with more digits than float noise keeps them all: rounding never moves it
    # by more than the floats it was computed from can resolve
    third = marginals.mechanism(LEVELS, TABLES, Noise("geometric", 6.0))
    assert third.privacy["epsilon"] == math.fsum([2 / 6.0, 2 / 6.0])
    assert marginals.laplace(LEVELS, TABLES, [1 / 3, 1 / 7]).privacy["epsilon"] == \
        pytest.approx(1 / 3 + 1 / 7, rel=1e-15)


# --------------------------------------------------------------------------- item 2
BAD_RECORDS = [([[0, 2, 0]], r"x\[0, 1\] = 2.0 is not a level of attribute 'b' \(0..1\)"),
               ([[0, -1, 0]], r"x\[0, 1\] = -1.0 is not a level of attribute 'b'"),
               ([[0, 0, 0], [0.5, 0, 0]], r"x\[1, 0\] = 0.5 is not a level of attribute 'a'"),
               ([[0, 0, 0], [0, 0, np.nan]], r"x\[1, 2\] = nan is not a level of attribute 'c'"),
               ([[0, 0]], r"x must have shape \(n, 3\): .* got shape \(1, 2\)"),
               ([0, 0, 0], r"x must have shape \(n, 3\): .* got shape \(3,\)")]


@pytest.mark.parametrize("records, message", BAD_RECORDS)
def test_a_secure_release_refuses_records_that_are_not_levels(records, message):
    # they were counted in wrong cells: [0, 2, 0] at (a=1, b=0), [0, -1, 0] in the last
    # cells, 0.5 and NaN as level 0, rows of 2 attributes read past the row
    mech = marginals.mechanism(LEVELS, TABLES, [Noise.geometric(1.0),
                                                Noise.discrete_gaussian(1.0)])
    for release in (lambda: mech.release(records, secure=True),
                    lambda: mech.release(records, seed=1), lambda: mech.total(records)):
        with pytest.raises(ValueError, match=message):
            release()


def test_a_record_outside_the_levels_contributes_to_no_cell_of_any_table():
    mech = marginals.mechanism(LEVELS, TABLES, [Noise.geometric(1.0),
                                                Noise.discrete_gaussian(1.0)])
    entries = sparse_form(mech.statistic).entries
    index, value = np.empty(2, np.int64), np.empty(2)
    out = np.empty(mech.size)
    # (a fractional code inside the range is refused where records enter: check_records)
    for record in ([0, 2, 0], [0, -1, 0], [np.nan, 0, 0], [0, 0], [0, 0, 0, 0],
                   [1e300, 0, 0], [0, 0, -0.5], [0, 0, 2.5], [np.inf, 0, 0]):
        x_i = np.array(record, float)
        out[:] = 7.0
        mech.statistic(x_i, out)
        assert not out.any(), record
        assert entries(x_i, index, value) == 0, record
    for part in mech._parts:                       # each table's own (the secure path's)
        part.statistic(np.array([0.0, 2.0, 0.0]), out[:4])
        assert not out[:4].any()
    mech.statistic(np.array([0.0, 1.0, 1.0]), out)  # a record still counts where it did
    assert out.tolist() == [0, 1, 0, 0, 0, 0, 0, 1]


# --------------------------------------------------------------------------- item 3
@pytest.mark.parametrize("start, ridge", [("release", True), ("theta", False),
                                          ("release", False), ("theta", True)])
def test_a_release_over_other_levels_is_refused_before_sampling(start, ridge):
    # it ran: records with a = 2 were counted in the (b, c) table's cells
    tables = [("a", "b"), ("b", "c"), ("a", "c")] if ridge else TABLES
    model = marginals.model({"a": 3, "b": 2, "c": 2}, tables, start=start, ridge_moves=ridge,
                            centre=None)
    mech = marginals.laplace(LEVELS, tables, 1.0)
    s = mech.release(X, seed=1)
    with pytest.raises(ValueError, match=r"the mechanism releases tables of the attributes "
                                         r"\{'a': 2, 'b': 2, 'c': 2\}, but the model's "
                                         r"records have \{'a': 3, 'b': 2, 'c': 2\}"):
        dw.sample(model, mech, s, 20, draws=5, tune=5, chains=1, progress=False)


def test_a_release_over_renamed_or_reordered_attributes_is_refused():
    model = marginals.model(LEVELS, TABLES, start="theta", centre=None)
    for levels in ({"b": 2, "a": 2, "c": 2}, [2, 2, 2], {"a": 2, "b": 2, "c": 2, "d": 2}):
        mech = marginals.laplace(levels, [(0, 1), (1, 2)], 1.0)
        with pytest.raises(ValueError, match="build both from the same levels"):
            dw.sample(model, mech, np.zeros(mech.size), 10, draws=5, tune=5, chains=1,
                      progress=False)


def test_the_statistic_never_writes_into_another_table_s_cells():
    # a level beyond the table's (a = 2 of 0..1): cell 2 * 2 + b of the (a, b) table was
    # cell b of the (b, c) table
    statistic, sizes = table_statistic((2, 2, 2), ((0, 1), (1, 2)))
    out = np.empty(sum(sizes))
    for a in (2.0, 3.0, 2 ** 40):
        statistic(np.array([a, 0.0, 0.0]), out)
        assert not out.any()


# --------------------------------------------------------------------------- item 5
@pytest.mark.parametrize("measurements, message", [
    ([], r"measurements must be a non-empty list of \(attribute set, sigma\) pairs"),
    ((), r"measurements must be a non-empty list"),
    ("ab", r"measurements must be a non-empty list"),
    ([(("a",),)], r"measurements\[0\] must be a pair \(attribute set, sigma\)"),
    ([(("a",), 1.0), ("a",)], r"measurements\[1\] must be a pair"),
    ([(("a",), 1.0, 2.0)], r"measurements\[0\] must be a pair"),
    ([(("a",), -1.0)], r"noise scale must be finite and > 0"),
])
def test_bad_measurements_are_named(measurements, message):
    # "not enough values to unpack", "max() arg is an empty sequence"
    with pytest.raises(ValueError, match=message):
        marginals.from_measurements(LEVELS, measurements)


def test_a_release_of_no_table_is_refused_by_name():
    for build in (lambda: marginals.mechanism(LEVELS, [], Noise.laplace(1.0)),
                  lambda: marginals.laplace(LEVELS, [], 1.0),
                  lambda: marginals.discrete_gaussian(LEVELS, (), 1.0)):
        with pytest.raises(ValueError, match="marginals must list at least one table"):
            build()


@pytest.mark.parametrize("limit", [math.nan, 0, -1, 0.5, "many", None, True])
def test_a_max_clique_cells_that_is_not_a_number_of_cells_is_refused(limit):
    # NaN applied no limit at all
    for build in (lambda: marginals.structure({"a": 10, "b": 10}, [("a", "b")],
                                              max_clique_cells=limit),
                  lambda: marginals.model({"a": 10, "b": 10}, [("a", "b")],
                                          max_clique_cells=limit, centre=None)):
        with pytest.raises(ValueError, match=r"max_clique_cells must be a number >= 1"):
            build()


def test_max_clique_cells_still_limits_or_lifts():
    assert marginals.structure({"a": 10, "b": 10}, [("a", "b")],
                               max_clique_cells=math.inf).cliques == ((0, 1),)
    assert marginals.structure({"a": 10, "b": 10}, [("a", "b")],
                               max_clique_cells=100.0).cliques == ((0, 1),)
    with pytest.raises(ValueError, match="more than max_clique_cells = 99"):
        marginals.structure({"a": 10, "b": 10}, [("a", "b")], max_clique_cells=99)
