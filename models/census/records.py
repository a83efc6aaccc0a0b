"""The census model's record-level functions: a record ``[unit, cell]`` drawn from the
model, the proposal that keeps what is public (both also through a per-sweep table of the
cells' probabilities, :class:`dawrap.PreparedDraw`), the model statistic (counts of the finest
prior level, and each finest unit's total when those are not public), and the supports (see
:mod:`dawrap.models.census`). The model recounts its statistic once per iteration
(``dw.Model(stat_every="iteration")``) rather than the sweep moving it per accepted record:
that bookkeeping cost the sweep about a quarter of its time per record at 10^6 records
(``benchmarks/census_profile.py``), the recount a few nanoseconds per record.

Every function is compiled with ``inline="always"``: numba then types it into the compiled
sweep that calls it, so a record update makes no call across a function boundary, each of
which builds and reference-counts the arrays it passes (``benchmarks/census_profile.py``: with
the direct cell draw of :func:`record_functions`' proposal and no per-record statistic, the
sweep's time per record at 10^6 records fell from 362 to about 85 ns)."""
from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

import dawrap as dw

__all__ = ["RecordFunctions", "record_functions"]

#: Compiled functions by what they close over (one compilation per structure).
_COMPILED: dict = {}


class RecordFunctions(NamedTuple):
    draw_record: object
    propose_record: object
    model_stat: object
    theta_support: object
    record_support: object
    prepared: object


def record_functions(prior_unit, public_unit, cumulative, group_start, group_units,
                     cells: int, rows: int, share_off: int) -> RecordFunctions:
    """Compiled record functions.

    ``prior_unit[u]``: the finest prior level's unit of finest unit ``u`` (its row of ``p``,
    at the start of theta); ``public_unit[u]``: the unit whose total is public that ``u``
    lies in; ``cumulative``: the cumulative shares of those units' totals (for records drawn
    from the model); ``group_start``/``group_units``: the finest units of each such unit
    (CSR) when their own totals are latent, whose shares sit in theta from ``share_off`` on
    (``share_off`` < 0: every finest unit's total is public and ``public_unit`` is the
    identity); ``rows``: the rows of every prior level's ``p`` (each on the simplex).
    """
    key = tuple(np.asarray(a).tobytes() for a in (prior_unit, public_unit, cumulative,
                                                  group_start, group_units)) + \
        (cells, rows, share_off)
    if key not in _COMPILED:
        _COMPILED[key] = _compile(_Arrays(np.asarray(prior_unit, np.int32),
                                          np.asarray(public_unit, np.int32),
                                          np.asarray(cumulative, float),
                                          np.asarray(group_start, np.int64),
                                          np.asarray(group_units, np.int32)),
                                  cells, rows, share_off)
    return _COMPILED[key]


class _Arrays(NamedTuple):
    """What the record functions read (each captured as a constant of their code)."""
    prior_unit: np.ndarray   # int32: each finest unit's row of the finest prior level's p
    public_unit: np.ndarray  # int32: the unit of public total each finest unit lies in
    cumulative: np.ndarray   # the cumulative shares of those units' totals
    group_start: np.ndarray  # int64: the finest units of each unit of public total (CSR)
    group_units: np.ndarray  # int32


def _compile(arrays: _Arrays, cells: int, rows: int, share_off: int) -> RecordFunctions:
    cache = all(a.nbytes <= 10 ** 6 for a in (arrays.prior_unit, arrays.public_unit,
                                               arrays.cumulative, arrays.group_units))
    jit = numba.njit(nogil=True, cache=cache, inline="always")
    units = _unit_draws(jit, arrays, cells, share_off)
    cell_of, cell_from_table, prepare = _cell_draws(jit, arrays.prior_unit, cells)
    draw_record, draw_from_table = _record_draws(jit, arrays.cumulative, units.unit_in,
                                                 cell_of, cell_from_table, share_off)
    propose_record, propose_from_table = _proposals(jit, units.propose_unit, cell_of,
                                                    cell_from_table, share_off)
    valid, census_counts = _statistic(jit, arrays.prior_unit, cells, share_off)
    prepared = dw.PreparedDraw(prepare, draw_from_table, propose_from_table)
    return RecordFunctions(draw_record, propose_record, census_counts,
                           _on_simplex(jit, arrays, cells, rows, share_off), valid, prepared)


class _UnitDraws(NamedTuple):
    unit_in: object       # (rng, theta, g) -> a finest unit of public-total unit g
    propose_unit: object  # (rng, theta, x_i, out) -> (unit, log Hastings ratio)


def _unit_draws(jit, arrays: _Arrays, cells: int, share_off: int) -> _UnitDraws:
    """A record's finest unit: drawn from its public unit's shares, or proposed."""
    public_unit, group_start, group_units = arrays.public_unit, arrays.group_start, \
        arrays.group_units
    latent = share_off >= 0

    @jit
    def unit_in(rng, theta, g):
        # a finest unit of public-total unit g, from the shares in theta
        a, b = group_start[g], group_start[g + 1]
        draw, acc = rng.random(), 0.0
        for j in range(a, b - 1):
            acc += theta[share_off + group_units[j]]
            if draw < acc:
                return group_units[j]
        return group_units[b - 1]

    @jit
    def propose_unit(rng, theta, x_i, out):
        # What is public stays: the unit, or with latent unit totals the unit of public
        # total it lies in, whose finest units are proposed uniformly (O(1) however many
        # there are) with the Hastings ratio w_new / w_old of their shares. Returns the unit
        # (-1: a share that underflowed, never proposed into) and the log ratio.
        u = int(x_i[0])
        log_ratio = 0.0
        if latent:
            g = public_unit[u]
            a, b = group_start[g], group_start[g + 1]
            new = group_units[a + rng.integers(0, b - a)]
            w_new, w_old = theta[share_off + new], theta[share_off + u]
            if not w_new > 0.0:
                return -1, -math.inf
            log_ratio = math.log(w_new) - math.log(w_old)  # w_old > 0: x_i lies there
            u = new
            out[0] = u
        return u, log_ratio

    return _UnitDraws(unit_in, propose_unit)


def _cell_draws(jit, prior_unit, cells: int):
    """A record's cell given its unit, from the row of ``p`` of its finest prior level:
    ``cell_of(rng, theta, u)`` by a scan, ``cell_from_table(rng, table, u)`` from the
    per-sweep categorical tables ``prepare(theta)`` builds (the same cell for the same
    uniform)."""
    prior_rows = int(prior_unit.max() + 1)  # rows of the finest prior level's p
    guide_size = dw.random.guide_size(cells)

    @jit
    def cell_of(rng, theta, u):
        # the cell from the row of p of the unit's finest prior level (a scan: O(cells); the
        # reference for the prepared draw below)
        row = prior_unit[u] * cells
        draw, acc = rng.random(), 0.0
        for c in range(cells - 1):
            acc += theta[row + c]
            if draw < acc:
                return c
        return cells - 1

    @jit
    def prepare(theta):
        # one categorical table per row of the finest prior level's p, built once per sweep
        # (O(rows x cells)); each record's cell is then drawn in O(1), not by a scan
        cumulative = np.empty((prior_rows, cells))
        guide = np.empty((prior_rows, guide_size), dtype=np.int32)
        for r in range(prior_rows):
            dw.random.fill_categorical_table(theta[r * cells:(r + 1) * cells], cumulative[r],
                                             guide[r])
        return cumulative, guide

    @jit
    def cell_from_table(rng, table, u):
        # the scan's cell for the same uniform, bit for bit: dw.random.categorical's lookup
        # written out on the 2-d table (no row views built per record)
        row = prior_unit[u]
        cumulative, guide = table
        draw = rng.random()
        c = guide[row, int(draw * guide_size)]
        while c < cells - 1 and not draw < cumulative[row, c]:
            c += 1
        return c

    return cell_of, cell_from_table, prepare


def _record_draws(jit, cumulative, unit_in, cell_of, cell_from_table, share_off: int):
    """A record drawn from the model: its public unit by the totals' shares, its finest unit
    (when latent), then its cell by a scan (``draw_record``) or from the sweep's table
    (``draw_from_table``)."""
    publics = cumulative.shape[0]
    latent = share_off >= 0

    @jit
    def draw_unit(rng, theta):
        g = min(np.searchsorted(cumulative, rng.random(), side="right"), publics - 1)
        return unit_in(rng, theta, g) if latent else g

    @jit
    def draw_record(rng, theta, out):
        u = draw_unit(rng, theta)
        out[0] = u
        out[1] = cell_of(rng, theta, u)

    @jit
    def draw_from_table(rng, theta, table, out):
        u = draw_unit(rng, theta)
        out[0] = u
        out[1] = cell_from_table(rng, table, u)

    return draw_record, draw_from_table


def _proposals(jit, propose_unit, cell_of, cell_from_table, share_off: int):
    """The proposals that keep what is public: the unit (:func:`_unit_draws`), then the cell
    drawn from the model given it (its ratio cancels), by a scan or from the sweep's
    table."""
    latent = share_off >= 0

    @jit
    def propose_record(rng, theta, x_i, out):
        u, log_ratio = propose_unit(rng, theta, x_i, out)
        if u >= 0:
            out[1] = cell_of(rng, theta, u)
        return log_ratio

    @jit
    def propose_from_table(rng, theta, table, x_i, out):
        # Every unit's total public (the usual case): the unit stays and only the cell is
        # drawn, with no call returning a (unit, ratio) tuple: that call and a row view per
        # record cost the sweep more than half its time per record at 10^6 records
        # (benchmarks/census_profile.py); the same draws.
        if not latent:
            out[1] = cell_from_table(rng, table, int(x_i[0]))
            return 0.0
        u, log_ratio = propose_unit(rng, theta, x_i, out)
        if u >= 0:
            out[1] = cell_from_table(rng, table, u)
        return log_ratio

    return propose_record, propose_from_table


def _statistic(jit, prior_unit, cells: int, share_off: int):
    """``valid(x_i)`` (the record support) and the model statistic ``census_counts(x_i,
    out)``, declared sparse: the record's cell of the finest prior level's counts, and its
    finest unit's count when latent."""
    units = prior_unit.shape[0]
    latent = share_off >= 0
    fine = int(prior_unit.max() + 1) * cells
    nnz = 2 if latent else 1

    @jit
    def valid(x_i):
        return (0 <= x_i[0] < units and x_i[0] == np.floor(x_i[0])
                and 0 <= x_i[1] < cells and x_i[1] == np.floor(x_i[1]))

    @jit
    def entries(x_i, index, value):
        if not valid(x_i):
            return 0
        u = int(x_i[0])
        index[0] = prior_unit[u] * cells + int(x_i[1])
        value[0] = 1.0
        if latent:
            index[1] = fine + u
            value[1] = 1.0
        return nnz

    @jit
    def census_counts(x_i, out):
        out[:] = 0.0
        if valid(x_i):
            u = int(x_i[0])
            out[prior_unit[u] * cells + int(x_i[1])] = 1.0
            if latent:
                out[fine + u] = 1.0

    dw.declare_sparse(census_counts, entries, nnz=nnz)
    return valid, census_counts


def _on_simplex(jit, arrays: _Arrays, cells: int, rows: int, share_off: int):
    """The theta support: every row of every prior level's ``p``, and each public unit's
    shares when latent, on the simplex."""
    group_start, group_units = arrays.group_start, arrays.group_units
    latent = share_off >= 0

    @jit
    def on_simplex(theta):
        for r in range(rows):
            total = 0.0
            for c in range(cells):
                v = theta[r * cells + c]
                if not v >= 0.0:
                    return False
                total += v
            if abs(total - 1.0) > 1e-9:
                return False
        if latent:
            for g in range(group_start.shape[0] - 1):
                total = 0.0
                for j in range(group_start[g], group_start[g + 1]):
                    v = theta[share_off + group_units[j]]
                    if not v >= 0.0:
                        return False
                    total += v
                if abs(total - 1.0) > 1e-9:
                    return False
        return True

    return on_simplex
