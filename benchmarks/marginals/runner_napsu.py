"""NAPSU-MQ (``twinify`` 2.x) on a release: run as ``NAPSU_PYTHON runner_napsu.py JOB.json``.

``NapsuMQModel.fit`` measures the data itself, so the benchmark calls the layer below it, as
the NAPSU-MQ experiments do (``adult-reduced-synth-data.py``): the released attribute sets
become a ``FullMarginalQuerySet``; its canonical (non-redundant) queries are cells of the
released tables, so their noisy values are read off the release, each with its own noise
variance (NAPSU-MQ's likelihood N(n mu(lambda), n Sigma(lambda) + diag(sigma^2)) takes a
vector of sigmas as it stands; for Laplace or geometric noise it is a Gaussian approximation
with the noise's variance). Inference (``options.inference``):

* ``laplace``: the Laplace approximation (BFGS on the log posterior, Hessian at the mode),
  ``options.laplace_samples`` draws from it;
* ``laplace+mcmc``: then NUTS in the coordinates the Laplace approximation normalises,
  ``options.chains`` x ``options.samples`` draws after ``options.warmup`` (NAPSU-MQ
  experiments: 4 x 2000 after 800);
* ``mcmc``: NUTS from the prior (``NapsuMQModel``'s default).

Prior: lambda ~ N(0, 10^2 I), NAPSU-MQ's default. Held-out marginals: the posterior mean of
each marginal's probabilities over ``options.marginal_draws`` posterior draws, computed
exactly by variable elimination in the Markov network. Synthetic data: ``m`` datasets of
``n_syn`` records, each from its own posterior draw (``NapsuMQResult.generate``'s scheme).
"""
from __future__ import annotations

import sys
import time
from importlib import metadata

import twinify  # noqa: F401  (enables jax float64, as NAPSU-MQ requires)
import jax
import jax.numpy as jnp
import numpy as np
import arviz as az
from twinify.napsu_mq import maximum_entropy_inference as mei
from twinify.napsu_mq.marginal_query import FullMarginalQuerySet
from twinify.napsu_mq.markov_network import MarkovNetwork

from jobs import read_job, write_result
from release import Release, noise_variance


def _statistics(rel: Release, queries):
    """Noisy values and noise sds of the canonical queries, read off the released tables."""
    by_set = {frozenset(m.attrs): k for k, m in enumerate(rel.marginals)}
    values, sds = [], []
    for q in queries.flatten().queries:
        names = [rel.attributes[i] for i in q.inds]
        k = by_set[frozenset(names)]  # every canonical query is a cell of a released table
        m = rel.marginals[k]
        cell = [int(q.value[names.index(a)]) for a in m.attrs]
        values.append(rel.values[k][np.ravel_multi_index(cell, rel.shape(m.attrs))])
        sds.append(np.sqrt(noise_variance(m.noise, m.scale)))
    return jnp.asarray(values), jnp.asarray(sds)


def _posterior_means(network: MarkovNetwork, attr_sets, draws: np.ndarray) -> list[np.ndarray]:
    """Posterior mean of each marginal's probabilities: one compiled function for all sets."""
    def probs(lambdas):
        factors = network.compute_factors(lambdas)
        out = []
        for attrs in attr_sets:
            rest = [v for v in network.elimination_order if v not in attrs]
            factor = network.variable_elimination(factors, rest).project(list(attrs))
            # a factor's axes follow its scope, whose order comes from a set: put them in ours
            logits = jnp.transpose(factor.values, [factor.scope.index(a) for a in attrs])
            out.append(jax.nn.softmax(logits.ravel()))
        return jnp.concatenate(out)
    fn = jax.jit(jax.vmap(probs))
    flat = np.mean(np.concatenate([np.asarray(fn(jnp.asarray(chunk)))
                                   for chunk in np.array_split(draws, max(1, len(draws) // 50))]), axis=0)
    sizes = [int(np.prod([len(network.domain[a]) for a in attrs])) for attrs in attr_sets]
    return np.split(flat, np.cumsum(sizes)[:-1])


def main(job_path: str) -> None:
    job = read_job(job_path)
    opts = job.get("options", {})
    method = opts.get("inference", "laplace")
    rel = Release.load(job["release"])
    domain = {a: np.arange(len(l)) for a, l in zip(rel.attributes, rel.levels)}
    rng = jax.random.PRNGKey(job["seed"])
    rng_fit, rng_draws, rng_syn = jax.random.split(rng, 3)

    t0, c0 = time.perf_counter(), time.process_time()
    queries = FullMarginalQuerySet([m.attrs for m in rel.marginals], domain).get_canonical_queries()
    network = MarkovNetwork(domain, queries)
    stat, sds = _statistics(rel, queries)
    info = {"method": "napsu", "inference": method, "lambda_d": int(network.lambda_d)}
    if method in ("laplace", "laplace+mcmc"):
        approx, ok = mei.run_numpyro_laplace_approximation(
            rng_fit, stat, rel.n, sds, network, max_retries=int(opts.get("max_retries", 5)))
        info["laplace_success"] = bool(ok)
    if method == "laplace":
        posterior = np.asarray(approx.sample(rng_draws, (int(opts.get("laplace_samples", 4000)),)))
    else:
        kw = dict(num_samples=int(opts.get("samples", 2000)), num_warmup=int(opts.get("warmup", 800)),
                  num_chains=int(opts.get("chains", 4)), disable_progressbar=True)
        if method == "laplace+mcmc":
            mcmc, back = mei.run_numpyro_mcmc_normalised(rng_draws, stat, rel.n, sds, network, approx, **kw)
            name = "norm_lambdas"
        elif method == "mcmc":
            mcmc = mei.run_numpyro_mcmc(rng_draws, stat, rel.n, sds, network, **kw)
            back, name = (lambda x: x), "lambdas"
        else:
            raise ValueError(f"options.inference must be laplace, laplace+mcmc or mcmc, got {method!r}")
        idata = az.from_numpyro(mcmc, log_likelihood=False)
        summary = az.summary(idata, var_names=[name], kind="diagnostics")
        info.update(rhat_max=float(summary["r_hat"].max()), ess_bulk_min=float(summary["ess_bulk"].min()),
                    divergences=int(np.asarray(idata.sample_stats["diverging"]).sum()))
        stacked = idata.posterior.stack(draws=("chain", "draw"))[name].values.T
        posterior = np.asarray(back(jnp.asarray(stacked)))
    info["inference_seconds"] = time.perf_counter() - t0
    print(f"inference done: {info}", flush=True)
    pick = np.random.default_rng(job["seed"]).choice(
        posterior.shape[0], size=min(int(opts.get("marginal_draws", 200)), posterior.shape[0]), replace=False)
    means = _posterior_means(network, list(job["heldout"]) + [m.attrs for m in rel.marginals],
                             posterior[pick])
    heldout, released = means[:len(job["heldout"])], means[len(job["heldout"]):]
    info["fit_seconds"], info["fit_cpu_seconds"] = time.perf_counter() - t0, time.process_time() - c0

    t0 = time.perf_counter()
    rng_pick, *keys = jax.random.split(rng_syn, job["m"] + 1)
    rows = np.asarray(jax.random.choice(rng_pick, posterior.shape[0], (job["m"],)))
    synthetic = [network.sample(key, jnp.asarray(posterior[i]), job["n_syn"])[list(rel.attributes)].to_numpy()
                 for key, i in zip(keys, rows)]
    info["synth_seconds"] = time.perf_counter() - t0
    info["synthetic_kind"] = "posterior_predictive"
    info["versions"] = {p: metadata.version(p) for p in ("twinify", "jax", "numpyro", "numpy")}
    write_result(job["out"], heldout, released, np.stack(synthetic), info)


if __name__ == "__main__":
    main(sys.argv[1])
