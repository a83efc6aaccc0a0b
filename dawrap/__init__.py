"""dawrap: Bayesian inference from differentially private releases.

Register the pieces of an ordinary Bayesian model (:class:`Model`, optionally with an
:class:`ExponentialFamily` description) and the record-additive mechanism that produced the
release (:class:`Laplace`, :class:`Gaussian`, :class:`Geometric` or any :class:`Mechanism`);
:func:`sample` returns the private posterior as an ArviZ object, by the exact record-level
sampler (default), the sufficient-statistic sampler, or a baseline.
"""
from .compare import Comparison, compare, mmd2
from .family import ExponentialFamily
from .interweave import NonCentred
from .mechanisms import Box, DiscreteGaussian, Gaussian, Geometric, Laplace, Mechanism, Sparse
from .model import Model
from .recipe import recipe
from . import kernels, random
from .sampling import METHODS, sample

__version__ = "0.2.0"

__all__ = ["Model", "ExponentialFamily", "Mechanism", "Laplace", "Gaussian", "Geometric",
           "DiscreteGaussian", "Box", "Sparse", "sample", "METHODS", "compare", "Comparison",
           "mmd2", "recipe", "kernels", "random", "NonCentred", "__version__"]
