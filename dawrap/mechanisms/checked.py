"""Bounds-checked copies of a compiled statistic, for the publication path.

numba does not check array indices: a statistic that writes ``out[k]`` for a ``k`` read from a
record (a category, say) writes into unrelated memory when a record holds an unexpected value,
and the process then crashes, or goes on with corrupted memory, depending on that value. A
secure release (:meth:`dawrap.Mechanism.release` with ``secure=True``) therefore never runs
the user's compiled function itself. It runs :func:`bounds_checked`'s copy: the same Python
function compiled again with numba's ``boundscheck=True``, so that every index of every array
(``out``, the record ``x_i``, any array it makes) is checked and raises ``IndexError`` when out
of range; and every compiled function the statistic calls through a global name or its closure
is replaced by such a copy too, recursively.

What the copy may reach is decided from the function's code alone, before any record is read:
numba-compiled functions (copied), the modules ``numpy``, ``math`` and ``cmath`` and their
functions, numbers, strings, arrays and tuples of them. Anything else (a module of your own, a
``cfunc``, an ``@intrinsic``, ctypes, ``numba.carray``) could reach memory without an index
check, so a statistic that names one is refused with a TypeError, for every input alike.

Examples
--------
An index read from the record: the copy raises IndexError where the original would write
outside ``out``.

>>> import numba, numpy as np
>>> from dawrap.mechanisms.checked import bounds_checked
>>> @numba.njit
... def one_hot(x_i, out):
...     out[int(x_i[0])] = 1.0
>>> checked = bounds_checked(one_hot)
>>> out = np.zeros(3)
>>> checked(np.array([1.0]), out); out
array([0., 1., 0.])
>>> checked(np.array([1e6]), out)
Traceback (most recent call last):
...
IndexError: index is out of bounds
"""
from __future__ import annotations

import cmath
import functools
import math
import types

import numba
import numpy as np
from numba.core.registry import CPUDispatcher

__all__ = ["bounds_checked"]

#: The modules a checked statistic may use by name (their functions are numba's own,
#: bounds-safe implementations).
SAFE_MODULES = (np, math, cmath)


@functools.lru_cache(maxsize=64)
def bounds_checked(statistic):
    """A copy of the ``numba.njit`` function ``statistic`` in which every array index is
    checked (module docstring); one copy per function, compiled on its first call.

    Parameters
    ----------
    statistic : numba.njit function
        The function to copy.

    Returns
    -------
    numba.njit function
        The same computation, raising ``IndexError`` on any index out of range.

    Raises
    ------
    TypeError
        If ``statistic``, or a function it calls, names something that could reach memory
        without an index check (module docstring).

    Examples
    --------
    >>> import numba, numpy as np
    >>> from dawrap.mechanisms.checked import bounds_checked
    >>> @numba.njit
    ... def clamped(x_i, out):
    ...     out[0] = min(x_i[0], 3.0)
    >>> out = np.zeros(1)
    >>> bounds_checked(clamped)(np.array([7.0]), out); out
    array([3.])
    """
    return _copy(statistic, {}, getattr(statistic, "__name__", "statistic"))


def _copy(dispatcher, copies: dict, where: str):
    if dispatcher in copies:  # recursion, or a helper called from two places
        return copies[dispatcher]
    func = dispatcher.py_func
    names = func.__globals__.copy()  # the copy resolves its global names here
    cells = tuple(types.CellType() for _ in func.__code__.co_freevars)
    clone = types.FunctionType(func.__code__, names, func.__name__, func.__defaults__,
                               cells or None)
    clone.__kwdefaults__ = func.__kwdefaults__
    copies[dispatcher] = checked = numba.njit(boundscheck=True, nogil=True)(clone)
    for name in _referenced(func.__code__):
        if name in names:
            names[name] = _allowed(names[name], copies, f"{where}: global {name!r}")
    for name, cell, original in zip(func.__code__.co_freevars, cells, func.__closure__ or ()):
        cell.cell_contents = _allowed(original.cell_contents, copies,
                                      f"{where}: closure variable {name!r}")
    for value in (*(func.__defaults__ or ()), *(func.__kwdefaults__ or {}).values()):
        _allowed(value, copies, f"{where}: a default argument")
    return checked


def _referenced(code) -> set:
    """Every name ``code`` (and the functions defined inside it) looks up."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _referenced(const)
    return names


def _allowed(value, copies: dict, where: str):
    """``value`` as the checked copy may see it: compiled functions copied, safe values as
    they are; a TypeError naming ``where`` for anything else."""
    if isinstance(value, CPUDispatcher):
        return _copy(value, copies, getattr(value, "__name__", where))
    if value is None or isinstance(value, (bool, int, float, complex, str, np.number,
                                           np.bool_)):
        return value
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
        return value  # numba freezes it as a read-only constant; its indexing is checked
    if isinstance(value, tuple):
        return tuple(_allowed(v, copies, where) for v in value)
    if any(value is module for module in SAFE_MODULES):
        return value
    if callable(value) and any(getattr(module, getattr(value, "__name__", ""), None) is value
                               for module in SAFE_MODULES):
        return value  # e.g. ``from math import floor``
    raise TypeError(f"secure release: the statistic uses {where}, a "
                    f"{type(value).__module__}.{type(value).__qualname__}; a statistic for "
                    f"publication may call only numba.njit functions, numpy, math and cmath, "
                    f"and use numbers, strings and numeric arrays, so that every memory access "
                    f"it makes can be bounds checked (dawrap.mechanisms.checked). Pass what "
                    f"it needs by name (from mymodule import helper) or as a constant")
