"""The ``dawrap`` command line.

* ``dawrap demo``: the README's main job, and the case for the library. Simulates a small
  confidential database, releases its count with the Laplace mechanism at a small epsilon,
  and shows the naive posterior (the release taken for the count) over-confident next to the
  exact record-level sampler and the closed-form exact posterior: in a table, in a coverage
  line over repeated experiments, and in a plot; writes a netCDF file and PNG plots to an
  output folder.
* ``dawrap sample``: a built-in model and a release given on the command line or in a file;
  writes the posterior to netCDF.
* ``dawrap calibrate``: a simulation-based calibration study, with a progress line; writes the
  results (netCDF, a text summary) and rank/ECDF plots; rerun to resume.
* ``dawrap models``: the built-in models, their arguments and mechanisms.
"""
from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from pathlib import Path

from dawrap._files import as_path, atomic_write, ensure_folder, refuse_special

__all__ = ["main"]


def _catalogue() -> dict:
    """``{name: (module, {mechanism name: factory})}`` for every built-in model."""
    from . import models

    out = {}
    for name in models.__all__:
        module = getattr(models, name)
        mechs = {k: f for k, f in vars(module).items()
                 if getattr(f, "is_recipe", False) and k != "model"}
        out[name] = (module, mechs)
    return out


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
    budget argument states one; any other is built with unit arguments and asked."""
    params = inspect.signature(factory).parameters
    if any(name in params for name in BUDGETS):
        return ""
    try:
        mechanism = factory(**{p.name: 1.0 for p in params.values() if p.default is p.empty})
    except (TypeError, ValueError):  # arguments that are not numbers: nothing to ask
        return "states no privacy budget among its arguments"
    return privacy_gap(mechanism)


def _catalogue_text() -> str:
    lines = ["built-in models (--model-arg KEY=VALUE for their arguments) and their mechanisms "
             "(--mechanism NAME, --mechanism-arg KEY=VALUE; --epsilon is a shortcut):"]
    for name, (module, mechs) in _catalogue().items():
        lines.append(f"  {name}{_arguments(module.model)}")
        for mech, factory in mechs.items():
            gap = _factory_gap(factory)
            lines.append(f"      --mechanism {mech}{_arguments(factory)}"
                         + (f"  [{gap}]" if gap else ""))
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
        out[key] = _value(value)
    return out


def _build(args):
    """The model and mechanism named on the command line."""
    catalogue = _catalogue()
    if args.model not in catalogue:
        raise ValueError(f"model must be one of {list(catalogue)}, got {args.model!r}")
    module, mechs = catalogue[args.model]
    if args.mechanism not in mechs:
        raise ValueError(f"--mechanism for {args.model} must be one of {list(mechs)}, "
                         f"got {args.mechanism!r}")
    mech_kwargs = _pairs(args.mechanism_arg, "--mechanism-arg")
    if args.epsilon is not None:
        mech_kwargs["epsilon"] = args.epsilon
    built = []
    for what, factory, kwargs in (("--model-arg", module.model, _pairs(args.model_arg,
                                                                        "--model-arg")),
                                  ("--mechanism-arg", mechs[args.mechanism], mech_kwargs)):
        try:
            inspect.signature(factory).bind(**kwargs)
        except TypeError as err:
            raise ValueError(f"{what}: {err}; {factory.__name__}{_arguments(factory)}") \
                from None
        built.append(factory(**kwargs))
    return tuple(built)


def _release(args, size: int):
    if (args.s_dp is None) == (args.release is None):
        raise ValueError("give the release either as --s-dp VALUE [VALUE ...] or as "
                         "--release FILE")
    if args.s_dp is not None:
        return _numbers(args.s_dp, "--s-dp")
    with open(args.release, "rb") as f:  # bounded: /dev/zero or a huge file by mistake
        raw = f.read(RELEASE_BYTES + 1)
    if len(raw) > RELEASE_BYTES:
        raise ValueError(f"--release {args.release} is larger than {RELEASE_BYTES} bytes; it "
                         f"should hold the released numbers only")
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise ValueError(f"--release {args.release} is not a text file of numbers") from None
    try:
        values = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        values = _numbers(text.replace(",", " ").split(), f"--release {args.release}")
    values = [values] if isinstance(values, (int, float)) else values
    if not isinstance(values, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise ValueError(f"--release {args.release} must hold a number or a list of numbers")
    if len(values) != size:
        raise ValueError(f"--release {args.release} holds {len(values)} numbers; the "
                         f"mechanism releases {size}")
    return values


#: Largest release file read (a release is a few numbers).
RELEASE_BYTES = 1 << 20


def _numbers(texts, option: str) -> list:
    try:
        return [float(v) for v in texts]
    except ValueError as err:
        raise ValueError(f"{option} expects numbers: {err}") from None


def _output_file(path, force: bool, option: str = "--out") -> Path:
    """Check an output file before any work: a regular file or nothing (never a folder,
    symlink or device), not overwritten without ``--force``, in a folder where files can be
    created (made if missing)."""
    out = as_path(path, option)
    if refuse_special(out, option, "file") == "file" and not force:
        raise ValueError(f"{option}: {out} exists; pass --force to overwrite it, or choose "
                         f"another {option}")
    ensure_folder(out.parent, option)
    return out


def _write_netcdf(data, path: Path, overwrite: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (a unique temporary file renamed into place)."""
    refuse_special(path, "--out", "file")
    try:
        atomic_write(path, lambda tmp: data.to_netcdf(tmp), "--out", overwrite=overwrite)
        print(f"Wrote {path}")
    except (ImportError, ValueError) as err:
        print(f"Not written: no netCDF backend ({err}); pip install h5netcdf")


def _sample(args) -> int:
    import numpy as np

    import dawrap as dw
    from . import diagnostics

    if args.resume and not args.checkpoint:
        raise ValueError("--resume continues the run saved in --checkpoint DIR: give both")
    model, mech = _build(args)
    s_dp = _release(args, mech.size)
    out = _output_file(args.out, args.force)  # before sampling, not after
    gap = privacy_gap(mech)
    if gap:
        print(f"note: --mechanism {args.mechanism} is {gap}", file=sys.stderr)
    seed = args.seed
    if seed is None and not args.resume:  # a resumed run keeps its own seed
        # Fresh, but said, so that the run can be repeated (also kept in the result's attrs)
        seed = int(np.random.SeedSequence().entropy)
        print(f"seed = {seed} (none given; --seed {seed} repeats this run)")
    idata = dw.sample(model, mech, s_dp, n=args.n, method=args.method, draws=args.draws,
                      tune=args.tune, chains=args.chains, seed=seed, cores=args.cores,
                      checkpoint=args.checkpoint, resume=args.checkpoint if args.resume
                      else None, progress=args.progress)
    if seed is None:
        print(f"seed = {diagnostics.attrs(idata)['seed']} (the checkpoint's)")
    print(f"{model!r}\n{mech!r}\ns_dp = {s_dp}, n = {args.n}, method = {args.method}\n")
    print(diagnostics.summary(idata).to_string())
    _write_netcdf(idata, out, overwrite=args.force)
    return 0


#: What ``dawrap calibrate`` writes to --out besides the store.
RESULTS = ("summary.txt", "calibration.nc", "ranks.png", "ecdf.png")


def _calibrate(args) -> int:
    from .studies.calibration import calibrate

    model, mech = _build(args)
    out = ensure_folder(args.out, "--out")
    for name in (*RESULTS, "trials.jsonl"):
        refuse_special(out / name, "--out", "file")
    found = [name for name in RESULTS if (out / name).exists()]
    if found and not (out / "trials.jsonl").exists() and not args.force:
        # Results without their store: of some other study; they are not replaced silently
        raise ValueError(f"--out: {out} holds {', '.join(found)} but no trials.jsonl (not "
                         f"this study's results); pass --force to overwrite them, or choose "
                         f"another --out")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    began = time.perf_counter()
    cal = calibrate(model, mech, args.n, methods, trials=args.trials, seed=args.seed,
                    parameter=args.parameter, index=args.index,
                    sample_kwargs={"draws": args.draws, "tune": args.tune,
                                   "chains": args.chains},
                    store=out / "trials.jsonl", executor=args.executor,
                    workers=args.workers, progress=args.progress, overwrite=args.force)
    report = f"{model!r}\n{mech!r}\nn = {args.n}\n{cal!r}\n"
    print(report + f"({time.perf_counter() - began:.1f} s)")
    atomic_write(out / "summary.txt", lambda tmp: Path(tmp).write_text(report), "--out")
    _write_netcdf(cal.dataset, out / "calibration.nc")
    _plots(out, [("ranks.png", cal.plot_ranks), ("ecdf.png", cal.plot_ecdf)])
    return 0


def _plots(out: Path, plots, overwrite: bool = True) -> None:
    """Write each plot, or say once that matplotlib is missing."""
    try:
        for name, plot in plots:
            # the name's suffix chooses the format
            atomic_write(out / name, plot, "--out", overwrite=overwrite)
            print(f"Wrote {out / name}")
    except ImportError as err:
        print(f"Plots not written: {err}")


#: What ``dawrap demo`` writes to --out.
DEMO_FILES = ("demo_posterior.nc", "demo_trace.png", "demo_posteriors.png")

#: The samplers the demo can run, and what each is. It runs record and naive by default:
#: suffstat adds a second exact sampler, and a compilation of about ten seconds.
DEMO_METHODS = {"record": "record-level data augmentation (exact)",
                "suffstat": "sufficient-statistic Gibbs (exact)",
                "naive": "treats s_dp as the true count"}


def _interval(lower: float, upper: float) -> str:
    return f"[{lower:.3f}, {upper:.3f}]"


def _wrap(text: str) -> str:
    """A paragraph of the demo's printout, in lines of at most 90 characters."""
    import textwrap

    return textwrap.fill(text, width=90)


def _demo_coverage(mech, n: int, repeats: int, seed: int) -> tuple[float, float]:
    """How often the exact and the naive 90% central intervals cover p over ``repeats``
    experiments with p drawn from the uniform prior, each with a new database and release.

    Both posteriors are in closed form for this model, so no sampling is needed: the exact one
    is the Beta mixture of ``beta_binomial.exact_posterior``; the naive one is what
    ``method="naive"`` samples, Beta(1 + s, 1 + n - s) with the release ``s`` clipped to
    [0, n]. An interval covers p exactly when the posterior CDF at p lies in (0.05, 0.95).
    For p drawn from the prior an exact posterior's intervals cover at their nominal rate:
    that is a theorem, which the first number checks (within about 1.3 percentage points
    for 2000 repeats); the second is what ignoring the noise costs.
    """
    import numpy as np
    from scipy import stats

    from dawrap.models import beta_binomial

    rng = np.random.default_rng(seed)
    p = rng.uniform(size=repeats)
    s_dp = rng.binomial(n, p) + rng.laplace(0.0, mech.scale, repeats)
    exact = np.array([beta_binomial.exact_posterior(mech, [s], n).cdf(q)[0]
                      for s, q in zip(s_dp, p)])
    clipped = np.clip(s_dp, 0, n)
    naive = stats.beta.cdf(p, 1.0 + clipped, 1.0 + n - clipped)
    inside = [float(np.mean((u > 0.05) & (u < 0.95))) for u in (exact, naive)]
    return inside[0], inside[1]


def _plot_demo(path, draws: dict, exact, p: float, title: str) -> None:
    """Each method's posterior density against the exact one, with the true p marked; the
    legend sits outside the axes, clear of the data."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    grid = np.linspace(0.0, 1.0, 801)[1:-1]
    ax.fill_between(grid, exact.pdf(grid), color="0.85", label="exact (closed form)")
    styles = {"record": ("tab:blue", "-"), "suffstat": ("tab:green", "--"),
              "naive": ("tab:red", "-")}
    for method, values in draws.items():
        colour, line = styles.get(method, ("tab:gray", ":"))
        ax.hist(values, bins=np.linspace(0.0, 1.0, 101), density=True, histtype="step",
                color=colour, linestyle=line, lw=1.4,
                label=f"{method}: {DEMO_METHODS.get(method, '')}")
    ax.axvline(p, color="black", lw=1.2, linestyle=":", label=f"true p = {p:g}")
    ax.set(xlabel="p (probability that a record is 1)", ylabel="posterior density",
           title=title, xlim=(0.0, 1.0))
    ax.set_ylim(bottom=0.0)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    fig.savefig(path, dpi=110, bbox_inches="tight")  # "tight" keeps the outside legend
    plt.close(fig)


def _demo(args) -> int:
    import numpy as np

    import dawrap as dw
    from . import diagnostics
    from dawrap.models import beta_binomial

    if not 0.0 < args.p < 1.0:
        raise ValueError(f"--p must be a probability strictly between 0 and 1, got {args.p}")
    if args.repeats < 0:
        raise ValueError(f"--repeats must be >= 0, got {args.repeats}")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not {"record", "naive"} <= set(methods) <= set(DEMO_METHODS) or \
            len(set(methods)) != len(methods):
        raise ValueError(f"--methods must name record and naive, and may add suffstat, each "
                         f"once; got {args.methods!r}")
    methods = [m for m in DEMO_METHODS if m in methods]  # the table's order
    out = ensure_folder(args.out, "--out")
    for name in DEMO_FILES:  # before any work, not after
        _output_file(out / name, args.force)
    model = beta_binomial.model(a=1.0, b=1.0)
    mech = beta_binomial.laplace(epsilon=args.epsilon)
    x = model.simulate({"p": args.p}, args.n, seed=args.seed)
    s_dp = mech.release(x, seed=args.seed + 1)
    count, noise_sd = int(x.sum()), float(np.sqrt(mech.noise_variance()[0]))
    count_sd = float(np.sqrt(args.n * args.p * (1.0 - args.p)))
    print(f"Confidential data (never published): n = {args.n} Bernoulli records with "
          f"p = {args.p:g};\ntheir count is {count}.")
    print(f"Release: the count plus Laplace noise of scale 1/epsilon = {mech.scale:g} "
          f"(epsilon = {args.epsilon:g}):\n  s_dp = {s_dp[0]:.3f}")
    print(_wrap(f"The noise sd, {noise_sd:.1f} counts, is {noise_sd / count_sd:.2g} times the "
                f"count's own sampling sd ({count_sd:.1f})."))

    began = time.perf_counter()
    cmp = dw.compare(model, mech, s_dp, args.n, methods=tuple(methods),
                     draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed + 2)
    wall = time.perf_counter() - began
    exact = beta_binomial.exact_posterior(mech, s_dp, args.n, 1.0, 1.0)
    draws = {m: diagnostics.group(idata, "posterior")["p"].values
             for m, idata in cmp.results.items()}

    print(f"\nPosterior of p given s_dp (uniform prior; {args.chains} chains x {args.draws} "
          f"draws per sampler,\n{wall:.1f} s including compilation):")
    print(f"  {'method':10s}{'mean':>8s}{'sd':>8s}   {'90% interval':16s}{'covers p':>8s}"
          f"{'sd/exact':>10s}")
    rows = [("exact", exact.mean(), exact.std(), exact.ppf(0.05), exact.ppf(0.95))]
    rows += [(m, d.mean(), d.std(ddof=1), np.quantile(d, 0.05), np.quantile(d, 0.95))
             for m, d in draws.items()]
    for method, mean, sd, lower, upper in rows:
        covers = "yes" if lower <= args.p <= upper else "NO"
        print(f"  {method:10s}{mean:8.4f}{sd:8.4f}   {_interval(lower, upper):16s}"
              f"{covers:>8s}{sd / exact.std():10.2f}")
    print(_wrap("exact: the closed-form posterior (the count summed out); "
                + "; ".join(f"{m}: {DEMO_METHODS[m]}" for m in methods) + "."))
    naive_sd = draws["naive"].std(ddof=1)
    if exact.std() / naive_sd >= 1.1:
        lines = [f"The naive posterior is {exact.std() / naive_sd:.1f} times too narrow: it "
                 f"takes the noisy release for the count."]
    else:  # e.g. --n 1000 --epsilon 0.5
        lines = [f"The naive posterior is about as wide as the exact one (sd ratio "
                 f"{naive_sd / exact.std():.2f}): here the noise is small against the "
                 f"sampling error."]
    if args.repeats:
        exact_cover, naive_cover = _demo_coverage(mech, args.n, args.repeats, args.seed + 4)
        lines.append(f"Over {args.repeats} repeated experiments (p drawn from the prior, a new "
                     f"database and release each time) its 90% interval covers p in "
                     f"{100 * naive_cover:.1f}% of them, the exact one in "
                     f"{100 * exact_cover:.1f}%.")
    print("\n" + _wrap(" ".join(lines)))

    record = draws["record"]
    print("\nThe record-level sampler against the exact posterior, with its Monte Carlo "
          "standard error:")
    print(f"  {'':8s}{'sampler':>10s}{'exact':>10s}{'mcse':>10s}")
    checks = [("mean", record.mean(), exact.mean(), diagnostics.mcse(record, "mean")),
              ("sd", record.std(ddof=1), exact.std(), diagnostics.mcse(record, "sd"))]
    checks += [(f"q{q:g}", np.quantile(record, q), exact.ppf(q),
                diagnostics.mcse(record, "quantile", q)) for q in (0.05, 0.5, 0.95)]
    for what, estimate, truth, se in checks:
        print(f"  {what:8s}{estimate:10.4f}{truth:10.4f}{se:10.4f}")
    stats = diagnostics.group(cmp.results["record"], "sample_stats")
    print(_wrap(f"Record acceptance rate {float(stats['accept_rate'].mean()):.3f}; smallest "
                f"acceptance probability {float(stats['min_accept_prob'].min()):.3f} >= "
                f"exp(-epsilon) = {np.exp(-args.epsilon):.3f} (Ju et al. Prop. 3.1)."))
    print(f"\nSampler efficiency on this release (ESS per second excludes compilation):\n{cmp}")

    print()
    idata = cmp.results["record"]
    _write_netcdf(idata, out / DEMO_FILES[0], overwrite=args.force)
    title = (f"n = {args.n}, epsilon = {args.epsilon:g}: s_dp = {s_dp[0]:.1f} "
             f"(true count {count})")
    _plots(out, [(DEMO_FILES[1], lambda path: diagnostics.plot_trace(idata, path)),
                 (DEMO_FILES[2], lambda path: _plot_demo(path, {m: d.ravel() for m, d in
                                                                draws.items()},
                                                         exact, args.p, title))],
           overwrite=args.force)
    return 0


def _count(minimum: int):
    """An argparse type: an integer >= ``minimum`` (checked before anything compiles)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {value}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def _add_sampling(parser, draws: int, tune: int, chains: int) -> None:
    parser.add_argument("--draws", type=_count(1), default=draws,
                        help=f"draws per chain after warm-up (default {draws})")
    parser.add_argument("--tune", type=_count(0), default=tune,
                        help=f"warm-up iterations per chain (default {tune})")
    parser.add_argument("--chains", type=_count(1), default=chains, help=f"chains (default {chains})")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress line on stderr (default: only on a terminal)")


def _add_model(parser) -> None:
    parser.add_argument("model", help="a built-in model (see below)")
    parser.add_argument("--mechanism", default="laplace",
                        help="the mechanism factory of that model (default laplace)")
    parser.add_argument("--epsilon", type=float, help="privacy budget, passed to the mechanism")
    parser.add_argument("--model-arg", action="append", metavar="KEY=VALUE",
                        help="a model argument, repeatable (JSON values: a=2, alpha=[1,1,1])")
    parser.add_argument("--mechanism-arg", action="append", metavar="KEY=VALUE",
                        help="a mechanism argument, repeatable (e.g. lower=0 upper=10)")
    parser.add_argument("--n", type=int, required=True, help="number of records")


#: Subcommands whose parsers list the built-in models or the samplers: only these import the
#: models and dawrap.sampling (numba, SciPy, ArviZ: seconds), so ``dawrap --help`` and
#: ``dawrap demo --help`` answer at once.
_DETAILED = ("sample", "calibrate", "models")


def _command(argv: list[str]) -> str | None:
    """The subcommand named in ``argv`` (its first word that is not an option), or None."""
    return next((a for a in argv if not a.startswith("-")), None)


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser. The model catalogue and the sampler names are built only when
    ``command`` needs them (see :data:`_DETAILED`); the other subcommands' parsers are
    complete either way, and the top-level help shows only their one-line help."""
    if command in _DETAILED:
        from dawrap.sampling import METHODS

        catalogue = _catalogue_text()
    else:
        METHODS, catalogue = None, None  # noqa: N806 (the same name as when imported)

    parser = argparse.ArgumentParser(
        prog="dawrap", description="Exact Bayesian inference from differentially private "
                                   "releases by record-level data augmentation.")
    sub = parser.add_subparsers(dest="command", required=True)
    fmt = argparse.RawDescriptionHelpFormatter
    demo = sub.add_parser(
        "demo", help="simulate, release, sample and compare on built-in data",
        description="Why the noise must be modelled. Simulate a confidential database of "
                    "Bernoulli records, release its count with the Laplace mechanism, and "
                    "compare the posterior of p from the exact record-level sampler (and, "
                    "with --methods, sufficient-statistic Gibbs) with the closed-form exact "
                    "posterior and with the naive one that ignores the noise: mean, sd, 90%% "
                    "interval and whether it covers the true p, and how often each method's "
                    "interval covers p over repeated experiments. Writes demo_posterior.nc, "
                    "demo_trace.png and demo_posteriors.png to --out.")
    demo.add_argument("--n", type=_count(1), default=100, help="records (default 100)")
    demo.add_argument("--p", type=float, default=0.3, help="true Bernoulli p (default 0.3)")
    demo.add_argument("--epsilon", type=float, default=0.1, help="privacy budget (default 0.1)")
    demo.add_argument("--draws", type=_count(1), default=2000, help="draws per chain (default 2000)")
    demo.add_argument("--tune", type=_count(0), default=500, help="warm-up per chain (default 500)")
    demo.add_argument("--chains", type=_count(1), default=4, help="chains (default 4)")
    demo.add_argument("--methods", default="record,naive",
                      help="samplers, comma-separated: record and naive, and suffstat if "
                           "wanted (default record,naive)")
    demo.add_argument("--repeats", type=_count(0), default=2000,
                      help="repeated experiments for the coverage line, computed in closed "
                           "form (default 2000; 0 skips it)")
    demo.add_argument("--seed", type=int, default=2022, help="random seed (default 2022)")
    demo.add_argument("--out", default="dawrap-demo", help="output folder (default dawrap-demo)")
    demo.add_argument("--force", action="store_true",
                      help="overwrite the demo's files in --out if they exist (default: refuse)")

    smp = sub.add_parser(
        "sample", help="sample the private posterior of a release, write netCDF",
        formatter_class=fmt, epilog=catalogue,
        description="Sample p(theta | s_dp) for a built-in model and a release, print the "
                    "ArviZ summary and write the result to a netCDF file.\n\nexample:\n"
                    "  dawrap sample beta_binomial --epsilon 0.5 --n 1000 --s-dp 312.4")
    _add_model(smp)
    smp.add_argument("--s-dp", nargs="+", metavar="VALUE", help="the released value(s)")
    smp.add_argument("--release", metavar="FILE",
                     help="a file holding the release: a JSON number or list, or numbers "
                          "separated by spaces, commas or newlines")
    smp.add_argument("--method", default="record", choices=METHODS,
                     help="sampler (default record: exact data augmentation)")
    _add_sampling(smp, 1000, 1000, 4)
    smp.add_argument("--seed", type=int, default=None, help="random seed (default fresh)")
    smp.add_argument("--cores", type=int, default=None, help="chains run at once")
    smp.add_argument("--checkpoint", metavar="DIR", help="save chains to DIR as they run")
    smp.add_argument("--resume", action="store_true", help="continue from --checkpoint DIR")
    smp.add_argument("--out", default="posterior.nc", help="netCDF file (default posterior.nc)")
    smp.add_argument("--force", action="store_true",
                     help="overwrite --out if it exists (default: refuse)")

    cal = sub.add_parser(
        "calibrate", help="simulation-based calibration study, with plots",
        formatter_class=fmt, epilog=catalogue,
        description="Draw theta from the prior, a database and a release, run each method, "
                    "and record the ESS-thinned rank of the true theta; report KS, interval "
                    "coverage and the simultaneous ECDF band, and write calibration.nc, "
                    "summary.txt, ranks.png and ecdf.png to --out. Completed trials are kept "
                    "in OUT/trials.jsonl: rerunning the same command resumes.\n\nexample:\n"
                    "  dawrap calibrate beta_binomial --epsilon 0.1 --n 100 "
                    "--methods record,naive --trials 200")
    _add_model(cal)
    cal.add_argument("--methods", default="record,naive",
                     help=f"comma-separated, from {', '.join(METHODS or ('record', 'naive'))} "
                          f"(default record,naive)")
    cal.add_argument("--trials", type=int, default=100, help="simulated releases (default 100)")
    cal.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    cal.add_argument("--parameter", help="parameter checked (default the first)")
    cal.add_argument("--index", type=int, default=0, help="flat index in a vector parameter")
    _add_sampling(cal, 1000, 500, 2)
    cal.add_argument("--executor", default="processes", choices=["processes", "threads",
                                                                 "serial"],
                     help="where trials run (default processes: one per core)")
    cal.add_argument("--workers", type=int, help="processes or threads (default all cores)")
    cal.add_argument("--out", default="dawrap-calibration",
                     help="output folder (default dawrap-calibration); a study already "
                          "there with the same settings is resumed")
    cal.add_argument("--force", action="store_true",
                     help="discard another study's trials and results in --out (default: "
                          "refuse)")

    sub.add_parser("models", help="list the built-in models and mechanisms",
                   description=catalogue)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``dawrap`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser(_command(argv)).parse_args(argv)
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
