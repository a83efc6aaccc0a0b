"""The command line end to end in a temporary folder: sample, calibrate, models, --help."""
import json

import numpy as np
import pytest

from dawrap import diagnostics
from dawrap.cli import main


def _load(path):
    import arviz as az

    return az.from_netcdf(str(path))


def test_sample_writes_the_posterior(tmp_path, capsys):
    out = tmp_path / "post.nc"
    argv = ["sample", "beta_binomial", "--epsilon", "0.5", "--n", "1000", "--s-dp", "312.4",
            "--draws", "400", "--tune", "100", "--chains", "2", "--seed", "1", "--out", str(out)]
    assert main(argv) == 0
    assert "ess_bulk" in capsys.readouterr().out
    draws = diagnostics.group(_load(out), "posterior")["p"].values
    assert draws.shape == (2, 400) and abs(draws.mean() - 0.3124) < 0.01


def test_sample_reads_a_vector_release_from_a_file(tmp_path):
    release = tmp_path / "release.txt"
    release.write_text("3.0, 5.0\n12.0\n")
    out = tmp_path / "d.nc"
    assert main(["sample", "dirichlet_multinomial", "--model-arg", "alpha=[1,1,1]",
                 "--mechanism-arg", "categories=3", "--epsilon", "1", "--n", "20",
                 "--release", str(release), "--draws", "200", "--tune", "50", "--chains", "1",
                 "--seed", "2", "--out", str(out)]) == 0
    p = diagnostics.group(_load(out), "posterior")["p"].values
    assert p.shape == (1, 200, 3) and np.allclose(p.sum(-1), 1)


@pytest.mark.parametrize("argv, message", [
    (["sample", "nosuch", "--n", "3", "--s-dp", "1"], "model must be one of"),
    (["sample", "beta_binomial", "--n", "3", "--s-dp", "1"], "missing a required argument"),
    (["sample", "beta_binomial", "--epsilon", "1", "--n", "3"], "--s-dp VALUE"),
    (["sample", "beta_binomial", "--epsilon", "1", "--n", "3", "--s-dp", "1",
      "--mechanism", "gaussian"], "--mechanism for beta_binomial must be one of"),
    (["sample", "beta_binomial", "--epsilon", "1", "--n", "3", "--s-dp", "1",
      "--model-arg", "a"], "expects key=value"),
    (["sample", "beta_binomial", "--epsilon", "1", "--n", "3", "--release", "/no/such/file"],
     "No such file"),
    (["calibrate", "beta_binomial", "--epsilon", "1", "--n", "3", "--methods", "exact"],
     "is not one of"),
    (["sample", "beta_binomial", "--epsilon", "1", "--n", "3", "--s-dp", "1", "--resume"],
     "give both"),
])
def test_bad_input_exits_2_with_a_message(argv, message, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path / "x")]) == 2
    assert message in capsys.readouterr().err


def test_calibrate_writes_results_and_plots_and_resumes(tmp_path, capsys):
    out = tmp_path / "study"
    argv = ["calibrate", "beta_binomial", "--epsilon", "0.1", "--n", "50", "--methods",
            "record,naive", "--trials", "8", "--draws", "100", "--tune", "20",
            "--executor", "threads", "--out", str(out)]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert "Calibration over 8 trials" in first
    for name in ("calibration.nc", "summary.txt", "ranks.png", "ecdf.png", "trials.jsonl"):
        assert (out / name).stat().st_size > 0, name
    rows = (out / "trials.jsonl").read_text().splitlines()
    assert len(rows) == 1 + 8 and "settings" in json.loads(rows[0])
    assert main(argv) == 0  # resumes: every trial is read back, none re-run
    assert capsys.readouterr().out.splitlines()[:7] == first.splitlines()[:7]
    assert len((out / "trials.jsonl").read_text().splitlines()) == 1 + 8


def test_help_is_complete(capsys):
    for command, options in {
            "sample": ["--mechanism", "--epsilon", "--model-arg", "--mechanism-arg", "--n",
                       "--s-dp", "--release", "--method", "--draws", "--tune", "--chains",
                       "--seed", "--cores", "--checkpoint", "--resume", "--out", "--progress",
                       "--force"],
            "calibrate": ["--methods", "--trials", "--executor", "--workers", "--parameter",
                          "--index", "--out", "--progress", "--force"],
            "demo": ["--n", "--p", "--epsilon", "--draws", "--out"]}.items():
        with pytest.raises(SystemExit) as done:
            main([command, "--help"])
        assert done.value.code == 0
        text = capsys.readouterr().out
        assert all(option in text for option in options), command
        if command != "demo":  # the catalogue of built-in models and their mechanisms
            assert "beta_binomial(a=1.0, b=1.0" in text and "laplace(epsilon" in text


def test_models_lists_every_built_in_model(capsys):
    from dawrap import models

    assert main(["models"]) == 0
    text = capsys.readouterr().out
    assert all(f"  {name}(" in text for name in models.__all__)
