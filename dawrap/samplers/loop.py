r"""The one run loop of the sufficient-statistic samplers, and the step protocol it drives.

Every compiled sufficient-statistic kernel (:mod:`dawrap.samplers.suffstat`,
:mod:`~dawrap.samplers.suffstat_marginal`, :mod:`~dawrap.samplers.suffstat_multinomial`) is
one function in BlackJAX's shape,

.. code-block:: text

    step(rng, state, inputs) -> (state, info)

``state`` a NamedTuple of arrays the step updates in place (``theta``, ``s_centre`` the
released part of the statistic, and the kernel's own fields), ``inputs`` a NamedTuple of
plain data (the release, ``n``, the noise, the kernel's settings) and ``info`` a NamedTuple
whose first field is ``status`` (:mod:`dawrap.samplers.status`: ``OK``, or why the step
stopped) and whose other fields are the *sample stats* of the iteration, numbers, declared
by the field names themselves (the runner names ``sample_stats`` after them).

What depends on the iteration number (a warm-up schedule: adaptation phases, a proposal
frozen when warm-up ends) is not the step's business: a kernel that has one gives
``schedule(state, it, tune)``, called before each step, which changes the state in place
(:func:`unchanged` for the others). In place, not by returning a state: a function that returns
a NamedTuple of arrays hands back a new reference to each array, a cost per iteration that a
cheap kernel notices (5-10% of a marginal iteration, ``benchmarks/results/suffstat_loop_ab.md``).

:func:`run` is a template (:mod:`dawrap._templates`) bound per kernel to its ``STEP`` and
``SCHEDULE`` (their bound copies: a built-in model's loop loads from numba's disk cache like
its step). It runs iterations ``start..stop-1`` and keeps iteration ``it >= tune`` in row
``it - tune`` of the outputs: theta, the info's sample stats (one column each), and, when
``out_s`` has rows, the released statistic.

Examples
--------
A step that counts its calls, and the loop bound to it:

>>> from typing import NamedTuple
>>> import numba, numpy as np
>>> from dawrap import _templates
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
from numba import literal_unroll

from .. import _templates
from .arrays import copy_into
from .status import OK

__all__ = ["run", "unchanged", "bind", "sample_stat_names", "STEP", "SCHEDULE"]

STEP = _templates.slot("(rng, state, inputs) -> (state, info): one iteration; info's first "
                       "field is the status, the others the sample stats")
SCHEDULE = _templates.slot("(state, it, tune): what the iteration number changes, in place, "
                           "before the step (unchanged: nothing)")


@numba.njit(nogil=True, cache=True)
def unchanged(state, it, tune):
    """The schedule of a kernel without warm-up: nothing changes."""


def _store_stats(out_stats, row, info):
    """The info's sample stats (every field after ``status``) into row ``row``, in order (by
    index, not through a row view: a view costs a reference count per kept draw)."""
    k = -1  # the status first: not stored
    for value in literal_unroll(info):
        if k >= 0:
            out_stats[row, k] = value
        k += 1


def run(rng, state, inputs, start, stop, tune, out_theta, out_stats, out_s):
    """Iterations ``start..stop-1`` of ``STEP``; iteration ``it >= tune`` is kept in row
    ``it - tune`` of ``out_theta`` (theta), ``out_stats`` (the info's sample stats) and, if
    it has rows, ``out_s`` (``state.s_centre``). Returns ``(state, iterations done,
    status)``: done is ``stop`` unless a step's status was not ``OK``."""
    for it in range(start, stop):
        SCHEDULE(state, it, tune)
        state, info = STEP(rng, state, inputs)
        if info.status != OK:
            return state, it, info.status
        if it >= tune:
            row = it - tune
            copy_into(out_theta[row], state.theta)
            _store_stats(out_stats, row, info)
            if out_s.shape[0] > 0:
                copy_into(out_s[row], state.s_centre)
    return state, stop, OK


#: The loop's templates.
TEMPLATES = (_store_stats, run)


def bind(step, schedule=unchanged):
    """The loop's templates bound to one compiled ``step`` (and its warm-up ``schedule``):
    a namespace whose ``run`` is the compiled loop (cached on disk when the step is)."""
    return _templates.bind(TEMPLATES, {"STEP": step, "SCHEDULE": schedule})


def sample_stat_names(info_type) -> tuple:
    """The sample stats an info NamedTuple type declares: its fields after ``status``."""
    fields = info_type._fields
    if not fields or fields[0] != "status":
        raise TypeError(f"{info_type.__name__}: a step's info must have 'status' as its first "
                        f"field, got {fields}")
    return fields[1:]
