r"""
A release made with OpenDP's Context API, read in one call
==========================================================

The curator releases two statistics of the 1996 American National Election Studies extract
shipped with ``statsmodels`` (944 respondents) through OpenDP's Context API: the number of
respondents of each party (Democrat, Independent, Republican: public keys) and the sum of
their ages clamped to [18, 90]. :func:`dawrap.opendp.from_query` reads each query and its
released DataFrame: the cells, the bounds the query declared and the noise OpenDP reports
(``query.summarize()``), so nothing is copied by hand. The posteriors follow from the
built-in models: the party shares (:mod:`dawrap.models.dirichlet_multinomial`) and the mean
age (:mod:`dawrap.models.normal_mean`, records normal with a known sd of 17 years).
"""
import os

import numpy as np
import opendp.prelude as dp
import polars as pl
import statsmodels.api as sm

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import dirichlet_multinomial, normal_mean

dp.enable_features("contrib")
FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

# %%
# The confidential data and the OpenDP context
# --------------------------------------------
# The curator's context: add or remove one respondent is the privacy unit, epsilon 1 split
# over the two queries; the party labels are public (``invariant="keys"``).
raw = sm.datasets.anes96.load_pandas().data
PARTIES = ["Democrat", "Independent", "Republican"]
data = pl.DataFrame({
    "party": [PARTIES[i] for i in np.digitize(raw["PID"].to_numpy(), [2.5, 3.5])],
    "age": raw["age"].to_numpy().astype(np.int64)})
n = data.height
context = dp.Context.compositor(
    data=data.lazy(), privacy_unit=dp.unit_of(contributions=1),
    privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=2,
    margins=[dp.polars.Margin(by=[], max_length=10_000),
             dp.polars.Margin(by=["party"], invariant="keys", max_length=10_000,
                              max_groups=3)])

# %%
# Party shares from a grouped count
# ---------------------------------
# A record of the Dirichlet-multinomial model is its category code: ``columns`` says which
# record column holds the key, ``categories`` the codes' order.
by_party = context.query().group_by("party").agg(dp.len(signed=True))
print(by_party.summarize())
released = by_party.release().collect()
print(released)
read = dw.opendp.from_query(by_party, released, columns={"party": 0},
                            categories={"party": PARTIES})
shares = dw.sample(dirichlet_multinomial.model(alpha=[1.0, 1.0, 1.0]), read.mechanism,
                   read.s_dp, n, draws=DRAWS, chains=2, seed=1, progress=False)
print(diagnostics.summary(shares))

# %%
# Mean age from a clamped sum
# ---------------------------
# The bounds are read from the query (``dp.sum((18, 90))``), so the statistic clamps each
# record as OpenDP did.
ages = context.query().select(pl.col("age").fill_null(45).dp.sum((18, 90)))
released = ages.release().collect()
read = dw.opendp.from_query(ages, released, columns={"age": 0})
print(read.aggregates)
mean_age = dw.sample(normal_mean.model(mu0=45.0, sd0=20.0, sigma=17.0), read.mechanism,
                     read.s_dp, n, draws=DRAWS, chains=2, seed=2, progress=False)
print(diagnostics.summary(mean_age))
print(f"confidential mean age: {data['age'].mean():.2f}")
