"""The ``dawrap`` command line.

* ``dawrap demo``: the README's main job, and the case for the library (:mod:`dawrap.demo`).
* ``dawrap sample``: a built-in model and a release given on the command line or in a file;
  writes the posterior to netCDF.
* ``dawrap calibrate``: a simulation-based calibration study, with a progress line; writes the
  results (netCDF, a text summary) and rank/ECDF plots; rerun to resume.
* ``dawrap models``: the built-in models (the registry of :mod:`dawrap.models`), their
  arguments and mechanisms.

Every command checks its arguments in two rounds, and writes nothing before both pass:
first all it can check without the package's compiled code (a model's name, numbers, the
release file, the output files: answered in a fraction of a second, before numba, ArviZ or
a sampler is imported), then what only the model's and mechanism's code can check (a
mechanism's name, the arguments a factory takes, the release's length). Then the work.
"""
from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from pathlib import Path
from typing import NamedTuple

from dawrap._cli_args import (add_output, count, output_file, plots, positive_number,
                              write_netcdf)
from dawrap._files import as_path, atomic_write, ensure_folder, refuse_special

__all__ = ["main"]


def _catalogue() -> dict:
    """The registry of built-in models: ``{name: dawrap.models.BuiltinModel}``."""
    from .models import builtin_models

    return builtin_models()


def _arguments(factory) -> str:
    """``(a=1.0, b=1.0)``: a factory's arguments and defaults, without annotations."""
    params = inspect.signature(factory).parameters.values()
    return "(" + ", ".join(p.name if p.default is p.empty else f"{p.name}={p.default!r}"
                           for p in params) + ")"


#: The privacy budgets a mechanism can state: pure DP, zCDP, Gaussian DP.
BUDGETS = ("epsilon", "rho", "mu")


def privacy_gap(mechanism) -> str:
    """``""`` when ``mechanism`` states a privacy guarantee, else why it is not DP on its own.

    Read from the mechanism itself: a stated budget (``epsilon``, ``rho`` or ``mu`` in its
    ``privacy``), or a declared contribution domain, whose diameter fixes the guarantee of the
    integer mechanisms. Anything else adds noise that no sensitivity bound turns into a
    guarantee (e.g. ``Gaussian(statistic, sigma)`` of an unbounded sum).
    """
    if any(key in mechanism.privacy for key in BUDGETS) or mechanism.contribution is not None:
        return ""
    return (f"not DP on its own: {mechanism.name} noise without a stated privacy budget or "
            f"sensitivity guarantee")


def _factory_gap(factory) -> str:
    """:func:`privacy_gap` of the mechanism a built-in factory makes. A factory taking a
    budget argument states one, as does one whose ``budgets`` attribute says where its
    budgets are given (e.g. one per query, inside another argument); any other is built
    with unit arguments and asked."""
    params = inspect.signature(factory).parameters
    if any(name in params for name in BUDGETS) or getattr(factory, "budgets", None):
        return ""
    try:
        mechanism = factory(**{p.name: 1.0 for p in params.values() if p.default is p.empty})
    except (TypeError, ValueError):  # arguments that are not numbers: nothing to ask
        return "states no privacy budget among its arguments"
    return privacy_gap(mechanism)


def _catalogue_text() -> str:
    lines = ["built-in models (--model-arg KEY=VALUE for their arguments) and their mechanisms "
             "(--mechanism NAME, --mechanism-arg KEY=VALUE; --epsilon is a shortcut):"]
    for name, entry in _catalogue().items():
        lines.append(f"  {name}{_arguments(entry.model)}")
        for mech, factory in entry.mechanisms.items():
            gap = _factory_gap(factory)
            note = gap or (f"budgets: {factory.budgets}" if getattr(factory, "budgets", None)
                           else "")
            lines.append(f"      --mechanism {mech}{_arguments(factory)}"
                         + (f"  [{note}]" if note else ""))
    return "\n".join(lines)


def _value(text: str):
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # not JSON (or absurdly nested): a string
        return text


def _pairs(items, option: str) -> dict:
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise ValueError(f"{option} expects key=value (e.g. a=1, alpha=[1,1,1]), "
                             f"got {item!r}")
        if key in out:  # the last one winning silently would hide a typo
            raise ValueError(f"{option} gives {key} twice ({key}={out[key]!r} and {item!r}): "
                             f"give each argument once")
        out[key] = _value(value)
    return out


class _Request(NamedTuple):
    """A model and mechanism as the command line names them, checked as far as can be
    without importing the model: its name, and the form of every KEY=VALUE."""

    model_kwargs: dict
    mechanism_kwargs: dict


def _request(args) -> _Request:
    """The first round's checks of the model and mechanism arguments (module docstring)."""
    from .models import REGISTRY  # the names only: no model is imported

    if args.model not in REGISTRY:
        raise ValueError(f"model must be one of {list(REGISTRY)}, got {args.model!r} "
                         f"(dawrap models lists them with their arguments)")
    mech_kwargs = _pairs(args.mechanism_arg, "--mechanism-arg")
    if args.epsilon is not None and "epsilon" in mech_kwargs:
        raise ValueError(f"--epsilon {args.epsilon:g} and --mechanism-arg epsilon="
                         f"{mech_kwargs['epsilon']!r} disagree on the privacy budget: "
                         f"give it once")
    return _Request(_pairs(args.model_arg, "--model-arg"), mech_kwargs)


def _build(args, request: _Request):
    """The model and mechanism named on the command line: the second round's checks, which
    import that model's module (and numba) but no sampler."""
    from .models import builtin_model

    entry = builtin_model(args.model)
    mechs = entry.mechanisms
    if args.mechanism not in mechs:
        raise ValueError(f"--mechanism for {args.model} must be one of {list(mechs)}, "
                         f"got {args.mechanism!r}")
    factory = mechs[args.mechanism]
    mech_kwargs = dict(request.mechanism_kwargs)
    if args.epsilon is not None:
        if "epsilon" not in inspect.signature(factory).parameters:
            raise ValueError(f"--epsilon: --mechanism {args.mechanism} takes no epsilon; "
                             f"give its arguments with --mechanism-arg: {args.mechanism}"
                             f"{_arguments(factory)}")
        mech_kwargs["epsilon"] = args.epsilon
    built = []
    for what, who, make, kwargs in (
            ("--model-arg", "--model-arg", entry.model, request.model_kwargs),
            ("--mechanism-arg", f"--mechanism {args.mechanism}", factory, mech_kwargs)):
        try:
            inspect.signature(make).bind(**kwargs)
        except TypeError as err:
            raise ValueError(f"{what}: {err}; {make.__name__}{_arguments(make)}") from None
        try:
            built.append(make(**kwargs))
        except (ValueError, TypeError) as err:  # a value the factory refuses: say whose
            raise _same_kind(err)(f"{who}: {err}") from None
    return tuple(built)


def _methods(release_only: bool = False) -> tuple:
    """The sampling methods' names; with ``release_only``, those ``dawrap sample`` can run:
    the methods that read the release (the others need the confidential records, which a
    command line does not have). Imports the methods (numba): only for the second round of
    checks and for the help."""
    from dawrap.methods import METHODS

    return tuple(name for name, cls in METHODS.items() if cls.uses_release or not release_only)


def _epilog(release_only: bool):
    """The epilog of ``dawrap sample`` or ``calibrate``: the methods and the catalogue of
    models, built when the help is printed (:class:`_Parser`)."""
    def text() -> str:
        return (f"methods: {', '.join(_methods(release_only))}\n\n" + _catalogue_text())
    return text


def _release(args) -> tuple[list, str]:
    """The release's numbers as given (``--s-dp`` or ``--release FILE``), and how messages
    name where they came from; their count is checked against the mechanism later
    (:func:`_checked_release`)."""
    if (args.s_dp is None) == (args.release is None):
        raise ValueError("give the release either as --s-dp VALUE [VALUE ...] or as "
                         "--release FILE")
    if args.s_dp is not None:
        return _numbers(args.s_dp, "--s-dp"), "--s-dp"
    where = f"--release: {args.release!r}"
    try:
        with open(args.release, "rb") as f:  # bounded: /dev/zero or a huge file by mistake
            raw = f.read(RELEASE_BYTES + 1)
    except FileNotFoundError:
        raise ValueError(f"--release: no such file {args.release!r}") from None
    except IsADirectoryError:
        raise ValueError(f"{where} is a folder; give the file holding the release") from None
    except OSError as err:
        raise ValueError(f"{where} cannot be read ({err.strerror or err})") from None
    if len(raw) > RELEASE_BYTES:
        raise ValueError(f"{where} is larger than {RELEASE_BYTES} bytes; it should hold the "
                         f"released numbers only")
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise ValueError(f"{where} is not a text file of numbers") from None
    try:
        values = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        values = _numbers(text.replace(",", " ").split(), where)
    values = [values] if isinstance(values, (int, float)) else values
    if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ValueError(f"{where} must hold a number or a list of numbers")
    return values, where


def _checked_release(mech, values: list, where: str):
    """The release as the mechanism takes it, or an error naming the option that gave it."""
    if where != "--s-dp" and len(values) != mech.release_size:
        raise ValueError(f"{where} holds {len(values)} numbers; the mechanism releases "
                         f"{mech.release_size}")
    try:
        return mech.check_release(values)
    except (ValueError, TypeError) as err:
        raise _same_kind(err)(f"{where}: {err}") from None


def _same_kind(err: Exception) -> type:
    """TypeError or ValueError, as ``err`` is: the class of an error re-raised with the
    option that caused it named (a subclass may not take a message alone)."""
    return TypeError if isinstance(err, TypeError) else ValueError


#: Largest release file read (a release is a few numbers).
RELEASE_BYTES = 1 << 20


def _numbers(texts, option: str) -> list:
    try:
        return [float(v) for v in texts]
    except ValueError as err:
        raise ValueError(f"{option} expects numbers: {err}") from None


#: Where ``dawrap sample`` writes when no --out is given.
SAMPLE_OUT = "posterior.nc"


def _sample(args) -> int:
    # The two rounds of checks (module docstring), the output file at the end of the first;
    # its folder is made only when every argument has passed.
    if args.resume and not args.checkpoint:
        raise ValueError("--resume continues the run saved in --checkpoint DIR: give both")
    request = _request(args)
    values, where = _release(args)
    out = output_file(args.out, args.force, default=SAMPLE_OUT)  # before sampling, not after
    model, mech = _build(args, request)
    methods = _methods(release_only=True)
    if args.method not in methods:
        raise ValueError(f"--method must be one of {list(methods)}, got {args.method!r} (the "
                         f"others need the confidential records)")
    s_dp = _checked_release(mech, values, where)
    ensure_folder(out.parent, "--out")

    import numpy as np

    import dawrap as dw
    from . import diagnostics

    gap = privacy_gap(mech)
    if gap:
        print(f"note: --mechanism {args.mechanism} is {gap}", file=sys.stderr)
    seed = args.seed
    if seed is None and not args.resume:  # a resumed run keeps its own seed
        # Fresh, and said with the result (after dw.sample has checked the run, so that an
        # error is not preceded by a seed), so that the run can be repeated; the result's
        # attributes and a checkpoint keep it too.
        seed = int(np.random.SeedSequence().entropy)
    idata = dw.sample(model, mech, s_dp, n=args.n, method=args.method, draws=args.draws,
                      tune=args.tune, chains=args.chains, seed=seed, cores=args.cores,
                      checkpoint=args.checkpoint, resume=args.checkpoint if args.resume
                      else None, progress=args.progress)
    if args.seed is None:
        print(f"seed = {diagnostics.attrs(idata)['seed']} (the checkpoint's)" if args.resume
              else f"seed = {seed} (none given; --seed {seed} repeats this run)")
    print(f"{model!r}\n{mech!r}\ns_dp = {s_dp.tolist()}, n = {args.n}, method = {args.method}\n")
    print(diagnostics.summary(idata).to_string())
    write_netcdf(idata, out, overwrite=args.force)
    return 0


#: What ``dawrap calibrate`` writes to --out besides the store.
RESULTS = ("summary.txt", "calibration.nc", "ranks.png", "ecdf.png")


def _calibrate(args) -> int:
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    repeated = sorted({m for m in methods if methods.count(m) > 1})
    if repeated:
        raise ValueError(f"--methods names {', '.join(repeated)} more than once; name each "
                         f"method once")
    request = _request(args)
    out = as_path(args.out, "--out")
    refuse_special(out, "--out", "folder")
    for name in (*RESULTS, "trials.jsonl"):
        refuse_special(out / name, "--out", "file")
    found = [name for name in RESULTS if (out / name).exists()]
    resumed = (out / "trials.jsonl").exists()
    if found and not resumed and not args.force:
        # Results without their store: of some other study; they are not replaced silently
        raise ValueError(f"--out: {out} holds {', '.join(found)} but no trials.jsonl (not "
                         f"this study's results); pass --force to overwrite them, or choose "
                         f"another --out")
    model, mech = _build(args, request)
    ensure_folder(out, "--out")

    from .studies.calibration import calibrate

    began = time.perf_counter()
    cal = calibrate(model, mech, args.n, methods, trials=args.trials, seed=args.seed,
                    parameter=args.parameter, index=args.index,
                    sample_kwargs={"draws": args.draws, "tune": args.tune,
                                   "chains": args.chains},
                    store=out / "trials.jsonl", executor=args.executor,
                    workers=args.workers, progress=args.progress, overwrite=args.force)
    report = f"{model!r}\n{mech!r}\nn = {args.n}\n{cal!r}\n"
    print(report + f"({time.perf_counter() - began:.1f} s)")
    if found and not args.force:
        # The same study resumed (calibrate checked that trials.jsonl holds its settings):
        # its results are derived from the trials, and are rewritten from all of them.
        print(f"Rewriting this study's results in {out} ({', '.join(found)}) from its "
              f"{args.trials} trials in trials.jsonl")
    atomic_write(out / "summary.txt", lambda tmp: Path(tmp).write_text(report), "--out")
    print(f"Wrote {out / 'summary.txt'}")
    write_netcdf(cal.dataset, out / "calibration.nc")
    plots(out, [("ranks.png", cal.plot_ranks), ("ecdf.png", cal.plot_ecdf)])
    return 0


def _demo(args) -> int:
    from .demo import run

    return run(args)


def _add_sampling(parser, draws: int, tune: int, chains: int) -> None:
    parser.add_argument("--draws", type=count(1), default=draws,
                        help=f"draws per chain after warm-up (default {draws})")
    parser.add_argument("--tune", type=count(0), default=tune,
                        help=f"warm-up iterations per chain (default {tune})")
    parser.add_argument("--chains", type=count(1), default=chains,
                        help=f"chains (default {chains})")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress line on stderr (default: only on a terminal)")


def _add_model(parser) -> None:
    parser.add_argument("model", help="a built-in model (see below)")
    parser.add_argument("--mechanism", default="laplace",
                        help="the mechanism factory of that model (default laplace)")
    parser.add_argument("--epsilon", type=positive_number,
                        help="privacy budget (a number > 0), passed to the mechanism")
    parser.add_argument("--model-arg", action="append", metavar="KEY=VALUE",
                        help="a model argument, repeatable (JSON values: a=2, alpha=[1,1,1])")
    parser.add_argument("--mechanism-arg", action="append", metavar="KEY=VALUE",
                        help="a mechanism argument, repeatable (e.g. lower=0 upper=10)")
    parser.add_argument("--n", type=count(1), required=True, help="number of records")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose description and epilog may be functions, called only when
    the help is printed: the catalogue of models and the method names import every model
    and the samplers (numba, SciPy: seconds), which parsing the arguments, and reporting an
    error in them, must not wait for."""

    def format_help(self) -> str:
        for name in ("description", "epilog"):
            if callable(getattr(self, name)):
                setattr(self, name, getattr(self, name)())
        return super().format_help()


def _parser() -> argparse.ArgumentParser:
    """The argument parser. What needs the models or the samplers is in the help only,
    built when it is printed (:class:`_Parser`)."""
    parser = _Parser(
        prog="dawrap", description="Exact Bayesian inference from differentially private "
                                   "releases by record-level data augmentation.")
    sub = parser.add_subparsers(dest="command", required=True)
    fmt = argparse.RawDescriptionHelpFormatter
    from . import demo

    demo.add_arguments(sub.add_parser("demo", help=demo.HELP, description=demo.DESCRIPTION))

    smp = sub.add_parser(
        "sample", help="sample the private posterior of a release, write netCDF",
        formatter_class=fmt, epilog=_epilog(release_only=True),
        description="Sample p(theta | s_dp) for a built-in model and a release, print the "
                    "ArviZ summary and write the result to a netCDF file.\n\nexample:\n"
                    "  dawrap sample beta_binomial --epsilon 0.5 --n 1000 --s-dp 312.4")
    _add_model(smp)
    smp.add_argument("--s-dp", nargs="+", metavar="VALUE", help="the released value(s)")
    smp.add_argument("--release", metavar="FILE",
                     help="a file holding the release: a JSON number or list, or numbers "
                          "separated by spaces, commas or newlines")
    smp.add_argument("--method", default="record",
                     help="sampler, one of the methods below (default record: exact data "
                          "augmentation)")
    _add_sampling(smp, 1000, 1000, 4)
    smp.add_argument("--seed", type=int, default=None, help="random seed (default fresh)")
    smp.add_argument("--cores", type=count(1), default=None, help="chains run at once")
    smp.add_argument("--checkpoint", metavar="DIR", help="save chains to DIR as they run")
    smp.add_argument("--resume", action="store_true", help="continue from --checkpoint DIR")
    add_output(smp, None, f"netCDF file (default {SAMPLE_OUT})", "overwrite --out if it exists")

    cal = sub.add_parser(
        "calibrate", help="simulation-based calibration study, with plots",
        formatter_class=fmt, epilog=_epilog(release_only=False),
        description="Draw theta from the prior, a database and a release, run each method, "
                    "and record the ESS-thinned rank of the true theta; report KS, interval "
                    "coverage and the simultaneous ECDF band, and write calibration.nc, "
                    "summary.txt, ranks.png and ecdf.png to --out. Completed trials are kept "
                    "in OUT/trials.jsonl: rerunning the same command resumes.\n\nexample:\n"
                    "  dawrap calibrate beta_binomial --epsilon 0.1 --n 100 "
                    "--methods record,naive --trials 200")
    _add_model(cal)
    cal.add_argument("--methods", default="record,naive",
                     help="comma-separated, each once, from the methods below (default "
                          "record,naive)")
    cal.add_argument("--trials", type=count(1), default=100,
                     help="simulated releases (default 100)")
    cal.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    cal.add_argument("--parameter", help="parameter checked (default the first)")
    cal.add_argument("--index", type=int, default=0, help="flat index in a vector parameter")
    _add_sampling(cal, 1000, 500, 2)
    cal.add_argument("--executor", default="processes", choices=["processes", "threads",
                                                                 "serial"],
                     help="where trials run (default processes: one per core)")
    cal.add_argument("--workers", type=count(1),
                     help="processes or threads (default all cores)")
    add_output(cal, "dawrap-calibration", "output folder (default dawrap-calibration); a "
               "study already there with the same settings is resumed",
               "discard another study's trials and results in --out")

    sub.add_parser("models", help="list the built-in models and mechanisms",
                   description=_catalogue_text)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``dawrap`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    commands = {"demo": _demo, "sample": _sample, "calibrate": _calibrate,
                "models": lambda _: print(_catalogue_text()) or 0}
    try:
        return commands[args.command](args)
    except (ValueError, TypeError, OSError) as err:
        print(f"dawrap {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:  # Ctrl-C: say what was kept (a study's trials, ...)
        print(f"dawrap {args.command}: {err or 'interrupted'}", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
