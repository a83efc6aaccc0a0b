"""Where dawrap's compiled code is cached on disk, and how a damaged or unwritable cache is
survived.

numba caches a ``cache=True`` function beside its source file by default (a ``__pycache__``
folder in site-packages or in the checkout). Left behind by ``pip uninstall``, those folders
made an editable install of the same package import as an empty namespace package (issue 29,
item 13). dawrap registers its own cache locator with numba instead, which answers for the
package's own source files only (its models included) and puts their entries in one folder:

1. ``DAWRAP_CACHE_DIR``, when set;
2. else ``$NUMBA_CACHE_DIR/dawrap``, when numba's own variable is set (a user who moved
   numba's cache, e.g. in a container, moves dawrap's with it);
3. else the per-user cache folder: ``$XDG_CACHE_HOME/dawrap`` (default ``~/.cache/dawrap``) on
   Linux, ``~/Library/Caches/dawrap`` on macOS, ``%LOCALAPPDATA%\\dawrap\\Cache`` on Windows.

Inside it, a folder per entry format (:data:`FORMAT_FOLDER`) and, in it, numba's layout: one
subfolder per source folder (named by a hash of its path, so an installed copy and a
checkout never share entries), an index file (``.nbi``) per function and a data file
(``.nbc``) per compiled signature. A user's own ``cache=True`` functions are
untouched: the locator declines every file outside the package, and numba's own locators
take them as before.

The same hook makes dawrap's entries safe to load:

* **Damaged entries** (issue 29, item 10). Each data file dawrap writes is sealed: the
  payload is stored with a SHA-256 of its bytes and a digest of the index key it was saved
  under. A truncated or altered index or data file (unpickling fails, the digest disagrees,
  or LLVM refuses the object code) is removed, the function compiled again and its entry
  rewritten, with one warning naming the file. numba alone would raise a bare
  ``UnpicklingError``/``EOFError``/``RuntimeError`` at every later run, or, for bytes
  altered inside the machine code, run them.
* **Code compiled in different processes** (numba issue #10486, open in numba 0.68). numba
  names a compiled function in the machine code by its qualified name and a counter of the
  process (``f$57``), and LLVM keeps one body per name when it links code together. Two
  processes that run the same steps give the same counter to the same closure made with
  different values (a census geography's statistic, a user's function made by a factory, two
  xdist or dask workers); a third process that loads both from the cache then runs the first
  body for both: the second chain computes with the first one's values, silently.
  :func:`_register` therefore makes numba draw these ids at random (96 bits) for every
  function compiled after dawrap is imported, so no two bodies share a name, and the entries
  live in a folder of their own format: entries written before, with counter ids, are never
  read (delete the older folders beside it to reclaim the space).
* **No writable folder** (item 12: a read-only home and install, as for a service account):
  every function compiles in memory for the process, with one warning, where numba would
  raise ``RuntimeError: cannot cache function ...: no locator available`` at import.
* **A user's function keyed when it first compiles** (:func:`watch_compiles`, registered
  with the locator): the values numba freezes into its code are those of that moment
  (:mod:`dawrap.compile.user_keys` says why that decides whether a chain bound to it may be
  cached).

``import dawrap`` stays light: :func:`install` registers the locator when numba's caching
module is loaded (at once if it already is), before any dawrap module decorates a function.
"""
from __future__ import annotations

import hashlib
import importlib.abc
import importlib.util
import os
import pickle
import sys
import warnings
from pathlib import Path

from . import source

__all__ = ["CacheWarning", "ENV", "FORMAT_FOLDER", "cache_folder", "install",
           "watch_compiles"]

#: The environment variable that sets the cache folder.
ENV = "DAWRAP_CACHE_DIR"
#: The first field of a sealed data file (format version).
_SEAL = "dawrap-sealed-1"
#: The folder of the cache folder that holds the entries of this format: those whose compiled
#: functions have random ids (:class:`_RandomFunctionIds`).
FORMAT_FOLDER = "entries-2"


class CacheWarning(UserWarning):
    """The compiled-code cache is damaged or cannot be written (the code is compiled again)."""


def cache_folder() -> Path:
    """The folder of dawrap's compiled-code cache (see the module docstring for the order)."""
    chosen = os.environ.get(ENV)
    if chosen:
        return Path(os.path.abspath(os.path.expanduser(chosen)))
    numba_folder = _numba_cache_dir()
    if numba_folder:
        return Path(os.path.abspath(numba_folder)) / "dawrap"
    return _user_cache_folder()


def _numba_cache_dir() -> str:
    config = sys.modules.get("numba.core.config")
    return getattr(config, "CACHE_DIR", "") if config is not None else \
        os.environ.get("NUMBA_CACHE_DIR", "")


def _user_cache_folder() -> Path:
    """The per-user cache folder's ``dawrap`` subfolder, as platformdirs would name it."""
    home = Path.home()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "dawrap" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "dawrap"
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else home / ".cache") / "dawrap"


# -- warnings, once per process ------------------------------------------------------------
_WARNED: set = set()


def _warn_once(key, message: str) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, CacheWarning, stacklevel=3)


def _damaged(path: str, err: BaseException) -> None:
    """A cache file that cannot be loaded: remove it (its entry is rewritten after the
    function compiles again) and say so once."""
    try:
        os.remove(path)
        done = "removed it; the function is compiled again and its entry rewritten"
    except FileNotFoundError:
        done = "the function is compiled again"
    except OSError as remove_err:
        done = (f"it could not be removed ({remove_err.strerror or remove_err}): the function "
                f"is compiled in memory in every process until the file is deleted")
    _warn_once(("damaged", path),
               f"dawrap: the compiled-code cache file {path} is damaged "
               f"({type(err).__name__}: {err}); {done}")


# -- sealed payloads -----------------------------------------------------------------------
def _key_digest(key) -> str:
    return hashlib.sha256(repr(key).encode()).hexdigest()


def _seal(payload, key) -> tuple:
    from numba.core.serialize import dumps

    blob = dumps(payload)
    return (_SEAL, _key_digest(key), hashlib.sha256(blob).hexdigest(), blob)


def _unseal(raw: bytes, key):
    """The payload of a sealed data file, or a ValueError saying what is wrong with it."""
    sealed = pickle.loads(raw)
    if not (isinstance(sealed, tuple) and len(sealed) == 4 and sealed[0] == _SEAL):
        raise ValueError("not a sealed dawrap cache entry")
    _, key_digest, checksum, blob = sealed
    if hashlib.sha256(blob).hexdigest() != checksum:
        raise ValueError("its checksum does not match its content")
    if key_digest != _key_digest(key):
        raise ValueError("it holds code compiled for another signature than its index says")
    return pickle.loads(blob)


# -- numba's hooks -------------------------------------------------------------------------
def _register(caching) -> None:
    """Put dawrap's locator first in numba's list and make numba's cache load and save
    dawrap's entries through :func:`_load` and :func:`_save` (once)."""
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    if any(getattr(c, "_dawrap", False) for c in impl._locator_classes):
        return
    mixin = caching._SourceFileBackedLocatorMixin
    base = getattr(caching, "_CacheLocator", None) or caching.CacheLocator
    writable: dict = {}  # cache path -> None, or the OSError that makes it unusable

    class DawrapCacheLocator(mixin, base):
        """numba's locator for dawrap's source files: entries in :func:`cache_folder`, or
        none (compiled in memory) when it cannot be written."""
        _dawrap = True

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(str(cache_folder()), FORMAT_FOLDER,
                                            self.get_suitable_cache_subpath(py_file))
            if self._cache_path not in writable:
                try:
                    base.ensure_cache_path(self)
                    writable[self._cache_path] = None
                except OSError as err:
                    writable[self._cache_path] = err
            self.error = writable[self._cache_path]
            if self.error is not None:
                _warn_once("unwritable",
                           f"dawrap: the compiled-code cache folder {cache_folder()} cannot be "
                           f"written ({self.error.strerror or self.error}); dawrap's compiled "
                           f"code is kept in memory for this process only and compiled again "
                           f"in the next. Set {ENV} to a writable folder to keep it")

        def get_cache_path(self):
            return self._cache_path

        def ensure_cache_path(self):
            if self.error is not None:
                raise self.error
            base.ensure_cache_path(self)

        @classmethod
        def from_function(cls, py_func, py_file):
            if not os.path.exists(py_file) or not source.file_in_package(py_file):
                return None  # not dawrap's: numba's own locators decide
            return cls(py_func, py_file)

    original_load, original_save = caching.Cache.load_overload, caching.Cache.save_overload

    def load_overload(self, sig, target_context):
        locator = self._impl.locator
        if not isinstance(locator, DawrapCacheLocator):
            return original_load(self, sig, target_context)
        if locator.error is not None or not self._enabled:
            return None
        target_context.refresh()
        return _load(self, self._index_key(sig, target_context.codegen()), target_context)

    def save_overload(self, sig, data):
        locator = self._impl.locator
        if not isinstance(locator, DawrapCacheLocator):
            return original_save(self, sig, data)
        if locator.error is not None or not self._enabled or not self._impl.check_cachable(data):
            return None
        return _save(self, self._index_key(sig, data.codegen), data)

    global Locator
    Locator = DawrapCacheLocator
    from numba.core import bytecode
    bytecode.FunctionIdentity._unique_ids = _RandomFunctionIds()
    caching.Cache.load_overload, caching.Cache.save_overload = load_overload, save_overload
    impl._locator_classes.insert(0, DawrapCacheLocator)
    watch_compiles()  # a user's function is keyed when it first compiles


#: dawrap's locator class, once registered (:func:`install`); None before.
Locator = None


class _RandomFunctionIds:
    """The ids numba puts in a compiled function's machine-code name, drawn at random.

    numba draws them from a counter per process (``FunctionIdentity._unique_ids``), so two
    processes give the same name to the same closure made with different values; cached
    together in one process, LLVM links one body for both (numba issue #10486, the module
    docstring). 96 random bits make a shared name between two of a cache's functions
    improbable (about 1e-17 for a million functions).
    """

    def __iter__(self):
        return self

    def __next__(self) -> int:
        return int.from_bytes(os.urandom(12), "little")


#: What loading an index raises when it holds another program's entries: not damage. A
#: function's index pickles together the signatures of every overload compiled for it, and a
#: dawrap function called with a type of the caller's own (a NamedTuple state defined in a
#: test module or a user's script) stores that type by reference to its module. Another
#: program, where that module is not importable (a user's analysis after dawrap's tests ran
#: on the same cache), cannot unpickle the index: its own overload is compiled and saved
#: without a warning, the other program's entries of that function are dropped (it compiles
#: them again when it next runs), and none of them is ever loaded here.
_FOREIGN = ImportError


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass  # gone already, or kept: numba's save then overwrites it


def _load(cache, key, target_context):
    """The cached code for ``key``, or None (absent, or damaged: then removed, with a
    warning)."""
    files = cache._cache_file
    try:
        overloads = files._load_index()
    except OSError:
        return None  # unreadable: compiled again (saving will say if it cannot be written)
    except _FOREIGN:
        return None  # another program's entries, not damage: no warning
    except Exception as err:  # truncated or altered: unpickling fails in many ways
        _damaged(files._index_path, err)
        return None
    name = overloads.get(key) if isinstance(overloads, dict) else None
    if name is None:
        return None
    path = files._data_path(name)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None  # removed meanwhile
    try:
        return cache._impl.rebuild(target_context, _unseal(raw, key))
    except Exception as err:
        _damaged(path, err)
        return None


def _save(cache, key, data) -> None:
    """Write ``data``'s sealed entry; a folder that cannot be written is a warning, not an
    error (the code is already compiled), and a damaged index is replaced."""
    files = cache._cache_file
    try:
        cache._impl.locator.ensure_cache_path()
        sealed = _seal(cache._impl.reduce(data), key)
        try:
            files.save(key, sealed)
        except OSError:
            raise
        except _FOREIGN:  # another program's entries: this program's replace them
            _remove_quietly(files._index_path)
            files.save(key, sealed)
        except Exception as err:  # the index was damaged after it was read
            _damaged(files._index_path, err)
            files.save(key, sealed)
    except OSError as err:
        _warn_once(("unsaved", cache._cache_path),
                   f"dawrap: could not write to the compiled-code cache folder "
                   f"{cache._cache_path} ({err.strerror or err}); the code is kept in memory "
                   f"for this process. Set {ENV} to a writable folder to keep it")


# -- a user's function keyed when it first compiles -----------------------------------------
_WATCHING: list = []


def watch_compiles() -> None:
    """Key every user function as numba starts compiling it (once per process; the module
    docstring of :mod:`dawrap.compile.user_keys` says why). Called when dawrap's cache
    locator is registered, while numba is being imported: only ``numba.core.event`` is
    needed, which numba has loaded by then."""
    if _WATCHING:
        return
    from numba.core import event

    class FirstCompile(event.Listener):
        """Records the key of each user function at the start of its first compile."""

        def on_start(self, ev):
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            if func is None or hasattr(func, "_template_tag") or \
                    str(getattr(func, "__module__", "")).partition(".")[0] in ("numba", "dawrap"):
                return  # numba's own overloads, dawrap's functions and bound copies
            try:
                from . import templates  # not at the top: `import dawrap` must not import numba
                templates.stable_key(ev.data["dispatcher"])
            except Exception:  # noqa: BLE001 - a key that cannot be computed: none (no cache)
                pass

        def on_end(self, ev):
            pass

    listener = FirstCompile()
    event.register("numba:compile", listener)
    _WATCHING.append(listener)


class _AfterNumbaCaching(importlib.abc.MetaPathFinder):
    """Registers dawrap's hooks as soon as ``numba.core.caching`` has been executed (it is
    loaded by ``import numba``, before any function is decorated)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "numba.core.caching":
            return None
        sys.meta_path.remove(self)  # one shot; the other finders find the module
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_register(module):
            exec_module(module)
            _register(module)

        spec.loader.exec_module = exec_then_register
        return spec


def install() -> None:
    """Register dawrap's cache locator with numba: now if numba is loaded, else as soon as it
    is (so that ``import dawrap`` does not import numba)."""
    caching = sys.modules.get("numba.core.caching")
    if caching is not None and hasattr(caching, "Cache"):
        _register(caching)
    elif not any(isinstance(f, _AfterNumbaCaching) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterNumbaCaching())
