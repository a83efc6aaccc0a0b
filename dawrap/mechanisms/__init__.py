"""Record-additive privacy mechanisms, one module per part:

* :mod:`.base`: :class:`Mechanism`, the base class, whose docstring is the contract a new
  mechanism follows; :mod:`.noise`: :class:`NoiseLaw`, the law of its noise, when declared;
* :mod:`.laplace`, :mod:`.geometric`, :mod:`.gaussian`, :mod:`.discrete_gaussian`: the
  built-in noise families;
* :mod:`.domains`: the contribution domains (:class:`Box`, :class:`Sparse`) a secure release
  bounds every record's contribution by;
* :mod:`.publication`: the secure release itself (privacy-critical, on its own), with
  :mod:`.checked` (bounds-checked statistics) and :mod:`.discrete` (the exact integer noise
  samplers);
* :mod:`.separable`: sparse statistics and coordinate-separable densities (the O(nnz) path);
* :mod:`.sensitivity`: the sensitivity of a statistic of records in a box.
"""
from .base import Mechanism
from .discrete_gaussian import DiscreteGaussian
from .domains import Box, Sparse
from .gaussian import Gaussian
from .geometric import Geometric
from .laplace import Laplace
from .noise import NoiseLaw
from .sensitivity import box_sensitivity

__all__ = ["Mechanism", "NoiseLaw", "Laplace", "Gaussian", "Geometric", "DiscreteGaussian", "Box",
           "Sparse", "box_sensitivity"]
