"""Record-additive privacy mechanisms (:mod:`.additive`) and the exact integer noise samplers
behind their publishable releases (:mod:`.discrete`)."""
from .additive import Box, DiscreteGaussian, Gaussian, Geometric, Laplace, Mechanism, Sparse

__all__ = ["Mechanism", "Laplace", "Gaussian", "Geometric", "DiscreteGaussian", "Box", "Sparse"]
