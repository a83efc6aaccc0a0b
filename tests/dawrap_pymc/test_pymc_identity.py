"""dawrap.pymc.identity: a model built from PyMC is known by its graphs, so a checkpoint of
it resumes without DAWRAP_RESUME_UNVERIFIED=1, and a resume under another PyMC model (another
prior, likelihood or observed data) is refused (issue 29 item 8, for the PyMC front-end)."""
import subprocess
import sys

import numpy as np
import pytest

pm = pytest.importorskip("pymc")

import dawrap as dw  # noqa: E402
from dawrap import diagnostics  # noqa: E402
from dawrap.models import beta_binomial  # noqa: E402
from dawrap.pymc import from_pymc, layout  # noqa: E402
from dawrap.pymc.identity import _op, model_digest  # noqa: E402
from dawrap.runner.fingerprint import (FORCE_VARIABLE, UNVERIFIABLE, Unverifiable,  # noqa: E402
                                       run_fingerprint)


def coin(a=1.0, data=None, sigma=None):
    """Bernoulli records with a Beta(a, a) prior (every PyMC model is named "pymc"); with
    ``sigma``, a second column z ~ N(p, sigma) per record."""
    with pm.Model() as model:
        p = pm.Beta("p", a, a)
        pm.Bernoulli("y", p=p, observed=np.zeros(30) if data is None else data)
        if sigma is not None:
            pm.Normal("z", p, sigma, observed=np.zeros(30))
    return model


def digest_of(model, records=None):
    return model_digest(model, layout(model, records))


@pytest.mark.parametrize("other", [
    coin(200.0),                                   # the prior: Beta(200, 200)
    coin(data=np.ones(30)),                        # other observed data
    coin(sigma=2.0),                               # another likelihood ...
])
def test_models_written_alike_share_a_digest_and_others_do_not(other):
    assert digest_of(coin()) == digest_of(coin())
    assert digest_of(other) != digest_of(coin())


def test_the_likelihood_and_the_record_layout_count():
    assert digest_of(coin(sigma=1.0)) == digest_of(coin(sigma=1.0))
    assert digest_of(coin(sigma=1.0)) != digest_of(coin(sigma=2.0))
    assert digest_of(coin(sigma=1.0), ["y", "z"]) != digest_of(coin(sigma=1.0), ["z", "y"])


def test_an_operation_known_only_by_its_address_has_no_digest():
    class Odd:  # no __props__; its repr holds its memory address
        pass

    with pytest.raises(Unverifiable, match="has no digest"):
        _op(Odd())


@pytest.mark.slow
def test_a_digest_is_the_same_in_another_process():
    script = ("import numpy as np, pymc as pm\n"
              "from dawrap.pymc import layout\n"
              "from dawrap.pymc.identity import model_digest\n"
              "with pm.Model(coords={'k': ['a', 'b']}) as m:\n"
              "    beta = pm.Normal('beta', 0, 2, dims='k')\n"
              "    sigma = pm.HalfNormal('sigma', 1.0)\n"
              "    X = pm.Normal('X', 0, 1, observed=np.zeros((50, 2)))\n"
              "    pm.Deterministic('s2', sigma ** 2)\n"
              "    pm.Normal('y', X @ beta, sigma, observed=np.zeros(50))\n"
              "print(model_digest(m, layout(m, ['y', 'X'])))\n")
    seen = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           check=True).stdout for _ in range(2)}
    assert len(seen) == 1 and len(seen.pop().strip()) == 16


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_a_pymc_run_resumes_unforced_and_another_pymc_model_is_refused(tmp_path, monkeypatch):
    """Before, every resume of a PyMC model needed DAWRAP_RESUME_UNVERIFIED=1 (its compiled
    functions had no digest), and with it set a resume under another prior, likelihood or
    observed data went through."""
    monkeypatch.delenv(FORCE_VARIABLE, raising=False)
    mech, kw = beta_binomial.laplace(0.5), dict(draws=20, tune=5, chains=1, seed=4,
                                               progress=False)
    first_model = from_pymc(coin())
    assert not [k for k, v in run_fingerprint(first_model, mech).items()
                if v.startswith(UNVERIFIABLE)]
    first = dw.sample(first_model, mech, 12.0, 30, checkpoint=tmp_path, checkpoint_every=5,
                      **kw)
    again = dw.sample(from_pymc(coin()), mech, 12.0, 30, resume=tmp_path, **kw)  # built anew
    assert np.array_equal(diagnostics.group(again, "posterior")["p"].values,
                          diagnostics.group(first, "posterior")["p"].values)
    for other in (coin(200.0), coin(data=np.ones(30))):
        with pytest.raises(ValueError, match="written by another model or mechanism: the "
                                             "model's (deterministics, the model's )?draw_prior"):
            dw.sample(from_pymc(other), mech, 12.0, 30, resume=tmp_path, **kw)
