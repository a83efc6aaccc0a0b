"""The examples run, and the README's quickstart is the one in examples/."""
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from dawrap import diagnostics

ROOT = Path(__file__).resolve().parents[1]


def _path(name: str) -> Path:
    """``examples/<name>.py``, or the gallery page ``examples/gallery/plot_<name>.py``."""
    top = ROOT / "examples" / f"{name}.py"
    return top if top.exists() else ROOT / "examples" / "gallery" / f"plot_{name}.py"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, _path(name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_quickstart_runs_and_recovers_p():
    idata = _load("quickstart").main(n=1000, draws=500, tune=200)
    p = diagnostics.group(idata, "posterior")["p"].values
    # The release is within a few counts of 310 of 1000; the posterior sd is about 0.015.
    assert abs(p.mean() - 0.31) < 0.06 and 0.005 < p.std() < 0.03


def test_readme_quickstart_matches_example():
    """Every code line of the README's model registration appears in examples/quickstart.py."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## Quickstart.*?```python\n(.*?)```", readme, re.S).group(1)
    example = " ".join((ROOT / "examples" / "quickstart.py").read_text().split())
    for line in block.splitlines():
        code = line.split("#")[0].strip()
        if code.startswith(("def ", "out[0]", "return np.array")):
            assert " ".join(code.split()) in example, code


def _demo_rows(out: str) -> dict:
    """``{method: (mean, sd, lower, upper, covers, sd ratio)}`` from the demo's table."""
    rows = re.findall(r"^  (\w+) +(\S+) +(\S+) +\[(\S+), (\S+)\] +(yes|NO) +(\S+)$", out,
                      re.M)
    return {m: (*map(float, v[:4]), v[4] == "yes", float(v[5])) for m, *v in rows}


@pytest.mark.slow
def test_cli_demo_makes_the_case(tmp_path, capsys):
    """On its default release (n = 100, epsilon = 0.1) the naive posterior is over-confident
    and misses p, the exact samplers (record by default, suffstat on request) match the
    closed-form posterior, and over repeated experiments the exact 90% intervals cover p at
    their level, the naive ones far less."""
    from dawrap.cli import main

    assert main(["demo", "--draws", "1000", "--tune", "300", "--repeats", "1000",
                 "--methods", "naive,suffstat,record", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    rows = _demo_rows(out)
    assert list(rows) == ["exact", "record", "suffstat", "naive"]
    exact = rows["exact"]
    assert exact[4] and exact[5] == 1.0
    for method in ("record", "suffstat"):  # exact samplers: within Monte Carlo error
        mean, sd, *_, covers, ratio = rows[method]
        assert abs(mean - exact[0]) < 0.03 and 0.85 < ratio < 1.15 and covers, method
    assert rows["naive"][5] < 0.5 and not rows["naive"][4]  # over-confident, misses p = 0.3
    naive_cover, exact_cover = map(float, re.search(
        r"covers p in (\S+)% of them, the exact one in (\S+)%", out.replace("\n", " ")).groups())
    assert abs(exact_cover - 90) < 3 * 100 * np.sqrt(0.09 / 1000)  # 3 binomial SE
    assert naive_cover < 60
    assert "exp(-epsilon)" in out and "ess_bulk" in out
    for name in ("demo_posterior.nc", "demo_trace.png", "demo_posteriors.png"):
        assert (tmp_path / name).stat().st_size > 1000, name
    assert np.isfinite(float(re.search(r"s_dp = (\S+)", out).group(1)))


def test_cli_reports_bad_input(capsys):
    from dawrap.cli import main

    with pytest.raises(SystemExit) as exit_:  # the parser's check, before any import of work
        main(["demo", "--epsilon", "-1", "--out", "unused"])
    assert exit_.value.code == 2
    assert "argument --epsilon: must be a finite number > 0, got -1" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_logistic_regression_tutorial_runs_and_is_sensible():
    idata, reference = _load("private_logistic_regression").main(n=300, draws=400, tune=300)
    beta = diagnostics.group(idata, "posterior")["beta"].values.reshape(-1, 2)
    for j, true in enumerate([1.0, -0.5]):
        # The private posterior covers the truth and is wider than the non-private one.
        assert abs(beta[:, j].mean() - true) < 4 * beta[:, j].std()
        assert beta[:, j].std() > reference[:, j].std()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_census_example_runs_and_summarises():
    idata = _load("noisy_blocks").main(blocks=20, per_block=20, draws=100, tune=50)
    p = diagnostics.group(idata, "posterior")["p"].values
    assert p.shape == (2, 100, 20, 6) and np.allclose(p.sum(-1), 1.0)
