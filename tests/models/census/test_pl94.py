"""The 2020 P.L. 94-171 production release as a census description (census.pl94): the
published shares, the queries and budgets of a county's units, the hhinstlevels recode's
tables, the refusals, and a small chain on a simulated county."""
import math
from fractions import Fraction as Fr

import numpy as np
import pytest

import dawrap as dw
from dawrap.models import census
from dawrap.models.census import pl94

RHO = Fr(542, 339) ** 2


def county(blocks_per_group=2):
    """A county of two tracts, each of two block groups of ``blocks_per_group`` blocks."""
    n = 4 * blocks_per_group
    tract = np.repeat([1, 2], n // 2)
    group = 10 * tract + np.tile(np.repeat([1, 2], blocks_per_group), 2)
    return census.Geography({"county": np.full(n, 7), "tract": tract, "block_group": group,
                             "block": 100 + np.arange(n)}, census.PL94_ATTRIBUTES)


def test_the_published_shares_sum_to_one_per_level_and_across_levels():
    assert sum(pl94.LEVEL_SHARES.values()) == 1
    assert list(pl94.LEVEL_SHARES) == ["US", "State", "County", "Tract", "Block_Group",
                                       "Block"]
    for level, shares in pl94.QUERY_SHARES.items():
        assert sum(shares.values()) == 1, level
        assert all(isinstance(s, Fr) and s > 0 for s in shares.values())
        # the strategy's queries in its order; the US total is exact, not measured
        assert tuple(shares) == (pl94.QUERIES[1:] if level == "US" else pl94.QUERIES)


def test_two_rows_match_the_production_certificate():
    # typed again from the signed certificate's table (DAS-PL94171-PRODUCTION-RUN1A-
    # 202106241420-US-Persons), a second transcription of the strategy's fractions
    county_row = [Fr(n, 4097) for n in (3126, 10, 10, 10, 10, 10, 28, 28, 10, 101, 754)]
    group_row = [Fr(n, 4099) for n in (1705, 3, 3, 3, 3, 3, 1055, 9, 3, 24, 1288)]
    assert list(pl94.QUERY_SHARES["County"].values()) == county_row
    assert list(pl94.QUERY_SHARES["Block_Group"].values()) == group_row
    assert pl94.QUERY_SHARES["US"]["detailed"] == Fr(189, 241)
    assert pl94.RHO == Fr(293764, 114921) == 1 / Fr(339, 542) ** 2
    assert round(float(pl94.RHO), 2) == 2.56


def test_the_full_spine_spends_the_production_rho():
    exact = pl94.budgets()
    assert sum(sum(level.values()) for level in exact.values()) == RHO
    # one unit per level: every table of every level, the release's rho their sum
    geo = census.Geography({"nation": [0, 0], "state": [1, 1], "county": [2, 2],
                            "tract": [3, 3], "block_group": [4, 4], "block": [5, 6]},
                           census.PL94_ATTRIBUTES)
    queries = census.pl94_171_queries(geo)
    assert len(queries) == 10 + 5 * 11
    assert math.isclose(sum(q.rho for q in queries), float(RHO), rel_tol=1e-12)
    assert math.isclose(census.pl94_171(geo).privacy["rho"], float(RHO), rel_tol=1e-9)


def test_a_county_gets_its_levels_queries_at_the_exact_production_budgets():
    geo = county()
    queries = census.pl94_171_queries(geo)
    spine = {"county": "County", "tract": "Tract", "block_group": "Block_Group",
             "block": "Block"}
    expected = [(level, q, RHO * pl94.LEVEL_SHARES[das] * pl94.QUERY_SHARES[das][q])
                for level, das in spine.items() for q in pl94.QUERIES]
    assert [(q.level, q.rho) for q in queries] == [(level, float(r))
                                                   for level, _, r in expected]
    assert [q.marginal for q in queries[:11]] == [pl94.MARGINALS[q] for q in pl94.QUERIES]
    # what this county's persons are protected by: their four levels' shares
    spent = sum(r for _, _, r in expected)
    assert spent == RHO * Fr(447 + 687 + 1256 + 165, 4099)
    mech = census.pl94_171(geo)
    assert math.isclose(mech.privacy["rho"], float(spent), rel_tol=1e-9)
    # the noise of each table: sd 1/sqrt(rho) (sensitivity sqrt 2, replace-one)
    for q, sigma in zip(queries, mech.sigmas):
        assert math.isclose(sigma, 1 / math.sqrt(q.rho), rel_tol=1e-12)
    layout = census.layout_of(mech)
    assert layout.cells[:11].tolist() == [1, 63, 2, 2, 3, 8, 126, 126, 4, 252, 2016]
    assert layout.sizes.tolist() == [units * k for units in (1, 2, 4, 8)
                                     for k in layout.cells[:11]]
    assert mech.size == 15 * 2603


def test_the_hhinstlevels_table_counts_households_and_the_two_kinds_of_group_quarters():
    geo = county()
    rng = np.random.default_rng(3)
    x = np.column_stack([rng.integers(0, 8, 400), rng.integers(0, geo.cells, 400)]).astype(
        float)
    mech = census.pl94_171(geo)
    layout = census.layout_of(mech)
    total = mech.total(x)
    hhgq = np.unravel_index(x[:, 1].astype(int), geo.shape)[0]
    kind = np.select([hhgq == 0, hhgq <= 4], [0, 1], 2)   # household, institutional, other
    level_of = {"county": 0, "tract": 1, "block_group": 2, "block": 3}
    for q, query in enumerate(layout.queries):
        if query.marginal != (pl94.HHINSTLEVELS,):
            continue
        unit = geo.ancestors[level_of[query.level]][x[:, 0].astype(int)]
        brute = np.zeros((geo.units[level_of[query.level]], 3))
        for u, k in zip(unit, kind):
            brute[u, k] += 1
        assert np.array_equal(layout.table(total, q), brute)


def test_a_recode_is_a_marginal_of_any_census_release_and_district():
    geo = census.Geography({"tract": [0, 0, 1], "block": [0, 1, 2]}, {"age": 3, "race": 2})
    young = census.recode("age", [0, 1, 1], name="adult")
    mech = census.discrete_gaussian(geo, [census.query("tract", (young, "race")),
                                          census.query("block", young, rho=0.5)])
    layout = census.layout_of(mech)
    assert layout.cells.tolist() == [4, 2]
    x = census.records(np.random.default_rng(0).integers(0, 4, (3, 6)))
    total = mech.total(x)
    age, race = np.unravel_index(x[:, 1].astype(int), geo.shape)
    adult = (age > 0).astype(int)
    tract = geo.ancestors[0][x[:, 0].astype(int)]
    brute = np.zeros((2, 2, 2))
    np.add.at(brute, (tract, adult, race), 1)
    assert np.array_equal(layout.table(total, 0), brute.reshape(2, 4))
    assert np.array_equal(layout.table(total, 1),
                          np.stack([np.bincount(adult[x[:, 0] == b], minlength=2)
                                    for b in range(3)]))
    counts = census.district(x, geo, [0, 1], (young, "race"))
    assert counts.shape == (2, 2) and np.array_equal(counts, brute[0])
    # a person still counts in one cell of each table: sensitivity sqrt 2 as any query
    assert mech.sensitivity == math.sqrt(2)


@pytest.mark.parametrize("groups, message", [
    ([0, 2, 2], "groups must number the groups 0..k-1, each used"),
    ([0, 0.5, 1], "groups must be a non-empty list of whole numbers"),
    ([], "groups must be a non-empty list")])
def test_a_recode_refuses_groups_that_are_not_numbered(groups, message):
    with pytest.raises(ValueError, match=message):
        census.recode("age", groups)


def test_a_recode_must_give_one_group_per_category():
    geo = census.Geography({"block": [0, 1]}, {"age": 3})
    with pytest.raises(ValueError, match=r"recode 'age_recode' gives 2 groups, but attribute "
                                         r"'age' has 3 categories"):
        census.discrete_gaussian(geo, [census.query("block", census.recode("age", [0, 1]))])
    with pytest.raises(ValueError, match="marginal: recode 'age_recode' gives 2 groups"):
        census.district(census.records([[1, 0, 0], [0, 1, 0]]), geo, [0],
                        (census.recode("age", [0, 1]),))


def test_refusals_name_the_argument_and_what_is_expected():
    geo = county()
    with pytest.raises(ValueError, match=r"geography must cross-classify persons by the "
                                         r"P.L. 94-171 histogram"):
        census.pl94_171(census.Geography({"block": [0, 1]}, {"votingage": 2, "race": 63}))
    with pytest.raises(ValueError, match=r"geography level 'district' is not a level of the "
                                         r"production spine"):
        census.pl94_171(census.Geography({"district": [0, 0], "block": [0, 1]},
                                         census.PL94_ATTRIBUTES))
    with pytest.raises(ValueError, match="distinct spine levels, coarsest first"):
        census.pl94_171(census.Geography({"tract": [0, 0], "county": [0, 1]},
                                         census.PL94_ATTRIBUTES))
    with pytest.raises(ValueError, match="levels maps \\['bg'\\], which are not levels"):
        census.pl94_171(geo, levels={"bg": "Block_Group"})
    # a geography level named otherwise, mapped
    other = census.Geography({"tract": [0, 0], "bg": [0, 1]}, census.PL94_ATTRIBUTES)
    assert census.pl94_171_queries(other, levels={"bg": "Block_Group"})[11].level == "bg"
    # the total: the production one (as a Fraction or its float), else refused
    for same in (RHO, float(RHO)):
        assert census.pl94_171_queries(geo, rho_total=same) == census.pl94_171_queries(geo)
    for wrong in (2.56, 2.63, 1):
        with pytest.raises(ValueError, match=r"rho_total = .* is not the production "
                                             r"persons' budget"):
            census.pl94_171(geo, rho_total=wrong)
    half = census.pl94_171_queries(geo, rho_total=RHO / 2, production=False)
    assert all(math.isclose(a.rho, b.rho / 2, rel_tol=1e-15)
               for a, b in zip(half, census.pl94_171_queries(geo)))
    with pytest.raises(ValueError, match="rho_total must be a finite number > 0"):
        census.pl94_171(geo, rho_total=-1.0, production=False)


def test_the_measurements_are_assembled_in_the_description_s_order_and_checked():
    geo = county()
    mech = census.pl94_171(geo)
    layout = census.layout_of(mech)
    rng = np.random.default_rng(1)
    names = {"county": "County", "tract": "Tract", "block_group": "Block_Group",
             "block": "Block"}
    tables = {}
    for q, query in enumerate(layout.queries):
        name = pl94.QUERIES[q % 11]
        # keyed by the spine's or the geography's level name, both accepted
        level = names[query.level] if query.level in ("county", "block_group") else \
            query.level
        tables[(level, name)] = rng.integers(
            -5, 50, (geo.units[geo.level(query.level)], int(layout.cells[q])))
    s_dp = census.pl94_171_measurements(geo, tables)
    for q, query in enumerate(layout.queries):
        key = next(k for k in tables if k[1] == pl94.QUERIES[q % 11]
                   and k[0] in (query.level, names[query.level]))
        assert np.array_equal(layout.table(s_dp, q), tables[key])
    assert s_dp.shape == (mech.size,)

    def refused(change, message):
        bad = dict(tables)
        change(bad)
        with pytest.raises(ValueError, match=message):
            census.pl94_171_measurements(geo, bad)

    refused(lambda t: t.pop(("block", "detailed")), r"lacks the description's "
                                                    r"\[\('block', 'detailed'\)\]")
    refused(lambda t: t.update({("State", "total"): np.zeros((1, 1))}),
            r"tables key \('State', 'total'\) is not \(level, query\) of this release")
    refused(lambda t: t.update({("block", "detailed"): np.zeros((8, 2015))}),
            r"table \('block', 'detailed'\) must have shape \(8, 2016\)")
    refused(lambda t: t.update({("block", "total"): np.full((8, 1), np.nan)}),
            "holds values that are not finite")
    refused(lambda t: t.update({("Block", "total"): np.zeros((8, 1))}),
            r"gives \('block', 'total'\) twice")


def test_sample_refuses_a_release_of_another_length():
    geo = census.Geography({"tract": [0, 0], "block": [0, 1]}, census.PL94_ATTRIBUTES)
    mech = census.pl94_171(geo)
    model = census.model(geo, totals=[3, 4])
    with pytest.raises(ValueError, match=f"s_dp must have {mech.size} value"):
        dw.sample(model, mech, np.zeros(mech.size - 1), n=7, draws=2, tune=2, chains=1)


@pytest.mark.slow
def test_a_simulated_county_release_samples():
    # a county of 2 tracts x 2 block groups x 2 blocks, 300 persons mostly in households;
    # only the county total public (as for a user of the production release, whose block
    # populations are noisy); the pair move on, so that it runs with the recode's table
    geo = county()
    rng = np.random.default_rng(7)
    p = rng.dirichlet(np.full(geo.cells, 0.05))
    sizes = rng.multinomial(300, np.full(8, 1 / 8))
    x = census.records(np.stack([rng.multinomial(s, p) for s in sizes]))
    mech = census.pl94_171(geo)
    s_dp = mech.release(x, seed=2)
    model = census.model(geo, totals=[300], invariant="county", pair_moves=0.5)
    idata = dw.sample(model, mech, s_dp, n=300, draws=3, tune=3, chains=1, seed=5,
                      progress=False)
    draws = dw.diagnostics.group(idata, "posterior")["p"].values
    assert draws.shape[:2] == (1, 3) and np.all(np.isfinite(draws))
