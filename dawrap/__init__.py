"""dawrap: exact Bayesian inference from differentially private releases.

Register the pieces of an ordinary Bayesian model (:class:`Model`) and the record-additive
mechanism that produced the release (:class:`Laplace`, :class:`Gaussian`, :class:`Geometric`
or any :class:`Mechanism`); :func:`sample` returns the private posterior as an ArviZ object.
"""
from .mechanisms import Gaussian, Geometric, Laplace, Mechanism
from .model import Model
from .sampling import sample

__version__ = "0.1.0"

__all__ = ["Model", "Mechanism", "Laplace", "Gaussian", "Geometric", "sample", "__version__"]
