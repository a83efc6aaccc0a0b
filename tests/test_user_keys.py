"""dawrap.compile.user_keys: a user's compiled function is keyed by everything numba compiles
into a chain from it (its code, the functions it calls, the globals and closure values it
reads), a chain bound to it is cached on disk, an edit never runs a stale chain, and what
cannot be keyed safely just compiles."""
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from dawrap.compile import templates as _templates, user_keys as _user_keys
from dawrap.model.protocols import first_outside

#: A user's model file: ``record_support`` calls ``lower``, which reads the constant ``LOW``.
SUPPORT = """
import numba

LOW = {low}

@numba.njit
def lower():
    return {lower}

@numba.njit
def support(x_i):
    return x_i[0] >= lower()
"""

#: A user's model file whose ``make(table)`` returns a ``record_support`` closed over ``table``.
CLOSURE = """
import numba

def make(table):
    @numba.njit
    def support(x_i):
        return x_i[0] >= table[0]
    return support
"""


def _module(tmp_path, name: str, source: str):
    """Import ``source`` from a file in ``tmp_path`` as a module called ``name``."""
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would (numba resolves recursion through it)
    spec.loader.exec_module(module)
    return module


def _support(tmp_path, name, low="0.0", lower="LOW"):
    return _module(tmp_path, name, SUPPORT.format(low=low, lower=lower)).support


def test_a_function_in_a_file_is_keyed_by_its_code_callees_and_constants(tmp_path):
    base = _templates.stable_key(_support(tmp_path, "m0"))
    assert base is not None and base[0] == "user-fn"
    # The same file imported again (a new process would do this): the same key, except for
    # the module's name, which is part of it.
    assert _templates.stable_key(_support(tmp_path, "m0")) == base
    # An edited constant the callee reads, an edited callee body: new keys.
    assert _templates.stable_key(_support(tmp_path, "m0", low="1.0")) != base
    assert _templates.stable_key(_support(tmp_path, "m0", lower="LOW + 1.0")) != base
    # An edit that changes nothing compiled (a comment, the function moved down) keeps it.
    moved = _module(tmp_path, "m0", "\n\n# a comment\n" + SUPPORT.format(low="0.0",
                                                                         lower="LOW")).support
    assert _templates.stable_key(moved) == base


def test_what_cannot_be_keyed_safely_has_no_key(tmp_path):
    # Typed at a prompt / exec'd from a string: no file to be in.
    namespace = {"numba": numba}
    exec("@numba.njit\ndef at_prompt(x_i):\n    return x_i[0] >= 0.0", namespace)
    assert _templates.stable_key(namespace["at_prompt"]) is None
    # A file run as a module that is not in sys.modules (runpy.run_path under another
    # name): numba could not import it to rebuild the cached code.
    loose = _module(tmp_path, "m_loose", SUPPORT.format(low="0.0", lower="LOW"))
    del sys.modules["m_loose"]
    assert _templates.stable_key(loose.support) is None
    # A closure over an array too large for numba to freeze into the code.
    big = np.zeros(_templates.FROZEN_ARRAY_BYTES // 8 + 1)
    closure = _module(tmp_path, "m1", CLOSURE).make
    assert _templates.stable_key(closure(big)) is None
    assert _templates.stable_key(closure(np.zeros(3))) is not None  # a small one is a value
    # A global that is a module of the user's (its functions are not followed), or an object.
    helper = _module(tmp_path, "user_helpers", "LOW = 0.0\n")
    for value in (helper, object()):
        module = _module(tmp_path, "m2", """
            import numba
            @numba.njit
            def support(x_i):
                return x_i[0] >= HELPER.LOW
        """)
        module.HELPER = value
        assert _templates.stable_key(module.support) is None


def test_a_constant_rebound_after_the_first_compile_loses_the_key(tmp_path):
    """numba froze the old value into the compiled code, which a chain would reuse: keyed
    by the new value it would be saved under a name that promises the new one."""
    module = _module(tmp_path, "m3", SUPPORT.format(low="0.0", lower="LOW"))
    key = _templates.stable_key(module.support)
    assert module.support(np.array([0.5])) and key is not None  # compiled, watched
    assert _templates.stable_key(module.support) == key
    module.LOW = 1.0
    assert _templates.stable_key(module.support) is None
    module.LOW = 0.0
    assert _templates.stable_key(module.support) == key


def test_an_unsafe_closure_just_compiles_and_is_never_cached(tmp_path):
    closure = _module(tmp_path, "m4", CLOSURE).make(
        np.full(_templates.FROZEN_ARRAY_BYTES // 8 + 1, 0.25))
    bound = _templates.bind([first_outside], {"RECORD_SUPPORT": closure})
    assert bound.first_outside(np.array([[0.5], [0.1], [0.9]])) == 1
    assert bound.first_outside._cache.__class__.__name__ == "NullCache"
    cached = _templates.bind([first_outside],
                             {"RECORD_SUPPORT": _support(tmp_path, "m5", low="0.25")})
    assert cached.first_outside(np.array([[0.5], [0.1], [0.9]])) == 1
    assert cached.first_outside._cache.__class__.__name__ == "FunctionCache"


def test_recursion_and_library_globals_are_keyed(tmp_path):
    module = _module(tmp_path, "m6", """
        import math
        import numba
        import numpy as np
        @numba.njit
        def fact(k):
            if k <= 1:
                return 1.0
            return k * fact(k - 1)
        @numba.njit
        def uses(x):
            return math.log(fact(3)) + np.float64(x)
    """)
    key = _templates.stable_key(module.uses)
    assert key is not None and module.uses(1.0) == pytest.approx(np.log(6.0) + 1.0)
    # numpy imported inside the enclosing function: a closure over a library module.
    inner = _module(tmp_path, "m7", """
        def make():
            import numba
            import numpy as np
            @numba.njit
            def mean(v):
                return np.mean(v)
            return mean
    """).make()
    assert _templates.stable_key(inner) is not None
    assert _user_keys.code_digest(module.fact.py_func.__code__) != _user_keys.code_digest(
        module.uses.py_func.__code__)


#: The README Quickstart's model, written as a user's file: draw_record calls ``success``,
#: draw_theta reads the constant ``SHIFT``.
USER_MODEL = """
import numba
import numpy as np

SHIFT = {shift}

@numba.njit
def success(theta):
    return {success}

@numba.njit
def draw_record(rng, theta, out):
    out[0] = 1.0 if rng.random() < success(theta) else 0.0

@numba.njit
def count(x_i, out):
    out[0] = x_i[0]

@numba.njit
def draw_theta(rng, theta, x, stats):
    return np.array([rng.beta(1 + stats[0] + SHIFT, 1 + x.shape[0] - stats[0])])
"""

CHILD = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import dawrap as dw
from dawrap import diagnostics
from dawrap.compile import templates as _templates
import usermodel as m
model = dw.Model(params={"p": ()}, record_size=1, draw_record=m.draw_record,
                 draw_theta=m.draw_theta, model_stat=m.count, stat_size=1,
                 draw_prior=lambda rng: np.array([rng.beta(1, 1)]))
mech = dw.Laplace(m.count, epsilon=0.5, sensitivity=1.0)
idata = dw.sample(model, mech, s_dp=60.0, n=200, draws=40, tune=10, chains=1, seed=3,
                  progress=False)
hits = misses = 0
for bound, _ in _templates._BOUND.values():
    for dispatcher in vars(bound).values():
        hits += sum(dispatcher.stats.cache_hits.values())
        misses += sum(dispatcher.stats.cache_misses.values())
entries = sorted(f for _, _, files in os.walk(os.environ["DAWRAP_CACHE_DIR"])
                 for f in files if f.endswith(".nbi"))
print(json.dumps({"p": diagnostics.group(idata, "posterior")["p"].values.ravel().tolist(),
                  "hits": hits, "misses": misses, "entries": entries}))
"""


def _sample(folder, cache, shift="0.0", success="theta[0]") -> dict:
    (folder / "usermodel.py").write_text(USER_MODEL.format(shift=shift, success=success))
    env = dict(os.environ, DAWRAP_CACHE_DIR=str(cache), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, "-c", CHILD, str(folder)], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]), stderr=done.stderr)


@pytest.mark.slow
def test_a_users_chain_loads_from_the_disk_cache_and_an_edit_never_runs_a_stale_one(tmp_path):
    """The Quickstart's model from a file, each run a new process sharing one cache folder:
    the second run loads every compiled piece (no miss) with bit-identical draws; a damaged
    entry is compiled again; after editing a constant draw_theta reads, or the body of a
    function draw_record calls, the next run compiles new entries and draws exactly what a
    run with an empty cache draws."""
    folder, cache = tmp_path / "user", tmp_path / "cache"
    folder.mkdir()
    cold = _sample(folder, cache)
    assert cold["misses"] > 0
    warm = _sample(folder, cache)
    assert warm["misses"] == 0 and warm["hits"] > 0
    assert warm["p"] == cold["p"]
    assert warm["entries"] == cold["entries"]
    # A damaged entry of the user's chain is survived as a built-in one is
    # (dawrap.compile.cache): one warning naming the file, compiled again, the same draws.
    damaged = sorted(cache.rglob("*.run__*.nbc"))
    assert damaged
    for path in damaged:
        path.write_bytes(path.read_bytes()[:100])
    survived = _sample(folder, cache)
    assert survived["p"] == cold["p"] and survived["misses"] > 0
    assert "is damaged" in survived["stderr"]
    seen = set(cold["entries"])
    for edit in ({"shift": "40.0"}, {"success": "0.5 * theta[0]"}):
        edited = _sample(folder, cache, **edit)
        assert edited["misses"] > 0 and not set(edited["entries"]) <= seen, edit
        assert edited["p"] == _sample(folder, tmp_path / f"fresh-{len(seen)}", **edit)["p"]
        assert edited["p"] != cold["p"]
        seen |= set(edited["entries"])
