r"""
From your DP library to dawrap
==============================

A release made with a differential-privacy library is read into dawrap in one call: the
statistic, the noise the library reports and the released values, nothing copied by hand.
This page runs each reader on the 1996 American National Election Studies extract shipped
with ``statsmodels`` (944 respondents) and turns each release into a posterior:

* **OpenDP's Context API** (:func:`dawrap.opendp.from_query`): a grouped count over public
  keys and a clamped sum, then quantiles selected by OpenDP's exponential mechanism (a
  median and quartiles) and a mean (a noisy sum over a noisy count);
* **SmartNoise Synth's AIM** (:func:`dawrap.smartnoise.fit`): the noisy marginal tables AIM
  measured, for the marginals model.

Tumult Analytics' counts and clamped sums (grouped by a public KeySet or not) are read the
same way, by :func:`dawrap.tumult.from_query` from the session, the query, its budget and
the released DataFrame, with the noise Tumult reports for the query; it needs Spark and
Python 3.12, so it is shown in :doc:`/guide/mechanisms` rather than run on this page.

The OpenDP calls are made in small functions: a query object redirects attribute lookups to
its polars plan, which the docs builder's index of names cannot read.
"""
import os

import numpy as np
import opendp.prelude as dp
import pandas as pd
import polars as pl
import statsmodels.api as sm
from snsynth import Synthesizer

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import dirichlet_multinomial, marginals, normal_mean

dp.enable_features("contrib")
FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
DRAWS = 1000 if FAST else 4000

# %%
# The confidential data and the curator's context
# -----------------------------------------------
# Add or remove one respondent is the privacy unit; epsilon 1 is split over four queries;
# the party labels are public (``invariant="keys"``).
raw = sm.datasets.anes96.load_pandas().data
PARTIES = ["Democrat", "Independent", "Republican"]
data = pl.DataFrame({
    "party": [PARTIES[i] for i in np.digitize(raw["PID"].to_numpy(), [2.5, 3.5])],
    "age": raw["age"].to_numpy().astype(np.int64)})
n = data.height
context = dp.Context.compositor(
    data=data.lazy(), privacy_unit=dp.unit_of(contributions=1),
    privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=4,
    margins=[dp.polars.Margin(by=[], max_length=10_000),
             dp.polars.Margin(by=["party"], invariant="keys", max_length=10_000,
                              max_groups=3)])


def release_and_read(query, **kwargs):
    """What the curator runs (``release``) and what the analyst reads: the noise OpenDP
    reports, the released DataFrame and dawrap's reading of both."""
    released = query.release().collect()
    return query.summarize(), released, dw.opendp.from_query(query, released, **kwargs)


# %%
# Party shares from a grouped count
# ---------------------------------
# A record of the Dirichlet-multinomial model is its category code: ``columns`` says which
# record column holds the key, ``categories`` the codes' order.
report, released, read = release_and_read(
    context.query().group_by("party").agg(dp.len(signed=True)),
    columns={"party": 0}, categories={"party": PARTIES})
print(report)
print(released)
shares = dw.sample(dirichlet_multinomial.model(alpha=[1.0, 1.0, 1.0]), read.mechanism,
                   read.s_dp, n, draws=DRAWS, chains=2, seed=1, progress=False)
print(diagnostics.summary(shares))

# %%
# Mean age from a clamped sum
# ---------------------------
# The bounds are read from the query (``dp.sum((18, 90))``), so the statistic clamps each
# record as OpenDP did. The model: ages normal with a known sd of 17 years.
report, released, read = release_and_read(
    context.query().select(pl.col("age").fill_null(45).dp.sum((18, 90))), columns={"age": 0})
print(read.aggregates[0][:5], read.mechanism.noise.scale)
age_model = normal_mean.model(mu0=45.0, sd0=20.0, sigma=17.0)
from_sum = dw.sample(age_model, read.mechanism, read.s_dp, n, draws=DRAWS, chains=2, seed=2,
                     progress=False)
print(diagnostics.summary(from_sum))

# %%
# The median and quartiles: OpenDP's exponential mechanism
# --------------------------------------------------------
# OpenDP scores each candidate by how far the counts of ages below and above it are from the
# quantile's, and releases the candidate of least noisy score. The mechanism read,
# :class:`dawrap.mechanisms.Quantiles`, has that selection's exact likelihood; the same
# model's posterior follows from the three selected candidates alone. (The model's ages
# are continuous, the data's whole years: OpenDP counts an age equal to a candidate as
# neither below nor above it, which a continuous record never is. A model of whole years
# would describe the data exactly; with candidates five years apart the difference is
# small.)
CANDIDATES = list(range(20, 91, 5))
report, released, read = release_and_read(
    context.query().select(
        pl.col("age").fill_null(45).dp.quantile(0.25, CANDIDATES).alias("q1"),
        pl.col("age").fill_null(45).dp.median(CANDIDATES).alias("median"),
        pl.col("age").fill_null(45).dp.quantile(0.75, CANDIDATES).alias("q3")),
    columns={"age": 0})
print(report)
print(released)
print(read.mechanism)
from_quartiles = dw.sample(age_model, read.mechanism, read.s_dp, n, draws=DRAWS, chains=2,
                           seed=3, progress=False)
print(diagnostics.summary(from_quartiles))

# %%
# A mean: a noisy sum over a noisy count
# --------------------------------------
# ``dp.mean`` releases the ratio of a noisy clamped sum and a noisy count;
# :class:`dawrap.mechanisms.Means` conditions on the ratio as released.
report, released, read = release_and_read(
    context.query().select(pl.col("age").fill_null(45).dp.mean((18, 90))), columns={"age": 0})
print(report)
print(released)
from_mean = dw.sample(age_model, read.mechanism, read.s_dp, n, draws=DRAWS, chains=2, seed=4,
                      progress=False)
print(diagnostics.summary(from_mean))
print(f"confidential mean age: {data['age'].mean():.2f}")

# %%
# SmartNoise Synth's AIM: the measured marginals
# ----------------------------------------------
# AIM chooses marginal tables of the encoded data and measures them with Gaussian noise;
# :func:`dawrap.smartnoise.fit` fits the synthesizer and records what it measured (the
# tables, their noisy counts and sds, the encoding and ``n``). The marginals model over the
# measured tables then gives the posterior of every cell; here the party-by-vote table
# (:func:`dawrap.models.marginals.marginal`, whichever cliques AIM chose) against the
# confidential one. AIM's choices and noise are not seeded: the tables it measures differ
# from one build of this page to the next.
table = pd.DataFrame({"party": data["party"].to_list(),
                      "vote": np.where(raw["vote"].to_numpy() == 1, "Dole", "Clinton"),
                      "educ": raw["educ"].astype(int).astype(str).to_numpy()})
aim = dw.smartnoise.fit(Synthesizer.create("aim", epsilon=1.0), table,
                        categorical_columns=["party", "vote", "educ"])
print(aim.levels, aim.codes["party"], aim.codes["vote"])
print([(clique, round(sigma, 1)) for clique, sigma in aim.measurements])
aim_model = marginals.model(aim.levels, [clique for clique, _ in aim.measurements])
posterior = dw.sample(aim_model, aim.mechanism, aim.s_dp, aim.n, draws=DRAWS, chains=2,
                      seed=5, progress=False)
records = aim.encode(table)
truth = np.zeros((3, 2))
np.add.at(truth, (records[:, 0].astype(int), records[:, 1].astype(int)), 1.0 / aim.n)
shares = marginals.marginal(posterior, aim_model, ("party", "vote"))   # (chain, draw, 3, 2)
print("confidential party-by-vote shares:\n", truth.round(3))
print("posterior means:\n", shares.mean(axis=(0, 1)).round(3))
print("posterior sds:\n", shares.std(axis=(0, 1)).round(3))
