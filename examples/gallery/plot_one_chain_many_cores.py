r"""
One chain on several cores, or on a dask cluster
================================================

``dw.sample(..., cores=k)`` runs whole chains side by side.
``dw.Record(groups=dw.parallel.Threads(k))`` spends ``k`` cores on *one* chain: its records
are split into groups that are swept at the same time, each on its own generator, so the
draws for a seed do not depend on ``k``. ``dw.Record(groups=dw.parallel.Dask(client))``
sweeps the same groups on the workers of a dask cluster, with the same draws. How the
records are split, and why it is exact: :doc:`/parallel`.

Below, a census release over a nation of 4 states of 10 blocks (persons by age x sex): the
blocks' and the states' detailed histograms, and the nation's with little budget, so that its
cells are *shared* by the groups (the states) and each group sees its own piece of them.
"""
import os

import numpy as np
from distributed import Client, LocalCluster

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import census

states = np.repeat(np.arange(4), 10)
geo = census.Geography({"nation": np.zeros(40, int), "state": states, "block": np.arange(40)},
                       {"age": 2, "sex": 2})
sizes = np.random.default_rng(7).integers(20, 60, 40)                # public block totals
counts = np.random.default_rng(8).multinomial(sizes, [0.3, 0.3, 0.2, 0.2])
n = int(sizes.sum())
mech = census.discrete_gaussian(geo, [census.query("block", rho=0.5),
                                      census.query("state", rho=1.0),
                                      census.query("nation", rho=0.05)])
s_dp = mech.release(census.records(counts), seed=9)
model = census.model(geo, totals=sizes, levels=("nation", "state"))

# %%
# One chain's records on two threads
# ----------------------------------
# The model splits itself by state (``model.partition``): four groups, here on two threads.
DRAWS = 500 if os.environ.get("DAWRAP_DOCS_FAST") == "1" else 1000   # reduced size for CI
run = dict(draws=DRAWS, tune=DRAWS, chains=2, seed=10, progress=False)
one = dw.sample(model, mech, s_dp, n, method=dw.Record(groups=dw.parallel.Threads(1)), **run)
two = dw.sample(model, mech, s_dp, n, method=dw.Record(groups=dw.parallel.Threads(2)), **run)


def p(result):
    return diagnostics.group(result, "posterior")["p"].values


print(f"{n} persons in {len(sizes)} blocks; threads=2 gives the draws of threads=1: "
      f"{np.array_equal(p(one), p(two))}")

# %%
# The same groups on a dask cluster
# ---------------------------------
# Here a cluster of two workers in this process; on a real one, a ``Client`` of its
# scheduler (the model and mechanism travel to the workers by their ``@dw.recipe``, the
# records are scattered once and stay there).
with Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                         dashboard_address=None)) as client:
    on_a_cluster = dw.Record(groups=dw.parallel.Dask(client))
    on_cluster = dw.sample(model, mech, s_dp, n, method=on_a_cluster, **run)
print(f"a 2-worker dask cluster gives them too: {np.array_equal(p(one), p(on_cluster))}")
summary = diagnostics.summary(on_cluster)
print(f"worst R-hat {summary['r_hat'].max():.3f}, smallest bulk ESS "
      f"{summary['ess_bulk'].min():.0f} of {2 * run['draws']} draws")
