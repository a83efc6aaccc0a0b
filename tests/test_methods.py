"""Method objects: each carries its own options; the string shorthands build the same method,
so the draws are bit-identical either way."""
import numpy as np
import pytest

import dawrap as dw
from dawrap import diagnostics
from dawrap.models import beta_binomial

MODEL, MECH = beta_binomial.model(2, 3), beta_binomial.laplace(0.5)
KW = dict(draws=30, tune=10, chains=2, cores=1, seed=5, progress=False)


def _p(idata):
    return diagnostics.group(idata, "posterior")["p"].values


@pytest.mark.slow
@pytest.mark.parametrize("name, options, method", [
    ("record", dict(interweave=True, sweeps=2, scan="random"),
     dw.Record(interweave=True, sweeps=2, scan="random")),
    ("suffstat", {}, dw.Suffstat()),
    ("suffstat", dict(variant="marginal"), dw.Suffstat(variant="marginal")),
    ("naive", {}, dw.Naive()),
])
@pytest.mark.filterwarnings("ignore:R-hat")  # short chains: mixing is not the point here
def test_a_name_with_options_is_the_method_object(name, options, method):
    by_name = dw.sample(MODEL, MECH, 61.3, 200, method=name, **options, **KW)
    by_object = dw.sample(MODEL, MECH, 61.3, 200, method=method, **KW)
    assert np.array_equal(_p(by_name), _p(by_object))
    attrs = diagnostics.attrs(by_object)
    assert attrs["method"] == name
    if name == "record":
        assert (attrs["interweave"], attrs["sweeps"], attrs["scan"]) == (2, 2, "random")
    if name == "suffstat":  # the kernel used: chosen by prepare when not given
        assert attrs["variant"] == options.get("variant", "gibbs")


def test_suffstat_prepare_chooses_the_kernel_by_missing_information():
    """variant=None resolves to a kernel for the problem (as Record resolves interweave);
    an explicit choice is kept."""
    method = dw.Suffstat()
    assert method.prepare(MODEL, MECH, 200).variant == "gibbs"    # f ~ 0.16
    assert method.prepare(MODEL, beta_binomial.laplace(0.01), 1000).variant == "marginal"
    assert dw.Suffstat(variant="printed").prepare(MODEL, MECH, 200).variant == "printed"
    with pytest.raises(TypeError, match="variant must be one of"):
        dw.Suffstat(variant=1)


def test_baselines_from_confidential_records():
    x = MODEL.simulate({"p": 0.3}, 200, seed=1)
    for name, cls in (("nonprivate", dw.NonPrivate), ("ops", dw.OPS)):
        a = dw.sample(MODEL, MECH, None, 200, method=name, confidential=x, **KW)
        b = dw.sample(MODEL, MECH, None, 200, method=cls(confidential=x), **KW)
        assert np.array_equal(_p(a), _p(b))
        with pytest.raises(ValueError, match=f"method='{name}' needs confidential="):
            cls()


def test_options_belong_to_their_method():
    with pytest.raises(TypeError, match="give these options to the method object"):
        dw.sample(MODEL, MECH, 61.3, 200, method=dw.Record(), sweeps=2, **KW)
    with pytest.raises(ValueError, match="sweeps applies to method='record' only"):
        dw.sample(MODEL, MECH, 61.3, 200, method="suffstat", sweeps=2, **KW)
    with pytest.raises(ValueError, match="variant applies to method='suffstat' only"):
        dw.sample(MODEL, MECH, 61.3, 200, variant="printed", **KW)
    with pytest.raises(TypeError, match="unexpected keyword argument.*swepes"):
        dw.sample(MODEL, MECH, 61.3, 200, swepes=2, **KW)
    with pytest.raises(ValueError, match="sweeps must be an integer >= 1"):
        dw.Record(sweeps=0)
    with pytest.raises(ValueError, match="scan must be 'systematic' or 'random'"):
        dw.Record(scan="backwards")
    with pytest.raises(ValueError, match="variant must be one of"):
        dw.Suffstat(variant="Gibbs")


def test_another_methods_option_at_its_default_is_ignored():
    """Studies and the CLI pass one set of options to every method: defaults (and the
    confidential records, which release-based methods do not read) are not errors."""
    x = MODEL.simulate({"p": 0.3}, 200, seed=1)
    a = dw.sample(MODEL, MECH, 61.3, 200, method="naive", sweeps=1, scan="systematic",
                  variant="gibbs", checkpoint=None, confidential=x, **KW)
    b = dw.sample(MODEL, MECH, 61.3, 200, method="naive", **KW)
    assert np.array_equal(_p(a), _p(b))


def test_method_objects_are_immutable_and_say_what_they_are():
    method = dw.Record(interweave=2)
    with pytest.raises(AttributeError):
        method.sweeps = 3
    assert repr(method).startswith("Record(interweave=2")
    assert set(dw.METHODS) == {"record", "suffstat", "naive", "nonprivate", "ops"}
