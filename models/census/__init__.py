r"""Census noisy-measurement files: persons in a nested geography, cross-classified by their
attributes, released as noisy tables per level (discrete Gaussian noise, zCDP).

**The population.** A :class:`Geography` lists the levels (e.g. county, tract, block; the
finest holds the persons) and the attributes a person is cross-classified by (e.g. voting
age x Hispanic origin x race, 2 x 2 x 63 = 252 cells). A record is ``[unit, cell]``: the
finest unit a person lives in and their cell. The totals of one level are public exactly
(``invariant``; by default the finest, e.g. the block populations): a record's unit is then
known, or, with totals public only at a coarser level, known up to the unit of that level.

**The release.** Each :func:`query` tabulates every unit of one level over a marginal of the
attributes (the detailed histogram, the total, by voting age, ...) with its own budget
:math:`\rho_q`; L2 sensitivity :math:`\sqrt2` per query, :math:`\sigma_q = 1/\sqrt{\rho_q}`,
the release :math:`\sum_q\rho_q`-zCDP (:func:`discrete_gaussian`). Levels without a query are
simply not released.
The 2020 Census redistricting (P.L. 94-171) production release is ready-made:
:func:`pl94_171` (its levels, queries and budgets as published, ``census.pl94``); a marginal
may group an attribute's categories (:func:`recode`).

**The prior** follows the levels chosen for it (``levels``; by default all of the
geography's), coarsest :math:`0` to finest :math:`L-1`: each unit's cell probabilities are
Dirichlet around its parent's,

.. math::

    \alpha_c \sim \mathrm{Gamma}(a_0, b_0), \quad p^{(0)}_v \sim \mathrm{Dir}(\alpha),
    \quad \kappa_l \sim \mathrm{Gamma}(k_a, k_b), \quad
    p^{(l)}_v \mid p^{(l-1)} \sim \mathrm{Dir}\big(\kappa_l\, p^{(l-1)}_{a(v)}\big),

    x_i \mid p \sim \mathrm{Categorical}\big(p^{(L-1)}_{a(u_i)}\big)
    \text{ over the cells},

with :math:`a(v)` the parent of unit :math:`v` and :math:`a(u_i)` the unit of the finest
prior level that record :math:`i`'s unit lies in: :math:`\alpha` sets the overall shares
and their spread between the top units, :math:`\kappa_l` how closely a unit of level
:math:`l` follows its parent (:math:`E\, p^{(l)}_v = p^{(l-1)}_{a(v)}`, variance
:math:`p(1-p)/(\kappa_l + 1)`). ``alpha=`` fixes :math:`\alpha` instead. When the finest
units' totals are not public, record :math:`i` lies in finest unit :math:`u` of its public
unit :math:`g` with probability :math:`w_u`, :math:`w_{\cdot \mid g} \sim \mathrm{Dir}(\gamma
\mathbf 1)`. With one level and one attribute this is the small-area model of
:mod:`dawrap.models.small_area`.

**The sampler.** The record sweep proposes each record's cell (and its finest unit, when that
is latent) from the model given what is public, O(queries) per record
(:mod:`dawrap.samplers.record`, sparse path); the cell in O(1) from categorical tables of
the rows of ``p`` that each sweep builds once (:class:`dawrap.PreparedDraw`). The theta
step is one blocked, partially collapsed Gibbs pass over the hierarchy given the imputed counts
(:mod:`dawrap.models.census.kernel`): concentrations by Metropolis with the level's
probabilities integrated out, Chinese-restaurant table counts up the levels, :math:`\log\alpha`
by HMC on its Dirichlet-multinomial marginal, then every probability from its conjugate
Dirichlet down the levels. With two or more prior levels, each iteration also redraws every
person's cell with their unit's probabilities integrated out (the Pólya urn of the unit,
:mod:`dawrap.models.census.collapsed`), then those probabilities: a unit's empty rare
cell is then proposed at the urn's rate instead of at its near-zero probability. A chain
starts from the release: each finest unit's records are drawn to match its noisy counts,
clipped at zero, within its public total (:func:`start_database`).

theta: ``p`` (finest prior level's units x attributes), ``p_<level>`` for each coarser prior
level, ``log_alpha`` (attributes; unless fixed), ``log_kappa`` (one per prior level below the
top), ``share`` (finest units; when their totals are latent).

Examples
--------
Six blocks in two tracts, persons by voting age and three races; block populations public,
released the block totals, the blocks by voting age and the tracts' detailed histograms:

>>> import numpy as np
>>> import dawrap as dw
>>> from dawrap.models import census
>>> geo = census.Geography({"tract": [0, 0, 0, 1, 1, 1], "block": np.arange(6)},
...                        {"voting_age": 2, "race": 3})
>>> sizes = np.array([30, 12, 25, 40, 8, 18])
>>> model = census.model(geo, totals=sizes)
>>> mech = census.discrete_gaussian(geo, [census.query("block", "total", rho=0.5),
...                                       census.query("block", "voting_age", rho=0.5),
...                                       census.query("tract", "detailed", rho=1.0)])
>>> counts = np.random.default_rng(0).multinomial(sizes, np.full(6, 1 / 6))
>>> s_dp = mech.release(census.records(counts), seed=1)
>>> sorted(model.params)
['log_alpha', 'log_kappa', 'p', 'p_tract']
>>> idata = dw.sample(model, mech, s_dp, n=int(sizes.sum()))  # doctest: +SKIP
"""
from __future__ import annotations

import math
import numbers

import numpy as np

import dawrap as dw
from dawrap.extend import MoveBuilder

from .geography import (DETAILED, MAX_CELLS, TOTAL, Geography, Query, Recode,
                        as_geography, as_queries, query, recode)
from .kernel import theta_kernel
from .partition import partition as census_partition
from .collapsed import RATE as COLLAPSED_RATE
from .collapsed import RowBase, collapsed_move
from .pairs import pair_move
from . import prior as census_prior
from .prior import Prior, theta_layout
from .records import record_functions
from .release import Layout, discrete_gaussian, expected_counts, layout_of, statistic
from .districts import district
from . import pl94
from .pl94 import ATTRIBUTES as PL94_ATTRIBUTES
from .pl94 import pl94_171, pl94_171_measurements, pl94_171_queries

__all__ = ["Geography", "Query", "query", "Recode", "recode", "as_geography", "as_queries",
           "DETAILED", "TOTAL", "MAX_CELLS", "model", "discrete_gaussian",
           "statistic", "records", "layout_of", "start_database", "controlled_rounding",
           "HYPER_KERNELS", "district", "pl94_171", "pl94_171_queries",
           "pl94_171_measurements", "PL94_ATTRIBUTES"]

#: The kernels for ``log_alpha``: HMC with the digamma gradient, or random-walk Metropolis.
HYPER_KERNELS = ("hmc", "metropolis")
#: Default ``hyper_steps``: HMC steps, or random-walk steps, per iteration.
DEFAULT_STEPS = {"hmc": 2, "metropolis": 10}


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not 0 < float(value) < math.inf:
        raise ValueError(f"census.model: {name} must be a finite number > 0, got {value!r}")
    return float(value)


def whole_numbers(values, name: str, minimum: int) -> np.ndarray:
    """``values`` as an int64 vector of whole numbers >= ``minimum`` (and below 2**53, where
    float64 counts stay exact), or a ValueError naming ``name``."""
    arr = np.asarray(values)
    ok = arr.ndim == 1 and arr.shape[0] >= 1 and arr.dtype.kind in "iuf"
    if ok and arr.dtype.kind == "f":
        ok = bool(np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)))
    if not ok or np.any(arr < minimum) or np.any(arr >= 2 ** 53):
        raise ValueError(f"{name} must be a list of whole numbers >= {minimum} (and below "
                         f"2**53), got {values!r}")
    return arr.astype(np.int64)


def records(counts) -> np.ndarray:
    """The database ``[unit, cell]`` holding ``counts[u, c]`` persons of cell ``c`` in
    finest unit ``u``, ordered by unit and cell.

    Parameters
    ----------
    counts : array_like
        Whole numbers >= 0, of shape ``(units, cells)`` or ``(units,)`` followed by the
        attributes' numbers of categories.

    Returns
    -------
    ndarray of shape (counts.sum(), 2)

    Examples
    --------
    >>> from dawrap.models import census
    >>> census.records([[1, 0], [0, 2]])
    array([[0., 0.],
           [1., 1.],
           [1., 1.]])
    """
    arr = np.asarray(counts)
    if arr.ndim < 2:
        raise ValueError(f"counts must have shape (units, cells), got shape {arr.shape}")
    flat = whole_numbers(arr.reshape(-1), "counts", 0).reshape(arr.shape[0], -1)
    unit, cell = np.nonzero(flat)
    reps = flat[unit, cell]
    return np.column_stack([np.repeat(unit, reps), np.repeat(cell, reps)]).astype(float)


def _groups(geography: Geography, invariant: int):
    """The finest units of each unit of the ``invariant`` level (CSR), or None when that is
    the finest level."""
    if invariant == len(geography.names) - 1:
        return None
    public = geography.ancestors[invariant]
    order = np.argsort(public, kind="stable")
    start = np.concatenate([[0], np.cumsum(np.bincount(public, minlength=geography.units[
        invariant]))]).astype(np.int64)
    return start, order.astype(np.int64)


@dw.recipe
def model(geography: Geography, totals, *, invariant: str | None = None,
          levels=None, alpha=None, a0: float = 2.0, b0: float = 1.0,
          kappa=(1.0, 0.01), share_prior: float = 1.0, hyper_kernel: str = "hmc",
          hyper_steps: int | None = None, step: float | None = None,
          pair_moves="auto", collapsed_moves="auto") -> dw.Model:
    """The census model (module docstring) for ``geography`` with public ``totals``.

    Parameters
    ----------
    geography : Geography or dict
        The levels and the attributes (or the plain data of :func:`as_geography`).
    totals : sequence of int
        The public number of persons in each unit of the ``invariant`` level.
    invariant : str, optional
        The level whose totals are public (default: the finest). Coarser totals follow.
    levels : sequence of str, optional
        The geography levels the prior's hierarchy follows, coarsest first (default: all).
        Records draw their cells from the finest of them; fewer levels mean a smaller theta.
    alpha : sequence of float, optional
        Fixed Dirichlet parameters of the top level (one per cell); default: learned, with
        ``alpha_c ~ Gamma(a0, rate b0)``.
    a0, b0 : float
        The Gamma hyperprior of ``alpha``.
    kappa : (float, float)
        Shape and rate of the Gamma prior of each level's concentration ``kappa_l``.
    share_prior : float
        ``gamma``, the Dirichlet parameter of the finest units' shares of their public unit
        (used only when ``invariant`` is not the finest level).
    hyper_kernel : {"hmc", "metropolis"}
        The kernel of ``log_alpha`` (module docstring).
    hyper_steps : int, optional
        Steps of the hyperparameters' kernels per iteration (default 2 for HMC, 10 for
        Metropolis).
    step : float, optional
        A fixed random-walk scale for the Metropolis kernels (``log_alpha``'s with
        ``hyper_kernel="metropolis"``, and every ``log_kappa``'s); default: adapted during
        warm-up, then frozen. HMC tunes itself during warm-up.
    pair_moves : "auto" or float
        Proposals per person and iteration of the pair move (:mod:`dawrap.models.census.pairs`:
        two persons of the same unit of a coarser level exchange their cells, which keeps
        every total a precise coarse release pins); 0 turns it off. ``"auto"`` (default):
        0.5, each person once on average, when the release has a query above the finest
        level with noise sd at most 1.5 (``census.pairs.PINNED_SIGMA``), else none. A chain
        on threads or on a dask cluster (``dw.Record(threads=...)``, ``executor=...``) runs
        it in every group of its partition at once (:mod:`dawrap.samplers.group_moves`),
        unless the cells the groups share are released so precisely that their pieces pin
        each group's part (``dawrap.samplers.parallel.pieces_pinned``): then only the move
        on the whole database frees them, and it runs there on threads, while a cluster
        chain refuses to start, saying what to do (run on threads, or ``pair_moves=0``:
        another chain than on threads, never run silently).
    collapsed_moves : "auto" or float
        Steps per person and iteration of the collapsed move
        (:mod:`dawrap.models.census.collapsed`: each person's cell redrawn from the Pólya
        urn of their unit, the finest prior level's probabilities integrated out, then those
        probabilities drawn afresh), which keeps a unit's rare cell from sticking at zero
        (``docs/census.md``); 0 turns it off. ``"auto"`` (default): 2, each person twice
        (about twice a record sweep's cost), when the prior has two or more levels (a unit's
        Dirichlet parameters are then kappa times its parent's probabilities, well below one
        for a rare cell), none with one level (``small_area``: parameters alpha, learned
        from every unit's counts). A chain on threads or on a dask cluster runs it in
        every group of its partition at once, each group drawing its units' rows of ``p``
        (on threads, a partition that does not give each unit's counts to one group runs it on
        the whole database; a cluster chain then refuses to start, saying what to do).

    Returns
    -------
    dawrap.Model
        With ``start_database`` (:func:`start_database`): chains start from the release.

    Examples
    --------
    >>> from dawrap.models import census
    >>> geo = census.Geography({"tract": [0, 0, 1], "block": [0, 1, 2]}, {"age": 2, "race": 2})
    >>> model = census.model(geo, totals=[10, 20, 5])
    >>> {name: shape for name, shape in model.params.items()}
    {'p': (3, 2, 2), 'p_tract': (2, 2, 2), 'log_alpha': (2, 2), 'log_kappa': (1,)}
    >>> census.model(geo, totals=[10, 20])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: census.model: totals must give one number per unit of level 'block' (3), got 2
    """
    geography = as_geography(geography)
    names = geography.names
    inv = len(names) - 1 if invariant is None else geography.level(invariant)
    totals = whole_numbers(totals, "census.model: totals", 0)
    if totals.shape[0] != geography.units[inv]:
        raise ValueError(f"census.model: totals must give one number per unit of level "
                         f"{names[inv]!r} ({geography.units[inv]}), got {totals.shape[0]}")
    if totals.sum() < 1:
        raise ValueError("census.model: the totals must add up to at least one person")
    prior = tuple(names) if levels is None else tuple(levels)
    if not prior or len(set(prior)) != len(prior) or any(p not in names for p in prior) \
            or list(prior) != sorted(prior, key=names.index):
        raise ValueError(f"census.model: levels must be distinct geography levels "
                         f"{list(names)}, coarsest first, got {levels!r}")
    idx = [names.index(p) for p in prior]
    cells = geography.cells
    if alpha is not None:
        alpha = np.asarray(alpha, float).reshape(-1)
        if alpha.shape != (cells,) or not np.all((alpha > 0) & np.isfinite(alpha)):
            raise ValueError(f"census.model: alpha must hold {cells} finite numbers > 0 (one "
                             f"per cell), got {alpha!r}")
    a0, b0, share_prior = _positive("a0", a0), _positive("b0", b0), \
        _positive("share_prior", share_prior)
    if not isinstance(kappa, (tuple, list)) or len(kappa) != 2:
        raise ValueError(f"census.model: kappa must be (shape, rate) of a Gamma prior, got "
                         f"{kappa!r}")
    kappa = (_positive("kappa's shape", kappa[0]), _positive("kappa's rate", kappa[1]))
    if hyper_kernel not in HYPER_KERNELS:
        raise ValueError(f"census.model: hyper_kernel must be one of {HYPER_KERNELS}, got "
                         f"{hyper_kernel!r}")
    steps = DEFAULT_STEPS[hyper_kernel] if hyper_steps is None else hyper_steps
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral) or steps < 1:
        raise ValueError(f"census.model: hyper_steps must be a whole number >= 1, got "
                         f"{hyper_steps!r}")
    step = None if step is None else _positive("step", step)
    if pair_moves != "auto" and (isinstance(pair_moves, bool) or not isinstance(
            pair_moves, numbers.Real) or not 0 <= pair_moves <= 100):  # NaN fails too
        raise ValueError(f"census.model: pair_moves must be 'auto' or a number in [0, 100] "
                         f"(proposals per person and iteration; 0: none), got {pair_moves!r}")
    if collapsed_moves != "auto" and (isinstance(collapsed_moves, bool) or not isinstance(
            collapsed_moves, numbers.Real) or not 0 <= collapsed_moves <= 100):  # NaN too
        raise ValueError(f"census.model: collapsed_moves must be 'auto' or a number in "
                         f"[0, 100] (steps per person and iteration; 0: none), got "
                         f"{collapsed_moves!r}")

    units = [geography.units[l] for l in idx]
    collapsed_rate = ((COLLAPSED_RATE if len(idx) > 1 else 0.0) if collapsed_moves == "auto"
                      else float(collapsed_moves))
    parents = [None] + [_parents(geography, idx[k - 1], idx[k]) for k in range(1, len(idx))]
    groups = _groups(geography, inv)
    spec = Prior(tuple(units), tuple(parents), cells, alpha, a0, b0, kappa, groups,
                 share_prior)
    kernel = theta_kernel(spec, hyper_kernel, int(steps), step)
    params, dims, coords = _parameters(geography, prior, units, alpha is None,
                                       groups is not None)
    layout = theta_layout(spec)
    public = geography.ancestors[inv]
    cumulative = np.cumsum(totals) / totals.sum()
    fns = record_functions(geography.ancestors[idx[-1]], public, cumulative,
                           *(groups if groups is not None else (np.zeros(1), np.zeros(1))),
                           cells, sum(units), layout.share_off if groups is not None else -1)
    stat_size = layout.fine + (geography.units[-1] if groups is not None else 0)

    def draw_prior(rng):
        return census_prior.draw_prior(rng, spec)

    def start(rng, theta, n, mechanism, s_dp, init_x):
        return start_database(rng, theta, n, mechanism, s_dp, init_x, geography, totals,
                              inv, idx[-1], groups is not None)

    def partition(x, mechanism):
        return census_partition(geography, mechanism, x, inv, idx[-1], groups is not None)

    level_text = ", ".join(f"{names[l]}={geography.units[l]}" for l in idx)
    # What the convergence warning may advise beyond longer runs (the model has no
    # non-centred map, so not interweave): with two or more prior levels a unit's rare cell
    # mixes through the collapsed move, and more of its steps help (docs/census.md, "Where a
    # unit's rare cell is empty": 4 steps per person against 2, fewer R-hats above 1.01).
    more = min(100.0, 2 * collapsed_rate if collapsed_rate else COLLAPSED_RATE)
    remedies = ((f"census.model(..., collapsed_moves={more:g}): more collapsed steps per "
                 f"person and iteration (this model makes {collapsed_rate:g}), for a unit's "
                 f"rare cells",) if len(idx) > 1 and more > collapsed_rate else ())
    # the collapsed move's rows: the finest prior level's p, based on its parents' p and
    # the last log kappa (or, with one level, on alpha)
    rows = RowBase(geography.ancestors[idx[-1]], units[-1], cells, parents[-1], layout.fine,
                   layout.kappa_off + len(idx) - 2, layout.alpha_off, alpha)
    return dw.Model(params=params, record_size=2, draw_record=fns.draw_record,
                    propose_record=fns.propose_record, prepared=fns.prepared,
                    draw_theta=kernel,
                    model_stat=fns.model_stat, stat_size=stat_size, stat_every="iteration",
                    draw_prior=draw_prior,
                    theta_support=fns.theta_support, record_support=fns.record_support,
                    dims=dims, coords=coords, start_database=start, partition=partition,
                    records_move=MoveBuilder.in_turn(
                        pair_move(geography.ancestors, geography.ancestors[idx[-1]], cells,
                                  pair_moves),
                        collapsed_move(rows, collapsed_rate)),
                    remedies=remedies,
                    name=f"census({level_text}; {cells} cells; public totals of "
                         f"{names[inv]})")


def _parameters(geography: Geography, prior: tuple, units: list, learn_alpha: bool,
                latent: bool):
    """The model's parameters (theta's layout: the finest prior level's ``p`` first), their
    dimension names and the labels of those dimensions."""
    attributes, shape = tuple(geography.attributes), geography.shape
    params, dims = {"p": (units[-1], *shape)}, {"p": (prior[-1], *attributes)}
    for l in range(len(prior) - 2, -1, -1):
        params[f"p_{prior[l]}"] = (units[l], *shape)
        dims[f"p_{prior[l]}"] = (prior[l], *attributes)
    if learn_alpha:
        params["log_alpha"], dims["log_alpha"] = shape, attributes
    if len(prior) > 1:
        params["log_kappa"], dims["log_kappa"] = (len(prior) - 1,), ("prior_level",)
    if latent:
        params["share"], dims["share"] = (geography.units[-1],), (geography.names[-1],)
    coords = {name: geography.labels[geography.level(name)] for name in prior}
    coords.update({a: np.arange(k) for a, k in geography.attributes.items()})
    if latent:
        coords[geography.names[-1]] = geography.labels[-1]
    if len(prior) > 1:
        coords["prior_level"] = list(prior[1:])
    return params, dims, coords


def _parents(geography: Geography, upper: int, lower: int) -> np.ndarray:
    """For each unit of level ``lower``, its ancestor at level ``upper``."""
    out = np.empty(geography.units[lower], np.int64)
    out[geography.ancestors[lower]] = geography.ancestors[upper]
    return out


def start_database(rng, theta, n: int, mechanism, s_dp, init_x, geography: Geography,
                   totals, invariant: int, prior_finest: int, latent: bool) -> np.ndarray:
    """The database a chain of the census model starts from (``Model(start_database=)``).

    ``init_x``, when given, must hold the public ``totals`` (checked, naming ``init_x``);
    otherwise each finest unit's records are drawn from the release: unit totals (when not
    public) split from the public ones in proportion to the released totals below, then
    each unit's cells drawn from the estimate of :func:`expected_counts` (its released
    marginals clipped at zero, fitted down the levels). With another mechanism, cells are
    drawn from ``theta``. The mechanism must be built over the same finest units and
    cells.

    Parameters
    ----------
    rng : numpy.random.Generator
    theta : ndarray
        The chain's starting theta.
    n : int
        ``dw.sample``'s ``n``: must equal the totals' sum.
    mechanism : dawrap.Mechanism
    s_dp : ndarray
    init_x : ndarray or None
    geography, totals, invariant, prior_finest, latent
        The model's (see :func:`model`).

    Returns
    -------
    ndarray of shape (n, 2)

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import census
    >>> geo = census.Geography({"block": [0, 1]}, 2)
    >>> mech = census.discrete_gaussian(geo, [census.query("block", rho=1.0)])
    >>> x = census.start_database(np.random.default_rng(0), None, 5, mech,
    ...                           np.array([3.0, -1.0, 0.0, 2.0]), None, geo, [3, 2], 0, 0,
    ...                           False)
    >>> x                            # block 0: 3 of category 0; block 1: 2 of category 1
    array([[0., 0.],
           [0., 0.],
           [0., 0.],
           [1., 1.],
           [1., 1.]])
    """
    names, totals = geography.names, np.asarray(totals, np.int64)
    if n != totals.sum():
        raise ValueError(f"n = {n} but the model's public totals of level "
                         f"{names[invariant]!r} add up to {totals.sum()}")
    layout = layout_of(mechanism)
    if layout is not None and (layout.geography.units[-1] != geography.units[-1]
                               or layout.geography.cells != geography.cells):
        raise ValueError(
            f"the mechanism releases tables over {layout.geography.units[-1]} finest units "
            f"and {layout.geography.cells} cells, but the model's geography has "
            f"{geography.units[-1]} finest units (level {names[-1]!r}) and "
            f"{geography.cells} cells: build both from the same geography and attributes")
    if layout is not None and list(layout.geography.attributes.items()) != \
            list(geography.attributes.items()):
        # the same number of cells, read as other attributes: the release's marginals
        # would be taken over the wrong cells
        raise ValueError(
            f"the mechanism cross-classifies persons by {layout.geography.attributes}, but "
            f"the model by {geography.attributes}: build both from the same attributes, in "
            f"the same order")
    public = geography.ancestors[invariant]
    if init_x is not None:
        x = np.asarray(init_x)
        held = np.bincount(public[np.clip(x[:, 0].astype(np.int64), 0, len(public) - 1)],
                           minlength=len(totals))
        bad = np.flatnonzero(held != totals)
        if bad.size:
            u = int(bad[0])
            label = geography.labels[invariant][u].item()
            raise ValueError(f"init_x puts {held[u]} records in unit {label!r} of level "
                             f"{names[invariant]!r}, whose public total is {totals[u]}: a "
                             f"start must hold the public totals (leave init_x out to start "
                             f"from the release)")
        return init_x
    groups = _groups(geography, invariant)
    if groups is None:
        fine_totals = totals
    else:  # split each public total among its finest units, by their released totals
        weight = np.ones(geography.units[-1]) if layout is None else _released_totals(
            layout, s_dp) + 0.5
        fine_totals = np.zeros(geography.units[-1], np.int64)
        start, members = groups
        for g in range(len(totals)):
            m = members[start[g]:start[g + 1]]
            fine_totals[m] = rng.multinomial(totals[g], weight[m] / weight[m].sum())
    if layout is None:
        cells = geography.cells
        rows = theta[:geography.units[prior_finest] * cells].reshape(-1, cells)
        shares = rows[geography.ancestors[prior_finest]]
    else:
        finest = len(layout.geography.names) - 1
        shares = expected_counts(layout, s_dp, finest, np.ones(geography.units[-1]))
    shares = np.maximum(shares, 0.0)
    shares /= shares.sum(axis=1, keepdims=True)
    return records(controlled_rounding(rng, shares * fine_totals[:, None]))


def controlled_rounding(rng, expected: np.ndarray) -> np.ndarray:
    """Whole counts within one of ``expected`` (rows of non-negative reals with whole
    sums), each row's sum kept: each cell gets the floor of its expected count, and the
    remainder goes to cells drawn by systematic sampling, cell ``c`` with probability equal
    to its fractional part (so the counts' mean is ``expected``, and chains started from
    their own draws start apart).

    Parameters
    ----------
    rng : numpy.random.Generator
    expected : ndarray of shape (units, cells)

    Returns
    -------
    ndarray of int64, the shape of ``expected``

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.models import census
    >>> census.controlled_rounding(np.random.default_rng(0), np.array([[2.5, 0.25, 0.25]]))
    array([[3, 0, 0]])
    """
    base = np.floor(expected)
    cumulative = np.cumsum(expected - base, axis=1)
    cumulative -= cumulative[:, -1:] - np.round(cumulative[:, -1:])  # whole row remainders
    shifted = np.floor(cumulative + rng.random((expected.shape[0], 1)))
    extra = np.diff(shifted, axis=1, prepend=0.0)  # 1 where k + u falls in the cell's part
    return (base + extra).astype(np.int64)


def _released_totals(layout: Layout, s_dp) -> np.ndarray:
    """Each finest unit's number of persons as the release suggests, clipped at zero: down
    the levels, a released level's own totals (the mean over its queries), an unreleased
    one's parent's estimate split equally among its units."""
    geo = layout.geography
    estimate = None
    for l in range(len(geo.names)):
        released = [layout.table(s_dp, q).sum(axis=1) for q in np.flatnonzero(
            layout.levels == l)]
        if released:
            estimate = np.clip(np.mean(released, axis=0), 0.0, None)
        elif estimate is None:
            estimate = np.ones(geo.units[l])
        else:
            parent = geo.parents(geo.names[l])
            estimate = estimate[parent] / np.bincount(parent)[parent]
    return estimate
