"""
Long runs: checkpoints, Ctrl-C and resuming
===========================================

A long record-sampler run can write every chain's complete state (the imputed database,
running sums, generator state, draws so far) to a folder, atomically, every
``checkpoint_every`` iterations. If the run is stopped, by Ctrl-C or even by SIGKILL,
``dw.sample(<same arguments>, resume=folder)`` continues it, and the draws are bit-identical
to those of an uninterrupted run. Ctrl-C itself returns the draws so far as a valid ArviZ
object, with a warning.

Here a second Python process plays the user: it starts a run with checkpoints, and we
press "Ctrl-C" (send SIGINT) once its first checkpoints are on disk.
"""
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial

FAST = os.environ.get("DAWRAP_DOCS_FAST") == "1"
N, DRAWS = (20000, 4000) if FAST else (50000, 8000)
workdir = Path(tempfile.mkdtemp())   # the user's working folder
folder = workdir / "run1"

# The run, as the user would type it (in a script or a notebook):
RUN = """
import signal, sys, warnings
signal.signal(signal.SIGINT, signal.default_int_handler)   # as in an interactive session
import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial
n, draws, folder = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
model, mech = beta_binomial.model(), beta_binomial.laplace(0.5)
with warnings.catch_warnings(record=True) as caught:      # shown below without the
    warnings.simplefilter("always")                      # file and line that raised it
    idata = dw.sample(model, mech, 6000.0, n, draws=draws, tune=200, chains=2, seed=1,
                      checkpoint=folder, checkpoint_every=100, progress=False)
for warning in caught:
    print(f"{warning.category.__name__}: {warning.message}")
p = diagnostics.group(idata, "posterior")["p"].values
print("Ctrl-C returned draws of shape (chain, draw) =", p.shape)
"""

# %%
# Start the run, wait for checkpoints, press Ctrl-C
# -------------------------------------------------
child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(RUN), str(N), str(DRAWS),
                          folder.name], text=True, cwd=workdir,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
deadline = time.time() + 600
while not list(folder.glob("chain*.npz")) and child.poll() is None:
    if time.time() > deadline:
        child.kill()
        raise RuntimeError("no checkpoint within 10 minutes")
    time.sleep(0.2)
time.sleep(1.0)
child.send_signal(signal.SIGINT)
output, _ = child.communicate(timeout=600)
print(output.strip())
print("checkpoint folder:", sorted(p.name for p in folder.iterdir()))

# %%
# Resume, and compare with an uninterrupted run
# ---------------------------------------------
model, mech = beta_binomial.model(), beta_binomial.laplace(0.5)
resumed = dw.sample(model, mech, 6000.0, N, draws=DRAWS, tune=200, chains=2, seed=1,
                    resume=folder, progress=False)
straight = dw.sample(model, mech, 6000.0, N, draws=DRAWS, tune=200, chains=2, seed=1,
                     progress=False)
a = diagnostics.group(resumed, "posterior")["p"].values
b = diagnostics.group(straight, "posterior")["p"].values
print("resumed run:", a.shape, "uninterrupted run:", b.shape)
print("bit-identical draws:", np.array_equal(a, b))
