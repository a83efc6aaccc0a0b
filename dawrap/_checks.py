"""Argument checks shared by the public entry points.

Every check raises ``ValueError`` or ``TypeError`` with a message that names the argument and
says what was expected, so a bad input never reaches compiled code.
"""
from __future__ import annotations

import functools
import inspect
import numbers
import reprlib
from collections.abc import Callable

import numpy as np
from numba.core.errors import NumbaError
from numba.core.registry import CPUDispatcher

__all__ = [
    "is_real",
    "as_count",
    "as_choice",
    "MAX_COUNT",
    "as_positive_float",
    "as_float_vector",
    "require_njit",
    "n_positional",
    "require_arity",
    "call_user",
    "shown",
    "hint_misplaced",
]


#: An argument as an error message shows it: at most this many characters.
SHOWN_CHARS = 80


def shown(value) -> str:
    """``value`` as an error message shows it: an array by its shape and dtype, anything
    else by a repr cut to :data:`SHOWN_CHARS` characters (an array of a million entries
    passed by mistake must not fill the terminal)."""
    if isinstance(value, np.ndarray) and value.size > 10:
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    text = reprlib.repr(value) if isinstance(value, (list, tuple, dict, set, frozenset)) \
        else repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 3] + "..."


def hint_misplaced(target: Callable, into: str):
    """A decorator: a call of the decorated function with a keyword argument that it does
    not take but ``target`` does (e.g. ``dw.sample``'s ``draws`` given to ``calibrate``)
    raises a TypeError saying to pass it inside ``into`` (``sample_kwargs``), instead of
    Python's bare "unexpected keyword argument"."""
    def decorate(func):
        accepted = inspect.signature(func).parameters

        @functools.wraps(func)
        def checked(*args, **kwargs):
            misplaced = [k for k in kwargs if k not in accepted
                         and k in inspect.signature(target).parameters]
            if misplaced:
                given = ", ".join(f"{k}={shown(kwargs[k])}" for k in misplaced)
                raise TypeError(f"{func.__name__}() takes no {', '.join(misplaced)}: pass "
                                f"{into}={{{', '.join(repr(k) + ': ...' for k in misplaced)}}}"
                                f" to set {target.__name__}()'s arguments (got {given})")
            return func(*args, **kwargs)
        return checked
    return decorate


def is_real(value) -> bool:
    """A Python or NumPy real number (not a bool): what a user function must return."""
    return isinstance(value, (numbers.Real, np.floating, np.integer)) and \
        not isinstance(value, (bool, np.bool_))


#: Largest ``n``, ``draws``, ``tune``, ``sweeps``, ``checkpoint_every`` and ``interweave``
#: accepted: 2**53, the largest count float64 holds exactly (the samplers compute with ``n`` as
#: a float) and far from int64 overflow in the compiled loops (``tune + draws`` iterations).
MAX_COUNT = 2 ** 53


def as_count(value, name: str, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` >= ``minimum`` (and <= ``maximum`` if given; NumPy
    integers too, bools not) or raise naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {shown(value)} "
                        f"of type {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        most = "2**53" if maximum == MAX_COUNT else f"{maximum}"
        raise ValueError(f"{name} must be an integer >= {minimum} and at most {most}, got "
                         f"{value}")
    return int(value)


def as_choice(value, name: str, options: tuple) -> str:
    """Return ``value`` if it is one of the strings ``options``, else raise naming ``name``
    (TypeError for a non-string: on a NumPy array ``in`` would be ambiguous)."""
    allowed = " or ".join(map(repr, options)) if len(options) == 2 else f"one of {options}"
    if not isinstance(value, str):
        raise TypeError(f"{name} must be {allowed}, got {shown(value)} of type "
                        f"{type(value).__name__}")
    if value not in options:
        raise ValueError(f"{name} must be {allowed}, got {value!r}")
    return str(value)


def as_positive_float(value, name: str) -> float:
    """Return ``value`` as a finite float > 0 or raise naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive real number, got {shown(value)} "
                        f"of type {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value) or value <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def as_float_vector(value, name: str, size: int | None = None) -> np.ndarray:
    """Return ``value`` as a finite 1-d float64 array (scalars become length 1).

    Integer input is valid and converted exactly; booleans, strings and objects are not.
    """
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real number or an array of real numbers, "
                        f"got dtype {arr.dtype}")
    arr = np.atleast_1d(arr.astype(np.float64))
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a scalar or a 1-d array, got shape {arr.shape}")
    if size is not None and arr.shape[0] != size:
        raise ValueError(f"{name} must have {size} value(s), got {arr.shape[0]}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {shown(arr)} with "
                         f"{int(np.sum(~np.isfinite(arr)))} non-finite entries")
    return np.ascontiguousarray(arr)


def require_njit(func, name: str, signature: str) -> CPUDispatcher:
    """Check that ``func`` is a ``numba.njit`` function, naming ``name`` otherwise."""
    if not isinstance(func, CPUDispatcher):
        raise TypeError(f"{name} must be a numba.njit-compiled function {signature}, "
                        f"got {type(func).__name__}; decorate it with @numba.njit")
    return func


def n_positional(func) -> int:
    """Number of positional parameters of a Python or numba function."""
    py = getattr(func, "py_func", func)
    params = inspect.signature(py).parameters.values()
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


def require_arity(func, name: str, signature: str, count: int) -> None:
    """Check that ``func`` can be called with ``count`` positional arguments.

    A function of the wrong arity would otherwise pass registration and fail much later,
    inside compiled code, with a numba typing error that names neither the function nor the
    expected signature. Callables whose signature Python cannot inspect are let through.
    """
    py = getattr(func, "py_func", func)
    try:
        sig = inspect.signature(py)
    except (TypeError, ValueError):  # some builtins and extension callables
        return
    try:
        sig.bind(*range(count))
    except TypeError:
        takes = n_positional(func)
        raise TypeError(f"{name} must take {signature} ({count} positional argument"
                        f"{'s' if count != 1 else ''}), but {getattr(py, '__name__', name)}"
                        f"{sig} takes {takes}") from None


def call_user(func, name: str, *args):
    """Call a user function once, turning a numba compile failure into a TypeError naming it.

    A user's compiled function with a stable key is called through a cached wrapper
    (:func:`dawrap.compile.templates.cached_caller`): in a later process its code loads from the
    disk cache instead of compiling again."""
    from .compile.templates import cached_caller

    try:
        return cached_caller(func, len(args))(*args)
    except NumbaError as err:
        first = str(err).strip().splitlines()
        raise TypeError(f"{name} could not be compiled by numba for arguments "
                        f"({', '.join(type(a).__name__ for a in args)}): "
                        f"{first[0] if first else err}") from err


def scale_vector(scale, name: str) -> np.ndarray:
    """A positive proposal scale: one value, or one per theta entry."""
    arr = np.atleast_1d(np.asarray(scale, dtype=np.float64))
    if arr.ndim != 1 or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ValueError(f"{name} must be a positive number or a vector of positive numbers "
                         f"(one per theta entry), got {scale!r}")
    return arr
