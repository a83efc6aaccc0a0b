"""Noisy marginals of Adult, every method given the same release: the issue-26 comparison.

``--data compas`` runs the same comparison on ProPublica's COMPAS data (``compas.py``, its
released tables ``COMPAS_QUERIES`` and its regression ``compas.downstream_design``); Adult
(``--data adult``) is the default. ``DATASETS`` holds what is specific to a data set.

Run (from the repository root, in dawrap's environment; see README.md beside this file for
the peers' environments):

    python benchmarks/marginals/harness.py run --out bench_marginals --reps 20 --epsilon 1.0 \
        --methods pgm,napsu --pgm-python /work/venvs/peers-pgm/bin/python \
        --napsu-python /work/venvs/peers-napsu/bin/python
    python benchmarks/marginals/harness.py report --out bench_marginals

``run`` draws release r (r = 0 .. reps - 1) from seed ``--seed + r``: the true counts of the
released marginals plus fresh noise, saved as ``OUT/releases/rep{r}.npz``; each method is
handed that file (a peer through a subprocess in its own environment, dawrap in-process
through ``run_dawrap``), and its result is scored at once and appended to
``OUT/results.jsonl`` (one line per method and release). A rerun skips what that file
holds: an interrupted run loses at most the release in progress. ``report`` prints the
summary table (markdown) from that file.

Methods: ``pgm`` (Private-PGM's point estimate; its synthetic data analysed as if real is
the naive baseline), ``napsu`` (NAPSU-MQ's posterior), ``dawrap`` (``run_dawrap``: the record
sampler of :mod:`dawrap.models.marginals`, in-process), and the non-private reference ``exact`` (PGM fitted to the noise-free released
marginals: the error a model with only these marginals makes without any noise), run once.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import time
from typing import NamedTuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import compas  # noqa: E402
from adult import load_adult  # noqa: E402
from jobs import read_result  # noqa: E402
from metrics import COEFFICIENTS, combine, downstream_design, interval, logistic_regression, tv  # noqa: E402
from release import Marginal, Release, draw_release, gaussian_sigma_for, marginal_counts, noise_variance, privacy  # noqa: E402

LEVELS = (0.9, 0.95)
# NAPSU-MQ's Adult release (experiments repository, datasets/adult-reduced/queries.p): MST's
# selection at epsilon 0.5 with five pairs forced in, fixed across repeats.
NAPSU_QUERIES = (("age", "income"), ("age", "marital-status"), ("age", "workclass"),
                 ("education", "income"), ("race", "income"), ("race", "gender"),
                 ("gender", "income"), ("capital-gain", "income"), ("capital-loss", "income"),
                 ("hours-per-week", "income"))
# COMPAS's release: eight 2-way tables whose graph is chordal (its junction tree's cliques:
# {race, sex, two_year_recid}, and {two_year_recid, X} for X = age_cat, priors,
# c_charge_degree, score_text, and {priors, juv_fel}). Every variable of the downstream
# regression (age_cat, race, sex, priors) is linked to the outcome two_year_recid, as Adult's
# to income; the triangle (race, sex), (race, two_year_recid), (sex, two_year_recid) leaves
# the 3-way table (sex, race, two_year_recid) held out with its interaction unmeasured (as
# Adult's race x gender x income); score_text with the outcome is ProPublica's question, the
# charge degree the remaining attribute's link to it, and juvenile felonies go with priors
# (both counts of the criminal record) rather than with the outcome.
COMPAS_QUERIES = (("race", "sex"), ("race", "two_year_recid"), ("sex", "two_year_recid"),
                  ("age_cat", "two_year_recid"), ("priors", "two_year_recid"),
                  ("c_charge_degree", "two_year_recid"), ("score_text", "two_year_recid"),
                  ("juv_fel", "priors"))
RULE_FOR_KIND = {"posterior_predictive": "fully_synthetic", "imputed_confidential": "missing_data",
                 "point_estimate": "fully_synthetic"}


class Dataset(NamedTuple):
    """What is specific to a data set: its table, released queries and downstream regression.

    ``downstream_design(codes, attributes, levels)`` returns (X, y) with the columns of
    ``coefficients``; attributes and levels are read from the table (and the release), so the
    runners need nothing of it.
    """

    load: object
    queries: tuple
    downstream_design: object
    coefficients: tuple


DATASETS = {"adult": Dataset(load_adult, NAPSU_QUERIES, downstream_design, COEFFICIENTS),
            "compas": Dataset(compas.load_compas, COMPAS_QUERIES, compas.downstream_design,
                              compas.COEFFICIENTS)}


# --------------------------------------------------------------------------- dawrap
#: dawrap's run per release (``--dawrap-*`` on the command line): record sampler, chains of
#: ``tune + draws`` sweeps (one sweep updates every one of the n records once, then theta).
DAWRAP_DEFAULTS = {"draws": 700, "tune": 300, "chains": 2, "cores": 2, "alpha": None,
                   "centre": "release", "marginal_draws": 200, "setup": "defaults"}
#: ``--dawrap-setup``: ``"defaults"``, the model's own (chains started from the release,
#: ridge moves, the collapsed move); ``"committed"``, the setup of the first committed rows
#: (2026-11-26, before those existed: records from a uniform theta, none of the moves).
DAWRAP_SETUPS = ("defaults", "committed")


def run_dawrap(release: Release, heldout, m: int, n_syn: int, seed: int, options: dict) -> dict:
    """dawrap's model (:mod:`dawrap.models.marginals`) on ``release``.

    The decomposable model whose junction tree covers the released tables (the default rule),
    the hyper-Dirichlet prior of equivalent sample size ``alpha``, the record sampler
    (exact for the release's noise, whatever its kind); posterior-mean marginals of every
    asked table over ``marginal_draws`` draws; ``m`` posterior-predictive datasets of
    ``n_syn`` records, each from its own posterior draw (``dw.synthetic.datasets(...,
    kind="predictive")``), combined with the fully-synthetic rule (Raghunathan, Reiter & Rubin
    2003). Returns what a runner writes (``jobs.py``).
    """
    import dawrap as dw
    from dawrap import diagnostics
    from dawrap.models import marginals

    opts = {**DAWRAP_DEFAULTS, **{k: v for k, v in options.items() if v is not None}}
    levels = {a: list(lv) for a, lv in zip(release.attributes, release.levels)}
    tables = [mg.attrs for mg in release.marginals]
    noises = [marginals.Noise(mg.noise, mg.scale) for mg in release.marginals]
    t0, c0 = time.perf_counter(), time.process_time()
    if opts["setup"] == "committed":
        # The first committed rows' setup: every chain's records from the uniform
        # distribution (each clique table uniform: consistent across separators), so that no
        # cell starts empty (from a sparse prior draw a cell the release needs can start at
        # ~0 probability, and the record sampler, which proposes records from theta, then
        # almost never proposes it); no ridge or collapsed moves.
        model = marginals.model(levels, tables, alpha=opts["alpha"] or 100.0, centre=None,
                                start="theta", ridge_moves=False, collapsed_moves=0)
        init = model.pack({k: np.full(shape, 1.0 / np.prod(shape))
                           for k, shape in model.params.items()})
    else:  # what a user gets: chains from the release, ridge and collapsed moves
        prior = {} if opts["alpha"] is None else {"alpha": opts["alpha"]}
        if opts["centre"] == "none":
            prior["centre"] = None  # BDeu, the default before the centred prior
        model = marginals.model(levels, tables, **prior)
        init = None
    mech = marginals.mechanism(levels, tables, noises)
    s_dp = np.concatenate([np.asarray(v, float) for v in release.values])
    result = dw.sample(model, mech, s_dp, release.n, draws=opts["draws"], tune=opts["tune"],
                       init_theta=init, chains=opts["chains"], cores=opts["cores"], seed=seed,
                       progress=False)
    post = diagnostics.group(result, "posterior")
    first = post[next(iter(model.params))]
    chains, draws = first.shape[:2]
    theta = np.concatenate([post[k].values.reshape(chains * draws, -1) for k in model.params],
                           axis=-1)
    keep = np.linspace(0, len(theta) - 1, min(opts["marginal_draws"], len(theta))).astype(int)

    def mean_table(attrs):
        return marginals.marginal(theta[keep], model, attrs).mean(axis=0).ravel()

    out_heldout = [mean_table(tuple(h)) for h in heldout]
    out_released = [mean_table(mg.attrs) for mg in release.marginals]
    fit_seconds, fit_cpu = time.perf_counter() - t0, time.process_time() - c0
    t1 = time.perf_counter()
    data = dw.synthetic.datasets(result, m=m, kind="predictive", model=model, size=n_syn,
                                 seed=seed + 1)
    synthetic = data.values.astype(np.int64)
    info = {"fit_seconds": fit_seconds, "fit_cpu_seconds": fit_cpu,
            "synth_seconds": time.perf_counter() - t1,
            "synthetic_kind": "posterior_predictive", "combining_rule": "fully_synthetic",
            "draws": opts["draws"], "tune": opts["tune"], "chains": opts["chains"],
            "cores": opts["cores"], "alpha": model.resolve(mech, s_dp, release.n).alpha,
            "centre": opts["centre"],
            "setup": opts["setup"],
            "cliques": [[release.attributes[a] for a in q] for q in model.structure.cliques]}
    info.update(_dawrap_diagnostics(result))
    return {"heldout": out_heldout, "released": out_released, "synthetic": synthetic,
            "info": info}


def _dawrap_diagnostics(result) -> dict:
    """Worst R-hat and bulk ESS over the parameters' cells (ArviZ, through dawrap's adapter)."""
    from dawrap import diagnostics

    post = diagnostics.group(result, "posterior")
    rhat, ess = [], []
    for name in post.data_vars:
        values = post[name].values
        flat = values.reshape(values.shape[:2] + (-1,))
        for j in range(flat.shape[-1]):
            series = flat[..., j]
            if np.ptp(series) == 0:
                continue
            if series.shape[0] > 1:
                rhat.append(float(diagnostics.rhat(series)))
            ess.append(float(diagnostics.ess(series)))
    return {"rhat_max": max(rhat) if rhat else float("nan"),
            "ess_bulk_min": min(ess) if ess else float("nan")}


# --------------------------------------------------------------------------- design
def design(table, epsilon: float, noise: str, delta: float | None, queries=NAPSU_QUERIES):
    """The release: ``queries`` (by default NAPSU-MQ's ten 2-way marginals of Adult), equal
    noise, total budget epsilon."""
    n = table.codes.shape[0]
    k = len(queries)
    if noise == "gaussian":
        scale = gaussian_sigma_for(epsilon, delta, k)
    else:  # epsilon split equally; L1 sensitivity 2 per marginal
        scale = 2.0 * k / epsilon
    marginals = [Marginal(q, noise, scale) for q in queries]
    released = [set(q) for q in queries]
    heldout = [p for p in itertools.combinations(table.attributes, 2) if set(p) not in released]
    # and every 3-way table whose three 2-way tables are all released (issue 45): its
    # interaction is the one no released table measures
    heldout += [t for t in itertools.combinations(table.attributes, 3)
                if all(set(p) in released for p in itertools.combinations(t, 2))]
    return marginals, heldout, n


def _runner(method: str, args) -> tuple[list[str], dict]:
    if method in ("pgm", "exact"):
        return [args.pgm_python, os.path.join(HERE, "runner_pgm.py")], {"iters": args.pgm_iters}
    if method == "napsu":
        return [args.napsu_python, os.path.join(HERE, "runner_napsu.py")], {
            "inference": args.napsu_inference, "chains": args.napsu_chains,
            "samples": args.napsu_samples, "warmup": args.napsu_warmup,
            "marginal_draws": args.napsu_marginal_draws}
    raise ValueError(f"unknown method {method!r}")


def run_method(method, rel_path, rel, heldout, m, n_syn, seed, args, work, tag):
    """Runs one method on one release: its result, the wall and CPU seconds it took.

    CPU seconds (user + system, all threads of the process) are less sensitive than wall
    time to the other jobs on a shared machine; both include imports and JIT compilation.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    if method == "dawrap":
        res = run_dawrap(rel, heldout, m, n_syn, seed, {
            "draws": args.dawrap_draws, "tune": args.dawrap_tune, "chains": args.dawrap_chains,
            "alpha": args.dawrap_alpha, "centre": args.dawrap_centre,
            "setup": args.dawrap_setup})
        return res, time.perf_counter() - t0, time.process_time() - c0
    cmd, options = _runner(method, args)
    out = os.path.join(work, f"{tag}_result.npz")
    job = os.path.join(work, f"{tag}_job.json")
    with open(job, "w") as fh:
        json.dump({"release": rel_path, "out": out, "heldout": [list(h) for h in heldout],
                   "m": m, "n_syn": n_syn, "seed": seed, "options": options}, fh)
    env = dict(os.environ, PYTHONPATH=HERE)
    log = os.path.join(work, f"{tag}.log")
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(log, "w") as fh:
        proc = subprocess.run(cmd + [job], stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=HERE)
    wall = time.perf_counter() - t0
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
    if proc.returncode:
        with open(log) as fh:
            tail = fh.read()[-3000:]
        raise RuntimeError(f"{method} failed (exit {proc.returncode}); log {log}:\n{tail}")
    res = read_result(out, len(heldout), len(rel.marginals))
    os.remove(out)  # m x n x d synthetic records: scored below, not kept
    return res, wall, cpu


# --------------------------------------------------------------------------- scoring
def score(res, rel, heldout, truth, naive_too: bool, dataset: Dataset = DATASETS["adult"]) -> dict:
    """TV errors and the downstream coefficients' intervals of one method on one release."""
    row = {"tv_heldout": [tv(p, t) for p, t in zip(res["heldout"], truth["heldout"])],
           "tv_released": [tv(p, t) for p, t in zip(res["released"], truth["released"])]}
    syn = res["synthetic"].astype(np.int64)
    q, u = [], []
    for data in syn:
        X, y = dataset.downstream_design(data, rel.attributes, rel.levels)
        b, se = logistic_regression(X, y)
        q.append(b)
        u.append(se**2)
    q, u = np.array(q), np.array(u)
    ok = np.all(np.isfinite(q), axis=1) & np.all(np.isfinite(u), axis=1)
    row["regression_failures"] = int((~ok).sum())
    q, u = q[ok], u[ok]
    kind = res["info"]["synthetic_kind"]
    rules = [res["info"].get("combining_rule", RULE_FOR_KIND[kind])] if len(q) >= 2 else []
    if naive_too:
        rules.append("as_if_real")
    n_syn = syn.shape[1]
    row["intervals"] = {}
    for rule in rules:
        per = {}
        for j, name in enumerate(dataset.coefficients):
            est, var, nu = combine(q[:, j], u[:, j], rule, n_syn, rel.n)
            per[name] = {"estimate": est, "sd": float(np.sqrt(var)), "df": nu,
                         **{f"ci{int(lv * 100)}": interval(est, var, nu, lv) for lv in LEVELS}}
        row["intervals"][rule] = per
    return row


def truth_of(table, rel_marginals, heldout, dataset: Dataset = DATASETS["adult"]):
    attrs, levels = table.attributes, table.levels
    X, y = dataset.downstream_design(table.codes, attrs, levels)
    beta, se = logistic_regression(X, y)
    coefficients = dataset.coefficients
    return {"heldout": [marginal_counts(table.codes, attrs, levels, h) for h in heldout],
            "released": [marginal_counts(table.codes, attrs, levels, m.attrs) for m in rel_marginals],
            "beta": dict(zip(coefficients, beta.tolist())), "se": dict(zip(coefficients, se.tolist()))}


def _done(path):
    if not os.path.exists(path):
        return set()
    with open(path) as fh:
        return {(r["rep"], r["method"]) for r in map(json.loads, fh)}


def cmd_run(args):
    os.makedirs(os.path.join(args.out, "releases"), exist_ok=True)
    work = os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    dataset = DATASETS[args.data]
    table = dataset.load()
    n = table.codes.shape[0]
    delta = args.delta if args.delta is not None else n ** -2.0
    marginals, heldout, n = design(table, args.epsilon, args.noise, delta, dataset.queries)
    truth = truth_of(table, marginals, heldout, dataset)
    config = {"data": args.data, "epsilon": args.epsilon, "delta": delta, "noise": args.noise, "n": n,
              "marginals": [[list(mg.attrs), mg.noise, mg.scale] for mg in marginals],
              "privacy": privacy(marginals, delta if args.noise == "gaussian" else None),
              "heldout": [list(h) for h in heldout], "m": args.m, "seed": args.seed,
              "truth_beta": truth["beta"], "truth_se": truth["se"], "args": vars(args)}
    cfg_path = os.path.join(args.out, "config.json")
    if os.path.exists(cfg_path):
        with open(cfg_path) as fh:
            old = json.load(fh)
        old.setdefault("data", "adult")  # written before --data
        for key in ("data", "epsilon", "delta", "noise", "marginals", "heldout", "m", "seed"):
            if old[key] != config[key]:
                raise SystemExit(f"{cfg_path} was written with {key}={old[key]!r}, not "
                                 f"{config[key]!r}: use another --out")
    with open(cfg_path, "w") as fh:
        json.dump(config, fh, indent=1)
    results = os.path.join(args.out, "results.jsonl")
    done = _done(results)
    methods = [s for s in args.methods.split(",") if s]
    jobs = [(-1, "exact")] if args.exact else []
    jobs += [(r, mth) for r in range(args.first_rep, args.reps) for mth in methods]
    for rep, method in jobs:
        if (rep, method) in done:
            continue
        if rep < 0:  # the noise-free release: exact counts, unit weights
            rel = Release(table.attributes, table.levels, n,
                          [Marginal(mg.attrs, "gaussian", 1.0) for mg in marginals],
                          [v.copy() for v in truth["released"]])
            rel_path = os.path.join(args.out, "releases", "exact.npz")
        else:
            rel_path = os.path.join(args.out, "releases", f"rep{rep}.npz")
            if os.path.exists(rel_path):
                rel = Release.load(rel_path)
            else:
                rel = draw_release(table.codes, table.attributes, table.levels, marginals,
                                   np.random.default_rng(args.seed + rep))
                rel.save(rel_path)
        if rep < 0:
            rel.save(rel_path)
        seed = 1000 * args.seed + rep + 1
        try:
            res, wall, cpu = run_method(method, rel_path, rel, heldout, args.m, n, seed, args, work,
                                        tag=f"{method}_rep{rep}")
        except RuntimeError as err:  # a peer that fails on a release is a result, not a crash
            with open(results, "a") as fh:
                fh.write(json.dumps({"rep": rep, "method": method, "failed": True,
                                     "error": str(err)[-2000:]}) + "\n")
            print(f"rep {rep:3d} {method:6s} FAILED: {str(err).splitlines()[0]}", flush=True)
            continue
        row = {"rep": rep, "method": method, "wall_seconds": wall, "cpu_seconds": cpu,
               "load_before": os.getloadavg()[0], **score(res, rel, heldout, truth, naive_too=True, dataset=dataset),
               "info": res["info"]}
        with open(results, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"rep {rep:3d} {method:6s} wall {wall:8.1f} s  cpu {cpu:8.1f} s  fit {res['info']['fit_seconds']:8.1f} s  "
              f"mean TV held-out {np.mean(row['tv_heldout']):.4f}", flush=True)


# --------------------------------------------------------------------------- report
def _coverage(rows, rule, truth_beta, coefs, level):
    hits = [r["intervals"][rule][c][f"ci{int(level * 100)}"] for r in rows for c in coefs
            if rule in r["intervals"]]
    covered = [lo <= truth_beta[c] <= hi for r in rows for c in coefs if rule in r["intervals"]
               for lo, hi in [r["intervals"][rule][c][f"ci{int(level * 100)}"]]]
    return np.mean(covered) if covered else np.nan, len(hits)


def cmd_report(args):
    with open(os.path.join(args.out, "config.json")) as fh:
        cfg = json.load(fh)
    with open(os.path.join(args.out, "results.jsonl")) as fh:
        rows = [json.loads(line) for line in fh]
    failed = [r for r in rows if r.get("failed")]
    rows = [r for r in rows if not r.get("failed")]
    beta, se = cfg["truth_beta"], cfg["truth_se"]
    coefficients = DATASETS[cfg.get("data", "adult")].coefficients
    methods = sorted({r["method"] for r in rows}, key=["exact", "pgm", "napsu", "dawrap"].index)
    out = []
    # the 2-way held-out tables, and the 3-way ones whose three 2-way tables are released
    # (runs since issue 45; older runs hold none, and their report is unchanged)
    pairs = [j for j, h in enumerate(cfg["heldout"]) if len(h) == 2]
    triples = [j for j, h in enumerate(cfg["heldout"]) if len(h) == 3]
    more = (f" and {len(triples)} held-out 3-way ({'; '.join(' x '.join(cfg['heldout'][j]) for j in triples)})"
            if triples else "")
    out.append(f"n = {cfg['n']}, {len(cfg['marginals'])} released 2-way marginals, "
               f"{cfg['noise']} noise of scale {cfg['marginals'][0][2]:.3f} per cell; "
               f"privacy {', '.join(f'{k} {v:.4g}' for k, v in cfg['privacy'].items())}; "
               f"{len(pairs)} held-out 2-way marginals{more}; m = {cfg['m']} synthetic datasets of n records.\n")
    out.append("| method | releases | TV held-out, mean (sd over releases) | TV held-out, max | "
               "TV released, mean | fit wall s | fit CPU s | synth wall s | process wall s | process CPU s |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    for mth in methods:
        rs = [r for r in rows if r["method"] == mth]
        th = np.array([np.mean([r["tv_heldout"][j] for j in pairs]) for r in rs])
        out.append(f"| {mth} | {len(rs)} | {th.mean():.4f} ({th.std(ddof=1) if len(th) > 1 else 0:.4f}) | "
                   f"{np.max([np.max([r['tv_heldout'][j] for j in pairs]) for r in rs]):.4f} | "
                   f"{np.mean([np.mean(r['tv_released']) for r in rs]):.4f} | "
                   f"{np.median([r['info']['fit_seconds'] for r in rs]):.1f} | "
                   f"{np.median([r['info'].get('fit_cpu_seconds', np.nan) for r in rs]):.1f} | "
                   f"{np.median([r['info']['synth_seconds'] for r in rs]):.1f} | "
                   f"{np.median([r['wall_seconds'] for r in rs]):.1f} | "
                   f"{np.median([r['cpu_seconds'] for r in rs]):.1f} |")
    out.append("\nTimes are medians over releases; CPU seconds are user + system of the runner's "
               "process (all threads), wall seconds depend on the machine's load.\n")
    if triples:
        out.append("Held-out 3-way tables (their three 2-way tables released, their interaction "
                   "not): TV error per release (rep 0, 1, ...), and dawrap's worst R-hat and "
                   "smallest bulk ESS over the theta cells.\n")
        out.append("| method | " + " | ".join(" x ".join(cfg["heldout"][j]) for j in triples)
                   + " | worst R-hat | smallest bulk ESS |")
        out.append("|---|" + "---|" * (len(triples) + 2))
        for mth in methods:
            rs = sorted((r for r in rows if r["method"] == mth), key=lambda r: r["rep"])
            cells = [", ".join(f"{r['tv_heldout'][j]:.4f}" for r in rs) for j in triples]
            diag = ["", ""]
            if mth == "dawrap":
                diag = [f"{max(r['info']['rhat_max'] for r in rs):.4f}",
                        f"{min(r['info']['ess_bulk_min'] for r in rs):.0f}"]
            out.append(f"| {mth} | " + " | ".join(cells + diag) + " |")
        out.append("")
    out.append("Coverage of the real-data maximum-likelihood coefficient (NAPSU-MQ's estimand), "
               f"pooled over the {len(coefficients)} coefficients; in brackets the Monte Carlo standard error "
               "sqrt(c(1-c)/k) with k the number of intervals (coefficients of one release are "
               "correlated, so the error of the pooled figure is somewhat larger).\n")
    out.append("| method | combining rule | releases | cover 90% | cover 95% | "
               "median width 95% / real-data width |")
    out.append("|---|---|---|---|---|---|")
    for mth in methods:
        rs = [r for r in rows if r["method"] == mth and r["rep"] >= 0]
        if not rs:
            continue
        for rule in sorted({k for r in rs for k in r["intervals"]}):
            c90, k = _coverage(rs, rule, beta, coefficients, 0.9)
            c95, _ = _coverage(rs, rule, beta, coefficients, 0.95)
            widths = [(r["intervals"][rule][c]["ci95"][1] - r["intervals"][rule][c]["ci95"][0])
                      / (2 * 1.959964 * se[c]) for r in rs if rule in r["intervals"] for c in coefficients]
            se90, se95 = (np.sqrt(c * (1 - c) / k) for c in (c90, c95))
            out.append(f"| {mth} | {rule} | {len(rs)} | {c90:.3f} ({se90:.3f}) | {c95:.3f} ({se95:.3f}) | "
                       f"{np.median(widths):.2f} |")
    out.append("")
    out.append("Per coefficient, 95% intervals: coverage over releases (real-data estimate "
               "and its standard error in the header).\n")
    out.append("| method | rule | " + " | ".join(f"{c} {beta[c]:.3f} ({se[c]:.3f})" for c in coefficients) + " |")
    out.append("|---|---|" + "---|" * len(coefficients))
    for mth in methods:
        rs = [r for r in rows if r["method"] == mth and r["rep"] >= 0]
        for rule in sorted({k for r in rs for k in r["intervals"]}):
            cells = []
            for c in coefficients:
                cov, k = _coverage(rs, rule, beta, (c,), 0.95)
                cells.append(f"{cov:.2f} / {k}")
            out.append(f"| {mth} | {rule} | " + " | ".join(cells) + " |")
    exact = [r for r in rows if r["method"] == "exact"]
    if exact:
        out.append("")
        out.append("Non-private reference (`exact`: PGM fitted to the noise-free released marginals): "
                   "the mean coefficient over its m synthetic datasets against the real data's, in "
                   "real-data standard errors (the bias of a model with only these marginals): "
                   + ", ".join(f"{c} {(exact[0]['intervals']['fully_synthetic'][c]['estimate'] - beta[c]) / se[c]:+.1f}"
                               for c in coefficients) + ".")
    for r in failed:
        out.append(f"\n{r['method']} failed on release {r['rep']}: {r['error'].splitlines()[-1]}")
    diag = [r["info"] for r in rows if r["method"] == "napsu"]
    if diag and "rhat_max" in diag[0]:
        out.append("")
        out.append(f"NAPSU-MQ NUTS diagnostics over {len(diag)} releases: max R-hat "
                   f"{max(d['rhat_max'] for d in diag):.3f}, min bulk ESS "
                   f"{min(d['ess_bulk_min'] for d in diag):.0f}, divergences "
                   f"{sum(d['divergences'] for d in diag)}.")
    print("\n".join(out))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--out", required=True)
    run.add_argument("--data", choices=tuple(DATASETS), default="adult",
                     help="the data set: its table, released tables and downstream regression")
    run.add_argument("--reps", type=int, default=20)
    run.add_argument("--first-rep", type=int, default=0,
                     help="start at this release (to split the releases over processes)")
    run.add_argument("--epsilon", type=float, default=1.0)
    run.add_argument("--delta", type=float, default=None, help="default n^-2, as NAPSU-MQ")
    run.add_argument("--noise", choices=("gaussian", "laplace", "geometric"), default="gaussian")
    run.add_argument("--methods", default="pgm,napsu")
    run.add_argument("--exact", action=argparse.BooleanOptionalAction, default=True,
                     help="also the non-private reference (once)")
    run.add_argument("--m", type=int, default=20, help="synthetic datasets per release")
    run.add_argument("--seed", type=int, default=26)
    run.add_argument("--pgm-python", default="/work/venvs/peers-pgm/bin/python")
    run.add_argument("--pgm-iters", type=int, default=1000)
    run.add_argument("--napsu-python", default="/work/venvs/peers-napsu/bin/python")
    run.add_argument("--napsu-inference", default="laplace+mcmc",
                     choices=("laplace", "laplace+mcmc", "mcmc"))
    run.add_argument("--napsu-chains", type=int, default=4)
    run.add_argument("--napsu-samples", type=int, default=2000)
    run.add_argument("--napsu-warmup", type=int, default=800)
    run.add_argument("--napsu-marginal-draws", type=int, default=200)
    run.add_argument("--dawrap-draws", type=int, default=None)
    run.add_argument("--dawrap-tune", type=int, default=None)
    run.add_argument("--dawrap-chains", type=int, default=None)
    run.add_argument("--dawrap-alpha", type=float, default=None,
                     help="the prior's equivalent sample size (default: the model's)")
    run.add_argument("--dawrap-centre", choices=("release", "none"), default=None,
                     help="the prior's centre: the release's maximum-entropy fit (the model's "
                          "default) or none (BDeu)")
    run.add_argument("--dawrap-setup", choices=DAWRAP_SETUPS, default=None,
                     help="the model's defaults, or the first committed rows' setup")
    rep = sub.add_parser("report")
    rep.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    {"run": cmd_run, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    main()
