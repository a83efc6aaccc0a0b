"""Private-PGM (``mbi`` 2.x) on a release: run as ``PGM_PYTHON runner_pgm.py JOB.json``.

Each noisy marginal becomes an ``mbi.LinearMeasurement`` with the standard deviation of its
noise (for Laplace and geometric noise the sd too: PGM's L2 loss weights a measurement by
1/sd, as MST and AIM do); the total is known (``known_total = n``). The estimate is
``MirrorDescent`` (mbi's recommended estimator) run for ``options.iters`` iterations: a
graphical model whose marginals are PGM's point estimate. Synthetic data: ``m`` datasets of
``n_syn`` records from ``model.synthetic_data`` (mbi's default randomized rounding), all from
the same point estimate.
"""
from __future__ import annotations

import sys
import time
from importlib import metadata

import jax

jax.config.update("jax_enable_x64", True)  # mbi warns that float32 can stall estimation
jax.config.update("jax_enable_compilation_cache", False)

import numpy as np  # noqa: E402

from mbi import Domain, LinearMeasurement, estimation  # noqa: E402

from jobs import read_job, write_result  # noqa: E402
from release import Release, noise_variance  # noqa: E402


def _probabilities(model, attrs) -> np.ndarray:
    factor = model.project(tuple(attrs))
    order = [factor.domain.attributes.index(a) for a in attrs]
    values = np.asarray(factor.datavector(flatten=False), dtype=np.float64).transpose(order)
    return (values / values.sum()).ravel()


def main(job_path: str) -> None:
    job = read_job(job_path)
    opts = job.get("options", {})
    rel = Release.load(job["release"])
    np.random.seed(job["seed"])  # mbi's synthetic_data draws from numpy's global generator
    domain = Domain(rel.attributes, tuple(len(l) for l in rel.levels))
    measurements = [LinearMeasurement(v, m.attrs, stddev=float(np.sqrt(noise_variance(m.noise, m.scale))))
                    for m, v in zip(rel.marginals, rel.values)]
    t0, c0 = time.perf_counter(), time.process_time()
    model = estimation.MirrorDescent().estimate(domain, measurements, known_total=float(rel.n),
                                                iters=int(opts.get("iters", 1000)))
    heldout = [_probabilities(model, a) for a in job["heldout"]]
    released = [_probabilities(model, m.attrs) for m in rel.marginals]
    fit_seconds, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    synthetic = []
    for _ in range(job["m"]):
        df = model.synthetic_data(rows=job["n_syn"]).to_dict()
        synthetic.append(np.stack([np.asarray(df[a]) for a in rel.attributes], axis=1))
    synth_seconds = time.perf_counter() - t0
    write_result(job["out"], heldout, released, np.stack(synthetic), {
        "method": "pgm", "fit_seconds": fit_seconds, "fit_cpu_seconds": fit_cpu, "synth_seconds": synth_seconds,
        "synthetic_kind": "point_estimate", "iters": int(opts.get("iters", 1000)),
        "versions": {"mbi": metadata.version("mbi"), "jax": jax.__version__,
                     "numpy": np.__version__}})


if __name__ == "__main__":
    main(sys.argv[1])
