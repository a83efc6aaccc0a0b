r"""A PyMC model of the confidential records as a :class:`dawrap.Model`."""
from __future__ import annotations

from collections.abc import Sequence

import pymc as pm

from ..model import Model
from ..samplers.hmc import hmc
from .compile import compile_model, identify
from .labels import labels

__all__ = ["from_pymc"]


def from_pymc(model: pm.Model, records: Sequence[str] | None = None, *, name: str | None = None,
              draw_record=None, batched: bool = True, **hmc_options) -> Model:
    r"""Turn a PyMC model of the confidential records into a :class:`dawrap.Model`.

    The sampler's ``theta`` is the concatenation of the free parameters' constrained values
    (so the ArviZ output shows, e.g., ``sigma`` > 0), in the order PyMC defines them; the
    result's posterior keeps their ``dims`` and ``coords`` and adds each ``pm.Deterministic``
    of the parameters, computed from the draws after sampling (see
    :mod:`dawrap.pymc.labels`). A
    record is the concatenation of one row of each observed variable, in ``records`` order;
    the release statistic reads records in that layout. ``theta`` moves by
    :func:`dawrap.kernels.hmc` on the unconstrained joint density

    .. math:: \log p(u) + \log\lvert J(u)\rvert + \sum_i \log f(x_i \mid \theta(u)),

    with the imputed database :math:`x` as an input, tuned during warm-up and then frozen.
    The record sweep draws its proposals from the likelihood's graph compiled for a block of
    records per call (``dw.Model(draw_records=...)``): a PyTensor function has a fixed cost per
    call, which one record per call would pay ``n`` times a sweep.

    Parameters
    ----------
    model : pymc.Model
        Priors on continuous parameters and one or more observed variables, each with the
        records as its first dimension (same number of rows). The observed data only fix the
        row shapes: dawrap imputes the records.
    records : sequence of str, optional
        The observed variables in record order (default: the order they were defined).
    name : str, optional
        A label stored with results (default: the PyMC model's name, or ``"pymc"``).
    draw_record : numba.njit function, optional
        ``(rng, theta, out)``: a hand-written record draw to use instead of the one compiled
        from PyMC's graph. Each PyTensor random-variable node has a fixed cost per call, which
        on a cheap likelihood dominates the record sweep (``benchmarks/pymc_record_draw.py``);
        a hand-written draw must follow the same likelihood, with ``theta`` and the record in
        the layout above. The sweep then calls it once per record (no batched draw).
    batched : bool
        Draw the sweep's proposals from PyMC's graph a block of records per call (default);
        False: one record per call, through the compiled one-record draw (slower; the same
        posterior).
    **hmc_options
        Passed to :func:`dawrap.kernels.hmc` (``step_size``, ``path_length``, ``max_steps``,
        ``target``).

    Returns
    -------
    dawrap.Model

    Raises
    ------
    dawrap.pymc.UnsupportedModel
        For a model without an observed variable, with observed variables of different row
        counts, with discrete parameters, with size-changing transforms, or with an observed
        variable that is not a basic distribution or depends on data that is not modelled
        (``pm.Data``, or per-record numpy arrays in its parameters).

    Examples
    --------
    >>> with pm.Model() as beta_binomial:
    ...     p = pm.Beta("p", 1.0, 1.0)
    ...     pm.Bernoulli("y", p=p, observed=np.zeros(100))
    >>> model = dawrap.pymc.from_pymc(beta_binomial)
    >>> idata = dw.sample(model, dw.Laplace(count, epsilon=1.0), s_dp, 100)
    """
    if not isinstance(batched, bool):
        raise TypeError(f"batched must be True or False, got {batched!r}")
    parts = compile_model(model, records)
    lay = parts.layout
    kernel = hmc(parts.logp_and_grad, to_unconstrained=parts.to_unconstrained,
                 to_constrained=parts.to_constrained, **hmc_options)
    record_size = lay.columns[lay.observed[-1].name].stop
    # A hand-written draw_record replaces both of PyMC's draws: the batched one is its graph.
    draw_records = parts.draw_records if batched and draw_record is None else None
    named = labels(parts.model, lay)
    if named["deterministics"] is not None:
        identify(named["deterministics"], "deterministics", parts.identity)
    return Model(params=lay.params, record_size=record_size,
                 draw_record=parts.draw_record if draw_record is None else draw_record,
                 draw_records=draw_records, draw_theta=kernel, draw_prior=parts.draw_prior,
                 name=name or model.name or "pymc", **named)
