"""The mechanisms' former single module, kept so that its import paths keep working: every name
it held is re-exported from the module that now defines it.

=========================================  ==========================================
:mod:`~dawrap.mechanisms.base`             ``Mechanism``, ``as_records``,
                                           ``sum_statistic``, ``with_release_argument``
:mod:`~dawrap.mechanisms.domains`          ``Box``, ``Sparse`` (contribution domains)
:mod:`~dawrap.mechanisms.publication`      the secure release (``record_contributions``,
                                           ``CONTRIBUTION_CHUNK``)
:mod:`~dawrap.mechanisms.laplace`,         one module per noise family
:mod:`~dawrap.mechanisms.geometric`,
:mod:`~dawrap.mechanisms.gaussian`,
:mod:`~dawrap.mechanisms.discrete_gaussian`
=========================================  ==========================================

Kept only for backwards compatibility of imports (dawrap itself no longer imports it): new
code imports from :mod:`dawrap.mechanisms` (or ``dw.Laplace``, ...) or the modules above.
The private aliases (``_laplace_log_density``, ``_gaussian_log_density``,
``_NumpyIntegers``) are the public ``laplace_log_density``, ``gaussian_log_density`` and
``NumpyIntegers`` of their modules.
"""
from .base import Mechanism, as_records, sum_statistic, with_release_argument
from .discrete_gaussian import (DiscreteGaussian, NumpyIntegers as _NumpyIntegers,
                                discrete_gaussian_log_normaliser, discrete_gaussian_variance)
from .domains import Box, Sparse
from .gaussian import Gaussian, gaussian_log_density as _gaussian_log_density
from .geometric import Geometric
from .laplace import Laplace, laplace_log_density as _laplace_log_density
from .noise import LARGEST_INTEGER_SCALE, LARGEST_SCALE, SMALLEST_SCALE
from .publication import CONTRIBUTION_CHUNK, record_contributions

__all__ = ["Mechanism", "Laplace", "Gaussian", "Geometric", "DiscreteGaussian", "Box", "Sparse"]
