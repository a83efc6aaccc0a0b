"""Record-additive privacy mechanisms, one module per part:

* :mod:`.base`: :class:`Mechanism`, the base class, whose docstring is the contract a new
  mechanism follows; :mod:`.noise`: :class:`NoiseLaw`, the law of its noise, when declared;
* :mod:`.families`: :class:`~.families.NoiseFamily`, what one noise family says about itself,
  and the registry of families (at the bottom of the package: it imports none of them);
* :mod:`.laplace`, :mod:`.geometric`, :mod:`.gaussian`, :mod:`.discrete_gaussian`: the
  built-in noise families, each one module defining its family object and its mechanism;
* :mod:`.domains`: the contribution domains (:class:`Box`, :class:`Sparse`) a secure release
  bounds every record's contribution by;
* :mod:`.publication`: the secure release itself (privacy-critical, on its own), with
  :mod:`.checked` (bounds-checked statistics) and :mod:`.discrete` (the exact integer noise
  samplers);
* :mod:`.separable`: sparse statistics and coordinate-separable densities (the O(nnz) path);
* :mod:`.sensitivity`: the sensitivity of a statistic of records in a box;
* :mod:`.quantiles`: :class:`Quantiles`, quantiles selected by the exponential mechanism
  (OpenDP's), and :mod:`.means`: :class:`Means`, a noisy sum over a noisy count (OpenDP's
  means): releases that are not the statistic plus noise.

Adding a noise family
---------------------
One module (or a user's file) and its tests, editing no other module: subclass
:class:`~.families.NoiseFamily` (or a built-in family of the same form) and register one
instance, ``MY_FAMILY = register(MyFamily(name, integer=..., log_density=...,
coordinate_log_density=..., continuous=...))``, its densities compiled with ``numba.njit``
and taking ``params = [w_1, ..., w_m, c]`` (``w_j`` coordinate ``j``'s parameter, read by the
coordinate density alone; ``c`` the log normaliser). The subclass defines

* ``variance(scale)``: each coordinate's noise variance (``NoiseLaw.of``'s default);
* ``log_shape(z)``: the log density of noise of ``z`` scales relative to zero noise (the
  check of a declared law against a mechanism's density);
* ``relative_log_density(s, t, inverse_scale)``: the exact posteriors' log densities,
  exact however far the release lies from the totals (:mod:`dawrap.reference`);
* ``continuous_noise(scale, variance)``: the Laplace or Gaussian noise the
  sufficient-statistic sampler assumes in its place (``method="suffstat"``);
* ``split`` (class attribute, :class:`~.families.Split` or None) and, when ``w_j`` is not
  the inverse of the split's scale, ``cell_inverse_scale(params, cells)``: how a grouped
  chain splits a shared cell (``dw.Record(groups=...)``);
* ``flat_beyond_range`` (class attribute): whether a release beyond the statistic's range
  changes no posterior (the plausibility check's advice);
* for an integer family with an exact sampler, ``exact_noise(scale)`` (the secure release,
  with a mechanism whose ``_secure_noise`` calls it).

``NoiseLaw.of(name, scale)`` then finds it, and a :class:`Mechanism` built with its
densities and ``noise=NoiseLaw.of(name, scale)`` runs on every sampler
(``tests/mechanisms/test_new_family.py`` is such a family, defined in a test file).
"""
# The family modules register their families on import: the built-in ones first, in this
# order (the order NoiseLaw.of's error lists them in).
from .laplace import Laplace
from .geometric import Geometric
from .gaussian import Gaussian
from .discrete_gaussian import DiscreteGaussian
from .base import Mechanism
from .domains import Box, Sparse
from .noise import NoiseLaw
from .quantiles import Quantiles
from .means import Means
from .sensitivity import box_sensitivity

__all__ = ["Mechanism", "NoiseLaw", "Laplace", "Gaussian", "Geometric", "DiscreteGaussian", "Box",
           "Sparse", "box_sensitivity", "Quantiles",
           "Means"]
