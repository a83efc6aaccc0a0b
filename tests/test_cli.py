"""The command line end to end in a temporary folder: sample, calibrate, models, --help."""
import json

import numpy as np
import pytest

from dawrap import diagnostics
from dawrap.cli import main


def _load(path):
    import arviz as az

    return az.from_netcdf(str(path))


@pytest.mark.slow
def test_sample_writes_the_posterior(tmp_path, capsys):
    out = tmp_path / "post.nc"
    argv = ["sample", "beta_binomial", "--epsilon", "0.5", "--n", "1000", "--s-dp", "312.4",
            "--draws", "400", "--tune", "100", "--chains", "2", "--seed", "1", "--out", str(out)]
    assert main(argv) == 0
    assert "ess_bulk" in capsys.readouterr().out
    draws = diagnostics.group(_load(out), "posterior")["p"].values
    assert draws.shape == (2, 400) and abs(draws.mean() - 0.3124) < 0.01


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
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
     "--release: no such file '/no/such/file'"),
    (["calibrate", "beta_binomial", "--epsilon", "1", "--n", "3", "--methods", "exact"],
     "is not one of"),
    (["sample", "beta_binomial", "--epsilon", "1", "--n", "3", "--s-dp", "1", "--resume"],
     "give both"),
    (["demo", "--methods", "record,suffstat"], "--methods must name record and naive"),
    (["demo", "--p", "1.5"], "--p must be a probability"),
])
def test_bad_input_exits_2_with_a_message(argv, message, capsys, tmp_path):
    assert main(argv + ["--out", str(tmp_path / "x")]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
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
    assert "Rewriting" not in first
    assert main(argv) == 0  # resumes: every trial is read back, none re-run
    again = capsys.readouterr().out
    assert again.splitlines()[:7] == first.splitlines()[:7]
    assert len((out / "trials.jsonl").read_text().splitlines()) == 1 + 8
    # The results are rewritten from the trials, and the command says so (the README's
    # promise: no output is replaced silently without --force).
    assert f"Rewriting this study's results in {out} (summary.txt, calibration.nc, ranks.png, " \
           f"ecdf.png) from its 8 trials in trials.jsonl" in again


def test_help_is_complete(capsys):
    for command, options in {
            "sample": ["--mechanism", "--epsilon", "--model-arg", "--mechanism-arg", "--n",
                       "--s-dp", "--release", "--method", "--draws", "--tune", "--chains",
                       "--seed", "--cores", "--checkpoint", "--resume", "--out", "--progress",
                       "--force"],
            "calibrate": ["--methods", "--trials", "--executor", "--workers", "--parameter",
                          "--index", "--out", "--progress", "--force"],
            "demo": ["--n", "--p", "--epsilon", "--draws", "--repeats", "--out",
                     "--force"]}.items():
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
    listed = [line.split("(")[0].strip() for line in text.splitlines()
              if line.startswith("  ") and not line.startswith("   ")]
    assert listed == list(models.REGISTRY)
    assert "small_area" in listed and "contingency" in listed  # missing before the registry


def test_models_marks_the_mechanisms_that_are_not_dp_on_their_own(capsys):
    assert main(["models"]) == 0
    marked = [line for line in capsys.readouterr().out.splitlines() if "not DP" in line]
    # Of the built-in mechanisms only normal_mean's Gaussian noise on the unclamped sum
    # states no guarantee; every Laplace and geometric one takes epsilon.
    assert len(marked) == 1 and "--mechanism gaussian(sigma)" in marked[0]


def test_models_prints_where_the_census_budgets_are_given(capsys):
    # census.discrete_gaussian takes one rho per query, inside its queries argument: the
    # catalogue says so instead of "states no privacy budget among its arguments"
    assert main(["models"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines()
                if "--mechanism discrete_gaussian(geography, queries)" in line)
    assert "no privacy budget" not in line and "budgets: rho per query" in line


def test_privacy_gap_is_read_from_the_mechanism():
    import dawrap as dw
    from dawrap.cli import privacy_gap
    from dawrap.models import beta_binomial

    count = beta_binomial.count
    stated = [dw.Laplace(count, epsilon=1.0), dw.Geometric(count, epsilon=1.0),
              dw.Gaussian.from_zcdp(count, rho=0.5, sensitivity=1.0),
              dw.Gaussian.from_gdp(count, mu=1.0, sensitivity=1.0),
              dw.DiscreteGaussian(count, sigma=2.0, contribution=(0, 1))]
    assert [privacy_gap(m) for m in stated] == [""] * len(stated)
    for mech in (dw.Gaussian(count, sigma=2.0), dw.DiscreteGaussian(count, sigma=2.0)):
        assert privacy_gap(mech).startswith("not DP on its own")


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_sample_says_which_seed_it_drew_and_the_seed_repeats_the_run(tmp_path, capsys):
    import re

    argv = ["sample", "beta_binomial", "--epsilon", "0.5", "--n", "100", "--s-dp", "31.2",
            "--draws", "50", "--tune", "20", "--chains", "2"]
    assert main(argv + ["--out", str(tmp_path / "a.nc")]) == 0
    seed = re.search(r"^seed = (\d+) \(none given", capsys.readouterr().out, re.M).group(1)
    first = _load(tmp_path / "a.nc")
    assert diagnostics.attrs(first)["seed"] == seed  # kept with the result
    assert main(argv + ["--seed", seed, "--out", str(tmp_path / "b.nc")]) == 0
    assert "none given" not in capsys.readouterr().out
    again = _load(tmp_path / "b.nc")
    assert np.array_equal(diagnostics.group(first, "posterior")["p"].values,
                          diagnostics.group(again, "posterior")["p"].values)


@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
@pytest.mark.slow
def test_sample_notes_a_mechanism_without_a_guarantee(tmp_path, capsys):
    assert main(["sample", "normal_mean", "--mechanism", "gaussian", "--mechanism-arg",
                 "sigma=2", "--n", "20", "--s-dp", "3.0", "--draws", "20", "--tune", "10",
                 "--chains", "1", "--seed", "1", "--out", str(tmp_path / "g.nc")]) == 0
    assert "not DP on its own" in capsys.readouterr().err


# Tiny runs: the sufficient-statistic chains of the demo have not mixed, as they need not
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:R-hat")
@pytest.mark.parametrize("command, written", [
    (["sample", "beta_binomial", "--epsilon", "0.5", "--n", "100", "--s-dp", "31.2",
      "--draws", "50", "--tune", "20", "--chains", "1", "--seed", "1"], "out.nc"),
    (["demo", "--n", "50", "--draws", "50", "--tune", "20", "--chains", "2",
      "--repeats", "20"], "demo_posterior.nc"),
])
def test_outputs_are_not_overwritten_without_force(command, written, tmp_path, capsys):
    """Refused before any work, naming --force; with --force the file is replaced."""
    out = tmp_path / "out.nc" if written == "out.nc" else tmp_path
    (tmp_path / written).write_text("precious")
    assert main(command + ["--out", str(out)]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert (tmp_path / written).read_text() == "precious"
    assert main(command + ["--out", str(out), "--force"]) == 0
    assert (tmp_path / written).read_bytes() != b"precious"


@pytest.mark.parametrize("argv, message", [
    (["demo", "--draws", "-3"], "argument --draws: must be an integer >= 1, got -3"),
    (["demo", "--chains", "0"], "argument --chains: must be an integer >= 1, got 0"),
    (["demo", "--tune", "x"], "argument --tune: expected an integer, got 'x'"),
    (["sample", "beta_binomial", "--epsilon", "1", "--n", "3", "--s-dp", "1", "--draws", "0"],
     "argument --draws: must be an integer >= 1, got 0"),
])
def test_counts_are_checked_before_anything_compiles(argv, message, capsys, monkeypatch):
    import dawrap.sampling

    def compile_nothing(*args, **kwargs):
        raise AssertionError("dw.sample was called with an invalid count")

    monkeypatch.setattr(dawrap.sampling, "sample", compile_nothing)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_ctrl_c_in_a_study_exits_130_saying_what_was_kept(tmp_path, capsys, monkeypatch):
    """Ctrl-C inside the third trial's chain: the study stops (it ended with exit 0 and a
    trial from a cut chain), the two completed trials are kept, and the command says so."""
    import signal

    from dawrap.runner import record as run_record
    from dawrap.studies import calibration

    calls, sent = [0], []
    real_sample, real_advance = calibration.sample, run_record._advance

    def counted_sample(*args, **kwargs):
        calls[0] += 1
        return real_sample(*args, **kwargs)

    def advance(*args, **kwargs):
        if calls[0] == 3 and not sent:
            sent.append(True)
            signal.raise_signal(signal.SIGINT)
        return real_advance(*args, **kwargs)

    monkeypatch.setattr(calibration, "sample", counted_sample)
    monkeypatch.setattr(run_record, "_advance", advance)
    out = tmp_path / "study"
    assert main(["calibrate", "beta_binomial", "--epsilon", "1", "--n", "30", "--methods",
                 "record", "--trials", "4", "--draws", "100", "--tune", "0", "--executor",
                 "serial", "--out", str(out)]) == 130
    assert "2 of 4 trials are complete and kept in" in capsys.readouterr().err
    assert len((out / "trials.jsonl").read_text().splitlines()) == 1 + 2


# -- issue 29, items 17 and 18: arguments checked first, each error naming its argument ------

@pytest.fixture
def no_sampling(monkeypatch):
    """dw.sample and calibrate replaced by stand-ins that fail the test if reached: the
    command must stop on its arguments first."""
    import dawrap
    import dawrap.sampling
    import dawrap.studies.calibration

    def reached(*args, **kwargs):
        raise AssertionError("the command ran with arguments it should have refused")

    # dawrap's lazy names first: patched after their source, ``dawrap.sample`` would resolve
    # to the stand-in and be kept by the lazy import, so the undo would restore the stand-in
    # and every later test in this process would call it.
    monkeypatch.setattr(dawrap, "sample", reached)
    monkeypatch.setattr(dawrap, "calibrate", reached)
    monkeypatch.setattr(dawrap.sampling, "sample", reached)
    monkeypatch.setattr(dawrap.studies.calibration, "calibrate", reached)


SAMPLE = ["sample", "beta_binomial", "--n", "3", "--s-dp", "1"]
CALIBRATE = ["calibrate", "beta_binomial", "--epsilon", "1", "--n", "3", "--trials", "2"]


@pytest.mark.parametrize("argv, message", [
    (SAMPLE + ["--epsilon", "0.5", "--mechanism-arg", "epsilon=2"],
     "--epsilon 0.5 and --mechanism-arg epsilon=2 disagree"),
    (["sample", "small_area", "--model-arg", "sizes=[3]", "--model-arg", "categories=2",
      "--mechanism", "discrete_gaussian", "--epsilon", "1", "--n", "3", "--s-dp", "1"],
     "--epsilon: --mechanism discrete_gaussian takes no epsilon"),
    (SAMPLE + ["--epsilon", "1", "--model-arg", "a=1", "--model-arg", "a=2"],
     "--model-arg gives a twice"),
    (["sample", "beta_binomial", "--epsilon", "1", "--n", "3", "--s-dp", "1", "2"],
     "must have 1 value(s), got 2"),
    (CALIBRATE + ["--methods", "record,record"], "--methods names record more than once"),
    (["sample", "linear_regression", "--model-arg", "p=1000000", "--mechanism-arg",
      "p=1000000", "--mechanism-arg", "bounds_x=1", "--mechanism-arg", "bound_y=1",
      "--epsilon", "1", "--n", "3", "--s-dp", "1"], "GB of memory"),
])
def test_conflicting_or_repeated_arguments_are_refused(argv, message, no_sampling, capsys,
                                                       tmp_path):
    assert main(argv + ["--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (SAMPLE[:3] + ["0", "--epsilon", "1", "--s-dp", "1"], "argument --n: must be an integer >= 1"),
    (SAMPLE + ["--epsilon", "1", "--cores", "0"], "argument --cores: must be an integer >= 1"),
    (CALIBRATE + ["--workers", "0"], "argument --workers: must be an integer >= 1, got 0"),
    (CALIBRATE[:-1] + ["0"], "argument --trials: must be an integer >= 1, got 0"),
])
def test_counts_of_sample_and_calibrate_are_checked_by_the_parser(argv, message, no_sampling,
                                                                  capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_sample_checks_its_arguments_before_the_default_output(tmp_path, monkeypatch, capsys,
                                                               no_sampling):
    """A bad release is reported as such even when the default --out exists; an existing
    default --out is named as the default, not as an --out the user gave. (The output file
    is checked at the end of the first round of checks, before the model is imported: a
    release of the wrong length, which only the mechanism can tell, comes after it.)"""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "posterior.nc").write_text("precious")
    assert main(["sample", "beta_binomial", "--epsilon", "1", "--n", "3", "--s-dp", "1",
                 "x"]) == 2
    err = capsys.readouterr().err
    assert "--s-dp expects numbers" in err and "posterior.nc" not in err
    assert main(["sample", "beta_binomial", "--epsilon", "1", "--n", "3", "--s-dp", "1"]) == 2
    err = capsys.readouterr().err
    assert "posterior.nc (the default --out) exists; pass --force" in err
    assert (tmp_path / "posterior.nc").read_text() == "precious"


def test_sample_prints_no_seed_before_an_error(tmp_path, capsys):
    """A run dw.sample refuses (one needing more memory than there is) stops the command
    before it says which seed it drew."""
    argv = ["sample", "beta_binomial", "--epsilon", "1", "--n", str(2 ** 50), "--s-dp", "1",
            "--out", str(tmp_path / "x.nc")]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "memory" in captured.err and "seed" not in captured.out


@pytest.mark.parametrize("method", ["nonprivate", "ops", "recrod"])
def test_sample_offers_only_the_methods_that_read_the_release(method, capsys, tmp_path):
    """nonprivate and ops need the confidential records, which the command line cannot
    give: refused as unknown names are (after the first round of checks: the names come
    from dawrap.methods, which imports numba), and --help lists the others."""
    assert main(SAMPLE + ["--epsilon", "1", "--method", method,
                          "--out", str(tmp_path / "x.nc")]) == 2
    assert f"--method must be one of ['record', 'suffstat', 'naive'], got {method!r}" in \
        capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["sample", "--help"])
    assert "methods: record, suffstat, naive\n" in capsys.readouterr().out


def test_demo_help_and_table_describe_the_samplers_truly(capsys):
    """--help shows one percent sign; suffstat, a CLT approximation, is not called exact."""
    from dawrap.demo import DEMO_METHODS

    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    text = capsys.readouterr().out
    assert "90% interval" in " ".join(text.split()) and "%%" not in text
    assert "exact" not in DEMO_METHODS["suffstat"] and "approximate" in DEMO_METHODS["suffstat"]
    assert "(exact)" in DEMO_METHODS["record"]


def test_sample_small_area_starts_from_its_sizes_and_checks_n_against_them(tmp_path, capsys):
    """The command line cannot pass init_x: small_area now starts from its own public sizes
    (before, from n records of random areas), and an n other than their sum is named."""
    argv = ["sample", "small_area", "--model-arg", "sizes=[2,3]", "--model-arg", "categories=2",
            "--mechanism", "discrete_gaussian", "--mechanism-arg", "regions=[0,0]",
            "--mechanism-arg", "categories=2", "--mechanism-arg", "rho=[0.5,0.5]",
            "--s-dp", "1", "1", "2", "1", "3", "2", "--chains", "1", "--n", "4",
            "--out", str(tmp_path / "x.nc")]
    assert main(argv) == 2
    assert "n = 4 but the model's public totals of level 'area' add up to 5" in \
        capsys.readouterr().err
    assert not (tmp_path / "x.nc").exists()


# -- issue 41, item 7: argument errors before the heavy imports, each naming its option -----

#: Modules an argument error must not wait for: ArviZ (about 4.5 s of the 4.8 s a misspelt
#: model name took), numba, and dawrap's samplers (dw.sample and the compiled sweeps).
HEAVY = ("arviz", "xarray", "numba", "dawrap.sampling", "dawrap.diagnostics",
         "dawrap.samplers.record", "dawrap.samplers.kernels", "dawrap.runner.record",
         "dawrap.runner.chains")

_FRESH = """
import contextlib, io, json, sys
from dawrap.cli import main

seen = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as done:  # the parser's own errors
            code = done.code
    heavy = [m for m in json.loads(sys.argv[2]) if m in sys.modules]
    seen.append([code, err.getvalue(), heavy])
print(json.dumps(seen))
"""


def _in_a_fresh_interpreter(cases: list, cwd, heavy=HEAVY) -> list:
    """``[exit code, stderr, heavy modules imported]`` of each command line of ``cases``, run
    one after another by ``dawrap.cli.main`` in one new interpreter (so that what is in
    ``sys.modules`` after each was imported by it or by an earlier one)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _FRESH, json.dumps(cases),
                           json.dumps(list(heavy))], cwd=cwd, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_argument_errors_come_before_arviz_numba_and_the_samplers(tmp_path):
    """Each error below took 4.8 s on a quiet machine (30 s under load), 4.5 s of it
    importing ArviZ, and some did not name their option (``[Errno 2] No such file or
    directory: 'relase.txt'``). Now none imports ArviZ, numba or a sampler, and each names
    the option at fault."""
    (tmp_path / "posterior.nc").write_text("precious")
    (tmp_path / "folder").mkdir()
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "words.txt").write_text("three, four")
    good = ["--n", "10", "--epsilon", "1"]
    cases = {
        "model must be one of": ["sample", "nosuchmodel", "--n", "10", "--s-dp", "1"],
        "--release: no such file 'relase.txt'": ["sample", "beta_binomial", *good,
                                                 "--release", "relase.txt", "--out", "a.nc"],
        "--release: 'folder' is a folder": ["sample", "beta_binomial", *good, "--release",
                                            "folder", "--out", "a.nc"],
        "--release: 'binary.txt' is not a text file of numbers": [
            "sample", "beta_binomial", *good, "--release", "binary.txt", "--out", "a.nc"],
        "--release: 'words.txt' expects numbers": [
            "sample", "beta_binomial", *good, "--release", "words.txt", "--out", "a.nc"],
        "argument --epsilon: must be a finite number > 0, got -1": [
            "sample", "beta_binomial", "--n", "10", "--s-dp", "1", "--epsilon", "-1"],
        "argument --epsilon: must be a finite number > 0, got 0": [
            "sample", "beta_binomial", "--n", "10", "--s-dp", "1", "--epsilon", "0"],
        "argument --epsilon: expected a number, got 'abc'": [
            "sample", "beta_binomial", "--n", "10", "--s-dp", "1", "--epsilon", "abc"],
        "argument --epsilon: must be a finite number > 0, got nan": [
            "calibrate", "beta_binomial", "--n", "10", "--epsilon", "nan"],
        "--model-arg expects key=value": ["sample", "beta_binomial", *good, "--s-dp", "1",
                                          "--model-arg", "a", "--out", "a.nc"],
        "--mechanism-arg gives lower twice": [
            "sample", "beta_binomial", *good, "--s-dp", "1", "--mechanism-arg", "lower=0",
            "--mechanism-arg", "lower=1", "--out", "a.nc"],
        "--s-dp expects numbers": ["sample", "beta_binomial", *good, "--s-dp", "x",
                                   "--out", "a.nc"],
        "posterior.nc (the default --out) exists; pass --force": [
            "sample", "beta_binomial", *good, "--s-dp", "1"],
        "--resume continues the run saved in --checkpoint DIR": [
            "sample", "beta_binomial", *good, "--s-dp", "1", "--resume", "--out", "a.nc"],
        "--methods names record more than once": [
            "calibrate", "beta_binomial", *good, "--methods", "record,record"],
        "argument --epsilon: must be a finite number > 0, got -2": ["demo", "--epsilon", "-2"],
        "--p must be a probability": ["demo", "--p", "1.5", "--out", "d"],
    }
    results = _in_a_fresh_interpreter(list(cases.values()), tmp_path)
    for (message, argv), (code, err, heavy) in zip(cases.items(), results):
        assert code == 2 and message in err, (argv, err)
        assert heavy == [], (argv, heavy)
    assert (tmp_path / "posterior.nc").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["binary.txt", "folder",
                                                          "posterior.nc", "words.txt"]


def test_errors_that_need_the_models_code_come_before_arviz_and_the_samplers(tmp_path):
    """An argument only the model's or the mechanism's code can check (a mechanism the model
    has not, an argument its factory does not take, a release of the wrong length) costs
    the import of that model (numba), never ArviZ or a sampler; nothing is written."""
    (tmp_path / "release.txt").write_text("1 2")
    good = ["sample", "beta_binomial", "--n", "10", "--epsilon", "1"]
    cases = {
        "--mechanism for beta_binomial must be one of": [*good, "--s-dp", "1",
                                                         "--mechanism", "gaussian"],
        "--model-arg: got an unexpected keyword argument 'c'": [*good, "--s-dp", "1",
                                                               "--model-arg", "c=1"],
        "--release: 'release.txt' holds 2 numbers; the mechanism releases 1": [
            *good, "--release", "release.txt"],
        "--s-dp: s_dp must have 1 value(s), got 2": [*good, "--s-dp", "1", "2"],
        "--method must be one of ['record', 'suffstat', 'naive']": [*good, "--s-dp", "1",
                                                                    "--method", "ops"],
        "--mechanism laplace: ": [*good[:-2], "--s-dp", "1", "--mechanism-arg",
                                  "epsilon=-1"],
    }
    heavy = [m for m in HEAVY if m != "numba"]
    results = _in_a_fresh_interpreter([argv + ["--out", "out/a.nc"] for argv in cases.values()],
                                      tmp_path, heavy)
    for (message, argv), (code, err, imported) in zip(cases.items(), results):
        assert code == 2 and message in err, (argv, err)
        assert imported == [], (argv, imported)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["release.txt"]  # no out/ made


def test_demo_and_the_command_line_do_not_import_each_other():
    """The cycle cli -> demo -> cli is broken: what both need is in dawrap._cli_args, which
    imports neither."""
    import ast
    from pathlib import Path

    import dawrap

    folder = Path(dawrap.__file__).parent

    def imported(name):
        tree = ast.parse((folder / name).read_text())
        return {(node.module or "") for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom)} | \
            {a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
             for a in node.names}

    assert not {"dawrap.cli", "cli"} & imported("demo.py")
    assert not {"dawrap.cli", "cli", "dawrap.demo", "demo"} & imported("_cli_args.py")
