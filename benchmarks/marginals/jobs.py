"""The file interface between the orchestrator and a method's runner (numpy and json only).

A runner is a script run as ``PYTHON runner.py JOB.json`` in the method's own environment.
``JOB.json`` names the release (``release``: a ``.npz`` written by ``Release.save``), the
result file to write (``out``), the held-out attribute sets whose marginals the method
estimates (``heldout``), the number of synthetic datasets ``m`` and their size ``n_syn``, the
``seed``, and method options (``options``).

The result (``.npz``): ``heldout_k`` (the method's estimate of the k-th held-out marginal as
probabilities, C order over the attributes as listed: a posterior mean for a Bayesian
method, a point estimate otherwise), ``released_k`` (the same for the released marginals),
``synthetic`` (``(m, n_syn, d)`` integer codes, attributes in the release's order) and
``info`` (a JSON string: ``fit_seconds`` for the fit from the noisy marginals,
``synth_seconds`` for drawing the synthetic datasets, ``synthetic_kind``, versions and
diagnostics). ``synthetic_kind`` tells the orchestrator which combining rule applies:
``posterior_predictive`` (each dataset a fresh sample of ``n_syn`` records from its own
posterior draw of the distribution), ``imputed_confidential`` (each dataset a posterior draw
of the confidential records themselves) or ``point_estimate`` (samples from one fitted
distribution: no uncertainty about it is carried).
"""
from __future__ import annotations

import json

import numpy as np

__all__ = ["read_job", "write_result", "read_result"]


def read_job(path: str) -> dict:
    with open(path) as fh:
        job = json.load(fh)
    job["heldout"] = [tuple(a) for a in job["heldout"]]
    return job


def write_result(path: str, heldout, released, synthetic, info: dict) -> None:
    arrays = {f"heldout_{k}": np.asarray(v, dtype=np.float64).ravel() for k, v in enumerate(heldout)}
    arrays.update({f"released_{k}": np.asarray(v, dtype=np.float64).ravel()
                   for k, v in enumerate(released)})
    np.savez(path, synthetic=np.asarray(synthetic, dtype=np.uint8), info=np.array(json.dumps(info)),
             **arrays)


def read_result(path: str, n_heldout: int, n_released: int) -> dict:
    with np.load(path) as f:
        return {"heldout": [f[f"heldout_{k}"] for k in range(n_heldout)],
                "released": [f[f"released_{k}"] for k in range(n_released)],
                "synthetic": f["synthetic"], "info": json.loads(str(f["info"]))}
