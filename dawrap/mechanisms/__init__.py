"""Record-additive privacy mechanisms (:mod:`.additive`), the exact integer noise samplers
behind their publishable releases (:mod:`.discrete`), and the sensitivity of a statistic of
records in a box (:mod:`.sensitivity`)."""
from .additive import Box, DiscreteGaussian, Gaussian, Geometric, Laplace, Mechanism, Sparse
from .sensitivity import box_sensitivity

__all__ = ["Mechanism", "Laplace", "Gaussian", "Geometric", "DiscreteGaussian", "Box", "Sparse",
           "box_sensitivity"]
