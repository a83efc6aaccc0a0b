"""Every public callable has a numpydoc docstring with an example that runs.

"Public" is what a user reaches: ``dawrap.__all__``, the public submodules ``dw.kernels``,
``dw.random``, ``dw.diagnostics``, ``dawrap.mechanisms`` (and its exact discrete samplers),
``dawrap.reference``, every built-in model module of ``dawrap.models``, and the public
methods of every public class (``Model.simulate``, ``Mechanism.release``, ...). For each of
them the tests check that

* the docstring has an ``Examples`` section;
* no example is ``# doctest: +SKIP`` unless its docstring is on :data:`SKIP_ALLOWED` (with
  its reason): this covers every docstring, module docstrings included, of every module
  ``.ci/docs`` doctests;
* the example is really run: doctest finds it in a module that ``.ci/docs`` doctests.

Names without an example are allowed only on :data:`NO_EXAMPLE`, examples not run in CI
only on :data:`NOT_RUN`, each with its reason.

``python tests/test_docstrings.py`` prints the audit: one row per public callable with
whether its docstring has Parameters / Returns / Examples sections and skipped examples.
"""
from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Public submodules (what a user imports or reaches as ``dw.<name>``) -> the module that
#: defines them. ``dawrap.models.*`` are added by :func:`public_modules`.
SUBMODULES = {
    "dawrap.kernels": "dawrap.samplers.kernels",
    "dawrap.random": "dawrap.random",
    "dawrap.diagnostics": "dawrap.diagnostics",
    "dawrap.opendp": "dawrap.opendp",
    "dawrap.smartnoise": "dawrap.smartnoise",
    "dawrap.tumult": "dawrap.tumult",
    "dawrap.mechanisms": "dawrap.mechanisms",
    "dawrap.mechanisms.discrete": "dawrap.mechanisms.discrete",
    "dawrap.reference": "dawrap.reference",
    "dawrap.synthetic": "dawrap.studies.synthetic",
}

#: Public callables that need no example of their own, with the reason.
NO_EXAMPLE: dict = {}

#: Public callables whose examples are not yet run in CI, with the reason.
NOT_RUN: dict[str, str] = {
    # Tumult Analytics installs on Python 3.12 only next to numpy 2 (.ci/install_tumult), and
    # its examples start Spark: .ci/run doctests dawrap/tumult.py on its 3.12 leg instead.
    name: "doctested by .ci/run's Python 3.12 leg, where Tumult Analytics installs"
    for name in ("dawrap.tumult.from_query", "dawrap.tumult.TumultRelease")}

#: Docstrings (doctest names) whose examples may contain ``# doctest: +SKIP``, with the
#: reason. The compile times are for the record sampler's first call, measured in one
#: process on the shared 2-core machine (load about 4): ``dw.sample`` of these models
#: would add minutes to the doctest step, and each runs elsewhere in CI.
SKIP_ALLOWED = {
    "dawrap.models.naive_bayes": "dw.sample compiles the record chain (34 s); "
                                 "examples/models/plot_naive_bayes.py runs it in the docs build",
    "dawrap.models.linear_regression": "dw.sample compiles the record chain and the interweaving "
                                       "move (52 s); examples/models/plot_linear_regression.py "
                                       "runs it in the docs build",
    "dawrap.models.census": "dw.sample compiles the record chain; the catalogue page "
                            "(examples/models/plot_census.py) and the case study "
                            "(examples/case_studies/plot_census_county.py) run it in the docs "
                            "build",
    "dawrap.models.small_area": "dw.sample compiles the record chain; examples/gallery/plot_noisy_blocks.py runs "
                                "it (tests/test_examples.py::"
                                "test_census_example_runs_and_summarises)",
}


def public_modules() -> dict[str, object]:
    """Public module name -> module object."""
    import dawrap
    import dawrap.models

    modules = {"dawrap": dawrap}
    modules.update({name: importlib.import_module(real) for name, real in SUBMODULES.items()})
    for info in pkgutil.iter_modules(dawrap.models.__path__):
        if not info.name.startswith("_"):
            name = f"dawrap.models.{info.name}"
            modules[name] = importlib.import_module(name)
    return modules


def _private_bases(cls) -> list[type]:
    """The bases of ``cls`` that are dawrap's own and private (``reference._ScalarPosterior``):
    no public name reaches their methods but through ``cls``."""
    return [base for base in cls.__mro__[1:] if base.__name__.startswith("_")
            and base.__module__.partition(".")[0] == "dawrap"]


def _members(cls) -> list[tuple[str, object]]:
    """The public methods (plain, class- and static methods) ``cls`` defines itself, or
    inherits from a private base (:func:`_private_bases`). Those inherited from a public
    class are audited on the class that defines them, and so is an override without a
    docstring of its own (``Laplace.noise_variance``: its documentation, shown by ``help``
    and the API reference, is the base class's)."""
    out = []
    for owner in [cls, *_private_bases(cls)]:
        for name, value in vars(owner).items():
            if name.startswith("_") or any(name == seen for seen, _ in out):
                continue
            func = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
            if not inspect.isfunction(func):
                continue
            overrides = any(name in vars(base) for base in owner.__mro__[1:])
            if func.__doc__ is None and overrides:
                continue
            out.append((name, func))
    return out


def public_callables() -> dict[str, object]:
    """Qualified public name -> callable (functions, classes, compiled functions, methods).
    A callable reachable under several names (``dw.Laplace`` and
    ``dawrap.mechanisms.Laplace``) is listed once, under the first."""
    seen, out = set(), {}
    for modname, module in public_modules().items():
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj) or not callable(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            out[f"{modname}.{name}"] = obj
            if inspect.isclass(obj):
                for member, func in _members(obj):
                    if id(func) not in seen:  # a private base's, under its first subclass
                        seen.add(id(func))
                        out[f"{modname}.{name}.{member}"] = func
    return out


def _sections(doc: str) -> set[str]:
    """The numpydoc section titles of ``doc`` (a title line underlined by dashes)."""
    lines = [line.strip() for line in doc.splitlines()]
    return {title for title, rule in zip(lines, lines[1:])
            if title and rule and set(rule) == {"-"} and len(rule) >= len(title)}


def _examples(doc: str) -> str:
    """The text of the Examples section ('' if there is none)."""
    match = re.search(r"^\s*Examples\s*\n\s*-{8,}\s*\n(.*?)(?=^\s*\w[\w ]*\n\s*-{3,}\s*$|\Z)",
                      doc, re.S | re.M)
    return match.group(1) if match else ""


def _takes_arguments(obj) -> bool | None:
    """Whether ``obj`` takes arguments besides ``self``/``cls`` (None: cannot tell)."""
    try:
        params = inspect.signature(inspect.unwrap(getattr(obj, "py_func", obj))).parameters
    except (TypeError, ValueError):
        return None
    return any(p not in ("self", "cls") for p in params)


def audit_row(name: str, obj) -> dict:
    doc = obj.__doc__ or ""
    sections = _sections(doc)
    examples = _examples(doc)
    # A class documents its constructor's parameters (or, for a NamedTuple, its Attributes).
    documented = {"Parameters", "Attributes"} if inspect.isclass(obj) else {"Parameters"}
    return {"name": name, "doc": bool(doc.strip()),
            "parameters": bool(documented & sections),
            "takes_arguments": _takes_arguments(obj),
            "returns": bool({"Returns", "Yields"} & sections),
            "examples": ">>>" in examples,
            "skips": len(re.findall(r"doctest:.*\+SKIP", doc))}


def doctest_paths() -> list[Path]:
    """The files and folders ``.ci/docs`` runs ``--doctest-modules`` over."""
    text = (ROOT / ".ci" / "docs").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if "--doctest-modules" in line:
            args = shlex.split(line.split("--doctest-modules", 1)[1])
            return [ROOT / a for a in args if not a.startswith("-")]
    raise AssertionError(".ci/docs has no --doctest-modules line")


def _source(obj) -> Path | None:
    try:
        return Path(inspect.getsourcefile(inspect.unwrap(getattr(obj, "py_func", obj))))
    except TypeError:
        return None


def _collected_docstrings(module) -> set[str]:
    """The docstrings holding examples that doctest collects from ``module``."""
    return {t.docstring for t in doctest.DocTestFinder().find(module) if t.examples}


CALLABLES = public_callables()


def test_the_audit_sees_the_public_api():
    # The audit must not silently cover nothing: spot-check names from each part of it.
    for name in ["dawrap.sample", "dawrap.Model.simulate", "dawrap.Mechanism.release",
                 "dawrap.Calibration.coverage", "dawrap.kernels.metropolis",
                 "dawrap.mechanisms.discrete.discrete_gaussian", "dawrap.reference.Grid",
                 # documented on reference's private bases, reached through BetaMixture
                 "dawrap.reference.BetaMixture.mean", "dawrap.reference.BetaMixture.var",
                 "dawrap.reference.BetaMixture.ppf",
                 "dawrap.models.beta_binomial.count", "dawrap.models.normal_mean.clamped_total"]:
        assert name in CALLABLES, name
    assert set(NO_EXAMPLE) <= set(CALLABLES), set(NO_EXAMPLE) - set(CALLABLES)
    assert set(NOT_RUN) <= set(CALLABLES), set(NOT_RUN) - set(CALLABLES)


def missing_examples(callables: dict[str, object]) -> list[str]:
    return [name for name, obj in callables.items()
            if name not in NO_EXAMPLE and not audit_row(name, obj)["examples"]]


def test_every_public_callable_has_an_example():
    missing = missing_examples(CALLABLES)
    assert not missing, f"no Examples section in the docstring of {missing}"


def test_the_check_fails_on_a_name_without_an_example():
    def undocumented(x):
        """Return x.

        Parameters
        ----------
        x : float
        """
        return x

    assert missing_examples({"dawrap.undocumented": undocumented}) == ["dawrap.undocumented"]


def _doctest_modules() -> list[str]:
    """The dotted names of the modules ``.ci/docs`` doctests (``models/`` as
    ``dawrap.models``)."""
    names = []
    for path in doctest_paths():
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            parts = list(file.relative_to(ROOT).with_suffix("").parts)
            if parts[0] == "models":
                parts = ["dawrap", *parts]
            if parts[-1] == "__init__":
                parts.pop()
            names.append(".".join(parts))
    return names


def skipped_examples(modules: list[str]) -> list[str]:
    """The doctests (by name) of ``modules`` with an example marked ``+SKIP``."""
    out = []
    for modname in modules:
        for test in doctest.DocTestFinder().find(importlib.import_module(modname)):
            if any(ex.options.get(doctest.SKIP) for ex in test.examples):
                out.append(test.name)
    return out


def test_no_skipped_examples_off_the_allow_list():
    skipped = skipped_examples(_doctest_modules())
    stray = sorted(set(skipped) - set(SKIP_ALLOWED))
    assert not stray, f"examples marked +SKIP outside SKIP_ALLOWED: {stray}"
    # An entry whose skip is gone must leave the list, so that it stays a list of reasons.
    stale = sorted(set(SKIP_ALLOWED) - set(skipped))
    assert not stale, f"SKIP_ALLOWED lists docstrings with no skipped example: {stale}"


def test_every_public_callables_examples_are_not_skipped():
    # Public docstrings outside the doctested modules are covered here too.
    skipped = [name for name, obj in CALLABLES.items()
               if audit_row(name, obj)["skips"] and name not in SKIP_ALLOWED]
    assert not skipped, f"examples marked +SKIP outside SKIP_ALLOWED: {skipped}"


def test_every_example_runs_in_ci():
    paths = doctest_paths()
    uncovered = []
    for name, obj in CALLABLES.items():
        if name in NO_EXAMPLE or name in NOT_RUN or not audit_row(name, obj)["examples"]:
            continue
        source = _source(obj)
        if source is None or not any(source == p or p in source.parents for p in paths):
            uncovered.append(f"{name} ({source})")
    assert not uncovered, f".ci/docs does not doctest the module of {uncovered}"


def test_doctest_finds_every_example():
    # A docstring doctest cannot reach (a wrapper hiding it, a member of an object that is
    # not a class) would never run even in a covered module.
    collected: dict[str, set[str]] = {}
    lost = []
    for name, obj in CALLABLES.items():
        if name in NO_EXAMPLE or name in NOT_RUN or not audit_row(name, obj)["examples"]:
            continue
        modname = inspect.unwrap(getattr(obj, "py_func", obj)).__module__
        if modname not in collected:
            collected[modname] = _collected_docstrings(importlib.import_module(modname))
        if obj.__doc__ not in collected[modname]:
            lost.append(name)
    assert not lost, f"doctest does not collect the examples of {lost}"


if __name__ == "__main__":
    rows = [audit_row(name, obj) for name, obj in CALLABLES.items()]
    print(f"{'name':58s} doc params returns examples skips  (params n/a: no arguments)")
    for r in rows:
        note = NO_EXAMPLE.get(r["name"]) or NOT_RUN.get(r["name"])
        params = "n/a" if r["takes_arguments"] is False else "y" if r["parameters"] else "-"
        print(f"{r['name']:58s} {'y' if r['doc'] else '-':3s} {params:6s} "
              f"{'y' if r['returns'] else '-':7s} {'y' if r['examples'] else '-':8s} "
              f"{r['skips'] or '':5}" + (f"  (allowed: {note})" if note else ""))
    print(f"{len(rows)} public callables: {sum(not r['examples'] for r in rows)} without "
          f"examples, {sum(bool(r['skips']) for r in rows)} with skipped examples, "
          f"{sum(r['takes_arguments'] is not False and not r['parameters'] for r in rows)} "
          f"taking arguments without a Parameters section")
    print(f"doctests with +SKIP in the modules .ci/docs runs: "
          f"{skipped_examples(_doctest_modules())}")
