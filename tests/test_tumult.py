"""dawrap.tumult: a count or clamped sum released with Tumult Analytics, read in one call, is
the release Tumult made: its cells, its bounds, and noise whose law is the one Tumult's own
evaluations follow (many releases from Tumult compared with the read law by chi-square).

Spark starts once for the module (about 15 s); each evaluation of a grouped query then takes
a second or two, and each releases one noisy cell per key of its KeySet: a KeySet of 1500 keys
gives 1500 independent draws of the noise from one evaluation."""
import math
import os
import sys

import numpy as np
import pytest
from scipy import stats

tmlt = pytest.importorskip("tmlt.analytics")
if not tmlt.__version__.startswith("0.21."):
    pytest.skip(f"dawrap.tumult reads Tumult Analytics 0.21, this is {tmlt.__version__}",
                allow_module_level=True)
pd = pytest.importorskip("pandas")
from pyspark.sql import SparkSession  # noqa: E402  (after the skips)
from tmlt.analytics import (AddMaxRows, AddOneRow, AddRowsWithID, KeySet,  # noqa: E402
                            PureDPBudget, QueryBuilder, RhoZCDPBudget, Session)

import dawrap.tumult  # noqa: E402
from dawrap.tumult import from_query  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

#: Keys of the grouped releases: each key's cell is one draw of Tumult's noise.
KEYS = 1500


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    # Spark's Python workers must be this interpreter (another python3 on PATH is refused by
    # PySpark for a different minor version); Tumult's temporary tables go to a temp folder.
    previous = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[1]")
               .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "1").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    from tmlt.analytics.utils import cleanup
    cleanup()
    session.stop()
    if previous is None:
        os.environ.pop("PYSPARK_PYTHON", None)
    else:
        os.environ["PYSPARK_PYTHON"] = previous


@pytest.fixture(scope="module")
def people():
    """60 records: a group among KEYS (most groups empty), an age and an income."""
    rng = np.random.default_rng(5)
    n = 60
    return pd.DataFrame({"g": rng.integers(0, KEYS, n), "age": rng.integers(0, 100, n),
                         "income": rng.normal(40.0, 30.0, n), "id": np.arange(n)})


def _session(spark, people, budget, change=None):
    return Session.from_dataframe(budget, "people", spark.createDataFrame(people),
                                  protected_change=change or AddOneRow())


def _records(people):
    """The records as dawrap's statistic reads them: group code, age, income."""
    return people[["g", "age", "income"]].to_numpy(dtype=float)


def _true(people, kind, column=None, low=None, high=None):
    """The query's non-private answer per group, for every key."""
    values = people[column].clip(low, high) if kind == "sum" else pd.Series(1.0, people.index)
    return values.groupby(people["g"]).sum().reindex(range(KEYS), fill_value=0.0).to_numpy()


def _integer_chi_square_p(z, log_pmf, chi_square_p, width=12):
    """The chi-square p-value of integer noise draws ``z`` against the pmf ``log_pmf`` on
    ``-width..width`` (each tail beyond it one category)."""
    support = np.arange(-width, width + 1)
    p = np.exp(log_pmf(support))
    below, above = np.exp(log_pmf(np.arange(-2000, -width))).sum(), \
        np.exp(log_pmf(np.arange(width + 1, 2001))).sum()
    observed = np.r_[(z < -width).sum(), [(z == k).sum() for k in support], (z > width).sum()]
    return chi_square_p(observed, np.r_[below, p, above])


def test_a_grouped_count_has_the_noise_tumult_adds(spark, people, chi_square_p):
    session = _session(spark, people, PureDPBudget(float("inf")))
    query = QueryBuilder("people").groupby(KeySet.from_dict({"g": list(range(KEYS))})).count()
    budget = PureDPBudget(0.7)
    reported = session._noise_info(query, budget)
    released = session.evaluate(query, budget)
    read = from_query(session, query, budget, released, columns={"g": 0},
                      categories={"g": list(range(KEYS))})
    frame = released.toPandas()
    # the cells in the released rows' order, and the scale Tumult reports (1 / epsilon)
    assert [k for (k,) in read.keys] == frame["g"].tolist()
    assert np.array_equal(read.s_dp, frame["count"].to_numpy(dtype=float))
    assert reported[0]["noise_mechanism"].name == "GEOMETRIC"
    assert read.mechanism.noise.family == "geometric"
    assert read.mechanism.noise.scale.tolist() == [reported[0]["noise_parameter"]] * KEYS
    assert read.aggregates[0].kind == "count" and read.aggregates[0].distribution == "GEOMETRIC"
    # the statistic of the records is the query's non-private answer
    truth = _true(people, "count")[frame["g"].to_numpy()]
    assert np.array_equal(read.mechanism.total(_records(people)), truth)
    # Tumult's noise follows the read law: P(z) = (1 - a) / (1 + a) a^|z|, a = e^(-1/b)
    b = read.mechanism.noise.scale[0]
    a = math.exp(-1.0 / b)
    p = _integer_chi_square_p(read.s_dp - truth,
                              lambda k: math.log((1 - a) / (1 + a)) - np.abs(k) / b,
                              chi_square_p)
    assert p > 1e-4, p


def test_a_grouped_integer_sum_under_zcdp_has_discrete_gaussian_noise(spark, people,
                                                                       chi_square_p):
    # AddMaxRows(2): Tumult's sensitivity, hence sigma, doubles; dawrap reads what it reports
    session = _session(spark, people, RhoZCDPBudget(float("inf")), AddMaxRows(2))
    query = (QueryBuilder("people").groupby(KeySet.from_dict({"g": list(range(KEYS))}))
             .sum("age", 10, 13))
    budget = RhoZCDPBudget(2.0)
    reported = session._noise_info(query, budget)
    released = session.evaluate(query, budget)
    read = from_query(session, query, budget, released, columns={"g": 0, "age": 1},
                      categories={"g": list(range(KEYS))})
    frame = released.toPandas()
    assert reported[0]["noise_mechanism"].name == "DISCRETE_GAUSSIAN"
    sigma = math.sqrt(reported[0]["noise_parameter"])    # Tumult reports sigma^2
    assert sigma == 2 * 13 / math.sqrt(2 * 2.0)          # 2 rows of at most 13, rho = 2
    assert read.mechanism.noise.family == "discrete_gaussian"
    assert read.mechanism.noise.scale.tolist() == [sigma] * KEYS
    assert read.aggregates[0][:5] == ("age_sum", "sum", "age", 10.0, 13.0)
    truth = _true(people, "sum", "age", 10, 13)[frame["g"].to_numpy()]
    assert np.array_equal(read.mechanism.total(_records(people)), truth)
    p = _integer_chi_square_p(read.s_dp - truth, lambda k: -k ** 2 / (2 * sigma ** 2)
                              - dawrap.tumult.discrete_gaussian_log_normaliser(sigma),
                              chi_square_p)
    assert p > 1e-4, p


def test_a_grouped_float_sum_has_laplace_noise(spark, people, chi_square_p):
    session = _session(spark, people, PureDPBudget(float("inf")))
    query = (QueryBuilder("people").groupby(KeySet.from_dict({"g": list(range(KEYS))}))
             .sum("income", 0.0, 50.0))
    budget = PureDPBudget(10.0)
    reported = session._noise_info(query, budget)
    released = session.evaluate(query, budget)
    read = from_query(session, query, budget, released.toPandas(),
                      columns={"g": 0, "income": 2}, categories={"g": list(range(KEYS))})
    assert reported[0]["noise_mechanism"].name == "LAPLACE"
    assert read.mechanism.noise.family == "laplace"
    assert read.mechanism.noise.scale.tolist() == [reported[0]["noise_parameter"]] * KEYS
    assert reported[0]["noise_parameter"] == 5.0            # max(|0|, |50|) / 10
    truth = _true(people, "sum", "income", 0.0, 50.0)[[k for (k,) in read.keys]]
    assert np.allclose(read.mechanism.total(_records(people)), truth, rtol=1e-12)
    # ten bins of equal probability under the read Laplace law
    edges = stats.laplace.ppf(np.linspace(0, 1, 11), scale=read.mechanism.noise.scale[0])
    observed = np.histogram(read.s_dp - truth, bins=edges)[0]
    assert chi_square_p(observed, np.full(10, 0.1)) > 1e-4, observed


def test_a_count_without_groups_is_one_cell(spark, people):
    session = _session(spark, people, PureDPBudget(2.0))
    query = QueryBuilder("people").count()
    released = session.evaluate(query, PureDPBudget(2.0))
    # read after the whole budget is spent: Tumult reports the same noise
    read = from_query(session, query, PureDPBudget(2.0), released, columns={})
    assert read.keys == [()] and read.mechanism.noise.scale.tolist() == [0.5]
    assert read.s_dp.tolist() == [float(released.toPandas()["count"][0])]
    assert read.mechanism.total(_records(people)).tolist() == [60.0]


def test_what_cannot_be_read_is_named(spark, people, monkeypatch):
    session = _session(spark, people, PureDPBudget(float("inf")))
    keys = KeySet.from_dict({"g": [0, 1]})
    budget = PureDPBudget(1.0)
    count = QueryBuilder("people").groupby(keys).count()
    released = session.evaluate(count, budget)
    frame = released.toPandas()
    kw = dict(columns={"g": 0}, categories={"g": [0, 1]})

    def refused(query, match, *, error=ValueError, data=frame, **changes):
        with pytest.raises(error, match=match):
            from_query(session, query, budget, data, **{**kw, **changes})

    refused(QueryBuilder("people").groupby(keys).average("age", 0, 100),
            "GroupByBoundedAverage cannot be read")
    refused(QueryBuilder("people").groupby(keys).quantile("age", 0.5, 0, 100),
            "GroupByQuantile cannot be read")
    refused(QueryBuilder("people").groupby(keys).count().suppress(5), "suppress")
    refused(QueryBuilder("people").filter("age > 30").groupby(keys).count(),
            "a Filter step runs before")
    refused(QueryBuilder("people").groupby(keys).count(), r"columns: give .*'g'", columns={})
    refused(count, r"categories: give the codes", categories={})
    refused(count, r"no row for \{'g': 2\}", categories={"g": [0, 1, 2]})
    # a DataFrame that is not this query's release
    refused(count, r"released: the query releases the columns",
            data=frame.rename(columns={"count": "n"}))
    refused(count, r"released: its 1 row\(s\) are not the query's KeySet", data=frame[:1])
    refused(count, "missing or not finite", data=frame.assign(count=[np.nan, 1.0]))
    refused(count, "released must be the DataFrame", error=TypeError, data=[1, 2])
    refused(object(), "query must be a Tumult Analytics query", error=TypeError)
    with pytest.raises(TypeError, match="session must be a tmlt.analytics.Session"):
        from_query(object(), count, budget, frame, **kw)
    # no noise: an infinite budget
    with pytest.raises(ValueError, match=r"no noise"):
        from_query(session, count, PureDPBudget(float("inf")), frame, **kw)
    # groups selected by a noisy threshold
    from tmlt.analytics.config import config
    config.features.auto_partition_selection.enable()
    try:
        refused(QueryBuilder("people").groupby("g").count(), "without a KeySet")
    finally:
        config.features.auto_partition_selection.disable()
    # rows protected by ID: Tumult truncates each ID's rows
    by_id = _session(spark, people, PureDPBudget(1.0), AddRowsWithID("id"))
    with pytest.raises(ValueError, match="AddRowsWithID"):
        from_query(by_id, count, budget, frame, **kw)
    # another Tumult version's report is not guessed
    monkeypatch.setattr(tmlt, "__version__", "0.22.0")
    refused(count, "Tumult Analytics 0.22.0 is installed", error=ImportError)


def test_the_guides_example_runs(spark, monkeypatch, tmp_path, capsys):
    # docs/guide/mechanisms.md includes examples/tumult_grouped_count.py: run as written
    # (in this process, whose Spark session its getOrCreate returns)
    import runpy
    from pathlib import Path

    monkeypatch.chdir(tmp_path)
    script = Path(__file__).resolve().parents[1] / "examples" / "tumult_grouped_count.py"
    runpy.run_path(str(script), run_name="__main__")
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("geometric [1. 1.]")
    assert 0.0 < float(lines[-1]) < 1.0
