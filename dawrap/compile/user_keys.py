"""Keys for a user's own compiled functions, so that a chain bound to them is cached on disk
where that is safe (issue 27, item 4).

Why a cache and not a faster compile
------------------------------------
The README's Quickstart (three ``@numba.njit`` functions of the user's own, a Laplace
release) spent 7.2 s of a 9.4 s ``dw.sample`` compiling in a fresh process
(``benchmarks/compile_profile.py``, numba's compile events, load average 4 on 2 cores). The
time is spread thin: the chain's ``run`` 1.7 s, the records' helpers (``init``,
``consistency``, ``refresh``, ``draw_database``, ``draw_guarded``, ``first_overflow``) 1.8 s,
the mode landscape's CLT likelihood, the starts' moments and the kernel 1.2 s, the sweep
0.7 s, and numba's own overloads (``np.empty``, the Generator's beta, gamma, normal draws)
typed again inside them 1.9 s; about half of every piece is LLVM. Each piece is code the run
uses, and the chain's layers are already inlined into ``run`` (the previous cut): halving
what is left would mean compiling helpers that every run calls less well. A disk cache
removes all of it from every process after the first, as it does for the built-in models
(``docs/compile_cache.md``; ``benchmarks/compile_profile.py`` measures both in fresh
processes). The user's functions that the runner calls from Python go through cached
wrappers (:func:`dawrap.compile.templates.cached_caller`) for the same reason.

When it is safe
---------------
numba itself would key such a chain by the bytecode of the template alone and watch only
the template's file: an edit to the user's function, to a function it calls, or to a
constant it reads would run the old machine code. :func:`function_key` therefore describes a
user's function by everything numba compiles into the chain from it, and gives no key (the
chain compiles in memory for the process, as before) when it cannot:

* **its code**: the bytecode, constants, names and flags of its code object and of the code
  nested in it (what Python made of its source: an edit to the body changes it; moving the
  function, or editing another part of the file, does not). Defined in a file of an
  imported module: a function from a REPL, ``exec`` or a notebook cell has no key (its
  ``co_filename`` names no file), nor has one whose module is not in ``sys.modules`` (numba
  imports it to rebuild cached code);
* **every global it reads** (the ``LOAD_GLOBAL`` names of its code): numbers, strings,
  tuples and arrays up to 1 MB by value (numba freezes them into the code), other compiled
  functions by their own key (so a callee in another file is followed), the modules
  ``numpy``, ``math``, ``cmath``, ``operator``, ``random``, ``numba`` and dawrap's own (by
  name: their versions are in the key), numpy's scalar types and dtypes. Any other value (a
  module of the user's, a plain Python function, an object) means no key;
* **the values it closes over** (``np`` imported inside the enclosing function included),
  its default arguments and its numba options (``fastmath``, ``error_model``, ...), the same
  way;
* the versions of numba and numpy. The Python version and the CPU (target triple, name and
  features) are in numba's own index key, and the package's source in the binding's name
  (:func:`dawrap.compile.templates.cache_tag`).

numba freezes a global's value when it compiles the function, and a chain reuses the code
a function already has. So the key that counts is the one of the moment it first compiled:
dawrap watches numba's compile events (:func:`dawrap.compile.cache.watch_compiles`,
registered with its cache locator, as soon as both numba and dawrap are imported) and keys
every user function as it starts compiling. Later the function keeps that key while its
globals keep their values, and has none once one is rebound (a script that sets ``SHIFT = 5``
after a first run). A function compiled before dawrap was imported has none: what was frozen
is unknown.

Not followed: a numba extension of the user's (an ``@overload_method`` on a type the
function uses, registered elsewhere); after editing one, delete the cache folder.
"""
from __future__ import annotations

import dis
import hashlib
import os
import sys
import types
import weakref

import numpy as np

__all__ = ["function_key", "code_digest", "LIBRARY_MODULES"]

#: Top-level packages whose modules a user's function may read as globals: their behaviour in
#: compiled code is fixed by the Python, numba and numpy versions (in the key) or, for dawrap,
#: by the package's source (in the binding's name).
LIBRARY_MODULES = frozenset({"numpy", "math", "cmath", "operator", "random", "numba",
                             "dawrap"})

#: Code-object fields that decide what numba compiles (line numbers and names of the file
#: only change messages, and are left out so that moving a function is not an edit).
_CODE_FIELDS = ("co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_flags",
                "co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars",
                "co_exceptiontable")

#: The first key computed for each user dispatcher in this process (weakly: a function that
#: goes away takes its entry along): what its compiled code was frozen with.
_FIRST_KEYS = weakref.WeakKeyDictionary()

#: Returned for a function met again while its own key is being computed (recursion).
_CYCLE = "cycle"


def function_key(dispatcher, key_of, visiting: frozenset = frozenset()):
    """A description of a user's compiled function that is the same in every process that
    compiles the same machine code from it, or None (module docstring).

    Parameters
    ----------
    dispatcher : numba CPUDispatcher
        A ``numba.njit`` function defined outside the dawrap package.
    key_of : callable
        ``key_of(value, visiting)``: the stable key of a global or closure value
        (:func:`dawrap.compile.templates.stable_key`'s), None when it has none. Passed in,
        so that this module imports nothing of the templates module that calls it.
    visiting : frozenset
        The ids of the functions whose keys are being computed (cycles end there).

    Returns
    -------
    tuple or None

    Examples
    --------
    >>> import numba
    >>> from dawrap.compile import templates
    >>> exec("@numba.njit\\ndef typed_at_a_prompt(v):\\n    return v")
    >>> templates.stable_key(typed_at_a_prompt) is None   # no file: never cached
    True
    """
    func = dispatcher.py_func
    if id(func) in visiting:
        return (_CYCLE, func.__module__, func.__qualname__)
    key = _describe(dispatcher, key_of, visiting | {id(func)})
    if dispatcher not in _FIRST_KEYS:
        if dispatcher.overloads:  # compiled before dawrap watched: frozen values unknown
            return None
        _FIRST_KEYS[dispatcher] = key
    return key if _FIRST_KEYS[dispatcher] == key else None


def _describe(dispatcher, key_of, visiting):
    import numba
    from numba.core.registry import CPUDispatcher

    func = dispatcher.py_func
    code = func.__code__
    if not _in_a_file(code.co_filename) or type(dispatcher) is not CPUDispatcher:
        return None
    if sys.modules.get(func.__module__) is None:
        return None  # numba rebuilds cached code by importing the module: it must be one
    if dispatcher._compiler.pipeline_class is not numba.core.compiler.Compiler:
        return None  # a custom compiler pipeline: what it does is not known here
    options = _plain(sorted((k, v) for k, v in dispatcher.targetoptions.items()
                            if k != "cache"))
    if options is None:
        return None
    parts = [("code", code_digest(code)), ("options", options),
             ("versions", numba.__version__, np.__version__)]
    for name in sorted(_globals_read(code)):
        if name in func.__globals__:
            value = _global_key(func.__globals__[name], key_of, visiting)
        elif name in _builtins(func):
            value = ("builtin", name)
        else:
            return None  # not defined: numba will say so; nothing to cache
        if value is None:
            return None
        parts.append((name, value))
    for name, cell in zip(code.co_freevars, func.__closure__ or ()):
        try:
            value = _global_key(cell.cell_contents, key_of, visiting)
        except ValueError:  # an empty cell
            return None
        if value is None:
            return None
        parts.append(("closure", name, value))
    for default in (func.__defaults__ or ()) + tuple((func.__kwdefaults__ or {}).items()):
        value = key_of(default, visiting)
        if value is None:
            return None
        parts.append(("default", value))
    return ("user-fn", func.__module__, func.__qualname__,
            hashlib.sha256(repr(parts).encode()).hexdigest())


def _in_a_file(filename: str) -> bool:
    """A real source file (not ``<stdin>``, ``<string>``, an IPython cell)."""
    return not filename.startswith("<") and os.path.isfile(filename)


def _builtins(func) -> dict:
    b = func.__globals__.get("__builtins__", __builtins__)
    return b if isinstance(b, dict) else vars(b)


def code_digest(code: types.CodeType) -> str:
    """A digest of what Python compiled a function to (:data:`_CODE_FIELDS` of the code and
    of every code object nested in it, constants included)."""
    digest = hashlib.sha256()
    for field in _CODE_FIELDS:
        digest.update(repr(getattr(code, field, None)).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            digest.update(code_digest(const).encode())
        elif isinstance(const, frozenset):  # `x in {...}`: a set's repr order is per process
            digest.update(repr(sorted(map(repr, const))).encode())
        else:
            digest.update(repr(const).encode())
    return digest.hexdigest()


def _globals_read(code: types.CodeType) -> set:
    """The global names the code (and the code nested in it) loads."""
    names = {ins.argval for ins in dis.get_instructions(code)
             if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _globals_read(const)
    return names


def _global_key(value, key_of, visiting):
    """A global's key: a library module by name, numpy's scalar types and dtypes, else the
    value's stable key."""
    if isinstance(value, types.ModuleType):
        top = value.__name__.partition(".")[0]
        return ("module", value.__name__) if top in LIBRARY_MODULES else None
    if isinstance(value, type) and issubclass(value, np.generic):
        return ("numpy-type", value.__name__)
    if isinstance(value, np.dtype):
        return ("dtype", value.str)
    return key_of(value, visiting)


def _plain(value):
    """``value`` if it is made of numbers, strings, None and tuples/lists of them (numba's
    options), else None."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    if isinstance(value, (tuple, list)):
        items = tuple(_plain(v) for v in value)
        return None if any(i is None and v is not None for i, v in zip(items, value)) \
            else items
    return None
