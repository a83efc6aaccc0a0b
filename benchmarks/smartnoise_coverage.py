"""SmartNoise AIM releases of ANES 1996: the downstream regression's coverage from dawrap's
synthetic data against SmartNoise's own synthetic data analysed as if real (issue 44, item 3).

Run from the repository root (the data ship with statsmodels; SmartNoise Synth 1.0 and
OpenDP installed):

    python benchmarks/smartnoise_coverage.py run --out RUN.jsonl --releases 20 --epsilon 1.0
    python benchmarks/smartnoise_coverage.py report --runs RUN.jsonl \
        --md benchmarks/results/smartnoise_coverage.md [--preamble TEXT.md]

**Data.** The 1996 American National Election Studies extract shipped with statsmodels
(``statsmodels.datasets.anes96``, 944 respondents), as categorical attributes: ``vote``
(Clinton, Dole), ``party`` (the three-point party identification: 0-1 Democrat, 2-4
Independent with the leaners, 5-6 Republican), ``educ`` (statsmodels' codes 1-3 HS or less,
4 some college, 5-7 a college degree), ``age`` (18-39, 40-59, 60+) and, unless
``--attributes`` drops it, ``income`` (codes 1-14 under $25k, 15-19 $25-50k, 20-24 $50k+).

**Regression.** Logistic regression of ``vote == Dole`` on an intercept and the dummies of
``educ``, ``age`` and ``income`` (the first level of each the reference), maximum likelihood
with standard errors from the inverse observed information (``metrics.logistic_regression``
of ``benchmarks/marginals``: what statsmodels' GLM reports). ``party`` is released (the
synthesizer does not know the analysis) but not a regressor: only 14 Democrats say Dole and
34 Republicans Clinton, and in most synthetic tables of AIM at epsilon 1 one of those cells
is empty, so that a regression on party has no finite maximum (quasi-separation: in a first
release, 19 of SmartNoise's 20 samples and 9 of dawrap's 20 imputed databases). The truth
is the regression fitted on the confidential data (the harness's convention, NAPSU-MQ's
estimand), the same for every method.

**A release.** ``Synthesizer.create("aim", epsilon=E)`` (SmartNoise's default delta 1e-9)
fitted with :func:`dawrap.smartnoise.fit`, which records AIM's noisy marginal measurements.
AIM is not seeded: its Gaussian noise comes from OpenDP's generator, which takes no seed;
its selections (``np.random``) and SmartNoise's ``sample`` (mbi's ``np.random``) are seeded
through ``np.random.seed`` per release, so a rerun measures other tables with other noise.
Then, from that one release:

* ``smartnoise as_if_real``: ``synth.sample(n)``, the regression, its Wald intervals (the
  naive analysis); ``smartnoise fully_synthetic``: ``m`` such samples combined with the
  fully-synthetic rule (more datasets of one point estimate: shown for comparison);
* dawrap: ``marginals.model(aim.levels, AIM's measured cliques)`` with its defaults
  (``alpha = 1``), ``dw.sample`` with its defaults (4 chains of 1000 draws after 1000
  warm-up; ``--draws``/``--tune`` change them, and are recorded), ``databases`` enough for
  ``m`` imputed databases; ``m`` datasets of each kind (:func:`dawrap.synthetic.datasets`,
  :func:`dawrap.synthetic.to_frames`), the regression on each, combined by the rules
  :mod:`dawrap.studies.synthetic` gives each kind: imputed databases with ``posterior``
  (the confidential data's own statistic: the estimand here) and ``multiple_imputation``
  (the population parameter behind it), posterior-predictive datasets with
  ``fully_synthetic``.

``run`` appends one JSON line per release to ``--out`` as soon as it is done (estimates,
intervals, covered or not, AIM's measurements, convergence, times, load) and skips the
releases the file already holds for the same settings, so an interrupted run resumes;
``--shard i/k`` runs the releases ``r`` with ``r % k == i`` (to split a run over
processes, each with its own ``--out``). ``report`` writes the markdown summary.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import platform
import sys
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "marginals"))

from harness import _dawrap_diagnostics  # noqa: E402  (max R-hat, min bulk ESS of the cells)
from metrics import logistic_regression  # noqa: E402

LEVELS = (0.9, 0.95)
OUTCOME = ("vote", "Dole")
PREDICTORS = ("educ", "age", "income")
#: attribute -> its levels, the regression's reference first.
ATTRIBUTE_LEVELS = {
    "vote": ("Clinton", "Dole"),
    "party": ("Democrat", "Independent", "Republican"),
    "educ": ("HS or less", "some college", "college degree"),
    "age": ("18-39", "40-59", "60+"),
    "income": ("<25k", "25-50k", "50k+"),
}
DEFAULT_ATTRIBUTES = "vote,party,educ,age,income"
#: (method, kind of synthetic data, combining rule) rows of the report, in its order.
ROWS = (("smartnoise", "sample", "as_if_real"), ("smartnoise", "sample", "fully_synthetic"),
        ("smartnoise", "iid_sample", "as_if_real"),
        ("dawrap", "imputed", "posterior"), ("dawrap", "imputed", "multiple_imputation"),
        ("dawrap", "predictive", "fully_synthetic"))
#: the settings a release's line must share with a rerun for the rerun to skip it.
SETTINGS = ("attributes", "epsilon", "m", "seed", "draws", "tune", "smartnoise_only")


def settings_of(line) -> dict:
    """A release line's settings (lines written before ``--smartnoise-only`` existed ran
    dawrap too)."""
    return {k: bool(line.get(k)) if k == "smartnoise_only" else line.get(k) for k in SETTINGS}


# --------------------------------------------------------------------------- data
def load_anes(attributes):
    """The confidential table: ANES 1996 (statsmodels) as the categorical ``attributes``."""
    import pandas as pd
    import statsmodels.api as sm

    raw = sm.datasets.anes96.load_pandas().data

    def cut(column, edges, name):
        return np.asarray(ATTRIBUTE_LEVELS[name])[np.digitize(raw[column].to_numpy(), edges)]

    columns = {"vote": np.where(raw["vote"].to_numpy() == 1, "Dole", "Clinton"),
               "party": cut("PID", [1.5, 4.5], "party"),
               "educ": cut("educ", [3.5, 4.5], "educ"),
               "age": cut("age", [39.5, 59.5], "age"),
               "income": cut("income", [14.5, 19.5], "income")}
    return pd.DataFrame({a: columns[a] for a in attributes})


def coefficient_names() -> list[str]:
    return ["intercept"] + [f"{a}={lv}" for a in PREDICTORS for lv in ATTRIBUTE_LEVELS[a][1:]]


def design(frame):
    """(X, y) of the regression from a table of labels (strings or a pandas Categorical)."""
    y = (np.asarray(frame[OUTCOME[0]]).astype(str) == OUTCOME[1]).astype(np.float64)
    cols = [np.ones(len(y))]
    for a in PREDICTORS:
        values = np.asarray(frame[a]).astype(str)
        unknown = set(values) - set(ATTRIBUTE_LEVELS[a])
        if unknown:
            raise ValueError(f"column {a!r} holds {sorted(unknown)}, not levels of {a}")
        cols += [(values == lv).astype(np.float64) for lv in ATTRIBUTE_LEVELS[a][1:]]
    return np.column_stack(cols), y


def regressions(frames):
    """Estimates and variances (m, p) of the regression on each table; the failed ones
    (Newton's method not converging: separation) are dropped and counted."""
    q, u = [], []
    for frame in frames:
        b, se = logistic_regression(*design(frame))
        q.append(b)
        u.append(se ** 2)
    q, u = np.array(q), np.array(u)
    ok = np.all(np.isfinite(q), axis=1) & np.all(np.isfinite(u), axis=1)
    return q[ok], u[ok], int((~ok).sum())


def intervals(q, u, rule, kind, names, truth, n):
    """Per coefficient: the combined estimate, sd, df, and each level's interval and
    whether it covers the truth (None when too few regressions succeeded). ``kind``: the
    datasets' (``"imputed"``, or ``"predictive"`` for SmartNoise's samples too); the fully
    synthetic rule takes the sizes, here both ``n``."""
    import dawrap as dw

    need = 1 if rule == "as_if_real" else 2
    if len(q) < need:
        return None
    sizes = {"n": n, "n_syn": n} if rule == "fully_synthetic" else {}
    out = {}
    for j, name in enumerate(names):
        row = {}
        for level in LEVELS:
            c = dw.synthetic.combine(q[:, j], u[:, j], rule, kind=kind, level=level, **sizes)
            lo, hi = c.interval
            row.update({"estimate": c.estimate, "sd": math.sqrt(c.variance), "df": c.df,
                        f"ci{round(level * 100)}": [lo, hi],
                        f"covered{round(level * 100)}": bool(lo <= truth[name] <= hi)})
        out[name] = row
    return out


# --------------------------------------------------------------------------- one release
def run_release(table, attributes, truth, r, args) -> dict:
    import dawrap as dw
    from dawrap.models import marginals
    from snsynth import Synthesizer

    seed = 1000 * args.seed + r
    names = coefficient_names()
    n = len(table)
    load_before = os.getloadavg()
    t_start = time.perf_counter()
    np.random.seed(seed)  # AIM's selections and SmartNoise's sampling; not OpenDP's noise
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mbi: "Pandas dataframe inputs are deprecated"
        synth = Synthesizer.create("aim", epsilon=args.epsilon)
        aim = dw.smartnoise.fit(synth, table, categorical_columns=list(attributes))
    aim_seconds = time.perf_counter() - t0
    if list(aim.levels) != list(attributes) or aim.n != n:
        raise RuntimeError(f"AIM's release is over {aim.levels} (n = {aim.n}), the table's "
                           f"attributes are {attributes} (n = {n})")

    # SmartNoise's own synthetic data: one sample analysed as if real, and m combined
    t0 = time.perf_counter()
    samples = [synth.sample(n) for _ in range(args.m)]
    q, u, sn_failed = regressions(samples)
    first_ok = bool(np.all(np.isfinite(logistic_regression(*design(samples[0]))[0])))
    results = {"smartnoise/sample/as_if_real":
               intervals(q[:1], u[:1], "as_if_real", "predictive", names, truth, n)
               if first_ok else None,
               "smartnoise/sample/fully_synthetic":
               intervals(q, u, "fully_synthetic", "predictive", names, truth, n)}
    failures = {"smartnoise/sample": sn_failed}
    q, u, iid_failed = regressions([iid_sample(synth, n, attributes)])
    results["smartnoise/iid_sample/as_if_real"] = intervals(q, u, "as_if_real", "predictive",
                                                            names, truth, n)
    failures["smartnoise/iid_sample"] = iid_failed
    smartnoise_seconds = time.perf_counter() - t0
    line = {"release": r, **{k: getattr(args, k) for k in SETTINGS if k != "attributes"},
            "attributes": list(attributes), "n": n, "delta": synth.delta,
            "measurements": [[list(c), s] for c, s in aim.measurements],
            "s_dp": aim.s_dp.tolist(), "results": results, "regression_failures": failures,
            "load_before": load_before, "cores": args.cores,
            "command": " ".join([os.path.basename(sys.executable)] + sys.argv)}
    if args.smartnoise_only:
        line.update({"seconds": {"aim_fit": aim_seconds,
                                 "smartnoise_analysis": smartnoise_seconds,
                                 "release_total": time.perf_counter() - t_start},
                     "load_after": os.getloadavg()})
        return line

    # dawrap: the marginals model on AIM's measured cliques, dw.sample's defaults
    cliques = [clique for clique, _ in aim.measurements]
    model = marginals.model(aim.levels, cliques)
    sample_kwargs = {k: getattr(args, k) for k in ("draws", "tune") if getattr(args, k)}
    chains = 4  # dw.sample's default, named here to keep m imputed databases
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = dw.sample(model, aim.mechanism, aim.s_dp, aim.n, chains=chains,
                           cores=args.cores, seed=seed, databases=-(-args.m // chains),
                           progress=False, **sample_kwargs)
    dawrap_seconds = time.perf_counter() - t0
    diagnostics = _dawrap_diagnostics(result)
    t0 = time.perf_counter()
    fields = list(aim.levels)
    data = {"imputed": dw.synthetic.datasets(result, args.m, kind="imputed", fields=fields),
            "predictive": dw.synthetic.datasets(result, args.m, kind="predictive", model=model,
                                                seed=seed + 1, fields=fields)}
    for kind, rules in (("imputed", ("posterior", "multiple_imputation")),
                        ("predictive", ("fully_synthetic",))):
        q, u, failed = regressions(dw.synthetic.to_frames(data[kind], labels=aim.codes))
        failures[f"dawrap/{kind}"] = failed
        for rule in rules:
            results[f"dawrap/{kind}/{rule}"] = intervals(q, u, rule, kind, names, truth, n)
    analysis_seconds = time.perf_counter() - t0
    return {
        **line,
        "model_cliques": [[fields[i] for i in c] for c in model.structure.cliques],
        "convergence": {**diagnostics, "warnings": [str(w.message)[:400] for w in caught]},
        "seconds": {"aim_fit": aim_seconds, "smartnoise_analysis": smartnoise_seconds,
                    "dawrap_sample": dawrap_seconds,
                    "dawrap_compile": float(result.attrs.get("compile_time", float("nan"))),
                    "dawrap_sampling": float(result.attrs.get("sampling_time", float("nan"))),
                    "dawrap_analysis": analysis_seconds,
                    "release_total": time.perf_counter() - t_start},
        "load_after": os.getloadavg(),
    }


def iid_sample(synth, n, attributes):
    """``n`` records drawn independently from SmartNoise's fitted model: ``synth.sample``
    (``snsynth/aim/aim.py``, ``AIMSynthesizer.sample``) with mbi's ``method="sample"``
    instead of its default ``"round"`` (randomized rounding, whose records do not follow the
    model's joint distribution of attributes outside one measured clique: the report)."""
    import pandas as pd

    data = synth.synthesizer.synthetic_data(rows=n, method="sample")
    colnames = ["col" + str(i) for i in range(synth._transformer.output_width)]
    rows = [tuple(t[1:]) for t in data.df[colnames].itertuples()]
    return pd.DataFrame(synth._transformer.inverse_transform(rows), columns=list(attributes))


def truth_of(table) -> dict:
    beta, se = logistic_regression(*design(table))
    if not np.all(np.isfinite(beta)):
        raise RuntimeError("the regression on the confidential data did not converge")
    names = coefficient_names()
    return {"beta": dict(zip(names, beta.tolist())), "se": dict(zip(names, se.tolist()))}


def _lines(paths):
    for path in paths:
        if os.path.exists(path):
            with open(path) as fh:
                yield from (json.loads(line) for line in fh if line.strip())


def cmd_run(args):
    import dawrap
    import snsynth  # noqa: F401

    attributes = tuple(a for a in args.attributes.split(",") if a)
    needed = (OUTCOME[0],) + PREDICTORS
    if not set(needed) <= set(attributes) <= set(ATTRIBUTE_LEVELS) or \
            len(set(attributes)) != len(attributes):
        raise SystemExit(f"--attributes: distinct names of {list(ATTRIBUTE_LEVELS)} including "
                         f"{list(needed)}, got {args.attributes!r}")
    args.attributes = list(attributes)
    shard, shards = (int(v) for v in args.shard.split("/"))
    if not 0 <= shard < shards:
        raise SystemExit(f"--shard i/k with 0 <= i < k, got {args.shard!r}")
    table = load_anes(attributes)
    truth = truth_of(table)
    mine = {k: getattr(args, k) for k in SETTINGS}
    done = {line["release"] for line in _lines([args.out]) if settings_of(line) == mine}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    print(f"dawrap {dawrap.__version__} from {os.path.dirname(dawrap.__file__)}; "
          f"{len(table)} records, attributes {attributes}; truth {truth['beta']}", flush=True)
    for r in range(args.first_release, args.releases):
        if r % shards != shard or r in done:
            continue
        line = run_release(table, attributes, truth["beta"], r, args)
        line.update({"truth": truth, "python": platform.python_version(),
                     "dawrap_version": dawrap.__version__})
        with open(args.out, "a") as fh:
            fh.write(json.dumps(line) + "\n")
        res, sec = line["results"], line["seconds"]
        conv = line.get("convergence", {"rhat_max": math.nan, "ess_bulk_min": math.nan})

        def pooled(key, lv):
            got = res.get(key)
            return float("nan") if got is None else \
                np.mean([c[f"covered{lv}"] for c in got.values()])
        print(f"release {r:3d}: {len(line['measurements'])} tables; covered 95%: smartnoise "
              f"{pooled('smartnoise/sample/as_if_real', 95):.2f}, dawrap posterior "
              f"{pooled('dawrap/imputed/posterior', 95):.2f}; R-hat {conv['rhat_max']:.3f} "
              f"ESS {conv['ess_bulk_min']:.0f}; AIM {sec['aim_fit']:.0f} s, dawrap "
              f"{sec.get('dawrap_sample', math.nan):.0f} s (compile "
              f"{sec.get('dawrap_compile', math.nan):.0f} s); "
              f"load {line['load_before'][0]:.1f}", flush=True)


# --------------------------------------------------------------------------- report
def _exact(k: int, n: int) -> tuple[float, float]:
    from scipy import stats
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return ci.low, ci.high


def _coverage_cell(lines, key, lv, failed_as_miss=False):
    """'c (binomial se; exact 95% CI; se over releases)' pooled over releases x
    coefficients; a release whose analysis gave no interval is left out, or with
    ``failed_as_miss`` counted as covering none of its coefficients."""
    per_release = []
    for line in lines:
        got = line["results"].get(key)
        if got is None:
            if failed_as_miss:
                per_release.append([False] * len(coefficient_names()))
            continue
        per_release.append([got[c][f"covered{lv}"] for c in got])
    hits = [h for row in per_release for h in row]
    if not hits:
        return "-", 0, 0
    k, n = int(np.sum(hits)), len(hits)
    c = k / n
    lo, hi = _exact(k, n)
    means = np.array([np.mean(row) for row in per_release])
    cluster = means.std(ddof=1) / math.sqrt(len(means)) if len(means) > 1 else float("nan")
    return f"{c:.3f} ({math.sqrt(c * (1 - c) / n):.3f}; {lo:.3f}-{hi:.3f}; {cluster:.3f})", n, \
        len(per_release)


def _worst_cliques(lines) -> str:
    """Where the chains did not converge: the clique of the worst cell dw.sample's warning
    names, and whether the model has a ridge move on it (``ridge.ridges``)."""
    import re

    from dawrap.models import marginals
    from dawrap.models.marginals import ridge

    sizes, with_ridge, bad = {}, 0, 0
    for line in lines:
        if line["convergence"]["rhat_max"] <= 1.1 or not line["convergence"]["warnings"]:
            continue
        bad += 1
        names = line["attributes"]
        tables = [tuple(c) for c, _ in line["measurements"]]
        model = marginals.model({a: len(ATTRIBUTE_LEVELS[a]) for a in names}, tables)
        cliques = [name[2:] for name in model.params]  # "p_<attributes>", clique order
        assert len(cliques) == len(model.structure.cliques)
        rows = ridge.ridges(model.structure, [tuple(names.index(a) for a in t) for t in tables])
        worst = re.search(r"for p_(\w+?)\[", line["convergence"]["warnings"][0]).group(1)
        size = len(model.structure.cliques[cliques.index(worst)])
        sizes[size] = sizes.get(size, 0) + 1
        with_ridge += cliques.index(worst) in set(rows[:, 0].tolist())
    return (f"Where the chains did not converge (worst R-hat above 1.1: {bad} releases): "
            f"the worst cell dw.sample names is in a clique of "
            + ", ".join(f"{k} attributes on {v}" for k, v in sorted(sizes.items()))
            + f" releases; the model has a ridge move on that clique on {with_ridge} of them "
              "(`models/marginals/ridge.py`: a clique of three attributes, one of which is "
              "in no other clique).")


def _holding(lines, key):
    """The lines whose run made the analysis ``key`` (rows added later are not failures)."""
    return [line for line in lines if key in line["results"]]


def report_design(lines, out):
    first = lines[0]
    attributes, truth = first["attributes"], first["truth"]
    names = coefficient_names()
    releases = sorted(line["release"] for line in lines)
    with_dawrap = not first.get("smartnoise_only")
    out.append(f"## {len(attributes)} attributes ({', '.join(attributes)}), epsilon "
               f"{first['epsilon']:g}: {len(lines)} releases"
               f"{'' if with_dawrap else ', SmartNoise only'}\n")
    dr = first.get("draws") or 1000
    tu = first.get("tune") or 1000
    defaults = ' (the defaults)' if not first.get('draws') and not first.get('tune') else ''
    out.append(f"n = {first['n']}; AIM at epsilon {first['epsilon']:g}, delta "
               f"{first['delta']:g} (SmartNoise's default); m = {first['m']} datasets per "
               f"combining rule; "
               + (f"dawrap: 4 chains of {dr} draws after {tu} warm-up{defaults}, alpha = 1 "
                  "(the model's default); " if with_dawrap else "no dawrap run; ")
               + f"releases {releases[0]}-{releases[-1]}, seed {first['seed']}.\n")
    out.append(f"Regression: logistic, {OUTCOME[0]} = {OUTCOME[1]} on an intercept and "
               f"{', '.join(PREDICTORS)} (dummies; references "
               f"{', '.join(ATTRIBUTE_LEVELS[a][0] for a in PREDICTORS)}).\n")
    out.append("Truth (the regression on the confidential data): "
               + ", ".join(f"{c} {truth['beta'][c]:+.3f} (se {truth['se'][c]:.3f})"
                           for c in names) + ".\n")
    out.append("Coverage pooled over releases x coefficients: the fraction covered (its "
               "binomial standard error sqrt(c(1-c)/k); the exact 95% Clopper-Pearson "
               "interval; the standard error over releases, sd of the per-release fractions "
               "/ sqrt(releases), which allows for the coefficients of one release being "
               "correlated). Width: median over releases x coefficients of the 95% interval's "
               "width / the confidential data's own Wald interval's. An analysis whose "
               "regression has no finite estimate gives no interval and is left out here "
               "(the next table counts it as covering nothing).\n")
    out.append("| method | data | rule | releases | intervals | cover 90% | cover 95% | "
               "median width 95% / real | regressions failed |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    rows = [row for row in ROWS if _holding(lines, "/".join(row))]
    for method, kind, rule in rows:
        key = f"{method}/{kind}/{rule}"
        some = _holding(lines, key)
        c90, k, nrel = _coverage_cell(some, key, 90)
        c95, _, _ = _coverage_cell(some, key, 95)
        widths = [(got[c]["ci95"][1] - got[c]["ci95"][0]) / (2 * 1.959964 * truth["se"][c])
                  for line in some for got in [line["results"][key]] if got for c in names]
        failed = sum(line["regression_failures"].get(f"{method}/{kind}", 0) for line in some)
        of = len(some) * (1 if kind == "iid_sample" else first["m"])
        if rule == "as_if_real" and kind == "sample":   # the first of the m samples
            failed, of = sum(line["results"][key] is None for line in some), len(some)
        out.append(f"| {method} | {kind} | {rule} | {nrel} | {k} | {c90} | {c95} | "
                   f"{np.median(widths) if widths else float('nan'):.2f} | {failed} of {of} |")
    missing = [row for row in rows if any(line["results"]["/".join(row)] is None
                                          for line in _holding(lines, "/".join(row)))]
    if missing:
        out.append("")
        out.append("The same where an analysis without a finite estimate (the regression's "
                   "maximum likelihood does not exist on the synthetic data: an empty "
                   "outcome-by-level cell) counts as covering none of the coefficients:\n")
        out.append("| method | data | rule | releases | cover 90% | cover 95% |")
        out.append("|---|---|---|---|---|---|")
        for method, kind, rule in missing:
            key = f"{method}/{kind}/{rule}"
            some = _holding(lines, key)
            c90, _, nrel = _coverage_cell(some, key, 90, failed_as_miss=True)
            c95, _, _ = _coverage_cell(some, key, 95, failed_as_miss=True)
            out.append(f"| {method} | {kind} | {rule} | {nrel} | {c90} | {c95} |")
    out.append("")
    out.append("Per coefficient, 95% intervals covered / releases with an interval:\n")
    out.append("| method | rule | " + " | ".join(names) + " |")
    out.append("|---|---|" + "---|" * len(names))
    for method, kind, rule in rows:
        key = f"{method}/{kind}/{rule}"
        cells = []
        for c in names:
            hits = [line["results"][key][c]["covered95"] for line in _holding(lines, key)
                    if line["results"][key]]
            cells.append(f"{sum(hits)}/{len(hits)}")
        out.append(f"| {method} {kind} | {rule} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("Median over releases of the estimate minus the truth, in the confidential "
               "data's standard errors, and the median reported sd / the confidential data's "
               "se (medians: a nearly empty cell gives a few very large estimates):\n")
    out.append("| method | rule | " + " | ".join(names) + " |")
    out.append("|---|---|" + "---|" * len(names))
    for method, kind, rule in rows:
        if rule in ("fully_synthetic", "multiple_imputation") and method == "smartnoise" or \
                rule == "multiple_imputation":
            continue  # the same estimates as another row's
        key = f"{method}/{kind}/{rule}"
        cells = []
        for c in names:
            got = [line["results"][key][c] for line in _holding(lines, key)
                   if line["results"][key]]
            bias = np.median([g["estimate"] for g in got]) - truth["beta"][c]
            sd = np.median([g["sd"] for g in got])
            cells.append(f"{bias / truth['se'][c]:+.2f} / {sd / truth['se'][c]:.2f}")
        out.append(f"| {method} {kind} | {rule} | " + " | ".join(cells) + " |")
    out.append("")
    if with_dawrap:
        _report_convergence(lines, out, dr)
    sec = {k: np.array([line["seconds"][k] for line in lines]) for k in first["seconds"]}
    out.append("**Time per release** (wall seconds, median (range)): "
               + "; ".join(f"{k.replace('_', ' ')} {np.median(v):.1f} ({v.min():.1f}-"
                           f"{v.max():.1f})" for k, v in sec.items())
               + (". `dawrap compile` is the part of `dawrap sample` spent compiling or "
                  "loading compiled code: every release whose cliques differ from those "
                  "already compiled in the process compiles its chain." if with_dawrap else
                  ".") + "\n")
    counts = {}
    for line in lines:
        for clique in {tuple(sorted(c)) for c, _ in line["measurements"] if len(c) > 1}:
            counts[clique] = counts.get(clique, 0) + 1
    tables = [len(line["measurements"]) for line in lines]
    out.append(f"**What AIM measured**: {min(tables)}-{max(tables)} tables per release "
               f"(median {np.median(tables):.0f}; the 1-way tables first, then its "
               f"rounds'); 2-way tables measured in at least one round, releases: "
               + ", ".join(f"{'x'.join(c)} {k}" for c, k in
                           sorted(counts.items(), key=lambda kv: -kv[1])) + ".\n")
    loads = np.array([line["load_before"][0] for line in lines])
    out.append(f"**Machine load** (1-minute load average before each release, 2 cores): "
               f"median {np.median(loads):.1f}, range {loads.min():.1f}-{loads.max():.1f}. "
               f"Python {first['python']}, dawrap {first['dawrap_version']}; "
               f"{first['cores']} thread(s) per run.\n")
    commands = sorted({line["command"] for line in lines})
    out.append("Commands:\n\n```\n" + "\n".join(commands) + "\n```\n")


def _report_convergence(lines, out, draws):
    rhat = np.array([line["convergence"]["rhat_max"] for line in lines])
    ess = np.array([line["convergence"]["ess_bulk_min"] for line in lines])
    warned = sum(bool(line["convergence"]["warnings"]) for line in lines)
    out.append(f"**Convergence** (dawrap, over the model's cell probabilities): worst R-hat "
               f"median {np.median(rhat):.3f}, range {rhat.min():.3f}-{rhat.max():.3f}; "
               f"above 1.01 on {int((rhat > 1.01).sum())}, above 1.05 on "
               f"{int((rhat > 1.05).sum())}, above 1.1 on {int((rhat > 1.1).sum())} of "
               f"{len(lines)} releases. Smallest bulk ESS (of {4 * draws} draws) median "
               f"{np.median(ess):.0f}, range {ess.min():.0f}-{ess.max():.0f}; below 400 on "
               f"{int((ess < 400).sum())}. dw.sample warned (R-hat > 1.01 or ESS < 100 per "
               f"chain) on {warned} releases.\n")
    out.append("dawrap's coverage at 95% by the release's worst R-hat:\n")
    out.append("| worst R-hat | releases | imputed, posterior | imputed, multiple_imputation "
               "| predictive, fully_synthetic |")
    out.append("|---|---|---|---|---|")
    for lo, hi in ((0, 1.05), (1.05, 1.5), (1.5, math.inf)):
        some = [line for line in lines if lo < line["convergence"]["rhat_max"] <= hi]
        cells = [_coverage_cell(some, f"dawrap/{key}", 95)[0] for key in
                 ("imputed/posterior", "imputed/multiple_imputation",
                  "predictive/fully_synthetic")]
        out.append(f"| {lo:g} - {hi:g} | {len(some)} | " + " | ".join(cells) + " |")
    out.append("")
    out.append(_worst_cliques(lines) + "\n")
    out.append("Coverage at 95% of a predictor's coefficients by whether the model joins "
               f"{OUTCOME[0]} and that predictor in one clique (a table of both measured, or "
               "a triangulation's fill-in); otherwise the model holds them independent given "
               "the rest, whatever the posterior, so the coefficient comes from the structure "
               "(the estimates' median bias in confidential-data standard errors):\n")
    out.append("| rule | " + " | ".join(f"{a}: joined | {a}: not joined" for a in PREDICTORS)
               + " |")
    out.append("|---|" + "---|---|" * len(PREDICTORS))
    for key in ("dawrap/imputed/posterior", "dawrap/predictive/fully_synthetic"):
        cells = []
        for a in PREDICTORS:
            coefs = [c for c in coefficient_names() if c.startswith(a + "=")]
            for joined in (True, False):
                got = [(line["results"][key][c], c) for line in lines if line["results"][key]
                       and any(OUTCOME[0] in q and a in q for q in line["model_cliques"])
                       == joined for c in coefs]
                if not got:
                    cells.append("-")
                    continue
                hit = np.mean([g["covered95"] for g, _ in got])
                bias = np.median([(g["estimate"] - line_truth) / se for g, c in got
                                  for line_truth, se in [(lines[0]["truth"]["beta"][c],
                                                          lines[0]["truth"]["se"][c])]])
                cells.append(f"{hit:.2f} of {len(got)} ({bias:+.1f})")
        out.append(f"| {key.split('/', 1)[1]} | " + " | ".join(cells) + " |")
    out.append("")


def cmd_report(args):
    lines = list(_lines(args.runs))
    if not lines:
        raise SystemExit(f"no releases in {args.runs}")
    groups = {}
    for line in lines:
        key = tuple(json.dumps(v) for v in settings_of(line).values())
        groups.setdefault(key, {})[line["release"]] = line  # a release run twice: the last
    out = ["# SmartNoise AIM's synthetic data against dawrap's: downstream coverage "
           "(issue 44, item 3)\n"]
    if args.preamble:
        with open(args.preamble) as fh:
            out.append(fh.read())
    for key in sorted(groups, key=lambda k: (-len(json.loads(k[0])), k)):
        report_design([groups[key][r] for r in sorted(groups[key])], out)
    text = "\n".join(out)
    if args.md:
        with open(args.md, "w") as fh:
            fh.write(text)
        print(f"wrote {args.md}")
    else:
        print(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="fit AIM, analyse, append a JSON line per release")
    run.add_argument("--out", required=True, help="the JSONL file (appended; a rerun resumes)")
    run.add_argument("--releases", type=int, default=20)
    run.add_argument("--first-release", type=int, default=0)
    run.add_argument("--shard", default="0/1", help="i/k: the releases r with r %% k == i")
    run.add_argument("--epsilon", type=float, default=1.0)
    run.add_argument("--attributes", default=DEFAULT_ATTRIBUTES,
                     help=f"released, comma-separated, of {list(ATTRIBUTE_LEVELS)}, with "
                          f"vote and {', '.join(PREDICTORS)}")
    run.add_argument("--m", type=int, default=20, help="synthetic datasets per rule")
    run.add_argument("--seed", type=int, default=44)
    run.add_argument("--draws", type=int, default=None, help="dw.sample's draws (default its)")
    run.add_argument("--tune", type=int, default=None, help="dw.sample's tune (default its)")
    run.add_argument("--cores", type=int, default=1, help="threads for dawrap's chains")
    run.add_argument("--smartnoise-only", action="store_true",
                     help="fit AIM and analyse SmartNoise's samples only (no dawrap)")
    rep = sub.add_parser("report", help="the markdown summary of one or more run files")
    rep.add_argument("--runs", nargs="+", required=True)
    rep.add_argument("--md", default=None, help="write here (default: print)")
    rep.add_argument("--preamble", default=None,
                     help="a markdown file whose text is put under the title")
    args = ap.parse_args(argv)
    {"run": cmd_run, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    main()
