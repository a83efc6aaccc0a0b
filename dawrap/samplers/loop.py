r"""The one run loop of every compiled sampler, and the step protocol it drives.

Every compiled sampler, the record-level chain (:mod:`dawrap.samplers.record`) and the
sufficient-statistic kernels (:mod:`dawrap.samplers.suffstat`,
:mod:`~dawrap.samplers.suffstat_marginal`, :mod:`~dawrap.samplers.suffstat_multinomial`), is
one function in BlackJAX's shape,

.. code-block:: text

    step(rng, state, inputs) -> (state, info)

``state`` a NamedTuple of arrays the step updates in place (``theta``, the statistic kept
with each draw, ``KEPT_STATISTIC(state)``, and the sampler's own fields), ``inputs`` a
NamedTuple of plain data (the release, ``n``, the noise, the sampler's settings) and ``info`` a
NamedTuple
whose first field is ``status`` (:mod:`dawrap.samplers.status`: ``OK``, or why the step
stopped) and whose other fields are the *sample stats* of the iteration, numbers, declared
by the field names themselves (the runner names ``sample_stats`` after them).

What depends on the iteration number (a warm-up schedule: adaptation phases, a proposal
frozen when warm-up ends, the record chain's tuning flag and periodic refresh) is not the
step's business: a sampler that has one gives ``schedule(state, it, tune)``, called before
each step, which changes the state in place (:func:`unchanged` for the others). In place, not by returning a state: a function that returns
a NamedTuple of arrays hands back a new reference to each array, a cost per iteration that a
cheap kernel notices (5-10% of a marginal iteration, ``benchmarks/results/suffstat_loop_ab.md``).
For the same reason the sufficient-statistic kernels bind their step with
``inline=("step",)`` (:func:`dawrap._templates.bind`): numba types the step into the loop,
so the state is not handed to a call and back each iteration: 3-9% faster than a called
step, the same draws, a shorter compilation; the marginal kernels are then 1.5-6% slower
than before this protocol, from 9-12% (``benchmarks/results/suffstat_loop_ab_inline.md``).
The record chain's step, a sweep over the n records, is called as it is.

:func:`run` is a template (:mod:`dawrap._templates`) bound per kernel to its ``STEP`` and
``SCHEDULE`` (their bound copies: a built-in model's loop loads from numba's disk cache like
its step). It runs iterations ``start..stop-1`` and keeps iteration ``it >= tune`` in row
``it - tune`` of the outputs (:func:`keep`): theta, the info's sample stats (one column
each), and, when ``out_s`` has rows, the kept statistic (``KEPT_STATISTIC``: the released part
``s_centre`` for the sufficient-statistic kernels, the running total for the record chain).

Examples
--------
A step that counts its calls, and the loop bound to it:

>>> from typing import NamedTuple
>>> import numba, numpy as np
>>> from dawrap.compile import templates as _templates
>>> from dawrap.samplers import loop
>>> class Info(NamedTuple):
...     status: int
...     draw: float
>>> @numba.njit
... def step(rng, state, inputs):
...     state.theta[0] += inputs
...     return state, Info(0, state.theta[0])
>>> class State(NamedTuple):
...     theta: np.ndarray
...     s_centre: np.ndarray
>>> run = loop.bind(step).run
>>> out_theta, out_stats = np.empty((3, 1)), np.empty((3, 1))
>>> state, done, status = run(np.random.default_rng(0), State(np.zeros(1), np.zeros(1)), 2.0,
...                           0, 5, 2, out_theta, out_stats, np.empty((0, 1)))
>>> done, status, out_theta[:, 0].tolist(), out_stats[:, 0].tolist()
(5, 0, [6.0, 8.0, 10.0], [6.0, 8.0, 10.0])
"""
from __future__ import annotations

import numba
from numba import literal_unroll, types
from numba.extending import overload

from ..compile import templates as _templates
from .arrays import copy_into
from .status import OK

__all__ = ["run", "keep", "unchanged", "released_statistic", "bind", "sample_stat_names",
           "as_floats", "STEP", "SCHEDULE", "KEPT_STATISTIC"]

STEP = _templates.slot("(rng, state, inputs) -> (state, info): one iteration; info's first "
                       "field is the status, the others the sample stats")
SCHEDULE = _templates.slot("(state, it, tune): what the iteration number changes, in place, "
                           "before the step (unchanged: nothing)")
KEPT_STATISTIC = _templates.slot("(state) -> the statistic kept with a draw (when out_s has "
                                 "rows)")


@numba.njit(nogil=True, cache=True)
def unchanged(state, it, tune):
    """The schedule of a kernel without warm-up: nothing changes."""


@numba.njit(nogil=True, cache=True)
def released_statistic(state):
    """What the sufficient-statistic kernels keep with a draw: the released part of the
    statistic, ``state.s_centre``."""
    return state.s_centre


def as_floats(value):
    """A kernel step's info as a tuple of floats: a lone number (an acceptance probability)
    becomes a tuple of one, a tuple of floats stays as it is. Compiled code calls it through
    its overload; in Python it is the same.

    Examples
    --------
    >>> from dawrap.samplers.loop import as_floats
    >>> as_floats(0.5), as_floats((0.5, 1.0))
    ((0.5,), (0.5, 1.0))
    """
    return tuple(float(v) for v in value) if isinstance(value, tuple) else (float(value),)


@overload(as_floats, jit_options={"nogil": True})
def _as_floats(value):
    if isinstance(value, (types.Float, types.Integer, types.Boolean)):
        return lambda value: (float(value),)
    if isinstance(value, types.BaseTuple) and all(isinstance(t, types.Float)
                                                  for t in value.types):
        return lambda value: value
    raise numba.core.errors.TypingError(
        f"a kernel step's info must be a number (its acceptance probability) or a tuple of "
        f"floats (one per name in the Kernel's stats), got {value}")


def _put(out_stats, row, k, value):
    """Store one sample stat (a number) or a tuple of them from column ``k``; the next."""
    out_stats[row, k] = value
    return k + 1


@overload(_put, jit_options={"nogil": True})
def _put_overload(out_stats, row, k, value):
    if isinstance(value, types.BaseTuple):
        def put_all(out_stats, row, k, value):
            for v in value:  # (a tuple of floats: as_floats)
                out_stats[row, k] = v
                k += 1
            return k
        return put_all

    def put_one(out_stats, row, k, value):
        out_stats[row, k] = value
        return k + 1
    return put_one


def _store_stats(out_stats, row, info):
    """The info's sample stats (every field after ``status``; a field may be a tuple of
    them, as a theta kernel's info) into row ``row``, in order (by index, not through a row
    view: a view costs a reference count per kept draw)."""
    k, first = 0, True  # the status first: not stored
    for value in literal_unroll(info):
        if first:
            first = False
        else:
            k = _put(out_stats, row, k, value)


def keep(row, state, info, out_theta, out_stats, out_s):
    """A kept draw into row ``row`` of the outputs: ``state.theta``, the info's sample stats
    and, if ``out_s`` has rows, ``KEPT_STATISTIC(state)`` (the one place a draw is stored;
    a runner that loops in Python, as the record chain's parallel sweep, calls it too)."""
    copy_into(out_theta[row], state.theta)
    _store_stats(out_stats, row, info)
    if out_s.shape[0] > 0:
        copy_into(out_s[row], KEPT_STATISTIC(state))


def run(rng, state, inputs, start, stop, tune, out_theta, out_stats, out_s):
    """Iterations ``start..stop-1`` of ``STEP``; iteration ``it >= tune`` is kept in row
    ``it - tune`` of ``out_theta`` (theta), ``out_stats`` (the info's sample stats) and, if
    it has rows, ``out_s`` (``KEPT_STATISTIC(state)``). Returns ``(state, iterations done,
    status)``: done is ``stop`` unless a step's status was not ``OK``."""
    for it in range(start, stop):
        SCHEDULE(state, it, tune)
        state, info = STEP(rng, state, inputs)
        if info.status != OK:
            return state, it, info.status
        if it >= tune:
            keep(it - tune, state, info, out_theta, out_stats, out_s)
    return state, stop, OK


#: The loop's templates.
TEMPLATES = (_store_stats, keep, run)


def bind(step, schedule=unchanged, kept_statistic=released_statistic):
    """The loop's templates bound to one compiled ``step`` (its warm-up ``schedule``, and
    what it keeps with a draw): a namespace whose ``run`` is the compiled loop and ``keep``
    its storing of one draw (cached on disk when the step is)."""
    return _templates.bind(TEMPLATES, {"STEP": step, "SCHEDULE": schedule,
                                       "KEPT_STATISTIC": kept_statistic}, inline=("keep",))


def sample_stat_names(info_type) -> tuple:
    """The sample stats an info NamedTuple type declares: its fields after ``status``."""
    fields = info_type._fields
    if not fields or fields[0] != "status":
        raise TypeError(f"{info_type.__name__}: a step's info must have 'status' as its first "
                        f"field, got {fields}")
    return fields[1:]
