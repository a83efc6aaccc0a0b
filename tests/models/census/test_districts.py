"""census.district: a district's counts from databases (the posterior of a district's counts
from a chain's kept databases is checked against enumeration in test_census.py's
test_cross_classified_marginal_queries_and_a_coarser_prior_level_are_exact)."""
import numpy as np
import pytest

from dawrap.models import census

GEO = census.Geography({"county": ["A", "A", "B", "B", "B"],
                        "block": [1010, 1020, 2010, 2020, 2030]},
                       {"adult": 2, "hispanic": 2, "race": 3})


def test_the_counts_are_the_blocks_tables_summed_over_the_district():
    rng = np.random.default_rng(3)
    for table in rng.integers(0, 4, size=(6, 5, GEO.cells)):      # six databases' tables
        database = rng.permutation(census.records(table))          # in any row order
        for blocks, rows in (([1010], [0]), ([2030, 1020], [4, 1]), (GEO.labels[-1], range(5))):
            whole = table[list(rows)].sum(0).reshape(GEO.shape)   # (adult, hispanic, race)
            for marginal, want in ((None, whole), (("race", "adult"), whole.sum(1).T),
                                   ((), whole.sum())):
                got = census.district(database, GEO, blocks, marginal)
                np.testing.assert_array_equal(got, want)
    # leading dimensions are kept: (chain, database) of databases of the same size
    x = census.records(np.ones((5, GEO.cells), int))
    stacked = np.stack([np.stack([x, x[::-1]])] * 3)
    counts = census.district(stacked, GEO, [1010, 2010], ("adult",))
    assert counts.shape == (3, 2, 2) and (counts == 12).all()


def test_bad_input_is_named():
    x = census.records(np.ones((5, GEO.cells), int))[None]
    with pytest.raises(ValueError, match=r"blocks: 1 code\(s\) are not units .*'block'.*\[9999\]"):
        census.district(x, GEO, [1010, 9999])
    with pytest.raises(ValueError, match=r"blocks: .*\['1010'\]"):
        census.district(x, GEO, ["1010"])               # codes of another type
    with pytest.raises(ValueError, match="listed twice"):
        census.district(x, GEO, [1010, 1010])
    with pytest.raises(ValueError, match="non-empty sequence"):
        census.district(x, GEO, [])
    with pytest.raises(ValueError, match="marginal must name distinct attributes"):
        census.district(x, GEO, [1010], ("age",))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., n, 2\)"):
        census.district(x[..., :1], GEO, [1010])
    with pytest.raises(ValueError, match="not of this geography"):
        census.district(x + [[0, GEO.cells]], GEO, [1010])
    with pytest.raises(TypeError, match="geography must be a census.Geography"):
        census.district(x, "geo", [1010])
