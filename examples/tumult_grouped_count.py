"""A grouped count released with Tumult Analytics, read into dawrap in one call, then the
posterior of a proportion (docs/guide/mechanisms.md shows this file; tests/test_tumult.py runs
it where Tumult is installed: Python 3.12, Java 17, .ci/install_tumult)."""
import pandas as pd
from pyspark.sql import SparkSession
from tmlt.analytics import AddOneRow, KeySet, PureDPBudget, QueryBuilder, Session
import dawrap as dw
from dawrap.models import beta_binomial

spark = SparkSession.builder.getOrCreate()
people = spark.createDataFrame(pd.DataFrame({"sex": ["F", "M", "M", "F", "M", "M"]}))
session = Session.from_dataframe(PureDPBudget(1.0), "people", people,
                                 protected_change=AddOneRow())
query = QueryBuilder("people").groupby(KeySet.from_dict({"sex": ["F", "M"]})).count()
released = session.evaluate(query, PureDPBudget(1.0))
read = dw.tumult.from_query(session, query, PureDPBudget(1.0), released,
                            columns={"sex": 0}, categories={"sex": ["F", "M"]})
print(read.mechanism.noise.family, read.mechanism.noise.scale, read.s_dp)
# beta_binomial's record is x_i[0] = 1 (M) or 0 (F): the posterior of P(M)
idata = dw.sample(beta_binomial.model(a=1.0, b=1.0), read.mechanism, read.s_dp, n=6,
                  draws=1000, tune=500, chains=2, seed=1, progress=False)
print(dw.diagnostics.group(idata, "posterior")["p"].values.mean())
