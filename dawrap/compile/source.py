"""The package's own source: the folders it is in, whether a file or a function is in them,
and a digest of their files.

The cache locator answers only for these files (:mod:`dawrap.compile.cache`), a bound copy
of a template is cached only when the template is one of them, and the digest is part of
every bound copy's cache name (:mod:`dawrap.compile.templates`): an edit anywhere in the
package never runs a stale chain.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
from pathlib import Path

__all__ = ["package_folders", "file_in_package", "defined_in_package", "source_digest"]


@functools.lru_cache(maxsize=1)
def package_folders() -> tuple:
    """The folders of the package's source: dawrap/ and that of dawrap.models."""
    try:
        models = importlib.util.find_spec("dawrap.models").submodule_search_locations or ()
    except (ImportError, AttributeError, ValueError):  # no models: the package itself
        models = ()
    package = Path(__file__).parent.parent  # dawrap/, this module being in dawrap/compile/
    return tuple(str(Path(p).resolve()) + os.sep for p in (package, *models))


def file_in_package(filename: str) -> bool:
    """``filename`` (a path numba gives the cache locator, resolved first) is a source file
    of the package."""
    try:
        resolved = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return resolved.startswith(package_folders())


def defined_in_package(func) -> bool:
    """``func`` is defined in a source file of the dawrap package (its models included)."""
    filename = func.__code__.co_filename
    return any(filename.startswith(folder) for folder in package_folders())


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """A digest of every source file of the installed dawrap package and its models: any
    edit gives new cache names (numba itself checks only the template's own file)."""
    digest = hashlib.sha256()
    for folder in package_folders():
        for path in sorted(Path(folder).rglob("*.py")):
            digest.update(str(path.relative_to(folder)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()
