"""Issue 41, census and small-area releases: the stated guarantee is that of the noise each
query draws, whatever the queries hold; records that are not ``[unit, cell]`` are refused
where a release is computed (never counted in another unit's or cell's count); attributes
of too many cells are refused before anything is allocated."""
import math

import numpy as np
import pytest

from dawrap.models import census, small_area
from dawrap.models.census.levelled import LevelledDiscreteGaussian

GEO = census.Geography({"tract": [0, 0, 1], "block": [0, 1, 2]}, {"age": 2, "race": 2})
QUERIES = [census.query("block", "total", rho=0.1), census.query("block", "age", rho=0.2),
           census.query("tract", "detailed", rho=0.7)]


def drawn_rho(mech) -> list:
    """Each query's rho = Delta_2^2 / (2 sigma^2) from the sigma its noise is drawn with."""
    layout = census.layout_of(mech)
    sigma = mech.noise.scale
    return [mech.sensitivity ** 2 / (2 * float(sigma[layout.offsets[q]]) ** 2)
            for q in range(len(layout.queries))]


# --------------------------------------------------------------------------- item 1
def test_the_stated_guarantee_is_that_of_the_noise_drawn():
    mech = census.discrete_gaussian(GEO, QUERIES)
    rho = drawn_rho(mech)
    assert mech.sensitivity == math.sqrt(2.0)
    assert rho == pytest.approx([0.1, 0.2, 0.7], rel=1e-12)
    stated = mech.privacy
    assert [stated[f"rho_{q}"] for q in range(3)] == pytest.approx(rho, rel=1e-12)
    assert stated["rho"] == pytest.approx(math.fsum(rho), rel=1e-12)
    assert stated["rho"] == 1.0                    # 0.1 + 0.2 + 0.7, float rounding removed
    areas = small_area.discrete_gaussian([0, 0, 1], categories=3, rho=(0.1, 0.2))
    assert areas.privacy == {"rho_0": 0.1, "rho_1": 0.2, "rho": 0.3,
                             "sensitivity": math.sqrt(2.0)}
    assert [areas.sensitivity ** 2 / (2 * s ** 2) for s in areas.sigmas] == \
        pytest.approx([0.1, 0.2], rel=1e-12)


def test_a_query_altered_after_it_was_built_still_gets_its_guarantee_or_is_refused():
    # Query is a NamedTuple: _replace (or building it directly) skips query()'s checks
    q = census.query("block", "total", rho=0.5)
    mech = census.discrete_gaussian(GEO, [q._replace(rho=2.0)])
    assert drawn_rho(mech) == pytest.approx([2.0]) and mech.privacy["rho"] == 2.0
    for rho in (math.nan, -1.0, 0.0, math.inf, True, "0.5", None):
        with pytest.raises(ValueError, match="rho must hold one positive finite number per "
                                             "level"):
            census.discrete_gaussian(GEO, [q._replace(rho=rho)])
    with pytest.raises(ValueError, match="outside the usable range"):
        census.discrete_gaussian(GEO, [q._replace(rho=1e-30)])       # sigma 1e15


def test_a_levelled_release_of_a_sensitivity_or_sigma_it_cannot_state_is_refused():
    statistic, size = small_area.statistics(2, 2, (0, 0))
    for sensitivity in (0.0, -1.0, math.nan, math.inf):
        # 0 was a ZeroDivisionError, NaN "cannot convert float NaN to integer"
        with pytest.raises(ValueError, match="sensitivity"):
            LevelledDiscreteGaussian(statistic, [4, 2], rho=(0.5, 2.0), sensitivity=sensitivity)
    for rho, sigma in (((1e302, 1.0), "1e-151"), ((0.5, 1e-300), "1e\\+150")):
        # sigma 1e-151 or 1e150 was accepted, beyond what the discrete Gaussian can draw
        with pytest.raises(ValueError, match=f"sigma = sensitivity / sqrt\\(2 rho\\) = {sigma}, "
                                             f"outside the usable range"):
            LevelledDiscreteGaussian(statistic, [4, 2], rho=rho, sensitivity=math.sqrt(2))
    with pytest.raises(ValueError, match=r"rho must hold one positive finite number per level "
                                         r"\(2\), got 'ab'"):
        LevelledDiscreteGaussian(statistic, [4, 2], rho="ab", sensitivity=1.0)
    with pytest.raises(ValueError, match=r"rho must hold one positive finite number per level"):
        LevelledDiscreteGaussian(statistic, [4, 2], rho=0.5, sensitivity=1.0)


# --------------------------------------------------------------------------- item 2
BAD = [([[0.5, 1]], r"x\[0, 0\] = 0.5 is not a unit of level 'FINEST' \(0..2\)"),
       ([[1, 1.5]], r"x\[0, 1\] = 1.5 is not a cell of the attributes ATTRIBUTES \(0..3\)"),
       ([[0, 1], [3, 0]], r"x\[1, 0\] = 3.0 is not a unit of level 'FINEST'"),
       ([[0, -1]], r"x\[0, 1\] = -1.0 is not a cell"),
       ([[0, 1], [np.nan, 0]], r"x\[1, 0\] = nan is not a unit"),
       ([[0], [1]], r"x must have shape \(n, 2\): a record is \[unit, cell\], got shape \(2, 1\)"),
       ([0, 1], r"x must have shape \(n, 2\).*got shape \(2,\)"),
       ([[0, 1, 3]], r"x must have shape \(n, 2\).*got shape \(1, 3\)")]
#: The census release and the small-area one (a census release too), with what the errors
#: call their finest level and their attributes.
RELEASES = {"census": (lambda: census.discrete_gaussian(GEO, QUERIES), "block",
                       r"\{'age': 2, 'race': 2\}"),
            "small_area": (lambda: small_area.discrete_gaussian([0, 0, 1], categories=4,
                                                                rho=(0.5, 0.5)), "area",
                           r"\{'category': 4\}")}


@pytest.mark.parametrize("which", list(RELEASES))
@pytest.mark.parametrize("records, message", BAD)
def test_records_that_are_not_unit_and_cell_are_refused_where_a_release_is_computed(
        records, message, which):
    # 0.5 and 1.5 counted in unit 0 and cell 1; a column of units read the next row's unit
    # as its cell; a third column was ignored
    build, finest, attributes = RELEASES[which]
    mech = build()
    wanted = message.replace("FINEST", finest).replace("ATTRIBUTES", attributes)
    with pytest.raises(ValueError, match=wanted):
        mech.total(records)
    with pytest.raises(ValueError, match=wanted):
        mech.release(records, seed=1)
    # no secure path: refused whatever the records hold, before they are read
    with pytest.raises(ValueError, match="has no safe release path"):
        mech.release(records, secure=True)


def test_a_record_outside_the_units_and_cells_contributes_nothing():
    mech = census.discrete_gaussian(GEO, QUERIES)
    out = np.empty(mech.size)
    index, value = np.empty(len(QUERIES), np.int64), np.empty(len(QUERIES))
    entries = mech.sparse.entries
    # (a fractional code inside the range is refused where records enter: check_records)
    for record in ([0], [0, 1, 3], [3, 0], [0, 4], [np.nan, 0], [-0.5, 0], [0, np.inf]):
        x_i = np.array(record, float)
        out[:] = 7.0
        mech.statistic(x_i, out)
        assert not out.any(), record
        assert entries(x_i, np.zeros(mech.size), index, value) == 0, record
    mech.statistic(np.array([1.0, 3.0]), out)           # block 1 (tract 0), age 1, race 1
    assert out.sum() == len(QUERIES) and mech.total([[1, 3]]).tolist() == out.tolist()


# --------------------------------------------------------------------------- item 5
def test_attributes_of_too_many_cells_are_refused_before_anything_is_allocated():
    # 10^10 cells: a bare MemoryError when the release was built
    with pytest.raises(ValueError, match=r"Geography: the attributes \{'a': 100000, 'b': "
                                         r"100000\} cross-classify persons into "
                                         r"10,000,000,000 cells, more than max_cells = "
                                         r"1,000,000"):
        census.Geography({"block": [0, 1]}, {"a": 10 ** 5, "b": 10 ** 5})
    assert census.MAX_CELLS == 10 ** 6
    with pytest.raises(ValueError, match="more than max_cells = 99"):
        census.Geography({"block": [0, 1]}, {"a": 10, "b": 10}, max_cells=99)
    assert census.Geography({"block": [0, 1]}, {"a": 10, "b": 10}, max_cells=100).cells == 100
    for limit in (math.nan, 1, "many", None, True):
        with pytest.raises(ValueError, match=r"max_cells must be a number >= 2"):
            census.Geography({"block": [0, 1]}, 2, max_cells=limit)
