"""dawrap: Bayesian inference from differentially private releases.

Register the pieces of an ordinary Bayesian model (:class:`Model`, optionally with an
:class:`ExponentialFamily` description) and the record-additive mechanism that produced the
release (:class:`Laplace`, :class:`Gaussian`, :class:`Geometric`, :class:`DiscreteGaussian`
or any :class:`Mechanism`); :func:`sample` returns the private posterior as an ArviZ object,
by the exact record-level sampler (default), the sufficient-statistic sampler, or a baseline.

The package is layered, each layer using only those above it:

* :mod:`dawrap.model` and :mod:`dawrap.mechanisms`: what the user registers;
* :mod:`dawrap.samplers`: the compiled samplers, one module per algorithm;
* :mod:`dawrap.runner`: chains, starting values, Ctrl-C, progress and checkpoints;
* :func:`sample` (:mod:`dawrap.sampling`) and :mod:`dawrap.diagnostics` (the ArviZ adapter);
* :mod:`dawrap.studies`: comparisons and calibration studies built on :func:`sample`.

``import dawrap`` is light: the public names below are imported on first use (PEP 562), so
a script, a ``dawrap --help`` or a test that needs only part of the package does not wait
for numba, SciPy or ArviZ (about 5 s of a cold import) to load the rest.
"""
import importlib

from . import _compat
from .compile import cache as _cache

__version__ = "0.2.0"

#: Public name -> the module that defines it (imported on first access).
_LAZY = {
    "Model": ".model", "ExponentialFamily": ".model", "recipe": ".model",
    "NonCentred": ".model.protocols", "PreparedDraw": ".model.protocols",
    "Mechanism": ".mechanisms", "Laplace": ".mechanisms", "Gaussian": ".mechanisms",
    "Geometric": ".mechanisms", "DiscreteGaussian": ".mechanisms", "Box": ".mechanisms",
    "Sparse": ".mechanisms", "NoiseLaw": ".mechanisms", "declare_sparse": ".mechanisms.separable",
    "box_sensitivity": ".mechanisms.sensitivity",
    "sample": ".sampling", "METHODS": ".sampling",
    # dawrap 0.2's name of dw.parallel.Partition (kept working, not listed)
    "Partition": ".samplers.parallel",
    "Record": ".methods", "Suffstat": ".methods", "Naive": ".methods",
    "NonPrivate": ".methods", "OPS": ".methods",
    "compare": ".studies.compare", "Comparison": ".studies.compare", "mmd2": ".studies.compare",
    "calibrate": ".studies.calibration", "Calibration": ".studies.calibration",
}
#: Public submodules, imported on first access as attributes (``dw.kernels``).
_SUBMODULES = {"kernels": ".samplers.kernels", "random": ".random", "parallel": ".parallel",
               "opendp": ".opendp", "smartnoise": ".smartnoise", "tumult": ".tumult",
               "diagnostics": ".diagnostics", "synthetic": ".studies.synthetic"}

__all__ = ["Model", "ExponentialFamily", "NonCentred", "PreparedDraw", "recipe",
           "Mechanism", "Laplace", "Gaussian", "Geometric", "DiscreteGaussian", "NoiseLaw", "Box",
           "Sparse", "declare_sparse", "box_sensitivity", "sample", "METHODS", "Record", "Suffstat", "Naive", "NonPrivate",
           "OPS",
           "kernels", "random", "parallel", "diagnostics", "synthetic",
           "compare", "Comparison", "mmd2", "calibrate", "Calibration", "__version__"]


def __getattr__(name: str):
    """Import a public name on first access and keep it, so later accesses are plain lookups."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(_SUBMODULES[name], __name__)
    else:
        raise AttributeError(f"module 'dawrap' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


_compat.install()
# numba caches dawrap's compiled code in a per-user folder, not in the package
# (dawrap.compile.cache)
_cache.install()
