"""What a run depends on, as digests: a checkpoint resumes only the run that wrote it.

A checkpoint's settings used to name the model and the mechanism, and a name says little: two
models may share one (every PyMC model is called "pymc"; a model rebuilt with another prior
keeps its name), and ``resume=`` then returned the first model's draws as the second's
posterior. So a checkpointed run also stores :func:`run_fingerprint`: for every attribute of
the model and of the mechanism (each function they hold, the prior's hyperparameters, the
mechanism's parameters, ...), a digest of

* a number, string, array (dtype, shape and bytes), tuple, list, dict: its value;
* a Python function: its bytecode and constants, its default arguments, the values its
  closure holds and the values of the global names it reads, each digested the same way
  (so a helper it calls, or an array it reads, counts too); a ``numba.njit`` function: that
  of its Python function, with its compile options; a module or a class: its name;
* an object of dawrap's own (a kernel, an exponential family, a mechanism): its attributes;
* a function that carries a digest its builder stated (attribute :data:`STATED`, e.g. the
  functions :mod:`dawrap.pymc` compiles carry the digest of the PyMC model's graphs): that.

A digest names neither file nor line, so moving code does not change it. Anything else (a
generator, an object of another library) cannot be digested by value; the model's
``draw_prior`` is then fingerprinted by what it draws at eight fixed seeds, and any other
such part is *unverifiable*: a resume refuses it unless
:data:`FORCE_VARIABLE` is set (:mod:`dawrap.runner.checkpoint`).
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import types

import numpy as np

__all__ = ["run_fingerprint", "digest", "Unverifiable", "UNVERIFIABLE", "FORCE_VARIABLE",
           "STATED"]

#: How an unverifiable part's digest begins.
UNVERIFIABLE = "unverifiable: "
#: Set to 1 to resume although some part of the run could not be fingerprinted.
FORCE_VARIABLE = "DAWRAP_RESUME_UNVERIFIED"
#: The attribute by which a compiled function states its own digest, where its code says
#: nothing of what it computes (generated code around a compiled graph): its builder sets it
#: to a digest of what the function computes, e.g. a graph with its constants.
STATED = "__dawrap_fingerprint__"
#: Types whose repr is their value, exactly.
_PLAIN = (type(None), bool, int, float, str)
#: Attributes that say how an object was built or locked, or advise, not what it computes.
_SKIPPED = {"_recipe", "_frozen", "name", "remedies"}


class Unverifiable(TypeError):
    """A value that cannot be digested by value (the message says which, and where)."""


def run_fingerprint(model, mechanism) -> dict:
    """``{"model.<attribute>": digest, "mechanism.<attribute>": digest}`` for every attribute
    of ``model`` and ``mechanism`` (module docstring); a digest is 16 hex digits, or
    :data:`UNVERIFIABLE` followed by the reason."""
    parts, digester = {}, _Digester()  # one digester: what parts share is hashed once
    for owner, obj in (("model", model), ("mechanism", mechanism)):
        for name, value in sorted(vars(obj).items()):
            if name in _SKIPPED:
                continue
            key = f"{owner}.{name}"
            try:
                parts[key] = digester.of(value, key).hex()[:16]
            except Unverifiable as err:
                parts[key] = (_behaviour(value) if key == "model.draw_prior"
                              else f"{UNVERIFIABLE}{err}")
    return parts


def digest(value, where: str = "value") -> str:
    """The digest of ``value`` (module docstring): 16 hex digits, the same in every process
    for equal values; :class:`Unverifiable` for what has none."""
    return _Digester().of(value, where).hex()[:16]


def _behaviour(draw_prior) -> str:
    """A ``draw_prior`` known only by what it does: a digest of its draws at eight seeds."""
    try:
        draws = [np.asarray(draw_prior(np.random.default_rng(seed)), dtype=np.float64)
                 for seed in range(8)]
    except Exception as err:  # noqa: BLE001 - the user's function; the run will say more
        return f"{UNVERIFIABLE}draw_prior could not be run to fingerprint it ({err})"
    return "draws:" + digest(tuple(draws))


class _Digester:
    """Digests of the values met, by identity (a shared array is hashed once; a value met
    again inside itself, a cycle, by its position)."""

    def __init__(self):
        self.done, self.open = {}, {}

    def of(self, value, where: str) -> bytes:
        key = id(value)
        if key in self.done:
            return self.done[key][0]
        if key in self.open:
            return f"cycle {self.open[key]}".encode()
        self.open[key] = len(self.open)
        try:
            out = hashlib.sha256(repr(self._parts(value, where)).encode()).digest()
        finally:
            del self.open[key]
        self.done[key] = (out, value)  # kept alive: no id is reused meanwhile
        return out

    def _parts(self, value, where: str):
        own = getattr(value, "__dict__", None)  # a digest its builder stated, first
        if isinstance(own, dict) and isinstance(own.get(STATED), str):
            return ("stated", own[STATED])
        if value is None or isinstance(value, (bool, int, float, complex, str, bytes, range,
                                               slice, np.generic, np.dtype)):
            return (type(value).__name__, repr(value))
        if isinstance(value, np.ndarray):
            if value.dtype.hasobject:
                return ("objects", value.shape, self.of(tuple(value.ravel()), where))
            return ("array", value.dtype.str, value.shape,
                    hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest())
        if isinstance(value, (tuple, list)) and all(type(v) in _PLAIN for v in value):
            return (type(value).__qualname__, "plain",  # long label lists: one hash
                    hashlib.sha256(repr(value).encode()).hexdigest())
        if isinstance(value, (tuple, list, frozenset, set)):
            items = [self.of(v, f"{where}[{i}]") for i, v in enumerate(value)]
            return (type(value).__qualname__, sorted(items) if isinstance(value, (set, frozenset))
                    else items)
        if isinstance(value, (dict, types.MappingProxyType)):
            return ("dict", sorted((repr(k), self.of(v, f"{where}[{k!r}]"))
                                   for k, v in value.items()))
        if isinstance(value, (types.ModuleType, type)):
            return (type(value).__name__, getattr(value, "__module__", ""),
                    getattr(value, "__qualname__", value.__name__))
        if hasattr(value, "py_func") and hasattr(value, "targetoptions"):  # numba.njit
            return ("njit", sorted((k, repr(v)) for k, v in value.targetoptions.items()),
                    self.of(value.py_func, where))
        if isinstance(value, types.FunctionType):
            return self._function(value, where)
        if isinstance(value, types.MethodType):
            return ("method", self.of(value.__func__, where), self.of(value.__self__, where))
        if isinstance(value, functools.partial):
            return ("partial", self.of(value.func, where), self.of(value.args, where),
                    self.of(value.keywords, where))
        if hasattr(value, "_defn") and type(value).__name__ == "_Intrinsic":  # numba
            return ("intrinsic", self.of(value._defn, where))
        if isinstance(value, (types.BuiltinFunctionType, np.ufunc)):
            return ("builtin", getattr(value, "__module__", None), value.__name__)
        kind = type(value)
        if (kind.__module__.split(".")[0] == "dawrap" or dataclasses.is_dataclass(value)
                or isinstance(value, types.SimpleNamespace)) and hasattr(value, "__dict__"):
            return ("object", kind.__module__, kind.__qualname__,
                    self.of(vars(value), f"{where}.{kind.__qualname__}"))
        raise Unverifiable(f"{where} holds a {kind.__module__}.{kind.__qualname__}")

    def _function(self, func: types.FunctionType, where: str):
        code = func.__code__
        names = _names(code)
        found = sorted(name for name in names if name in func.__globals__)
        cells = [c.cell_contents if _filled(c) else "<empty cell>"
                 for c in func.__closure__ or ()]
        return ("function", self._code(code),
                [(name, self.of(func.__globals__[name], f"{where}: global {name}"))
                 for name in found],
                [self.of(c, f"{where}: closure {name}")
                 for name, c in zip(code.co_freevars, cells)],
                self.of(func.__defaults__, where), self.of(func.__kwdefaults__, where))

    def _code(self, code: types.CodeType):
        return (code.co_code.hex(), [self._const(c) for c in code.co_consts], code.co_names,
                code.co_varnames, code.co_freevars, code.co_argcount, code.co_kwonlyargcount,
                code.co_flags)

    def _const(self, const):
        if isinstance(const, types.CodeType):
            return self._code(const)
        if isinstance(const, tuple):
            return tuple(self._const(c) for c in const)
        if isinstance(const, frozenset):  # ``in {"a", "b"}``: its order varies by process
            return ("frozenset", sorted(repr(self._const(c)) for c in const))
        return repr(const)


def _names(code: types.CodeType) -> set:
    """The names ``code`` and the functions defined in it look up."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True
