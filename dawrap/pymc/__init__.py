r"""Bring your own PyMC model: the non-private model written in PyMC, made private by dawrap.

Write the model of the *confidential records* as usual: priors on continuous parameters and
one or more observed variables whose rows are the records (every column a record carries,
covariates included, is an observed variable: the sampler imputes whole records).
:func:`from_pymc` turns it into a :class:`dawrap.Model` whose record draw, prior draw,
parameter layout and HMC theta kernel on the unconstrained joint log density are compiled
from PyMC's graphs with PyTensor's numba backend; the release statistic and the mechanism
stay dawrap's. The result's posterior keeps the model's dims and coords, and its
Deterministics of the parameters.

>>> import pymc as pm
>>> with pm.Model() as logistic:
...     beta = pm.Normal("beta", 0.0, 2.0, shape=2)
...     X = pm.Normal("X", 0.0, 1.0, observed=np.zeros((500, 2)))
...     y = pm.Bernoulli("y", logit_p=X @ beta, observed=np.zeros(500))
>>> model = dawrap.pymc.from_pymc(logistic, records=["y", "X"])   # record = (y, x_1, x_2)
>>> idata = dw.sample(model, mechanism, s_dp, 500)

Needs the optional extra: ``pip install "dawrap[pymc]"``.
"""
try:
    import pymc  # noqa: F401
    import pytensor  # noqa: F401
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError('dawrap.pymc needs PyMC and PyTensor: pip install "dawrap[pymc]"') \
        from err

from .compile import Compiled, compile_model
from .convert import from_pymc
from .graph import Layout, UnsupportedModel, layout

__all__ = ["from_pymc", "compile_model", "Compiled", "layout", "Layout", "UnsupportedModel"]
