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
"""
from . import _compat
from . import diagnostics, random
from .mechanisms import Box, DiscreteGaussian, Gaussian, Geometric, Laplace, Mechanism, Sparse
from .mechanisms.separable import declare_sparse
from .model import ExponentialFamily, Model, recipe
from .samplers import kernels
from .samplers.interweave import NonCentred
from .methods import OPS, Naive, NonPrivate, Record, Suffstat
from .sampling import METHODS, sample
from .studies.calibration import Calibration, calibrate
from .studies.compare import Comparison, compare, mmd2

__version__ = "0.2.0"

__all__ = ["Model", "ExponentialFamily", "NonCentred", "recipe",
           "Mechanism", "Laplace", "Gaussian", "Geometric", "DiscreteGaussian", "Box", "Sparse",
           "declare_sparse", "sample", "METHODS", "Record", "Suffstat", "Naive", "NonPrivate", "OPS",
           "kernels", "random", "diagnostics",
           "compare", "Comparison", "mmd2", "calibrate", "Calibration", "__version__"]

_compat.install()
