"""dawrap.compile.templates: bound copies are memoised, keyed only by what is stable across
processes, and a built-in model's chain loads from the disk cache with the same draws (a
user's model: tests/test_user_keys.py)."""
import json
import os
import subprocess
import sys

import numba
import numpy as np
import pytest

from dawrap.compile import source, templates as _templates
from dawrap.model.protocols import first_outside
from dawrap.models import beta_binomial


@numba.njit
def user_twice(row):
    return 2.0 * row[0]


@numba.njit
def user_support(x_i):
    return x_i[0] >= 0.0


# A function typed at a prompt (exec'd from a string: no file), which is never keyed.
_PROMPT = {"numba": numba}
exec("@numba.njit\ndef prompt_support(x_i):\n    return x_i[0] >= 0.0", _PROMPT)
prompt_support = _PROMPT["prompt_support"]


def apply_to(rows):
    out = np.empty(rows.shape[0])
    for i in range(rows.shape[0]):
        out[i] = FUNC(rows[i])  # noqa: F821 - bound by _templates.bind
    return out


def test_bind_compiles_a_copy_per_binding_and_memoises_it():
    twice = _templates.bind([apply_to], {"FUNC": user_twice})
    count = _templates.bind([apply_to], {"FUNC": beta_binomial.in_unit_interval})
    rows = np.array([[1.0], [2.5]])
    assert twice.apply_to(rows).tolist() == [2.0, 5.0]
    assert count.apply_to(rows * 0.4).tolist() == [1.0, 0.0]   # 0 < p < 1
    assert _templates.bind([apply_to], {"FUNC": user_twice}) is twice
    assert twice.apply_to is not count.apply_to


def sum_applied(rows):
    return apply_to(rows).sum()  # noqa: F821 - the group's bound copy


def test_an_inlined_template_is_compiled_into_its_caller_and_still_callable():
    """``inline``: the caller holds the callee's code (the callee is not compiled on its own
    when only the caller runs), results are those of the plain binding, and the option is
    part of what a binding is (its own copies, its own cache name)."""
    plain = _templates.bind([apply_to, sum_applied], {"FUNC": user_twice})
    inlined = _templates.bind([apply_to, sum_applied], {"FUNC": user_twice},
                              inline=("apply_to",))
    assert inlined is not plain
    rows = np.array([[1.0], [2.5]])
    assert inlined.sum_applied(rows) == plain.sum_applied(rows) == 7.0
    assert inlined.apply_to.signatures == []  # typed within sum_applied, not compiled alone
    assert inlined.apply_to(rows).tolist() == [2.0, 5.0]  # from Python it compiles as usual
    names = {"RECORD_SUPPORT": beta_binomial.in_unit_interval}  # a dawrap template's tag
    tag = _templates.cache_tag([first_outside], names)
    assert tag is not None
    assert tag != _templates.cache_tag([first_outside], names, frozenset({"first_outside"}))


def test_values_that_are_the_same_in_every_process_have_a_stable_key():
    assert _templates.stable_key(beta_binomial.count) == (
        "fn", "dawrap.models.beta_binomial", "count", ())
    # A user's function in a file is keyed by its code (tests/test_user_keys.py); one typed
    # at a prompt, or a plain Python function, is not.
    assert _templates.stable_key(user_twice)[0] == "user-fn"
    assert _templates.stable_key(prompt_support) is None
    assert _templates.stable_key(lambda v: v) is None
    assert _templates.stable_key((1, 2.5, True, "a")) is not None
    a, b = np.arange(3.0), np.arange(3.0)
    assert _templates.stable_key(a) == _templates.stable_key(b)
    assert _templates.stable_key(a) != _templates.stable_key(a + 1)
    # numba reads arrays over 1 MB (or strided) through a pointer of this process: never
    # cached (a Dirichlet prior on 10^6 cells would otherwise make numba warn at every run).
    assert _templates.stable_key(np.ones(_templates.FROZEN_ARRAY_BYTES // 8 + 1)) is None
    assert _templates.stable_key(np.ones((4, 4))[:, 0]) is None
    # A closure is as stable as what it captures.
    model = beta_binomial.model(a=2, b=3)
    assert _templates.stable_key(model.draw_theta) != _templates.stable_key(
        beta_binomial.model(a=2, b=4).draw_theta)


def test_only_dawrap_templates_bound_to_stable_values_are_cached_on_disk():
    stable = _templates.bind([first_outside], {"RECORD_SUPPORT": beta_binomial.is_binary})
    assert stable.first_outside(np.array([[0.0], [1.0], [0.5]])) == 2
    assert _templates.stable_key(stable.first_outside) is not None
    assert stable.first_outside._cache.__class__.__name__ == "FunctionCache"
    # Bound to a function typed at a prompt: compiled once per process, never written to disk.
    user = _templates.bind([first_outside], {"RECORD_SUPPORT": prompt_support})
    assert user.first_outside(np.array([[0.0], [-1.0]])) == 1
    assert _templates.stable_key(user.first_outside) is None
    assert user.first_outside._cache.__class__.__name__ == "NullCache"
    # Bound to a user's function in a file: cached, under its own name.
    in_file = _templates.bind([first_outside], {"RECORD_SUPPORT": user_support})
    assert in_file.first_outside(np.array([[0.0], [-1.0]])) == 1
    assert in_file.first_outside._cache.__class__.__name__ == "FunctionCache"
    # A template outside the package (numba would not watch the files it depends on).
    outside = _templates.bind([apply_to], {"FUNC": beta_binomial.in_unit_interval})
    assert outside.apply_to._cache.__class__.__name__ == "NullCache"


def test_the_cache_name_changes_with_the_package_source(monkeypatch):
    names = {"RECORD_SUPPORT": beta_binomial.is_binary}
    tag = _templates.cache_tag([first_outside], names)
    assert tag is not None and tag == _templates.cache_tag([first_outside], dict(names))
    assert _templates.cache_tag([first_outside], {"RECORD_SUPPORT": prompt_support}) is None
    monkeypatch.setattr(source, "source_digest", lambda: "an edited package")
    assert _templates.cache_tag([first_outside], names) != tag


CHILD = """
import json, sys
import numpy as np
import dawrap as dw
from dawrap import diagnostics
from dawrap.compile import templates as _templates
from dawrap.models import beta_binomial
a = float(sys.argv[1])
model, mech = beta_binomial.model(a=a, b=1), beta_binomial.laplace(0.5)
options = [{}] if len(sys.argv) < 3 else [{}, {"interweave": 2}, {"scan": "random"}]
for kw in options:  # every kernel option has its own cached chain
    idata = dw.sample(model, mech, 30.0, 100, draws=30, tune=10, chains=2, cores=1, seed=4,
                      progress=False, **kw)
hits = misses = 0
for bound, _ in _templates._BOUND.values():
    for dispatcher in vars(bound).values():
        hits += sum(dispatcher.stats.cache_hits.values())
        misses += sum(dispatcher.stats.cache_misses.values())
print(json.dumps({"p": diagnostics.group(idata, "posterior")["p"].values.ravel().tolist(),
                  "hits": hits, "misses": misses}))
"""


def _child(a: float, cache, *options: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", CHILD, str(a), *options], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_built_in_chain_loads_from_the_disk_cache_with_the_same_draws(tmp_path):
    cold = _child(1.0, tmp_path, "every kernel option")
    assert cold["misses"] > 0
    warm = _child(1.0, tmp_path, "every kernel option")
    assert warm["misses"] == 0 and warm["hits"] > 0   # nothing of the chain compiled again
    assert warm["p"] == cold["p"]
    # Other hyperparameters are another binding: their own entries, their own draws, the
    # same as without any cache (no entry of a = 1 is ever used for a = 5).
    other = _child(5.0, tmp_path)
    assert other["misses"] > 0 and other["p"] != cold["p"]
    assert other["p"] == _child(5.0, tmp_path / "fresh")["p"]


def test_a_misspelt_or_missing_slot_is_named_before_anything_compiles():
    """Issue 28: ``RECORD_SIZ`` used to bind silently (RECORD_SIZE stayed 0: a database of
    shape (n, 0), and writes past zero-length buffers); now every name is checked against
    the slots the templates' module declares."""
    from dawrap.model.protocols import draw_database
    draw = beta_binomial.model(1.0, 1.0).draw_record
    with pytest.raises(_templates.SlotError, match="'RECORD_SIZ' is not a slot .*did you "
                                                   "mean 'RECORD_SIZE'"):
        _templates.bind((draw_database,), {"DRAW_RECORD": draw, "RECORD_SIZ": 1,
                                           "PREPARED": False, "PREPARE": None,
                                           "DRAW_PREPARED": None})
    with pytest.raises(_templates.SlotError, match="draw_database reads the slot "
                                                   "'RECORD_SIZE' \\(int: floats per record"):
        _templates.bind((draw_database,), {"DRAW_RECORD": draw, "PREPARED": False,
                                           "PREPARE": None, "DRAW_PREPARED": None})
    with pytest.raises(ValueError, match="'NOT_A_NAME' is not a slot .*the slots are "
                                         "DRAW_PREPARED, DRAW_RECORD"):
        _templates.bind((draw_database,), {"NOT_A_NAME": 1})
    bound = _templates.bind((draw_database,), {"DRAW_RECORD": draw, "RECORD_SIZE": 1,
                                               "PREPARED": False, "PREPARE": draw,
                                               "DRAW_PREPARED": draw})
    assert bound.draw_database(np.random.default_rng(0), np.array([0.5]), 3).shape == (3, 1)
    # With a template of a module that declares no slots (apply_to, here), a name may be
    # its own: not refused; the declared slots are still required.
    names = {"FUNC": user_twice, "DRAW_RECORD": draw, "RECORD_SIZE": 1, "PREPARED": False,
             "PREPARE": draw, "DRAW_PREPARED": draw}
    assert _templates.bind((apply_to, draw_database), names).apply_to(
        np.array([[1.5]])).tolist() == [3.0]
    with pytest.raises(_templates.SlotError, match="'RECORD_SIZE'"):
        _templates.bind((apply_to, draw_database),
                        {k: v for k, v in names.items() if k != "RECORD_SIZE"})


def test_the_record_chain_declares_every_slot_it_binds():
    """bind_chain's names are all declared slots of record.py (a new name must be declared
    there to be bound at all), and every declared slot says what it holds."""
    from dawrap.samplers import record
    slots = {k: v for k, v in vars(record).items() if isinstance(v, _templates.Slot)}
    assert {"DRAW_RECORD", "RECORD_SIZE", "SWEEP_PASS", "CELL_COUNTS"} <= set(slots)
    assert all(v.what for v in slots.values())


def test_a_misspelt_suffstat_slot_is_named():
    """Item 1 of issue 28 for the sufficient-statistic templates: their family functions,
    the loop's STEP and the truncation templates' CDF/SF are declared slots, so a misspelt
    name is refused (naming it and the slot meant) and a missing one named, where a ``None``
    placeholder once compiled in."""
    from dawrap.samplers import loop, suffstat, suffstat_marginal, suffstat_multinomial
    fns = suffstat.SuffstatFunctions(*(beta_binomial.count,) * 8)
    names = suffstat.function_names(fns)
    misspelt = dict(names, MEAN_CV=names.pop("MEAN_COV"))
    for templates in (suffstat.GIBBS_TEMPLATES, suffstat_marginal.MARGINAL_TEMPLATES):
        with pytest.raises(_templates.SlotError,
                           match="'MEAN_CV' is not a slot .*did you mean 'MEAN_COV'"):
            _templates.bind(templates, misspelt)
        with pytest.raises(_templates.SlotError, match="reads the slot 'MEAN_COV'"):
            _templates.bind(templates, names)
    with pytest.raises(_templates.SlotError, match="'PROBABILITY' .*did you mean "
                                                   "'PROBABILITIES'"):
        _templates.bind((suffstat_multinomial.gibbs_step,),
                        {"PROBABILITY": beta_binomial.count, "CONJUGATE_DRAW": None,
                         "VALID": None})
    with pytest.raises(_templates.SlotError, match="'STPE' .*did you mean 'STEP'"):
        _templates.bind(loop.TEMPLATES, {"STPE": None, "SCHEDULE": loop.unchanged})
    # Every slot of these modules says what it holds, and the real bindings pass the check.
    for module in (loop, suffstat, suffstat_marginal, suffstat_multinomial):
        slots = [v for v in vars(module).values() if isinstance(v, _templates.Slot)]
        assert slots and all(v.what for v in slots)


def test_a_misspelt_caller_slot_is_named():
    """Issue 28, item 1: the callers of a user's function (``call_0`` .. ``call_6``) read the
    declared slot FUNC (undeclared once); a misspelt name is refused naming it, a missing one
    named with what it holds, and the names spelt right call the function."""
    with pytest.raises(_templates.SlotError, match="'FUN' is not a slot .*did you mean 'FUNC'"):
        _templates.bind((_templates.call_1,), {"FUN": user_twice})
    with pytest.raises(_templates.SlotError, match="call_1 reads the slot 'FUNC' \\(\\(a, b"):
        _templates.bind((_templates.call_1,), {})
    bound = _templates.bind((_templates.call_1,), {"FUNC": user_twice})
    assert bound.call_1(np.array([2.5])) == 5.0


def test_no_template_reads_an_undeclared_placeholder():
    """No function of the package reads a capitalised global that is ``None`` in its module
    (the undeclared placeholders of issue 28, item 1, which bind compiled in unchecked), and
    every module that declares slots says what each holds."""
    import importlib
    import pkgutil
    import types

    import dawrap
    found, declaring = [], []
    for info in pkgutil.walk_packages(dawrap.__path__, "dawrap."):
        if info.name.endswith("__main__"):  # runs the command line
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional dependency (pymc, dask) not installed
            continue
        names = vars(module)
        slots = [v for v in names.values() if isinstance(v, _templates.Slot)]
        if slots:
            declaring.append(info.name)
            assert all(v.what for v in slots), info.name
        for func in names.values():
            if isinstance(func, types.FunctionType) and func.__module__ == info.name:
                found += [f"{info.name}.{func.__name__} reads {used}"
                          for used in sorted(_templates._global_names(func.__code__))
                          if used.isupper() and used in names and names[used] is None]
    assert not found
    assert {"dawrap.compile.templates", "dawrap.mechanisms.base", "dawrap.mechanisms.separable",
            "dawrap.runner.starts", "dawrap.runner.modes", "dawrap.samplers.record",
            "dawrap.samplers.entries_path"} <= set(declaring)
