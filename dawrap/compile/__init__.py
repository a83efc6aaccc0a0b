"""The compile layer: how dawrap compiles code that calls a model's functions, and where numba
caches it (``docs/compile_cache.md``).

One sanctioned path
-------------------
Compiled code that calls a model's functions (or a mechanism's, a kernel's, a user's) is
written as a *template*: a plain Python function that calls them, and reads the problem's
sizes and flags, by global names in capitals, each declared as a *slot* at the top of its
module (``DRAW_RECORD = templates.slot("(rng, theta, out): one record")``). It is compiled
only by :func:`dawrap.compile.templates.bind` (``bind(templates, names)``), which checks the
names against the declared slots (a misspelt or missing one is an error naming it) and
compiles a copy of the group whose globals hold those values. No other way is sanctioned:
a closure over compiled functions, or compiled functions passed as arguments, are keyed by
numba with identities of the process and are never cached on disk; an undeclared ``NAME =
None`` placeholder would be compiled in unchecked. A bound copy whose values all have a
stable key (:func:`dawrap.compile.templates.stable_key`) loads from the disk cache in every
later process.

Why numba's function ids are patched
------------------------------------
numba names each compiled function in the machine code by its qualified name and a counter
of the process (``f$57``), and LLVM keeps one body per name when it links code together.
Two processes that take the same steps give the same name to the same closure made with
different values (a census geography's statistic, a user's function made by a factory); a
third process that loads both from the cache runs the first body for both, silently (numba
issue #10486). :mod:`dawrap.compile.cache` therefore has numba draw these ids at random (its
``_RandomFunctionIds``, set when its cache locator is registered) for every function
compiled after ``import dawrap``, and keeps the entries written that way in a folder of
their own format.

Modules
-------
Each imports only the ones above it (no import cycle), and the layer imports no other part
of dawrap: any layer may import it.

* :mod:`~dawrap.compile.source`: the package's source folders, whether a file or a function
  is in them, a digest of their files;
* :mod:`~dawrap.compile.user_keys`: the keys of a user's own compiled functions;
* :mod:`~dawrap.compile.templates`: slots, :func:`~dawrap.compile.templates.bind`, the
  stable keys and cache names of bound copies, cached callers of a user's function;
* :mod:`~dawrap.compile.cache`: numba's hooks: the cache folder and locator, sealed
  entries, the random function ids, and the keying of a user's function when it first
  compiles.

``import dawrap`` imports :mod:`~dawrap.compile.cache` (which does not import numba); this
file imports nothing, so that stays light.
"""
