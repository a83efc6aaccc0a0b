"""dawrap.compile.cache: dawrap's compiled code is cached in its own folder (never in the
installed package), a damaged entry is recompiled and replaced with one warning, and a folder
that cannot be written means compiling in memory, with one warning. Each check runs in a fresh
process, as a user's next run would."""
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: A module-level cache=True function of a built-in model, and a template bound to one (a
#: piece of a chain): what every dw.sample loads from the cache.
CHILD = """
import json, warnings
import numpy as np
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    from dawrap.compile import cache as _cache, templates as _templates
    from dawrap.model.protocols import first_outside
    from dawrap.models import beta_binomial
    out = np.zeros(1)
    beta_binomial.count(np.array([1.0]), out)
    bound = _templates.bind([first_outside], {"RECORD_SUPPORT": beta_binomial.is_binary})
    first = bound.first_outside(np.array([[0.0], [1.0], [0.5]]))
hits = sum(sum(f.stats.cache_hits.values()) for f in (beta_binomial.count, bound.first_outside))
print(json.dumps({
    "values": [float(out[0]), int(first)], "hits": hits,
    "paths": [f._cache.cache_path for f in (beta_binomial.count, bound.first_outside)],
    "warnings": [str(w.message) for w in caught if issubclass(w.category, _cache.CacheWarning)],
    "other_warnings": [str(w.message) for w in caught
                       if not issubclass(w.category, _cache.CacheWarning)]}))
"""


def _env(**settings) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DAWRAP_CACHE_DIR",
                                                            "NUMBA_CACHE_DIR")}
    env.update({k: str(v) for k, v in settings.items()})
    return env


def _child(**settings) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD], env=_env(**settings),
                          capture_output=True, text=True)
    assert done.returncode == 0, f"the process failed (code {done.returncode}):\n{done.stderr}"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["values"] == [1.0, 2], result
    return result


def _package_entries() -> set:
    import dawrap
    from dawrap.compile import source

    folders = {Path(p) for p in source.package_folders()} | {Path(dawrap.__file__).parent}
    return {p for folder in folders for ext in ("nbi", "nbc") for p in folder.rglob(f"*.{ext}")}


def test_entries_land_in_the_configured_folder_and_not_in_the_package(tmp_path):
    before = _package_entries()
    cold = _child(DAWRAP_CACHE_DIR=tmp_path / "cache")
    assert cold["hits"] == 0 and not cold["warnings"]
    assert all(p.startswith(str(tmp_path / "cache")) for p in cold["paths"]), cold["paths"]
    assert len(list((tmp_path / "cache").rglob("*.nbi"))) >= 2
    assert _package_entries() == before           # nothing written beside the source
    warm = _child(DAWRAP_CACHE_DIR=tmp_path / "cache")
    assert warm["hits"] == 2 and not warm["warnings"]


def test_the_documented_warning_class_keeps_its_0_2_path():
    """docs/compile_cache.md named ``dawrap._cache.CacheWarning`` before the module moved
    into dawrap.compile: that path still imports the same module (dawrap._compat)."""
    import importlib

    from dawrap.compile import cache

    old = importlib.import_module("dawrap._cache")
    assert old is cache and old.CacheWarning is cache.CacheWarning


@pytest.mark.slow
def test_the_default_folder_is_per_user_and_numba_cache_dir_moves_it(tmp_path):
    home = _child(HOME=tmp_path, XDG_CACHE_HOME=tmp_path / "xdg")
    if sys.platform.startswith("linux"):
        assert all(p.startswith(str(tmp_path / "xdg" / "dawrap")) for p in home["paths"])
    numba_dir = _child(NUMBA_CACHE_DIR=tmp_path / "numba")
    assert all(p.startswith(str(tmp_path / "numba" / "dawrap")) for p in numba_dir["paths"])


@pytest.mark.slow
def test_a_users_own_cached_functions_stay_where_numba_puts_them(tmp_path):
    # dawrap's locator answers for dawrap's files only: numba's rule for everything else.
    (tmp_path / "mine.py").write_text("import numba\n@numba.njit(cache=True)\n"
                                      "def twice(v):\n    return 2 * v\n")
    # numba imported before dawrap: dawrap's locator is registered all the same
    code = ("import numba, mine, dawrap.models; print(mine.twice(2)); "
            "print(mine.twice._cache.cache_path); "
            "print(dawrap.models.beta_binomial.count._cache.cache_path)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env=_env(DAWRAP_CACHE_DIR=tmp_path / "dawrap-cache"))
    assert done.returncode == 0, done.stderr
    value, path, dawraps = done.stdout.split()
    assert value == "4" and path == str(tmp_path / "__pycache__")
    assert list((tmp_path / "__pycache__").glob("mine.twice*.nbi"))
    assert dawraps.startswith(str(tmp_path / "dawrap-cache"))


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncated":
        path.write_bytes(bytes(data[:len(data) // 3]))
    else:  # one byte of the machine code altered: it would still load, and run
        data[len(data) // 2] ^= 0x5A
        path.write_bytes(bytes(data))


@pytest.mark.slow
def test_a_damaged_entry_is_recompiled_and_replaced_with_one_warning(tmp_path):
    cache = tmp_path / "cache"
    _child(DAWRAP_CACHE_DIR=cache)

    def entry(name: str, ext: str) -> Path:  # a real entry: a chain's piece, a model's function
        (path,) = cache.rglob(f"*{name}*.{ext}")
        return path

    for damage in ({entry("beta_binomial.count-", "nbi"): "truncated",
                    entry(".first_outside__", "nbc"): "altered"},
                   {entry("beta_binomial.count-", "nbc"): "truncated",
                    entry(".first_outside__", "nbi"): "truncated"}):
        for path, how in damage.items():
            _damage(path, how)
        again = _child(DAWRAP_CACHE_DIR=cache)
        assert again["hits"] == 0, "a damaged entry was loaded"
        assert len(again["warnings"]) == 2, again["warnings"]
        for path in damage:  # once each, naming the file
            assert sum(str(path) in w and "damaged" in w for w in again["warnings"]) == 1
        healed = _child(DAWRAP_CACHE_DIR=cache)           # the entries were rewritten
        assert healed["hits"] == 2 and not healed["warnings"]


@pytest.mark.slow
def test_no_writable_folder_compiles_in_memory_with_one_warning(tmp_path):
    # Under a regular file: no process can create that folder, root included (chmod would
    # not stop root).
    (tmp_path / "a-file").write_text("")
    unwritable = tmp_path / "a-file" / "cache"
    with pytest.raises(OSError):
        os.makedirs(unwritable / "sub")
    before = _package_entries()
    for settings in ({"DAWRAP_CACHE_DIR": unwritable},           # as configured
                     {"HOME": unwritable, "XDG_CACHE_HOME": ""}):  # a home that is no folder
        result = _child(**settings)
        assert len(result["warnings"]) == 1, result["warnings"]
        assert "cannot be written" in result["warnings"][0]
        assert "DAWRAP_CACHE_DIR" in result["warnings"][0]
        assert not result["other_warnings"], result["other_warnings"]
        assert result["hits"] == 0
    assert _package_entries() == before


#: A dawrap function called with a type of the caller's own module (``mine``, when it is
#: importable), then with a float: its index holds both overloads.
FOREIGN = """
import json, sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    from dawrap.compile import cache as _cache
    from dawrap.samplers import loop
    if sys.argv[1] == "mine":
        import mine
        loop.unchanged(mine.State(1.0), 0, 0)
    loop.unchanged(1.0, 0, 0)
print(json.dumps({"hits": sum(loop.unchanged.stats.cache_hits.values()),
                  "warnings": [str(w.message) for w in caught]}))
"""


@pytest.mark.slow
def test_another_programs_entries_are_replaced_without_a_warning(tmp_path):
    """A cache that dawrap's tests filled holds overloads whose types live in test modules,
    not importable in a user's next program: that program compiles its own entry without
    calling the index damaged (dawrap.compile.cache._FOREIGN), and the next run loads it."""
    (tmp_path / "mine.py").write_text("from typing import NamedTuple\n"
                                      "class State(NamedTuple):\n    value: float\n")
    env = _env(DAWRAP_CACHE_DIR=tmp_path / "cache")

    def run(which: str, path: str = "") -> dict:
        done = subprocess.run([sys.executable, "-c", FOREIGN, which], capture_output=True,
                              text=True, env=dict(env, PYTHONPATH=path), cwd=ROOT)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert run("mine", str(tmp_path))["hits"] == 0          # both overloads saved
    (index,) = (tmp_path / "cache").rglob("*loop.unchanged-*.nbi")
    assert b"mine" in index.read_bytes()
    user = run("user")                                       # mine is not importable here
    assert user == {"hits": 0, "warnings": []}, user
    assert run("user") == {"hits": 1, "warnings": []}        # its own entry, saved


def _copy_checkout(target: Path) -> Path:
    """The repository's files (as git lists them; else the tree without build products)
    copied to ``target``."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True)
    if listed.returncode != 0:
        shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(
            ".git", "__pycache__", "*.egg-info", "build", "dist", "_build"))
        return target
    for name in listed.stdout.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


#: What pip says when it cannot reach a package index (to fetch the build backend).
NO_INDEX = r"Could not find a version|No matching distribution|Failed to establish|NewConnectionError"

SAMPLE = """
import sys
import numpy as np
import dawrap as dw
from dawrap.models import beta_binomial
assert dw.recipe is not None and dw.__file__.startswith(sys.argv[1]), dw.__file__
idata = dw.sample(beta_binomial.model(), beta_binomial.laplace(0.5), 30.0, 100,
                  method="naive", draws=50, chains=1, seed=0)
print("sampled", dw.__file__)
"""


@pytest.mark.slow
def test_the_readme_install_then_editable_install_sequence(tmp_path):
    """README: ``pip install .`` and a run (which fills the cache), then ``pip install -e .``
    in the same environment: the package must still import, from the checkout. numba's own
    cache folders, left in site-packages by the uninstall, made it an empty namespace
    package (issue 29, item 13)."""
    checkout = _copy_checkout(tmp_path / "checkout")
    # A new environment that sees this one's packages (numpy, numba, ...) but not its dawrap:
    # the base interpreter's site-packages, and this environment's folders as plain lines of
    # a .pth file (which do not run the .pth files inside them, among them dawrap's own
    # editable install), as tests/test_packaging.py does.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    python = str(venv / ("Scripts" if os.name == "nt" else "bin") / "python")
    child_site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                                 "['purelib'])"], capture_output=True, text=True, check=True)
    Path(child_site.stdout.strip(), "_parent_env.pth").write_text("\n".join(sorted(
        {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})) + "\n")
    env = _env(HOME=tmp_path / "home", XDG_CACHE_HOME=tmp_path / "home" / ".cache",
               PIP_DISABLE_PIP_VERSION_CHECK=1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def run(*args, cwd=elsewhere):
        done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    # Built as the README's `pip install .` builds it: in an isolated build environment,
    # whose setuptools pip fetches from the package index.
    built = subprocess.run([python, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                            str(tmp_path / "dist"), str(checkout)], env=env,
                           capture_output=True, text=True)
    if built.returncode != 0 and re.search(NO_INDEX, built.stderr):
        pytest.skip(f"no package index to build the wheel with: {built.stderr[-300:]}")
    assert built.returncode == 0, built.stderr
    run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
        *map(str, (tmp_path / "dist").glob("dawrap-*.whl")))
    site = Path(run(python, "-c", "import dawrap, os; print(os.path.dirname(dawrap.__file__))")
                .strip())
    assert site != checkout / "dawrap" and "site-packages" in str(site)
    assert "sampled" in run(python, "-c", SAMPLE, str(site))
    in_package = list(site.rglob("*.nb[ic]"))

    run(python, "-m", "pip", "install", "-q", "--no-deps", "-e", str(checkout))
    assert "sampled" in run(python, "-c", SAMPLE, str(checkout / "dawrap"))
    assert not in_package, "the cache was written into the installed package"
    assert list((tmp_path / "home" / ".cache" / "dawrap").rglob("*.nbi")), "nothing cached"


#: A user's factory of compiled closures, and a process that runs the cached chain piece of
#: each closure asked for: its value, and whether it came from the disk cache.
FACTORY = """
import numba
import numpy as np

def make(k):
    @numba.njit
    def f(x):  # loops: LLVM keeps it a function of its own, called by name
        s = 0.0
        for i in range(x.shape[0]):
            for j in range(i):
                s += np.sin(x[i] * k + j) * np.cos(x[j] - k)
        return s + k
    return f
"""
CLOSURES = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from dawrap.compile import templates as _templates
import factory
out = []
for k in sys.argv[2:]:
    caller = _templates.cached_caller(factory.make(float(k)), 1)
    value = caller(np.zeros(1))
    out.append([value, sum(caller.stats.cache_hits.values())])
print(json.dumps(out))
"""


def test_closures_compiled_in_two_processes_keep_their_own_values(tmp_path):
    # numba names a compiled function by its qualname and a per-process counter: two
    # processes that take the same steps give the same name to f(k=1) and f(k=2), and a
    # third that loads both from the cache ran f(k=1)'s body for k=2 (numba issue #10486).
    (tmp_path / "factory.py").write_text(FACTORY)
    env = _env(DAWRAP_CACHE_DIR=tmp_path / "cache")

    def run(*ks):
        done = subprocess.run([sys.executable, "-c", CLOSURES, str(tmp_path), *ks], env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert run("1") == [[1.0, 0]] and run("2") == [[2.0, 0]]  # compiled, one process each
    assert run("1", "2") == [[1.0, 1], [2.0, 1]]              # both from the cache
    assert run("2", "1") == [[2.0, 1], [1.0, 1]]
