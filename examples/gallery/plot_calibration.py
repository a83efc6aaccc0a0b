"""
Calibration studies
===================

Is a sampler's posterior right? Simulation-based calibration answers it without an exact
posterior: each trial draws ``theta`` from the prior, a confidential database and its
release, runs every method, and records where the true ``theta`` falls in each posterior.
An exact method's ranks are uniform and its intervals cover at their level; the naive one's
are not. :func:`dawrap.calibrate` runs the trials (resumable from its ``store`` file) and
returns a :class:`dawrap.Calibration` with the KS test, interval coverage and plots.

This study is small so that the page builds in seconds; the committed full-size study is
on the :doc:`/reproductions/index` page.
"""
import os
import tempfile
from pathlib import Path

import matplotlib.image as mpimg
import matplotlib.pyplot as plt

import dawrap as dw
from dawrap.models import beta_binomial

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
TRIALS = 40 if FAST else 150
out = Path(tempfile.mkdtemp())

model = beta_binomial.model(a=1, b=1)
mech = beta_binomial.laplace(epsilon=0.1)
cal = dw.calibrate(model, mech, 100, ["record", "naive"], trials=TRIALS, seed=1,
                   sample_kwargs={"draws": 500, "tune": 300, "chains": 2},
                   store=out / "study.jsonl", executor="threads", progress=False)
print(cal)

# %%
# The ECDF of the ranks against the uniform, with simultaneous 95% bands: an exact method
# stays inside them.
cal.plot_ecdf(out / "sbc.png")
fig, ax = plt.subplots(figsize=(8, 4))
ax.imshow(mpimg.imread(out / "sbc.png"))
ax.set_axis_off()
fig.tight_layout()

# %%
# Scale-out
# ---------
# ``executor="threads"`` runs the trials in this process's threads, ``"serial"`` one by one,
# and the default ``"processes"`` one worker process per core (a script using it needs the
# ``if __name__ == "__main__":`` guard). On a dask cluster, install ``dawrap[distributed]``
# and pass ``executor=client.get_executor()`` of a ``dask.distributed.Client``; the
# repository's test ``tests/studies/test_calibration.py::test_a_dask_cluster_gives_the_same_study``
# runs exactly that on a local cluster and checks the results equal a serial run's. Trial
# ``t`` always uses ``SeedSequence(seed).spawn(trials)[t]``, so every executor gives the
# same study. Models and mechanisms travel to the workers by the factory call that built
# them (:func:`dawrap.recipe`).
