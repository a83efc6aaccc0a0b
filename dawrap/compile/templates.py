"""Compiled templates, bound to a model's functions, and cached on disk when that is safe.

numba can cache a compiled function on disk only if nothing in its cache key changes from one
process to the next. A function that receives the model's compiled functions as *arguments*
(as the record sampler once did) never qualifies: a function-typed argument is keyed by the
identity of its dispatcher, and a closure over dispatchers by their per-process pickles
(``docs/compile_cache.md``). So every process compiled the whole chain again, seconds to tens
of seconds before the first draw.

A *template* is a plain Python function that calls the model's functions by global names in
capitals (``DRAW_RECORD``, ``MECH_STAT``, ...) and reads the problem's sizes and flags the
same way (``RECORD_SIZE``, ``USER_PROPOSAL``). :func:`bind` makes one copy of a group of templates
whose globals hold one model's functions and constants, and compiles each copy with numba.
numba resolves a global call while typing and links the callee's code into the caller, and it
freezes global numbers as constants, exactly as it does closure variables: the machine code is
what a hand-written function for that model would give. The cache key then holds only the
argument types and the bytecode.

The names a module's templates read are declared as *slots*: ``DRAW_RECORD =
slot("(rng, theta, out): ...")`` at the module's top. :func:`bind` checks the names it is
given against them before compiling: a name no template of the group declares (a misspelt
``RECORD_SIZ``) or a slot a template reads and the names lack is an error naming it, where an
undeclared placeholder would be compiled in as it stands (a ``RECORD_SIZE`` of 0). Modules
that declare no slots are not checked.

A bound copy is cached on disk when everything bound into it has a *stable key*
(:func:`stable_key`): numbers, strings, tuples, arrays, compiled functions defined in the
dawrap package itself (the built-in models included), closures over such values too, and a
user's compiled functions defined in a file, keyed by their code, the functions they call and
the globals and closure values they read (:mod:`dawrap.compile.user_keys`). The key, together
with a digest of the package's source (:func:`dawrap.compile.source.source_digest`), names
the copy (its ``__qualname__``, which names numba's index file), so two bindings never share
cache entries, and any change to the package's source or to a user's function starts new
ones: a stale chain never runs. What has no key (a function typed at a prompt, a closure over
an object) compiles once per process, and every later binding with the same values reuses
it.
"""
from __future__ import annotations

import difflib
import hashlib
import threading
import types

import numba
import numpy as np
from numba.core.registry import CPUDispatcher

from . import source, user_keys

__all__ = ["bind", "cache_tag", "stable_key", "slot", "Slot", "SlotError", "cached_caller",
           "closure_jit"]

#: The largest constant array numba compiles into a function's code (bytes): a closure over
#: a larger one is read through a pointer of the process, and numba then refuses (with a
#: warning) to cache the function on disk.
FROZEN_ARRAY_BYTES = 10 ** 6


def closure_jit(*arrays):
    """``numba.njit(nogil=True)`` for a closure of a factory (a model's, a mechanism's) over
    numbers and ``arrays``: cached on disk (numba keys a closure by its captured values),
    unless an array is too large to be compiled into the code. The compiled function's
    ``disk_cached`` says which (a closure that calls it can be cached only if it is).

    Examples
    --------
    >>> import numpy as np
    >>> from dawrap.extend import closure_jit
    >>> table = np.zeros(200_000)      # 1.6 MB: read through a pointer, not cached on disk
    >>> @closure_jit(table)
    ... def at(i):
    ...     return table[i] + i
    >>> at(2), at.disk_cached
    (2.0, False)
    """
    cache = all(np.asarray(a).nbytes <= FROZEN_ARRAY_BYTES for a in arrays)
    decorate = numba.njit(nogil=True, cache=cache)

    def jit(function):
        compiled = decorate(function)
        compiled.disk_cached = cache
        return compiled

    return jit

class Slot:
    """A global name a template reads and :func:`bind` must give: declared at the top of
    the template's module as ``NAME = slot("what it is")``."""
    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what

    def __repr__(self) -> str:
        return f"slot({self.what!r})"


def slot(what: str) -> Slot:
    """Declare a template slot; ``what`` says what :func:`bind` must put there (a
    function's signature, a size, a flag).

    Examples
    --------
    >>> from dawrap.compile import templates
    >>> templates.slot("(rng, theta, out): one record drawn from f(. | theta)")
    slot('(rng, theta, out): one record drawn from f(. | theta)')
    """
    return Slot(what)


class SlotError(ValueError):
    """A binding that gives a name no template declares, or lacks a slot one reads."""


def check_slots(templates, names: dict) -> None:
    """Raise :class:`SlotError` when ``names`` holds a name that is no declared slot of the
    templates' modules (with the closest declared one), or lacks a slot that one of the
    templates reads. Templates whose modules declare no slots are not checked (nor, in a
    group with one of them, are the names given)."""
    declared, undeclared = {}, False
    for template in templates:
        slots = {k: v for k, v in template.__globals__.items() if isinstance(v, Slot)}
        declared.update(slots)
        undeclared |= not slots
    if not declared:
        return
    modules = ", ".join(sorted({t.__module__ for t in templates}))
    for name in names:
        # (with a template of a module that declares none, any name may be one of its own)
        if name not in declared and not undeclared:
            close = difflib.get_close_matches(name, list(declared), n=1)
            hint = (f"did you mean {close[0]!r}?" if close
                    else f"the slots are {', '.join(sorted(declared))}")
            raise SlotError(f"bind: {name!r} is not a slot of the templates of {modules}; "
                            f"{hint}")
    for template in templates:
        for used in sorted(_global_names(template.__code__)):
            value = template.__globals__.get(used)
            if isinstance(value, Slot) and used not in names:
                raise SlotError(f"bind: {template.__name__} reads the slot {used!r} "
                                f"({value.what}), which the names do not give")


def _global_names(code) -> set:
    """The global (and attribute) names ``code`` and the code nested in it use."""
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _global_names(const)
    return found


#: Bound groups of this process, by the identity of what was bound (kept alive with them).
_BOUND: dict = {}
_LOCK = threading.Lock()


def bind(templates, names: dict, inline=()) -> types.SimpleNamespace:
    """Compile ``templates`` with ``names`` as their globals; a namespace of the compiled copies.

    Parameters
    ----------
    templates : sequence of functions
        Plain Python functions (not yet compiled). Within the group they call each other by
        their own names: each call reaches the bound copy.
    names : dict
        Global name -> compiled function, number, flag, tuple or array, for every capitalised
        name the templates use.
    inline : collection of str
        Templates compiled with ``inline="always"``: a bound copy that calls one of them
        takes in its code at numba's level, so a layer called only from the next one up is
        typed and optimised once, as part of its caller, not once on its own and again in
        every caller (LLVM re-optimises a callee linked into each caller). Called from
        Python, such a copy compiles as any other.

    Raises
    ------
    SlotError
        When ``names`` holds a name that no template's module declares as a :func:`slot`,
        or lacks a slot a template reads (modules that declare slots).

    Returns
    -------
    types.SimpleNamespace
        One ``numba.njit(nogil=True)`` dispatcher per template, under the template's name,
        cached on disk when the templates are dawrap's own and every value in ``names`` has
        a :func:`stable_key` (:func:`cache_tag`).
        Equal arguments return the same namespace within a process (nothing recompiles).

    Examples
    --------
    >>> import numba, numpy as np
    >>> from dawrap.compile import templates
    >>> @numba.njit
    ... def twice(v):
    ...     return 2.0 * v
    >>> def apply_all(values):          # a template: calls FUNC by its global name
    ...     out = np.empty_like(values)
    ...     for i in range(values.shape[0]):
    ...         out[i] = FUNC(values[i])
    ...     return out
    >>> bound = templates.bind([apply_all], {"FUNC": twice})
    >>> bound.apply_all(np.array([1.0, 2.5]))
    array([2., 5.])
    """
    inline = frozenset(inline)
    identity = (tuple(templates), tuple(sorted((k, _identity(v)) for k, v in names.items())),
                inline)
    with _LOCK:  # chains and calibration trials may bind from several threads at once
        if identity not in _BOUND:
            check_slots(templates, names)
            _BOUND[identity] = (_bind(templates, names, inline), list(names.values()))
        return _BOUND[identity][0]  # the values are kept alive: no id() in a key is reused


def _bind(templates, names: dict, inline=frozenset()) -> types.SimpleNamespace:
    tag = cache_tag(templates, names, inline)
    copies = {}
    namespaces = {}
    for template in templates:
        namespace = namespaces.setdefault(template.__module__,
                                          dict(template.__globals__, **names))
        func = types.FunctionType(template.__code__, namespace, template.__name__,
                                  template.__defaults__, template.__closure__)
        func.__module__, func.__doc__ = template.__module__, template.__doc__
        # The qualname names numba's cache index file: one per binding.
        func.__qualname__ = f"{template.__qualname__}__{tag or 'local'}"
        func._template_tag = tag  # what stable_key says of this copy (None: not stable)
        options = {"inline": "always"} if template.__name__ in inline else {}
        copies[template.__name__] = dispatcher = numba.njit(nogil=True, **options)(func)
        if tag is not None:
            dispatcher.enable_caching()  # in dawrap's cache folder (dawrap.compile.cache)
    for namespace in namespaces.values():  # templates call each other's bound copies
        namespace.update(copies)
    return types.SimpleNamespace(**copies)


def cache_tag(templates, names: dict, inline=frozenset()) -> str | None:
    """The name under which the copies of ``templates`` bound to ``names`` are cached on disk:
    a digest of the group, the stable keys of ``names`` and the package's source; None when
    some value has no :func:`stable_key` or a template is not dawrap's own (the copies are
    then not cached)."""
    keys = {name: stable_key(value) for name, value in names.items()}
    if any(key is None for key in keys.values()) or not all(
            map(source.defined_in_package, templates)):
        return None
    group = ",".join(f"{t.__module__}.{t.__qualname__}{'+inline' if t.__name__ in inline else ''}"
                     for t in templates)
    return _digest(group, repr(sorted(keys.items())), source.source_digest())


def _identity(value):
    """What makes two bindings the same within a process: the value for plain constants,
    the object itself otherwise (dispatchers, arrays)."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return (type(value).__name__, value)
    if isinstance(value, tuple):
        return tuple(_identity(v) for v in value)
    return ("id", id(value))


def stable_key(value):
    """A description of ``value`` that is the same in every process, or None.

    Numbers, strings, None and tuples of them describe themselves; an array by its dtype,
    shape and a hash of its bytes (up to :data:`FROZEN_ARRAY_BYTES`, contiguous); a compiled
    function defined in the dawrap package by its module, qualified name and the keys of its
    closure's values (the package's source is in :func:`cache_tag`); a user's compiled
    function by its code, the globals it reads, the functions it calls and the values it
    closes over (:func:`dawrap.compile.user_keys.function_key`), when it is defined in a file
    and all of those have keys. Anything else (a lambda, an object, a function typed at a
    prompt) has none.

    Examples
    --------
    >>> from dawrap.compile import templates
    >>> from dawrap.models import beta_binomial
    >>> templates.stable_key(beta_binomial.count)
    ('fn', 'dawrap.models.beta_binomial', 'count', ())
    >>> templates.stable_key(lambda v: v) is None
    True
    """
    return _key(value, frozenset())


def _key(value, visiting: frozenset):
    """:func:`stable_key`, with the ids of the user functions being keyed (cycles end)."""
    if isinstance(value, (bool, int, float, str, type(None), np.integer, np.floating)):
        return (type(value).__name__, repr(value))
    if isinstance(value, tuple):
        keys = tuple(_key(v, visiting) for v in value)
        return None if any(k is None for k in keys) else keys
    if isinstance(value, np.ndarray):
        # numba freezes a constant array into the code only up to 1 MB and contiguous
        # (BaseContext.make_constant_array); a larger one it reads through a pointer valid in
        # this process alone, and refuses to cache the function (with a warning).
        if value.nbytes > FROZEN_ARRAY_BYTES or not (value.flags.c_contiguous
                                                      or value.flags.f_contiguous):
            return None
        return ("array", value.dtype.str, value.shape,
                hashlib.sha256(value.tobytes()).hexdigest())
    if isinstance(value, CPUDispatcher):
        func = value.py_func
        if hasattr(func, "_template_tag"):  # a bound copy: as stable as what it was bound to
            return None if func._template_tag is None else ("bound", func.__qualname__)
        if not source.defined_in_package(func):
            return user_keys.function_key(value, _key, visiting)
        cells = tuple(_key(c.cell_contents, visiting) for c in func.__closure__ or ())
        if any(c is None for c in cells):
            return None
        return ("fn", func.__module__, func.__qualname__, cells)
    return None


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


# Templates that call FUNC with their arguments: a user's function called from Python (the
# runner's probes, the starts' plausibility evidence) runs through one of them, bound to it,
# so that its code loads from the disk cache with the chain's instead of compiling in every
# process (benchmarks/compile_profile.py).
FUNC = slot("(a, b, ...) -> result: the user's compiled function, called with call_N's "
            "N arguments")


def call_0():
    return FUNC()


def call_1(a):
    return FUNC(a)


def call_2(a, b):
    return FUNC(a, b)


def call_3(a, b, c):
    return FUNC(a, b, c)


def call_4(a, b, c, d):
    return FUNC(a, b, c, d)


def call_5(a, b, c, d, e):
    return FUNC(a, b, c, d, e)


def call_6(a, b, c, d, e, f):
    return FUNC(a, b, c, d, e, f)


CALLERS = (call_0, call_1, call_2, call_3, call_4, call_5, call_6)


def cached_caller(func, nargs: int):
    """What to call for ``func(*args)`` with ``nargs`` arguments from Python: a bound copy of
    a template that calls ``func``, cached on disk, when ``func`` is a user's compiled
    function with a :func:`stable_key`; ``func`` itself otherwise (dawrap's own functions
    load from the cache already; one without a key gains nothing from a wrapper).

    Examples
    --------
    >>> import numba
    >>> from dawrap.compile import templates
    >>> from dawrap.models import beta_binomial
    >>> templates.cached_caller(beta_binomial.count, 2) is beta_binomial.count
    True
    """
    if (not isinstance(func, CPUDispatcher) or hasattr(func.py_func, "_template_tag")
            or source.defined_in_package(func.py_func) or not 0 <= nargs < len(CALLERS)
            or stable_key(func) is None):
        return func
    template = CALLERS[nargs]
    return getattr(bind((template,), {"FUNC": func}), template.__name__)
