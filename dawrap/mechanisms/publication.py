r"""The publication path: ``mechanism.release(x, secure=True)``. Privacy-critical, kept alone
in this module so that it can be reviewed on its own.

A secure release is differentially private for *every* input, and nothing it raises depends on
the confidential values:

1. everything that can refuse the release is checked before a record is read: no seed (the
   noise comes from the operating system's cryptographic source), a mechanism with exact
   integer noise (``Geometric``, ``DiscreteGaussian``), a declared contribution domain
   (:mod:`dawrap.mechanisms.domains`), a statistic whose every memory access can be bounds
   checked (:mod:`dawrap.mechanisms.checked`), compiled on no records at all;
2. the records' type and shape are checked; their values never are: NaN, infinities and any
   magnitude pass through (:func:`records_for_publication`);
3. each record's contribution, computed by the bounds-checked copy of the statistic (a record
   on which it raises or indexes out of range contributes NaN), is projected onto the integer
   points of the domain (:meth:`~dawrap.mechanisms.domains.Box.project`), whose diameter the
   constructor checked against the stated sensitivity;
4. the projected contributions are summed exactly (Python integers past 2**62), records
   streamed in chunks of :data:`CONTRIBUTION_CHUNK` floats;
5. exact integer noise is added to each coordinate (:mod:`dawrap.mechanisms.discrete`).

The simulation path (``release(x, seed)``) shares the chunked contributions and refuses
records that a publication would have to project (:func:`refuse_outside_domain`).

What this module reads from the mechanism: ``name``, ``statistic``, ``size``,
``contribution`` (the bound domain or None), ``depends_on_release`` and ``_secure_noise``
(one draw of exact integer noise from the cryptographic source, or None).
"""
from __future__ import annotations

import math
import numbers

import numba
import numpy as np

from .checked import bounds_checked

__all__ = ["publish", "bounded_total", "refuse_outside_domain", "record_contributions",
           "records_for_publication", "CONTRIBUTION_CHUNK"]

#: Contributions held at once by a secure release and the simulation path's domain check:
#: records are streamed in chunks of this many floats (8 MB), so that a histogram of a
#: million cells never needs an (n, size) array.
CONTRIBUTION_CHUNK = 1 << 20


def publish(mechanism, x, seed) -> np.ndarray:
    """The secure release of ``x``: the bounded total (:func:`bounded_total`) plus exact
    integer noise from the cryptographic source; see the module docstring."""
    # Everything that can fail is checked before the data are looked at: after that, only
    # the records' type and shape can stop the release, never their values.
    if seed is not None:
        raise ValueError("secure=True draws from the operating system's cryptographic "
                         "source; a seed would make the noise predictable")
    if mechanism._secure_noise is None:
        raise ValueError(f"{mechanism.name} has no safe release path: floating-point noise "
                         f"leaks (Mironov 2012). For integer statistics use dw.Geometric "
                         f"(discrete Laplace) or dw.DiscreteGaussian with secure=True")
    if mechanism.contribution is None:
        raise ValueError(
            f"secure=True needs the {mechanism.name} mechanism's contribution domain, so that "
            f"every record's contribution can be bounded before noise is added: build it "
            f"with contribution=(lower, upper) (each coordinate of a record's contribution "
            f"an integer in [lower, upper]) or contribution=dawrap.mechanisms.Sparse(cells, "
            f"lower, upper) for histograms, e.g. dw.{type(mechanism).__name__}(statistic, ..., "
            f"contribution=(0, 1)); the stated sensitivity is checked against its diameter")
    total = bounded_total(mechanism, x)
    return np.array([v + mechanism._secure_noise() for v in total], dtype=np.float64)


def bounded_total(mechanism, x) -> list:
    """The sum over the records of ``x`` of each contribution projected onto the mechanism's
    declared domain, as exact Python integers (:meth:`dawrap.Mechanism.bounded_total`)."""
    if mechanism.contribution is None:
        raise ValueError(f"the {mechanism.name} mechanism declares no contribution domain "
                         f"(contribution=...), so it has no bounded total")
    if mechanism.depends_on_release:
        raise NotImplementedError("a statistic that depends on s_dp has no release")
    size, domain = mechanism.size, mechanism.contribution
    statistic = bounds_checked(mechanism.statistic)  # or a TypeError, whatever x holds
    records = records_for_publication(x)
    # Compiled on no records at all, so that a compilation error too comes before any
    # record is read (the types of x, not its values, decide what is compiled).
    record_contributions(records[:0], statistic, size)
    # The projection is row by row and the sum exact, so streaming the records in chunks
    # gives the same integers as one (n, size) array, in O(chunk * size) memory.
    small = records.shape[0] * domain.magnitude() < 2 ** 62
    total = np.zeros(size, dtype=np.int64) if small else [0] * size
    for chunk in _chunks(records, size):
        projected = domain.project(
            record_contributions(chunk, statistic, size)).astype(np.int64)  # |v| <= 2**53
        if small:
            total += projected.sum(axis=0)  # no int64 overflow possible
        else:  # exact, arbitrary size
            total = [t + sum(map(int, column)) for t, column in zip(total, projected.T)]
    return [int(v) for v in total]


def refuse_outside_domain(mechanism, records: np.ndarray) -> None:
    """The simulation path's refusal of records a publication would have to project: a
    ValueError unless every record's contribution already lies on the domain's points."""
    try:  # never writes outside out either, where the statistic can be checked
        statistic = bounds_checked(mechanism.statistic)
    except TypeError:
        statistic = mechanism.statistic
    for chunk in _chunks(records, mechanism.size):  # O(chunk * size) memory, as above
        contributions = record_contributions(chunk, statistic, mechanism.size)
        if not np.array_equal(mechanism.contribution.project(contributions), contributions):
            raise ValueError(
                f"x has records whose contribution to the statistic lies outside the declared "
                f"contribution domain {mechanism.contribution!r} (or is not an integer, or on "
                f"which the statistic raises or indexes an array out of range); a simulated "
                f"release refuses them, so that a study simulates only releases that could be "
                f"published; release(x, secure=True) projects them onto the domain")


def _chunks(records: np.ndarray, size: int):
    """Consecutive blocks of records whose contributions fill at most
    :data:`CONTRIBUTION_CHUNK` floats (one record at least)."""
    rows = max(1, CONTRIBUTION_CHUNK // size)
    for start in range(0, records.shape[0], rows):
        yield records[start:start + rows]


@numba.njit(nogil=True)  # takes a function argument: not cacheable, see record.py
def record_contributions(x, statistic, size):
    """Each record's contribution ``t(x_i)`` as the rows of an ``(n, size)`` array (compiled);
    a statistic that writes nothing contributes zeros, and a record on which it raises (with
    a bounds-checked statistic, :mod:`dawrap.mechanisms.checked`: also any index out of
    range) contributes a row of NaN, which the projection maps like any NaN."""
    out = np.empty((x.shape[0], size))
    buf = np.empty(size)
    for i in range(x.shape[0]):
        buf[:] = 0.0
        if not _statistic_returned(statistic, x[i], buf):
            buf[:] = np.nan  # discard what it wrote before raising
        out[i] = buf
    return out


@numba.njit(nogil=True)
def _statistic_returned(statistic, x_i, buf):
    """Whether ``statistic(x_i, buf)`` returned (``False``: it raised).

    The ``try`` sits in its own function on purpose: with numba 0.68 a ``try`` inside the
    record loop caught the first record's exception but let the second one escape (a
    release then raised exactly when two records were bad, which reveals the data); one
    call per record leaves no exception state behind."""
    try:
        statistic(x_i, buf)
        return True
    except Exception:  # noqa: BLE001 - numba catches only Exception subclasses anyway
        return False


def _real(value) -> float:
    """One element of an object array as a float: no value can make this raise (huge
    integers become +-inf, which the projection clamps)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"x must hold real numbers only, found an element of type "
                        f"{type(value).__name__}")
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def records_for_publication(x) -> np.ndarray:
    """Records as a float64 ``(n, record_size)`` array, checking only what does not depend on
    the values (the type and the shape): NaN, infinities and any magnitude pass through, for
    the projection onto the contribution domain to handle."""
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        raise ValueError("x must be a rectangular array of real numbers") from None
    if arr.dtype == object:
        arr = np.vectorize(_real, otypes=[np.float64])(arr) if arr.size else arr
    elif arr.dtype.kind not in "biuf":
        raise TypeError(f"x must be an array of numbers, got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"x must have shape (n, record_size) or (n,) with n >= 1, "
                         f"got shape {arr.shape}")
    with np.errstate(all="ignore"):  # float128 beyond float64's range becomes inf: no warning
        return np.ascontiguousarray(arr, dtype=np.float64)
