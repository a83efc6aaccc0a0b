"""Noisy marginals of Adult: the posterior of unreleased marginals, noise-aware synthetic
datasets (the confidential databases the chains impute) and a downstream regression combined
over them (the case study of docs/marginals.md).

Data: the UCI Adult data (Becker & Kohavi 1996), discretised as in NAPSU-MQ's paper and
shipped with these examples (``examples/data/adult_reduced.csv.gz``, made from the UCI files
by :func:`read_uci`; ``examples/data/README.md`` says how): 46 043 records of 10
attributes, 1 792 000 cells. Run: ``python examples/adult_marginals.py`` (about 5 CPU
minutes; ``--draws`` for longer chains). Needs pandas and statsmodels (the ``docs`` extra).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.api as sm

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import marginals

COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
           "occupation", "relationship", "race", "gender", "capital-gain", "capital-loss",
           "hours-per-week", "native-country", "income"]
# NAPSU-MQ's ten released 2-way tables of Adult (MST's selection, five pairs forced in).
TABLES = [("age", "income"), ("age", "marital-status"), ("age", "workclass"),
          ("education", "income"), ("race", "income"), ("race", "gender"),
          ("gender", "income"), ("capital-gain", "income"), ("capital-loss", "income"),
          ("hours-per-week", "income")]


#: The preprocessed data shipped with the examples (examples/data/README.md).
DATA = Path(__file__).resolve().parent / "data" / "adult_reduced.csv.gz"


def load_adult(path=DATA) -> pd.DataFrame:
    """Adult-reduced as categorical columns (NAPSU-MQ's preprocessing), from the shipped
    file (the output of :func:`read_uci`)."""
    return pd.read_csv(path, dtype=str).astype("category")


def read_uci(folder) -> pd.DataFrame:
    """NAPSU-MQ's preprocessing of the UCI files ``adult.data`` and ``adult.test`` in
    ``folder``: both stacked, the test file's income labels stripped of their dot, five
    columns dropped, records with a missing value dropped, age and hours-per-week in five
    equal-width bins, capital gain and loss reduced to "> 0"; levels sorted as strings."""
    df = pd.concat([pd.read_csv(os.path.join(folder, name), names=COLUMNS, header=None,
                                skipinitialspace=True, na_values="?", comment="|")
                    for name in ("adult.data", "adult.test")], ignore_index=True)
    df["income"] = df["income"].str.rstrip(".")
    df = df.drop(columns=["fnlwgt", "education-num", "native-country", "occupation",
                          "relationship"]).dropna()
    df["age"] = pd.cut(df["age"], 5)
    df["hours-per-week"] = pd.cut(df["hours-per-week"], 5)
    df["capital-gain"] = df["capital-gain"] > 0
    df["capital-loss"] = df["capital-loss"] > 0
    return df.astype(str).astype("category").reset_index(drop=True)


def regression(frame: pd.DataFrame, ages: dict):
    """NAPSU-MQ's downstream analysis: logistic regression of income > 50K on age (bin
    midpoint), race and gender. Returns (coefficients, squared standard errors)."""
    X = pd.get_dummies(frame[["race", "gender"]].astype(str), drop_first=False, dtype=float)
    X = X.drop(columns=["race_White", "gender_Female"])
    X.insert(0, "age", frame["age"].astype(str).map(ages).astype(float))
    X = sm.add_constant(X)
    y = (frame["income"].astype(str) == ">50K").astype(float)
    fit = sm.GLM(y, X, family=sm.families.Binomial()).fit()
    return fit.params, fit.bse ** 2


def main(draws: int = 600, tune: int = 200, m: int | None = None, seed: int = 26):
    df = load_adult()
    levels = {a: list(df[a].cat.categories) for a in df.columns}
    x = np.column_stack([df[a].cat.codes for a in df.columns]).astype(float)
    n = len(x)
    print(f"n = {n}, {len(levels)} attributes, "
          f"{np.prod([len(v) for v in levels.values()]):,} cells")

    # %% The release: each table with Gaussian noise of sd 25 (rho = 0.0016 a table)
    mech = marginals.gaussian(levels, TABLES, rho=0.0016)
    s_dp = mech.release(x, seed=seed)
    print("privacy (replace-one neighbours):", mech.privacy)

    # %% The model: its junction tree covers the released tables, and its prior (the
    # default) is centred on the release's maximum-entropy fit, at a tenth of what the
    # release says about its least informed table: what the release cannot identify (the
    # 3-way interaction of race, gender and income) stays near that fit instead of at
    # empty cells (docs/marginals.md)
    model = marginals.model(levels, TABLES)
    print("cliques:", [tuple(model.domain.attributes[a] for a in q)
                       for q in model.structure.cliques])
    print(f"prior records: alpha = {marginals.auto_alpha(n, mech):.0f}")
    # databases: the chains keep enough imputed databases for m synthetic datasets (m=None:
    # dw.synthetic.DEFAULT_M, the number dawrap's documented rule asks for)
    chains = 2
    keep = -(-(m or dw.synthetic.DEFAULT_M) // chains)
    result = dw.sample(model, mech, s_dp, n, draws=draws, tune=tune, chains=chains,
                       seed=seed + 1, databases=keep, progress=False)
    print(f"max R-hat {np.nanmax(diagnostics.summary(result)['r_hat']):.2f}")

    # %% Posterior of a few marginals, released and not
    truth = lambda attrs: pd.crosstab(*(df[a] for a in attrs), normalize=True).to_numpy()
    for attrs in [("gender", "income"), ("marital-status", "income"),
                  ("education", "gender")]:
        draws_ = marginals.marginal(result, model, attrs).reshape((-1,) + truth(attrs).shape)
        released = any(set(attrs) == set(t) for t in TABLES)
        tv = 0.5 * np.abs(draws_.mean(0) - truth(attrs)).sum()
        print(f"{' x '.join(attrs)} ({'released' if released else 'not released'}): "
              f"TV of the posterior mean {tv:.4f}; posterior sd of the cells "
              f"{draws_.std(0).min():.4f} to {draws_.std(0).max():.4f}")
    gi = marginals.marginal(result, model, ("gender", "income")).reshape(-1, 2, 2)
    rate = gi[:, :, 1] / gi.sum(-1)
    lo, hi = np.quantile(rate, [0.05, 0.95], axis=0)
    for g, name in enumerate(levels["gender"]):
        real = (df["income"][df["gender"] == name] == ">50K").mean()
        print(f"P(income > 50K | {name}): 90% interval [{lo[g]:.4f}, {hi[g]:.4f}], "
              f"real data {real:.4f}")

    # %% Synthetic datasets: the confidential databases the chains imputed (the default kind)
    data = dw.synthetic.datasets(result, m, fields=list(levels))
    frames = dw.synthetic.to_frames(data, labels=levels)
    print(f"{len(frames)} synthetic datasets of {len(frames[0])} records (imputed databases); "
          f"the first's first 3 records (one a column):")
    print(frames[0].head(3).T.to_string())

    # %% The downstream regression: combined over the datasets by the default rule (Rubin's:
    # the population's coefficients, as the real data's own fit estimates them), and naively
    # on one dataset
    ages = {c: (pd.Interval(float(c.strip("(]").split(",")[0]),
                            float(c.strip("(]").split(",")[1]))).mid for c in levels["age"]}
    fits = [regression(f, ages) for f in frames]
    q = pd.DataFrame([f[0] for f in fits])
    u = pd.DataFrame([f[1] for f in fits])
    real, real_var = regression(df, ages)
    print(f"{'coefficient':24s} {'real data':>20s} {'combined (Rubin) 95%':>26s} "
          f"{'one dataset as if real 95%':>28s}")
    for name in q.columns:
        both = dw.synthetic.combine(q[name], u[name])
        naive = dw.synthetic.combine(q[name], u[name], "as_if_real")
        half = 1.96 * np.sqrt(real_var[name])
        print(f"{name:24s} [{real[name] - half:8.3f}, {real[name] + half:8.3f}] "
              f"[{both.interval[0]:10.3f}, {both.interval[1]:10.3f}]   "
              f"[{naive.interval[0]:10.3f}, {naive.interval[1]:10.3f}]")
    return result


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=600)
    ap.add_argument("--tune", type=int, default=200)
    ap.add_argument("--remake-data", metavar="FOLDER",
                    help="write the shipped data file anew from the UCI files in FOLDER")
    args = ap.parse_args()
    if args.remake_data:
        read_uci(args.remake_data).to_csv(DATA, index=False,
                                          compression={"method": "gzip", "mtime": 0})
    else:
        main(draws=args.draws, tune=args.tune)
