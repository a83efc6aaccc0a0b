"""Run fingerprints (issue 29 item 8): models that share a name but not a prior are told apart,
by the code and the values their functions use, the same in every process."""
import subprocess
import sys

import numba
import numpy as np
import pytest

import dawrap as dw
from dawrap.models import beta_binomial
from dawrap.runner.fingerprint import UNVERIFIABLE, digest, run_fingerprint


def coin(a: float, b: float) -> dw.Model:
    """A beta-binomial model named "coin", whatever its prior: not a recipe, so its name is
    all the old settings knew of it."""
    def draw_theta(rng, theta, x, stats):
        return np.array([rng.beta(a + stats[0], b + x.shape[0] - stats[0])])

    return dw.Model(params={"p": ()}, record_size=1, draw_record=beta_binomial.draw_record,
                    draw_theta=draw_theta, model_stat=beta_binomial.count, stat_size=1,
                    draw_prior=lambda rng: np.array([rng.beta(a, b)]), name="coin")


def test_models_named_alike_with_other_priors_differ():
    mech = beta_binomial.laplace(1.0)
    flat, peaked = run_fingerprint(coin(1, 1), mech), run_fingerprint(coin(200, 200), mech)
    assert {k for k in flat if flat[k] != peaked[k]} == {"model.draw_theta", "model.draw_prior"}
    assert run_fingerprint(coin(1, 1), mech) == flat  # built again: the same
    assert not any(v.startswith(UNVERIFIABLE) for v in flat.values())
    assert run_fingerprint(coin(1, 1), beta_binomial.laplace(2.0)) != flat


THRESHOLD = np.array([0.5])


@numba.njit
def _above(v):
    return v > THRESHOLD[0]


@numba.njit
def statistic(x_i, out):
    out[0] = 1.0 if _above(x_i[0]) else 0.0


def test_a_digest_follows_globals_helpers_and_arrays():
    before = digest(statistic)
    THRESHOLD[0] = 0.7  # an array the helper reads (numba would freeze the new value)
    try:
        assert digest(statistic) != before
    finally:
        THRESHOLD[0] = 0.5
    assert digest(statistic) == before
    # the same source further down a file: the same digest (no file, no line)
    source = "def f(x):\n    return x + 1\n"
    spaces, lines = {}, {}
    exec(compile(source, "a.py", "exec"), spaces)
    exec(compile("\n" * 40 + source, "b.py", "exec"), lines)
    assert digest(spaces["f"]) == digest(lines["f"])
    exec(compile(source.replace("+ 1", "+ 2"), "a.py", "exec"), lines)
    assert digest(spaces["f"]) != digest(lines["f"])


def test_a_digest_is_the_same_in_another_process():
    here = run_fingerprint(beta_binomial.model(2, 3), beta_binomial.laplace(0.5))
    script = ("from dawrap.runner.fingerprint import run_fingerprint\n"
              "from dawrap.models import beta_binomial\n"
              "print(run_fingerprint(beta_binomial.model(2, 3), beta_binomial.laplace(0.5)))")
    there = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           check=True).stdout
    assert there.strip() == str(here)


def test_what_has_no_digest_is_unverifiable():
    generator = np.random.default_rng(0)
    model = coin(1, 1)
    opaque = dw.Model(params={"p": ()}, record_size=1, draw_record=beta_binomial.draw_record,
                      draw_theta=lambda rng, theta, x, stats: np.array([generator.random()]),
                      draw_prior=model.draw_prior, name="coin")
    parts = run_fingerprint(opaque, beta_binomial.laplace(1.0))
    assert parts["model.draw_theta"].startswith(UNVERIFIABLE)
    assert "numpy.random._generator.Generator" in parts["model.draw_theta"]
    # draw_prior alone is known by its draws when its values have no digest
    prior = dw.Model(params={"p": ()}, record_size=1, draw_record=beta_binomial.draw_record,
                     draw_theta=model.draw_theta, name="coin",
                     draw_prior=lambda rng: np.array([rng.beta(1, 1) + 0 * generator.random()]))
    assert run_fingerprint(prior, beta_binomial.laplace(1.0))["model.draw_prior"].startswith(
        "draws:")


@pytest.mark.slow
def test_pymc_models_all_named_pymc_are_told_apart():
    pm = pytest.importorskip("pymc")
    from dawrap.pymc import from_pymc

    def build(a):
        with pm.Model() as model:
            p = pm.Beta("p", a, a)
            pm.Bernoulli("y", p=p, observed=np.zeros(100))
        return from_pymc(model)

    mech = beta_binomial.laplace(1.0)
    flat, peaked, again = (run_fingerprint(build(a), mech) for a in (1.0, 200.0, 1.0))
    assert "model.draw_prior" in {k for k in flat if flat[k] != peaked[k]}
    assert {k for k in flat if flat[k] != again[k]} == set()


def test_set_constants_digest_alike_in_every_process():
    script = ("from dawrap.runner.fingerprint import digest\n"
              "def f(v):\n    return v in {'alpha', 'beta', 'gamma', 'delta'}\n"
              "print(digest(f))")
    seen = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           check=True, env={**__import__("os").environ,
                                            "PYTHONHASHSEED": str(seed)}).stdout
            for seed in range(4)}
    assert len(seen) == 1


def test_resume_under_another_model_of_the_same_name_is_refused(tmp_path):
    """The issue's repro: a checkpoint of coin(1, 1) resumed with coin(200, 200) returned the
    first model's draws (posterior mean 0.314 where a fresh run gives 0.472)."""
    from dawrap import diagnostics

    mech = beta_binomial.laplace(0.5)
    kw = dict(draws=20, tune=5, chains=1, seed=4, progress=False)
    first = dw.sample(coin(1, 1), mech, 30.0, 100, checkpoint=tmp_path, checkpoint_every=5,
                      **kw)
    with pytest.raises(ValueError, match="written by another model or mechanism: the "
                                         "model's draw_prior, the model's draw_theta differ"):
        dw.sample(coin(200, 200), mech, 30.0, 100, resume=tmp_path, **kw)
    again = dw.sample(coin(1, 1), mech, 30.0, 100, resume=tmp_path, **kw)  # built anew
    assert np.array_equal(diagnostics.group(again, "posterior")["p"].values,
                          diagnostics.group(first, "posterior")["p"].values)


class Opaque:
    """A value of no known kind: a run closing over it cannot be fingerprinted."""

    def __init__(self, a):
        self.a = a


def test_an_unverifiable_run_resumes_only_when_forced(tmp_path, monkeypatch):
    def model():
        box = Opaque(1.0)
        return dw.Model(params={"p": ()}, record_size=1, draw_record=beta_binomial.draw_record,
                        draw_theta=lambda rng, theta, x, stats: np.array(
                            [rng.beta(box.a + stats[0], box.a + x.shape[0] - stats[0])]),
                        model_stat=beta_binomial.count, stat_size=1, name="opaque",
                        draw_prior=lambda rng: np.array([rng.beta(1.0, 1.0)]))

    mech = beta_binomial.laplace(0.5)
    kw = dict(draws=10, tune=0, chains=1, seed=4, progress=False)
    dw.sample(model(), mech, 30.0, 100, checkpoint=tmp_path, checkpoint_every=5, **kw)
    with pytest.raises(ValueError, match="cannot check that the model's draw_theta .* holds a "
                                         ".*Opaque.*DAWRAP_RESUME_UNVERIFIED=1"):
        dw.sample(model(), mech, 30.0, 100, resume=tmp_path, **kw)
    monkeypatch.setenv("DAWRAP_RESUME_UNVERIFIED", "1")
    dw.sample(model(), mech, 30.0, 100, resume=tmp_path, **kw)
